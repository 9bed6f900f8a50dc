"""fmix64: MurmurHash3's 64-bit finalizer as a pipeline, one hash per cycle (SPEC section 2).

Each ``x * C mod 2^64`` by a constant is split into partial products of a 17-bit slice of ``x``
by a 26-bit slice of ``C`` (the unsigned operand sizes of a DSP48E2), keeping only the products
that reach below bit 64 and cutting each operand to the bits that can influence the kept result.
Products that become small (at most ``dsp_min_width`` bits on either side) are left to LUTs; the
rest are one DSP each. Partial products are summed by a registered adder tree.
"""

from amaranth.hdl import Module, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from .canonical import kmer_layout

__all__ = ["FMIX64_C1", "FMIX64_C2", "Fmix64", "partial_products"]

FMIX64_C1 = 0xFF51AFD7ED558CCD
FMIX64_C2 = 0xC4CEB9FE1A85EC53
_X_SLICE = 17
_C_SLICE = 26


def partial_products(constant: int) -> list[tuple[int, int, int, int]]:
    """The kept partial products of ``x * constant mod 2^64``: (offset, x_lsb, x_width, c_part).

    ``x_width`` and ``c_part`` are already cut to the ``64 - offset`` bits that matter.
    """
    products = []
    for x_lsb in range(0, 64, _X_SLICE):
        for c_lsb in range(0, 64, _C_SLICE):
            offset = x_lsb + c_lsb
            if offset >= 64:
                continue
            kept = 64 - offset
            x_width = min(_X_SLICE, 64 - x_lsb, kept)
            c_part = (constant >> c_lsb) & ((1 << min(_C_SLICE, kept)) - 1)
            if c_part:
                products.append((offset, x_lsb, x_width, c_part))
    return products


class Fmix64(wiring.Component):
    """One fmix64 hash per cycle.

    Members
    -------
    i : In(stream.Signature(kmer_layout(), always_ready=True))
        64-bit key (the canonical k-mer word) and its valid flag.
    o : Out(stream.Signature(kmer_layout(), always_ready=True))
        ``fmix64(key)``, same valid flag.

    Latency :attr:`latency` cycles, one hash per cycle, no backpressure.
    """

    def __init__(self):
        self._tree_depth = max((len(partial_products(c)) - 1).bit_length()
                               for c in (FMIX64_C1, FMIX64_C2))
        super().__init__({
            "i": In(stream.Signature(kmer_layout(), always_ready=True)),
            "o": Out(stream.Signature(kmer_layout(), always_ready=True)),
        })

    @property
    def latency(self) -> int:
        # per multiply: one stage of products and the adder tree; plus three xor-shift stages
        return 3 + 2 * (1 + self._tree_depth)

    def elaborate(self, platform):
        m = Module()
        word, valid, word_valid = self.i.payload.word, self.i.valid, self.i.payload.valid

        def stage(value, name):
            registered = Signal(len(value), name=name)
            m.d.sync += registered.eq(value)
            return registered

        def delay(count):
            nonlocal valid, word_valid
            for _ in range(count):
                valid, word_valid = stage(valid, "valid"), stage(word_valid, "word_valid")

        def multiply(x, constant, name):
            terms = []
            for offset, x_lsb, x_width, c_part in partial_products(constant):
                product = (x[x_lsb:x_lsb + x_width] * c_part)[:64 - offset]
                terms.append(stage(product << offset, f"{name}_pp{offset}"))
            delay(1)
            level = 0
            while len(terms) > 1:
                terms = [stage((terms[i] + terms[i + 1])[:64], f"{name}_sum{level}")
                         if i + 1 < len(terms) else stage(terms[i], f"{name}_sum{level}")
                         for i in range(0, len(terms), 2)]
                delay(1)
                level += 1
            for _ in range(level, self._tree_depth):
                terms = [stage(terms[0], f"{name}_pad")]
                delay(1)
            return terms[0]

        def xorshift(x, name):
            delay(1)
            return stage(x ^ (x >> 33), name)

        x = xorshift(word, "xs0")
        x = multiply(x, FMIX64_C1, "mul1")
        x = xorshift(x, "xs1")
        x = multiply(x, FMIX64_C2, "mul2")
        x = xorshift(x, "xs2")
        m.d.comb += [
            self.o.payload.word.eq(x),
            self.o.payload.valid.eq(word_valid),
            self.o.valid.eq(valid),
        ]
        return m
