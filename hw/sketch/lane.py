"""One sketch lane: parser, k-mer buffer and B hash/update pipelines with their partial sketches.

Organisation (the paper's): every one of the B k-mer slots of a lane has its own canonicalizer,
fmix64 pipeline and HLL update unit, so B k-mers per cycle are absorbed with no arbitration and no
stall for any input; the B partial sketches are merged by a :class:`MergeTree` at end of genome.
Each partial sketch has two banks: the core switches a lane's beats to the other bank at a genome
end and drains the ended genome's bank while the lane goes on (double-buffered genome ends).

With ``prefilter`` (SPEC 7) a :class:`MinCountStage` sits between the canonicalizers and the
hash pipelines: a wire with ``min_count`` = 1, one k-mer per cycle into pipeline 0 with m > 1
(then the lane raises ``full`` and its owner must hold the input, see the stage).
"""

from amaranth.hdl import Module, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from kmerspec.golden.mincount import MinCountParams
from kmerspec.params import BYTES_PER_LANE, K, P, W, check_positive

from ..common.pipeline import delayed
from .canonical import Canonicalizer
from .fmix64 import Fmix64
from .hll_update import REGISTERS_PER_WORD, HllUpdate, drain_controls
from .kmer_buffer import KmerBuffer
from .merge import MergeTree
from .min_count_stage import MinCountStage
from .parser import LaneParser, lane_bytes_layout

__all__ = ["SketchLane"]


