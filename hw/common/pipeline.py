"""Pipelining helpers for wide datapaths that must meet the board clock.

* :func:`delayed`: a value some registers later.
* :func:`pipelined_add`: ``a + b`` in chunks of :data:`CHUNK_BITS` bits, one chunk per cycle
  (the carry between chunks registered), so no carry chain is longer than 4 CARRY8 (Vivado counts
  every CARRY8 as a logic level: a 128-bit adder in one cycle is 16 levels).
* :func:`chunked_sum`: a registered adder tree of :func:`pipelined_add` (unlike
  :func:`hw.common.feature_unit.pipelined_sum`, whose adders are whole-width, each in one cycle).
* :func:`pipelined_product`: ``a * b`` from DSP48E2 tiles (26 x 17 bits unsigned, the 27 x 18
  signed multiplier), each with its own input and product registers (the DSP's A/B and P
  registers), summed two at a time by :func:`pipelined_add`.
* :class:`ChunkedAccumulator`: a running sum of a stream of wide values, chunk by chunk.
* :func:`tree_equal`: a wide equality as kept 3-bit chunk compares and their AND (one LUT per
  chunk), where Yosys's ``abc9`` maps ``a == b`` behind a select as a chain of five LUTs.
* :func:`lookup` and :func:`popcount`: combinational, a constant truth table per output bit (one
  LUT for up to six inputs), where an adder would put a carry chain between two registers.

Every helper is a fixed-latency pipeline with one input per cycle and no backpressure; the
latencies come back with the result, and :func:`product_latency` gives a product's ahead of
elaboration. Registers go to ``m.d.sync``.
"""

from types import SimpleNamespace

from amaranth.hdl import Cat, Const, Signal, Value
from amaranth.lib import data

__all__ = ["CHUNK_BITS", "DSP_A_BITS", "DSP_B_BITS", "bank_bits", "delayed", "one_hot_select",
           "pipelined_add", "chunked_sum", "product_tiles", "pipelined_product", "product_latency",
           "ChunkedAccumulator", "LatencyOnly", "lookup", "popcount", "tree_equal"]

#: bits of one carry-chain segment between registers (4 CARRY8)
CHUNK_BITS = 32
#: unsigned operand widths of one DSP48E2 multiplier (27 x 18 signed)
DSP_A_BITS = 26
DSP_B_BITS = 17


def bank_bits(banks: int) -> int:
    """Bits of a bank number of a unit with ``banks`` banks of memories behind shared logic (0
    for one bank)."""
    return (banks - 1).bit_length()


def one_hot_select(values: list, one_hot) -> Value:
    """The value of ``values`` whose bit of ``one_hot`` is set (all of one width): an AND-OR,
    no priority chain."""
    width = len(Value.cast(values[0]))
    selected = Const(0, width)
    for bit, value in enumerate(values):
        selected = selected | (Value.cast(value) & one_hot[bit].replicate(width))
    return selected


def tree_equal(m, a, b, name: str) -> Value:
    """``a == b`` (combinational) as the AND of 3-bit chunk compares on wires marked ``keep``.
    Behind a select, ``abc9`` maps a 20-bit equality as a chain of 5 LUTs; the kept chunks leave
    it one LUT per chunk and an AND tree (the JSD PQA's tag compares: 7 -> 6 levels). Vivado
    honours ``keep`` the same way, so the structure reaches it too."""
    a, b = Value.cast(a), Value.cast(b)
    chunks = []
    for low in range(0, len(a), 3):
        chunk = Signal(name=f"{name}_eq{low}", attrs={"keep": 1})
        m.d.comb += chunk.eq(a[low:low + 3] == b[low:low + 3])
        chunks.append(chunk)
    return Cat(*chunks).all()


def delayed(m, value, cycles: int, name: str, reset_less: bool = False):
    """``value`` after ``cycles`` registers (``value`` itself for 0; a view keeps its layout).
    Data (``reset_less``) registers have no reset, so a delay line can become a shift-register
    LUT (SRL); control bits such as valids keep theirs."""
    for cycle in range(cycles):
        shape = value.shape() if isinstance(value, data.View) else Value.cast(value).shape()
        held = Signal(shape, name=f"{name}_d{cycle + 1}", reset_less=reset_less)
        m.d.sync += held.eq(value)
        value = held
    return value


