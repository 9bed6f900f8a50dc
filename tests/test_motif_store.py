# amaranth: UnusedElaboratable=no
"""Heavy-hitter store against kmerspec.golden.motif.HeavyHitterStore, every way and pointer
compared."""

import random

import pytest

from kmerspec.golden.hashes import h3_seed_words
from kmerspec.golden.motif import HeavyHitterStore as GoldenStore
from hw.motif.store import HeavyHitterStore, StoreOp
from tests.simulation import simulate, with_idle_cycles


def golden_state(store):
    return [([(store.valid[s][w], store.kmers[s][w] if store.valid[s][w] else None,
               store.values[s][w], store.control_counts[s][w]) for w in range(store.ways)],
             store.next_victim[s]) for s in range(store.sets)]


def rtl_row_state(row, ways):
    return ([(bool(row.ways[w].valid), row.ways[w].kmer if row.ways[w].valid else None,
              row.ways[w].value, row.ways[w].control_count) for w in range(ways)],
            row.next_victim)


def run_store(ops, *, key_bits=12, sets=4, ways=3, idle_probability=0.0, seed=0, preload=None):
    """Apply ``ops`` ((op, word, value), None = an idle cycle); return (rtl state, readback,
    golden).
    ``preload(golden)`` fills the golden store first; the RTL memory starts from the same state."""
    matrix = h3_seed_words(key_bits, (sets - 1).bit_length(), 255, seed)
    dut = HeavyHitterStore(key_bits, 16, sets, ways, matrix)
    golden = GoldenStore(sets, ways, matrix)
    if preload:
        preload(golden)
    initial = golden_state(golden)
    schedule = with_idle_cycles(ops, idle_probability, random.Random(seed))
    state = []
    readback = []

    async def testbench(ctx):
        for s, (entries, pointer) in enumerate(initial):
            ctx.set(dut.memory.data[s], {
                "ways": [{"valid": valid, "kmer": kmer or 0, "value": value, "control_count": count}
                         for valid, kmer, value, count in entries],
                "next_victim": pointer})
        for item in schedule:
            ctx.set(dut.i.valid, item is not None)
            if item is not None:
                ctx.set(dut.i.payload, {"op": item[0], "word": item[1], "value": item[2]})
            await ctx.tick()
        ctx.set(dut.i.valid, 0)
        await ctx.tick().repeat(dut.latency)
        state.extend(rtl_row_state(ctx.get(dut.memory.data[s]), ways) for s in range(sets))
        for s in range(sets):
            ctx.set(dut.readback_address, s)
            await ctx.tick()
            readback.append(rtl_row_state(ctx.get(dut.readback_row), ways))

    simulate(dut, testbench)
    for op, word, value in filter(None, ops):
        if op == StoreOp.RECORD:
            golden.record(word, value)
        else:
            golden.count_control(word)
    return state, readback, golden_state(golden)


# up to 4 ways the store takes its miss ways from lookup tables, from 8 ways on from logic
@pytest.mark.parametrize("idle_probability", [0.0, 0.5])
@pytest.mark.parametrize("sets,ways", [(4, 3), (8, 4), (1, 2), (2, 8)])
def test_random_operations(sets, ways, idle_probability):
    rng = random.Random(sets * 10 + ways)
    pool = [rng.getrandbits(12) for _ in range(4 * sets * ways)]
    ops = []
    for _ in range(1500):
        op = StoreOp.RECORD if rng.random() < 0.5 else StoreOp.COUNT
        word = rng.choice(pool)
        # repeats back to back exercise the forwarding of the set written one cycle earlier
        ops.extend([(op, word, rng.getrandbits(16))] * rng.choice([1, 1, 2, 3]))
    state, readback, expected = run_store(ops, sets=sets, ways=ways,
                                          idle_probability=idle_probability)
    assert state == expected
    assert readback == expected
    assert any(pointer for _, pointer in expected)   # evictions happened


def test_same_kmer_counted_every_cycle():
    ops = [(StoreOp.RECORD, 7, 100)] + [(StoreOp.COUNT, 7, 0)] * 2000
    state, _, expected = run_store(ops)
    assert state == expected
    assert any(way[3] == 2000 for ways, _ in state for way in ways)


@pytest.mark.parametrize("gap", [0, 1, 2, 3])
@pytest.mark.parametrize("ways", [1, 2, 3, 8])
def test_set_fills_and_evicts_back_to_back(ways, gap):
    """Distinct k-mers recorded into one set, ``gap`` idle cycles apart: the record that fills
    the set and the evictions right after it (the miss way and the pointer of a row written one
    or two cycles earlier)."""
    ops = []
    for word in range(1, 3 * ways + 3):
        ops += [(StoreOp.RECORD, word, word)] + [None] * gap
    state, readback, expected = run_store(ops, sets=1, ways=ways)
    assert state == readback == expected


@pytest.mark.parametrize("gap", [0, 1, 2, 3])
def test_control_count_saturates(gap):
    """COUNTs of a k-mer whose count is 2^32 - 2 stop at 2^32 - 1, one to three cycles apart
    (the forwarded rows of t-1 and t-2 and the memory's own)."""
    def preload(golden):
        for word in (5, 9):
            golden.record(word, 1)
            s, way = golden.find(word)
            golden.control_counts[s][way] = (1 << 32) - 2
    ops = []
    for _ in range(4):
        ops += [(StoreOp.COUNT, 5, 0)] + [None] * gap + [(StoreOp.COUNT, 9, 0)] + [None] * gap
    state, readback, expected = run_store(ops, sets=2, ways=2, preload=preload)
    assert state == readback == expected
    assert sorted(way[3] for ways, _ in state for way in ways if way[0]) == [(1 << 32) - 1] * 2


def test_rejects_bad_geometry():
    with pytest.raises(ValueError, match="sets must be a power of two"):
        HeavyHitterStore(8, 16, 6, 4, [0] * 8)
    with pytest.raises(ValueError, match="ways"):
        HeavyHitterStore(8, 16, 4, 0, [0] * 8)
