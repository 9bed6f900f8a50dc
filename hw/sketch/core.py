"""SketchCore: chunk beats in, sketch records out (the whole JACC sketch-construction datapath).

Structure: a :class:`ChunkDecoder` feeds ``T`` :class:`SketchLane`\\ s (parser, k-mer buffer, B
canonicalizer + fmix64 + HLL update pipelines each, every partial sketch in two banks). One drain
engine (lane mux -> :class:`FeatureAccumulator` and a word FIFO -> :class:`RecordWriter`) turns
the ended genomes' banks into records, one word per cycle.

Double-buffered genome ends: when a beat ends the genome of a lane, the lane's next beats go to
its other bank at once and the input goes on; the ended bank is drained (read and cleared) in the
background, ``insert_latency`` + 1 cycles after the end (its last k-mers in flight), through the
lane's merge tree. Ready banks are drained one after the other, round robin over the lanes; a drain takes
``2^(p-4)`` cycles of word reads (one per cycle while the word FIFO has room) and then waits for
its record's trailer (about 20 cycles more) before the next drain starts.

Throughput: one input beat per cycle, for every input, except that the core stops the input
(``stalled``) while a lane's genome has ended and that lane's other bank still waits for or is in
its drain: the lane switches banks (and the input resumes) in the cycle after that bank's last
word read. No stall happens while every genome is longer than the drains queued before its end:
with one drain engine and T lanes, a genome of at least ``T * (2^(p-4) + ~30)`` beats of its lane
(``T * B * 2^(p-4)`` bytes: 64 KiB at T = 8, B = 8, p = 14) never waits, whatever the other
lanes do. Shorter genomes wait for at most the drains ahead of them, instead of every genome end
stopping every lane for ``insert_latency`` + ``2^(p-4)`` + trailer cycles (1,063 at p=14) as
with one bank.

Records are written in the order their drains complete (the tag identifies the genome; the host
maps records by tag), all within the call whose chunk ends their genomes: ``ending_genome`` stays
high while any drain is pending or running, so the kernel ends the call only after them.

Clean state: after reset the core first clears every word of both banks of every partial sketch
of every lane (``2^(p-4)`` cycles plus the drain latency, 1,024 + 4 at p=14; ``ending_genome``
and ``stalled`` are high meanwhile), so nothing of a genome cut off by the reset (an aborted
call, ap_rst_n, or the kernel's fresh start) survives in its memories.

With ``prefilter`` (SPEC 7; hw/sketch/min_count_stage.py) and ``min_count`` > 1 a lane takes one
k-mer per cycle: a lane whose FIFO fills raises ``full`` and the core holds the input (all lanes;
not counted in ``stalled``). The stage's latency varies, so the bank bit (delayed by the fixed
latency of the front end) could reach the HLL units before the last k-mers of the ended genome:
at a genome end of such a lane the core therefore stops the input (``stalled``) until
``insert_latency`` + 1 cycles have passed and the lane has ``settled`` (its last k-mer in the
sketch), and only then switches the lane's bank and starts its Count-Min clear (2^mc_width_bits
cycles; the next genome's k-mers wait in the lane's FIFO meanwhile, and the reset clear zeroes the
counters too). Every k-mer thus sees one bank between switches (k-mers through the stage are never
faster than the delay line), and the ended bank is drained in the background as above. With
``min_count`` = 1, or without the prefilter, the core behaves as described above.
"""

