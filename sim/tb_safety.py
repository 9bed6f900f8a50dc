"""cocotb test of the shared shell's safety on a chunk kernel's generated Verilog (the JACC sketch
kernel): identity words, argument refusals, AXI error responses, wrong ``n_records`` both ways,
and clean state after an abort, after ap_rst_n in the middle of a call and after a FRESH write
(docs/kernel_interface.md).

Each refused or failed call must end with ap_done and its ERROR word within a bound stated
here and asserted, with no burst of either port owing anything; after each, a run of whole
genomes must give the golden records (the lane memories hold nothing of the cut-off genome: the
core clears them after its reset). Every call runs with the bench's random back-pressure on
every channel and random write-response latency (sim.tb_common.axi_settings), heavier while
calls are aborted. ap_rst_n in a call is given with the memories left out of the reset, so that
what the kernel guarantees there is tested on its own (docs/kernel_interface.md, "ap_rst_n in
a call").

Parameters: ``params`` (``kmerspec.kernels.jacc_sketch.Params.to_dict()``), ``genomes`` (lists
of files as latin-1 strings).
"""

import cocotb
from cocotb.triggers import ClockCycles
from cocotb.utils import get_sim_time
from cocotbext.axi.constants import AxiResp

from kmerspec.chunks import pack_chunks, plan_blocks
from kmerspec.kernels import params_from_dict
from kmerspec.kernels.jacc_sketch import unpack_records
from kmerspec.regmap import (CTRL, CTRL_AP_DONE, CTRL_AP_IDLE, ERROR_ARGUMENT, ERROR_AXI_READ,
                             ERROR_AXI_READ_PROTOCOL, ERROR_AXI_WRITE, ERROR_AXI_WRITE_PROTOCOL,
                             ERROR_NULL_POINTER, ERROR_RECORDS_EXTRA,
                             ERROR_RECORDS_MISSING, ERROR_UNALIGNED_POINTER)
from sim.runner import params
from sim.sketch.golden import compare_records, expected_record
from sim.tb_common import (CLOCK_PERIOD_NS, FILL, GUARD_BYTES, PAGE, KernelBench,
                           set_axil_master_pauses, watch_axi_checker)

P = params()
GEOMETRY = params_from_dict(P["params"])
DESC = GEOMETRY.desc
STATUS = DESC.status_map()
INDEX = {arg.name: index for index, arg in enumerate(DESC.args)}
#: A refused call: ap_done one cycle after the start, seen through the AXI-Lite polling (the
#: AXI-Lite master without random stalls: the bound is the kernel's; the memories keep theirs)
REFUSAL_BOUND = 64
#: Everything after the failure is detected: the abort drains at most bursts in flight x 256
#: beats on each port, the memory latency, and the writer's B responses
ABORT_BOUND = 2 * 4 * 256 + 512
#: The stall probability on every AXI channel while calls are aborted
ABORT_PAUSE = 0.5
#: Cycles the memory holds ARREADY low, an AR on offer, across an abort
ARREADY_HOLD = 2000


def checker(dut):
    """AMD's AXI protocol checker's watch of this bench (inactive without one)."""
    return watch_axi_checker(dut, dut.ap_clk, dut.ap_rst_n)


def word(code, argument=0):
    return code | argument << 8


async def start_bench(dut):
    """The KernelBench, its AXI-Lite master without random stalls (REFUSAL_BOUND)."""
    bench = await KernelBench.start(dut, DESC)
    set_axil_master_pauses(bench.driver.axil, 0.0)
    return bench


async def call(bench, *, timeout, **arguments) -> tuple[int, int]:
    """Start the kernel with ``arguments`` and wait for ap_done: (ERROR word, cycles)."""
    started = get_sim_time("ns")
    await bench.driver.set_args(**arguments)
    await bench.driver.start()
    await bench.driver.wait_done(timeout, poll_gap=2)
    cycles = round((get_sim_time("ns") - started) / CLOCK_PERIOD_NS)
    bench.settled("after a call")
    ctrl = await bench.driver.read(CTRL)
    assert ctrl & CTRL_AP_IDLE and not ctrl & CTRL_AP_DONE, hex(ctrl)
    return await bench.driver.read(STATUS.error), cycles


