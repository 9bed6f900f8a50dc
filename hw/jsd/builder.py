"""Queue builder: chunk beats in, one PQA record (queues + entropy trailer) per genome out.

Per lane (``QueueBuilderLane``), all at one beat per cycle with fixed latency up to the FIFO:
the sketch kernel's :class:`LaneParser` and :class:`KmerBuffer`, B :class:`Canonicalizer` s,
the B-way :class:`Sampler`; beats holding a sampled k-mer (or a genome end) enter a FIFO; the
:class:`Serializer` takes one k-mer per cycle into the d-seed :class:`Murmur3Seeds` (the
sampler has already mixed the k-mer's murmur3 blocks), the
:class:`~hw.common.countmin.CountMinUnit` and the :class:`PqaInsert` network of the lane's
active bank. With ``record_banks`` = 1 a lane stops at each genome end until its bank has
retired (below). With ``record_banks`` = 2 (the default; the PQA slots of 2^12 entries sit in
UltraRAM, so both banks fit the F1 next to the similarity kernel) a lane has two banks of
Count-Min counters and PQA queues behind one Count-Min pipeline and one PQA insert network
(only the memories are per bank; an insertion's bank travels with it, so the pipeline may hold
the ended genome's last k-mers and the next genome's first ones at once): at a genome end the
banks switch,
the next genome's k-mers go to the other bank at once, and the ended genome's bank retires in
the background: it waits for its pipeline to empty (``flush_cycles``), drains its PQA (which
clears it) into the lane's record stream while its Count-Min clears itself, and appends the
genome's tag.

Stall rule of two banks (``tests/test_jsd_builder.py`` measures it): when a genome's end token
leaves the serializer and the other bank is clean, the banks switch in that cycle and the lane
loses no cycle; otherwise the lane takes no k-mer (``waiting``) until the other bank is clean. A
bank is clean again ``retire_cycles`` = flush + 3 + max(2^cw, 2^R x beats per queue + 3 + F) cycles
after its switch when its record has the output to itself (16,407 at the defaults, clear-bound;
the record is 4,096 queue beats, the tag beat, the core's 74-cycle entropy finish and 2), later if another lane's
record holds the output. So a lane never waits if each of its genomes lasts at least
``retire_cycles`` cycles (8 B bytes per cycle: 131 kB at the defaults) and the records of all
lanes fit the output (one record of 2^R x beats per queue + 3 + F cycles per genome; F the entropy
unit's finish, ``entropy_finish_cycles``: 74 cycles at the defaults).

The core (``QueueBuilderCore``) forwards one lane's record at a time, and its one
:class:`EntropyUnit` takes the PQA values of the record beats as they pass; it completes each
lane's tag beat into the record trailer (tag, entropy, total). One unit for all lanes does not
limit the output: the records were already serialised by the lane multiplexer.

Backpressure: the front end cannot stall, so a lane raises ``full`` while its FIFO could not
absorb every beat already in flight; the core then holds the chunk decoder (all lanes).
Throughput: one chunk beat per cycle while no lane's FIFO fills, i.e. while the lanes' sampled
k-mers average at most one per cycle each and no lane waits at a genome end (rule above).

Clean state: each bank has a ``dirty`` flag (set by its first insertion, cleared when its clear
ends) that survives resets (``reset_less``; zero at configuration, as are the memories). After a
reset (ap_rst_n, an aborted call, a FRESH start) every dirty bank drains its PQA into nothing and
clears its Count-Min in the background (max(2^R + 1, 2^cw) cycles), so nothing of a genome cut
off by the reset survives; the lane starts at once on a clean bank, and waits only if all its
banks were dirty (with one bank: if it was). The first call after configuration clears nothing.

Record layout: kmerspec/kernels/jsd_builder.py (docs/jsd_kernels.md).
"""

from amaranth.hdl import Cat, Const, Module, Mux, Signal
from amaranth.lib import data, fifo, stream, wiring
from amaranth.lib.wiring import In, Out

from kmerspec.kernels.jsd_builder import Params

