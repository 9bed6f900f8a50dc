"""Queue builder: chunk beats in, one PQA record (queues + entropy trailer) per genome out.

Per lane (``QueueBuilderLane``), all at one beat per cycle with fixed latency up to the FIFO:
the sketch kernel's :class:`LaneParser` and :class:`KmerBuffer`, B :class:`Canonicalizer` s,
the B-way :class:`Sampler`; beats holding a sampled k-mer (or a genome end) enter the lane's
FIFO. Sampling keeps about one k-mer in 2^s (s = 10: 8 lanes x 8 k-mers per beat give one k-mer
in 16 cycles), so the lanes share one back end (``QueueBuilderCore``): a round-robin pointer
offers one lane's FIFO at a time to one :class:`Serializer`, which takes one k-mer per cycle
into the d-seed :class:`Murmur3Seeds` (the sampler has already mixed the k-mer's murmur3
blocks), the :class:`~hw.common.countmin.CountMinUnit` and the :class:`PqaInsert` network. Each
lane owns ``record_banks`` banks of Count-Min counters and PQA queues behind that one pipeline
and network (only the memories are per bank; an insertion's bank, lane and bank within the
lane, travels with it, so the pipeline may hold k-mers of every lane and genome at once, and
forwarding never crosses banks). With ``record_banks`` = 1 a lane stops at each genome end
until its bank has retired (below). With ``record_banks`` = 2 (the default; the PQA slots of
2^12 entries sit in UltraRAM, so both banks fit the F1 next to the similarity kernel) at a
genome end the lane's banks switch, the next genome's k-mers go to the other bank at once, and
the ended genome's bank retires in the background: it waits for the pipeline to empty of it
(``flush_cycles``), drains its PQA (which clears it) into the lane's record stream while its
Count-Min clears itself, and appends the genome's tag.

Stall rule of two banks (``tests/test_jsd_builder.py`` measures it): when a genome's end token
leaves the serializer and the other bank is clean, the banks switch in that cycle and the lane
loses no cycle; otherwise the lane takes no k-mer (``waiting``) until the other bank is clean. A
bank is clean again ``retire_cycles`` = flush + 3 + max(2^cw, 2^R x beats per queue + 4 + F) cycles
after its switch when its record has the output to itself (16,408 at the defaults, clear-bound;
the record is 4,096 queue beats, the PQA's drain register, the tag beat, the core's 74-cycle entropy
finish and 2), later if another lane's
record holds the output. So a lane never waits if each of its genomes lasts at least
``retire_cycles`` cycles (8 B bytes per cycle: 131 kB at the defaults) and the records of all
lanes fit the output (one record of 2^R x beats per queue + 4 + F cycles per genome; F the entropy
unit's finish, ``entropy_finish_cycles``: 74 cycles at the defaults).

The core forwards one lane's record at a time, and its one :class:`EntropyUnit` takes the PQA
values of the record beats as they pass; it completes each lane's tag beat into the record
trailer (tag, entropy, total). One unit for all lanes does not limit the output: the records
were already serialised by the lane multiplexer.

Backpressure: the front end cannot stall, so a lane raises ``full`` while its FIFO could not
absorb every beat already in flight; the core then holds the chunk decoder (all lanes).
Throughput: one chunk beat per cycle while no lane's FIFO fills, i.e. while the sampled k-mers of
all lanes together average at most one per cycle (s >= 6 at T x B = 64 k-mers per beat; below,
the one back end sets the rate) and no lane waits at a genome end (rule above).

Clean state: nothing is assumed of the memories or of any register at configuration. Every
reset (ap_rst_n, an aborted call, a FRESH start) drains every bank's PQA into nothing and clears
every bank's Count-Min, all banks at once; a lane takes its first k-mer once its active bank is
clean: :attr:`QueueBuilderLane.reset_clear_cycles` = max(2^R + 2, 2^cw) + 3 cycles after the
reset (16,387 at the defaults: the Count-Min clear decides), while its FIFO fills and then holds
the input. So whatever the memories hold at configuration (the design sets no memory contents)
or from a genome cut off by the reset never reaches a record
(``tests/test_power_on.py`` starts the kernel with every memory and register random).

Record layout: kmerspec/kernels/jsd_builder.py (docs/jsd_kernels.md).
"""

