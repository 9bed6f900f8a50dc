"""The burst reader and writer keep AXI4's handshake rules (ARM IHI 0022, A3.2.1: once VALID is
asserted it stays, with its payload, until READY) also when a call is aborted while the slave
holds READY low; an abort completes every burst whose address was accepted before the
component reports ``idle``; the writer offers an AW only once its burst's data are buffered; the
slave's RLAST/RID/BID and both error responses (SLVERR, DECERR) are checked. Amaranth simulator,
against :class:`AxiSlave`, a model of the memory side that records every rule the master breaks.
"""

import random

import pytest

from hw.axi import AxiBurstReader, AxiBurstWriter
from hw.axi.writer import write_tail_cycles
from tests.simulation import simulate


SLVERR, DECERR = 0b10, 0b11
ADDRESS_PAYLOAD = ("ADDR", "LEN", "SIZE", "BURST", "ID", "LOCK", "CACHE", "PROT", "QOS", "REGION")


class AxiSlave:
    """The slave side of one AXI4 port, in the Amaranth simulator.

    ``ready(channel, cycle)`` gives AR/AW/WREADY each cycle; accepted AR bursts are answered with
    R beats (RVALID with probability ``data_rate``), bursts whose W beats all came are answered
    with a B response. ``read_beat(burst, beat)`` may return ``(RLAST, RID, RRESP)`` to
    override the correct values (None: correct); ``bresp``/``bid`` likewise per burst.
    ``watch`` (name: signal) are sampled every cycle into ``watched[name]``.

    Checked every cycle, recorded in ``violations``: a VALID that falls or a payload (address
    channel fields, WDATA/WSTRB/WLAST) that changes while READY was low in the cycle before; a W
    beat with no accepted AW burst owing it (W leading AW); WLAST not on a burst's last beat.
    """

    def __init__(self, axi, *, ready=lambda channel, cycle: True, data_rate=1.0, seed=0,
                 read_beat=lambda burst, beat: None, bresp=lambda burst: 0,
                 bid=lambda burst: 0, watch=None):
        self.axi, self.ready, self.data_rate = axi, ready, data_rate
        self.watch = watch or {}
        self.watched = {name: [] for name in self.watch}   # their values, cycle by cycle
        self.rng = random.Random(seed)
        self.read_beat, self.bresp, self.bid = read_beat, bresp, bid
        self.violations = []
        self.cycle = 0
        self.ar = []            # (cycle, address, beats) of every accepted AR
        self.aw = []            # (cycle, address, beats)
        self.r_beats = []       # (cycle, burst index, beat index)
        self.w_beats = []       # (cycle, data, strobe, last)
        self.b_responses = []   # cycle of every B handshake
        self._reads = []        # [burst index, beats left]
        self._writes = []       # [burst index, beats left] in AW order
        self._responses = []    # burst index, its W beats complete

    def _payload(self, channel):
        if channel == "W":
            return [self.axi.WDATA, self.axi.WSTRB, self.axi.WLAST]
        return [getattr(self.axi, f"{channel}{field}") for field in ADDRESS_PAYLOAD]

    @property
    def owed_reads(self):
        return sum(left for _, left in self._reads)

    @property
    def owed_writes(self):
        return sum(left for _, left in self._writes) + len(self._responses)

    async def run(self, ctx):
        axi = self.axi
        held = {}
        while True:
            readies = {channel: bool(self.ready(channel, self.cycle))
                       for channel in ("AR", "AW", "W")}
            for channel, ready in readies.items():
                ctx.set(getattr(axi, f"{channel}READY"), ready)
            read = self._reads[0] if self._reads and self.rng.random() < self.data_rate else None
            ctx.set(axi.RVALID, read is not None)
            if read is not None:
                burst, left = read
                beat = self.ar[burst][2] - left
                rlast, rid, rresp = self.read_beat(burst, beat) or (left == 1, 0, 0)
                ctx.set(axi.RLAST, rlast)
                ctx.set(axi.RID, rid)
                ctx.set(axi.RRESP, rresp)
                ctx.set(axi.RDATA, (self.ar[burst][1] >> 2) + beat)
            respond = bool(self._responses) and self.rng.random() < self.data_rate
            ctx.set(axi.BVALID, respond)
            if respond:
                ctx.set(axi.BRESP, self.bresp(self._responses[0]))
                ctx.set(axi.BID, self.bid(self._responses[0]))
            signals = [axi.ARVALID, axi.AWVALID, axi.WVALID, axi.RREADY, axi.BREADY,
                       *self.watch.values()]
            for channel in ("AR", "AW", "W"):
                signals += self._payload(channel)
            _, _, *values = await ctx.tick().sample(*signals)
            valid = dict(zip(("AR", "AW", "W"), values[:3]))
            rready, bready = values[3:5]
            for name, value in zip(self.watch, values[5:]):
                self.watched[name].append(value)
            payloads, at = {}, 5 + len(self.watch)
            for channel in ("AR", "AW", "W"):
                count = len(self._payload(channel))
                payloads[channel] = tuple(values[at:at + count])
                at += count
            for channel in ("AR", "AW", "W"):
                if channel in held:
                    if not valid[channel]:
                        self.violations.append(f"cycle {self.cycle}: {channel}VALID fell "
                                               f"before {channel}READY")
                    elif payloads[channel] != held[channel]:
                        self.violations.append(f"cycle {self.cycle}: {channel} payload changed "
                                               f"before {channel}READY: {held[channel]} -> "
                                               f"{payloads[channel]}")
                held.pop(channel, None)
                if valid[channel] and not readies[channel]:
                    held[channel] = payloads[channel]
            if valid["AR"] and readies["AR"]:
                address, length = payloads["AR"][0], payloads["AR"][1]
                self.ar.append((self.cycle, address, length + 1))
                self._reads.append([len(self.ar) - 1, length + 1])
            if valid["AW"] and readies["AW"]:
                address, length = payloads["AW"][0], payloads["AW"][1]
                self.aw.append((self.cycle, address, length + 1))
                self._writes.append([len(self.aw) - 1, length + 1])
            if read is not None and rready:
                self.r_beats.append((self.cycle, read[0], self.ar[read[0]][2] - read[1]))
                read[1] -= 1
                if not read[1]:
                    self._reads.pop(0)
            if valid["W"] and readies["W"]:
                self.w_beats.append((self.cycle, *payloads["W"]))
                if not self._writes:
                    self.violations.append(f"cycle {self.cycle}: a W beat with no AW owing it")
                else:
                    burst = self._writes[0]
                    if payloads["W"][2] != (burst[1] == 1):
                        self.violations.append(f"cycle {self.cycle}: WLAST "
                                               f"{payloads['W'][2]} with {burst[1]} beats left")
                    burst[1] -= 1
                    if not burst[1]:
                        self._responses.append(self._writes.pop(0)[0])
            if respond and bready:
                self.b_responses.append(self.cycle)
                self._responses.pop(0)
            self.cycle += 1


