# amaranth: UnusedElaboratable=no
"""Hash pipeline and sampler of the JSD engine against the golden model (its Count-Min unit:
tests/test_countmin.py)."""

import random

import pytest

from amaranth.hdl import Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from kmerspec.golden.hashes import murmur3_32, murmur3_mixed_blocks
from kmerspec.golden.jsd import SAMPLE_SEED
from hw.jsd.murmur3 import Murmur3Hashes, Murmur3Seeds, pipelined_times_constant
from hw.jsd.sampler import Sampler, kmer_beat_layout
from hw.jsd.serializer import Serializer, counted_beat, counted_beat_layout
from tests.simulation import simulate

MASK64 = (1 << 64) - 1



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


@pytest.mark.parametrize("hash_bits", [32, 10, 1])
def test_murmur3_seeds_from_mixed_blocks(hash_bits):
    """The lane's form: the sampler's mixed blocks in, murmur3_32 (its low hash_bits) out."""
    rng = random.Random(hash_bits)
    seeds = [0, 1, 2, 3, 4] if hash_bits == 32 else [SAMPLE_SEED]
    words = [0, MASK64] + [rng.getrandbits(64) for _ in range(300)]
    dut = Murmur3Seeds(seeds, hash_bits=hash_bits)
    got = []

    async def testbench(ctx):
        for word in words + [None] * (dut.latency + 1):
            ctx.set(dut.i.valid, word is not None)
            ctx.set(dut.i.payload, murmur3_mixed_blocks(word or 0))
            _, _, valid, payload = await ctx.tick().sample(dut.o.valid, dut.o.payload)
            if valid:
                got.append([payload.hashes[j] for j in range(len(seeds))])

    simulate(dut, testbench)
    mask = (1 << hash_bits) - 1
    assert got == [[murmur3_32(word, seed) & mask for seed in seeds] for word in words]


class _TimesConstant(wiring.Component):
    def __init__(self, constant, width):
        self.constant, self.width = constant, width
        super().__init__({"x": In(32), "y": Out(width)})

    def elaborate(self, platform):
        m = Module()
        m.d.comb += self.y.eq(pipelined_times_constant(m, self.x, self.constant, self.width,
                                                       "product"))
        return m


@pytest.mark.parametrize("constant,width", [(0xCC9E2D51, 32), (0xC2B2AE35, 26),
                                            (0xFFFFFFFF, 32), (0x80000001, 9), (0x10000, 32)])
def test_times_constant(constant, width):
    """The DSP-tiled constant product is the product modulo 2^width (corner tiles included),
    two cycles after its operand."""
    rng = random.Random(constant ^ width)
    values = [0, 1, (1 << 32) - 1, 1 << 26, (1 << 26) - 1] + [rng.getrandbits(32)
                                                              for _ in range(200)]
    dut = _TimesConstant(constant, width)

    async def testbench(ctx):
        for value in values:
            ctx.set(dut.x, value)
            await ctx.tick().repeat(2)
            assert ctx.get(dut.y) == value * constant % (1 << width), hex(value)

    simulate(dut, testbench)


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
        expected.append(([murmur3_mixed_blocks(word) for word in words], keep, last))
    assert got == expected
    if s == 0:
        assert all(beat[1] == keep for beat, (_, keep, _) in zip(beats, got))


def _serializer_beats(rng, slots, count):
    """Beats with k-mers or ``last``: single k-mers, full beats, a last beat with and without
    k-mers, and random masks."""
    beats = []
    for index in range(count):
        kind = index % 5
        valid = {0: 1 << rng.randrange(slots), 1: (1 << slots) - 1, 2: 0}.get(
            kind, rng.getrandbits(slots))
        last = kind == 2 or rng.random() < 0.1
        if valid == 0 and not last:
            valid = 1 << (slots - 1)
        beats.append(([rng.getrandbits(64) for _ in range(slots)], valid, last))
    return beats


def _serializer_tokens(beats):
    tokens = []
    for words, valid, last in beats:
        tokens += [("kmer", words[j]) for j in range(len(words)) if valid >> j & 1]
        tokens += [("last", None)] * last
    return tokens


@pytest.mark.parametrize("slots", [1, 3, 8])
def test_counted_beat_flags(slots):
    """The flags a producer puts beside each beat: any k-mer, exactly one, for every mask."""
    beat = Signal(kmer_beat_layout(slots))
    counted = Signal(counted_beat_layout(slots))
    m = Module()
    m.d.comb += counted.eq(counted_beat(beat))
    m.d.sync += Signal().eq(0)   # a clock domain for the shared simulate()

    async def testbench(ctx):
        for valid in range(1 << slots):
            ctx.set(beat, {"words": [valid] * slots, "valid": valid, "last": valid & 1})
            assert ctx.get(counted.has_kmer) == (valid != 0)
            assert ctx.get(counted.one_kmer) == (bin(valid).count("1") == 1)
            assert ctx.get(counted.beat.valid) == valid and ctx.get(counted.beat.last) == valid & 1

    simulate(m, testbench)