def chunks_of(genomes):
    return list(pack_chunks(plan_blocks(genomes, GEOMETRY, max_block_beats=16), GEOMETRY,
                            max_chunk_bytes=1024))


async def golden_run(bench, genomes, label):
    """Whole genomes through the kernel: records equal the golden model's."""
    records = []
    for chunk, tags in chunks_of(genomes):
        bench.new_call()
        src, dst = bench.input(chunk), bench.output(len(tags) * GEOMETRY.record_bytes)
        error, _ = await call(bench, timeout=200_000, src=src, n_bytes=len(chunk), dst=dst,
                              n_records=len(tags))
        assert error == 0, f"{label}: ERROR 0x{error:x} on a good call"
        records += unpack_records(bench.read_output(dst), len(tags), GEOMETRY)
    records.sort(key=lambda record: record.tag)
    compare_records(records, [expected_record(tag, files, GEOMETRY.k, GEOMETRY)
                              for tag, files in enumerate(genomes)])
    bench.dut._log.info("%s: %d genomes equal the golden model", label, len(genomes))


def faulty_reads(ram, low, high, *, resp=None, rid=None):
    """The R beats of reads of [low, high) answer ``resp`` (AxiResp.SLVERR or DECERR) and/or
    carry RID ``rid`` (an ID the kernel did not issue); returns the function that undoes it.
    (cocotbext-axi reads each beat with ``_read`` just before it sends it, and answers SLVERR
    when ``_read`` raises.)"""
    return _marked_responses(ram.read_if, "_read", ram.read_if.r_channel, low, high,
                             fail=resp is not None, marks={"rresp": resp, "rid": rid})


def faulty_writes(ram, low, high, *, resp=None, bid=None):
    """The B response of a write burst into [low, high) answers ``resp`` and/or carries BID
    ``bid`` (cocotbext-axi writes a burst's bytes with ``_write`` before its B response, and
    answers SLVERR when ``_write`` raises)."""
    return _marked_responses(ram.write_if, "_write", ram.write_if.b_channel, low, high,
                             fail=resp is not None, marks={"bresp": resp, "bid": bid})


def _marked_responses(interface, access, channel, low, high, *, fail: bool, marks: dict):
    """Wrap ``interface``'s ``access`` (``_read`` or ``_write``) so that an access of [low,
    high) raises if ``fail`` (the model then answers SLVERR), and give the next response
    ``channel`` sends after it the ``marks`` (field -> value; None leaves the field); returns
    the function that undoes it."""
    original_access, send = getattr(interface, access), channel.send
    hit = []

    async def faulty_access(address, argument):
        if low <= address < high:
            hit.append(address)
            if fail:
                raise IndexError(f"injected {access.strip('_')} error")
        return await original_access(address, argument)

    async def marked_send(response):
        if hit:
            hit.clear()
            for field, value in marks.items():
                if value is not None:
                    setattr(response, field, value)
        await send(response)
    setattr(interface, access, faulty_access)
    channel.send = marked_send

    def undo():
        setattr(interface, access, original_access)
        channel.send = send
    return undo


def assert_nothing_owed(bench, label):
    """After ap_done no burst of the call still owes an R beat, a W beat or a B response, and
    no W beat lacks its AW (an abort completed what it started: nothing of it stays in the
    interconnect)."""
    bench.settled(label)


def leave_out_of_reset(ram):
    """From now on the memory model ignores ap_rst_n, as an interconnect that is not reset with
    the kernel (every part of a cocotbext-axi model follows the reset signal on its own: its
    update is suspended). Returns the function that resets the model alone, as the platform's
    reset of the interconnect would, and gives it back to ap_rst_n."""
    parts = [ram.write_if, ram.write_if.aw_channel, ram.write_if.w_channel,
             ram.write_if.b_channel, ram.read_if, ram.read_if.ar_channel, ram.read_if.r_channel]
    for part in parts:
        part._update_reset = lambda: None

    def reset_alone():
        for part in parts:
            del part._update_reset
            part._ext_reset = False
        for part in parts:
            part.assert_reset(True)
        for part in parts:
            part.assert_reset(False)
    return reset_alone


