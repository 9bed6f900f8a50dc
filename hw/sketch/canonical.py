"""Canonicalizer: min(k-mer, reverse complement), compared as unsigned integers (SPEC section 1)."""

from amaranth.hdl import Cat, Module, Mux, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from kmerspec.params import K


__all__ = ["kmer_layout", "Canonicalizer"]


def kmer_layout() -> data.StructLayout:
    """One 64-bit word (a k-mer or its hash) with its valid flag."""
    return data.StructLayout({"word": 64, "valid": 1})


class Canonicalizer(wiring.Component):
    """Canonical form of one k-mer per cycle.

    The reverse complement is wiring (2-bit groups reversed and inverted); the 2k-bit comparison
    gets its own stage.

    Parameters
    ----------
    k : int
        k-mer length, 1 to 32.

    Members
    -------
    i : In(stream.Signature(kmer_layout(), always_ready=True))
        Forward k-mer word in bits [2k-1:0]; ``payload.valid`` marks a real k-mer.
    o : Out(stream.Signature(kmer_layout(), always_ready=True))
        Canonical word, same valid flag.

    Latency 2 cycles, one k-mer per cycle, no backpressure.
    """

    latency = 2

    def __init__(self, k: int = K.default):
        K.check(k)
        self._k = k
        super().__init__({
            "i": In(stream.Signature(kmer_layout(), always_ready=True)),
            "o": Out(stream.Signature(kmer_layout(), always_ready=True)),
        })

    def elaborate(self, platform):
        m = Module()
        k = self._k
        forward = Signal(2 * k)
        reverse = Signal(2 * k)
        valid = Signal()
        word_valid = Signal()
        word = self.i.payload.word
        m.d.sync += [
            forward.eq(word[:2 * k]),
            reverse.eq(Cat(*(~word[2 * b:2 * b + 2] for b in reversed(range(k))))),
            valid.eq(self.i.valid),
            word_valid.eq(self.i.payload.valid),
        ]
        m.d.sync += [
            self.o.payload.word.eq(Mux(reverse < forward, reverse, forward)),
            self.o.payload.valid.eq(word_valid),
            self.o.valid.eq(valid),
        ]
        return m
