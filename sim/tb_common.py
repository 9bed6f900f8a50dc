"""Shared cocotb helpers: clock and reset, random pause generators, AXI models with backpressure.

Used inside cocotb test modules (they import cocotb; do not import this from plain Python).
"""

import logging
import random

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, RisingEdge

from cocotbext.axi import AxiBus, AxiLiteBus, AxiLiteMaster, AxiRam

__all__ = ["start_clock_reset", "random_pause", "set_axi_ram_pauses", "set_axil_master_pauses",
           "make_axi_ram", "make_axil_master", "quiet_axi_logs", "start_two_memory_kernel",
           "CLOCK_PERIOD_NS"]

CLOCK_PERIOD_NS = 4   # 250 MHz, the F1/Alveo kernel clock


async def start_clock_reset(clk, rst_n=None, rst=None, cycles=8):
    """Start a 250 MHz clock on ``clk`` and pulse an active-low ``rst_n`` (or active-high ``rst``)."""
    cocotb.start_soon(Clock(clk, CLOCK_PERIOD_NS, unit="ns").start())
    if rst_n is not None:
        rst_n.value = 0
    if rst is not None:
        rst.value = 1
    await ClockCycles(clk, cycles)
    if rst_n is not None:
        rst_n.value = 1
    if rst is not None:
        rst.value = 0
    await ClockCycles(clk, 4)   # the Vitis top pipelines its reset by 2 cycles


def random_pause(probability, seed=None):
    """Endless generator for cocotbext-axi ``set_pause_generator``: True (pause) with ``probability``,
    in random runs so that both single-cycle and multi-cycle stalls occur."""
    rng = random.Random(seed)
    while True:
        if rng.random() < probability:
            for _ in range(rng.choice((1, 1, 1, 2, 3, 7))):
                yield True
        else:
            yield False


def set_axi_ram_pauses(ram, probability, seed=0):
    """Random stalls on every channel of an AxiRam: AW/W/AR ready and B/R valid."""
    if not probability:
        for ch in (ram.write_if.aw_channel, ram.write_if.w_channel, ram.write_if.b_channel,
                   ram.read_if.ar_channel, ram.read_if.r_channel):
            ch.clear_pause_generator()
        return
    chans = (ram.write_if.aw_channel, ram.write_if.w_channel, ram.write_if.b_channel,
             ram.read_if.ar_channel, ram.read_if.r_channel)
    for i, ch in enumerate(chans):
        ch.set_pause_generator(random_pause(probability, seed * 17 + i))


def set_axil_master_pauses(master, probability, seed=0):
    """Random idle cycles on every channel of an AxiLiteMaster: AW/W/AR valid, B/R ready."""
    chans = (master.write_if.aw_channel, master.write_if.w_channel, master.write_if.b_channel,
             master.read_if.ar_channel, master.read_if.r_channel)
    for i, ch in enumerate(chans):
        if probability:
            ch.set_pause_generator(random_pause(probability, seed * 31 + i))
        else:
            ch.clear_pause_generator()


def quiet_axi_logs(level=logging.WARNING):
    for name in list(logging.root.manager.loggerDict):
        if name.startswith("cocotb.") and ("axi" in name.lower() or name.count(".") >= 2):
            logging.getLogger(name).setLevel(level)


def make_axi_ram(dut, prefix, clk, rst_n, size=1 << 20, mem=None, pause=0.0, seed=0,
                 reset_active_level=False):
    ram = AxiRam(AxiBus.from_prefix(dut, prefix), clk, rst_n, reset_active_level=reset_active_level,
                 size=size, mem=mem)
    for lg in ("write_if", "read_if"):
        getattr(ram, lg).log.setLevel(logging.WARNING)
    set_axi_ram_pauses(ram, pause, seed)
    return ram


def make_axil_master(dut, prefix, clk, rst_n, pause=0.0, seed=0, reset_active_level=False):
    m = AxiLiteMaster(AxiLiteBus.from_prefix(dut, prefix), clk, rst_n,
                      reset_active_level=reset_active_level)
    for lg in ("write_if", "read_if"):
        getattr(m, lg).log.setLevel(logging.WARNING)
    set_axil_master_pauses(m, pause, seed)
    return m


async def start_two_memory_kernel(dut, size, pause=0.0, seed=0):
    """The usual bench of a gmem0-reads / gmem1-writes kernel: an AxiRam on each m_axi port and
    an AXI-Lite master, all with ``pause`` stall probability, then clock and reset.
    Returns (read RAM, write RAM, AXI-Lite master)."""
    clk, rst_n = dut.ap_clk, dut.ap_rst_n
    rd_ram = make_axi_ram(dut, "m_axi_gmem0", clk, rst_n, size=size, pause=pause, seed=seed)
    wr_ram = make_axi_ram(dut, "m_axi_gmem1", clk, rst_n, size=size, pause=pause, seed=seed + 7)
    axil = make_axil_master(dut, "s_axi_control", clk, rst_n, pause=pause, seed=seed + 3)
    quiet_axi_logs()
    await start_clock_reset(clk, rst_n)
    return rd_ram, wr_ram, axil