def first_idle(slave):
    """The first cycle of ``idle`` high while ``abort`` was high (the watched signals)."""
    return next(cycle for cycle, (abort, idle) in
                enumerate(zip(slave.watched["abort"], slave.watched["idle"])) if abort and idle)


def held_low(channel, low_from, low_until):
    """READY of ``channel`` low in cycles [low_from, low_until), else high."""
    return lambda ch, cycle: not (ch == channel and low_from <= cycle < low_until)


async def command(ctx, dut, address, length):
    ctx.set(dut.cmd.payload, {"addr": address, "length": length})
    ctx.set(dut.cmd.valid, 1)
    await ctx.tick().until(dut.cmd.ready)
    ctx.set(dut.cmd.valid, 0)


async def abort_until_idle(ctx, dut, bound):
    """Hold ``abort`` until ``idle``; the cycles it took (at most ``bound``)."""
    ctx.set(dut.abort, 1)
    for cycles in range(bound):
        if ctx.get(dut.idle):
            await ctx.tick()
            ctx.set(dut.abort, 0)
            return cycles
        await ctx.tick()
    raise AssertionError(f"not idle {bound} cycles into the abort")


# -- the reader ------------------------------------------------------------------------------

def run_reader_abort(arready_low, data_ready, seed=0):
    """A 6-burst read; ARREADY low from cycle 8 for 40 cycles (``arready_low``); ``abort`` rises
    at cycle 20, with an AR on offer. Returns (slave, idle cycle, abort cycles)."""
    dut = AxiBurstReader(data_width=32, max_beats=4, max_outstanding=4)
    slave = AxiSlave(dut.axi, ready=held_low("AR", *arready_low), data_rate=0.6, seed=seed,
                     watch={"abort": dut.abort, "idle": dut.idle})
    rng = random.Random(seed)
    outcome = {}

    async def consumer(ctx):
        while True:
            ctx.set(dut.data.ready, rng.random() < data_ready)
            await ctx.tick()

    async def driver(ctx):
        await command(ctx, dut, 0x1000, 6 * 4 * 4)
        while slave.cycle < 20:
            await ctx.tick()
        outcome["offered"] = ctx.get(dut.axi.ARVALID) and not ctx.get(dut.axi.ARREADY)
        outcome["abort"] = await abort_until_idle(ctx, dut, 400)
        await ctx.tick().repeat(30)     # nothing more is asked or owed after idle
        assert ctx.get(dut.idle)

    simulate(dut, driver, background=[slave.run, consumer])
    outcome["idle"] = first_idle(slave)
    return slave, outcome


