# amaranth: UnusedElaboratable=no
"""H3 hash unit and the CM-CU row set against the golden model, state compared counter for
counter."""

import random

import pytest
from amaranth.sim import Simulator

from kmerspec.golden.countmin import CountMin, h3_row_indices
from kmerspec.golden.hashes import h3, h3_seed_words
from hw.motif.countmin import CountMinCU
from hw.motif.h3 import H3Hash


def simulate(dut, testbench):
    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(testbench)
    sim.run()


@pytest.mark.parametrize("key_bits,out_bits", [(20, 14), (40, 6), (64, 14), (2, 3)])
def test_h3_matches_golden(key_bits, out_bits):
    matrices = [h3_seed_words(key_bits, out_bits, row) for row in range(3)]
    dut = H3Hash(key_bits, out_bits, matrices)
    rng = random.Random(key_bits)
    keys = [0, (1 << key_bits) - 1] + [rng.getrandbits(key_bits) for _ in range(300)]

    async def testbench(ctx):
        for key in keys:
            ctx.set(dut.key, key)
            await ctx.tick()
            assert [ctx.get(dut.hashes[row]) for row in range(3)] == \
                [h3(key, matrix) for matrix in matrices], hex(key)

    simulate(dut, testbench)


def test_h3_rejects_bad_seed_matrix():
    with pytest.raises(ValueError, match="seed_matrices"):
        H3Hash(4, 2, [[0, 1, 2, 4]])
    with pytest.raises(ValueError, match="key_bits"):
        H3Hash(0, 2, [[]])


def run_countmin(keys, *, key_bits=20, cw=5, counter_bits=16, depth=4, read_latency=1,
                 idle_probability=0.0, seed=0, clear_first=False):
    """Insert ``keys`` (None = idle cycle); return (estimates, rtl counters, golden model)."""
    matrices = [h3_seed_words(key_bits, cw, row, seed) for row in range(depth)]
    dut = CountMinCU(key_bits, cw, counter_bits, matrices, read_latency=read_latency)
    golden = CountMin(depth, cw, counter_bits, h3_row_indices(matrices), "cu")
    rng = random.Random(seed)
    schedule = []
    for key in keys:
        while rng.random() < idle_probability:
            schedule.append(None)
        schedule.append(key)
    schedule += [None] * (dut.latency + 1)
    estimates = []
    counters = []

    async def testbench(ctx):
        if clear_first:
            ctx.set(dut.clear, 1)
            await ctx.tick()
            ctx.set(dut.clear, 0)
            while ctx.get(dut.busy):
                await ctx.tick()
        outputs = []
        for key in schedule:
            ctx.set(dut.i.valid, key is not None)
            ctx.set(dut.i.payload, key or 0)
            _, _, valid, payload = await ctx.tick().sample(dut.o.valid, dut.o.payload)
            outputs.append((payload.word, payload.estimate) if valid else None)
        for index, key in enumerate(schedule[:len(schedule) - dut.latency]):
            out = outputs[index + dut.latency]
            assert (out is None) == (key is None), index
            if key is not None:
                assert out[0] == key
                estimates.append(out[1])
        counters.extend([ctx.get(memory.data[i]) for i in range(1 << cw)] for memory in dut.rows)

    simulate(dut, testbench)
    expected = [golden.insert(key) for key in keys]
    return estimates, expected, counters, golden.counters


@pytest.mark.parametrize("read_latency", [1, 2])
def test_same_key_every_cycle(read_latency):
    keys = [0x12345] * 3000
    estimates, expected, counters, golden = run_countmin(keys, read_latency=read_latency)
    assert estimates == expected == list(range(1, 3001))
    assert counters == golden


@pytest.mark.parametrize("read_latency", [1, 2])
@pytest.mark.parametrize("idle_probability", [0.0, 0.4])
def test_colliding_keys_with_bubbles(read_latency, idle_probability):
    rng = random.Random(read_latency)
    pool = [rng.getrandbits(20) for _ in range(24)]   # 24 keys on 32 counters: many collisions
    keys = []
    for _ in range(3000):
        # runs of one key, alternations and random picks hit every forwarding distance
        keys.extend([rng.choice(pool)] * rng.choice([1, 1, 2, 3, 5]))
    estimates, expected, counters, golden = run_countmin(
        keys, read_latency=read_latency, idle_probability=idle_probability, seed=7)
    assert estimates == expected
    assert counters == golden


def test_saturation():
    rng = random.Random(3)
    keys = [rng.choice([1, 2, 3, 0xFFFFF]) for _ in range(400)]
    estimates, expected, counters, golden = run_countmin(keys, counter_bits=4, cw=3)
    assert estimates == expected and max(expected) == 15
    assert counters == golden


def test_clear_zeroes_counters():
    matrices = [h3_seed_words(8, 3, row) for row in range(2)]
    dut = CountMinCU(8, 3, 8, matrices)

    async def testbench(ctx):
        for key in [5, 5, 9, 200]:
            ctx.set(dut.i.valid, 1)
            ctx.set(dut.i.payload, key)
            await ctx.tick()
        ctx.set(dut.i.valid, 0)
        await ctx.tick().repeat(dut.latency + 1)
        assert any(ctx.get(row.data[i]) for row in dut.rows for i in range(8))
        ctx.set(dut.clear, 1)
        await ctx.tick()
        ctx.set(dut.clear, 0)
        cycles = 0
        while ctx.get(dut.busy):
            await ctx.tick()
            cycles += 1
        assert cycles == 8
        assert not any(ctx.get(row.data[i]) for row in dut.rows for i in range(8))

    simulate(dut, testbench)


def test_rejects_bad_parameters():
    with pytest.raises(ValueError, match="read_latency"):
        CountMinCU(8, 3, 8, [h3_seed_words(8, 3, 0)], read_latency=3)
    with pytest.raises(ValueError, match="cw"):
        CountMinCU(8, 0, 8, [h3_seed_words(8, 3, 0)])