def lookup(m, inputs: list, table: list, width: int, name: str) -> list:
    """Bits of ``table[inputs as a number]`` (inputs[0] the least significant): each bit is a
    constant truth table indexed by the inputs, one LUT for up to six inputs."""
    index = Cat(*inputs)
    bits = []
    for k in range(width):
        truth = sum(((entry >> k) & 1) << value for value, entry in enumerate(table))
        bit = Signal(name=f"{name}_{k}")
        m.d.comb += bit.eq(Const(truth, len(table)).bit_select(index, 1))
        bits.append(bit)
    return bits


def popcount(m, bits: list, name: str) -> Value:
    """The number of ones among ``bits``: each group of up to six is one :func:`lookup` (a LUT
    level), and the groups' counts are added (one short carry chain per further group)."""
    counts = []
    for start in range(0, len(bits), 6):
        group = bits[start:start + 6]
        table = [bin(value).count("1") for value in range(1 << len(group))]
        counts.append(Cat(*lookup(m, group, table, len(group).bit_length(), f"{name}_g{start}")))
    return sum(counts[1:], counts[0]) if counts else Const(0, 1)


def _add_with_carry(a, b, carry):
    """``a + b + carry`` (carry 1 bit) as one adder: (2a + 1) + (2b + carry), halved."""
    return (Cat(Const(1, 1), a) + Cat(carry, b))[1:]


def _chunks(width: int) -> list[tuple[int, int]]:
    return [(low, min(width, low + CHUNK_BITS)) for low in range(0, width, CHUNK_BITS)]


def _bits(value, low: int, high: int):
    """``value[low:high]``, zero-extended where ``value`` is narrower."""
    value = Value.cast(value)
    part = value[low:min(high, len(value))] if low < len(value) else Const(0, 0)
    return Cat(part, Const(0, high - low - len(part)))


def pipelined_add(m, a, b, name: str, width: int | None = None):
    """``(a + b) mod 2^width`` (default width: one more bit than the wider operand), registered
    chunk by chunk; returns ``(sum, latency)`` with latency the number of chunks."""
    if width is None:
        width = max(len(Value.cast(a)), len(Value.cast(b))) + 1
    chunks = _chunks(width)
    carry = Const(0, 1)
    parts = []
    for index, (low, high) in enumerate(chunks):
        a_part = delayed(m, _bits(a, low, high), index, f"{name}_a{index}", reset_less=True)
        b_part = delayed(m, _bits(b, low, high), index, f"{name}_b{index}", reset_less=True)
        part = Signal(high - low + 1, name=f"{name}_c{index}", reset_less=True)
        m.d.sync += part.eq(_add_with_carry(a_part, b_part, carry))
        carry = part[-1]
        parts.append(delayed(m, part[:-1], len(chunks) - 1 - index, f"{name}_c{index}",
                             reset_less=True))
    total = Signal(width, name=name)
    m.d.comb += total.eq(Cat(*parts))
    return total, len(chunks)


def product_tiles(a_bits: int, b_bits: int) -> list[tuple[int, int, int, int]]:
    """(a_low, a_width, b_low, b_width) of every tile of an ``a_bits`` x ``b_bits`` product."""
    return [(a_low, min(DSP_A_BITS, a_bits - a_low), b_low, min(DSP_B_BITS, b_bits - b_low))
            for a_low in range(0, a_bits, DSP_A_BITS)
            for b_low in range(0, b_bits, DSP_B_BITS)]


def pipelined_product(m, a, b, name: str):
    """The exact product ``a * b`` (unsigned) as ``len(a) + len(b)`` bits; returns
    ``(product, latency)``: 2 cycles for the tiles, then the adder tree's."""
    a, b = Value.cast(a), Value.cast(b)
    a_bits, b_bits = len(a), len(b)
    terms = []
    for index, (a_low, a_width, b_low, b_width) in enumerate(product_tiles(a_bits, b_bits)):
        a_tile = Signal(a_width, name=f"{name}_a{index}")
        b_tile = Signal(b_width, name=f"{name}_b{index}")
        product = Signal(a_width + b_width, name=f"{name}_p{index}")
        m.d.sync += [a_tile.eq(a[a_low:a_low + a_width]), b_tile.eq(b[b_low:b_low + b_width]),
                     product.eq(a_tile * b_tile)]
        terms.append((a_low + b_low, product))
    total, lag = chunked_sum(m, terms, name, a_bits + b_bits)
    return total, 2 + lag


