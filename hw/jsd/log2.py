"""Fixed-point log2 and reciprocal units of the entropy module, bit-exact to
``kmerspec.golden.fixedpoint`` (formats in its docstring).

log2 (one per cycle, latency 3): leading-one position = integer part; the input shifted so its
leading one sits at the top; the next 8 bits address a 257-word dual-port ROM (LUT[a], LUT[a+1]),
the 16 bits after that are the linear-interpolation weight (17 x 16-bit product).

Reciprocal (one per cycle, latency 6): the input normalised to Q1.32 in [1, 2), a 256-word seed
ROM addressed by its top 8 fraction bits, then two Newton-Raphson steps x <- x (2 - b x), each
product truncated to Q1.32. Used once per genome (1/M), so it is built for clarity, not area.
"""

from amaranth.hdl import Cat, Const, Module, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from kmerspec.golden.fixedpoint import (LOG2_FRAC_BITS, LOG2_INTERP_BITS, LOG2_LUT, LOG2_LUT_BITS,
                                    RECIP_FRAC_BITS, RECIP_LUT, RECIP_LUT_BITS)
from kmerspec.params import check_int

__all__ = ["Log2Unit", "ReciprocalUnit", "log2_output_bits", "leading_one", "normalise"]

_MANTISSA_BITS = LOG2_LUT_BITS + LOG2_INTERP_BITS
# the largest LUT step is LUT[1] - LUT[0] = 94283 < 2^17
_STEP_BITS = max(b - a for a, b in zip(LOG2_LUT, LOG2_LUT[1:])).bit_length()


def log2_output_bits(input_bits: int) -> int:
    """Width of the Q(ceil(log2 W)).24 log2 output for a W-bit input."""
    return max(1, (input_bits - 1).bit_length()) + LOG2_FRAC_BITS


def leading_one(m: Module, value, name: str) -> Signal:
    """Position of the most significant one of ``value`` (0 for value 0), combinational."""
    position = Signal(range(max(2, len(value))), name=name)
    for bit in range(len(value)):
        with m.If(value[bit]):
            m.d.comb += position.eq(bit)
    return position


def normalise(m: Module, value, position, fraction_bits: int, name: str) -> Signal:
    """The ``fraction_bits`` bits below the leading one of ``value`` (zero-filled, truncated)."""
    width = len(value)
    shift = Signal(range(max(2, width)), name=f"{name}_shift")
    shifted = Signal(width, name=f"{name}_shifted")
    m.d.comb += [shift.eq(width - 1 - position), shifted.eq(value << shift)]
    below = shifted[:width - 1]
    fraction = Signal(fraction_bits, name=name)
    if width - 1 >= fraction_bits:
        m.d.comb += fraction.eq(below[width - 1 - fraction_bits:])
    else:
        m.d.comb += fraction.eq(Cat(Const(0, fraction_bits - (width - 1)), below))
    return fraction


class Log2Unit(wiring.Component):
    """``log2_fixed(c)`` in unsigned Q(ceil(log2 W)).24; log2(0) = 0.

    Parameters
    ----------
    input_bits : int
        W, 1 to 128.
    tag_bits : int
        Width of a payload carried alongside (e.g. the input itself), 0 for none.

    Members
    -------
    i : In(stream.Signature({"value": W, "tag": tag_bits}, always_ready=True))
    o : Out(stream.Signature({"log2": ..., "tag": tag_bits}, always_ready=True))

    Latency :attr:`latency` = 3 cycles, one input per cycle, no backpressure.
    """

    latency = 3

    def __init__(self, input_bits: int = 32, tag_bits: int = 0):
        check_int("input_bits", input_bits, 1, 128)
        check_int("tag_bits", tag_bits, 0, 4096)
        self.input_bits = input_bits
        self.output_bits = log2_output_bits(input_bits)
        self.tag_bits = tag_bits
        super().__init__({
            "i": In(stream.Signature(data.StructLayout({"value": input_bits, "tag": tag_bits}),
                                     always_ready=True)),
            "o": Out(stream.Signature(data.StructLayout({"log2": self.output_bits,
                                                         "tag": tag_bits}), always_ready=True)),
        })

    def elaborate(self, platform):
        m = Module()
        m.submodules.lut = lut = Memory(shape=LOG2_FRAC_BITS + 1, depth=len(LOG2_LUT),
                                        init=LOG2_LUT)
        low_port = lut.read_port(transparent_for=())
        high_port = lut.read_port(transparent_for=())

        value = self.i.payload.value
        exponent = leading_one(m, value, "exponent")
        fraction = normalise(m, value, exponent, _MANTISSA_BITS, "fraction")
        address = fraction[LOG2_INTERP_BITS:]
        m.d.comb += [low_port.addr.eq(address), high_port.addr.eq(address + 1)]

        # stage 1: ROM read; the weight and exponent wait beside it
        exponent1 = Signal.like(exponent)
        weight1 = Signal(LOG2_INTERP_BITS)
        valid1 = Signal()
        tag1 = Signal(self.tag_bits)
        m.d.sync += [exponent1.eq(exponent), weight1.eq(fraction[:LOG2_INTERP_BITS]),
                     valid1.eq(self.i.valid), tag1.eq(self.i.payload.tag)]

        # stage 2: interpolation product
        low2 = Signal(LOG2_FRAC_BITS + 1)
        step2 = Signal(LOG2_FRAC_BITS + 1 + LOG2_INTERP_BITS)
        exponent2 = Signal.like(exponent)
        valid2 = Signal()
        tag2 = Signal(self.tag_bits)
        m.d.sync += [
            low2.eq(low_port.data),
            step2.eq((high_port.data - low_port.data)[:_STEP_BITS] * weight1),
            exponent2.eq(exponent1), valid2.eq(valid1), tag2.eq(tag1),
        ]

        # stage 3: sum
        m.d.sync += [
            self.o.payload.log2.eq((exponent2 << LOG2_FRAC_BITS) + low2
                                   + (step2 >> LOG2_INTERP_BITS)),
            self.o.payload.tag.eq(tag2),
            self.o.valid.eq(valid2),
        ]
        return m