from hw.common.countmin import CountMinUnit
from hw.sketch.canonical import Canonicalizer
from hw.sketch.chunk import ChunkDecoder
from hw.sketch.kmer_buffer import KmerBuffer
from hw.sketch.parser import LaneParser, lane_bytes_layout
from .entropy import EntropyUnit, entropy_finish_cycles
from .murmur3 import Murmur3Seeds
from .pqa import PqaInsert
from .sampler import Sampler, kmer_beat_layout
from .serializer import Serializer

__all__ = ["record_beat_layout", "QueueBuilderLane", "QueueBuilderCore"]


def record_beat_layout(bus_bits: int) -> data.StructLayout:
    """One beat of a record; ``last`` marks the trailer."""
    return data.StructLayout({"data": bus_bits, "last": 1})



def entropy_unit_args(p) -> tuple[int, int, int]:
    """(count_bits, counts_per_beat, max_beats_bits) of the core's entropy unit: the 32-bit PQA
    values of one output beat, up to 2^R queues of ``beats_per_queue`` beats per record."""
    return 32, p.data_width // 64, p.R + (p.beats_per_queue - 1).bit_length()

class QueueBuilderLane(wiring.Component):
    """One genome lane of the queue builder.

    Members
    -------
    i : In(stream.Signature(lane_bytes_layout(B), always_ready=True))
    end_of_genome : In(1)
        With ``i.valid``: the genome ends after this beat.
    tag : In(32)
        The genome tag, with ``end_of_genome``.
    plain_update : In(1)
        0 = conservative update (default), 1 = plain Count-Min. Change only between runs.
    full : Out(1)
        Stop sending beats (the FIFO could not take every beat already in flight).
    o : Out(stream.Signature(record_beat_layout(bus_bits)))
        The records of the genomes of this lane, in order; the beat marked ``last`` holds only
        the genome tag (bits 0-31): the core's entropy unit completes the trailer.
    idle : Out(1)
        No beat and no record in flight (the genome state may continue in the next chunk; a
        retired bank may still be clearing: the next genome end waits for it).
    """

    def __init__(self, params: Params):
        self.params = params
        self.parser = LaneParser(params.bytes_per_lane)
        self.kmer_buffer = KmerBuffer(params.bytes_per_lane, params.k)
        self.sampler = Sampler(params.bytes_per_lane, params.s, params.sample_seed)
        self.hashes = Murmur3Seeds(range(params.d))
        #: ``record_banks`` banks of Count-Min and PQA: with two, one takes the current genome
        #: while the other writes the previous genome's record and clears; the banks share one
        #: Count-Min pipeline and one PQA insert network (only the memories are per bank)
        self.banks = params.record_banks
        self.countmin = CountMinUnit(params.d, params.cw, 32, key_bits=32 + (self.banks > 1),
                                     read_latency=2, stall_while_clearing=True, banks=self.banks)
        self.pqa = PqaInsert(params.R, params.n, banks=self.banks)
        #: per bank: written since its last clear (survives resets)
        self.dirty = Signal(self.banks, reset_less=True)
        #: a genome's end token leaves the serializer (the genome's last k-mer is in the hashes)
        self.genome_end = Signal()
        #: the banks swap: the ended genome's bank retires, the other takes the next genome
        self.bank_switch = Signal()
        #: a genome ended before the other bank was clean: the lane takes no k-mer
        self.waiting = Signal()
        if params.fifo_depth < self.in_flight + 4:
            raise ValueError(f"fifo_depth must be at least {self.in_flight + 4} (the beats in "
                             f"flight in the front end + 4), not {params.fifo_depth}")
        super().__init__({
            "i": In(stream.Signature(lane_bytes_layout(params.bytes_per_lane), always_ready=True)),
            "end_of_genome": In(1),
            "tag": In(32),
            "plain_update": In(1),
            "full": Out(1),
            "o": Out(stream.Signature(record_beat_layout(params.data_width))),
            "idle": Out(1),
        })

    @property
    def front_latency(self) -> int:
        """Cycles from a lane beat to its sampled beat at the FIFO."""
        return (self.parser.latency + self.kmer_buffer.latency + Canonicalizer.latency
                + self.sampler.latency)

    @property
    def in_flight(self) -> int:
        """Beats that may still reach the FIFO after ``full`` rises: the front end, the decoder
        stage and the registered hold."""
        return self.front_latency + 3

    @property
    def flush_cycles(self) -> int:
        """Cycles after a genome's end token until its last insertion is in the PQA."""
        return (self.hashes.latency + self.countmin.latency + self.pqa.latency + 1)

    @property
    def retire_cycles(self) -> int:
        """Cycles from a bank switch until the retired bank is clean again, when its record has
        the output to itself: the flush, the Count-Min clear (2^cw) or the record (its queue
        beats, the tag beat, the core's entropy finish and the trailer's two cycles of
        hand-over), whichever is longer, and 3
        cycles of hand-over."""
        record = (1 << self.params.R) * self.params.beats_per_queue + 3 + entropy_finish_cycles(
            *entropy_unit_args(self.params))
        return self.flush_cycles + 3 + max(1 << self.params.cw, record)

    def elaborate(self, platform):
        m = Module()
        p = self.params
        B = p.bytes_per_lane
        m.submodules.parser = parser = self.parser
        m.submodules.kmer_buffer = kmer_buffer = self.kmer_buffer
        m.submodules.sampler = sampler = self.sampler
        m.submodules.hashes = hashes = self.hashes
        m.submodules.serializer = serializer = Serializer(B)
        beat_bits = len(Signal(kmer_beat_layout(B)).as_value())
        m.submodules.beats = beats = fifo.SyncFIFOBuffered(width=beat_bits, depth=p.fifo_depth)
        m.submodules.tags = tags = fifo.SyncFIFOBuffered(width=32, depth=p.fifo_depth)

        # front end: fixed latency, no stall; the genome end and tag ride a delay line beside it
        wiring.connect(m, wiring.flipped(self.i), parser.i)
        wiring.connect(m, parser.o, kmer_buffer.i)
        end, tag = self.i.valid & self.end_of_genome, self.tag
        for stage in range(parser.latency + kmer_buffer.latency + Canonicalizer.latency):
            next_end, next_tag = Signal(name=f"end{stage}"), Signal(32, name=f"tag{stage}")
            m.d.sync += [next_end.eq(end), next_tag.eq(tag)]
            end, tag = next_end, next_tag
        canonical_valid = Signal()
        for slot in range(B):
            canonical = Canonicalizer(p.k)
            m.submodules[f"canonical{slot}"] = canonical
            m.d.comb += [
                canonical.i.valid.eq(kmer_buffer.o.valid),
                canonical.i.payload.word.eq(kmer_buffer.o.payload.words[slot]),
                canonical.i.payload.valid.eq(kmer_buffer.o.payload.valid[slot]),
                sampler.i.payload.words[slot].eq(canonical.o.payload.word),
                sampler.i.payload.valid[slot].eq(canonical.o.valid & canonical.o.payload.valid),
            ]
            if slot == 0:
                m.d.comb += canonical_valid.eq(canonical.o.valid)
        m.d.comb += [sampler.i.valid.eq(canonical_valid | end), sampler.i.payload.last.eq(end)]
        tag_line = tag
        for stage in range(sampler.latency):
            next_tag = Signal(32, name=f"sampler_tag{stage}")
            m.d.sync += next_tag.eq(tag_line)
            tag_line = next_tag
        sampled = sampler.o.payload
        push = sampler.o.valid & ((sampled.valid != 0) | sampled.last)
        m.d.comb += [
            beats.w_en.eq(push), beats.w_data.eq(sampled.as_value()),
            tags.w_en.eq(push & sampled.last), tags.w_data.eq(tag_line),
        ]
        m.d.comb += self.full.eq(beats.level + self.in_flight >= p.fifo_depth)

        # back end: one k-mer per cycle through the hashes into the active bank's Count-Min and
        # PQA; the bank travels beside the hashes
        active = Signal()          # the bank the current genome's k-mers go to
        waiting = self.waiting
        forgetting = Signal(self.banks)   # per bank: clearing after a reset (into nothing)
        two_banks = self.banks == 2
        other = ~active if two_banks else active
        record_idle = Signal()
        run = Signal()
        # one bank: the lane also stops while its bank retires
        lane_free = ~waiting & ~forgetting.bit_select(active, 1)
        m.d.comb += [
            run.eq(lane_free if two_banks else lane_free & record_idle),
            serializer.run.eq(run),
            serializer.i.valid.eq(beats.r_rdy),
            serializer.i.payload.eq(beats.r_data),
            beats.r_en.eq(serializer.i.ready),
            hashes.i.valid.eq(serializer.o.valid & serializer.o.payload.kmer),
            hashes.i.payload.eq(serializer.o.payload.word),
        ]
        bank_line = active
        for stage in range(hashes.latency):
            next_bank = Signal(name=f"bank{stage}")
            m.d.sync += next_bank.eq(bank_line)
            bank_line = next_bank
        m.submodules.countmin = countmin = self.countmin
        m.submodules.pqa = pqa = self.pqa
        pqa_outputs = pqa.bank_outputs
        bank_fields = ([countmin.i.payload.bank.eq(bank_line),
                        pqa.i.payload.bank.eq(countmin.o.payload.key[32])] if two_banks else [])
        m.d.comb += [
            countmin.i.valid.eq(hashes.o.valid),
            countmin.i.payload.key.eq(Cat(hashes.o.payload.hashes[0], bank_line) if two_banks
                                      else hashes.o.payload.hashes[0]),
            countmin.plain_update.eq(self.plain_update),
            pqa.i.valid.eq(countmin.o.valid),
            pqa.i.payload.hash.eq(countmin.o.payload.key[:32]),
            pqa.i.payload.value.eq(countmin.o.payload.estimate),
            *bank_fields,
        ]
        for row in range(p.d):
            m.d.comb += countmin.i.payload.indices[row].eq(hashes.o.payload.hashes[row][:p.cw])
        for bank, pqa_output in enumerate(pqa_outputs):
            # a bank is dirty from its first insertion until its clear ends; the flag survives
            # resets (reset_less), so a reset clears only banks that hold something, and the
            # first call after configuration (memories zero) starts at once
            with m.If(countmin.i.valid & (bank_line == bank)):
                m.d.sync += self.dirty[bank].eq(1)
            with m.If(forgetting[bank] & ~pqa.busy[bank] & ~pqa_output.valid
                      & ~countmin.busy[bank]):
                m.d.sync += [forgetting[bank].eq(0), self.dirty[bank].eq(0)]
            with m.If(forgetting[bank]):
                m.d.comb += pqa_output.ready.eq(1)

        # record of the retiring bank: its queues (each split into bus beats), then the trailer
        retiring = Signal()
        retiring_countmin = Signal()
        retiring_pqa_valid, retiring_pqa_last = Signal(), Signal()
        retiring_pqa_ready = Signal()
        for bank, pqa_output in enumerate(pqa_outputs):
            with m.If(retiring == bank):
                m.d.comb += [retiring_countmin.eq(countmin.busy[bank]),
                             retiring_pqa_valid.eq(pqa_output.valid),
                             retiring_pqa_last.eq(pqa_output.payload.last)]
                with m.If(~forgetting[bank]):
                    m.d.comb += pqa_output.ready.eq(retiring_pqa_ready)
        queue_words = [Cat(*(Cat(entry.value, entry.tag, Const(0, p.R))
                             for entry in pqa_output.payload.entries))
                       for pqa_output in pqa_outputs]
        queue_word = Mux(retiring, queue_words[-1], queue_words[0])
        piece = Signal(range(max(2, p.beats_per_queue)))
        final_piece = piece == p.beats_per_queue - 1
        flush_cycles = self.flush_cycles
        flush = Signal(range(flush_cycles + 1))
        ended = self.genome_end
        m.d.comb += ended.eq(serializer.o.valid & serializer.o.payload.last)
        other_clean = Signal()
        m.d.comb += other_clean.eq(record_idle & ~forgetting.bit_select(other, 1))

        def start_drain(bank):
            for index in range(self.banks):
                with m.If(bank == index):
                    m.d.comb += [pqa.drain[index].eq(1), countmin.clear[index].eq(1)]

        record_pending = Signal()  # the retiring bank's record is not delivered yet
        with m.FSM(init="Reset"):
            with m.State("Reset"):
                # forget what a reset cut off: every dirty bank drains and clears (both at once);
                # the lane starts on a clean bank if it has one
                for bank in range(self.banks):
                    with m.If(self.dirty[bank]):
                        start_drain(bank)
                        m.d.sync += forgetting[bank].eq(1)
                m.d.comb += serializer.run.eq(0)
                if two_banks:
                    m.d.sync += active.eq(self.dirty[0] & ~self.dirty[1])
                m.next = "Idle"
            with m.State("Idle"):
                m.d.comb += record_idle.eq(1)
                # the genome ends: the other bank takes the next genome, this one retires; if
                # the other one is still retiring (the record FSM is busy) the lane waits here
                with m.If((ended | waiting) & other_clean):
                    m.d.comb += self.bank_switch.eq(1)
                    m.d.sync += [waiting.eq(0), active.eq(other), retiring.eq(active),
                                 flush.eq(flush_cycles)]
                    m.next = "Flush"
            with m.State("Flush"):
                m.d.comb += record_pending.eq(1)
                m.d.sync += flush.eq(flush - 1)
                with m.If(flush == 0):
                    start_drain(retiring)
                    m.d.sync += piece.eq(0)
                    m.next = "Queues"
            with m.State("Queues"):
                m.d.comb += [
                    record_pending.eq(1),
                    self.o.valid.eq(retiring_pqa_valid),
                    self.o.payload.data.eq(queue_word.word_select(piece, p.data_width)),
                    retiring_pqa_ready.eq(self.o.ready & final_piece),
                ]
                with m.If(retiring_pqa_valid & self.o.ready):
                    m.d.sync += piece.eq(Mux(final_piece, 0, piece + 1))
                    with m.If(final_piece & retiring_pqa_last):
                        m.next = "Tag"
            with m.State("Tag"):
                m.d.comb += [
                    record_pending.eq(1),
                    self.o.valid.eq(tags.r_rdy),
                    self.o.payload.data.eq(tags.r_data),
                    self.o.payload.last.eq(1),
                    tags.r_en.eq(self.o.ready),
                ]
                with m.If(tags.r_rdy & self.o.ready):
                    m.next = "Clear"
            with m.State("Clear"):
                with m.If(~retiring_countmin):
                    m.d.sync += self.dirty.bit_select(retiring, 1).eq(0)
                    m.next = "Idle"
        with m.If(ended & ~other_clean):
            m.d.sync += waiting.eq(1)
        # the retiring bank's clear may go on after the call: the next genome end waits for it
        # (one bank: the serializer may hold the next genome's beat until the clear ends)
        m.d.comb += self.idle.eq(~waiting & (~record_pending if two_banks else record_idle)
                                 & ~beats.r_rdy & ~(run & serializer.o.valid))
        return m