class SketchLane(wiring.Component):
    """Sketch one lane of B bytes per cycle into B partial HyperLogLog sketches.

    Members
    -------
    i : In(stream.Signature(lane_bytes_layout(B), always_ready=True))
        The lane's bytes; ``end_of_file`` after the file's last byte.
    bank : In(1)
        The bank of the partial sketches the beat on ``i`` goes to (sampled with it; it travels
        beside the beat's k-mers, so beats of either bank may follow each other in any cycle;
        with the prefilter and m > 1, change it only while ``settled`` and no beat is in the
        front end: the k-mers then take longer than the bank).
    drain_addr, drain_en, drain_bank : In
        Drain (read and clear) word ``drain_addr`` of bank ``drain_bank`` of all B partial
        sketches; allowed when no byte of that bank is in flight, i.e. :attr:`insert_latency`
        cycles after the last input beat of that bank. Beats of the other bank may go on.
    drain_both : In(1)
        With ``drain_en``: clear the word in both banks (the clear after reset).
    merged, merged_valid : Out
        The register-wise max of the drained words, :attr:`drain_latency` cycles later.

    With ``prefilter``, also ``min_count`` (In), ``full`` and ``settled`` (Out), ``clear_counts``
    (In) and ``busy`` (Out), those of :class:`MinCountStage` (``clear`` is ``clear_counts``);
    its owner holds the input within :data:`HOLD_REACTION` cycles of ``full`` and drains only
    when ``settled``.

    One beat per cycle for every input, no backpressure (with the prefilter: while m = 1).
    """

    #: cycles from ``full`` to the last beat the owner gives the lane: a registered hold, the
    #: chunk decoder's output register, and the FIFO's level lagging its write by one cycle
    HOLD_REACTION = 3

    def __init__(self, *, bytes_per_lane: int = BYTES_PER_LANE.default, k: int = K.default,
                 p: int = P.default, w: int = W.default, prefilter: MinCountParams | None = None):
        check_positive("bytes_per_lane", bytes_per_lane)
        K.check(k)
        P.check(p)
        W.check(w)
        self._bytes_per_lane, self._k, self._p, self._w = bytes_per_lane, k, p, w
        self._parser = LaneParser(bytes_per_lane)
        self._buffer = KmerBuffer(bytes_per_lane, k)
        self._canonical = [Canonicalizer(k) for _ in range(bytes_per_lane)]
        self._hashes = [Fmix64() for _ in range(bytes_per_lane)]
        self._sketches = [HllUpdate(p, w) for _ in range(bytes_per_lane)]
        self._merge = MergeTree(bytes_per_lane, w)
        members = {
            "i": In(stream.Signature(lane_bytes_layout(bytes_per_lane), always_ready=True)),
            "bank": In(1),
            **drain_controls(p),
            "merged": Out(REGISTERS_PER_WORD * w),
            "merged_valid": Out(1),
        }
        self.stage = None
        if prefilter is not None:
            front = self._parser.latency + self._buffer.latency + Canonicalizer.latency
            self.stage = MinCountStage(prefilter, bytes_per_lane=bytes_per_lane,
                                       in_flight=front + self.HOLD_REACTION,
                                       tail_latency=self._hashes[0].latency + HllUpdate.latency)
            members.update({"min_count": In(prefilter.mc_counter_bits), "full": Out(1),
                            "settled": Out(1), "clear_counts": In(1), "busy": Out(1)})
        super().__init__(members)

    @property
    def insert_latency(self) -> int:
        """Cycles from an input beat until its last k-mer is in its partial sketch."""
        return (self._parser.latency + self._buffer.latency + Canonicalizer.latency
                + self._hashes[0].latency + HllUpdate.latency)

    @property
    def drain_latency(self) -> int:
        """The memory read, the register of the drained words (the block RAM's output, off the
        merge's compares) and the merge tree."""
        return 2 + self._merge.latency

    def elaborate(self, platform):
        m = Module()
        m.submodules.parser = parser = self._parser
        m.submodules.buffer = buffer = self._buffer
        m.submodules.merge = merge = self._merge
        wiring.connect(m, wiring.flipped(self.i), parser.i)
        wiring.connect(m, parser.o, buffer.i)
        stage = self.stage
        if stage is not None:
            m.submodules.min_count = stage
            m.d.comb += [stage.i.valid.eq(self._canonical[0].o.valid),
                         stage.min_count.eq(self.min_count), stage.clear.eq(self.clear_counts),
                         self.full.eq(stage.full), self.settled.eq(stage.settled),
                         self.busy.eq(stage.busy)]
        # the beat's bank, delayed as its k-mers are (every stage before the HLL update has a
        # fixed latency and no stall; a prefilter with m > 1 only delays k-mers further, and the
        # core switches the bank of such a lane only when it has settled)
        bank = self.bank
        for delay in range(self.insert_latency - HllUpdate.latency):
            bank_delayed = Signal(name=f"bank_delay{delay}")
            m.d.sync += bank_delayed.eq(bank)
            bank = bank_delayed
        for slot in range(self._bytes_per_lane):
            canonical, hasher, sketch = (self._canonical[slot], self._hashes[slot],
                                         self._sketches[slot])
            m.submodules[f"canonical{slot}"] = canonical
            m.submodules[f"hash{slot}"] = hasher
            m.submodules[f"sketch{slot}"] = sketch
            m.d.comb += [
                canonical.i.valid.eq(buffer.o.valid),
                canonical.i.payload.word.eq(buffer.o.payload.words[slot]),
                canonical.i.payload.valid.eq(buffer.o.payload.valid[slot]),
                sketch.bank.eq(bank),
                sketch.drain_addr.eq(self.drain_addr),
                sketch.drain_en.eq(self.drain_en),
                sketch.drain_bank.eq(self.drain_bank),
                sketch.drain_both.eq(self.drain_both),
            ]
            drained_word = Signal.like(sketch.drain_data, name=f"drained_word{slot}")
            m.d.sync += drained_word.eq(sketch.drain_data)
            m.d.comb += merge.words[slot].eq(drained_word)
            if stage is None:
                wiring.connect(m, canonical.o, hasher.i)
            else:
                m.d.comb += [stage.i.payload[slot].eq(canonical.o.payload),
                             hasher.i.valid.eq(stage.o.valid),
                             hasher.i.payload.eq(stage.o.payload[slot])]
            wiring.connect(m, hasher.o, sketch.i)
        drained = delayed(m, self.drain_en, 2, "drained")
        m.d.comb += [
            merge.valid.eq(drained),
            self.merged.eq(merge.merged),
            self.merged_valid.eq(merge.merged_valid),
        ]
        return m
