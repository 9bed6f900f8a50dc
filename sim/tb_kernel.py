"""cocotb end-to-end tests of a Vitis kernel built on the shared infrastructure (the ``checksum``
example or the ``copy_<dw>`` harness), driven over s_axi_control like XRT does.

Parameters: ``kernel`` ("checksum" | "copy"), ``data_width``, ``rd``/``wr`` (bundle names),
``cases`` = [[src_offset, dst_offset, n_bytes], ...], ``pause`` (probability of a stall on every
AXI channel, memory and control; random by default, sim.tb_common.axi_settings),
``response_latency``, ``throughput`` = [n_bytes, min_efficiency] or null (measured without
stalls), ``seed``. After every call both ports are settled (sim.axi_monitor).
"""

import random

import cocotb
from cocotb.triggers import ClockCycles, RisingEdge

from sim.runner import params
from sim.tb_common import axi_settings, make_axi_ram, make_axil_master, start_clock_reset
from sim.kernel_driver import KernelDriver
from kmerspec.regmap import GIE, IER, ISR

P = params()
KERNEL = P.get("kernel", "checksum")
DW = int(P.get("data_width", 512))
RD = P.get("rd", "gmem0")
WR = P.get("wr", "gmem1")
PAUSE, SEED, RESPONSE_LATENCY = axi_settings(P)
MEM = 1 << 20
SRC_BASE = 0x10000
DST_BASE = 0x40000
RES_BASE = 0x80000
FILL = 0xA5


def make_desc():
    if KERNEL == "checksum":
        from hw.kernels.checksum import ChecksumParams
        return ChecksumParams(DW).desc
    from sim.harness import CopyKernel
    return CopyKernel(DW).desc


async def setup(dut, pause):
    clk, rst_n = dut.ap_clk, dut.ap_rst_n
    rd_ram = make_axi_ram(dut, f"m_axi_{RD}", clk, rst_n, size=MEM, pause=pause, seed=SEED,
                          response_latency=RESPONSE_LATENCY)
    wr_ram = make_axi_ram(dut, f"m_axi_{WR}", clk, rst_n, size=MEM, pause=pause, seed=SEED + 7,
                          response_latency=RESPONSE_LATENCY)
    axil = make_axil_master(dut, "s_axi_control", clk, rst_n, pause=pause, seed=SEED + 3)
    await start_clock_reset(clk, rst_n)
    mons = (rd_ram.monitor, wr_ram.monitor)     # the protocol monitors of both ports
    return rd_ram, wr_ram, axil, KernelDriver(axil, make_desc(), clk), mons


def expect_outputs(wr_ram, dst, n):
    """The bytes the kernel's writes must write, exactly: the copy's ``n`` at ``dst`` and the
    checksum kernel's 64-byte record."""
    ranges = [(dst, n)] + ([(RES_BASE, 64)] if KERNEL == "checksum" else [])
    wr_ram.monitor.rules.expect_writes(ranges, exact=True)


