# amaranth: UnusedElaboratable=no
"""The Count-Min unit (hw/common/countmin.py) against kmerspec.golden.countmin.CountMin: every
estimate and, at the end, every counter of every row, for both front ends (row indices in, or an
H3 hasher), both clear behaviours, read latency 1 and 2, and both update rules; with the same key
in every cycle (the read-modify-write hazard at every distance), alternating and colliding keys,
random keys with idle cycles, saturation and clearing."""

import random

import pytest

from kmerspec.golden.countmin import CountMin, h3_row_indices
from kmerspec.golden.hashes import h3_seed_words
from hw.common.countmin import CountMinUnit
from hw.motif.h3 import H3Hash
from tests.simulation import offer_each_cycle, simulate, while_busy

KEY_BITS = 20

#: (hash front end, stall_while_clearing): the JSD builder's form and the motif lane's form
FRONT_ENDS = {"indices": (False, True), "h3": (True, False)}


def make_unit(front_end, *, depth=4, width_bits=5, counter_bits=16, read_latency=1, seed=0):
    """(unit, golden row indexer): the unit's rows are indexed by H3 hashes of the key, computed
    in the unit (``h3``) or given to it (``indices``)."""
    hashed, stall = FRONT_ENDS[front_end]
    matrices = [h3_seed_words(KEY_BITS, width_bits, row, seed) for row in range(depth)]
    hasher = H3Hash(KEY_BITS, width_bits, matrices) if hashed else None
    dut = CountMinUnit(depth, width_bits, counter_bits, KEY_BITS, read_latency=read_latency,
                       hasher=hasher, stall_while_clearing=stall)
    return dut, h3_row_indices(matrices)


def table_indexer(table):
    """Row indices chosen by the test: key -> table[key]."""
    return lambda key: list(table[key])



def counters_of(ctx, dut):
    return [[ctx.get(memory.data[i]) for i in range(1 << dut.width_bits)] for memory in dut.rows]


async def insert(ctx, dut, keys, indexer, *, idle_probability=0.0, seed=0):
    """Offer ``keys`` one per cycle (idle cycles at random) until every estimate is out; check that
    each key comes out :attr:`latency` cycles after it was accepted, in order. Returns
    (estimates, cycles from the first to the last acceptance)."""
    rng = random.Random(seed)
    hashed = not hasattr(dut.i.payload, "indices")
    pending = list(keys)
    accepted, accept_cycles, out_cycles, estimates = [], [], [], []
    cycle = 0
    while pending or len(estimates) < len(keys):
        offer = bool(pending) and rng.random() >= idle_probability
        ctx.set(dut.i.valid, offer)
        if offer:
            key = pending[0]
            ctx.set(dut.i.payload, key if hashed else {"indices": indexer(key), "key": key})
        ready = ctx.get(dut.i.ready)
        _, _, valid, payload = await ctx.tick().sample(dut.o.valid, dut.o.payload)
        if offer and ready:
            accepted.append(pending.pop(0))
            accept_cycles.append(cycle)
        if valid:
            assert payload.key == accepted[len(estimates)]
            estimates.append(payload.estimate)
            out_cycles.append(cycle)
        cycle += 1
        assert cycle < 10 * len(keys) + (4 << dut.width_bits), "stalled"
    ctx.set(dut.i.valid, 0)
    assert [out - at for at, out in zip(accept_cycles, out_cycles)] == [dut.latency] * len(keys)
    return estimates, accept_cycles[-1] - accept_cycles[0] + 1


def run_countmin(dut, indexer, keys, update="cu", **options):
    """(estimates, counters, golden estimates, golden counters, cycles) after inserting ``keys``."""
    result = {}

    async def testbench(ctx):
        ctx.set(dut.plain_update, update == "cm")
        result["estimates"], result["cycles"] = await insert(ctx, dut, keys, indexer, **options)
        result["counters"] = counters_of(ctx, dut)

    simulate(dut, testbench)
    golden = CountMin(dut.depth, dut.width_bits, dut.counter_bits, indexer, update)
    expected = golden.insert_all(keys)
    return result["estimates"], result["counters"], expected, golden.counters, result["cycles"]


