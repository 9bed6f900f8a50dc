# amaranth: UnusedElaboratable=no
"""Hash pipeline, sampler and Count-Min rows of the JSD engine against the golden model."""

import random

import pytest
from amaranth.sim import Simulator

from kmerspec.golden.countmin import CountMin
from kmerspec.golden.hashes import murmur3_32
from kmerspec.golden.jsd import SAMPLE_SEED
from hw.jsd.countmin import CountMinRows
from hw.jsd.murmur3 import Murmur3Hashes
from hw.jsd.sampler import Sampler

MASK64 = (1 << 64) - 1


def simulate(dut, testbench):
    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(testbench)
    sim.run()


def test_murmur3_hashes_match_golden():
    rng = random.Random(3)
    seeds = [0, 1, 4, SAMPLE_SEED, 0xFFFFFFFF]
    words = [0, MASK64, 0x06C6C6C6C6C6C6C6] + [rng.getrandbits(64) for _ in range(300)]
    schedule = []
    for word in words:
        schedule += [None] * (rng.random() < 0.3) + [word]
    dut = Murmur3Hashes(seeds)
    got = []

    async def testbench(ctx):
        for cycle, word in enumerate(schedule + [None] * (dut.latency + 1)):
            ctx.set(dut.i.valid, word is not None)
            ctx.set(dut.i.payload, word or 0)
            _, _, valid, payload = await ctx.tick().sample(dut.o.valid, dut.o.payload)
            if cycle >= dut.latency:
                assert valid == (schedule[cycle - dut.latency] is not None) \
                    if cycle - dut.latency < len(schedule) else not valid
            if valid:
                got.append((payload.word, [payload.hashes[j] for j in range(len(seeds))]))

    simulate(dut, testbench)
    assert got == [(word, [murmur3_32(word, seed) for seed in seeds]) for word in words]


def test_murmur3_thesis_vectors():
    """Vectors of the thesis extraction (section 3) through the pipeline, seeds 0..4."""
    table = {0x06C6C6C6C6C6C6C6: [0x46CB3C0B, 0x7A5D63B2, 0x9734BCB5, 0x77199151, 0xDFE6DDB3],
             0x0: [0x63852AFC, 0xEA95647D, 0xA1CBA8CE, 0xB2CE147F, 0xC9F3B13D]}
    dut = Murmur3Hashes(range(5))
    got = {}

    async def testbench(ctx):
        for word in list(table) + [None] * (dut.latency + 1):
            ctx.set(dut.i.valid, word is not None)
            ctx.set(dut.i.payload, word or 0)
            _, _, valid, payload = await ctx.tick().sample(dut.o.valid, dut.o.payload)
            if valid:
                got[payload.word] = [payload.hashes[j] for j in range(5)]

    simulate(dut, testbench)
    assert got == table


def test_murmur3_rejects_bad_seeds():
    with pytest.raises(ValueError, match="seed"):
        Murmur3Hashes([1 << 32])
    with pytest.raises(ValueError, match="seeds"):
        Murmur3Hashes([])


@pytest.mark.parametrize("s", [0, 2, 10])
def test_sampler(s):
    rng = random.Random(s)
    slots = 4
    beats = []
    for _ in range(400):
        words = [rng.getrandbits(62) for _ in range(slots)]
        valid = rng.getrandbits(slots)
        beats.append((words, valid, rng.random() < 0.05))
    dut = Sampler(slots, s)
    got = []

    async def testbench(ctx):
        for cycle in range(len(beats) + dut.latency + 1):
            beat = beats[cycle] if cycle < len(beats) else None
            ctx.set(dut.i.valid, beat is not None)
            if beat:
                ctx.set(dut.i.payload, {"words": beat[0], "valid": beat[1], "last": beat[2]})
            _, _, valid, payload = await ctx.tick().sample(dut.o.valid, dut.o.payload)
            if valid:
                got.append(([payload.words[j] for j in range(slots)], payload.valid,
                            payload.last))

    simulate(dut, testbench)
    expected = []
    for words, valid, last in beats:
        keep = sum(1 << j for j in range(slots) if valid >> j & 1
                   and murmur3_32(words[j], SAMPLE_SEED) & ((1 << s) - 1) == 0)
        expected.append((words, keep, last))
    assert got == expected
    if s == 0:
        assert all(beat[1] == keep for beat, (_, keep, _) in zip(beats, got))


