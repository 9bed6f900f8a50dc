# amaranth: UnusedElaboratable=no
"""The pipelining helpers of hw/common/pipeline.py against Python integers: exact results, and
at the latency they return."""

import random

import pytest
from amaranth.hdl import Elaboratable, Module, Signal

from hw.common.pipeline import (CHUNK_BITS, ChunkedAccumulator, LatencyOnly, pipelined_add,
                                pipelined_product, product_latency, product_tiles)
from tests.simulation import simulate


class _Harness(Elaboratable):
    """Operands in, the helper's result out; ``build(m, a, b)`` returns (result, latency)."""

    def __init__(self, a_bits, b_bits, build):
        self.a, self.b = Signal(a_bits), Signal(b_bits)
        self.result = Signal(a_bits + b_bits + 1)
        self.build = build

    def elaborate(self, platform):
        m = Module()
        result, _ = self.build(m, self.a, self.b)
        m.d.comb += self.result.eq(result)
        return m


def run_operands(a_bits, b_bits, build, pairs):
    """One operand pair per cycle; the result of pair k read ``latency`` cycles later (the
    latency the helper returns, learnt from a run that builds nothing)."""
    _, latency = build(LatencyOnly(), Signal(a_bits), Signal(b_bits))
    dut = _Harness(a_bits, b_bits, build)
    got = []

    async def testbench(ctx):
        schedule = list(pairs) + [(0, 0)] * latency
        for cycle, (a, b) in enumerate(schedule):
            ctx.set(dut.a, a)
            ctx.set(dut.b, b)
            if cycle >= latency:
                got.append(ctx.get(dut.result))
            await ctx.tick()

    simulate(dut, testbench)
    return got, latency


def edge_operands(rng, bits, count):
    values = [0, 1, (1 << bits) - 1, 1 << (bits - 1)]
    values += [rng.getrandbits(bits) for _ in range(count)]
    return values


@pytest.mark.parametrize("a_bits,b_bits", [(17, 16), (33, 33), (34, 34), (76, 34), (81, 31),
                                           (128, 34)])
def test_pipelined_product_is_exact(a_bits, b_bits):
    rng = random.Random(a_bits * 1000 + b_bits)
    pairs = list(zip(edge_operands(rng, a_bits, 60), edge_operands(rng, b_bits, 60)))
    got, latency = run_operands(a_bits, b_bits,
                                lambda m, a, b: pipelined_product(m, a, b, "product"), pairs)
    assert got == [a * b for a, b in pairs]
    assert latency == product_latency(a_bits, b_bits)
    assert all(a_width <= 26 and b_width <= 17
               for _, a_width, _, b_width in product_tiles(a_bits, b_bits))


@pytest.mark.parametrize("bits", [20, CHUNK_BITS, CHUNK_BITS + 1, 76, 128])
def test_pipelined_add_is_exact(bits):
    rng = random.Random(bits)
    pairs = list(zip(edge_operands(rng, bits, 80), edge_operands(rng, bits, 80)))
    got, latency = run_operands(bits, bits, lambda m, a, b: pipelined_add(m, a, b, "sum"), pairs)
    assert got == [a + b for a, b in pairs]
    assert latency == -(-(bits + 1) // CHUNK_BITS)


@pytest.mark.parametrize("bits", [40, 128])
def test_chunked_accumulator_sums_one_addend_per_cycle(bits):
    """Back-to-back addends whose carries ripple through every chunk, gaps, then a clear."""
    rng = random.Random(bits)
    m = Module()
    enable, addend, clear = Signal(), Signal(bits), Signal()
    accumulator = ChunkedAccumulator(bits + 4, "acc")
    accumulator.add(m, enable, addend, clear)
    runs = [[(1 << bits) - 1] * 9, [1] * 3 + [(1 << bits) - 1] * 2,
            [rng.getrandbits(bits) for _ in range(12)]]
    sums = []

    async def testbench(ctx):
        for addends in runs:
            for value in addends:
                if rng.random() < 0.3:
                    await ctx.tick()
                ctx.set(enable, 1)
                ctx.set(addend, value)
                await ctx.tick()
                ctx.set(enable, 0)
            await ctx.tick().repeat(accumulator.settle + 1)
            sums.append(ctx.get(accumulator.value))
            ctx.set(clear, 1)
            await ctx.tick()
            ctx.set(clear, 0)

    simulate(m, testbench)
    assert sums == [sum(addends) % (1 << (bits + 4)) for addends in runs]


@pytest.mark.parametrize("constant", [8256, 4097, 262208, 12352, 64, 1, 0, 0xFFFFFFFF])
def test_constant_product(constant):
    """The chunk kernels' record products (hw/vitis/chunk_kernel.py): ``value * constant`` mod
    2^32 from shifted copies, at the latency it returns, for two-bit record sizes and others."""
    from hw.vitis.chunk_kernel import constant_product

    rng = random.Random(constant)
    values = [0, 1, 0xFFFFFFFF, 0x80000000] + [rng.getrandbits(32) for _ in range(40)]
    got, _ = run_operands(32, 1, lambda m, a, b: constant_product(m, a, constant, 32, "p"),
                          [(value, 0) for value in values])
    assert got == [value * constant % (1 << 32) for value in values]


@pytest.mark.parametrize("bits", [1, 3, 4, 20])
def test_tree_equal(bits):
    """``a == b`` for equal pairs and pairs that differ in one bit (every position: each chunk and
    the last short one)."""
    from hw.common.pipeline import delayed, tree_equal

    rng = random.Random(bits)
    pairs = []
    for _ in range(8):
        a = rng.getrandbits(bits)
        pairs.append((a, a))
        pairs += [(a, a ^ (1 << bit)) for bit in range(bits)]

    def build(m, a, b):   # registered, as every user does (the harness clocks the results)
        return delayed(m, tree_equal(m, a, b, "t"), 1, "equal"), 1

    got, _ = run_operands(bits, bits, build, pairs)
    assert got == [int(a == b) for a, b in pairs]
