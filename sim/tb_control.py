"""cocotb tests of the ap_ctrl_hs control block (run through tests/test_kernel_infra.py).

Parameters: ``regs`` = [[name, width, offset], ...] (the offsets as kernel.xml states them),
``pause`` = probability of an idle cycle on each AXI-Lite channel.
"""

import random

import cocotb
from cocotb.triggers import ClockCycles, RisingEdge, ReadOnly, FallingEdge

from sim.runner import params
from kmerspec.regmap import RegArg, layout_status
from sim.tb_common import start_clock_reset, make_axil_master
from kmerspec.regmap import (CTRL, GIE, IER, ISR, CTRL_AP_START, CTRL_AP_DONE, CTRL_AP_IDLE,
                           CTRL_AP_READY, CTRL_AUTO_RESTART)

P = params()
REGS = [tuple(r) for r in P.get("regs", [])]
#: the status registers after the arguments (the harness's control block has no identity words)
STATUS = layout_status([RegArg(name, width) for name, width, _ in REGS], 0)
PAUSE = float(P.get("pause", 0.0))


async def setup(dut, seed=0):
    dut.done.value = 0
    # (the bare control block: its READYs are gated in reset by the Vitis top, not here)
    axil = make_axil_master(dut, "s_axi_control", dut.clk, dut.rst, pause=PAUSE, seed=seed,
                            reset_active_level=True, reset_readies=())
    await start_clock_reset(dut.clk, rst=dut.rst)
    return axil


async def pulse_done(dut):
    await FallingEdge(dut.clk)
    dut.done.value = 1
    await FallingEdge(dut.clk)
    dut.done.value = 0


async def run_to_done(dut, axil):
    """Start a run, let the core finish it, and give the status registers two cycles."""
    await start_run(dut, axil)
    await pulse_done(dut)
    await ClockCycles(dut.clk, 2)


async def set_gie(dut, axil, value):
    """Write GIE; the interrupt line one cycle later."""
    await axil.write_dword(GIE, value)
    await ClockCycles(dut.clk, 1)
    return int(dut.interrupt.value)


async def wait_start(dut, limit=200):
    for _ in range(limit):
        await RisingEdge(dut.clk)
        await ReadOnly()
        if int(dut.start.value):
            return
    raise AssertionError("no start pulse")


async def start_run(dut, axil, ctrl=CTRL_AP_START):
    """Write ap_start and wait for the start pulse, concurrently (the pulse may come before the
    B response of the write)."""
    waiter = cocotb.start_soon(wait_start(dut))
    await axil.write_dword(CTRL, ctrl)
    await waiter