async def one_case(dut, rd_ram, wr_ram, drv, src_off, dst_off, n, rng):
    src = SRC_BASE + src_off
    dst = DST_BASE + dst_off
    data = bytes(rng.getrandbits(8) for _ in range(n))
    rd_ram.write(src, data)
    rd_ram.write(src + n, bytes([0x3C]) * 256)        # garbage past the end must not count
    wr_ram.write(dst, bytes([FILL]) * (n + 256))
    wr_ram.write(RES_BASE, bytes([FILL]) * 128)
    args = {"src": src, "dst": dst, "n_bytes": n}
    if KERNEL == "checksum":
        args["res"] = RES_BASE
    # every W beat writes exactly the bytes of the copy (and the checksum record)
    expect_outputs(wr_ram, dst, n)
    await drv.run(timeout_cycles=50 * (n // (DW // 8) + 200), **args)
    for ram in (rd_ram, wr_ram):
        ram.monitor.settled(f"after the case {src_off}, {dst_off}, {n}")
    got = wr_ram.read(dst, n)
    assert got == data, f"copy mismatch n={n} src=0x{src:x}: first diff at " \
                        f"{next(i for i in range(n) if got[i] != data[i])}"
    assert wr_ram.read(dst + n, 256) == bytes([FILL]) * 256, f"wrote past the end (n={n})"
    if KERNEL == "checksum":
        from hw.kernels.checksum import checksum_model
        rec = wr_ram.read(RES_BASE, 64)
        exp = checksum_model(data, DW)
        assert rec == exp, f"record n={n}: got {rec.hex()} expected {exp.hex()}"
        assert wr_ram.read(RES_BASE + 64, 64) == bytes([FILL]) * 64


@cocotb.test()
async def test_cases(dut):
    """Every (src offset, dst offset, length) case, with random stalls on every channel."""
    rd_ram, wr_ram, axil, drv, mons = await setup(dut, PAUSE)
    rng = random.Random(SEED)
    for src_off, dst_off, n in P.get("cases", []):
        await one_case(dut, rd_ram, wr_ram, drv, src_off, dst_off, n, rng)
    for mon in mons:
        assert not mon.errors, mon.errors[:5]


@cocotb.test()
async def test_interrupt(dut):
    """GIE/IER armed: the interrupt line rises after the run and a toggle-write of ISR drops it."""
    rd_ram, wr_ram, axil, drv, mons = await setup(dut, PAUSE)
    await drv.write(GIE, 1)
    await drv.write(IER, 1)
    assert int(dut.interrupt.value) == 0
    args = {"src": SRC_BASE, "dst": DST_BASE, "n_bytes": 100}
    if KERNEL == "checksum":
        args["res"] = RES_BASE
    expect_outputs(wr_ram, DST_BASE, 100)
    await drv.set_args(**args)
    await drv.start()
    for _ in range(20000):
        await RisingEdge(dut.ap_clk)
        if int(dut.interrupt.value):
            break
    else:
        raise AssertionError("no interrupt")
    assert (await drv.read(ISR)) & 1
    await drv.wait_done()
    for mon in mons:
        mon.settled("after the call")
    await drv.write(ISR, 1)
    await ClockCycles(dut.ap_clk, 2)
    assert int(dut.interrupt.value) == 0


@cocotb.test()
async def test_throughput(dut):
    """With a memory that answers every cycle, reads and writes run at >= min_efficiency beats per
    cycle (measured over the data handshakes of one long run)."""
    tp = P.get("throughput")
    if not tp:
        return
    n, min_eff = int(tp[0]), float(tp[1])
    rd_ram, wr_ram, axil, drv, mons = await setup(dut, 0.0)
    rng = random.Random(5)
    rd_mon, wr_mon = mons
    await one_case(dut, rd_ram, wr_ram, drv, 0, 0, n, rng)
    beats = -(-n // (DW // 8))
    r = rd_mon.r_cycles[-beats:]
    w = [c for c in wr_mon.w_cycles][-(beats + (1 if KERNEL == "checksum" else 0)):][:beats]
    r_eff = beats / (r[-1] - r[0] + 1)
    w_eff = beats / (w[-1] - w[0] + 1)
    dut._log.info("throughput: %d beats, read %.4f beats/cycle, write %.4f beats/cycle",
                  beats, r_eff, w_eff)
    assert r_eff >= min_eff, f"read efficiency {r_eff:.4f} < {min_eff}"
    assert w_eff >= min_eff, f"write efficiency {w_eff:.4f} < {min_eff}"
    for mon in mons:
        assert not mon.errors, mon.errors[:5]


@cocotb.test()
async def test_control_port_posted_and_overlapping(dut):
    """The host's side of s_axi_control as a pipelining master drives it: rounds of posted
    writes (several in flight before the first B, whole words and single bytes) then
    overlapping reads of every argument word, with random stalls on every channel of the port
    (the run's ``pause``, at least 0.3): every read gives the last value written, the port's
    monitor (and AMD's checker, where bound) sees every rule kept."""
    rd_ram, wr_ram, axil, drv, mons = await setup(dut, max(PAUSE, 0.3))
    rng = random.Random(SEED + 11)
    words = [offset for _, slot in make_desc().register_map() for offset in slot.words]
    expected = dict.fromkeys(words, 0)
    for _ in range(8):
        writes = []
        for _ in range(rng.randint(3, 8)):
            offset = rng.choice(words)
            if rng.random() < 0.3:
                byte, value = rng.randrange(4), rng.getrandbits(8)
                writes.append(cocotb.start_soon(axil.write(offset + byte, bytes([value]))))
                expected[offset] = expected[offset] & ~(0xFF << 8 * byte) | value << 8 * byte
            else:
                value = rng.getrandbits(32)
                writes.append(cocotb.start_soon(axil.write_dword(offset, value)))
                expected[offset] = value
        for write in writes:
            await write
        reads = [(offset, cocotb.start_soon(axil.read_dword(offset))) for offset in words]
        values = [(offset, await read) for offset, read in reads]
        # (a few cycles for the protocol checkers, whose findings say more than a wrong value)
        await ClockCycles(dut.ap_clk, 4)
        for offset, value in values:
            assert value == expected[offset], \
                f"read 0x{value:x} at 0x{offset:x}, expected 0x{expected[offset]:x}"
    axil.monitor.settled("after the posted and overlapping accesses")
    assert not axil.monitor.errors, axil.monitor.errors[:5]
