# amaranth: UnusedElaboratable=no
"""Merge tree and feature unit against the golden model (register-wise max, Z and nz)."""

import random

import pytest

from kmerspec.golden.hll import HllParams, features
from hw.sketch.hll_update import REGISTERS_PER_WORD
from hw.sketch.merge import FeatureAccumulator, MergeTree
from tests.simulation import simulate


def split(word, w):
    return [(word >> (w * slot)) & ((1 << w) - 1) for slot in range(REGISTERS_PER_WORD)]


def join(registers, w):
    return sum(r << (w * slot) for slot, r in enumerate(registers))


@pytest.mark.parametrize("ways,w", [(8, 4), (3, 6), (1, 4)])
def test_merge_tree(ways, w):
    rng = random.Random(ways * 10 + w)
    dut = MergeTree(ways, w)
    sets = [[join([rng.choice([0, rng.randrange(1 << w)]) for _ in range(REGISTERS_PER_WORD)], w)
             for _ in range(ways)] for _ in range(100)]

    async def testbench(ctx):
        got = []
        for cycle in range(len(sets) + dut.latency):
            if cycle < len(sets):
                ctx.set(dut.valid, 1)
                for way, word in enumerate(sets[cycle]):
                    ctx.set(dut.words[way], word)
            else:
                ctx.set(dut.valid, 0)
            await ctx.tick()
            if ctx.get(dut.merged_valid):
                got.append(ctx.get(dut.merged))
        assert got == [join([max(column) for column in zip(*(split(x, w) for x in words))], w)
                       for words in sets]

    simulate(dut, testbench)


@pytest.mark.parametrize("p,w", [(8, 4), (9, 5)])
def test_feature_unit(p, w):
    rng = random.Random(p)
    dut = FeatureAccumulator(p, w)
    params = HllParams(p, w)
    sketches = [[rng.choice([0, 0, rng.randrange(1 << w), (1 << w) - 1]) for _ in range(params.m)]
                for _ in range(3)]

    async def testbench(ctx):
        for registers in sketches:
            ctx.set(dut.clear, 1)
            await ctx.tick()
            ctx.set(dut.clear, 0)
            for start in range(0, params.m, REGISTERS_PER_WORD):
                while rng.random() < 0.3:
                    ctx.set(dut.valid, 0)
                    await ctx.tick()
                ctx.set(dut.valid, 1)
                ctx.set(dut.word, join(registers[start:start + REGISTERS_PER_WORD], w))
                await ctx.tick()
            ctx.set(dut.valid, 0)
            await ctx.tick().repeat(dut.latency)
            assert (ctx.get(dut.z), ctx.get(dut.nz)) == features(registers, params)
            assert ctx.get(dut.words) == params.m // REGISTERS_PER_WORD

    simulate(dut, testbench)
