"""Fixed-point log2 and reciprocal units of the entropy module, bit-exact to
``kmerspec.golden.fixedpoint`` (formats in its docstring), pipelined for the board clock.

Both start with :func:`normalising_shifter`: the input shifted left until its leading one is at
the top, and the number of places (the leading-zero count), found in steps of 64, 32, ..., 1
places, with a register after each group of steps of at most :data:`STAGE_LEVELS` estimated LUT
levels (3 groups for a 32-bit input, 5 for 81 or 97 bits).

log2 (one per cycle): the 8 bits below the leading one address a 256-word ROM holding LUT[a] and
the step LUT[a+1] - LUT[a] (so one read port and no subtraction), the next 16 bits are the
interpolation weight: a 17 x 16-bit product (one DSP48E2, registered on both sides), then
``(e << 24) + LUT[a] + (step * weight >> 16)``.

Reciprocal (one per cycle, used once per genome for 1/M): the normalised input as Q1.32 in
[1, 2), a 256-word seed ROM addressed by its top 8 fraction bits, then two Newton-Raphson steps
x <- x (2 - b x), each product truncated to Q1.32 and built by
:func:`hw.common.pipeline.pipelined_product`.

Every register-to-register path is a few LUT levels, a ROM read or a registered DSP
(``python bench/timing_parts.py --parts log2,reciprocal``); latencies are on the instances.
"""

import math

from amaranth.hdl import Cat, Const, Module, Mux, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from kmerspec.golden.fixedpoint import (LOG2_FRAC_BITS, LOG2_INTERP_BITS, LOG2_LUT, LOG2_LUT_BITS,
                                    RECIP_FRAC_BITS, RECIP_LUT, RECIP_LUT_BITS)
from kmerspec.params import check_int

from hw.common.pipeline import delayed, pipelined_product, product_latency

__all__ = ["Log2Unit", "ReciprocalUnit", "log2_output_bits", "log2_latency",
           "reciprocal_latency", "normalising_shifter", "normaliser_stages", "STAGE_LEVELS"]

_MANTISSA_BITS = LOG2_LUT_BITS + LOG2_INTERP_BITS
# the largest LUT step is LUT[1] - LUT[0] = 94283 < 2^17
_STEP_BITS = max(b - a for a, b in zip(LOG2_LUT, LOG2_LUT[1:])).bit_length()
_LOW_BITS = LOG2_FRAC_BITS + 1

#: the ROMs in block RAM (half a BRAM36 each): as LUTs, a 256-word ROM is an 8-input function
#: of every output bit, several LUT levels between the address and the data registers
ROM_ATTRS = {"rom_style": "block", "ram_style": "block"}

#: estimated LUT levels between two registers of the normalising shifter
STAGE_LEVELS = 4


def log2_output_bits(input_bits: int) -> int:
    """Width of the Q(ceil(log2 W)).24 log2 output for a W-bit input."""
    return max(1, (input_bits - 1).bit_length()) + LOG2_FRAC_BITS


def _shift_steps(width: int) -> list[int]:
    """Shift amounts 2^k, largest first, that add up to at least ``width - 1``."""
    return [1 << k for k in reversed(range(max(1, (width - 1).bit_length())))]


def _step_levels(step: int, width: int) -> int:
    """Estimated LUT levels of one step: the zero test of its top bits, then the 2:1 select
    (one LUT6 holds both for up to 4 bits)."""
    inputs = min(step, width)
    return 1 if inputs <= 4 else 1 + math.ceil(math.log(inputs, 6))


def _step_groups(width: int) -> list[list[int]]:
    groups, levels = [[]], 0
    for step in _shift_steps(width):
        cost = _step_levels(step, width)
        if groups[-1] and levels + cost > STAGE_LEVELS:
            groups.append([])
            levels = 0
        groups[-1].append(step)
        levels += cost
    return groups


def normaliser_stages(width: int) -> int:
    """Registers (cycles) of :func:`normalising_shifter` for a ``width``-bit value."""
    return len(_step_groups(width))


