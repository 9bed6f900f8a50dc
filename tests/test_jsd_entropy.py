# amaranth: UnusedElaboratable=no
"""log2, reciprocal and entropy units against the bit-exact model of kmerspec.golden.fixedpoint."""

import math
import random

import pytest

from kmerspec.golden.entropy import entropy, entropy_fixed, fixed_to_float
from kmerspec.golden.fixedpoint import LOG2_LUT_BITS, log2_fixed, reciprocal_fixed
from hw.jsd.entropy import EntropyUnit
from hw.jsd.log2 import Log2Unit, ReciprocalUnit
from tests.simulation import simulate



def pipeline_outputs(dut, inputs, set_input, read_output):
    """Feed one input per cycle; return the outputs (valid cycles only) in order."""
    got, first_valid = [], []

    async def testbench(ctx):
        for cycle, item in enumerate(list(inputs) + [None] * (dut.latency + 1)):
            ctx.set(dut.i.valid, item is not None)
            if item is not None:
                set_input(ctx, item)
            _, _, valid, payload = await ctx.tick().sample(dut.o.valid, dut.o.payload)
            if valid:
                got.append(read_output(payload))
                first_valid.append(cycle)

    simulate(dut, testbench)
    assert first_valid[:1] == [dut.latency], "the stated latency"
    return got


def edge_values(rng, bits, count):
    """Zero, powers of two and their neighbours, every LUT interval boundary, random values."""
    values = {0, 1, 2, 3, (1 << bits) - 1}
    for exponent in range(bits):
        values.update({1 << exponent, (1 << exponent) - 1, (1 << exponent) + 1})
    for address in range(1 << LOG2_LUT_BITS):
        top = (1 << LOG2_LUT_BITS | address) << (bits - 1 - LOG2_LUT_BITS)
        values.update({top, top - 1, top + 1})
    values.update(rng.getrandbits(rng.randint(1, bits)) for _ in range(count))
    return sorted(value for value in values if 0 <= value < 1 << bits)


@pytest.mark.parametrize("bits", [20, 33, 81])
def test_log2_unit_matches_model(bits):
    values = edge_values(random.Random(bits), bits, 500)
    dut = Log2Unit(bits, tag_bits=bits)
    got = pipeline_outputs(
        dut, values,
        lambda ctx, v: ctx.set(dut.i.payload, {"value": v, "tag": v}),
        lambda payload: (payload.tag, payload.log2))
    assert got == [(value, log2_fixed(value)) for value in values]


@pytest.mark.parametrize("bits", [33, 97])
def test_reciprocal_unit_matches_model(bits):
    values = [v for v in edge_values(random.Random(bits + 1), bits, 500) if v]
    dut = ReciprocalUnit(bits)
    got = pipeline_outputs(dut, values, lambda ctx, v: ctx.set(dut.i.payload, v),
                           lambda payload: (payload.x, payload.exponent))
    assert got == [reciprocal_fixed(value) for value in values]


def run_entropy(dut, genomes, stall_probability=0.0, seed=0):
    """Each genome is a list of beats (lists of counts); returns [(entropy, total)] and the
    cycles each genome's beats took to be accepted."""
    rng = random.Random(seed)
    results, beat_cycles, finish_cycles = [], [], []

    async def testbench(ctx):
        for beats in genomes:
            cycles = 0
            for index, counts in enumerate(beats):
                ctx.set(dut.i.valid, 1)
                ctx.set(dut.i.payload, {"counts": counts, "last": index == len(beats) - 1})
                while not ctx.get(dut.i.ready):
                    await ctx.tick()
                    cycles += 1
                await ctx.tick()
                cycles += 1
            ctx.set(dut.i.valid, 0)
            beat_cycles.append(cycles)
            waited = 0
            while True:
                ready = rng.random() >= stall_probability
                ctx.set(dut.o.ready, ready)
                _, _, valid, payload = await ctx.tick().sample(dut.o.valid, dut.o.payload)
                if valid and not finish_cycles[len(results):]:
                    finish_cycles.append(waited + 1)   # the acceptance edge counts, as in a latency
                waited += 1
                if valid and ready:
                    results.append((payload.entropy, payload.total))
                    break
            ctx.set(dut.o.ready, 0)

    simulate(dut, testbench)
    assert finish_cycles == [dut.finish_cycles] * len(genomes), "the stated finish"
    return results, beat_cycles


def test_entropy_unit_matches_model():
    rng = random.Random(21)
    width = 4
    dut = EntropyUnit(count_bits=32, counts_per_beat=width, max_beats_bits=6)
    genomes = [
        [[4, 2, 1, 1]],                                            # the thesis example, 1.75
        [[0] * width] * 3,                                         # empty: 0
        [[1] * width] * 64,                                        # uniform: log2(256) = 8
        [[(1 << 32) - 1, 0, 0, 0]] + [[1, 0, 0, 0]] * 5,            # one huge count
        [[rng.choice([0, 1, 2, 3, rng.getrandbits(32)]) for _ in range(width)]
         for _ in range(64)],
        [[rng.getrandbits(rng.randint(1, 32)) for _ in range(width)] for _ in range(40)],
    ]
    results, beat_cycles = run_entropy(dut, genomes, stall_probability=0.3, seed=2)
    for beats, (value, total), cycles in zip(genomes, results, beat_cycles):
        counts = [count for beat in beats for count in beat]
        assert (value, total) == (entropy_fixed(counts), sum(counts))
        assert abs(fixed_to_float(value) - entropy(counts)) <= 1e-4
        assert cycles == len(beats), "one beat per cycle"
    assert fixed_to_float(results[0][0]) == pytest.approx(1.75, abs=1e-5)
    assert results[2][0] == 8 << 24


def test_entropy_unit_wide_counts():
    """81-bit counts (the textbook mixture) with 16 counts per beat (a united queue)."""
    rng = random.Random(5)
    dut = EntropyUnit(count_bits=81, counts_per_beat=16, max_beats_bits=3)
    genomes = [[[rng.getrandbits(rng.choice([1, 40, 81])) * (rng.random() < 0.7)
                 for _ in range(16)] for _ in range(8)] for _ in range(3)]
    results, _ = run_entropy(dut, genomes)
    for beats, (value, total) in zip(genomes, results):
        counts = [count for beat in beats for count in beat]
        assert (value, total) == (entropy_fixed(counts), sum(counts))


def test_log2_worst_case_error_is_within_bound():
    """Measured against math.log2 over the edge values of a 33-bit input (the model is
    exact to the RTL, so this is the unit's error)."""
    values = [v for v in edge_values(random.Random(1), 33, 2000) if v]
    worst = max(abs(log2_fixed(v) / (1 << 24) - math.log2(v)) for v in values)
    assert worst <= 3e-6