@pytest.mark.parametrize("update", ["cu", "cm"])
@pytest.mark.parametrize("read_latency", [1, 2])
@pytest.mark.parametrize("front_end", FRONT_ENDS)
def test_same_key_every_cycle(front_end, read_latency, update):
    """The read-modify-write hazard: the same counters in every cycle must count exactly, at one
    insertion per cycle."""
    dut, indexer = make_unit(front_end, depth=5, read_latency=read_latency)
    keys = [0x12345] * 3000
    estimates, counters, expected, golden, cycles = run_countmin(dut, indexer, keys, update)
    assert estimates == expected == list(range(1, 3001))
    assert counters == golden
    assert cycles == len(keys), "one insertion per cycle"


@pytest.mark.parametrize("update", ["cu", "cm"])
@pytest.mark.parametrize("read_latency", [1, 2])
@pytest.mark.parametrize("front_end", FRONT_ENDS)
@pytest.mark.parametrize("idle_probability", [0.0, 0.4])
def test_colliding_keys_with_bubbles(front_end, read_latency, update, idle_probability):
    rng = random.Random(read_latency)
    pool = [rng.getrandbits(KEY_BITS) for _ in range(24)]   # 24 keys on 32 counters: collisions
    keys = []
    for _ in range(1500):
        # runs of one key, alternations and random picks hit every forwarding distance
        keys.extend([rng.choice(pool)] * rng.choice([1, 1, 2, 3, 5]))
    dut, indexer = make_unit(front_end, read_latency=read_latency, seed=7)
    estimates, counters, expected, golden, _ = run_countmin(
        dut, indexer, keys, update, idle_probability=idle_probability, seed=7)
    assert estimates == expected
    assert counters == golden


@pytest.mark.parametrize("update", ["cu", "cm"])
@pytest.mark.parametrize("read_latency", [1, 2])
def test_rows_shared_between_keys(read_latency, update):
    """Keys that share some of their counters (chosen row indices), alternating and in bursts:
    every forwarding distance, one insertion per cycle."""
    table = {0: (1, 1, 1, 1), 1: (1, 2, 1, 2), 2: (3, 2, 1, 0)}
    keys = [0, 1] * 300 + [0, 0, 1, 1] * 200 + [0, 1, 2] * 300 + [2] * 50 + [1, 0] * 100
    dut = CountMinUnit(4, 2, 32, KEY_BITS, read_latency=read_latency, stall_while_clearing=True)
    estimates, counters, expected, golden, cycles = run_countmin(
        dut, table_indexer(table), keys, update)
    assert cycles == len(keys)
    assert (estimates, counters) == (expected, golden)


@pytest.mark.parametrize("update", ["cu", "cm"])
@pytest.mark.parametrize("front_end", FRONT_ENDS)
def test_saturation(front_end, update):
    rng = random.Random(3)
    keys = [rng.choice([1, 2, 3, 0xFFFFF]) for _ in range(400)] + [2] * 40
    dut, indexer = make_unit(front_end, depth=2, width_bits=3, counter_bits=4)
    estimates, counters, expected, golden, _ = run_countmin(dut, indexer, keys, update,
                                                            idle_probability=0.1)
    assert estimates == expected and max(expected) == 15
    assert counters == golden


@pytest.mark.parametrize("read_latency", [1, 2])
@pytest.mark.parametrize("stall", [True, False])
@pytest.mark.parametrize("hashed", [True, False])
def test_clear(hashed, stall, read_latency):
    """Dirty counters, a clear (2^width_bits busy cycles; with ``stall_while_clearing`` the input
    is not ready meanwhile, else keys offered then are dropped), then counting from zero."""
    matrices = [h3_seed_words(KEY_BITS, 5, row, 1) for row in range(2)]
    indexer = h3_row_indices(matrices)
    dut = CountMinUnit(2, 5, 32, KEY_BITS, read_latency=read_latency,
                       hasher=H3Hash(KEY_BITS, 5, matrices) if hashed else None,
                       stall_while_clearing=stall)
    rng = random.Random(4)
    keys = [rng.getrandbits(KEY_BITS) for _ in range(100)]
    result = {}

    async def testbench(ctx):
        for row, memory in enumerate(dut.rows):
            for index in range(32):
                ctx.set(memory.data[index], 1000 + row + index)
        ctx.set(dut.clear, 1)
        await ctx.tick()
        ctx.set(dut.clear, 0)
        busy_cycles = 0
        while ctx.get(dut.busy):
            assert ctx.get(dut.i.ready) == (not stall)
            # offered while clearing: refused (stall) or dropped; either way never counted
            ctx.set(dut.i.valid, 1)
            ctx.set(dut.i.payload, keys[0] if hashed else {"indices": indexer(keys[0]),
                                                          "key": keys[0]})
            _, _, valid = await ctx.tick().sample(dut.o.valid)
            assert not valid
            busy_cycles += 1
        ctx.set(dut.i.valid, 0)
        await ctx.tick().repeat(dut.latency + 1)
        assert busy_cycles == 32
        assert counters_of(ctx, dut) == [[0] * 32, [0] * 32]
        result["estimates"], _ = await insert(ctx, dut, keys, indexer, idle_probability=0.2)
        result["counters"] = counters_of(ctx, dut)

    simulate(dut, testbench)
    golden = CountMin(2, 5, 32, indexer, "cu")
    assert result["estimates"] == golden.insert_all(keys)
    assert result["counters"] == golden.counters