def normalising_shifter(m: Module, value, carried: list, name: str):
    """``value`` shifted left until its top bit is 1 (0 stays 0) and the number of places, a
    leading-zero count of ``len(_shift_steps)`` bits (all ones for 0), both registered
    :func:`normaliser_stages` cycles later; ``carried`` signals are delayed alongside (1-bit
    ones, the valids, with a reset; wider ones, data, without).

    Returns ``(normalised, lzc, carried)``."""
    width = len(value)
    current = value
    zeros = {}
    for stage, group in enumerate(_step_groups(width)):
        for step in group:
            zero = Signal(name=f"{name}_zero{step}")
            shifted = Signal(width, name=f"{name}_by{step}")
            m.d.comb += [zero.eq(~current[max(0, width - step):].any()),
                         shifted.eq(Mux(zero, current << step, current))]
            current, zeros[step] = shifted, zero
        held = Signal(width, name=f"{name}_value{stage}", reset_less=True)
        m.d.sync += held.eq(current)
        current = held
        for step in list(zeros):
            zero = Signal(name=f"{name}_zero{step}_{stage}", reset_less=True)
            m.d.sync += zero.eq(zeros[step])
            zeros[step] = zero
        carried = [delayed(m, signal, 1, f"{name}_carried{index}_{stage}",
                           reset_less=len(signal) > 1)
                   for index, signal in enumerate(carried)]
    lzc = Cat(*(zeros[step] for step in sorted(zeros)))
    return current, lzc, carried


def log2_latency(input_bits: int) -> int:
    """Cycles of :class:`Log2Unit`: the normaliser, ROM read, ROM data register, product, sum."""
    return normaliser_stages(input_bits) + 4


def _newton_raphson_products() -> list[tuple[int, int]]:
    """Operand widths (b, x) and (x, correction) of the reciprocal's products, step by step."""
    b_bits, x_bits = RECIP_FRAC_BITS + 1, RECIP_FRAC_BITS + 2
    return [(b_bits, RECIP_FRAC_BITS + 1), (RECIP_FRAC_BITS + 1, x_bits),
            (b_bits, x_bits), (x_bits, x_bits)]


def reciprocal_latency(input_bits: int) -> int:
    """Cycles of :class:`ReciprocalUnit`: the normaliser, the seed ROM read, per Newton-Raphson
    step two products and the subtraction between them, the output register."""
    return (normaliser_stages(input_bits) + 1 + 2
            + sum(product_latency(a, b) for a, b in _newton_raphson_products()) + 1)


