# amaranth: UnusedElaboratable=no
"""Union + feature unit of the similarity kernel against the golden features (Amaranth simulator):
every output equals kmerspec.golden.hll.features of the union, one slot pair per cycle."""

import random

import pytest
from amaranth.sim import Simulator

from kmerspec.golden.hll import HllParams, features
from hw.jacc_similarity import FeatureUnit


def _pack(registers, field_bits):
    return sum(r << (i * field_bits) for i, r in enumerate(registers))


def _random_slot(rng, n, w):
    top = (1 << w) - 1
    kind = rng.random()
    if kind < 0.15:
        return [0] * n
    if kind < 0.25:
        return [top] * n
    return [rng.choice([0, 0, 1, 1, 2, 3, rng.randrange(top + 1)]) for _ in range(n)]


def _golden(cases, w):
    """(z, nz) of the golden model for the union of each slot pair."""
    return [features([max(a, b) for a, b in zip(x, y)], HllParams(8, w)) for x, y in cases]


def _run(dut, cases, field_bits):
    """(z, nz) of each slot pair, one pair presented per cycle (throughput 1)."""
    got = []

    async def drive(ctx):
        for x, y in cases:
            ctx.set(dut.slot, _pack(x, field_bits))
            ctx.set(dut.other, _pack(y, field_bits))
            await ctx.tick()

    async def collect(ctx):
        await ctx.tick().repeat(dut.latency)
        for _ in cases:
            got.append((ctx.get(dut.z), ctx.get(dut.nz)))
            await ctx.tick()

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(drive)
    sim.add_testbench(collect)
    sim.run()
    return got


@pytest.mark.parametrize("registers, w, field_bits", [(32, 4, 4), (64, 4, 4), (1, 4, 4),
                                                     (8, 5, 8), (16, 8, 8)])
def test_feature_unit_matches_golden(registers, w, field_bits):
    rng = random.Random(registers * 131 + w)
    dut = FeatureUnit(registers, w, field_bits)
    cases = [(_random_slot(rng, registers, w), _random_slot(rng, registers, w)) for _ in range(60)]
    assert _run(dut, cases, field_bits) == _golden(cases, w)


def _adversarial_pairs(n, w):
    """Slot pairs where a wrong union, rank decode, count or carry shows: all ranks equal
    (each rank), all zero, all maximal, one slot empty, the max decided by the high part against
    the low bit (and the other way), every rank present at once, one odd register out."""
    top = (1 << w) - 1
    pairs = [([r] * n, [r] * n) for r in range(top + 1)]
    pairs += [([0] * n, [0] * n), ([top] * n, [top] * n), ([top] * n, [0] * n),
              ([0] * n, [top] * n)]
    even = [(2 * i) % (top + 1) for i in range(n)]
    odd = [(2 * i + 1) % (top + 1) for i in range(n)]
    pairs += [(even, odd), (odd, even),
              ([2] * n, [1] * n), ([1] * n, [2] * n), ([5] * n, [6] * n), ([6] * n, [5] * n)]
    pairs += [([i % (top + 1) for i in range(n)], [(top - i) % (top + 1) for i in range(n)]),
              ([0] + [top] * (n - 1), [0] * n), ([top] * (n - 1) + [0], [0] * n)]
    return pairs


@pytest.mark.parametrize("registers, w", [(32, 4), (16, 5)])
def test_feature_unit_adversarial_slots(registers, w):
    dut = FeatureUnit(registers, w)
    cases = _adversarial_pairs(registers, w)
    expected = _golden(cases, w)
    assert expected[0] == (registers << ((1 << w) - 1), registers)    # all zero: nz = n
    assert _run(dut, cases, w) == expected


def test_feature_unit_rejects_bad_parameters():
    with pytest.raises(ValueError, match="registers must be a power of two, not 3"):
        FeatureUnit(3)
    with pytest.raises(ValueError, match="w must be an integer from 4 to 8, not 9"):
        FeatureUnit(4, 9, 16)
    with pytest.raises(ValueError, match="field_bits must be an integer >= w = 5, not 4"):
        FeatureUnit(4, 5, 4)