from amaranth.hdl import Array, Cat, Const, Module, Mux, Signal
from amaranth.lib import data, fifo, stream, wiring
from amaranth.lib.wiring import In, Out

from kmerspec.kernels.jsd_builder import Params

from hw.common.countmin import CountMinUnit
from hw.common.pipeline import bank_bits, delayed
from hw.sketch.canonical import Canonicalizer
from hw.sketch.chunk import ChunkDecoder
from hw.sketch.kmer_buffer import KmerBuffer
from hw.sketch.parser import LaneParser, lane_bytes_layout
from .entropy import EntropyUnit, entropy_finish_cycles
from .murmur3 import Murmur3Seeds
from .pqa import PqaInsert, queue_layout, slot_layout
from .sampler import Sampler, kmer_beat_layout
from .serializer import Serializer, counted_beat, counted_beat_layout

__all__ = ["record_beat_layout", "QueueBuilderLane", "QueueBuilderCore"]


def record_beat_layout(bus_bits: int) -> data.StructLayout:
    """One beat of a record; ``last`` marks the trailer."""
    return data.StructLayout({"data": bus_bits, "last": 1})



def entropy_unit_args(p) -> tuple[int, int, int]:
    """(count_bits, counts_per_beat, max_beats_bits) of the core's entropy unit: the 32-bit PQA
    values of one output beat, up to 2^R queues of ``beats_per_queue`` beats per record."""
    return 32, p.data_width // 64, p.R + (p.beats_per_queue - 1).bit_length()