def run_countmin(dut, keys, update, idle_probability=0.0, seed=0, clear_first=False):
    """Insert ``keys`` (tuples of row indices); return (estimates, cycles from first to last
    acceptance, counters) and check each estimate arrives ``latency`` cycles after acceptance."""
    rng = random.Random(seed)
    estimates = []
    counters = []
    accept_cycles = []

    async def testbench(ctx):
        ctx.set(dut.plain_update, update == "cm")
        cycle = 0
        pending = list(keys)
        output_cycles = []
        if clear_first:
            ctx.set(dut.clear, 1)
            await ctx.tick()
            ctx.set(dut.clear, 0)
        while pending or len(estimates) < len(keys):
            offer = bool(pending) and rng.random() >= idle_probability
            ctx.set(dut.i.valid, offer)
            if offer:
                ctx.set(dut.i.payload, {"indices": list(pending[0]), "key": len(keys) - len(pending)})
            ready = ctx.get(dut.i.ready)
            _, _, valid, payload = await ctx.tick().sample(dut.o.valid, dut.o.payload)
            if offer and ready:
                pending.pop(0)
                accept_cycles.append(cycle)
            if valid:
                assert payload.key == len(estimates)
                estimates.append(payload.estimate)
                output_cycles.append(cycle)
            cycle += 1
            assert cycle < 10 * len(keys) + (4 << dut.width_bits), "stalled"
        ctx.set(dut.i.valid, 0)
        assert [c - a for a, c in zip(accept_cycles, output_cycles)] == \
            [dut.latency] * len(keys)
        for memory in dut.rows:
            counters.append([ctx.get(memory.data[i]) for i in range(1 << dut.width_bits)])

    simulate(dut, testbench)
    return estimates, accept_cycles[-1] - accept_cycles[0] + 1, counters


def golden_countmin(dut, keys, update):
    model = CountMin(dut.depth, dut.width_bits, dut.counter_bits, list, update)
    return model.insert_all(keys), model.counters


@pytest.mark.parametrize("update", ["cu", "cm"])
def test_countmin_random_with_collisions(update):
    rng = random.Random(11)
    dut = CountMinRows(depth=3, width_bits=3, counter_bits=32, key_bits=16)
    pool = [tuple(rng.randrange(8) for _ in range(3)) for _ in range(12)]
    keys = [rng.choice(pool) for _ in range(1500)]
    estimates, _, counters = run_countmin(dut, keys, update, idle_probability=0.2, seed=1)
    assert (estimates, counters) == golden_countmin(dut, keys, update)


@pytest.mark.parametrize("update", ["cu", "cm"])
def test_countmin_same_key_every_cycle(update):
    """The read-modify-write hazard: the same counters in every cycle must count exactly."""
    dut = CountMinRows(depth=5, width_bits=4, counter_bits=32, key_bits=16)
    keys = [(1, 2, 3, 4, 5)] * 3000
    estimates, cycles, counters = run_countmin(dut, keys, update)
    assert estimates == list(range(1, 3001))
    assert cycles == len(keys), "one insertion per cycle"
    assert (estimates, counters) == golden_countmin(dut, keys, update)


@pytest.mark.parametrize("update", ["cu", "cm"])
def test_countmin_back_to_back_patterns(update):
    """Alternating keys, keys sharing some rows, and bursts: every hazard distance 1 and 2."""
    a, b, c = (1, 1, 1, 1), (1, 2, 1, 2), (3, 2, 1, 0)
    keys = ([a, b] * 300 + [a, a, b, b] * 200 + [a, b, c] * 300 + [c] * 50 + [b, a] * 100)
    dut = CountMinRows(depth=4, width_bits=2, counter_bits=32, key_bits=16)
    estimates, cycles, counters = run_countmin(dut, keys, update)
    assert cycles == len(keys)
    assert (estimates, counters) == golden_countmin(dut, keys, update)


@pytest.mark.parametrize("update", ["cu", "cm"])
def test_countmin_saturates(update):
    rng = random.Random(2)
    dut = CountMinRows(depth=2, width_bits=2, counter_bits=4, key_bits=16)
    keys = [(rng.randrange(4), rng.randrange(4)) for _ in range(200)] + [(0, 0)] * 40
    estimates, _, counters = run_countmin(dut, keys, update, idle_probability=0.1)
    assert max(estimates) == 15
    assert (estimates, counters) == golden_countmin(dut, keys, update)


def test_countmin_clear():
    rng = random.Random(4)
    dut = CountMinRows(depth=2, width_bits=5, counter_bits=32, key_bits=8)
    keys = [(rng.randrange(32), rng.randrange(32)) for _ in range(100)]

    async def testbench(ctx):
        for row, memory in enumerate(dut.rows):
            for index in range(32):
                ctx.set(memory.data[index], 1000 + row + index)
    # dirty memories, clear, then count from zero
    sim = Simulator(dut)
    sim.add_clock(1e-8)

    estimates = []

    async def run(ctx):
        await testbench(ctx)
        ctx.set(dut.clear, 1)
        await ctx.tick()
        ctx.set(dut.clear, 0)
        busy_cycles = 0
        while ctx.get(dut.busy):
            assert not ctx.get(dut.i.ready)
            await ctx.tick()
            busy_cycles += 1
        assert busy_cycles == 32
        for key in keys + [None, None]:
            ctx.set(dut.i.valid, key is not None)
            if key:
                ctx.set(dut.i.payload.indices, list(key))
            _, _, valid, estimate = await ctx.tick().sample(dut.o.valid, dut.o.payload.estimate)
            if valid:
                estimates.append(estimate)

    sim.add_testbench(run)
    sim.run()
    assert estimates == golden_countmin(dut, keys, "cu")[0]


def test_countmin_rejects_bad_parameters():
    with pytest.raises(ValueError, match="depth"):
        CountMinRows(depth=0)
    with pytest.raises(ValueError, match="width_bits"):
        CountMinRows(width_bits=25)
