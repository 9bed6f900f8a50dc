# amaranth: UnusedElaboratable=no
"""Canonicalizer, fmix64 pipeline and HLL update unit against the golden model."""

import random

import pytest

from kmerspec.golden.hashes import MASK64, fmix64
from kmerspec.golden.hll import Hll, HllParams
from kmerspec.golden.parse import canonical
from hw.sketch.canonical import Canonicalizer
from hw.sketch.fmix64 import FMIX64_C1, FMIX64_C2, Fmix64, partial_products
from hw.sketch.hll_update import REGISTERS_PER_WORD, HllUpdate
from tests.simulation import simulate, with_idle_cycles


def run_word_pipeline(dut, words, latency, idle_probability=0.3, seed=0):
    """Feed (word, valid) pairs, one per cycle with random idle cycles; check the output comes
    exactly ``latency`` cycles later and return the output words of valid inputs in order."""
    schedule = with_idle_cycles(words, idle_probability, random.Random(seed))
    schedule += [None] * (latency + 1)
    got = []

    async def testbench(ctx):
        outputs = []
        for item in schedule:
            ctx.set(dut.i.valid, item is not None)
            ctx.set(dut.i.payload, {"word": item or 0, "valid": item is not None})
            _, _, valid, payload = await ctx.tick().sample(dut.o.valid, dut.o.payload)
            outputs.append(payload.word if valid and payload.valid else None)
        # values sampled at a tick are those before its edge: input i shows at tick i + latency
        for index, item in enumerate(schedule[:len(schedule) - latency]):
            assert (outputs[index + latency] is None) == (item is None), index
        got.extend(word for word in outputs if word is not None)

    simulate(dut, testbench)
    return got


@pytest.mark.parametrize("k", [1, 5, 31, 32])
def test_canonicalizer(k):
    rng = random.Random(k)
    words = [rng.getrandbits(2 * k) for _ in range(200)] + [0, (1 << 2 * k) - 1]
    assert run_word_pipeline(Canonicalizer(k), words, Canonicalizer.latency) == \
        [canonical(word, k) for word in words]


def test_fmix64_partial_products_are_exact():
    rng = random.Random(5)
    for constant in (FMIX64_C1, FMIX64_C2):
        for x in [0, MASK64] + [rng.getrandbits(64) for _ in range(2000)]:
            total = 0
            for offset, x_lsb, x_width, c_part in partial_products(constant):
                product = (((x >> x_lsb) & ((1 << x_width) - 1)) * c_part) % (1 << (64 - offset))
                total += product << offset
            assert total & MASK64 == (x * constant) & MASK64


def test_fmix64_pipeline():
    rng = random.Random(7)
    words = [rng.getrandbits(64) for _ in range(300)] + [0, MASK64, 1 << 63]
    dut = Fmix64()
    assert run_word_pipeline(dut, words, dut.latency) == [fmix64(word) for word in words]


def run_hll(hashes, p, w, seed=0, idle_probability=0.2):
    """Insert ``hashes`` (None = idle cycle), then drain every word; return the registers."""
    rng = random.Random(seed)
    dut = HllUpdate(p, w)
    registers = []

    async def testbench(ctx):
        for h in hashes:
            while rng.random() < idle_probability:
                ctx.set(dut.i.valid, 0)
                await ctx.tick()
            offer_hash(ctx, dut, h)        # None: an idle cycle where the test puts one
            await ctx.tick()
        ctx.set(dut.i.valid, 0)
        await ctx.tick().repeat(dut.latency)
        for drain_round in range(2):   # the second round checks that draining cleared the sketch
            words = []
            ctx.set(dut.drain_en, 1)
            for addr in range(dut.words):
                ctx.set(dut.drain_addr, addr)
                await ctx.tick()
                words.append(ctx.get(dut.drain_data))
            ctx.set(dut.drain_en, 0)
            for word in words:
                for slot in range(REGISTERS_PER_WORD):
                    value = (word >> (w * slot)) & ((1 << w) - 1)
                    if drain_round == 0:
                        registers.append(value)
                    else:
                        assert value == 0

    simulate(dut, testbench)
    return registers


@pytest.mark.parametrize("p,w", [(8, 4), (10, 6)])
def test_hll_update_random(p, w):
    rng = random.Random(p)
    hashes = [rng.getrandbits(64) for _ in range(1500)]
    model = Hll(HllParams(p, w))
    for h in hashes:
        model.insert_hash(h)
    assert run_hll(hashes, p, w, seed=p) == model.registers


def test_hll_update_same_word_every_cycle():
    # adversarial: every insert hits the same word (and mostly the same register) back to back,
    # with ranks going up and down, so any lost read-modify-write shows up
    p, w = 8, 4
    rng = random.Random(9)
    low_bits = 64 - p

    def hash_for(index, rank):
        return (index << low_bits) | ((1 << (low_bits - rank)) if rank <= low_bits else 0)

    hashes = []
    # rising ranks spread over the 16 registers of one word: a lost update of the previous
    # insert leaves a register one rank short
    for rank in range(1, 16):
        slots = list(range(16))
        rng.shuffle(slots)
        hashes += [hash_for(0x10 | slot, rank) for slot in slots]
    hashes += [hash_for(rng.choice([0x13, 0x14, 0x1F, 0x10, 0x23]), rng.randint(1, 20))
               for _ in range(2000)]
    model = Hll(HllParams(p, w))
    for h in hashes:
        model.insert_hash(h)
    assert run_hll(hashes, p, w, seed=1, idle_probability=0.0) == model.registers
    assert run_hll(hashes, p, w, seed=2, idle_probability=0.5) == model.registers


