# amaranth: UnusedElaboratable=no
"""PQA insert network and drain port against kmerspec.golden.pqa, including ties and hazards."""

import random

import pytest
from amaranth.hdl import Fragment

from kmerspec.golden.pqa import Pqa
from hw.jsd.pqa import PqaInsert
from tests.simulation import offer_each_cycle, simulate, while_busy


def entries(views):
    """(tag, value) of stored or drained entries: one that is not occupied is empty, (0, 0),
    whatever its stale tag and value; an occupied one has a value."""
    assert all(entry.value != 0 for entry in views if entry.occupied)
    return [(entry.tag, entry.value) if entry.occupied else (0, 0) for entry in views]


def run_pqa(dut, rounds, idle_probability=0.0, stall_probability=0.0, seed=0):
    """``rounds``: lists of (hash, value) insertions; each round is followed by a drain.
    Returns per round (memory state before the drain, drained queues, insertion cycles)."""
    rng = random.Random(seed)
    results = []

    async def testbench(ctx):
        for inserts in rounds:
            pending = list(inserts)
            cycles = 0
            while pending:
                offer = rng.random() >= idle_probability
                ctx.set(dut.i.valid, offer)
                if offer:
                    ctx.set(dut.i.payload, {"hash": pending[0][0], "value": pending[0][1]})
                assert ctx.get(dut.i.ready)
                await ctx.tick()
                cycles += 1
                if offer:
                    pending.pop(0)
            ctx.set(dut.i.valid, 0)
            for _ in range(dut.latency):
                await ctx.tick()
            state = [entries([ctx.get(slot.data[q]) for slot in dut.slots])
                     for q in range(1 << dut.R)]
            ctx.set(dut.drain, 1)
            await ctx.tick()
            ctx.set(dut.drain, 0)
            drained = []
            while True:
                ready = rng.random() >= stall_probability
                ctx.set(dut.o.ready, ready)
                assert not ctx.get(dut.i.ready)
                _, _, valid, payload = await ctx.tick().sample(dut.o.valid, dut.o.payload)
                if valid and ready:
                    drained.append(entries(payload.entries))
                    if payload.last:
                        break
            while ctx.get(dut.busy):
                await ctx.tick()
            results.append((state, drained, cycles))
        cleared = [[ctx.get(slot.data[q]).occupied for slot in dut.slots]
                   for q in range(1 << dut.R)]
        assert not any(occupied for queue in cleared for occupied in queue)

    simulate(dut, testbench)
    return results


def golden_queues(R, n, inserts):
    model = Pqa(R, n)
    for h, value in inserts:
        model.insert_hash(h, value)
    return model.queues


def check(dut, rounds, **kwargs):
    for inserts, (state, drained, cycles) in zip(rounds, run_pqa(dut, rounds, **kwargs)):
        expected = golden_queues(dut.R, dut.n, inserts)
        assert state == expected
        assert drained == expected
        if not kwargs.get("idle_probability"):
            assert cycles == len(inserts), "one insertion per cycle"


def random_inserts(rng, R, count, tags, max_value):
    return [(rng.randrange(tags) << R | rng.randrange(1 << R), rng.randint(1, max_value))
            for _ in range(count)]


@pytest.mark.parametrize("n", [1, 4, 8])
def test_pqa_random_with_ties(n):
    """Few tags and values 1..5: hits, evictions, discards and ties on every path."""
    rng = random.Random(n)
    R = 2
    dut = PqaInsert(R, n)
    rounds = [random_inserts(rng, R, 800, 12, 5), random_inserts(rng, R, 400, 40, 3)]
    check(dut, rounds, idle_probability=0.25, stall_probability=0.3, seed=n)


def test_pqa_same_queue_every_cycle():
    """Back-to-back insertions into one queue (the forwarding path), thousands of cycles."""
    rng = random.Random(9)
    R, n = 3, 8
    dut = PqaInsert(R, n)
    queue = 5
    inserts = [(rng.randrange(20) << R | queue, rng.randint(1, 8)) for _ in range(3000)]
    # the same key in every cycle with a growing estimate, then a plateau of ties
    inserts += [(7 << R | queue, v) for v in range(1, 200)] + [(8 << R | queue, 3)] * 50
    check(dut, [inserts])


def test_pqa_tie_order():
    """Equal values keep their older order; the new entry goes after its equals; with several
    smallest equals the last (most recently placed) is evicted; an update may move down."""
    R, n = 1, 4
    dut = PqaInsert(R, n)
    tags = [(t << R) for t in range(1, 9)]
    inserts = [(tags[0], 2), (tags[1], 2), (tags[2], 2), (tags[3], 2),   # full of ties
               (tags[4], 2),                                            # == min: discarded
               (tags[5], 3),                                            # evicts the last 2
               (tags[1], 2),                                            # update, same value
               (tags[0], 1),                                            # update moves down
               (tags[6], 2), (tags[7], 5), (tags[2], 5)]
    check(dut, [inserts])
    expected = golden_queues(R, n, inserts)[0]
    assert expected == [(8, 5), (3, 5), (6, 3), (2, 2)]


def test_pqa_default_size_drains_in_order():
    """R = 12, n = 8 (the SPEC defaults): elaborate, insert a few keys, drain 4096 queues."""
    rng = random.Random(12)
    dut = PqaInsert(12, 8)
    check(dut, [random_inserts(rng, 12, 300, 4, 100)])


def test_pqa_rejects_bad_parameters():
    with pytest.raises(ValueError, match="R"):
        PqaInsert(R=0)
    with pytest.raises(ValueError, match="n"):
        PqaInsert(n=65)


