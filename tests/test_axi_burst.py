"""The AXI burst splitter against a model of the rules (4 KiB pages, the beat cap, partial last
beats), with addresses whose page number carries across the halves of the page adder."""

import random

import pytest
from amaranth.hdl import Const, Module
from amaranth.sim import Simulator

from hw.axi.burst import BurstSplitter, next_page
from tests.simulation import simulate


def model_bursts(addr: int, length: int, data_bytes: int, max_beats: int):
    """(address, beats - 1, last, final-beat strobes of the command) of each burst of one
    command."""
    if length == 0:
        return []
    addr -= addr % data_bytes
    beats, bursts = -(-length // data_bytes), []
    cap = min(max_beats, 4096 // data_bytes)
    while beats:
        n = min(beats, cap, (4096 - addr % 4096) // data_bytes)
        beats -= n
        tail = length % data_bytes
        strobe = (1 << tail) - 1 if tail else (1 << data_bytes) - 1
        bursts.append((addr, n - 1, beats == 0, strobe))
        addr = (addr + n * data_bytes) % (1 << 64)
    return bursts


def commands(rng: random.Random, data_bytes: int):
    page_bits = 52
    high_pages = [(1 << (page_bits // 2)) - 1, (1 << page_bits) - 2, (1 << 26) - 1 + (5 << 26)]
    out = [(0, 0), (0, 1), (4096 - data_bytes, 2 * data_bytes), (0, 3 * 4096)]
    for page in high_pages:
        out.append((page << 12 | (4096 - 2 * data_bytes), 4096 + 7))
    for _ in range(30):
        page = rng.choice(high_pages + [rng.getrandbits(page_bits)])
        addr = page << 12 | rng.randrange(0, 4096, data_bytes)
        out.append((addr, rng.choice([rng.randrange(1, 64), rng.randrange(1, 20000)])))
    return out


@pytest.mark.parametrize("data_bytes,max_beats", [(64, 256), (8, 256), (4, 16), (64, 4)])
def test_splitter_matches_model(data_bytes, max_beats):
    rng = random.Random(data_bytes * 1000 + max_beats)
    dut = BurstSplitter(data_bytes=data_bytes, max_beats=max_beats)
    cmds = commands(rng, data_bytes)
    expected = [b for addr, length in cmds for b in model_bursts(addr, length, data_bytes,
                                                                  max_beats)]
    got = []

    async def driver(ctx):
        for addr, length in cmds:
            ctx.set(dut.cmd.valid, 1)
            ctx.set(dut.cmd.payload, {"addr": addr, "length": length})
            await ctx.tick().until(dut.cmd.ready)
            ctx.set(dut.cmd.valid, 0)
            while rng.random() < 0.2:
                await ctx.tick()
        await ctx.tick().repeat(4)
        while ctx.get(dut.busy):
            await ctx.tick()

    async def receiver(ctx):
        while True:
            ready = rng.random() < 0.7
            ctx.set(dut.burst.ready, ready)
            _, _, valid, payload = await ctx.tick().sample(dut.burst.valid, dut.burst.payload)
            if valid and ready:
                got.append((payload.addr, payload.beats_m1, bool(payload.last),
                            payload.final_strobe))
                # a splitter that never ends its command would keep the driver waiting
                assert len(got) <= len(expected), f"more bursts than expected: {got[-3:]}"

    simulate(dut, driver, background=[receiver])
    assert any(addr >> 12 & ((1 << 26) - 1) == 0 and addr >> 38 for addr, *_ in expected), \
        "no burst crosses into the page adder's upper half"
    assert got == expected


def test_next_page_carries_across_halves():
    values = [0, 1, (1 << 26) - 1, (1 << 27) - 1, (1 << 52) - 1, 0x123_4567_FFFFF]
    got = []

    async def bench(ctx):
        for value in values:
            got.append(ctx.get(next_page(Const(value, 52))))

    sim = Simulator(Module())       # combinational only: no clock
    sim.add_testbench(bench)
    sim.run()
    assert got == [(value + 1) % (1 << 52) for value in values]


@pytest.mark.parametrize("bursts", [1, 5])
@pytest.mark.parametrize("latency", [0, 3])
def test_reader_idle_and_rate(latency, bursts):
    """The reader's ``idle`` stays low from the command until its last data beat has been taken
    (a kernel's ``done`` waits on it) and rises after; with the memory answering every cycle,
    the beats of back-to-back bursts come one per cycle."""
    from hw.axi import AxiBurstReader

    dut = AxiBurstReader(data_width=32, max_beats=4)
    beats_per_burst = 4
    total = bursts * beats_per_burst
    addresses, beat_cycles, idle_while_due, commanded = [], [], [], []   # commanded: its cycle

    async def memory(ctx):
        pending = []                 # (cycle the burst's beats may start, beats)
        cycle = 0
        ctx.set(dut.axi.ARREADY, 1)
        while True:
            rvalid = bool(pending) and pending[0][0] <= cycle
            ctx.set(dut.axi.RVALID, rvalid)
            if rvalid:
                ctx.set(dut.axi.RDATA, cycle)
                ctx.set(dut.axi.RLAST, pending[0][1] == 1)
            # values of this cycle, before its clock edge
            _, _, arvalid, araddr, arlen, rready, idle, taken = await ctx.tick().sample(
                dut.axi.ARVALID, dut.axi.ARADDR, dut.axi.ARLEN, dut.axi.RREADY, dut.idle,
                dut.cmd.valid & dut.cmd.ready)
            if commanded and len(beat_cycles) < total:
                idle_while_due.append(idle)
            if taken:
                commanded.append(cycle)
            if rvalid and rready:
                beat_cycles.append(cycle)
                start, left = pending[0]
                pending[0] = (start, left - 1)
                if left == 1:
                    pending.pop(0)
            if arvalid:
                addresses.append(araddr)
                pending.append((cycle + 1 + latency, arlen + 1))
            cycle += 1

    async def driver(ctx):
        ctx.set(dut.data.ready, 1)
        ctx.set(dut.cmd.valid, 1)
        ctx.set(dut.cmd.payload, {"addr": 0x1000, "length": total * 4})
        await ctx.tick().until(dut.cmd.ready)
        ctx.set(dut.cmd.valid, 0)
        while len(beat_cycles) < total:
            await ctx.tick()
        await ctx.tick().repeat(2)
        assert ctx.get(dut.idle)

    simulate(dut, driver, background=[memory])
    assert addresses == [0x1000 + 16 * b for b in range(bursts)]
    assert len(idle_while_due) >= total and not any(idle_while_due), \
        f"idle while data beats were still due: {idle_while_due}"
    if latency == 0:
        assert beat_cycles == list(range(beat_cycles[0], beat_cycles[0] + total))