def test_latency():
    # hash front end + data latency (the read register, with read_latency 2 the BRAM output
    # register, the memory word's register, stage P) + the update stage U + the estimate stage E
    assert make_unit("indices")[0].latency == 5
    assert make_unit("indices", read_latency=2)[0].latency == 6
    assert make_unit("h3")[0].latency == 5 + H3Hash.latency
    assert make_unit("h3", read_latency=2)[0].latency == 6 + H3Hash.latency


def test_rejects_bad_parameters():
    with pytest.raises(ValueError, match="depth"):
        CountMinUnit(0, 14, 32, 32)
    with pytest.raises(ValueError, match="width_bits"):
        CountMinUnit(5, 25, 32, 32)
    with pytest.raises(ValueError, match="width_bits"):
        CountMinUnit(5, 0, 32, 32)
    with pytest.raises(ValueError, match="counter_bits"):
        CountMinUnit(5, 14, 33, 32)
    with pytest.raises(ValueError, match="read_latency"):
        CountMinUnit(1, 3, 8, 8, read_latency=3)
    with pytest.raises(ValueError, match="hasher"):
        CountMinUnit(2, 3, 8, 8, hasher=H3Hash(8, 4, [h3_seed_words(8, 4, 0)] * 2))


def distance_run(dut, distance, update, count=120):
    """Key 0 every ``distance`` cycles, in between distinct fillers (keys 1 .. distance - 1) on
    counters of their own, so every read-modify-write hazard is at exactly that distance. The
    counters start unequal (some one below saturation, 6-bit counters), so the update rule and
    the saturation decide per row. Returns (estimates, counters, golden estimates, golden
    counters)."""
    rng = random.Random(distance)
    size = 1 << dut.width_bits
    table = {key: tuple([key] * dut.depth) for key in range(distance)}
    preset = [[rng.choice([0, 3, 5, 6, 60, 62]) for _ in range(size)] for _ in range(dut.depth)]
    keys = list(range(distance)) * (count // distance)
    result = {}

    async def testbench(ctx):
        for row, memory in enumerate(dut.rows):
            for index in range(size):
                ctx.set(memory.data[index], preset[row][index])
        ctx.set(dut.plain_update, update == "cm")
        result["estimates"], _ = await insert(ctx, dut, keys, table_indexer(table))
        result["counters"] = counters_of(ctx, dut)

    simulate(dut, testbench)
    golden = CountMin(dut.depth, dut.width_bits, dut.counter_bits, table_indexer(table), update)
    golden.counters = [list(row) for row in preset]
    expected = golden.insert_all(keys)
    return result["estimates"], result["counters"], expected, golden.counters


def distance_unit(read_latency, unit_class=CountMinUnit):
    return unit_class(3, 3, 6, KEY_BITS, read_latency=read_latency, stall_while_clearing=True)


@pytest.mark.parametrize("update", ["cu", "cm"])
@pytest.mark.parametrize("read_latency", [1, 2])
def test_each_forwarding_distance_alone(read_latency, update):
    """Every forwarded distance alone, and the first one the memory read covers."""
    distances = distance_unit(read_latency).forwarded_distances
    for distance in distances + (distances[-1] + 1,):
        estimates, counters, expected, golden = distance_run(distance_unit(read_latency),
                                                             distance, update)
        assert (estimates, counters) == (expected, golden), f"distance {distance}"


@pytest.mark.parametrize("read_latency", [1, 2])
def test_without_one_forwarding_distance_fails(read_latency):
    """A mutant that does not forward at one distance must get that distance's run wrong (the
    counters or the estimates): the test above can fail."""
    distances = distance_unit(read_latency).forwarded_distances
    for distance in distances:
        class Mutant(CountMinUnit):
            forwarded_distances = tuple(d for d in distances if d != distance)
        estimates, counters, expected, golden = distance_run(distance_unit(read_latency, Mutant),
                                                             distance, "cu")
        assert (estimates, counters) != (expected, golden), f"distance {distance}"


def bank_program(rng, pool, length, banks=2):
    """(bank, key) insertions that hit the forwarding at every distance within a bank and
    across the banks: the same key in another bank every cycle (a forward across banks would
    count it twice), runs in one bank, and random picks."""
    program = []
    while len(program) < length:
        key = rng.choice(pool)
        shape = rng.choice(["alternate", "run", "random"])
        if shape == "alternate":
            first = rng.randrange(banks)
            program += [((first + step) % banks, key) for step in range(rng.choice([2, 3, 6]))]
        elif shape == "run":
            program += [(rng.randrange(banks), key)] * rng.choice([1, 2, 4, 7])
        else:
            program.append((rng.randrange(banks), rng.choice(pool)))
    return program[:length]


@pytest.mark.parametrize("update", ["cu", "cm"])
@pytest.mark.parametrize("read_latency,banks", [(1, 2), (2, 2), (2, 5)])
def test_banks_share_the_pipeline(read_latency, banks, update):
    """Banks behind one insertion pipeline (the JSD builder: two per lane, every lane's behind
    one pipeline): interleaved insertions count in their own bank only, every estimate and
    counter exact against one golden Count-Min per bank; then the last bank clears while bank 0
    goes on counting at one insertion per cycle, and the cleared bank counts from zero after
    it."""
    rng = random.Random(11 + read_latency + banks)
    matrices = [h3_seed_words(KEY_BITS, 5, row, 2) for row in range(4)]
    indexer = h3_row_indices(matrices)
    dut = CountMinUnit(4, 5, 32, KEY_BITS, read_latency=read_latency,
                       stall_while_clearing=True, banks=banks)
    cleared = banks - 1
    pool = [rng.getrandbits(KEY_BITS) for _ in range(20)]
    before = bank_program(rng, pool, 700 * banks, banks)
    during = [(0, rng.choice(pool)) for _ in range(40)]        # the last bank clears meanwhile
    after = bank_program(rng, pool, 300 * banks, banks)
    got = {"estimates": []}

    def payloads(insertions):
        return [{"indices": indexer(key), "key": key, "bank": bank} for bank, key in insertions]

    async def collector(ctx):
        async for _, _, valid, payload in ctx.tick().sample(dut.o.valid, dut.o.payload):
            if valid:
                got["estimates"].append(payload.estimate)

    async def testbench(ctx):
        ctx.set(dut.plain_update, update == "cm")
        await offer_each_cycle(ctx, dut.i, payloads(before), 0.2, rng)
        await ctx.tick().repeat(dut.latency)              # no insertion in flight
        got["before the clear"] = [[ctx.get(row.data[i]) for i in range(32)]
                                   for row in dut.bank_rows[cleared]]
        await while_busy(ctx, dut.clear, 1 << cleared, dut.busy,
                         offer_each_cycle(ctx, dut.i, payloads(during), 0.0, rng))
        await offer_each_cycle(ctx, dut.i, payloads(after), 0.3, rng)
        await ctx.tick().repeat(dut.latency + 1)
        got["counters"] = [[[ctx.get(row.data[i]) for i in range(32)] for row in rows]
                           for rows in dut.bank_rows]

    simulate(dut, testbench, background=(collector,))
    golden = [CountMin(4, 5, 32, indexer, update) for _ in range(banks)]
    expected = [golden[bank].insert(key) for bank, key in before]
    assert got["before the clear"] == golden[cleared].counters
    golden[cleared] = CountMin(4, 5, 32, indexer, update)
    expected += [golden[bank].insert(key) for bank, key in during + after]
    assert got["estimates"] == expected
    assert got["counters"] == [countmin.counters for countmin in golden]