def distance_inserts(distance, count=400, seed=0):
    """Insertions whose same-queue neighbours are exactly ``distance`` cycles apart: ``distance``
    queues in rotation, one insertion per cycle, few tags and values so most insertions change
    their queue."""
    rng = random.Random(seed + distance)
    R = 3
    return [((rng.randrange(6) << R) | (index % distance), rng.randint(1, 5))
            for index in range(count)]


@pytest.mark.parametrize("distance", PqaInsert.forwarded_distances + (5,))
def test_pqa_each_forwarding_distance_alone(distance):
    """Only one read-modify-write distance at a time (5 is the first the memory covers)."""
    check(PqaInsert(3, 4), [distance_inserts(distance)])


@pytest.mark.parametrize("distance", PqaInsert.forwarded_distances)
def test_pqa_without_one_forwarding_distance_fails(distance):
    """A mutant that does not forward at one distance must get that distance's run wrong: the
    test above can fail."""
    class Mutant(PqaInsert):
        forwarded_distances = tuple(d for d in PqaInsert.forwarded_distances if d != distance)

    with pytest.raises(AssertionError):
        check(Mutant(3, 4), [distance_inserts(distance)])


def test_slots_of_4k_queues_go_to_ultraram():
    """A slot of 2^12 entries (the default R) fills one URAM288 (4K x 72) instead of six BRAM36;
    Vivado and Yosys read ``ram_style``. Smaller slots are left to the tools."""
    from hw.jsd.similarity import JsdSimilarityCore
    from kmerspec.kernels.jsd_similarity import Params as SimilarityParams

    def elaborated(unit):
        Fragment.get(unit, None)  # as in a build: the memories read here are used, not stray
        return unit

    assert all(dict(slot.attrs) == {"ram_style": "ultra"}
               for slot in elaborated(PqaInsert(12, 8)).slots)
    assert all(not slot.attrs for slot in elaborated(PqaInsert(11, 8)).slots)
    pivots = elaborated(JsdSimilarityCore(SimilarityParams(pivots=2))).pivot_slots
    assert all(dict(slot.attrs) == {"ram_style": "ultra"} for slots in pivots for slot in slots)


@pytest.mark.parametrize("banks", [2, 5])
def test_pqa_banks_share_the_network(banks):
    """Banks behind one insert network (the JSD builder: two per lane, every lane's behind one
    network): the same queue in another bank every cycle (a forward across banks would merge
    them), runs in one bank, random insertions; then the last bank drains under random
    backpressure while bank 0 goes on taking one insertion per cycle, and the drained bank fills
    again from empty. Every queue of every bank against one golden PQA per bank, the drained queues against the last bank's."""
    rng = random.Random(21 + banks)
    R, n = 2, 4
    drained_bank = banks - 1
    dut = PqaInsert(R, n, banks=banks)

    def program(length):
        inserts = []
        while len(inserts) < length:
            h = rng.randrange(10) << R | rng.randrange(1 << R)
            shape = rng.choice(["alternate", "run", "random"])
            if shape == "alternate":
                first = rng.randrange(banks)
                inserts += [((first + step) % banks, h, rng.randint(1, 6))
                            for step in range(rng.choice([2, 5]))]
            elif shape == "run":
                bank = rng.randrange(banks)
                inserts += [(bank, h, value) for value in range(1, rng.choice([2, 4, 8]))]
            else:
                inserts.append((rng.randrange(banks), h, rng.randint(1, 6)))
        return inserts[:length]

    before, after = program(600 * banks), program(250 * banks)
    during = [(0, rng.randrange(40), rng.randint(1, 6)) for _ in range(60)]
    got = {}

    def state(ctx, bank):
        return [entries([ctx.get(slot.data[q]) for slot in dut.bank_slots[bank]])
                for q in range(1 << R)]

    def payloads(inserts):
        return [{"hash": h, "value": value, "bank": bank} for bank, h, value in inserts]

    async def drain_collector(ctx):
        drained = got.setdefault("drained", [])
        while True:
            ready = rng.random() >= 0.3
            ctx.set(dut.o[drained_bank].ready, ready)
            _, _, valid, payload = await ctx.tick().sample(dut.o[drained_bank].valid,
                                                            dut.o[drained_bank].payload)
            if valid and ready:
                drained.append(entries(payload.entries))

    async def testbench(ctx):
        await offer_each_cycle(ctx, dut.i, payloads(before), 0.2, rng)
        await ctx.tick().repeat(dut.latency)
        got["before"] = [state(ctx, bank) for bank in range(banks)]
        await while_busy(ctx, dut.drain, 1 << drained_bank, dut.busy,
                         offer_each_cycle(ctx, dut.i, payloads(during), 0.0, rng))
        got["drained bank"] = state(ctx, drained_bank)
        await offer_each_cycle(ctx, dut.i, payloads(after), 0.3, rng)
        await ctx.tick().repeat(dut.latency)
        got["after"] = [state(ctx, bank) for bank in range(banks)]

    simulate(dut, testbench, background=(drain_collector,))
    golden = [Pqa(R, n) for _ in range(banks)]
    for bank, h, value in before:
        golden[bank].insert_hash(h, value)
    assert got["before"] == [pqa.queues for pqa in golden]
    assert got["drained"] == golden[drained_bank].queues
    assert got["drained bank"] == Pqa(R, n).queues
    golden[drained_bank] = Pqa(R, n)
    for bank, h, value in during + after:
        golden[bank].insert_hash(h, value)
    assert got["after"] == [pqa.queues for pqa in golden]