def chunked_sum(m, terms, name: str, width: int):
    """The sum of ``terms``, pairs (shift, value) meaning ``value << shift``, mod 2^width, by a
    binary tree with one :func:`pipelined_add` per level (operands of a pair delayed to the
    later one); returns ``(sum, latency)``."""
    terms = [(shift, value, 0) for shift, value in terms]
    level = 0
    while len(terms) > 1:
        summed = []
        for pair in range(0, len(terms), 2):
            if pair + 1 == len(terms):
                summed.append(terms[pair])
                continue
            (low_shift, low, low_lag), (high_shift, high, high_lag) = terms[pair:pair + 2]
            if high_shift < low_shift:
                (low_shift, low, low_lag), (high_shift, high, high_lag) = \
                    (high_shift, high, high_lag), (low_shift, low, low_lag)
            lag = max(low_lag, high_lag)
            low = delayed(m, low, lag - low_lag, f"{name}_l{level}_{pair}", reset_less=True)
            high = delayed(m, high, lag - high_lag, f"{name}_h{level}_{pair}", reset_less=True)
            offset = high_shift - low_shift
            bits = min(width - low_shift, max(len(low), offset + len(high)) + 1)
            total, cycles = pipelined_add(m, low, Cat(Const(0, offset), high),
                                          f"{name}_s{level}_{pair // 2}", bits)
            summed.append((low_shift, total, lag + cycles))
        terms = summed
        level += 1
    shift, term, lag = terms[0]
    result = Signal(width, name=name)
    m.d.comb += result.eq(term << shift)
    return result, lag


class LatencyOnly:
    """Stands in for a Module where a helper is run only for its latency: takes and drops the
    statements."""

    class _Discard:
        def __iadd__(self, statements):
            return self

    def __init__(self):
        self.d = SimpleNamespace(sync=self._Discard(), comb=self._Discard())


def product_latency(a_bits: int, b_bits: int) -> int:
    """Cycles from the operands to the product of :func:`pipelined_product`."""
    return pipelined_product(LatencyOnly(), Signal(a_bits), Signal(b_bits), "latency")[1]


class ChunkedAccumulator:
    """A running sum of ``width`` bits (mod 2^width), added to in chunks of :data:`CHUNK_BITS`:
    chunk i adds the addend's chunk i cycles after it was offered, with the carry of chunk i - 1
    from the cycle before, so a sum of one addend per cycle is exact.

    ``add(m, enable, addend)`` builds it; :attr:`value` is the sum once :attr:`settle` cycles
    have passed since the last ``enable``; ``clear`` (a 1-bit value) zeroes every chunk and
    carry (at most one per ``settle`` cycles after the last addend)."""

    def __init__(self, width: int, name: str):
        self.width = width
        self.name = name
        self.chunks = _chunks(width)
        self.settle = len(self.chunks) - 1
        self.value = Signal(width, name=name)

    def add(self, m, enable, addend, clear):
        carry = Const(0, 1)
        parts = []
        for index, (low, high) in enumerate(self.chunks):
            active = delayed(m, enable, index, f"{self.name}_enable{index}")
            part = delayed(m, _bits(addend, low, high), index, f"{self.name}_addend{index}",
                           reset_less=True)
            chunk = Signal(high - low, name=f"{self.name}_chunk{index}")
            carry_out = Signal(name=f"{self.name}_carry{index}")
            with m.If(clear):
                m.d.sync += [chunk.eq(0), carry_out.eq(0)]
            with m.Elif(active):
                m.d.sync += Cat(chunk, carry_out).eq(_add_with_carry(chunk, part, carry))
            with m.Else():
                # chunk i - 1 carries out only in a cycle before chunk i adds the same addend
                m.d.sync += carry_out.eq(0)
            carry = carry_out
            parts.append(chunk)
        m.d.comb += self.value.eq(Cat(*parts))
