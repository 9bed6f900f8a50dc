"""SketchCore: chunk beats in, sketch records out (the whole JACC sketch-construction datapath).

Structure: a :class:`ChunkDecoder` feeds ``T`` :class:`SketchLane`\\ s (parser, k-mer buffer, B
canonicalizer + fmix64 + HLL update pipelines each). When a beat ends the genome of one or more
lanes, the core stops taking beats, waits until the lanes' last k-mers are in their partial
sketches, then for each such lane in order drains its B partial sketches through the lane's merge
tree into the :class:`FeatureAccumulator` and the :class:`RecordWriter`, and resumes.

Throughput: one input beat per cycle whenever no genome is ending, for every input (the datapath
has no stall condition). A genome end stops all lanes for ``insert_latency`` + ``2^(p-4)`` word
drains + the record's trailer (about 1,060 cycles for p=14 on a 512-bit bus) per ending lane.

Clean state: after reset the core first clears every word of every partial sketch of every lane
(``2^(p-4)`` cycles plus the drain latency, 1,024 + 4 at p=14; ``ending_genome`` is high
meanwhile), so nothing of a genome cut off by the reset (an aborted call, ap_rst_n, or the
kernel's fresh start) survives in its memories.

With ``prefilter`` (SPEC 7; hw/sketch/min_count_stage.py) and ``min_count`` > 1 a lane takes one
k-mer per cycle: a lane whose FIFO fills raises ``full`` and the core holds the input (all
lanes); at a genome end the core also waits until the ending lanes have ``settled`` (their FIFO
empty, their last k-mer in the sketch), and starts their Count-Min clear when their drain
starts (2^mc_width_bits cycles, beside the drain; the lane's next k-mers wait in its FIFO). The
reset clear zeroes the counters too.
"""

from amaranth.hdl import Cat, Const, Module, Signal
from amaranth.lib import data, fifo, stream, wiring
from amaranth.lib.wiring import In, Out

from kmerspec.golden.mincount import MinCountParams
from kmerspec.params import BYTES_PER_LANE, K, LANES, P, W, check_positive

from .chunk import ChunkDecoder
from .hll_update import REGISTERS_PER_WORD
from .lane import SketchLane
from .merge import FeatureAccumulator, RecordWriter

__all__ = ["SketchCore"]

_WORD_FIFO_DEPTH = 16


