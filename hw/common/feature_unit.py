"""The HyperLogLog feature unit (SPEC 3): a slot of registers reduced to its exact partial
features ``z = sum 2^(W - r)`` (W = 2^w - 1) and ``nz`` = number of zero registers, optionally of
the union (register-wise max) of two slots.

The one feature unit of the project: the similarity kernel's V x D units take the union of a
pivot slot and a streamed slot (``union=True``, a binary adder tree); the sketch kernel reduces
one merged word of 16 registers per cycle (``union=False``, 4-input adders: two levels) and
accumulates the words of a sketch (:class:`hw.sketch.merge.FeatureAccumulator`).
"""

from amaranth.hdl import C, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from kmerspec.params import W

__all__ = ["FeatureUnit", "pipelined_sum", "feature_unit_latency"]


def _tree_levels(count: int, arity: int) -> int:
    levels = 0
    while count > 1:
        count = -(-count // arity)
        levels += 1
    return levels


def feature_unit_latency(registers: int, *, union: bool = True, arity: int = 2) -> int:
    """Cycles through a :class:`FeatureUnit`: the union register (if any), then the adder tree
    (at least one level)."""
    return int(union) + max(1, _tree_levels(registers, arity))


def pipelined_sum(m: Module, values: list, name: str, arity: int = 2) -> tuple:
    """Sum ``values`` in a tree of ``arity``-input adders with a register after every level.

    Returns (sum, levels): the sum of the values presented ``levels`` cycles earlier.
    """
    level = 0
    while len(values) > 1:
        summed = []
        for i in range(0, len(values), arity):
            group = values[i:i + arity]
            total = group[0]
            for value in group[1:]:
                total = total + value
            reg = Signal(len(total), name=f"{name}_l{level}_{i // arity}")
            m.d.sync += reg.eq(total)
            summed.append(reg)
        values = summed
        level += 1
    return values[0], level


class FeatureUnit(wiring.Component):
    """Exact partial features of a slot of ``registers`` HLL registers.

    Parameters
    ----------
    registers : int
        Registers per slot (``n``, a power of two).
    w : int
        Register width (4 to 8); ranks are the low ``w`` bits of each field.
    field_bits : int
        Bits per register field in the slot (>= w).
    union : bool
        Reduce the union (register-wise max) of ``slot`` and ``other`` (one registered
        stage), not ``slot`` alone.
    arity : int
        Inputs of each adder of the tree (2 or more); one registered level per adder.

    Members
    -------
    slot : In(n * field_bits)
        Register i in bits [i field_bits, i field_bits + w).
    other : In(n * field_bits)
        Only with ``union``: the slot united with ``slot``.
    z : Out(w_z)
        Sum over the registers of 2^(W - r).
    nz : Out(w_nz)
        Number of zero registers.

    Fully pipelined, no handshake: ``z`` and ``nz`` belong to the inputs of :attr:`latency`
    cycles earlier; a new slot is taken every cycle (throughput 1 slot per cycle).
    """

    def __init__(self, registers: int, w: int = 4, field_bits: int | None = None, *,
                 union: bool = True, arity: int = 2):
        field_bits = w if field_bits is None else field_bits
        if not isinstance(registers, int) or registers < 1 or registers & (registers - 1):
            raise ValueError(f"registers must be a power of two, not {registers!r}")
        W.check(w)
        if not isinstance(field_bits, int) or field_bits < w:
            raise ValueError(f"field_bits must be an integer >= w = {w}, not {field_bits!r}")
        if not isinstance(arity, int) or arity < 2:
            raise ValueError(f"arity must be an integer >= 2, not {arity!r}")
        self._registers, self._w, self._field_bits = registers, w, field_bits
        self._union, self._arity = bool(union), arity
        top = (1 << w) - 1
        width = registers * field_bits
        members = {"slot": In(width)}
        if self._union:
            members["other"] = In(width)
        super().__init__({
            **members,
            "z": Out(top + 1 + (registers - 1).bit_length()),
            "nz": Out(registers.bit_length()),
        })

    @property
    def latency(self) -> int:
        """Cycles from the inputs to ``z``/``nz``."""
        return feature_unit_latency(self._registers, union=self._union, arity=self._arity)

    def elaborate(self, platform):
        m = Module()
        n, w, f = self._registers, self._w, self._field_bits
        top = (1 << w) - 1
        ranks = []
        for i in range(n):
            a = self.slot[i * f:i * f + w]
            if self._union:
                b = self.other[i * f:i * f + w]
                union = Signal(w, name=f"union_{i}")
                m.d.sync += union.eq(Mux(a > b, a, b))
                a = union
            ranks.append(a)
        terms = [C(1 << top, top + 1) >> r for r in ranks]
        zeros = [r == 0 for r in ranks]
        if n == 1:  # keep the latency uniform: the tree has at least one level
            terms, zeros = terms + [C(0, 1)], zeros + [C(0, 1)]
        z, _ = pipelined_sum(m, terms, "z", self._arity)
        nz, _ = pipelined_sum(m, zeros, "nz", self._arity)
        m.d.comb += [self.z.eq(z), self.nz.eq(nz)]
        return m
