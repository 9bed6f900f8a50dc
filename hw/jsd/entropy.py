"""Entropy unit: H = log2 M - (sum m_i log2 m_i) / M of a stream of counts, bit-exact to
``kmerspec.golden.entropy.entropy_fixed`` (formats in that module's docstring).

P counts per beat (a whole PQA queue per cycle in the builder): the beat into registers, P log2
units, P exact products m_i x log2 m_i (DSP tiles, :func:`hw.common.pipeline.pipelined_product`),
two adder trees with a registered level each, and two exact accumulators (S and M) in 32-bit
chunks. After the beat marked ``last`` has been accumulated, one log2 unit and one reciprocal unit
work on M, then ``S * x >> (32 + e)`` (a pipelined product and a shift in two registered steps)
and the clamped difference give H in unsigned Q5.24. Every register-to-register path is at most 6
LUT/carry levels (``python bench/timing_parts.py --parts entropy,entropy_mix``, docs/timing.md).

Throughput one beat per cycle; after ``last`` the input waits (``ready`` low) until the entropy
has been delivered, :attr:`EntropyUnit.finish_cycles` after the ``last`` beat was accepted
(:func:`entropy_finish_cycles`: 74 for the builder's 8 x 32-bit counts, 100 for the similarity
kernel's 16 x 81-bit ones, at the default geometries). Counts of 0
contribute nothing; M = 0 gives H = 0.
"""

from amaranth.hdl import Cat, Const, Module, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from kmerspec.golden.fixedpoint import RECIP_FRAC_BITS
from kmerspec.params import check_int

from hw.common.pipeline import (ChunkedAccumulator, LatencyOnly, chunked_sum, delayed,
                                pipelined_product, product_latency)

from .log2 import (Log2Unit, ReciprocalUnit, log2_latency, log2_output_bits,
                   reciprocal_latency)

__all__ = ["counts_layout", "entropy_layout", "EntropyUnit", "ENTROPY_BITS"]

ENTROPY_BITS = 32


def counts_layout(count_bits: int, counts_per_beat: int) -> data.StructLayout:
    return data.StructLayout({"counts": data.ArrayLayout(count_bits, counts_per_beat),
                              "last": 1})


def entropy_layout(total_bits: int) -> data.StructLayout:
    """The Q5.24 entropy and the exact total M of the counts."""
    return data.StructLayout({"entropy": ENTROPY_BITS, "total": total_bits})


def _sum_widths(count_bits: int, counts_per_beat: int, max_beats_bits: int) -> tuple[int, int]:
    """Widths of the exact sums M and S of up to 2^max_beats_bits beats."""
    sum_bits = max_beats_bits + (counts_per_beat - 1).bit_length()
    return (count_bits + sum_bits, count_bits + log2_output_bits(count_bits) + sum_bits)


def entropy_finish_cycles(count_bits: int, counts_per_beat: int, max_beats_bits: int) -> int:
    """Cycles of :class:`EntropyUnit` from accepting a ``last`` beat to its entropy: input
    register, log2 and product of each count, the beat's adder tree, the accumulators' last
    chunk and the finish start, 1/M, S x 1/M, the two shift steps, the difference, ``o.valid``."""
    total_bits, weighted_bits = _sum_widths(count_bits, counts_per_beat, max_beats_bits)
    log2_bits = log2_output_bits(count_bits)
    tree_cycles = chunked_sum(LatencyOnly(), [(0, Signal(count_bits + log2_bits))]
                                * counts_per_beat, "latency", weighted_bits)[1]
    settle = max(ChunkedAccumulator(bits, "latency").settle
                 for bits in (total_bits, weighted_bits))
    return (1 + log2_latency(count_bits) + product_latency(count_bits, log2_bits) + tree_cycles
            + settle + 1 + reciprocal_latency(total_bits)
            + product_latency(weighted_bits, RECIP_FRAC_BITS + 2) + 2 + 1 + 1)


