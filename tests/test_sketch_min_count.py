# amaranth: UnusedElaboratable=no
"""The RTL minimum-count prefilter (hw/sketch/min_count.py) against kmerspec.golden.mincount:
the words that pass, their timing, and every counter of every row, for the same word in every
cycle, colliding words with idle cycles, saturation, and a clear between two genomes."""

import random

import pytest

from hw.sketch.min_count import MinCountFilter
from kmerspec.golden.mincount import MinCountParams, min_count_counter, passing_kmers
from tests.simulation import simulate


def counters_of(ctx, dut):
    return [[ctx.get(memory.data[i]) for i in range(1 << dut.width_bits)] for memory in dut.rows]


async def feed(ctx, dut, words, rng, idle_probability):
    """Offer ``words`` (idle cycles at random) and collect what passes; every passing word comes
    out :attr:`latency` cycles after it went in."""
    passed, schedule, cycle = [], {}, 0
    pending = list(words)
    while pending or cycle <= max(schedule, default=0) + dut.latency:
        offer = bool(pending) and rng.random() >= idle_probability
        ctx.set(dut.i.valid, offer)
        if offer:
            ctx.set(dut.i.payload, pending[0])
            schedule[cycle] = pending.pop(0)
        _, _, valid, word = await ctx.tick().sample(dut.o.valid, dut.o.payload)
        if valid:
            assert schedule.get(cycle - dut.latency) == word, "out of order or late"
            passed.append(word)
        cycle += 1
    ctx.set(dut.i.valid, 0)
    return passed


def run_genomes(params: MinCountParams, genomes, idle_probability=0.0, seed=0):
    """Each genome through one filter, cleared in between; (passed, counters) per genome, and
    the golden ones."""
    dut = MinCountFilter(depth=params.mc_depth, width_bits=params.mc_width_bits,
                         counter_bits=params.mc_counter_bits, seed=params.mc_seed)
    rng = random.Random(seed)
    got = []

    async def testbench(ctx):
        ctx.set(dut.min_count, params.min_count)
        for words in genomes:
            passed = await feed(ctx, dut, words, rng, idle_probability)
            got.append((passed, counters_of(ctx, dut)))
            ctx.set(dut.clear, 1)
            await ctx.tick()
            ctx.set(dut.clear, 0)
            await ctx.tick().until(~dut.busy)

    simulate(dut, testbench)
    expected = []
    for words in genomes:
        counter = min_count_counter(params)
        expected.append((list(passing_kmers(words, params, counter)), counter.counters))
    return got, expected


def test_same_word_every_cycle():
    """The read-modify-write hazard at distance 1, one insertion per cycle: the word passes from
    its m-th occurrence on, and every row holds the exact count."""
    params = MinCountParams(min_count=3, mc_depth=3, mc_width_bits=5, mc_counter_bits=12)
    words = [0x0123456789ABCDEF & ((1 << 62) - 1)] * 600
    (got,), (expected,) = run_genomes(params, [words])
    assert got == expected
    assert len(got[0]) == 598 and sorted(v for row in got[1] for v in row if v) == [600] * 3


def runs_of(rng, pool, length, run_lengths):
    """At least ``length`` words of ``pool`` in runs of one word (each run's length drawn from
    ``run_lengths``): colliding words, and repeats at every forwarding distance."""
    words = []
    while len(words) < length:
        words.extend([rng.choice(pool)] * rng.choice(run_lengths))
    return words


@pytest.mark.parametrize("idle_probability", [0.0, 0.4])
@pytest.mark.parametrize("m", [2, 3])
def test_colliding_words_and_clear(idle_probability, m):
    """32 counters per row for 40 distinct words: conservative-update collisions, false passes;
    runs of one word and alternations hit every forwarding distance; two genomes with a clear."""
    rng = random.Random(m)
    pool = [rng.getrandbits(62) for _ in range(40)]
    genomes = []
    for _ in range(2):
        words = runs_of(rng, pool, 700, [1, 1, 1, 2, 3])
        for _ in range(40):  # words seen once: a pass is a false pass
            words.insert(rng.randrange(len(words)), rng.getrandbits(62))
        genomes.append(words)
    params = MinCountParams(min_count=m, mc_depth=2, mc_width_bits=5, mc_seed=0xFFFFFFFF)
    got, expected = run_genomes(params, genomes, idle_probability, seed=m)
    assert got == expected
    once = {word for word in genomes[0] if genomes[0].count(word) == 1}
    assert once & set(got[0][0]), "the premise: collisions let a word seen once pass"


def test_saturation():
    params = MinCountParams(min_count=3, mc_depth=2, mc_width_bits=3, mc_counter_bits=2)
    rng = random.Random(5)
    words = [rng.getrandbits(62) for _ in range(6)] * 20
    rng.shuffle(words)
    got, expected = run_genomes(params, [words])
    assert got == expected
    assert max(v for row in got[0][1] for v in row) == 3


def test_parameters_are_checked():
    with pytest.raises(ValueError, match=r"^width_bits must be an integer from 1 to 24, not 25$"):
        MinCountFilter(width_bits=25)
    unit = MinCountFilter(depth=2, width_bits=4)
    assert unit.latency == 12 + unit._countmin.latency   # murmur3, then the Count-Min unit
