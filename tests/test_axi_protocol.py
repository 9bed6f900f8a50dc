"""The burst reader and writer and the Vitis top keep AXI4's rules (ARM IHI 0022) against the
slave models of tests/axi_slave.py, which check every cycle with sim.axi_monitor's rules and
raise at the first broken one, naming it: handshakes held until READY (A3.2.1) also when a call
is aborted while the slave holds READY low; W beats independent of the AW handshake (A3.3.1),
against a slave that takes an address only after its data and one that takes data only after
its address; WLAST and the W beat count of every burst, one-beat bursts included (A3.4.1); an
abort completes every burst whose address was accepted, drains R promptly however the consumer
stalls, and sends no W beat that no AW claims; every VALID low from the first cycle of ap_rst_n
(A3.1.2). The slave's RLAST/RID/BID and both error responses (SLVERR, DECERR) are checked by the
master. Amaranth simulator, READY stalls at random (seeded) on every channel and in windows.
"""

import random
from types import SimpleNamespace

import pytest

from hw.axi import AxiBurstReader, AxiBurstWriter
from hw.axi.writer import write_tail_cycles
from tests.axi_slave import AxiSlave, always_ready, held_low, random_ready
from tests.simulation import simulate, simulate_top


SLVERR, DECERR = 0b10, 0b11


def first_idle(slave):
    """The first cycle of ``idle`` high while ``abort`` was high (the watched signals)."""
    return next(cycle for cycle, (abort, idle) in
                enumerate(zip(slave.watched["abort"], slave.watched["idle"])) if abort and idle)


async def command(ctx, dut, address, length, bound=2000):
    ctx.set(dut.cmd.payload, {"addr": address, "length": length})
    ctx.set(dut.cmd.valid, 1)
    for _ in range(bound):
        _, _, taken = await ctx.tick().sample(dut.cmd.ready)
        if taken:
            ctx.set(dut.cmd.valid, 0)
            return
    raise AssertionError(f"command (0x{address:x}, {length}) not taken in {bound} cycles")


async def abort_until_idle(ctx, dut, bound, slave=None):
    """Hold ``abort`` until ``idle``; the cycles it took (at most ``bound``)."""
    ctx.set(dut.abort, 1)
    for cycles in range(bound):
        if ctx.get(dut.idle):
            await ctx.tick()
            ctx.set(dut.abort, 0)
            return cycles
        await ctx.tick()
    owed = f": the slave still owes {slave.owed_reads} R beats and {slave.owed_writes} W beats " \
           f"or B responses" if slave is not None else ""
    raise AssertionError(f"BurstTransfer.abort: not idle {bound} cycles into the abort{owed}")


# -- the reader ------------------------------------------------------------------------------

def run_reader_abort(arready_low, data_ready, seed=0, stalls=0.0):
    """A 6-burst read; ARREADY low from cycle 8 for 40 cycles (``arready_low``, and at random
    with probability ``stalls``); ``abort`` rises at cycle 20, with an AR on offer. The consumer
    takes beats with probability ``data_ready``, none at all once the abort has begun: from then
    on RVALID must not wait more than 16 cycles for RREADY (the abort drains). Returns (slave,
    outcome)."""
    dut = AxiBurstReader(data_width=32, max_beats=4, max_outstanding=4)
    ready = held_low("AR", *arready_low)
    slave = AxiSlave(dut.axi, ready=random_ready(seed, stalls, base=ready) if stalls else ready,
                     data_rate=0.6, seed=seed, watch={"abort": dut.abort, "idle": dut.idle})
    rng = random.Random(seed)
    outcome = {}

    async def consumer(ctx):
        while True:
            ctx.set(dut.data.ready, rng.random() < data_ready and slave.cycle < 20)
            await ctx.tick()

    async def driver(ctx):
        await command(ctx, dut, 0x1000, 6 * 4 * 4)
        while slave.cycle < 20:
            await ctx.tick()
        outcome["offered"] = ctx.get(dut.axi.ARVALID) and not ctx.get(dut.axi.ARREADY)
        slave.max_wait["R"] = 16
        outcome["abort"] = await abort_until_idle(ctx, dut, 400, slave)
        await ctx.tick().repeat(30)     # nothing more is asked or owed after idle
        assert ctx.get(dut.idle)

    simulate(dut, driver, background=[slave.run, consumer])
    outcome["idle"] = first_idle(slave)
    return slave, outcome