class QueueBuilderLane(wiring.Component):
    """One genome lane of the queue builder: its front end up to the sampled-beat FIFO, and the
    control of its banks in the core's shared Count-Min and PQA (which bank takes the genome; the
    retiring bank's flush, drain, clear and record).

    Members
    -------
    i : In(stream.Signature(lane_bytes_layout(B), always_ready=True))
    end_of_genome : In(1)
        With ``i.valid``: the genome ends after this beat.
    tag : In(32)
        The genome tag, with ``end_of_genome``.
    full : Out(1)
        Stop sending beats (the FIFO could not take every beat already in flight).
    beats : Out(stream.Signature(counted_beat_layout(B)))
        The sampled beats with their k-mer flags, for the core's serializer.
    accepting : Out(1)
        The core may take the lane's beats: no genome end waits for a clean bank (with one bank:
        the bank is not retiring). A register, one cycle behind the bank state, so the core keeps
        a lane's next beat back until two cycles after its genome end token.
    active : Out(1)
        The lane's bank (0 or 1) that takes the current genome's k-mers.
    genome_end : In(1)
        The lane's genome end token leaves the serializer (its last k-mer is in the hashes).
    countmin_clear, pqa_drain : Out(banks)
        Start bank b's clear and drain (the retiring bank, or every bank after a reset).
    countmin_busy, pqa_busy : In(banks)
        Bank b clears or drains.
    queues : In(stream.Signature(queue_layout(R, n))).array(banks)
        The drain ports of the lane's banks: the lane takes their handshake and ``last`` (the
        core takes their data into the record).
    o : Out(stream.Signature(record_beat_layout(bus_bits)))
        The records of the genomes of this lane, in order. Its queue beats carry no data: the
        core takes piece ``piece`` of the drained queue of bank ``retiring`` (one select for
        all lanes and banks); the beat marked ``last`` holds only the genome tag (bits 0-31):
        the core's entropy unit completes the trailer.
    retiring : Out(1)
        The lane's bank whose record ``o`` is sending.
    piece : Out(range(max(2, beats_per_queue)))
        Which bus beat of the current queue ``o`` is sending.
    idle : Out(1)
        No beat and no record in flight (the genome state may continue in the next chunk; a
        retired bank may still be clearing: the next genome end waits for it).
    """

    def __init__(self, params: Params, flush_cycles: int):
        self.params = params
        self.parser = LaneParser(params.bytes_per_lane)
        self.kmer_buffer = KmerBuffer(params.bytes_per_lane, params.k)
        self.sampler = Sampler(params.bytes_per_lane, params.s, params.sample_seed)
        #: ``record_banks`` banks of Count-Min and PQA: with two, one takes the current genome
        #: while the other writes the previous genome's record and clears
        self.banks = params.record_banks
        #: cycles from a genome end token until the genome's last insertion is in the PQA
        self.flush_cycles = flush_cycles
        #: the banks swap: the ended genome's bank retires, the other takes the next genome
        self.bank_switch = Signal()
        #: a genome ended before the other bank was clean: the lane takes no k-mer
        self.waiting = Signal()
        if params.fifo_depth < self.in_flight + 4:
            raise ValueError(f"fifo_depth must be at least {self.in_flight + 4} (the beats in "
                             f"flight in the front end + 4), not {params.fifo_depth}")
        banks = self.banks
        super().__init__({
            "i": In(stream.Signature(lane_bytes_layout(params.bytes_per_lane), always_ready=True)),
            "end_of_genome": In(1),
            "tag": In(32),
            "full": Out(1),
            "beats": Out(stream.Signature(counted_beat_layout(params.bytes_per_lane))),
            "accepting": Out(1),
            "active": Out(1),
            "genome_end": In(1),
            "countmin_clear": Out(banks),
            "countmin_busy": In(banks),
            "pqa_drain": Out(banks),
            "pqa_busy": In(banks),
            "queues": In(stream.Signature(queue_layout(params.R, params.n))).array(banks),
            "o": Out(stream.Signature(record_beat_layout(params.data_width))),
            "retiring": Out(1),
            "piece": Out(range(max(2, params.beats_per_queue))),
            "idle": Out(1),
        })

    @property
    def front_latency(self) -> int:
        """Cycles from a lane beat to its sampled beat at the FIFO (the last one a register of
        the sampled beat and its push, off the FIFO's level logic)."""
        return (self.parser.latency + self.kmer_buffer.latency + Canonicalizer.latency
                + self.sampler.latency + 1)

    @property
    def in_flight(self) -> int:
        """Beats that may still reach the FIFO after ``full`` rises: the front end, the decoder
        stage and the registered hold."""
        return self.front_latency + 3

    @property
    def reset_clear_cycles(self) -> int:
        """Cycles from the end of a reset until the lane may take k-mers: every bank's PQA drain
        (2^R queues and the 2 cycles of its output register) and Count-Min clear (2^cw) run at
        once after the Reset state; then 3 cycles of hand-over (the clear's end, the
        ``forgetting`` flag, the ``accepting`` register)."""
        return max((1 << self.params.R) + 2, 1 << self.params.cw) + 3

    @property
    def retire_cycles(self) -> int:
        """Cycles from a bank switch until the retired bank is clean again, when its record has
        the output to itself: the flush, the Count-Min clear (2^cw) or the record (its queue
        beats, the cycle of the PQA's drain register, the tag beat, the core's entropy finish and
        the trailer's two cycles of hand-over), whichever is longer, and 3 cycles of hand-over."""
        record = (1 << self.params.R) * self.params.beats_per_queue + 4 + entropy_finish_cycles(
            *entropy_unit_args(self.params))
        return self.flush_cycles + 3 + max(1 << self.params.cw, record)

    def elaborate(self, platform):
        m = Module()
        p = self.params
        B = p.bytes_per_lane
        m.submodules.parser = parser = self.parser
        m.submodules.kmer_buffer = kmer_buffer = self.kmer_buffer
        m.submodules.sampler = sampler = self.sampler
        beat_bits = counted_beat_layout(B).size
        m.submodules.beats = beats = _BlockRamFifo(width=beat_bits, depth=p.fifo_depth)
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
        # the tag beside the sampler and the register below
        sampled_tag = delayed(m, tag, sampler.latency + 1, "sampled_tag")
        # the beats that hold a sampled k-mer or a genome end, registered (the sampling decision
        # is a zero test of hash bits; the FIFO's level is a carry chain behind its write)
        sampled = Signal(kmer_beat_layout(B), reset_less=True)
        push = Signal()
        m.d.sync += [
            sampled.eq(sampler.o.payload),
            push.eq(sampler.o.valid & ((sampler.o.payload.valid != 0) | sampler.o.payload.last)),
        ]
        m.d.comb += [
            beats.w_en.eq(push), beats.w_data.eq(counted_beat(sampled)),
            tags.w_en.eq(push & sampled.last), tags.w_data.eq(sampled_tag),
            self.full.eq(beats.level + self.in_flight >= p.fifo_depth),
            self.beats.valid.eq(beats.r_rdy), self.beats.payload.eq(beats.r_data),
            beats.r_en.eq(self.beats.ready),
        ]

        # bank control
        active = self.active       # the bank the current genome's k-mers go to
        waiting = self.waiting
        forgetting = Signal(self.banks)   # per bank: clearing after a reset (into nothing)
        two_banks = self.banks == 2
        other = ~active if two_banks else active
        record_idle = Signal()
        resetting = Signal()
        # one bank: the lane also stops while its bank retires
        lane_free = ~resetting & ~waiting & ~forgetting.bit_select(active, 1)
        m.d.sync += self.accepting.eq(lane_free if two_banks else lane_free & record_idle)
        for bank, queues in enumerate(self.queues):
            with m.If(forgetting[bank] & ~self.pqa_busy[bank] & ~queues.valid
                      & ~self.countmin_busy[bank]):
                m.d.sync += forgetting[bank].eq(0)
            with m.If(forgetting[bank]):
                m.d.comb += queues.ready.eq(1)

        # record of the retiring bank: its queues (each split into bus beats), then the trailer
        retiring = self.retiring
        retiring_countmin = Signal()
        retiring_pqa_valid, retiring_pqa_last = Signal(), Signal()
        retiring_pqa_ready = Signal()
        for bank, queues in enumerate(self.queues):
            with m.If(retiring == bank):
                m.d.comb += [retiring_countmin.eq(self.countmin_busy[bank]),
                             retiring_pqa_valid.eq(queues.valid),
                             retiring_pqa_last.eq(queues.payload.last)]
                with m.If(~forgetting[bank]):
                    m.d.comb += queues.ready.eq(retiring_pqa_ready)
        piece = self.piece
        final_piece = piece == p.beats_per_queue - 1
        flush_cycles = self.flush_cycles
        flush = Signal(range(flush_cycles + 1))
        ended = self.genome_end
        other_clean = Signal()
        m.d.comb += other_clean.eq(record_idle & ~forgetting.bit_select(other, 1))

        def start_drain(bank):
            for index in range(self.banks):
                with m.If(bank == index):
                    m.d.comb += [self.pqa_drain[index].eq(1), self.countmin_clear[index].eq(1)]

        record_pending = Signal()  # the retiring bank's record is not delivered yet
        with m.FSM(init="Reset"):
            with m.State("Reset"):
                # forget whatever the memories hold: configuration leaves them undefined and a
                # reset may cut a genome off, and no flag that survives a reset can be trusted
                # at configuration, so every bank drains and clears (all at once)
                for bank in range(self.banks):
                    start_drain(bank)
                    m.d.sync += forgetting[bank].eq(1)
                m.d.comb += resetting.eq(1)
                if two_banks:
                    m.d.sync += active.eq(0)
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
                    m.next = "Idle"
        with m.If(ended & ~other_clean):
            m.d.sync += waiting.eq(1)
        # the retiring bank's clear may go on after the call: the next genome end waits for it
        m.d.comb += self.idle.eq(~waiting & (~record_pending if two_banks else record_idle)
                                 & ~beats.r_rdy)
        return m