class ReciprocalUnit(wiring.Component):
    """``reciprocal_fixed(M)``: (x, e) with 1/M ~= x * 2^-(32 + e), x in Q1.32.

    Members
    -------
    i : In(stream.Signature(W, always_ready=True))
        M > 0 (M = 0 gives x = LUT seed iterations of 0, which callers must not use).
    o : Out(stream.Signature({"x": 34, "exponent": ...}, always_ready=True))

    Latency :attr:`latency` = 6 cycles, one input per cycle, no backpressure.
    """

    latency = 6

    def __init__(self, input_bits: int = 48):
        check_int("input_bits", input_bits, 1, 128)
        self.input_bits = input_bits
        super().__init__({
            "i": In(stream.Signature(input_bits, always_ready=True)),
            "o": Out(stream.Signature(data.StructLayout({
                "x": RECIP_FRAC_BITS + 2, "exponent": range(max(2, input_bits))}),
                always_ready=True)),
        })

    def elaborate(self, platform):
        m = Module()
        frac_bits = RECIP_FRAC_BITS
        m.submodules.lut = lut = Memory(shape=frac_bits + 1, depth=len(RECIP_LUT),
                                        init=RECIP_LUT)
        seed_port = lut.read_port(transparent_for=())

        exponent = leading_one(m, self.i.payload, "exponent")
        fraction = normalise(m, self.i.payload, exponent, frac_bits, "fraction")
        m.d.comb += seed_port.addr.eq(fraction[frac_bits - RECIP_LUT_BITS:])

        valid, exponent_d = self.i.valid, exponent
        normalised = Cat(fraction, Const(1, 1))

        def delay(name):
            nonlocal valid, exponent_d, normalised
            new_valid = Signal(name=f"valid_{name}")
            new_exponent = Signal.like(exponent, name=f"exponent_{name}")
            new_normalised = Signal(frac_bits + 1, name=f"normalised_{name}")
            m.d.sync += [new_valid.eq(valid), new_exponent.eq(exponent_d),
                         new_normalised.eq(normalised)]
            valid, exponent_d, normalised = new_valid, new_exponent, new_normalised

        delay("seed")
        x = seed_port.data
        two = 2 << frac_bits
        for step in range(2):
            product = Signal(frac_bits + 2, name=f"product{step}")
            m.d.sync += product.eq((normalised * x) >> frac_bits)
            held_x = Signal(frac_bits + 2, name=f"x_held{step}")
            m.d.sync += held_x.eq(x)
            delay(f"p{step}")
            new_x = Signal(frac_bits + 2, name=f"x{step}")
            m.d.sync += new_x.eq((held_x * (two - product)[:frac_bits + 2]) >> frac_bits)
            delay(f"x{step}")
            x = new_x
        m.d.sync += [self.o.payload.x.eq(x), self.o.payload.exponent.eq(exponent_d)]
        delay("out")
        m.d.comb += self.o.valid.eq(valid)
        return m