from amaranth.hdl import Cat, Const, Module, Mux, Signal
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
        A genome end is being processed: a drain is pending, running or waiting for its record,
        or the clear after reset runs (the core is not quiet).
    stalled : Out(1)
        The core stops the input (``i.ready`` low): the clear after reset, or a lane's genome
        ended while its other bank is not yet drained (with the prefilter and m > 1: or while
        the lane has not settled). Not the prefilter's ``full`` holds.
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
        # the drain's word address and ``address == 2^(p-4) - 1`` (a register of its own)
        self._drain_addr = Signal(p - 4, name="drain_addr")
        self._drain_last = Signal(name="drain_last")
        self._lane_units = [SketchLane(bytes_per_lane=bytes_per_lane, k=k, p=p, w=w,
                                       prefilter=prefilter)
                            for _ in range(lanes)]
        members = {
            "i": In(stream.Signature(self._bus_bits)),
            "o": Out(stream.Signature(self._bus_bits)),
            "records": Out(32),
            "ending_genome": Out(1),
            "stalled": Out(1),
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

    @property
    def bank_turnaround(self) -> int:
        """Cycles from a beat that ends a lane's genome until that lane's next genome end is
        taken without a stall, with no other drain queued: the settle wait, ``2^(p-4)`` word
        reads and three cycles of hand-over."""
        return self.insert_latency + (1 << (self._p - 4)) + 3

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

        insert_latency = self._lane_units[0].insert_latency
        # per lane: the bank its beats go to; the other bank holds an ended genome until its
        # drain has been issued (``pending``), after ``settle`` cycles (its last k-mers in flight)
        insert_bank = Signal(lanes)
        pending = Signal(lanes)
        settle = [Signal(range(insert_latency + 2), name=f"settle{t}") for t in range(lanes)]
        tags = Signal(data.ArrayLayout(32, lanes))
        # a genome ended while the lane's other bank was still pending: the lane switches banks
        # (and the input goes on) once that drain has been issued
        deferred = Signal(lanes)
        # ``settle[t] == 0``, registered: the round robin below starts from registers
        settled = Signal(lanes, init=(1 << lanes) - 1)
        ready = Signal(lanes)
        m.d.comb += ready.eq(pending & settled)

        current = Signal(range(lanes))
        # the bank the drain reads: the lane cannot switch banks while its drain is pending, so
        # this select of registers holds through Merge (the lane registers it with each read)
        current_bank = Signal()
        m.d.comb += current_bank.eq(~insert_bank.bit_select(current, 1))
        record_tag = Signal(32)
        drain_addr = self._drain_addr
        # ``drain_addr == words - 1`` as a register beside the address (the compare, 6 LUTs into
        # the lanes' pending bits, was the kernel's longest path, 4.11 ns: docs/timing.md, run
        # 18): on each step it takes whether the address it steps from is the one before the
        # last, and it is cleared wherever the address is (so it equals the compare in every
        # cycle: tests/test_sketch_core.py checks it cycle by cycle)
        drain_last = self._drain_last

        def step_drain():
            m.d.sync += [drain_addr.eq(drain_addr + 1), drain_last.eq(drain_addr == words - 2)]

        def clear_drain():
            m.d.sync += [drain_addr.eq(0), drain_last.eq(0)]
        # round robin from the lane after the last drained one: a ready bank waits for at most
        # T - 1 other drains
        after_current = Signal(lanes)
        m.d.comb += after_current.eq(ready & Cat(current < t for t in range(lanes)))
        next_lane = Mux(after_current != 0, _lowest_set(m, after_current, lanes),
                        _lowest_set(m, ready, lanes))

        # words in flight from a drain read to the FIFO: lane drain latency + the lane mux stage.
        # Registered (the level's compare in front of the banks' read address was the kernel's
        # longest path), so decided on the level of the cycle before, which may have grown by one
        flight = self._lane_units[0].drain_latency + 1
        may_issue = Signal()
        m.d.sync += may_issue.eq(word_fifo.level <= _WORD_FIFO_DEPTH - flight - 2)
        # the banks' read enables come from registers one LUT away (the FSM's state decode and
        # the `current == t` compare in front of the read address were the kernel's longest
        # path): the states Merge and Reset (the reset clear: both banks of every lane at once,
        # keep nothing) and `current` one-hot, kept beside the FSM
        merging = Signal()
        clearing = Signal(init=1)
        current_lanes = Signal(lanes, init=1)
        discard = Signal(range(flight + 2))
        for t, lane in enumerate(self._lane_units):
            m.d.comb += [lane.bank.eq(insert_bank[t]),
                         lane.drain_addr.eq(drain_addr),
                         lane.drain_en.eq((merging & may_issue & current_lanes[t]) | clearing),
                         lane.drain_bank.eq(current_bank),
                         lane.drain_both.eq(clearing)]

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
            writer.tag.eq(record_tag),
            writer.z.eq(features.z),
            writer.nz.eq(features.nz),
            writer.features_ready.eq(features.words == words),
        ]
        with m.If(writer.done):
            m.d.sync += self.records.eq(self.records + 1)

        # genome ends: switch banks at once, or defer the switch (and stop the input) while the
        # other bank still waits for or is in its drain
        ends = Mux(decoder.lanes_valid, decoder.end_of_genome, 0)
        running = Signal()
        switching = Signal(lanes)
        # (without the prefilter the core is built exactly as before it: same netlist)
        waiting, hold = pending, self.stalled
        if self._prefilter is not None:
            # the prefilter with m > 1: the ending lane's k-mers have not all reached its bank
            unsettled, full_hold = Signal(lanes), Signal()
            clear_counts = self._prefilter_control(m, ends, running, switching, unsettled,
                                                   full_hold)
            waiting, hold = pending | unsettled, self.stalled | full_hold
        blocked = (ends | deferred) & waiting
        m.d.comb += switching.eq((ends | deferred) & ~waiting)
        for t in range(lanes):
            with m.If(settle[t] != 0):
                m.d.sync += settle[t].eq(settle[t] - 1)
            m.d.sync += settled[t].eq(~(running & switching[t]) & (settle[t] <= 1))
            with m.If(running & switching[t]):
                m.d.sync += [insert_bank[t].eq(~insert_bank[t]), pending[t].eq(1),
                             settle[t].eq(insert_latency + 1), tags[t].eq(decoder.tags[t])]
        with m.If(running):
            # decoder.tags stays that of the ending beat while the input is stopped
            m.d.sync += deferred.eq(blocked)
        m.d.comb += [self.stalled.eq(~running | (blocked != 0)), decoder.hold.eq(hold)]

        with m.FSM(init="Reset") as fsm:
            with m.State("Reset"):
                if self._prefilter is not None:
                    with m.If(drain_addr == 0):
                        m.d.comb += clear_counts.eq(Const((1 << lanes) - 1, lanes))
                step_drain()
                m.d.sync += discard.eq(flight + 1)
                with m.If(drain_last):
                    m.d.sync += clearing.eq(0)
                    m.next = "Settle"
            with m.State("Settle"):
                # the words read while clearing are still on their way through the merge tree
                m.d.sync += discard.eq(discard - 1)
                with m.If(discard == 1):
                    m.d.comb += features.clear.eq(1)
                    clear_drain()
                    m.next = "Idle"
            with m.State("Idle"):
                m.d.comb += running.eq(1)
                with m.If(ready != 0):
                    m.d.comb += features.clear.eq(1)
                    m.d.sync += [current.eq(next_lane),
                                 current_lanes.eq(Const(1, lanes) << next_lane), merging.eq(1)]
                    clear_drain()
                    m.next = "Merge"
            with m.State("Merge"):
                m.d.comb += running.eq(1)
                # (the lane's tag holds while its drain is pending; it may change after Merge)
                m.d.sync += record_tag.eq(tags[current])
                with m.If(may_issue):
                    step_drain()
                    with m.If(drain_last):
                        # the bank is clear: the lane may switch to it again
                        m.d.sync += [pending.bit_select(current, 1).eq(0), merging.eq(0)]
                        m.next = "Record"
            with m.State("Record"):
                m.d.comb += running.eq(1)
                with m.If(writer.done):
                    m.next = "Idle"
        m.d.comb += self.ending_genome.eq(~fsm.ongoing("Idle") | (pending != 0) | (deferred != 0)
                                          | (ends != 0))
        return m

    def _prefilter_control(self, m, ends, running, switching, unsettled, full_hold):
        """The prefilter's side of the genome ends (see the module docstring): hold the input
        while a lane's FIFO fills; with m > 1 keep an ending lane ``unsettled`` until its
        ending beat's k-mers have left the front end (``insert_latency`` + 1 cycles) and the
        lane has settled, and clear its counters when its bank switches. Returns the lanes'
        counter clear pulses (also driven by the reset clear)."""
        insert_latency = self.insert_latency
        clear_counts = Signal(self._lanes)
        filtering = self.min_count > 1
        m.d.sync += full_hold.eq(Cat(lane.full for lane in self._lane_units).any())
        for t, lane in enumerate(self._lane_units):
            front = Signal(range(insert_latency + 2), name=f"front{t}")
            with m.If(running & ends[t]):
                m.d.sync += front.eq(insert_latency + 1)
            with m.Elif(front != 0):
                m.d.sync += front.eq(front - 1)
            m.d.comb += [
                unsettled[t].eq(filtering & (ends[t] | (front != 0) | ~lane.settled)),
                lane.min_count.eq(self.min_count),
                lane.clear_counts.eq(clear_counts[t]),
            ]
            with m.If(running & switching[t] & filtering):
                m.d.comb += clear_counts[t].eq(1)
        return clear_counts


def _lowest_set(m, bits, lanes):
    lowest = Signal(range(lanes))
    for t in reversed(range(lanes)):
        with m.If(bits[t]):
            m.d.comb += lowest.eq(t)
    return lowest
