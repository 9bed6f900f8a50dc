"""Union + feature unit of the similarity kernel (SPEC 3).

Takes one slot of a pivot sketch and the same slot of a streamed sketch per cycle (``n``
registers each), forms their union (register-wise max) and reduces it to the exact partial
features of the slot: ``z = sum 2^(W - r)`` and ``nz`` = number of zero registers. The kernel adds
the partial features of the ``beats_per_group`` slots of a sketch.
"""

from amaranth.hdl import C, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from kmerspec.params import W

__all__ = ["FeatureUnit", "pipelined_sum", "feature_unit_latency"]


def feature_unit_latency(registers: int) -> int:
    """Cycles through a :class:`FeatureUnit` of ``registers`` registers: the max, then the tree."""
    return 1 + max(1, (registers - 1).bit_length())


def pipelined_sum(m: Module, values: list, name: str) -> tuple:
    """Sum ``values`` in a binary adder tree with a register after every level.

    Returns (sum, levels): the sum of the values presented ``levels`` cycles earlier.
    """
    level = 0
    while len(values) > 1:
        summed = []
        for i in range(0, len(values), 2):
            pair = values[i:i + 2]
            total = pair[0] + pair[1] if len(pair) == 2 else pair[0]
            reg = Signal(len(total), name=f"{name}_l{level}_{i // 2}")
            m.d.sync += reg.eq(total)
            summed.append(reg)
        values = summed
        level += 1
    return values[0], level


class FeatureUnit(wiring.Component):
    """Union of a pivot slot and a streamed slot, reduced to partial features.

    Parameters
    ----------
    registers : registers per slot (``n``, a power of two)
    w : register width; ranks are the low ``w`` bits of each field
    field_bits : bits per register field in the slot (>= w)

    Members
    -------
    pivot, stream : In(n * field_bits)   register i in bits [i field_bits, i field_bits + w)
    z : Out(w_z)     sum over the union's registers of 2^(W - r), W = 2^w - 1
    nz : Out(w_nz)   number of zero registers of the union

    Fully pipelined, no handshake: ``z`` and ``nz`` belong to the inputs of :attr:`latency`
    cycles earlier; a new slot pair is taken every cycle (throughput 1 slot per cycle).
    """

    def __init__(self, registers: int, w: int = W.default, field_bits: int = 4):
        if not isinstance(registers, int) or registers < 1 or registers & (registers - 1):
            raise ValueError(f"registers must be a power of two, not {registers!r}")
        W.check(w)
        if not isinstance(field_bits, int) or field_bits < w:
            raise ValueError(f"field_bits must be an integer >= w = {w}, not {field_bits!r}")
        self._registers, self._w, self._field_bits = registers, w, field_bits
        top = (1 << w) - 1
        width = registers * field_bits
        super().__init__({
            "pivot": In(width),
            "stream": In(width),
            "z": Out(top + 1 + (registers - 1).bit_length()),
            "nz": Out(registers.bit_length()),
        })

    @property
    def latency(self) -> int:
        """Cycles from ``pivot``/``stream`` to ``z``/``nz``."""
        return feature_unit_latency(self._registers)

    def elaborate(self, platform):
        m = Module()
        n, w, f = self._registers, self._w, self._field_bits
        top = (1 << w) - 1
        unions = []
        for i in range(n):
            a = self.pivot[i * f:i * f + w]
            b = self.stream[i * f:i * f + w]
            union = Signal(w, name=f"union_{i}")
            m.d.sync += union.eq(Mux(a > b, a, b))
            unions.append(union)
        terms = [C(1 << top, top + 1) >> u for u in unions]
        zeros = [u == 0 for u in unions]
        if n == 1:  # keep the latency uniform: the tree has at least one level
            terms, zeros = terms + [C(0, 1)], zeros + [C(0, 1)]
        z, _ = pipelined_sum(m, terms, "z")
        nz, _ = pipelined_sum(m, zeros, "nz")
        m.d.comb += [self.z.eq(z), self.nz.eq(nz)]
        return m
