"""Entropy unit: H = log2 M - (sum m_i log2 m_i) / M of a stream of counts, bit-exact to
``kmerspec.golden.entropy.entropy_fixed`` (formats in that module's docstring).

P counts per beat (a whole PQA queue per cycle in the builder): P log2 units, P exact products
m_i x log2 m_i, an adder tree and two exact accumulators (S and M). After the beat marked
``last`` has been accumulated, one log2 unit and one reciprocal unit work on M, then
``S * x >> (32 + e)`` and the clamped difference give H in unsigned Q5.24.

Throughput one beat per cycle; after ``last`` the input waits (``ready`` low) until the entropy
has been delivered, about 16 cycles. Counts of 0 contribute nothing; M = 0 gives H = 0.
"""

from amaranth.hdl import Module, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from kmerspec.golden.fixedpoint import RECIP_FRAC_BITS
from kmerspec.params import check_int

from .log2 import Log2Unit, ReciprocalUnit, log2_output_bits

__all__ = ["counts_layout", "entropy_layout", "EntropyUnit", "ENTROPY_BITS"]

ENTROPY_BITS = 32


def counts_layout(count_bits: int, counts_per_beat: int) -> data.StructLayout:
    return data.StructLayout({"counts": data.ArrayLayout(count_bits, counts_per_beat),
                              "last": 1})


def entropy_layout(total_bits: int) -> data.StructLayout:
    """The Q5.24 entropy and the exact total M of the counts."""
    return data.StructLayout({"entropy": ENTROPY_BITS, "total": total_bits})


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
        sum_bits = max_beats_bits + (counts_per_beat - 1).bit_length()
        self.total_bits = count_bits + sum_bits
        self.weighted_bits = count_bits + log2_output_bits(count_bits) + sum_bits
        super().__init__({
            "i": In(stream.Signature(counts_layout(count_bits, counts_per_beat))),
            "o": Out(stream.Signature(entropy_layout(self.total_bits))),
        })

    def elaborate(self, platform):
        m = Module()
        P = self.counts_per_beat

        pending = Signal()  # a `last` beat was accepted and its entropy is not delivered yet
        m.d.comb += self.i.ready.eq(~pending)
        accepted = self.i.valid & self.i.ready
        with m.If(accepted & self.i.payload.last):
            m.d.sync += pending.eq(1)

        # per count: log2, then the exact product with the count
        last = self.i.payload.last
        valid = accepted
        products = []
        for j in range(P):
            unit = Log2Unit(self.count_bits, tag_bits=self.count_bits)
            m.submodules[f"log2_{j}"] = unit
            count = self.i.payload.counts[j]
            m.d.comb += [unit.i.valid.eq(accepted), unit.i.payload.value.eq(count),
                         unit.i.payload.tag.eq(count)]
            product = Signal(self.count_bits + unit.output_bits, name=f"product{j}")
            held_count = Signal(self.count_bits, name=f"count{j}")
            m.d.sync += [product.eq(unit.o.payload.tag * unit.o.payload.log2),
                         held_count.eq(unit.o.payload.tag)]
            products.append((product, held_count))
        for index in range(Log2Unit.latency + 1):
            next_valid, next_last = Signal(name=f"valid{index}"), Signal(name=f"last{index}")
            m.d.sync += [next_valid.eq(valid), next_last.eq(last)]
            valid, last = next_valid, next_last

        # beat sums, then accumulation
        beat_weighted = Signal(self.weighted_bits)
        beat_total = Signal(self.total_bits)
        beat_valid, beat_last = Signal(), Signal()
        m.d.sync += [
            beat_weighted.eq(sum(product for product, _ in products)),
            beat_total.eq(sum(count for _, count in products)),
            beat_valid.eq(valid), beat_last.eq(last),
        ]
        weighted = Signal(self.weighted_bits)
        total = Signal(self.total_bits)
        finishing = Signal()
        with m.If(beat_valid):
            m.d.sync += [weighted.eq(weighted + beat_weighted), total.eq(total + beat_total)]
        m.d.sync += finishing.eq(beat_valid & beat_last)

        # finishing: log2 M and 1/M, quotient, difference
        m.submodules.log2_total = log2_total = Log2Unit(self.total_bits)
        m.submodules.reciprocal = reciprocal = ReciprocalUnit(self.total_bits)
        m.d.comb += [
            log2_total.i.valid.eq(finishing), log2_total.i.payload.value.eq(total),
            reciprocal.i.valid.eq(finishing), reciprocal.i.payload.eq(total),
        ]
        log2_held = Signal(log2_total.output_bits)
        with m.If(log2_total.o.valid):
            m.d.sync += log2_held.eq(log2_total.o.payload.log2)
        quotient = Signal(self.weighted_bits)
        quotient_valid = Signal()
        m.d.sync += [
            quotient.eq((weighted * reciprocal.o.payload.x)
                        >> (reciprocal.o.payload.exponent + RECIP_FRAC_BITS)),
            quotient_valid.eq(reciprocal.o.valid),
        ]
        with m.If(quotient_valid):
            m.d.sync += [self.o.valid.eq(1), self.o.payload.total.eq(total)]
            with m.If((total != 0) & (log2_held > quotient)):
                m.d.sync += self.o.payload.entropy.eq(log2_held - quotient)
            with m.Else():
                m.d.sync += self.o.payload.entropy.eq(0)
        with m.If(self.o.valid & self.o.ready):
            m.d.sync += [self.o.valid.eq(0), pending.eq(0), weighted.eq(0), total.eq(0)]
        return m
