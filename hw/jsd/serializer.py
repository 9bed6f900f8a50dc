"""Serializer: beats of up to B sampled k-mers in, one k-mer per cycle out.

A beat is held in a register; each cycle the lowest remaining k-mer leaves, and the next beat is
loaded in the cycle the held one gives up its final k-mer, so a full beat takes B cycles and back
to back beats leave no gap. A beat marked ``last`` yields, after its k-mers, one ``last`` token
(no k-mer) that ends the genome. Beats without k-mers and without ``last`` should not be offered
(they would cost one cycle each).

A beat comes with two flags its producer computes on its way into the FIFO in front
(:func:`counted_beat`): whether it holds a k-mer, and whether exactly one. Derived from the
valid bits behind the FIFO's block RAM output and the lane select, the "exactly one" test
(``v & (v - 1) == 0``, a carry chain) was the whole JSD builder's longest path (5.5 ns).
"""

from amaranth.hdl import Cat, Const, Module, Mux, Signal, Value
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from kmerspec.params import check_int

from hw.common.pipeline import popcount

from .sampler import kmer_beat_layout

__all__ = ["token_layout", "counted_beat_layout", "counted_beat", "Serializer"]


def token_layout() -> data.StructLayout:
    """A k-mer (``kmer`` set) or the end of a genome (``last`` set, no k-mer)."""
    return data.StructLayout({"word": 64, "kmer": 1, "last": 1})


def counted_beat_layout(kmers_per_beat: int) -> data.StructLayout:
    """A :func:`~hw.jsd.sampler.kmer_beat_layout` beat and whether it holds any k-mer and
    exactly one."""
    return data.StructLayout({"beat": kmer_beat_layout(kmers_per_beat), "has_kmer": 1,
                              "one_kmer": 1})


def _any_and_several(bits: list) -> tuple:
    """(any bit set, two or more set) as a balanced tree over halves (no carry chain)."""
    if len(bits) == 1:
        return bits[0], Const(0, 1)
    low_any, low_several = _any_and_several(bits[:len(bits) // 2])
    high_any, high_several = _any_and_several(bits[len(bits) // 2:])
    return low_any | high_any, low_several | high_several | (low_any & high_any)


def counted_beat(beat) -> Value:
    """``beat`` (a kmer_beat_layout view) as a :func:`counted_beat_layout` value."""
    any_kmer, several = _any_and_several(list(beat.valid))
    return Cat(beat.as_value(), any_kmer, any_kmer & ~several)


class Serializer(wiring.Component):
    """Members
    -------
    i : In(stream.Signature(counted_beat_layout(B)))
        Beats with their flags (:func:`counted_beat`).
    o : Out(stream.Signature(token_layout(), always_ready=True))
        One token per cycle while ``run`` is high.
    run : In(1)
        Low: no token leaves and no beat is taken.
    """

    def __init__(self, kmers_per_beat: int = 8):
        check_int("kmers_per_beat", kmers_per_beat, 1, 64)
        self._kmers_per_beat = kmers_per_beat
        super().__init__({
            "i": In(stream.Signature(counted_beat_layout(kmers_per_beat))),
            "o": Out(stream.Signature(token_layout(), always_ready=True)),
            "run": In(1),
        })

    def elaborate(self, platform):
        m = Module()
        B = self._kmers_per_beat
        held = Signal(kmer_beat_layout(B))
        mask = held.valid
        lowest = Signal(range(B))
        for slot in reversed(range(B)):
            with m.If(mask[slot]):
                m.d.comb += lowest.eq(slot)
        # ready feeds the FIFO's read and level: whether the held beat has k-mers, and whether
        # only one, are kept in registers beside it instead of being derived from the mask there;
        # an incoming beat brings them along
        has_kmer = Signal()
        one_kmer = Signal()
        token_last = ~has_kmer & held.last
        emit = self.run & (has_kmer | held.last)
        m.d.comb += [
            self.o.valid.eq(emit),
            self.o.payload.word.eq(held.words[lowest]),
            self.o.payload.kmer.eq(has_kmer),
            self.o.payload.last.eq(token_last),
        ]
        # the held beat is used up after this cycle's token (or is empty)
        final_token = Mux(has_kmer, one_kmer & ~held.last, held.last)
        used_up = ~(has_kmer | held.last) | (emit & final_token)
        m.d.comb += self.i.ready.eq(self.run & used_up)
        held_count = popcount(m, list(mask), "held_count")
        with m.If(self.i.valid & self.i.ready):
            m.d.sync += [
                held.eq(self.i.payload.beat),
                has_kmer.eq(self.i.payload.has_kmer),
                one_kmer.eq(self.i.payload.one_kmer),
            ]
        with m.Elif(emit):
            with m.If(has_kmer):
                m.d.sync += [
                    held.valid.eq(mask & (mask - 1)),
                    has_kmer.eq(~one_kmer),
                    one_kmer.eq(held_count == 2),
                ]
            with m.Else():
                m.d.sync += held.last.eq(0)
        return m
