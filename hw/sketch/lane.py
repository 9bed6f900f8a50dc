"""One sketch lane: parser, k-mer buffer and B hash/update pipelines with their partial sketches.

Organisation (the paper's): every one of the B k-mer slots of a lane has its own canonicalizer,
fmix64 pipeline and HLL update unit, so B k-mers per cycle are absorbed with no arbitration and no
stall for any input; the B partial sketches are merged by a :class:`MergeTree` at end of genome.
Each partial sketch has two banks: the core switches a lane's beats to the other bank at a genome
end and drains the ended genome's bank while the lane goes on (double-buffered genome ends).
"""

from amaranth.hdl import Module, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from kmerspec.params import BYTES_PER_LANE, K, P, W, check_positive

from .canonical import Canonicalizer
from .fmix64 import Fmix64
from .hll_update import REGISTERS_PER_WORD, HllUpdate
from .kmer_buffer import KmerBuffer
from .merge import MergeTree
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
        beside the beat's k-mers, so beats of either bank may follow each other in any cycle).
    drain_addr, drain_en, drain_bank : In
        Drain (read and clear) word ``drain_addr`` of bank ``drain_bank`` of all B partial
        sketches; allowed when no byte of that bank is in flight, i.e. :attr:`insert_latency`
        cycles after the last input beat of that bank. Beats of the other bank may go on.
    drain_both : In(1)
        With ``drain_en``: clear the word in both banks (the clear after reset).
    merged, merged_valid : Out
        The register-wise max of the drained words, :attr:`drain_latency` cycles later.

    One beat per cycle for every input, no backpressure.
    """

    def __init__(self, *, bytes_per_lane: int = BYTES_PER_LANE.default, k: int = K.default,
                 p: int = P.default, w: int = W.default):
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
        super().__init__({
            "i": In(stream.Signature(lane_bytes_layout(bytes_per_lane), always_ready=True)),
            "bank": In(1),
            "drain_addr": In(p - 4),
            "drain_en": In(1),
            "drain_bank": In(1),
            "drain_both": In(1),
            "merged": Out(REGISTERS_PER_WORD * w),
            "merged_valid": Out(1),
        })

    @property
    def insert_latency(self) -> int:
        """Cycles from an input beat until its last k-mer is in its partial sketch."""
        return (self._parser.latency + self._buffer.latency + Canonicalizer.latency
                + self._hashes[0].latency + HllUpdate.latency)

    @property
    def drain_latency(self) -> int:
        return 1 + self._merge.latency

    def elaborate(self, platform):
        m = Module()
        m.submodules.parser = parser = self._parser
        m.submodules.buffer = buffer = self._buffer
        m.submodules.merge = merge = self._merge
        wiring.connect(m, wiring.flipped(self.i), parser.i)
        wiring.connect(m, parser.o, buffer.i)
        # the beat's bank, delayed as its k-mers are (every stage before the HLL update has a
        # fixed latency and no stall)
        bank = self.bank
        for stage in range(self.insert_latency - HllUpdate.latency):
            delayed = Signal(name=f"bank_delay{stage}")
            m.d.sync += delayed.eq(bank)
            bank = delayed
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
                merge.words[slot].eq(sketch.drain_data),
            ]
            wiring.connect(m, canonical.o, hasher.i)
            wiring.connect(m, hasher.o, sketch.i)
        drained = Signal()
        m.d.sync += drained.eq(self.drain_en)
        m.d.comb += [
            merge.valid.eq(drained),
            self.merged.eq(merge.merged),
            self.merged_valid.eq(merge.merged_valid),
        ]
        return m