@pytest.mark.parametrize("data_ready", [1.0, 0.3])
def test_reader_abort_holds_arvalid_and_drains_the_accepted_bursts(data_ready):
    """Mutant killed: RREADY without ``| abort`` (the consumer stalls from the abort on, so the R
    beats owed wait for RREADY: AXI4_RECM_RREADY_MAX_WAIT)."""
    slave, outcome = run_reader_abort((8, 48), data_ready)
    assert outcome["offered"], "no AR on offer at the abort"
    # the AR on offer at the abort was accepted when ARREADY rose (at cycle 48), and no other
    assert [cycle for cycle, *_ in slave.ar if cycle >= 20] == [48], slave.ar
    # every beat of every accepted burst was taken before idle, and none is still owed
    assert slave.owed_reads == 0
    assert len(slave.r_beats) == sum(beats for *_, beats in slave.ar)
    assert all(cycle < outcome["idle"] for cycle, *_ in slave.r_beats)
    slave.settled()


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_reader_abort_with_random_stalls(seed):
    slave, outcome = run_reader_abort((8, 48), 0.5, seed=seed, stalls=0.3)
    assert slave.owed_reads == 0 and len(slave.r_beats) == sum(b for *_, b in slave.ar)
    slave.settled()


def test_reader_abort_with_arready_high_issues_nothing_more():
    slave, outcome = run_reader_abort((8, 8), 1.0)
    assert slave.owed_reads == 0
    assert all(cycle < 20 for cycle, *_ in slave.ar)
    slave.settled()