@pytest.mark.parametrize("data_ready", [1.0, 0.3])
def test_reader_abort_holds_arvalid_and_drains_the_accepted_bursts(data_ready):
    slave, outcome = run_reader_abort((8, 48), data_ready)
    assert outcome["offered"], "no AR on offer at the abort"
    assert not slave.violations, slave.violations[:3]
    # the AR on offer at the abort was accepted when ARREADY rose (at cycle 48), and no other
    assert [cycle for cycle, *_ in slave.ar if cycle >= 20] == [48], slave.ar
    # every beat of every accepted burst was taken before idle, and none is still owed
    assert slave.owed_reads == 0
    assert len(slave.r_beats) == sum(beats for *_, beats in slave.ar)
    assert all(cycle < outcome["idle"] for cycle, *_ in slave.r_beats)


def test_reader_abort_with_arready_high_issues_nothing_more():
    slave, outcome = run_reader_abort((8, 8), 1.0)
    assert not slave.violations, slave.violations[:3]
    assert slave.owed_reads == 0
    assert all(cycle < 20 for cycle, *_ in slave.ar)


def run_reader(read_beat=lambda burst, beat: None, bursts=3):
    dut = AxiBurstReader(data_width=32, max_beats=4)
    slave = AxiSlave(dut.axi, read_beat=read_beat)
    seen = {}

    async def driver(ctx):
        ctx.set(dut.data.ready, 1)
        await command(ctx, dut, 0x2000, bursts * 16)
        while len(slave.r_beats) < bursts * 4:
            await ctx.tick()
        await ctx.tick().repeat(3)
        seen.update(idle=ctx.get(dut.idle), error=ctx.get(dut.error),
                    protocol=ctx.get(dut.protocol_error))
        ctx.set(dut.clear, 1)
        await ctx.tick()
        ctx.set(dut.clear, 0)
        seen.update(cleared=(ctx.get(dut.error), ctx.get(dut.protocol_error)))

    simulate(dut, driver, background=[slave.run])
    assert not slave.violations, slave.violations[:3]
    assert seen["idle"]
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


# -- the writer ------------------------------------------------------------------------------

def run_writer(*, beats, ready, data_gap=0.0, abort_at=None, bresp=lambda burst: 0,
               bid=lambda burst: 0, seed=0, max_beats=4):
    """One command of ``beats`` 4-byte beats (the last one 3 bytes), data offered with random
    gaps; with ``abort_at`` the writer is aborted at that cycle (until idle)."""
    dut = AxiBurstWriter(data_width=32, max_beats=max_beats, max_outstanding=4)
    slave = AxiSlave(dut.axi, ready=ready, data_rate=0.7, seed=seed, bresp=bresp, bid=bid,
                     watch={"abort": dut.abort, "idle": dut.idle})
    rng = random.Random(seed)
    accepted = []           # cycle of every data beat the writer took
    outcome = {}

    async def producer(ctx):
        for beat in range(beats):
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
        await command(ctx, dut, 0x3000, beats * 4 - 1)
        if abort_at is not None:
            while slave.cycle < abort_at:
                await ctx.tick()
            outcome["offered"] = (ctx.get(dut.axi.AWVALID) and not ctx.get(dut.axi.AWREADY),
                                  ctx.get(dut.axi.WVALID) and not ctx.get(dut.axi.WREADY))
            outcome["abort"] = await abort_until_idle(ctx, dut, 600)
        else:
            await ctx.tick().repeat(3)
            for _ in range(2000):
                if ctx.get(dut.idle):
                    break
                await ctx.tick()
        outcome.update(error=ctx.get(dut.error), protocol=ctx.get(dut.protocol_error))
        await ctx.tick().repeat(20)
        assert ctx.get(dut.idle)

    simulate(dut, driver, background=[slave.run, producer])
    if abort_at is not None:
        outcome["idle"] = first_idle(slave)
    return slave, accepted, outcome


def test_writer_aw_only_once_its_burst_is_buffered():
    slave, accepted, outcome = run_writer(beats=22, ready=lambda ch, cycle: True, data_gap=0.6)
    assert not slave.violations, slave.violations[:3]
    assert [beats for *_, beats in slave.aw] == [4] * 5 + [2]
    claimed = 0
    for cycle, _, beats in slave.aw:
        claimed += beats
        assert sum(taken < cycle for taken in accepted) >= claimed, \
            f"AW at cycle {cycle} claims {claimed} beats, {accepted} were taken"
    # the data written as given, the last beat's strobes cover its 3 bytes
    assert [data for _, data, *_ in slave.w_beats] == [0x1000 + beat for beat in range(22)]
    assert [strobe for _, _, strobe, _ in slave.w_beats] == [0xF] * 21 + [0x7]
    assert len(slave.b_responses) == 6 and slave.owed_writes == 0


