"""The HyperLogLog feature unit (SPEC 3): a slot of registers reduced to its exact partial
features ``z = sum 2^(W - r)`` (W = 2^w - 1) and ``nz`` = number of zero registers, optionally of
the union (register-wise max) of two slots.

The one feature unit of the project: the similarity kernel's V x D units take the union of a
pivot slot and a streamed slot (``union=True``: the sliced bit heap below); the sketch kernel
reduces one merged word of 16 registers per cycle (``union=False``: one-hot terms in an adder
tree of 4-input adders, two levels) and accumulates the words of a sketch
(:class:`hw.sketch.merge.FeatureAccumulator`).

Why the union is not reduced as one-hot terms in an adder tree: every rank's one-hot
``2^(W - r)`` puts 2^w bits per register into the sum (512 for 32 registers at w = 4), about one
LUT each, plus the tree, another LUT per bit: ~35 LUT per register lane. Instead the union stage
registers, per register, its rank's *slice* ``h = r >> 1`` as a one-hot mask (each mask bit at
w = 4 a 6-input function of the two high parts: the slice of the max is the max of the slices)
and its low bit ``l``. In slice ``h`` a register adds ``2 >> l`` (if masked in) at bit
``W - 1 - 2h``, so for every slice one 6-input function of three registers' (mask, l) gives the
bits of their 3-bit sum: 8 heap bits per register at w = 4 instead of 16. The heap is reduced by
counters (6-input popcounts, a LUT per output bit) to three rows, which two carry-chain adders
sum. ``nz`` is a second, small heap: each triple's count of zero ranks, from the LUT inputs of
slice 0.
"""

import contextlib
import contextvars
from collections import defaultdict

from amaranth.hdl import C, Cat, ClockSignal, Const, Instance, Module, Mux, ResetSignal, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from kmerspec.params import W

from .pipeline import lookup, popcount

__all__ = ["FeatureUnit", "pipelined_sum", "feature_unit_latency", "units_as_instances"]

_ROWS = 3              # the final adders sum three rows (two carry chains)
_LUT_LEVELS_PER_STAGE = 2
_LOW_BITS = 1          # a slice holds the ranks 2h and 2h + 1 (2 measured larger)


#: the module definitions wanted while :func:`units_as_instances` is active
_INSTANCES = contextvars.ContextVar("feature_unit_instances", default=None)


@contextlib.contextmanager
def units_as_instances():
    """Within the block every :class:`FeatureUnit` elaborates to an instance of one Verilog
    module per parameter set, not to its logic: a kernel of hundreds of units (320 in the
    default similarity kernel) is then elaborated with one unit of each kind. Yields a dict,
    filled during the block, of module name -> a unit of those parameters, whose Verilog (a
    conversion outside the block) the caller appends (:func:`hw.vitis.emit.convert`)."""
    wanted = {}
    token = _INSTANCES.set(wanted)
    try:
        yield wanted
    finally:
        _INSTANCES.reset(token)