def run_reader(read_beat=lambda burst, beat: None, commands=((0x2000, 3 * 16),), seed=0,
               stalls=0.0):
    """Commands of 4-byte beats (bursts of at most 4), the consumer always ready; the slave's
    R beats may be faulty (``read_beat``: then only the master side is checked)."""
    dut = AxiBurstReader(data_width=32, max_beats=4)
    faulty = read_beat(None, None) is not None or any(
        read_beat(burst, beat) for burst in range(8) for beat in range(4))
    slave = AxiSlave(dut.axi, read_beat=read_beat, check_slave=not faulty, seed=seed,
                     ready=random_ready(seed, stalls) if stalls else always_ready,
                     data_rate=0.7 if stalls else 1.0)
    beats = sum(-(-length // 4) for _, length in commands)
    seen = {"data": []}

    async def consumer(ctx):
        ctx.set(dut.data.ready, 1)
        while True:
            _, _, valid, payload = await ctx.tick().sample(dut.data.valid, dut.data.payload)
            if valid:
                seen["data"].append((payload.data, payload.last))

    async def driver(ctx):
        for address, length in commands:
            await command(ctx, dut, address, length)
        for _ in range(40 * beats):
            if len(slave.r_beats) == beats and ctx.get(dut.idle):
                break
            await ctx.tick()
        else:
            raise AssertionError(f"the reader is not idle after {40 * beats} cycles: "
                                 f"{len(slave.r_beats)} of {beats} R beats taken")
        await ctx.tick().repeat(3)
        seen.update(idle=ctx.get(dut.idle), error=ctx.get(dut.error),
                    protocol=ctx.get(dut.protocol_error))
        ctx.set(dut.clear, 1)
        await ctx.tick()
        ctx.set(dut.clear, 0)
        seen.update(cleared=(ctx.get(dut.error), ctx.get(dut.protocol_error)))

    simulate(dut, driver, background=[slave.run, consumer])
    assert seen["idle"]
    if not faulty:
        slave.settled()
    return seen


@pytest.mark.parametrize("resp", [SLVERR, DECERR])
def test_reader_latches_both_error_responses(resp):
    seen = run_reader(lambda burst, beat: (beat == 3, 0, resp) if (burst, beat) == (1, 2)
                      else None)
    assert (seen["error"], seen["protocol"], seen["cleared"]) == (1, 0, (0, 0))


@pytest.mark.parametrize("fault", ["early RLAST", "missing RLAST", "RID"])
def test_reader_flags_rlast_and_rid(fault):
    def read_beat(burst, beat):
        if burst != 1:
            return None
        if fault == "early RLAST" and beat == 1:
            return (1, 0, 0)
        if fault == "missing RLAST" and beat == 3:
            return (0, 0, 0)
        if fault == "RID" and beat == 0:
            return (0, 1, 0)
        return None
    seen = run_reader(read_beat)
    assert (seen["error"], seen["protocol"], seen["cleared"]) == (0, 1, (0, 0))


def test_reader_clean_run_flags_nothing():
    seen = run_reader()
    assert (seen["error"], seen["protocol"]) == (0, 0)


#: one-beat bursts: a one-beat command, and commands whose last beat (or first) is alone on
#: its 4 KiB page; partial beats
ONE_BEAT_COMMANDS = ((0x5000, 4), (0x5FFC, 8), (0x6FF8, 9), (0x7000, 1), (0x8FF0, 20))


@pytest.mark.parametrize("seed", [0, 5])
def test_reader_one_beat_bursts(seed):
    """Mutant killed: ``single = 0`` in hw/axi/burst.py (the reader then ends no one-beat burst:
    it flags its slave's correct RLAST as a protocol error and never becomes idle)."""
    seen = run_reader(commands=ONE_BEAT_COMMANDS, seed=seed, stalls=0.3)
    assert (seen["error"], seen["protocol"]) == (0, 0), "RLAST of a one-beat burst flagged"
    assert [last for _, last in seen["data"]] == [1, 0, 1, 0, 0, 1, 1, 0, 0, 0, 0, 1]


# -- the writer ------------------------------------------------------------------------------

def run_writer(*, beats=None, commands=None, ready=always_ready, data_gap=0.0, abort_at=None,
               bresp=lambda burst: 0, bid=lambda burst: 0, seed=0, max_beats=4,
               response_latency=(0, 0), **slave_options):
    """Commands of 4-byte beats (by default one of ``beats`` beats, the last one 3 bytes), data
    offered with random gaps; with ``abort_at`` the writer is aborted at that cycle (until idle).
    Returns (slave, cycles of the data beats taken, outcome)."""
    commands = commands or [(0x3000, beats * 4 - 1)]
    total = sum(-(-length // 4) for _, length in commands)
    dut = AxiBurstWriter(data_width=32, max_beats=max_beats, max_outstanding=4)
    # every W beat writes exactly the bytes of its command (an abort: none outside them)
    slave_options.setdefault("expected_writes", commands)
    slave_options.setdefault("exact_writes", abort_at is None)
    slave = AxiSlave(dut.axi, ready=ready, data_rate=0.7, seed=seed, bresp=bresp, bid=bid,
                     response_latency=response_latency,
                     watch={"abort": dut.abort, "idle": dut.idle}, **slave_options)
    rng = random.Random(seed)
    accepted = []           # cycle of every data beat the writer took
    outcome = {}

    async def producer(ctx):
        for beat in range(total):
            while rng.random() < data_gap:
                ctx.set(dut.data.valid, 0)
                await ctx.tick()
            ctx.set(dut.data.valid, 1)
            ctx.set(dut.data.payload, 0x1000 + beat)
            while True:
                _, _, taken = await ctx.tick().sample(dut.data.ready)
                if taken:
                    accepted.append(slave.cycle - 1)
                    break
        ctx.set(dut.data.valid, 0)

    async def driver(ctx):
        for address, length in commands:
            await command(ctx, dut, address, length)
        if abort_at is not None:
            while slave.cycle < abort_at:
                await ctx.tick()
            outcome["offered"] = (ctx.get(dut.axi.AWVALID) and not ctx.get(dut.axi.AWREADY),
                                  ctx.get(dut.axi.WVALID) and not ctx.get(dut.axi.WREADY))
            outcome["abort"] = await abort_until_idle(ctx, dut, 600, slave)
        else:
            await ctx.tick().repeat(3)
            for _ in range(4000):
                if ctx.get(dut.idle) and len(accepted) == total:
                    break
                await ctx.tick()
            else:
                raise AssertionError(f"the writer is not idle: {slave.owed_writes} W beats or "
                                     f"B responses owed, {len(accepted)} of {total} data beats "
                                     f"taken")
        outcome.update(error=ctx.get(dut.error), protocol=ctx.get(dut.protocol_error))
        await ctx.tick().repeat(20)
        assert ctx.get(dut.idle)

    simulate(dut, driver, background=[slave.run, producer])
    if abort_at is not None:
        outcome["idle"] = first_idle(slave)
    slave.settled()
    return slave, accepted, outcome


def written(slave):
    return [data for _, data, *_ in slave.w_beats]


def test_writer_aw_only_once_its_burst_is_buffered():
    slave, accepted, outcome = run_writer(beats=22, data_gap=0.6)
    assert [beats for *_, beats in slave.aw] == [4] * 5 + [2]
    claimed = 0
    for cycle, _, beats in slave.aw:
        claimed += beats
        assert sum(taken < cycle for taken in accepted) >= claimed, \
            f"AW at cycle {cycle} claims {claimed} beats, {accepted} were taken"
    # the data written as given, the last beat's strobes cover its 3 bytes
    assert written(slave) == [0x1000 + beat for beat in range(22)]
    assert [strobe for _, _, strobe, _ in slave.w_beats] == [0xF] * 21 + [0x7]
    assert len(slave.b_responses) == 6 and slave.owed_writes == 0


def test_writer_w_beats_do_not_wait_for_the_aw_handshake():
    """A3.3.1. AWREADY low for the first 200 cycles: the W beats of every burst the writer may
    claim (``max_outstanding``, 4 bursts of 4 beats) are written meanwhile; the AWs are taken
    after their data. The writer that released W beats at the AW handshake wrote nothing before
    cycle 200."""
    slave, accepted, outcome = run_writer(beats=24, ready=held_low("AW", 0, 200))
    before = [cycle for cycle, *_ in slave.w_beats if cycle < 200]
    assert len(before) == 16, f"W beats before the first AW handshake: {len(before)}"
    assert slave.aw[0][0] >= 200
    assert written(slave) == [0x1000 + beat for beat in range(24)]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_writer_against_a_slave_that_takes_the_address_after_its_data(seed):
    """A slave that raises AWREADY only once it holds all of the burst's W beats (A3.3.1
    allows it to wait for WVALID): the writer completes. Mutant killed: the writer of the
    previous release, whose W beats waited for their AW's handshake (the model raises 'A3.3.1
    ... the master must not wait for AWREADY before asserting WVALID')."""
    slave, accepted, outcome = run_writer(
        commands=[(0x3000, 22 * 4 - 1), (0x3FF8, 8), (0x5000, 4)], data_gap=0.3, seed=seed,
        ready=random_ready(seed, 0.3), aw_after_w=True, response_latency=(0, 20))
    assert written(slave) == [0x1000 + beat for beat in range(22 + 2 + 1)]
    assert all(any(w < aw_cycle for w, *_ in slave.w_beats) for aw_cycle, *_ in slave.aw)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_writer_against_a_slave_that_takes_data_only_after_their_address(seed):
    slave, accepted, outcome = run_writer(
        commands=[(0x3000, 22 * 4 - 1), (0x3FF8, 8), (0x5000, 4)], data_gap=0.3, seed=seed,
        ready=random_ready(seed, 0.3), w_after_aw=True, response_latency=(0, 20))
    assert written(slave) == [0x1000 + beat for beat in range(22 + 2 + 1)]


@pytest.mark.parametrize("seed", [0, 7])
def test_writer_one_beat_bursts(seed):
    """WLAST on the only beat of a one-beat burst (A3.4.1). Mutant killed: ``single = 0`` in
    hw/axi/burst.py ('AXI4_ERRM_WDATA_NUM (A3.4.1): WLAST=0 on beat 1 of a 1-beat AW
    burst')."""
    slave, accepted, outcome = run_writer(commands=list(ONE_BEAT_COMMANDS), seed=seed,
                                          ready=random_ready(seed, 0.3), data_gap=0.2)
    assert [beats for *_, beats in slave.aw] == [1, 1, 1, 2, 1, 1, 4, 1]
    assert [last for *_, last in slave.w_beats] == [1, 1, 1, 0, 1, 1, 1, 0, 0, 0, 1, 1]


def test_writer_one_beat_per_cycle():
    """Data every cycle and a slave always ready: W runs at one beat per cycle once started."""
    slave, accepted, outcome = run_writer(beats=64, max_beats=16)
    cycles = [cycle for cycle, *_ in slave.w_beats]
    assert len(cycles) == 64 and cycles[-1] - cycles[0] + 1 <= 64 + 2, cycles
    assert accepted[-1] - accepted[0] + 1 == 64      # never stalled the producer


@pytest.mark.parametrize("seed", [0, 3, 4])
def test_writer_random_stalls_and_response_latency(seed):
    """Many commands (one-beat bursts, 4 KiB crossings, partial beats), READY stalls at random
    on every channel, random RVALID/BVALID and write-response latency: every beat written in
    order, every burst complete."""
    rng = random.Random(seed)
    commands, address = [], 0x10000
    for _ in range(12):
        length = rng.choice([1, 4, 5, 17, 63, 64, 100])
        commands.append((address, length))
        address += rng.choice([4096 - 8, 64, 4096 * 2 - 4]) + length // 4 * 4
    slave, accepted, outcome = run_writer(commands=commands, seed=seed, data_gap=0.3,
                                          ready=random_ready(seed, 0.35),
                                          response_latency=(0, 40))
    assert written(slave) == [0x1000 + beat for beat in range(len(accepted))]
    assert len(slave.b_responses) == len(slave.aw)


@pytest.mark.parametrize("channel, abort_at", [("AW", 30), ("W", 30)])
def test_writer_abort_holds_valid_and_payload(channel, abort_at):
    """READY of ``channel`` low from cycle 20 to 80: the abort at cycle 30 finds an AW (or a W
    beat) on offer; it stays, unchanged, and every claimed burst gets its AW and its beats."""
    slave, accepted, outcome = run_writer(beats=40, ready=held_low(channel, 20, 80),
                                          abort_at=abort_at)
    assert outcome["offered"][0 if channel == "AW" else 1], outcome["offered"]
    assert slave.owed_writes == 0 and len(slave.b_responses) == len(slave.aw)
    assert all(cycle < outcome["idle"] for cycle in slave.b_responses)
    assert sum(beats for *_, beats in slave.aw) == len(slave.w_beats) < 40
    # the beats sent are the data given, in order (an abort does not invent beats)
    assert written(slave) == [0x1000 + beat for beat in range(len(slave.w_beats))]


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_writer_abort_with_random_stalls(seed):
    slave, accepted, outcome = run_writer(beats=40, ready=random_ready(seed, 0.4), seed=seed,
                                          abort_at=25 + seed, data_gap=0.2,
                                          response_latency=(0, 30),
                                          aw_after_w=seed % 2 == 0, w_after_aw=seed % 2 == 1)
    assert sum(beats for *_, beats in slave.aw) == len(slave.w_beats) < 40
    assert written(slave) == [0x1000 + beat for beat in range(len(slave.w_beats))]


def test_writer_abort_drops_unclaimed_beats_and_restarts_clean():
    """After an abort the buffer is empty: a new command writes only its own data, and the
    beats of no burst are never sent. Mutant killed: the abort sending its buffer's leftover
    beats (WVALID = buffered & (burst due | abort)): 'AXI4_ERRM_WDATA_NUM (A3.4.1): 3 W beats
    that no AW burst claims (a surplus beat after WLAST)'."""
    dut = AxiBurstWriter(data_width=32, max_beats=4, max_outstanding=4)
    slave = AxiSlave(dut.axi, ready=random_ready(5, 0.3, base=held_low("AW", 0, 40)))

    async def driver(ctx):
        await command(ctx, dut, 0x3000, 6 * 4)
        for beat in range(3):                       # less than a burst: no AW
            ctx.set(dut.data.valid, 1)
            ctx.set(dut.data.payload, 0xDEAD0000 + beat)
            await ctx.tick()
        ctx.set(dut.data.valid, 0)
        await abort_until_idle(ctx, dut, 100, slave)
        await ctx.tick().repeat(10)
        slave.settled("after the abort")
        await command(ctx, dut, 0x4000, 4 * 4)
        for beat in range(4):
            ctx.set(dut.data.valid, 1)
            ctx.set(dut.data.payload, 0x1000 + beat)
            await ctx.tick().until(dut.data.ready)
        ctx.set(dut.data.valid, 0)
        while len(slave.b_responses) < 1:
            await ctx.tick()

    simulate(dut, driver, background=[slave.run])
    slave.settled()
    assert [(address, beats) for _, address, beats in slave.aw] == [(0x4000, 4)]
    assert written(slave) == [0x1000, 0x1001, 0x1002, 0x1003]


@pytest.mark.parametrize("resp", [SLVERR, DECERR])
def test_writer_latches_both_error_responses(resp):
    slave, _, outcome = run_writer(beats=12, bresp=lambda burst: resp if burst == 1 else 0)
    assert (outcome["error"], outcome["protocol"]) == (1, 0)


def test_writer_flags_a_bid_not_ours():
    slave, _, outcome = run_writer(beats=12, bid=lambda burst: 1 if burst == 2 else 0)
    assert (outcome["error"], outcome["protocol"]) == (0, 1)
    slave, _, outcome = run_writer(beats=12)
    assert (outcome["error"], outcome["protocol"]) == (0, 0)


@pytest.mark.parametrize("beats", [1, 3, 16, 17, 40])
def test_write_tail_cycles_is_the_measured_tail(beats):
    """The writer's tail (last data beat taken to last W beat), data one per cycle and a memory
    that never stalls, is :func:`write_tail_cycles` (the JACC similarity kernel's cycle model
    adds it); every rule holds meanwhile (a one-beat burst without WLAST fails here)."""
    dut = AxiBurstWriter(data_width=128)
    slave = AxiSlave(dut.axi, data_rate=1.0, watch={"taken": dut.data.valid & dut.data.ready})

    async def driver(ctx):
        await command(ctx, dut, 0x10000, beats * 16)
        await ctx.tick().repeat(5)
        ctx.set(dut.data.valid, 1)
        for beat in range(beats):
            ctx.set(dut.data.payload, beat)
            await ctx.tick().until(dut.data.ready)
        ctx.set(dut.data.valid, 0)
        await ctx.tick().repeat(40)

    simulate(dut, driver, background=[slave.run])
    assert not slave.violations, slave.violations[:3]
    slave.settled()
    taken = [cycle for cycle, value in enumerate(slave.watched["taken"]) if value]
    assert len(taken) == len(slave.w_beats) == beats
    assert taken == list(range(taken[0], taken[0] + beats)), "the writer stalled its data"
    assert slave.w_beats[-1][0] - taken[-1] == write_tail_cycles(beats)


# -- the Vitis top: reset ----------------------------------------------------------------------

async def ticks(ctx, count):
    """``count`` cycles, also through a reset (``tick().repeat`` raises DomainReset there)."""
    for _ in range(count):
        await ctx.tick()


async def tick_until(ctx, signal):
    while True:
        _, _, value = await ctx.tick().sample(signal)
        if value:
            return


def port_of(dut, prefix, signature):
    return SimpleNamespace(**{name: getattr(dut, f"{prefix}_{name}")
                              for name in signature.members})


async def lite_write(ctx, lite, offset, value):
    """One AXI-Lite write (AW and W offered together, B taken)."""
    ctx.set(lite.AWADDR, offset)
    ctx.set(lite.WDATA, value)
    ctx.set(lite.WSTRB, 0xF)
    ctx.set(lite.AWVALID, 1)
    ctx.set(lite.WVALID, 1)
    ctx.set(lite.BREADY, 1)
    pending = {"AW", "W"}
    while pending:
        _, _, aw, w = await ctx.tick().sample(lite.AWREADY, lite.WREADY)
        for channel, taken in (("AW", aw), ("W", w)):
            if taken and channel in pending:
                pending.discard(channel)
                ctx.set(getattr(lite, f"{channel}VALID"), 0)
    await tick_until(ctx, lite.BVALID)
    ctx.set(lite.BREADY, 0)


async def lite_read(ctx, lite, offset):
    ctx.set(lite.ARADDR, offset)
    ctx.set(lite.ARVALID, 1)
    await tick_until(ctx, lite.ARREADY)
    ctx.set(lite.ARVALID, 0)
    ctx.set(lite.RREADY, 1)
    while True:
        _, _, valid, value = await ctx.tick().sample(lite.RVALID, lite.RDATA)
        if valid:
            ctx.set(lite.RREADY, 0)
            return value


def run_reset_in_a_call(interconnect_reset, seed=0):
    """The copy kernel of sim.harness (32-bit bus) under its Vitis top, copying 4 KiB with READY
    stalls at random on every channel; ap_rst_n falls for 8 cycles in a cycle where WVALID is
    high (W beats and R beats in flight), with the memory side reset with it
    (``interconnect_reset``) or not. The slave models check the reset rule from the first cycle
    of the reset on. Returns what the driver saw."""
    from hw.axi.signature import Axi4Signature, AxiLiteSignature
    from hw.vitis import VitisKernel
    from kmerspec.regmap import CTRL, CTRL_AP_IDLE
    from sim.harness import CopyKernel

    core = CopyKernel(32)
    dut = VitisKernel(core)
    bus = Axi4Signature(data_width=32)
    memories = {port: AxiSlave(port_of(dut, f"m_axi_{port}", bus), name=f"m_axi_{port}",
                               ready=random_ready(seed + index, 0.3), data_rate=0.7,
                               seed=seed + index, response_latency=(0, 20), rst_n=dut.ap_rst_n,
                               slave_reset=interconnect_reset)
                for index, port in enumerate(("rd", "wr"))}
    lite = port_of(dut, "s_axi_control", AxiLiteSignature(addr_width=12))
    offsets = {arg.name: slot.words[0] for arg, slot in core.desc.register_map()}
    seen = {}

    async def driver(ctx):
        ctx.set(dut.ap_rst_n, 0)
        await ticks(ctx, 4)
        ctx.set(dut.ap_rst_n, 1)
        await ticks(ctx, 4)
        for name, value in (("src", 0x10000), ("dst", 0x40000), ("n_bytes", 4096)):
            await lite_write(ctx, lite, offsets[name], value)
        await lite_write(ctx, lite, CTRL, 1)
        while not (len(memories["wr"].w_beats) > 20 and ctx.get(dut.m_axi_wr_WVALID)
                   and memories["rd"].owed_reads):
            await ctx.tick()
        seen["owed before the reset"] = (memories["rd"].owed_reads,
                                         memories["wr"].owed_writes)
        ctx.set(dut.ap_rst_n, 0)                # WVALID is high in this cycle
        await ticks(ctx, 8)
        ctx.set(dut.ap_rst_n, 1)
        handshakes = {port: dict(memory.rules.handshakes) for port, memory in memories.items()}
        await ticks(ctx, 200)
        # the interrupted call is over: nothing is issued or taken until the next start
        seen["handshakes after the reset"] = {
            port: {channel: memory.rules.handshakes[channel] - handshakes[port][channel]
                   for channel in handshakes[port]} for port, memory in memories.items()}
        seen["stale"] = memories["rd"].rules.stale
        seen["ctrl"] = await lite_read(ctx, lite, CTRL)
        seen["fresh"] = await lite_read(ctx, lite, core.desc.status_map().fresh)

    simulate_top(dut, driver, background=[memory.run for memory in memories.values()])
    seen["idle"] = bool(seen["ctrl"] & CTRL_AP_IDLE)
    return seen


def test_top_every_valid_low_from_the_first_reset_cycle():
    """A3.1.2, ap_rst_n in a call with the memory side reset with the kernel (as the platform
    resets a compute unit with its interconnect). Mutant killed: the top without the and-ing of
    its VALIDs with ap_rst_n (the two reset register stages leave WVALID high: 'AXI4_ERRM_WVALID
    _RESET (A3.1.2): WVALID high while ARESETn is low')."""
    seen = run_reset_in_a_call(interconnect_reset=True)
    assert all(seen["owed before the reset"]), seen
    assert seen["idle"] and seen["fresh"] == 1, seen


@pytest.mark.parametrize("seed", [0, 1])
def test_top_reset_in_a_call_without_the_interconnect(seed):
    """The guarantee on ap_rst_n in a call when the memory side is not reset
    (docs/kernel_interface.md, "ap_rst_n in a call"): the kernel drives every VALID and READY
    low from the first reset cycle (a live slave would otherwise take an AR/AW/W or give an R/B
    in reset), then offers and takes nothing, though the slave still owes R beats of the
    interrupted call, until it is started again; it is idle with FRESH set. Mutants killed: no
    and-ing of RREADY with ap_rst_n ('A3.1.2: a R handshake while ARESETn is low'), of the
    VALIDs (WVALID_RESET)."""
    seen = run_reset_in_a_call(interconnect_reset=False, seed=seed)
    assert seen["stale"][0] > 0, f"the slave owed no R beat after the reset: {seen}"
    assert all(count == 0 for port in seen["handshakes after the reset"].values()
               for count in port.values()), seen["handshakes after the reset"]
    assert seen["idle"] and seen["fresh"] == 1, seen
