"""cocotb test of the shared shell's safety on a chunk kernel's generated Verilog (the JACC sketch
kernel): identity words, argument refusals, AXI error responses, wrong ``n_records`` both ways,
and clean state after an abort, after ap_rst_n in the middle of a call and after a FRESH write
(docs/kernel_interface.md).

Each refused or failed call must end with ap_done and its ERROR word within a bound stated
here and asserted; after each, a run of whole genomes must give the golden records (the lane
memories hold nothing of the cut-off genome: the core clears them after its reset).

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
                             ERROR_AXI_WRITE, ERROR_NULL_POINTER, ERROR_RECORDS_EXTRA,
                             ERROR_RECORDS_MISSING, ERROR_UNALIGNED_POINTER)
from sim.runner import params
from sim.sketch.golden import compare_records, expected_record
from sim.tb_common import CLOCK_PERIOD_NS, FILL, GUARD_BYTES, KernelBench

P = params()
GEOMETRY = params_from_dict(P["params"])
DESC = GEOMETRY.desc
STATUS = DESC.status_map()
INDEX = {arg.name: index for index, arg in enumerate(DESC.args)}
#: A refused call: ap_done one cycle after the start, seen through the AXI-Lite polling
REFUSAL_BOUND = 64
#: Everything after the failure is detected: the abort drains at most bursts in flight x 256
#: beats on each port, the memory latency, and the writer's B responses
ABORT_BOUND = 2 * 4 * 256 + 512


def word(code, argument=0):
    return code | argument << 8


async def call(bench, *, timeout, **arguments) -> tuple[int, int]:
    """Start the kernel with ``arguments`` and wait for ap_done: (ERROR word, cycles)."""
    started = get_sim_time("ns")
    await bench.driver.set_args(**arguments)
    await bench.driver.start()
    await bench.driver.wait_done(timeout, poll_gap=2)
    cycles = round((get_sim_time("ns") - started) / CLOCK_PERIOD_NS)
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


def faulty_reads(ram, low, high):
    """Reads of [low, high) answer SLVERR (cocotbext-axi answers SLVERR when _read raises);
    returns the function that undoes it."""
    read = ram.read_if._read

    async def _read(address, length):
        if low <= address < high:
            raise IndexError("injected read error")
        return await read(address, length)
    ram.read_if._read = _read
    return lambda: setattr(ram.read_if, "_read", read)


def faulty_writes(ram, low, high):
    """Writes to [low, high) answer DECERR (SLVERR turned into DECERR on the B channel)."""
    write = ram.write_if._write
    send = ram.write_if.b_channel.send

    async def _write(address, data):
        if low <= address < high:
            raise IndexError("injected write error")
        await write(address, data)

    async def _send(response):
        if response.bresp == AxiResp.SLVERR:
            response.bresp = AxiResp.DECERR
        await send(response)
    ram.write_if._write = _write
    ram.write_if.b_channel.send = _send

    def undo():
        ram.write_if._write = write
        ram.write_if.b_channel.send = send
    return undo


@cocotb.test()
async def test_safety(dut):
    bench = await KernelBench.start(dut, DESC)
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
        # nothing written past the records the call asked for and the chunk holds (the beats
        # an abort still sends carry no byte strobe)
        written = min(count, len(tags)) * GEOMETRY.record_bytes
        rest = bench.write_ram.read(dst + written, (len(tags) + 2) * GEOMETRY.record_bytes
                                    - written + GUARD_BYTES)
        assert rest == bytes([FILL]) * len(rest), f"{label}: bytes written past the records"
        # the genomes cut off in the lanes are forgotten without a FRESH write
        await golden_run(bench, genomes, f"after {label}")

    # -- memory error responses: the call completes, ERROR says so ----------------------------
    for label, expected in (("SLVERR on a read", ERROR_AXI_READ),
                            ("DECERR on a write", ERROR_AXI_WRITE)):
        bench.new_call()
        src, dst = bench.input(chunk), bench.output(len(tags) * GEOMETRY.record_bytes)
        # a data beat of the first block (its control beats come first), the first record beat
        beat = src + GEOMETRY.control_beats * GEOMETRY.bus_bytes
        undo = (faulty_reads(bench.read_ram, beat, beat + GEOMETRY.bus_bytes)
                if expected == ERROR_AXI_READ
                else faulty_writes(bench.write_ram, dst, dst + GEOMETRY.bus_bytes))
        error, cycles = await call(bench, timeout=normal_bound * 4, src=src,
                                   n_bytes=len(chunk), dst=dst, n_records=len(tags))
        undo()
        log.info("%s: ERROR 0x%x after %d cycles", label, error, cycles)
        assert error == expected, (label, hex(error))
        assert cycles <= normal_bound, (label, cycles, normal_bound)
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

    # -- ap_rst_n in the middle of a call ------------------------------------------------------
    chunk, tags = chunks_of(genomes)[1]
    bench.new_call()
    src, dst = bench.input(chunk), bench.output(max(1, len(tags)) * GEOMETRY.record_bytes)
    await bench.driver.set_args(src=src, n_bytes=len(chunk), dst=dst, n_records=len(tags))
    await bench.driver.start()
    # past the core's clear (2^(p-4) words) into the chunk
    await ClockCycles(dut.ap_clk, len(chunk) // GEOMETRY.bus_bytes // 2
                      + (1 << (GEOMETRY.p - 4)) + 16)
    dut.ap_rst_n.value = 0
    await ClockCycles(dut.ap_clk, 8)
    dut.ap_rst_n.value = 1
    await ClockCycles(dut.ap_clk, 4)
    assert await bench.driver.read(STATUS.fresh) == 1, "reset must request a clean start"
    await golden_run(bench, genomes, "after ap_rst_n in a call")
    bench.check_bursts()


@cocotb.test()
async def test_pivot_refusals(dut):
    """The JSD similarity kernel (V = ``pivots``): n_pivots = V + 1 and 2V are refused with
    ERROR_ARGUMENT on n_pivots; n_pivots = V is accepted."""
    bench = await KernelBench.start(dut, DESC)
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