class QueueBuilderCore(wiring.Component):
    """Chunk beats in (docs/jacc_sketch_kernel.md chunk layout), PQA records out.

    Members
    -------
    i : In(stream.Signature(8 T B))
    o : Out(stream.Signature(8 T B))
        Records of the genomes that end, whole records back to back, lowest lane first. The
        trailer leaves about ``entropy_finish_cycles`` + 1 cycles after the record's last queue
        beat (the shared entropy unit's finish).
    plain_update : In(1)
    idle : Out(1)
        Every accepted beat is processed and every record delivered.
    records : Out(32)
        Records delivered since reset (wraps).
    """

    def __init__(self, params: Params):
        self.params = params
        self.lane_units = [QueueBuilderLane(params) for _ in range(params.lanes)]
        super().__init__({
            "i": In(stream.Signature(params.data_width)),
            "o": Out(stream.Signature(params.data_width)),
            "plain_update": In(1),
            "idle": Out(1),
            "records": Out(32),
        })

    def elaborate(self, platform):
        m = Module()
        p = self.params
        m.submodules.decoder = decoder = ChunkDecoder(lanes=p.lanes,
                                                      bytes_per_lane=p.bytes_per_lane)
        wiring.connect(m, wiring.flipped(self.i), decoder.i)
        hold = Signal()
        m.d.sync += hold.eq(Cat(*(lane.full for lane in self.lane_units)).any())
        m.d.comb += decoder.hold.eq(hold)

        current = Signal(range(max(2, p.lanes)))
        granted = Signal()
        requests = Cat(*(lane.o.valid for lane in self.lane_units))
        lowest = Signal(range(max(2, p.lanes)))
        for t in reversed(range(p.lanes)):
            with m.If(requests[t]):
                m.d.comb += lowest.eq(t)
        with m.If(~granted & requests.any()):
            m.d.sync += [granted.eq(1), current.eq(lowest)]
        beat = Signal(record_beat_layout(p.data_width))
        beat_valid, beat_ready = Signal(), Signal()
        for t, lane in enumerate(self.lane_units):
            m.submodules[f"lane{t}"] = lane
            m.d.comb += [
                lane.i.valid.eq(decoder.lanes_valid),
                lane.i.payload.eq(decoder.lanes[t]),
                lane.end_of_genome.eq(decoder.end_of_genome[t]),
                lane.tag.eq(decoder.tags[t]),
                lane.plain_update.eq(self.plain_update),
            ]
            with m.If(granted & (current == t)):
                m.d.comb += [beat_valid.eq(lane.o.valid), beat.eq(lane.o.payload),
                             lane.o.ready.eq(beat_ready)]

        # the granted lane's queue beats pass to the output and their values into the entropy
        # unit; its tag beat is first counted in as an empty `last` beat (ending the sums), then
        # leaves as the trailer once the entropy is known
        entries_per_beat = p.data_width // 64
        m.submodules.entropy = entropy = EntropyUnit(*entropy_unit_args(p))
        ending = Signal()
        with m.If(~beat.last):
            m.d.comb += [
                self.o.valid.eq(beat_valid & entropy.i.ready),
                self.o.payload.eq(beat.data),
                beat_ready.eq(self.o.ready & entropy.i.ready),
                entropy.i.valid.eq(beat_valid & self.o.ready),
            ]
            for j in range(entries_per_beat):
                m.d.comb += entropy.i.payload.counts[j].eq(beat.data[64 * j:64 * j + 32])
        with m.Elif(~ending):
            m.d.comb += [entropy.i.valid.eq(beat_valid), entropy.i.payload.last.eq(1)]
            with m.If(beat_valid & entropy.i.ready):
                m.d.sync += ending.eq(1)
        with m.Else():
            m.d.comb += [
                self.o.valid.eq(beat_valid & entropy.o.valid),
                self.o.payload.eq(Cat(beat.data[:32], entropy.o.payload.entropy,
                                      entropy.o.payload.total)),
                beat_ready.eq(self.o.ready & entropy.o.valid),
                entropy.o.ready.eq(self.o.ready & beat_valid),
            ]
            with m.If(beat_valid & entropy.o.valid & self.o.ready):
                m.d.sync += [ending.eq(0), granted.eq(0), self.records.eq(self.records + 1)]
        pipeline_empty = Signal()
        m.d.comb += pipeline_empty.eq(Cat(*(lane.idle for lane in self.lane_units)).all()
                                      & ~decoder.lanes_valid & ~granted)
        # beats inside the lanes' fixed-latency front ends are not visible: count quiet cycles
        settle = self.lane_units[0].front_latency + 4
        quiet = Signal(range(settle + 1))
        with m.If(~pipeline_empty | (self.i.valid & self.i.ready)):
            m.d.sync += quiet.eq(0)
        with m.Elif(quiet < settle):
            m.d.sync += quiet.eq(quiet + 1)
        m.d.comb += self.idle.eq(pipeline_empty & (quiet == settle))
        return m