def _fraction(normalised, fraction_bits: int):
    """The ``fraction_bits`` bits below the top bit of ``normalised`` (zero-filled)."""
    below = normalised[:len(normalised) - 1]
    if len(below) >= fraction_bits:
        return below[len(below) - fraction_bits:]
    return Cat(Const(0, fraction_bits - len(below)), below)


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

    One input per cycle, no backpressure; latency :attr:`latency` = the normaliser's stages
    + 4 (ROM read, ROM data register, product, sum): 6 for W = 32, 7 for W = 81.
    """

    def __init__(self, input_bits: int = 32, tag_bits: int = 0):
        check_int("input_bits", input_bits, 1, 128)
        check_int("tag_bits", tag_bits, 0, 4096)
        self.input_bits = input_bits
        self.output_bits = log2_output_bits(input_bits)
        self.tag_bits = tag_bits
        self.latency = log2_latency(input_bits)
        super().__init__({
            "i": In(stream.Signature(data.StructLayout({"value": input_bits, "tag": tag_bits}),
                                     always_ready=True)),
            "o": Out(stream.Signature(data.StructLayout({"log2": self.output_bits,
                                                         "tag": tag_bits}), always_ready=True)),
        })

    def elaborate(self, platform):
        m = Module()
        W = self.input_bits
        words = [low | (high - low) << _LOW_BITS for low, high in zip(LOG2_LUT, LOG2_LUT[1:])]
        m.submodules.rom = rom = Memory(shape=_LOW_BITS + _STEP_BITS, depth=len(words),
                                        init=words, attrs=ROM_ATTRS)
        read = rom.read_port(transparent_for=())

        normalised, lzc, (valid, tag) = normalising_shifter(
            m, self.i.payload.value, [self.i.valid, self.i.payload.tag], "normalise")
        fraction = _fraction(normalised, _MANTISSA_BITS)
        m.d.comb += read.addr.eq(fraction[LOG2_INTERP_BITS:])

        # ROM read; the exponent W - 1 - lzc (0 for the input 0) and the weight wait beside it
        exponent = Signal(range(max(2, W)), reset_less=True)
        weight = Signal(LOG2_INTERP_BITS)
        m.d.sync += [exponent.eq(Mux(normalised[W - 1], W - 1 - lzc, 0)),
                     weight.eq(fraction[:LOG2_INTERP_BITS])]
        valid, tag = delayed(m, valid, 1, "valid_rom"), delayed(m, tag, 1, "tag_rom", True)
        # the ROM word into registers (the block RAM's output register), the DSP's inputs (the
        # multiplier's registers keep their reset: without it Yosys leaves the DSP's registers
        # in the fabric and estimates a path through the multiplier)
        low = Signal(_LOW_BITS, reset_less=True)
        step = Signal(_STEP_BITS)
        m.d.sync += [low.eq(read.data[:_LOW_BITS]), step.eq(read.data[_LOW_BITS:])]
        exponent = delayed(m, exponent, 1, "exponent_data", reset_less=True)
        weight = delayed(m, weight, 1, "weight_data")
        valid, tag = delayed(m, valid, 1, "valid_data"), delayed(m, tag, 1, "tag_data", True)
        # interpolation product (the DSP's P register)
        product = Signal(_STEP_BITS + LOG2_INTERP_BITS)
        m.d.sync += product.eq(step * weight)
        exponent = delayed(m, exponent, 1, "exponent_product", reset_less=True)
        low = delayed(m, low, 1, "low_product", reset_less=True)
        valid = delayed(m, valid, 1, "valid_product")
        tag = delayed(m, tag, 1, "tag_product", reset_less=True)
        # sum
        m.d.sync += [
            self.o.payload.log2.eq((exponent << LOG2_FRAC_BITS) + low
                                   + (product >> LOG2_INTERP_BITS)),
            self.o.payload.tag.eq(tag),
            self.o.valid.eq(valid),
        ]
        return m


class ReciprocalUnit(wiring.Component):
    """``reciprocal_fixed(M)``: (x, e) with 1/M ~= x * 2^-(32 + e), x in Q1.32.

    Members
    -------
    i : In(stream.Signature(W, always_ready=True))
        M > 0 (M = 0 gives a value callers must not use).
    o : Out(stream.Signature({"x": 34, "exponent": ...}, always_ready=True))

    One input per cycle, no backpressure; latency :attr:`latency`: the normaliser's stages, the
    seed ROM read, two Newton-Raphson steps of two pipelined 33/34 x 34-bit products and a
    subtraction each, the output register (18 cycles for W = 47).
    """

    def __init__(self, input_bits: int = 48):
        check_int("input_bits", input_bits, 1, 128)
        self.input_bits = input_bits
        self.latency = reciprocal_latency(input_bits)
        super().__init__({
            "i": In(stream.Signature(input_bits, always_ready=True)),
            "o": Out(stream.Signature(data.StructLayout({
                "x": RECIP_FRAC_BITS + 2, "exponent": range(max(2, input_bits))}),
                always_ready=True)),
        })

    def elaborate(self, platform):
        m = Module()
        W = self.input_bits
        frac_bits = RECIP_FRAC_BITS
        x_bits = frac_bits + 2
        m.submodules.lut = lut = Memory(shape=frac_bits + 1, depth=len(RECIP_LUT),
                                        init=RECIP_LUT, attrs=ROM_ATTRS)
        seed_port = lut.read_port(transparent_for=())

        normalised, lzc, (valid,) = normalising_shifter(m, self.i.payload, [self.i.valid],
                                                        "normalise")
        b = Cat(_fraction(normalised, frac_bits), Const(1, 1))   # Q1.32 in [1, 2)
        m.d.comb += seed_port.addr.eq(b[frac_bits - RECIP_LUT_BITS:frac_bits])
        exponent = Signal(range(max(2, W)), reset_less=True)
        held_b = Signal(frac_bits + 1, reset_less=True)
        m.d.sync += [exponent.eq(W - 1 - lzc), held_b.eq(b)]
        b, valid = held_b, delayed(m, valid, 1, "valid_seed")
        x = seed_port.data
        two = 2 << frac_bits
        cycles = 0
        for step in range(2):
            product, latency = pipelined_product(m, b, x, f"bx{step}")
            correction = Signal(x_bits, name=f"correction{step}", reset_less=True)
            m.d.sync += correction.eq(two - (product >> frac_bits)[:x_bits])
            x = delayed(m, x, latency + 1, f"x{step}", reset_less=True)
            new_x, new_latency = pipelined_product(m, x, correction, f"xc{step}")
            step_cycles = latency + 1 + new_latency
            x = new_x[frac_bits:frac_bits + x_bits]
            b = delayed(m, b, step_cycles, f"b{step}", reset_less=True)
            cycles += step_cycles
        valid = delayed(m, valid, cycles, "valid_steps")
        exponent = delayed(m, exponent, cycles, "exponent", reset_less=True)
        m.d.sync += [self.o.payload.x.eq(x), self.o.payload.exponent.eq(exponent),
                     self.o.valid.eq(valid)]
        return m