@cocotb.test()
async def test_safety(dut):
    bench = await start_bench(dut)
    genomes = [[text.encode("latin-1") for text in files] for files in P["genomes"]]
    log = dut._log

    # -- identity: every word as the Params say ----------------------------------------------
    words = [await bench.driver.read(offset) for offset in STATUS.identity_offsets]
    assert words == list(GEOMETRY.identity_words()), words
    assert GEOMETRY.identity_mismatch(words) is None

    chunk, tags = chunks_of(genomes)[0]
    bench.new_call()
    src, dst = bench.input(chunk), bench.output(len(tags) * GEOMETRY.record_bytes)
    good = dict(src=src, n_bytes=len(chunk), dst=dst, n_records=len(tags))

    # -- refused at the start: nothing read or written ---------------------------------------
    refusals = {
        "src = 0": (dict(good, src=0), word(ERROR_NULL_POINTER, INDEX["src"])),
        "dst = 0": (dict(good, dst=0), word(ERROR_NULL_POINTER, INDEX["dst"])),
        "src unaligned": (dict(good, src=src + 4), word(ERROR_UNALIGNED_POINTER, INDEX["src"])),
        "dst unaligned": (dict(good, dst=dst + 1), word(ERROR_UNALIGNED_POINTER, INDEX["dst"])),
        "n_bytes not whole beats": (dict(good, n_bytes=len(chunk) - 1),
                                    word(ERROR_ARGUMENT, INDEX["n_bytes"])),
        "n_records beyond 32-bit lengths": (dict(good, n_records=0xFFFFFFFF),
                                            word(ERROR_ARGUMENT, INDEX["n_records"])),
    }
    reads_before = len(bench.monitors[0].r_cycles)
    writes_before = len(bench.monitors[1].w_cycles)
    for label, (arguments, expected) in refusals.items():
        error, cycles = await call(bench, timeout=REFUSAL_BOUND * 4, **arguments)
        log.info("REFUSED %s: ERROR 0x%x after %d cycles", label, error, cycles)
        assert error == expected, (label, hex(error), hex(expected))
        assert cycles <= REFUSAL_BOUND, (label, cycles)
    assert len(bench.monitors[0].r_cycles) == reads_before, "a refused call read memory"
    assert len(bench.monitors[1].w_cycles) == writes_before, "a refused call wrote memory"
    await golden_run(bench, genomes, "after refusals")

    # -- wrong n_records, both ways: aborted with ap_done -------------------------------------
    # with READY (and R/B VALID) low at random on every channel, more often than the bench's
    # default, so that the abort finds addresses and W beats on offer: the protocol monitors
    # check that they stay until READY
    bench.set_pause(ABORT_PAUSE, bench.seed + 11)
    chunk, tags = next((c, t) for c, t in chunks_of(genomes) if len(t) >= 2)
    normal_bound = 50 * len(chunk) // GEOMETRY.bus_bytes \
        + (len(tags) + 2) * 4 * (GEOMETRY.registers // 16 + 64) + 2_000
    for label, count, expected, bound in (
            ("n_records too small", len(tags) - 1, ERROR_RECORDS_EXTRA,
             normal_bound + ABORT_BOUND),
            ("n_records too large", len(tags) + 2, ERROR_RECORDS_MISSING,
             normal_bound + ABORT_BOUND + 256)):
        bench.new_call()
        src, dst = bench.input(chunk), bench.output((len(tags) + 2) * GEOMETRY.record_bytes)
        error, cycles = await call(bench, timeout=bound * 4, src=src, n_bytes=len(chunk),
                                   dst=dst, n_records=count)
        log.info("ABORTED %s: ERROR 0x%x after %d cycles (bound %d)", label, error, cycles,
                 bound)
        assert error == word(expected, INDEX["n_records"]), (label, hex(error))
        assert cycles <= bound, (label, cycles, bound)
        assert_nothing_owed(bench, label)
        # nothing written past the records the call asked for and the chunk holds (an abort
        # completes only the write bursts whose data it holds, all within those records)
        written = min(count, len(tags)) * GEOMETRY.record_bytes
        rest = bench.write_ram.read(dst + written, (len(tags) + 2) * GEOMETRY.record_bytes
                                    - written + GUARD_BYTES)
        assert rest == bytes([FILL]) * len(rest), f"{label}: bytes written past the records"
        # the genomes cut off in the lanes are forgotten without a FRESH write
        await golden_run(bench, genomes, f"after {label}")

    bench.set_pause(bench.pause, bench.seed)

    # -- an abort while the memory holds ARREADY low: the AR on offer stays until ARREADY ------
    # The chunk's last beat lies past a 4 KiB boundary, so it is read by a second burst; ARREADY
    # falls after the first AR handshake for ARREADY_HOLD cycles, so that the second AR is on
    # offer when the first genome's record (n_records = 0: one too many) aborts the call.
    bench.new_call()
    region = bench.input(bytes(len(chunk) + PAGE))
    src = region + PAGE - (len(chunk) - GEOMETRY.bus_bytes)
    bench._ram_write(bench.read_ram, src, chunk)
    dst = bench.output(GEOMETRY.record_bytes)
    reads = bench.monitors[0].rules.handshakes

    def hold_after_first_ar(first):
        while reads["AR"] == first:
            yield False
        for _ in range(ARREADY_HOLD):
            yield True
        while True:
            yield False
    bench.read_ram.read_if.ar_channel.set_pause_generator(hold_after_first_ar(reads["AR"]))
    error, cycles = await call(bench, timeout=(normal_bound + ARREADY_HOLD) * 4, src=src,
                               n_bytes=len(chunk), dst=dst, n_records=0)
    log.info("ABORTED with ARREADY held low for %d cycles: ERROR 0x%x after %d cycles",
             ARREADY_HOLD, error, cycles)
    bench.set_pause(bench.pause, bench.seed)
    assert error == word(ERROR_RECORDS_EXTRA, INDEX["n_records"]), hex(error)
    assert cycles > ARREADY_HOLD, "ap_done before the AR on offer was accepted"
    assert_nothing_owed(bench, "abort with ARREADY low")
    await golden_run(bench, genomes, "after the abort with ARREADY low")

    # -- memory error responses and protocol errors: the call completes, ERROR says so --------
    # both responses on both channels (a reader or writer that latched only one would pass
    # with one), and an RID / BID that is not the kernel's
    for label, channel, fault, expected in (
            ("SLVERR on a read", "read", {"resp": AxiResp.SLVERR}, ERROR_AXI_READ),
            ("DECERR on a read", "read", {"resp": AxiResp.DECERR}, ERROR_AXI_READ),
            ("SLVERR on a write", "write", {"resp": AxiResp.SLVERR}, ERROR_AXI_WRITE),
            ("DECERR on a write", "write", {"resp": AxiResp.DECERR}, ERROR_AXI_WRITE),
            ("an RID not ours", "read", {"rid": 1}, ERROR_AXI_READ_PROTOCOL),
            ("a BID not ours", "write", {"bid": 1}, ERROR_AXI_WRITE_PROTOCOL)):
        bench.new_call()
        src, dst = bench.input(chunk), bench.output(len(tags) * GEOMETRY.record_bytes)
        if "rid" in fault or "bid" in fault:
            # the memory breaks AXI on purpose: AMD's checker, where bound, sees it do so
            checker(dut).allow("m_axi_gmem0" if channel == "read" else "m_axi_gmem1",
                               f"the memory gives {label}")
        # a data beat of the first block (its control beats come first), the first record beat
        beat = src + GEOMETRY.control_beats * GEOMETRY.bus_bytes
        undo = (faulty_reads(bench.read_ram, beat, beat + GEOMETRY.bus_bytes, **fault)
                if channel == "read"
                else faulty_writes(bench.write_ram, dst, dst + GEOMETRY.bus_bytes, **fault))
        error, cycles = await call(bench, timeout=normal_bound * 4, src=src,
                                   n_bytes=len(chunk), dst=dst, n_records=len(tags))
        undo()
        log.info("%s: ERROR 0x%x after %d cycles", label, error, cycles)
        assert error == expected, (label, hex(error))
        assert cycles <= normal_bound, (label, cycles, normal_bound)
        assert_nothing_owed(bench, label)
    # the read error fed a zeroed beat into the lanes: a FRESH write forgets it
    await bench.driver.write(STATUS.fresh, 1)
    assert await bench.driver.read(STATUS.fresh) == 1
    await golden_run(bench, genomes, "after AXI errors and FRESH")
    assert await bench.driver.read(STATUS.fresh) == 0

    # -- FRESH between the chunks of a genome: the cut-off genome is forgotten ----------------
    first, *rest = chunks_of(genomes)
    assert not first[1] or len(chunks_of(genomes)) > 1
    bench.new_call()
    src, dst = bench.input(first[0]), bench.output(max(1, len(first[1])) * GEOMETRY.record_bytes)
    error, _ = await call(bench, timeout=200_000, src=src, n_bytes=len(first[0]), dst=dst,
                          n_records=len(first[1]))
    assert error == 0
    await bench.driver.write(STATUS.fresh, 1)
    await golden_run(bench, genomes, "after FRESH in the middle of the genomes")

    # -- ap_rst_n in the middle of a call, the memories not reset with the kernel -------------
    # (docs/kernel_interface.md, "ap_rst_n in a call"): every VALID and READY low from the first
    # reset cycle (the monitors check it; the memories go on offering what they owe), nothing
    # issued or taken afterwards until the next start, though the read memory still owes R
    # beats of the interrupted call; idle with FRESH set. Then the interconnect (the memory
    # models alone) is reset, as the platform does before the next run, and the kernel gives
    # the golden records.
    chunk, tags = chunks_of(genomes)[1]
    bench.new_call()
    src, dst = bench.input(chunk), bench.output(max(1, len(tags)) * GEOMETRY.record_bytes)
    await bench.driver.set_args(src=src, n_bytes=len(chunk), dst=dst, n_records=len(tags))
    await bench.driver.start()
    # past the core's clear (2^(p-4) words) into the chunk, in a cycle with R beats owed
    await ClockCycles(dut.ap_clk, len(chunk) // GEOMETRY.bus_bytes // 2
                      + (1 << (GEOMETRY.p - 4)) + 16)
    for _ in range(10_000):
        if bench.monitors[0].owed().r_beats:
            break
        await ClockCycles(dut.ap_clk, 1)
    reset_memories = [leave_out_of_reset(ram) for ram in (bench.read_ram, bench.write_ram)]
    for port in ("m_axi_gmem0", "m_axi_gmem1"):
        checker(dut).allow(port, "the memories are left out of the kernel's reset, outside "
                                 "AXI's contract")
    for monitor in bench.monitors:
        monitor.rules.slave_reset = False
    dut.ap_rst_n.value = 0
    await ClockCycles(dut.ap_clk, 8)
    dut.ap_rst_n.value = 1
    stale = bench.monitors[0].rules.stale
    assert stale[0] > 0, f"the read memory owed no R beat at the reset: {stale}"
    handshakes = [dict(monitor.rules.handshakes) for monitor in bench.monitors]
    await ClockCycles(dut.ap_clk, 4)
    assert await bench.driver.read(STATUS.fresh) == 1, "reset must request a clean start"
    assert await bench.driver.read(CTRL) & CTRL_AP_IDLE, "not idle after the reset"
    await ClockCycles(dut.ap_clk, 400)      # the read memory offers its stale R beats meanwhile
    for monitor, before in zip(bench.monitors, handshakes):
        assert monitor.rules.handshakes == before, \
            f"{monitor.prefix}: handshakes after the reset: {monitor.rules.handshakes} " \
            f"(before {before})"
    log.info("ap_rst_n in a call: the read memory still owed %d R beats, none taken; nothing "
             "issued for 400 cycles", stale[0])
    for reset_alone, monitor in zip(reset_memories, bench.monitors):
        reset_alone()
        monitor.rules.slave_was_reset()
        monitor.rules.slave_reset = True
    await golden_run(bench, genomes, "after ap_rst_n in a call")
    bench.check_bursts()


@cocotb.test()
async def test_pivot_refusals(dut):
    """The JSD similarity kernel (V = ``pivots``): n_pivots = V + 1 and 2V are refused with
    ERROR_ARGUMENT on n_pivots; n_pivots = V is accepted."""
    bench = await start_bench(dut)
    words = [await bench.driver.read(offset) for offset in STATUS.identity_offsets]
    assert words == list(GEOMETRY.identity_words()), words
    pivots = GEOMETRY.pivots
    bench.new_call()
    records = bench.input(bytes(GEOMETRY.record_bytes * 2 * pivots))
    out = bench.output(GEOMETRY.bus_bytes)
    for count in (pivots + 1, 2 * pivots):
        error, cycles = await call(bench, timeout=REFUSAL_BOUND * 4, pivots=records,
                                   n_pivots=count, pqas=records, n_pqas=0, out=out, mode=0)
        dut._log.info("REFUSED n_pivots=%d (V=%d): ERROR 0x%x after %d cycles", count, pivots,
                      error, cycles)
        assert error == word(ERROR_ARGUMENT, INDEX["n_pivots"]), hex(error)
        assert cycles <= REFUSAL_BOUND, cycles
    error, _ = await call(bench, timeout=200_000, pivots=records, n_pivots=pivots, pqas=records,
                          n_pqas=0, out=out, mode=0)
    assert error == 0, hex(error)


@cocotb.test()
async def test_pivot_group_refusals(dut):
    """The JACC similarity kernel (V / D pivot groups on chip): pivot_groups = 0 and V / D + 1
    are refused with ERROR_ARGUMENT on pivot_groups, nothing read or written; 1 and V / D are
    accepted and write their record blocks."""
    bench = await start_bench(dut)
    words = [await bench.driver.read(offset) for offset in STATUS.identity_offsets]
    assert words == list(GEOMETRY.identity_words()), words
    most = GEOMETRY.pivot_groups
    bench.new_call()
    sketches = bench.input(bytes(GEOMETRY.group_bytes * (most + 1)))
    features = bench.output(GEOMETRY.record_block_bytes * (most + 1))
    reads_before = len(bench.monitors[0].r_cycles)
    writes_before = len(bench.monitors[1].w_cycles)
    for count in (0, most + 1, 2 * most):
        error, cycles = await call(bench, timeout=REFUSAL_BOUND * 4, sketches=sketches,
                                   features=features, first_group=0, pivot_groups=count,
                                   stream_groups=0)
        dut._log.info("REFUSED pivot_groups=%d (V/D=%d): ERROR 0x%x after %d cycles", count,
                      most, error, cycles)
        assert error == word(ERROR_ARGUMENT, INDEX["pivot_groups"]), hex(error)
        assert cycles <= REFUSAL_BOUND, cycles
    assert len(bench.monitors[0].r_cycles) == reads_before, "a refused call read memory"
    assert len(bench.monitors[1].w_cycles) == writes_before, "a refused call wrote memory"
    for count in (1, most):
        error, _ = await call(bench, timeout=200_000, sketches=sketches, features=features,
                              first_group=0, pivot_groups=count, stream_groups=0)
        assert error == 0, (count, hex(error))
        written = bench.write_ram.read(features, GEOMETRY.record_block_bytes * count)
        assert bytes([FILL]) * GEOMETRY.record_bytes not in written[:GEOMETRY.record_bytes], \
            f"pivot_groups={count}: no record written"
    bench.check_bursts()
