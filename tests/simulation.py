"""Helpers shared by the Amaranth-simulator tests of the components: running a simulation,
random idle cycles, and driving and draining streams with handshakes."""

import random

from amaranth.sim import Simulator

__all__ = ["simulate", "simulate_top", "with_idle_cycles", "send_beats", "offer_each_cycle", "while_busy",
           "collect_beats"]


def simulate(dut, *testbenches, background=()):
    """Run ``testbenches`` (and ``background`` ones, which end with them) on ``dut`` with a
    clock."""
    sim = Simulator(dut)
    sim.add_clock(1e-8)
    for testbench in testbenches:
        sim.add_testbench(testbench)
    for testbench in background:
        sim.add_testbench(testbench, background=True)
    sim.run()


def simulate_top(dut, *testbenches, background=()):
    """:func:`simulate` for a :class:`~hw.vitis.top.VitisKernel`, whose ``sync`` domain is
    clocked by its ``ap_clk`` port."""
    async def clock(ctx):
        while True:
            ctx.set(dut.ap_clk, 0)
            await ctx.delay(5e-9)
            ctx.set(dut.ap_clk, 1)
            await ctx.delay(5e-9)
    sim = Simulator(dut)
    sim.add_process(clock)
    for testbench in testbenches:
        sim.add_testbench(testbench)
    for testbench in background:
        sim.add_testbench(testbench, background=True)
    sim.run()


def with_idle_cycles(items, idle_probability: float, rng: random.Random) -> list:
    """``items`` with runs of None (idle cycles) before each, at random."""
    schedule = []
    for item in items:
        while rng.random() < idle_probability:
            schedule.append(None)
        schedule.append(item)
    return schedule


async def send_beats(ctx, stream, payloads) -> int:
    """Offer each payload on ``stream`` until it is taken; returns the cycles it took."""
    cycles = 0
    for payload in payloads:
        ctx.set(stream.valid, 1)
        ctx.set(stream.payload, payload)
        while True:
            ready = ctx.get(stream.ready)
            await ctx.tick()
            cycles += 1
            if ready:
                break
    ctx.set(stream.valid, 0)
    return cycles


async def offer_each_cycle(ctx, stream, payloads, idle_probability: float, rng: random.Random):
    """Offer the payloads on ``stream`` one per cycle (idle cycles at random), asserting that
    ``ready`` is high whenever one is offered."""
    for payload in payloads:
        while rng.random() < idle_probability:
            ctx.set(stream.valid, 0)
            await ctx.tick()
        ctx.set(stream.valid, 1)
        ctx.set(stream.payload, payload)
        assert ctx.get(stream.ready)
        await ctx.tick()
    ctx.set(stream.valid, 0)


async def while_busy(ctx, start, bits: int, busy, work):
    """Pulse ``bits`` on ``start``, check that they show on ``busy`` in the next cycle, run
    ``work`` (an awaitable) meanwhile, then wait until ``busy`` is low."""
    ctx.set(start, bits)
    await ctx.tick()
    ctx.set(start, 0)
    assert ctx.get(busy) == bits
    await work
    while ctx.get(busy):
        await ctx.tick()


async def collect_beats(ctx, stream, sink: list, stall_probability: float, rng: random.Random):
    """Forever: take the payloads of ``stream`` into ``sink``, ready low with
    ``stall_probability`` in each cycle."""
    while True:
        ready = rng.random() >= stall_probability
        ctx.set(stream.ready, ready)
        _, _, valid, payload = await ctx.tick().sample(stream.valid, stream.payload)
        if valid and ready:
            sink.append(payload)