class EntropyUnit(wiring.Component):
    """Entropy of all counts from the start (or the previous ``last``) to ``last``.

    Parameters
    ----------
    count_bits : int
        W, width of one count (32 for PQA values, 33 pooled, 81 textbook mixture).
    counts_per_beat : int
        P, counts per beat.
    max_beats_bits : int
        log2 of the most beats per entropy (R for one queue per beat); sizes the accumulators.

    Members
    -------
    i : In(stream.Signature(counts_layout(W, P)))
    o : Out(stream.Signature(entropy_layout(total_bits)))
    """

    def __init__(self, count_bits: int = 32, counts_per_beat: int = 8, max_beats_bits: int = 12):
        check_int("count_bits", count_bits, 1, 112)
        check_int("counts_per_beat", counts_per_beat, 1, 64)
        check_int("max_beats_bits", max_beats_bits, 0, 32)
        self.count_bits = count_bits
        self.counts_per_beat = counts_per_beat
        self.total_bits, self.weighted_bits = _sum_widths(count_bits, counts_per_beat,
                                                          max_beats_bits)
        #: cycles from the acceptance of a ``last`` beat to ``o.valid``
        self.finish_cycles = entropy_finish_cycles(count_bits, counts_per_beat, max_beats_bits)
        super().__init__({
            "i": In(stream.Signature(counts_layout(count_bits, counts_per_beat))),
            "o": Out(stream.Signature(entropy_layout(self.total_bits))),
        })

    def elaborate(self, platform):
        m = Module()
        P, W = self.counts_per_beat, self.count_bits

        pending = Signal()  # a `last` beat was accepted and its entropy is not delivered yet
        m.d.comb += self.i.ready.eq(~pending)
        accepted = self.i.valid & self.i.ready
        with m.If(accepted & self.i.payload.last):
            m.d.sync += pending.eq(1)

        # the accepted beat into registers
        valid, last = Signal(), Signal()
        # with a reset, so no SRL absorbs them: the log2 units' first step starts at a flip-flop
        counts = [Signal(W, name=f"count{j}") for j in range(P)]
        m.d.sync += [valid.eq(accepted), last.eq(self.i.payload.last)]
        m.d.sync += [c.eq(self.i.payload.counts[j]) for j, c in enumerate(counts)]

        # per count: log2, then the exact product with the count
        products, held_counts = [], []
        for j, count in enumerate(counts):
            unit = Log2Unit(W, tag_bits=W)
            m.submodules[f"log2_{j}"] = unit
            m.d.comb += [unit.i.valid.eq(valid), unit.i.payload.value.eq(count),
                         unit.i.payload.tag.eq(count)]
            product, product_cycles = pipelined_product(
                m, unit.o.payload.tag, unit.o.payload.log2, f"weighted{j}")
            products.append(product)
            held_counts.append(delayed(m, unit.o.payload.tag, product_cycles, f"count{j}",
                                       reset_less=True))
        cycles = unit.latency + product_cycles

        # beat sums (adder trees, one pipelined adder per level), then accumulation
        beat_weighted, tree_cycles = chunked_sum(m, [(0, p) for p in products],
                                                   "beat_weighted", self.weighted_bits)
        beat_total, total_cycles = chunked_sum(m, [(0, c) for c in held_counts], "beat_total",
                                                 self.total_bits)
        beat_total = delayed(m, beat_total, tree_cycles - total_cycles, "beat_total",
                             reset_less=True)
        beat_valid = delayed(m, valid, cycles + tree_cycles, "beat_valid")
        beat_last = delayed(m, last, cycles + tree_cycles, "beat_last")
        weighted = ChunkedAccumulator(self.weighted_bits, "weighted")
        total = ChunkedAccumulator(self.total_bits, "total")
        clear = self.o.valid & self.o.ready
        weighted.add(m, beat_valid, beat_weighted, clear)
        total.add(m, beat_valid, beat_total, clear)
        finishing = delayed(m, beat_valid & beat_last,
                            max(weighted.settle, total.settle) + 1, "finishing")

        # finishing: log2 M and 1/M, quotient, difference
        m.submodules.log2_total = log2_total = Log2Unit(self.total_bits)
        m.submodules.reciprocal = reciprocal = ReciprocalUnit(self.total_bits)
        m.d.comb += [
            log2_total.i.valid.eq(finishing), log2_total.i.payload.value.eq(total.value),
            reciprocal.i.valid.eq(finishing), reciprocal.i.payload.eq(total.value),
        ]
        log2_held = Signal(log2_total.output_bits)
        with m.If(log2_total.o.valid):
            m.d.sync += log2_held.eq(log2_total.o.payload.log2)
        nonzero = Signal()
        m.d.sync += nonzero.eq(total.value != 0)
        # S * x, then >> (32 + e): the 32 by wiring, e in two registered steps (its multiple of
        # 8, then the rest)
        scaled, scaled_cycles = pipelined_product(m, weighted.value, reciprocal.o.payload.x,
                                                  "scaled")
        exponent = delayed(m, reciprocal.o.payload.exponent, scaled_cycles, "exponent",
                           reset_less=True)
        coarse = Signal(len(scaled) - RECIP_FRAC_BITS, reset_less=True)
        m.d.sync += coarse.eq(scaled[RECIP_FRAC_BITS:] >> Cat(Const(0, 3), exponent[3:]))
        quotient = Signal(self.weighted_bits, reset_less=True)
        m.d.sync += quotient.eq(coarse >> delayed(m, exponent[:3], 1, "exponent_fine",
                                                  reset_less=True))
        quotient_valid = delayed(m, reciprocal.o.valid, scaled_cycles + 2, "quotient_valid")
        # H = log2 M - quotient if that is positive, else 0: the difference's borrow says
        # quotient > log2 M (equal gives 0 either way), and so does any quotient bit above
        # log2 M's width
        narrow = len(log2_held)
        above = Signal()
        difference = Signal(narrow + 1)
        m.d.sync += [above.eq(quotient[narrow:].any()),
                     difference.eq(log2_held - quotient[:narrow])]
        difference_valid = delayed(m, quotient_valid, 1, "difference_valid")
        with m.If(difference_valid):
            m.d.sync += [self.o.valid.eq(1), self.o.payload.total.eq(total.value)]
            with m.If(nonzero & ~above & ~difference[narrow]):
                m.d.sync += self.o.payload.entropy.eq(difference[:narrow])
            with m.Else():
                m.d.sync += self.o.payload.entropy.eq(0)
        with m.If(self.o.valid & self.o.ready):
            m.d.sync += [self.o.valid.eq(0), pending.eq(0)]
        return m