@cocotb.test()
async def test_reset_state(dut):
    axil = await setup(dut)
    ctrl = await axil.read_dword(CTRL)
    assert ctrl == CTRL_AP_IDLE, hex(ctrl)
    for off in (GIE, IER, ISR):
        assert await axil.read_dword(off) == 0
    assert int(dut.interrupt.value) == 0
    for name, width, off in REGS:
        for i in range(width // 32):
            assert await axil.read_dword(off + 4 * i) == 0


@cocotb.test()
async def test_args_offsets(dut):
    """Every argument word at its kernel.xml offset lands in the RTL's register, low word first,
    and the snapshot handed to the core at start equals it."""
    axil = await setup(dut, seed=1)
    rng = random.Random(1)
    values = {}
    for name, width, off in REGS:
        v = rng.getrandbits(width)
        values[name] = v
        for i in range(width // 32):
            await axil.write_dword(off + 4 * i, (v >> (32 * i)) & 0xFFFFFFFF)
    await ClockCycles(dut.clk, 2)
    used = set()
    for name, width, off in REGS:
        got = int(getattr(dut, f"reg_{name}").value)
        assert got == values[name], f"{name}@0x{off:x}: RTL sees 0x{got:x}, wrote 0x{values[name]:x}"
        rb = 0
        for i in range(width // 32):
            rb |= (await axil.read_dword(off + 4 * i)) << (32 * i)
            used.add(off + 4 * i)
        assert rb == values[name], f"{name}: read back 0x{rb:x}"
    # every other word of the argument window reads 0 and writes are ignored
    end = max([off + width // 8 for _, width, off in REGS] + [0x10]) + 8
    # ERROR reads the core's code (0 here) and ignores writes; FRESH is 1 from reset on and a
    # write of 0 does not clear it (only a launch does)
    await axil.write_dword(STATUS.error, 0xFFFFFFFF)
    assert await axil.read_dword(STATUS.error) == 0
    await axil.write_dword(STATUS.fresh, 0)
    assert await axil.read_dword(STATUS.fresh) == 1
    used.update((STATUS.error, STATUS.fresh))
    for off in range(0x10, end, 4):
        if off not in used:
            await axil.write_dword(off, 0xFFFFFFFF)
            assert await axil.read_dword(off) == 0, f"unused word 0x{off:x} is not 0"
    # byte strobes: write one byte of the first argument
    if REGS:
        name, width, off = REGS[0]
        await axil.write(off + 1, b"\x5a")
        exp = (values[name] & ~(0xFF << 8)) | (0x5A << 8)
        assert int(getattr(dut, f"reg_{name}").value) == exp
        values[name] = exp
    await start_run(dut, axil)
    await RisingEdge(dut.clk)
    for name, width, off in REGS:
        assert int(getattr(dut, f"arg_{name}").value) == values[name]
    # rewrite during the run: the snapshot must not move
    for name, width, off in REGS:
        await axil.write_dword(off, 0x12345678)
    for name, width, off in REGS:
        assert int(getattr(dut, f"arg_{name}").value) == values[name], "snapshot changed"
    await pulse_done(dut)
    await ClockCycles(dut.clk, 2)


@cocotb.test()
async def test_done_clear_on_read(dut):
    axil = await setup(dut, seed=2)
    await start_run(dut, axil)
    ctrl = await axil.read_dword(CTRL)
    assert ctrl & CTRL_AP_START and not ctrl & CTRL_AP_IDLE and not ctrl & CTRL_AP_DONE, hex(ctrl)
    await ClockCycles(dut.clk, 5)
    assert int(dut.start.value) == 0 and int(dut.idle.value) == 0
    await pulse_done(dut)
    await ClockCycles(dut.clk, 2)
    ctrl = await axil.read_dword(CTRL)
    assert ctrl & CTRL_AP_DONE and ctrl & CTRL_AP_READY and ctrl & CTRL_AP_IDLE, hex(ctrl)
    assert not ctrl & CTRL_AP_START, hex(ctrl)
    ctrl = await axil.read_dword(CTRL)
    assert ctrl == CTRL_AP_IDLE, f"done/ready not cleared by the read: {ctrl:#x}"
    # the launch took FRESH (set by reset); a host write of 1 requests it for the next one
    assert await axil.read_dword(STATUS.fresh) == 0
    await axil.write_dword(STATUS.fresh, 1)
    assert await axil.read_dword(STATUS.fresh) == 1
    # a done pulse while idle is ignored
    await pulse_done(dut)
    await ClockCycles(dut.clk, 2)
    assert await axil.read_dword(CTRL) == CTRL_AP_IDLE
    # writing 0 to CTRL does not clear a pending ap_start; nothing starts twice
    await start_run(dut, axil)
    await axil.write_dword(CTRL, 0)
    assert (await axil.read_dword(CTRL)) & CTRL_AP_START
    await pulse_done(dut)
    await ClockCycles(dut.clk, 10)
    assert int(dut.idle.value) == 1
    assert (await axil.read_dword(CTRL)) == CTRL_AP_IDLE | CTRL_AP_DONE | CTRL_AP_READY


@cocotb.test()
async def test_isr_interrupt(dut):
    axil = await setup(dut, seed=3)
    # no IER: done does not set ISR
    await run_to_done(dut, axil)
    assert await axil.read_dword(ISR) == 0
    assert int(dut.interrupt.value) == 0
    await axil.read_dword(CTRL)
    # IER = done | ready, GIE = 0: ISR set, no interrupt
    await axil.write_dword(IER, 0x3)
    assert await axil.read_dword(IER) == 0x3
    await run_to_done(dut, axil)
    assert await axil.read_dword(ISR) == 0x3
    assert int(dut.interrupt.value) == 0
    assert await set_gie(dut, axil, 1) == 1
    # toggle on write: clearing bit0 leaves bit1 -> interrupt stays
    await axil.write_dword(ISR, 0x1)
    assert await axil.read_dword(ISR) == 0x2
    assert int(dut.interrupt.value) == 1
    await axil.write_dword(ISR, 0x2)
    assert await axil.read_dword(ISR) == 0x0
    await ClockCycles(dut.clk, 1)
    assert int(dut.interrupt.value) == 0
    # toggling a clear bit sets it (toggle, not write-1-to-clear)
    await axil.write_dword(ISR, 0x1)
    assert await axil.read_dword(ISR) == 0x1
    assert int(dut.interrupt.value) == 1
    await axil.write_dword(ISR, 0x1)
    assert int(dut.interrupt.value) == 0
    # IER bit0 only
    await axil.write_dword(IER, 0x1)
    await run_to_done(dut, axil)
    assert await axil.read_dword(ISR) == 0x1
    assert int(dut.interrupt.value) == 1
    assert await set_gie(dut, axil, 0) == 0


@cocotb.test()
async def test_auto_restart(dut):
    axil = await setup(dut, seed=4)
    await start_run(dut, axil, CTRL_AP_START | CTRL_AUTO_RESTART)
    assert (await axil.read_dword(CTRL)) & CTRL_AUTO_RESTART
    waiter = cocotb.start_soon(wait_start(dut))
    await pulse_done(dut)
    await waiter                       # restarted by itself
    ctrl = await axil.read_dword(CTRL)
    assert ctrl & CTRL_AP_START and ctrl & CTRL_AP_DONE and not ctrl & CTRL_AP_IDLE, hex(ctrl)
    await axil.write_dword(CTRL, 0)    # clear auto_restart
    await pulse_done(dut)
    await ClockCycles(dut.clk, 20)
    assert int(dut.idle.value) == 1
    ctrl = await axil.read_dword(CTRL)
    assert not ctrl & CTRL_AP_START and ctrl & CTRL_AP_IDLE, hex(ctrl)