class SketchCore(wiring.Component):
    """Build one HyperLogLog sketch per genome from interleaved chunk beats.

    Parameters
    ----------
    lanes, bytes_per_lane : int
        T and B; the bus is ``8 T B`` bits wide.
    k, p, w : int
        k-mer length, HLL index bits and register width.

    Members
    -------
    i : In(stream.Signature(8 T B))
        Chunk beats (layout in docs/jacc_sketch_kernel.md).
    o : Out(stream.Signature(8 T B))
        Sketch records, back to back; honours backpressure (it only delays the merge).
    records : Out(32)
        Records completed since reset (wraps).
    ending_genome : Out(1)
        A genome end is being processed (the input is stopped by the core, not by its source).
    min_count : In(mc_counter_bits)
        Only with ``prefilter``: m of SPEC 7 (change it only between genomes).
    """

    def __init__(self, *, lanes: int = LANES.default,
                 bytes_per_lane: int = BYTES_PER_LANE.default, k: int = K.default,
                 p: int = P.default, w: int = W.default,
                 prefilter: MinCountParams | None = None):
        check_positive("lanes", lanes)
        check_positive("bytes_per_lane", bytes_per_lane)
        K.check(k)
        P.check(p)
        W.check(w)
        self._lanes, self._bytes_per_lane, self._k, self._p, self._w = lanes, bytes_per_lane, k, p, w
        self._bus_bits = 8 * lanes * bytes_per_lane
        self._writer = RecordWriter(self._bus_bits, p, w)
        self._prefilter = prefilter
        self._lane_units = [SketchLane(bytes_per_lane=bytes_per_lane, k=k, p=p, w=w,
                                       prefilter=prefilter)
                            for _ in range(lanes)]
        members = {
            "i": In(stream.Signature(self._bus_bits)),
            "o": Out(stream.Signature(self._bus_bits)),
            "records": Out(32),
            "ending_genome": Out(1),
        }
        if prefilter is not None:
            members["min_count"] = In(prefilter.mc_counter_bits)
        super().__init__(members)

    @property
    def lane_units(self) -> list:
        return self._lane_units

    @property
    def bus_bits(self) -> int:
        return self._bus_bits

    @property
    def insert_latency(self) -> int:
        """Cycles from an input beat until its k-mers are in the partial sketches."""
        return self._lane_units[0].insert_latency

    def elaborate(self, platform):
        m = Module()
        lanes, p, w = self._lanes, self._p, self._w
        word_bits = REGISTERS_PER_WORD * w
        words = 1 << (p - 4)

        m.submodules.decoder = decoder = ChunkDecoder(lanes=lanes,
                                                      bytes_per_lane=self._bytes_per_lane)
        m.submodules.features = features = FeatureAccumulator(p, w)
        m.submodules.writer = writer = self._writer
        m.submodules.word_fifo = word_fifo = fifo.SyncFIFOBuffered(width=word_bits,
                                                                   depth=_WORD_FIFO_DEPTH)
        wiring.connect(m, wiring.flipped(self.i), decoder.i)
        wiring.connect(m, writer.o, wiring.flipped(self.o))
        for t, lane in enumerate(self._lane_units):
            m.submodules[f"lane{t}"] = lane
            m.d.comb += [lane.i.valid.eq(decoder.lanes_valid), lane.i.payload.eq(decoder.lanes[t])]

        pending = Signal(lanes)
        tags = Signal(data.ArrayLayout(32, lanes))
        current = Signal(range(lanes))
        drain_wait = Signal(range(self._lane_units[0].insert_latency + 2))
        drain_addr = Signal(p - 4)
        lowest_pending = _lowest_set(m, pending, lanes)

        # words in flight from a drain read to the FIFO: lane drain latency + the lane mux stage
        flight = self._lane_units[0].drain_latency + 1
        may_issue = word_fifo.level <= _WORD_FIFO_DEPTH - flight - 1
        issue = Signal()
        clearing = Signal()       # the reset clear: drain every lane at once, keep nothing
        discard = Signal(range(flight + 2))
        for t, lane in enumerate(self._lane_units):
            m.d.comb += [lane.drain_addr.eq(drain_addr),
                         lane.drain_en.eq((issue & (current == t)) | clearing)]

        merged = Signal(word_bits)
        merged_valid = Signal()
        with m.Switch(current):
            for t, lane in enumerate(self._lane_units):
                with m.Case(t):
                    m.d.sync += [merged.eq(lane.merged), merged_valid.eq(lane.merged_valid)]
        kept = merged_valid & (discard == 0)
        m.d.comb += [
            word_fifo.w_data.eq(merged),
            word_fifo.w_en.eq(kept),
            features.word.eq(merged),
            features.valid.eq(kept),
            writer.words.payload.eq(word_fifo.r_data),
            writer.words.valid.eq(word_fifo.r_rdy),
            word_fifo.r_en.eq(writer.words.ready),
            writer.tag.eq(tags[current]),
            writer.z.eq(features.z),
            writer.nz.eq(features.nz),
            writer.features_ready.eq(features.words == words),
        ]
        with m.If(writer.done):
            m.d.sync += self.records.eq(self.records + 1)

        # the prefilter (m > 1): hold the input while a lane's FIFO fills, drain a lane only once
        # its k-mers have left the FIFO and reached the sketch, clear its counters meanwhile
        full_hold = Signal()
        settled = Signal(lanes, init=(1 << lanes) - 1)
        clear_counts = Signal(lanes)
        if self._prefilter is not None:
            m.d.sync += full_hold.eq(Cat(lane.full for lane in self._lane_units).any())
            m.d.comb += settled.eq(Cat(lane.settled for lane in self._lane_units))
            for t, lane in enumerate(self._lane_units):
                m.d.comb += [lane.min_count.eq(self.min_count),
                             lane.clear_counts.eq(clear_counts[t])]

        genome_ends = decoder.lanes_valid & (decoder.end_of_genome != 0)
        with m.FSM(init="Reset"):
            with m.State("Reset"):
                m.d.comb += [decoder.hold.eq(1), self.ending_genome.eq(1), clearing.eq(1)]
                with m.If(drain_addr == 0):
                    m.d.comb += clear_counts.eq(Const((1 << lanes) - 1, lanes))
                m.d.sync += [drain_addr.eq(drain_addr + 1), discard.eq(flight + 1)]
                with m.If(drain_addr == words - 1):
                    m.next = "Settle"
            with m.State("Settle"):
                # the words read while clearing are still on their way through the merge tree
                m.d.comb += [decoder.hold.eq(1), self.ending_genome.eq(1)]
                m.d.sync += discard.eq(discard - 1)
                with m.If(discard == 1):
                    m.d.comb += features.clear.eq(1)
                    m.d.sync += drain_addr.eq(0)
                    m.next = "Run"
            with m.State("Run"):
                m.d.comb += [decoder.hold.eq(genome_ends | full_hold),
                             self.ending_genome.eq(genome_ends)]
                with m.If(genome_ends):
                    m.d.sync += [
                        pending.eq(decoder.end_of_genome),
                        tags.eq(decoder.tags),
                        drain_wait.eq(self._lane_units[0].insert_latency + 1),
                    ]
                    m.next = "Drain"
            with m.State("Drain"):
                # the ending lanes' last k-mers are still on their way into the sketches
                m.d.comb += [decoder.hold.eq(1), self.ending_genome.eq(1)]
                with m.If(drain_wait != 0):
                    m.d.sync += drain_wait.eq(drain_wait - 1)
                with m.If((drain_wait == 0) & ((pending & ~settled) == 0)):
                    if self._prefilter is not None:
                        with m.If(self.min_count > 1):
                            m.d.comb += clear_counts.eq(pending)
                    m.d.comb += features.clear.eq(1)
                    m.d.sync += [current.eq(lowest_pending), drain_addr.eq(0)]
                    m.next = "Merge"
            with m.State("Merge"):
                m.d.comb += [decoder.hold.eq(1), self.ending_genome.eq(1), issue.eq(may_issue)]
                with m.If(may_issue):
                    m.d.sync += drain_addr.eq(drain_addr + 1)
                    with m.If(drain_addr == words - 1):
                        m.next = "Record"
            with m.State("Record"):
                m.d.comb += [decoder.hold.eq(1), self.ending_genome.eq(1)]
                with m.If(writer.done):
                    remaining = pending & ~(Const(1, lanes) << current)
                    m.d.sync += pending.eq(remaining)
                    with m.If(remaining == 0):
                        m.next = "Run"
                    with m.Else():
                        m.d.comb += features.clear.eq(1)
                        m.d.sync += [current.eq(_lowest_set(m, remaining, lanes)),
                                     drain_addr.eq(0)]
                        m.next = "Merge"
        return m


def _lowest_set(m, bits, lanes):
    lowest = Signal(range(lanes))
    for t in reversed(range(lanes)):
        with m.If(bits[t]):
            m.d.comb += lowest.eq(t)
    return lowest