def test_writer_one_beat_per_cycle():
    """Data every cycle and a slave always ready: W runs at one beat per cycle once started."""
    slave, accepted, outcome = run_writer(beats=64, ready=lambda ch, cycle: True, max_beats=16)
    assert not slave.violations, slave.violations[:3]
    cycles = [cycle for cycle, *_ in slave.w_beats]
    assert len(cycles) == 64 and cycles[-1] - cycles[0] + 1 <= 64 + 2, cycles
    assert accepted[-1] - accepted[0] + 1 == 64      # never stalled the producer


@pytest.mark.parametrize("channel, abort_at", [("AW", 30), ("W", 30)])
def test_writer_abort_holds_valid_and_payload(channel, abort_at):
    """READY of ``channel`` low from cycle 20 to 80: the abort at cycle 30 finds an AW (or a W
    beat) on offer; it stays, unchanged, and every accepted burst gets its beats."""
    slave, accepted, outcome = run_writer(beats=40, ready=held_low(channel, 20, 80),
                                          abort_at=abort_at)
    assert outcome["offered"] == ((True, False) if channel == "AW" else (False, True))
    assert not slave.violations, slave.violations[:3]
    assert slave.owed_writes == 0 and len(slave.b_responses) == len(slave.aw)
    assert all(cycle < outcome["idle"] for cycle in slave.b_responses)
    assert sum(beats for *_, beats in slave.aw) == len(slave.w_beats) < 40
    # the beats sent are the data given, in order (an abort does not invent beats)
    assert [data for _, data, *_ in slave.w_beats] == [0x1000 + beat for beat in
                                                        range(len(slave.w_beats))]


def test_writer_abort_drops_unclaimed_beats_and_restarts_clean():
    """After an abort the buffer is empty: a new command writes only its own data."""
    dut = AxiBurstWriter(data_width=32, max_beats=4, max_outstanding=4)
    slave = AxiSlave(dut.axi, ready=held_low("AW", 0, 40))

    async def driver(ctx):
        await command(ctx, dut, 0x3000, 6 * 4)
        for beat in range(3):                       # less than a burst: no AW
            ctx.set(dut.data.valid, 1)
            ctx.set(dut.data.payload, 0xDEAD0000 + beat)
            await ctx.tick()
        ctx.set(dut.data.valid, 0)
        await abort_until_idle(ctx, dut, 100)
        await command(ctx, dut, 0x4000, 4 * 4)
        for beat in range(4):
            ctx.set(dut.data.valid, 1)
            ctx.set(dut.data.payload, 0x1000 + beat)
            await ctx.tick().until(dut.data.ready)
        ctx.set(dut.data.valid, 0)
        while len(slave.b_responses) < 1:
            await ctx.tick()

    simulate(dut, driver, background=[slave.run])
    assert not slave.violations, slave.violations[:3]
    assert [(address, beats) for _, address, beats in slave.aw] == [(0x4000, 4)]
    assert [data for _, data, *_ in slave.w_beats] == [0x1000, 0x1001, 0x1002, 0x1003]


@pytest.mark.parametrize("resp", [SLVERR, DECERR])
def test_writer_latches_both_error_responses(resp):
    slave, _, outcome = run_writer(beats=12, ready=lambda ch, cycle: True,
                                   bresp=lambda burst: resp if burst == 1 else 0)
    assert (outcome["error"], outcome["protocol"]) == (1, 0)


def test_writer_flags_a_bid_not_ours():
    slave, _, outcome = run_writer(beats=12, ready=lambda ch, cycle: True,
                                   bid=lambda burst: 1 if burst == 2 else 0)
    assert (outcome["error"], outcome["protocol"]) == (0, 1)
    slave, _, outcome = run_writer(beats=12, ready=lambda ch, cycle: True)
    assert (outcome["error"], outcome["protocol"]) == (0, 0)


@pytest.mark.parametrize("beats", [1, 3, 16, 17, 40])
def test_write_tail_cycles_is_the_measured_tail(beats):
    """The writer's tail (last data beat taken to last W beat), data one per cycle and a memory
    that never stalls, is :func:`write_tail_cycles` (the JACC similarity kernel's cycle model
    adds it)."""
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
    taken = [cycle for cycle, value in enumerate(slave.watched["taken"]) if value]
    assert len(taken) == len(slave.w_beats) == beats
    assert taken == list(range(taken[0], taken[0] + beats)), "the writer stalled its data"
    assert slave.w_beats[-1][0] - taken[-1] == write_tail_cycles(beats)