def test_hll_parameter_errors():
    with pytest.raises(ValueError, match=r"^p must be an integer from 8 to 18, not 7$"):
        HllUpdate(7, 4)
    with pytest.raises(ValueError, match=r"^w must be an integer from 4 to 8, not 9$"):
        HllUpdate(14, 9)


@pytest.mark.parametrize("gap", [1, 2, 3])
def test_hll_update_same_word_at_each_forwarding_distance(gap):
    # rising ranks into the 16 registers of one word in turn, with exactly ``gap`` - 1 idle
    # cycles between inserts: a stale read at that distance (1, 2, 3 updates back) writes the
    # previous register's old rank back
    p, w = 8, 4
    low_bits = 64 - p
    hashes = []
    for rank in range(1, 16):
        for slot in range(16):
            hashes += [((0x20 | slot) << low_bits) | (1 << (low_bits - rank))] + [None] * (gap - 1)
    model = Hll(HllParams(p, w))
    for h in hashes:
        if h is not None:
            model.insert_hash(h)
    assert run_hll(hashes, p, w, idle_probability=0.0) == model.registers


def offer_hash(ctx, dut, h, bank=None):
    """Put hash ``h`` on an HllUpdate's insert port (None: no hash) for the next tick, into
    ``bank`` if one is given."""
    ctx.set(dut.i.valid, h is not None)
    if h is not None:
        ctx.set(dut.i.payload, {"word": h, "valid": 1})
    if bank is not None:
        ctx.set(dut.bank, bank)


def registers_of(words, w):
    """The registers of sketch words, in register order."""
    return [(word >> (w * slot)) & ((1 << w) - 1) for word in words
            for slot in range(REGISTERS_PER_WORD)]


def test_hll_update_banks_do_not_forward_into_each_other():
    """The same word of both banks hit in every cycle, the bank changing at every distance the
    forwarding covers (every cycle, every 2nd, 3rd, 4th, in random runs), while the other bank
    is drained and cleared now and then: each bank equals the golden sketch of its own hashes,
    so no update of one bank is forwarded into the other."""
    p, w = 8, 4
    low_bits = 64 - p
    rng = random.Random(11)
    inserts = []
    bank = 0
    for run in [1] * 40 + [2] * 20 + [3] * 20 + [4] * 10 + [rng.randint(1, 6) for _ in range(60)]:
        bank ^= 1
        for _ in range(run):
            index = rng.choice([0x40 | rng.randrange(16), 0x41, 0x4F, 0x5A])
            inserts.append((bank, (index << low_bits) | (1 << (low_bits - rng.randint(1, 18)))))
    dut = HllUpdate(p, w)
    models = [Hll(HllParams(p, w)), Hll(HllParams(p, w))]
    drained = [[], []]

    async def drain(ctx, number):
        words = []
        ctx.set(dut.drain_en, 1)
        ctx.set(dut.drain_bank, number)
        for addr in range(dut.words):
            ctx.set(dut.drain_addr, addr)
            await ctx.tick()
            words.append(ctx.get(dut.drain_data))
        ctx.set(dut.drain_en, 0)
        return registers_of(words, w)

    async def testbench(ctx):
        for index, (number, h) in enumerate(inserts):
            offer_hash(ctx, dut, h, bank=number)
            models[number].insert_hash(h)
            await ctx.tick()
        ctx.set(dut.i.valid, 0)
        await ctx.tick().repeat(dut.latency)
        for number in (0, 1):
            drained[number] = await drain(ctx, number)
            assert not any(await drain(ctx, number)), "draining should clear the bank"

    simulate(dut, testbench)
    for number in (0, 1):
        assert drained[number] == models[number].registers, number


def test_hll_update_drains_one_bank_while_the_other_inserts():
    """A drain of bank 0 (read and clear) in the same cycles as inserts into bank 1 hitting the
    drained addresses: bank 0 gives its sketch and is left clear, bank 1 keeps every insert."""
    p, w = 8, 4
    low_bits = 64 - p
    rng = random.Random(12)
    first = [rng.getrandbits(64) for _ in range(400)]
    dut = HllUpdate(p, w)
    words = 1 << (p - 4)
    # during the drain, bank 1 gets hashes whose word is the one being drained
    second = [((addr << 4 | rng.randrange(16)) << low_bits) | rng.getrandbits(low_bits - 1)
              for addr in range(words)]
    model0, model1 = Hll(HllParams(p, w)), Hll(HllParams(p, w))
    for h in first:
        model0.insert_hash(h)
    for h in second:
        model1.insert_hash(h)
    result = {}

    async def testbench(ctx):
        for h in first:
            offer_hash(ctx, dut, h, bank=0)
            await ctx.tick()
        ctx.set(dut.bank, 1)
        ctx.set(dut.i.valid, 0)
        await ctx.tick().repeat(dut.latency)
        drained = []
        ctx.set(dut.drain_en, 1)
        ctx.set(dut.drain_bank, 0)
        for addr, h in enumerate(second):
            ctx.set(dut.drain_addr, addr)
            offer_hash(ctx, dut, h)
            await ctx.tick()
            drained.append(ctx.get(dut.drain_data))
        ctx.set(dut.i.valid, 0)
        ctx.set(dut.drain_en, 0)
        await ctx.tick().repeat(dut.latency)
        result["bank0"] = drained
        result["after"] = [[ctx.get(dut.banks[number].data[a]) for a in range(words)]
                           for number in (0, 1)]

    simulate(dut, testbench)
    assert registers_of(result["bank0"], w) == model0.registers
    assert not any(result["after"][0])
    assert registers_of(result["after"][1], w) == model1.registers