class QueueBuilderCore(wiring.Component):
    """Chunk beats in (docs/jacc_sketch_kernel.md chunk layout), PQA records out.

    Members
    -------
    i : In(stream.Signature(8 T B))
    o : Out(stream.Signature(8 T B))
        Records of the genomes that end, whole records back to back, lowest lane first. The
        trailer leaves about ``entropy_finish_cycles`` + 3 cycles after the record's last queue
        beat (the shared entropy unit's finish and the output FIFO, ``OUTPUT_FIFO_DEPTH``
        beats of block RAM behind a register, 3 cycles from the record handshake to ``o``).
    plain_update : In(1)
    idle : Out(1)
        Every accepted beat is processed and every record delivered.
    records : Out(32)
        Records delivered since reset (wraps).

    The back end shared by the lanes is :attr:`hashes`, :attr:`countmin` and :attr:`pqa`: lane
    t's bank b is bank ``t * record_banks + b`` of the Count-Min and the PQA.
    """

    #: beats of the record output FIFO (block RAM: 512 deep at one BRAM36 per 72 bits)
    OUTPUT_FIFO_DEPTH = 512

    def __init__(self, params: Params):
        self.params = params
        #: the banks of the shared Count-Min and PQA: ``record_banks`` per lane
        self.banks = params.lanes * params.record_banks
        self.hashes = Murmur3Seeds(range(params.d))
        self.countmin = CountMinUnit(params.d, params.cw, 32,
                                     key_bits=32 + bank_bits(self.banks), read_latency=2,
                                     stall_while_clearing=True, banks=self.banks)
        self.pqa = PqaInsert(params.R, params.n, banks=self.banks)
        self.lane_units = [QueueBuilderLane(params, self.flush_cycles)
                           for _ in range(params.lanes)]
        super().__init__({
            "i": In(stream.Signature(params.data_width)),
            "o": Out(stream.Signature(params.data_width)),
            "plain_update": In(1),
            "idle": Out(1),
            "records": Out(32),
        })

    @property
    def flush_cycles(self) -> int:
        """Cycles after a genome's end token until its last insertion is in the PQA."""
        return self.hashes.latency + self.countmin.latency + self.pqa.latency + 1

    def elaborate(self, platform):
        m = Module()
        p = self.params
        lanes = self.lane_units
        m.submodules.decoder = decoder = ChunkDecoder(lanes=p.lanes,
                                                      bytes_per_lane=p.bytes_per_lane)
        wiring.connect(m, wiring.flipped(self.i), decoder.i)
        hold = Signal()
        m.d.sync += hold.eq(Cat(*(lane.full for lane in lanes)).any())
        m.d.comb += decoder.hold.eq(hold)
        for t, lane in enumerate(lanes):
            m.submodules[f"lane{t}"] = lane
            m.d.comb += [
                lane.i.valid.eq(decoder.lanes_valid),
                lane.i.payload.eq(decoder.lanes[t]),
                lane.end_of_genome.eq(decoder.end_of_genome[t]),
                lane.tag.eq(decoder.tags[t]),
            ]
        serializer_empty = self._back_end(m)
        self._records(m, ~decoder.lanes_valid & serializer_empty)
        return m

    def _back_end(self, m):
        """The serializer takes one lane's sampled beats at a time; its k-mers go through the
        hashes into the Count-Min and PQA banks of their lane. Returns whether the serializer is
        empty."""
        p = self.params
        lanes = self.lane_units
        m.submodules.serializer = serializer = Serializer(p.bytes_per_lane)
        m.submodules.hashes = hashes = self.hashes
        m.submodules.countmin = countmin = self.countmin
        m.submodules.pqa = pqa = self.pqa

        # the pointer (one-hot, a register) offers one lane's FIFO to the serializer and moves
        # on when that lane's beat is taken or it has none to offer. A lane whose genome-end
        # beat was taken offers nothing more until its end token has left and its `accepting`
        # register has seen the bank state after it (two cycles), so a lane that must wait for
        # a clean bank never puts the next genome's beat in front of the other lanes.
        pointer = Signal(p.lanes, init=1)
        ending = Signal(p.lanes)          # per lane: its genome-end beat is taken, token not out
        ended_lane = Signal(p.lanes)      # per lane: its end token left in the cycle before
        token_lane = Signal(range(max(2, p.lanes)))   # the lane of the serializer's beat
        allowed = Signal(p.lanes)
        offered = Signal(p.lanes)
        m.d.comb += [
            allowed.eq(Cat(*(lane.accepting for lane in lanes)) & ~ending),
            offered.eq(Cat(*(lane.beats.valid for lane in lanes)) & allowed & pointer),
            serializer.run.eq(1),
            serializer.i.valid.eq(offered.any()),
        ]
        # the beat itself by the pointer's index (a register beside it): a multiplexer of the
        # lanes' 523-bit beats by index is about half the LUTs of an AND-OR by the one-hot
        # pointer (two LUT6 and a LUT3 per bit at 8 lanes, against four)
        pointer_index = Signal(range(max(2, p.lanes)))
        m.d.comb += serializer.i.payload.eq(
            Array([lane.beats.payload.as_value() for lane in lanes])[pointer_index])
        taken = serializer.i.valid & serializer.i.ready
        for t, lane in enumerate(lanes):
            m.d.comb += lane.beats.ready.eq(pointer[t] & allowed[t] & serializer.i.ready)
        with m.If(taken | ~offered.any()):
            m.d.sync += [pointer.eq(Cat(pointer[-1], pointer[:-1])),
                         pointer_index.eq(Mux(pointer_index == p.lanes - 1, 0,
                                              pointer_index + 1))]
        with m.If(taken):
            m.d.sync += token_lane.eq(pointer_index)

        token = serializer.o.payload
        end_token = serializer.o.valid & token.last
        for t, lane in enumerate(lanes):
            mine = end_token & (token_lane == t)
            m.d.comb += lane.genome_end.eq(mine)
            m.d.sync += ended_lane[t].eq(mine)
            # the lane's own `last` (the same beat while its pointer bit is set), not the
            # selected one: behind the FIFO's block RAM output and the 8:1 select it was 4.43 ns
            with m.If(taken & pointer[t] & lane.beats.payload.beat.last):
                m.d.sync += ending[t].eq(1)
            with m.Elif(ended_lane[t]):
                m.d.sync += ending[t].eq(0)

        # the k-mer's bank: its lane's active bank; it travels beside the hashes
        banks_per_lane = p.record_banks
        bank_width = bank_bits(self.banks)
        active = Cat(*(lane.active for lane in lanes)).bit_select(token_lane, 1)
        bank = Cat(active, token_lane) if banks_per_lane == 2 else token_lane
        m.d.comb += [hashes.i.valid.eq(serializer.o.valid & token.kmer),
                     hashes.i.payload.eq(token.word)]
        bank_line = delayed(m, bank[:bank_width], hashes.latency, "bank")
        bank_fields = ([countmin.i.payload.bank.eq(bank_line),
                        pqa.i.payload.bank.eq(countmin.o.payload.key[32:])]
                       if self.banks > 1 else [])
        m.d.comb += [
            countmin.i.valid.eq(hashes.o.valid),
            countmin.i.payload.key.eq(Cat(hashes.o.payload.hashes[0], bank_line)),
            countmin.plain_update.eq(self.plain_update),
            pqa.i.valid.eq(countmin.o.valid),
            pqa.i.payload.hash.eq(countmin.o.payload.key[:32]),
            pqa.i.payload.value.eq(countmin.o.payload.estimate),
            *bank_fields,
        ]
        for row in range(p.d):
            m.d.comb += countmin.i.payload.indices[row].eq(hashes.o.payload.hashes[row][:p.cw])
        pqa_outputs = pqa.bank_outputs
        for t, lane in enumerate(lanes):
            for b in range(banks_per_lane):
                index = t * banks_per_lane + b
                m.d.comb += [
                    countmin.clear[index].eq(lane.countmin_clear[b]),
                    lane.countmin_busy[b].eq(countmin.busy[index]),
                    pqa.drain[index].eq(lane.pqa_drain[b]),
                    lane.pqa_busy[b].eq(pqa.busy[index]),
                ]
                wiring.connect(m, pqa_outputs[index], lane.queues[b])
        return ~serializer.o.valid

    def _records(self, m, back_end_empty):
        """The lanes' records, one whole record at a time, through the entropy unit; ``idle``
        once the lanes and ``back_end_empty`` say nothing is left."""
        p = self.params
        lanes = self.lane_units
        current = Signal(range(max(2, p.lanes)))
        granted = Signal()
        requests = Cat(*(lane.o.valid for lane in lanes))
        lowest = Signal(range(max(2, p.lanes)))
        for t in reversed(range(p.lanes)):
            with m.If(requests[t]):
                m.d.comb += lowest.eq(t)
        # the granted lane also as a one-hot register: each lane's ready is decided from it and
        # the lane's own `last` (through the selected beat's `last`, the ready ran on into the
        # PQA's drain read and the URAM's write enable: 8 LUTs, 4.98 ns in the whole builder)
        granted_lane = Signal(p.lanes)
        with m.If(~granted & requests.any()):
            m.d.sync += [granted.eq(1), current.eq(lowest),
                         granted_lane.eq(1 << lowest)]
        beat = Signal(record_beat_layout(p.data_width))
        beat_valid, beat_ready, trailer_ready = Signal(), Signal(), Signal()
        for t, lane in enumerate(lanes):
            with m.If(granted & (current == t)):
                m.d.comb += [beat_valid.eq(lane.o.valid), beat.eq(lane.o.payload)]
            m.d.comb += lane.o.ready.eq(granted_lane[t] & Mux(lane.o.payload.last, trailer_ready,
                                                              beat_ready))
        # a queue beat's data: one select over the drained queues of every lane's banks (the
        # granted lane's retiring bank), then the empty entries zeroed and the beat's piece
        record_bank = (Cat(Cat(*(lane.retiring for lane in lanes)).bit_select(current, 1),
                           current) if p.record_banks == 2 else current)
        drained = Array([Cat(*(entry.as_value() for entry in output.payload.entries))
                         for output in self.pqa.bank_outputs])[record_bank[:bank_bits(self.banks)]
                                                               if self.banks > 1 else 0]
        slot = slot_layout(p.R)
        entries = [data.View(slot, drained[j * slot.size:(j + 1) * slot.size])
                   for j in range(p.n)]
        queue_word = Cat(*(Cat(Mux(entry.occupied, Cat(entry.value, entry.tag), 0),
                               Const(0, p.R)) for entry in entries))
        piece = Array([lane.piece for lane in lanes])[current]
        queue_data = queue_word.word_select(piece, p.data_width)

        # the beats leave through a block-RAM FIFO whose "room" is a register: the output's ready
        # (the AXI writer's WREADY and the call's abort) reaches neither the lanes' record
        # handshake nor the PQA's drain read behind it (through a register of the beat and its
        # ready: 8 LUTs from the kernel's FSM to a URAM's write enable, 4.98 ns). A trailer bit
        # rides beside each beat; `records` counts a trailer as it leaves.
        record_valid, record_ready, record_trailer = Signal(), Signal(), Signal()
        record_data = Signal(p.data_width)
        depth = self.OUTPUT_FIFO_DEPTH
        m.submodules.output = output = _BlockRamFifo(width=p.data_width + 1, depth=depth)
        # a beat enters the FIFO from a register a cycle after it is taken (the lanes' record
        # handshake into the FIFO's level was 10 levels), so "room" for a beat in this cycle,
        # decided on the level of the cycle before, leaves a place for that register's beat and
        # one for the beat of the cycle before
        room = Signal()
        entering = Signal()
        entering_data = Signal(p.data_width + 1)
        m.d.sync += [room.eq(output.level < depth - 2), entering.eq(record_valid & room),
                     entering_data.eq(Cat(record_data, record_trailer))]
        m.d.comb += [
            record_ready.eq(room),
            output.w_en.eq(entering),
            output.w_data.eq(entering_data),
            self.o.valid.eq(output.r_rdy),
            self.o.payload.eq(output.r_data[:p.data_width]),
            output.r_en.eq(self.o.ready),
        ]
        with m.If(self.o.valid & self.o.ready & output.r_data[p.data_width]):
            m.d.sync += self.records.eq(self.records + 1)
        # the granted lane's queue beats pass to the output and their values into the entropy
        # unit; its tag beat is first counted in as an empty `last` beat (ending the sums), then
        # leaves as the trailer once the entropy is known
        entries_per_beat = p.data_width // 64
        m.submodules.entropy = entropy = EntropyUnit(*entropy_unit_args(p))
        ending = Signal()
        # the ready of a queue beat and of the trailer (the lane's own `last` picks one)
        m.d.comb += [beat_ready.eq(record_ready & entropy.i.ready),
                     trailer_ready.eq(ending & record_ready & entropy.o.valid)]
        with m.If(~beat.last):
            m.d.comb += [
                record_valid.eq(beat_valid & entropy.i.ready),
                record_data.eq(queue_data),
                entropy.i.valid.eq(beat_valid & record_ready),
            ]
            for j in range(entries_per_beat):
                m.d.comb += entropy.i.payload.counts[j].eq(queue_data[64 * j:64 * j + 32])
        with m.Elif(~ending):
            m.d.comb += [entropy.i.valid.eq(beat_valid), entropy.i.payload.last.eq(1)]
            with m.If(beat_valid & entropy.i.ready):
                m.d.sync += ending.eq(1)
        with m.Else():
            m.d.comb += [
                record_valid.eq(beat_valid & entropy.o.valid),
                record_data.eq(Cat(beat.data[:32], entropy.o.payload.entropy,
                                   entropy.o.payload.total)),
                record_trailer.eq(1),
                entropy.o.ready.eq(record_ready & beat_valid),
            ]
            with m.If(beat_valid & entropy.o.valid & record_ready):
                m.d.sync += [ending.eq(0), granted.eq(0), granted_lane.eq(0)]
        # registered (the output FIFO's zero test into the quiet count's reset and the kernel's
        # FSM was 7 levels, 4.11 ns); one more quiet cycle covers the register
        pipeline_empty = Signal()
        m.d.sync += pipeline_empty.eq(Cat(*(lane.idle for lane in lanes)).all()
                                      & back_end_empty & ~granted & ~entering
                                      & (output.level == 0))
        # beats inside the lanes' fixed-latency front ends are not visible: count quiet cycles
        settle = lanes[0].front_latency + 5
        quiet = Signal(range(settle + 1))
        with m.If(~pipeline_empty | (self.i.valid & self.i.ready)):
            m.d.sync += quiet.eq(0)
        with m.Elif(quiet < settle):
            m.d.sync += quiet.eq(quiet + 1)
        m.d.comb += self.idle.eq(pipeline_empty & (quiet == settle))


class _BlockRamFifo(fifo.SyncFIFOBuffered):
    """A :class:`~amaranth.lib.fifo.SyncFIFOBuffered` whose storage is block RAM: the sampled
    beats are 8 x 64 bits wide, which in LUT RAM took 600 LUTs per lane (its read port is
    already synchronous, as a block RAM's)."""

    def elaborate(self, platform):
        m = super().elaborate(platform)
        m.submodules.storage.attrs["ram_style"] = "block"
        return m