def _tree_levels(count: int, arity: int) -> int:
    levels = 0
    while count > 1:
        count = -(-count // arity)
        levels += 1
    return levels


def feature_unit_latency(registers: int, *, union: bool = True, arity: int = 2) -> int:
    """Cycles through a :class:`FeatureUnit`: its input register (the union, or without it the
    decoded one-hot terms), then the stages of the reduction: as many as an ``arity``-input
    adder tree over the registers has levels (at least one), the latency the kernels' cycle
    models were built on."""
    return 1 + max(1, _tree_levels(registers, arity))


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


def _compress(heap: dict, counter) -> dict:
    """One level of counters on a bit heap ({weight: [bits]}): every column's bits in groups of
    up to six go through ``counter(group)`` (their popcount, bit k at weight + k: 6:3, 5:3, 4:3,
    3:2); columns of one or two bits pass."""
    out = defaultdict(list)
    for weight in sorted(heap):
        bits, start = heap[weight], 0
        while len(bits) - start >= 3:
            group = bits[start:start + 6]
            start += len(group)
            for k, bit in enumerate(counter(group)):
                out[weight + k].append(bit)
        out[weight].extend(bits[start:])
    return dict(out)


def _height(heap: dict) -> int:
    return max((len(bits) for bits in heap.values()), default=0)


def _span(heap: dict) -> int:
    return max((weight + 1 for weight, bits in heap.items() if bits), default=1)


def _reduction_levels(heap: dict) -> int:
    """Counter levels until every column of ``heap`` holds at most ``_ROWS`` bits."""
    levels = 0
    while _height(heap) > _ROWS:
        heap = _compress(heap, lambda group: [None] * len(group).bit_length())
        levels += 1
    return levels


def _register(m: Module, heap: dict, name: str) -> dict:
    out = {}
    for weight, bits in heap.items():
        if bits:
            reg = Signal(len(bits), name=f"{name}_w{weight}")
            m.d.sync += reg.eq(Cat(*bits))
            out[weight] = [reg[i] for i in range(len(bits))]
    return out


def _rows_sum(heap: dict, width: int):
    """The sum (below 2^width) of a heap of at most ``_ROWS`` bits per column (counters may
    leave bits above the sum's width; they are zero, and dropped)."""
    span = max(width, _span(heap))
    rows = [[Const(0, 1)] * span for _ in range(_ROWS)]
    for weight, bits in heap.items():
        for row, bit in enumerate(bits):
            rows[row][weight] = bit
    return sum(Cat(*row) for row in rows)[:width]


def _schedule(operations: int, stages: int) -> set:
    """The operations (LUT levels: group sums, counter levels) after which to register: two per
    stage (more if the stages before the final adders' own stage are too few); stages left over
    delay the result, where it is narrowest."""
    per_stage = max(_LUT_LEVELS_PER_STAGE, -(-operations // max(1, stages - 1)))
    return {min(end, operations) - 1 for end in range(per_stage, operations + per_stage, per_stage)}


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
        Inputs of each adder of the one-hot tree (without the union); with the union it sets
        the latency only, that of such a tree (:func:`feature_unit_latency`), which the kernels'
        cycle models are built on.

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
    cycles earlier; a new slot is taken every cycle (throughput 1 slot per cycle).  Without the
    union: the decoded one-hot terms registered, then the adder tree's levels.  With the
    union: the union stage registers each register's slice masks and low bit; the group sums
    and counter levels follow, two per stage, then the final adders' stage, then delay stages
    (32 registers at w = 4: union; group sums and a counter level; two counter levels; the
    three-row adders; two delay stages).
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

    @property
    def module_name(self) -> str:
        """The Verilog module of units of these parameters (:func:`units_as_instances`)."""
        kind = "union" if self._union else f"arity{self._arity}"
        return (f"feature_unit_n{self._registers}_w{self._w}_f{self._field_bits}_{kind}")

    def _instance(self, wanted: dict) -> Module:
        if self.module_name not in wanted:
            wanted[self.module_name] = FeatureUnit(self._registers, self._w, self._field_bits,
                                                   union=self._union, arity=self._arity)
        ports = {"i_clk": ClockSignal(), "i_rst": ResetSignal(), "i_slot": self.slot,
                 "o_z": self.z, "o_nz": self.nz}
        if self._union:
            ports["i_other"] = self.other
        m = Module()
        m.submodules.unit = Instance(self.module_name, **ports)
        return m

    def _sliced_ranks(self, m: Module) -> list:
        """Per register of the union: its rank's slice mask and low bits, registered."""
        n, w, f, low_bits = self._registers, self._w, self._field_bits, _LOW_BITS
        sliced = []
        for i in range(n):
            a, b = self.slot[i * f:i * f + w], self.other[i * f:i * f + w]
            a_high, b_high, a_low, b_low = a[low_bits:], b[low_bits:], a[:low_bits], b[:low_bits]
            masks = Signal(1 << (w - low_bits), name=f"union_{i}_slice")
            low = Signal(low_bits, name=f"union_{i}_low")
            m.d.sync += [
                masks.eq(1 << Mux(a_high > b_high, a_high, b_high)),
                low.eq(Mux(a_high == b_high, Mux(a_low > b_low, a_low, b_low),
                           Mux(a_high > b_high, a_low, b_low))),
            ]
            sliced.append((list(masks), list(low)))
        return sliced

    def _one_hot_tree(self, m: Module):
        """Without the union: each rank decoded to its one-hot term, summed in the adder tree
        (at 16 registers and 4-input adders two levels; smaller here than the sliced heap,
        whose raw-input masks cost a LUT level the sketch's two stages lack)."""
        n, w, f = self._registers, self._w, self._field_bits
        top = (1 << w) - 1
        ranks = [self.slot[i * f:i * f + w] for i in range(n)]
        terms, zeros = [], []
        for i, r in enumerate(ranks):
            # the decode registered: the tree's first adders start at registers, not behind
            # the rank's shifter (6 LUT levels and a MUXF before the carry chain, unregistered)
            term, zero = Signal(top + 1, name=f"term{i}"), Signal(name=f"zero{i}")
            m.d.sync += [term.eq(C(1 << top, top + 1) >> r), zero.eq(r == 0)]
            terms.append(term)
            zeros.append(zero)
        if n == 1:  # keep the latency uniform: the tree has at least one level
            terms, zeros = terms + [C(0, 1)], zeros + [C(0, 1)]
        z, _ = pipelined_sum(m, terms, "z", self._arity)
        nz, _ = pipelined_sum(m, zeros, "nz", self._arity)
        m.d.comb += [self.z.eq(z), self.nz.eq(nz)]

    def elaborate(self, platform):
        wanted = _INSTANCES.get()
        if wanted is not None:
            return self._instance(wanted)
        m = Module()
        if not self._union:
            self._one_hot_tree(m)
            return m
        w, low_bits = self._w, _LOW_BITS
        slices = 1 << (w - low_bits)
        code_bits = 1 + low_bits
        group = 6 // code_bits          # registers read by one 6-input LUT
        sliced = self._sliced_ranks(m)
        while len(sliced) % group:      # registers in no slice fill the last group
            sliced.append(([Const(0, 1)] * slices, [Const(0, 1)] * low_bits))
        # a register's code in a slice (mask, low bits) -> its part 2^(L - low) (0 if masked),
        # L = 2^low_bits - 1; a group's LUTs give the bits of the sum of its parts
        part = [0 if not c & 1 else (1 << ((1 << low_bits) - 1)) >> (c >> 1)
                for c in range(1 << code_bits)]
        codes = range(1 << (code_bits * group))
        mask = (1 << code_bits) - 1
        group_sum = [sum(part[(v >> (code_bits * k)) & mask] for k in range(group)) for v in codes]
        group_zeros = [sum((v >> (code_bits * k)) & mask == 1 for k in range(group)) for v in codes]
        sum_bits, zero_bits = max(group_sum).bit_length(), group.bit_length()
        z_heap, nz_heap = defaultdict(list), defaultdict(list)
        for g in range(len(sliced) // group):
            members = sliced[g * group:(g + 1) * group]
            for s in range(slices):
                inputs = [bit for masks, low in members for bit in (masks[s], *low)]
                total = lookup(m, inputs, group_sum, sum_bits, f"group{g}_slice{s}")
                offset = (1 << low_bits) * (slices - 1 - s)
                for k, bit in enumerate(total):
                    z_heap[offset + k].append(bit)
                if s == 0:
                    zeros = lookup(m, inputs, group_zeros, zero_bits, f"group{g}_zeros")
                    for k, bit in enumerate(zeros):
                        nz_heap[k].append(bit)
        z_heap, nz_heap = dict(z_heap), dict(nz_heap)

        # LUT levels (group sums, counter levels) registered per the schedule, then the adders
        levels = _reduction_levels(z_heap)
        stages = self.latency - int(self._union)
        ends = _schedule(1 + levels, stages) if stages > 1 else set()
        counters = 0

        def counter(group):
            nonlocal counters
            counters += 1
            return list(popcount(m, group, f"count{counters}"))

        def stage_end(op, heaps, name):
            if op in ends:
                return [_register(m, heap, f"{name}_{part}") for heap, part in zip(heaps, "zn")]
            return heaps

        z_heap, nz_heap = stage_end(0, (z_heap, nz_heap), "groups")
        for level in range(levels):
            z_heap = _compress(z_heap, counter)
            if _height(nz_heap) > _ROWS:
                nz_heap = _compress(nz_heap, counter)
            z_heap, nz_heap = stage_end(1 + level, (z_heap, nz_heap), f"level{level}")
        z, nz = Signal.like(self.z), Signal.like(self.nz)
        m.d.sync += [z.eq(_rows_sum(z_heap, len(self.z))), nz.eq(_rows_sum(nz_heap, len(self.nz)))]
        for delay in range(stages - 1 - len(ends)):   # the final adders end one stage
            z_late, nz_late = Signal.like(self.z, name=f"z_delay{delay}"), \
                Signal.like(self.nz, name=f"nz_delay{delay}")
            m.d.sync += [z_late.eq(z), nz_late.eq(nz)]
            z, nz = z_late, nz_late
        m.d.comb += [self.z.eq(z), self.nz.eq(nz)]
        return m