@pytest.mark.parametrize("slots", [1, 3, 8])
def test_serializer_order_and_rate(slots):
    """Tokens leave in stream order whatever the input gaps and ``run``; with beats always
    offered and ``run`` high, one token leaves every cycle."""
    rng = random.Random(slots)
    gapped, steady = _serializer_beats(rng, slots, 300), _serializer_beats(rng, slots, 200)
    dut = Serializer(slots)
    got, steady_cycles = [], []

    async def testbench(ctx):
        for phase, beats in (("gapped", gapped), ("steady", steady)):
            pending = list(beats)
            cycles = 0
            expected = len(got) + len(_serializer_tokens(beats))
            while len(got) < expected:
                assert cycles < 20 * len(beats), "the serializer stopped"
                offer = bool(pending) and (phase == "steady" or rng.random() < 0.6)
                run = phase == "steady" or rng.random() < 0.8
                ctx.set(dut.run, run)
                ctx.set(dut.i.valid, offer)
                if offer:
                    words, valid, last = pending[0]
                    ctx.set(dut.i.payload, {"beat": {"words": words, "valid": valid, "last": last},
                                            "has_kmer": valid != 0,
                                            "one_kmer": bin(valid).count("1") == 1})
                _, _, ready, out_valid, out = await ctx.tick().sample(
                    dut.i.ready, dut.o.valid, dut.o.payload)
                if offer and ready:
                    pending.pop(0)
                if out_valid:
                    assert run
                    assert out.kmer != out.last
                    got.append(("kmer", out.word) if out.kmer else ("last", None))
                cycles += 1
            if phase == "steady":
                steady_cycles.append(cycles)
        ctx.set(dut.i.valid, 0)

    simulate(dut, testbench)
    assert got == _serializer_tokens(gapped) + _serializer_tokens(steady)
    # the first steady token leaves one cycle after its beat is taken
    assert steady_cycles == [len(_serializer_tokens(steady)) + 1]


def test_split_address_carries_into_its_upper_half():
    """The similarity kernels' addresses (``SplitAddress``): loaded with base +
    offset and stepped by the record size across the 32-bit boundary, the value is base +
    offset + steps x size whenever ``settled``, and ``settled`` drops for exactly one cycle
    after each load or step."""
    from hw.vitis.chunk_kernel import SplitAddress
    step = 262_208                               # the default record: 4,097 beats of 64 bytes
    base = (5 << 32) - 3 * step - 100
    m = Module()
    load, advance = Signal(), Signal()
    base_in = Signal(64)
    address = SplitAddress(m, "address")
    with m.If(load):
        address.load(base_in, 1 << 18)
    with m.Elif(advance):
        address.step(step)
    expected = []

    async def bench(ctx):
        ctx.set(base_in, base)
        ctx.set(load, 1)
        await ctx.tick()
        ctx.set(load, 0)
        value = base + (1 << 18)
        assert not ctx.get(address.settled)
        await ctx.tick()
        for _ in range(6):
            assert ctx.get(address.settled) and ctx.get(address.value) == value
            expected.append(value)
            ctx.set(advance, 1)
            await ctx.tick()
            ctx.set(advance, 0)
            value += step
            assert not ctx.get(address.settled)
            await ctx.tick()
        assert ctx.get(address.value) == value and value >> 32 == 5

    simulate(m, bench)
    assert any(v >> 32 == 4 for v in expected) and expected[-1] >> 32 == 5


def test_split_address_loads_a_wide_offset():
    """``SplitAddress.load`` with an offset above 2^32 (the JACC similarity kernel's first
    group): both halves' sums and the low half's carry give base + offset once settled."""
    from hw.vitis.chunk_kernel import SplitAddress
    cases = [((7 << 32) + 0xFFFF_F000, (3 << 32) + 0x2000),       # the low half carries
             ((1 << 63) + 5, (0x1234 << 33) + 8),                   # no carry, wide offset
             (0xFFFF_FFFF, 1)]
    m = Module()
    load = Signal()
    base_in, offset_in = Signal(64), Signal(64)
    address = SplitAddress(m, "address")
    with m.If(load):
        address.load(base_in, offset_in)

    async def bench(ctx):
        for base, offset in cases:
            ctx.set(base_in, base)
            ctx.set(offset_in, offset)
            ctx.set(load, 1)
            await ctx.tick()
            ctx.set(load, 0)
            assert not ctx.get(address.settled)
            await ctx.tick()
            assert ctx.get(address.settled)
            assert ctx.get(address.value) == (base + offset) % (1 << 64)

    simulate(m, bench)


def test_countdown_is_due_until_its_count_is_stepped_away():
    """``Countdown``: after a load of n (and the cycle of its adjustment, in which it is due),
    ``due`` holds for exactly n steps; a count of 0 is never due; a new load starts over."""
    from hw.vitis.chunk_kernel import Countdown
    m = Module()
    load, step = Signal(), Signal()
    n_in = Signal(4)
    count = Countdown(m, "count", 4)
    with m.If(load):
        count.load(n_in)
    with m.Elif(step):
        count.step()
    due = Signal()
    m.d.comb += due.eq(count.due)

    async def bench(ctx):
        for n in (3, 0, 15, 1):
            ctx.set(n_in, n)
            ctx.set(load, 1)
            await ctx.tick()
            ctx.set(load, 0)
            assert ctx.get(due)                     # the adjustment's cycle
            await ctx.tick()
            steps = 0
            while ctx.get(due):
                ctx.set(step, 1)
                await ctx.tick()
                ctx.set(step, 0)
                steps += 1
                assert steps <= n
            assert steps == n
            await ctx.tick()
            assert not ctx.get(due)

    simulate(m, bench)
