"""cocotb module behind the XRT stand-in (sim/xrt_sim.py): one compute unit serving runs.

Parameters (sim.runner.params): ``socket`` (the Unix socket the stand-in listens on), ``banks``
(``[{tag, base, size, path}]``: the device's memory banks, sparse files the stand-in maps too),
``ports`` (``{bundle: bank tag}``, the link plan) and ``kernel_xml``. Every m_axi port gets an AXI
memory model (cocotbext-axi) over the bank it is connected to, at the bank's 64-bit device
addresses; an access outside that bank is answered with an error response and reported with the
run. Requests, one at a time, simulated time standing still in between:

* ``("start", [(offset, word), ...])``: write the argument registers over s_axi_control, then
  ap_start; answers ``("started",)``;
* ``("wait", cycles)``: let the kernel run, polling CTRL as XRT does, until ap_done or ``cycles``
  more cycles; answers ``("waited", finished, cycles since ap_start, [bank errors])`` (the cycles
  to within the polling gap: 8 cycles, growing to 1/16 of the time so far, at most 256);
* ``("close",)`` or the socket closing: the test ends.
"""

import mmap
import pathlib
from multiprocessing.connection import Client

import cocotb
from cocotb.triggers import ClockCycles

from kmerspec.interface import Arg, Bundle, KernelDesc
from kmerspec.regmap import CTRL, CTRL_AP_DONE
from sim.kernel_driver import KernelDriver
from sim.runner import params
from sim.tb_common import make_axi_ram, make_axil_master, quiet_axi_logs, start_clock_reset

P = params()
POLL_GAP = 8
MAX_POLL_GAP = 256


class BankWindow:
    """The device address space as one m_axi port sees it: its bank, at the bank's addresses.

    cocotbext-axi's memory models slice their ``mem`` with device addresses; an access outside
    the bank raises, which the model answers with SLVERR, and is recorded in ``errors``."""

    def __init__(self, port: str, bank: dict, errors: list):
        self.port, self.tag, self.errors = port, bank["tag"], errors
        self.base, self.size = bank["base"], bank["size"]
        with open(bank["path"], "r+b") as file:
            self.memory = mmap.mmap(file.fileno(), self.size)

    def __len__(self):
        return 1 << 62      # cocotbext reduces addresses modulo this; widened to 2**64 below

    def _offsets(self, key: slice, what: str):
        start, stop = key.start, key.stop
        if not (self.base <= start <= stop <= self.base + self.size):
            message = (f"{self.port} {what} of {stop - start} bytes at 0x{start:x}: outside "
                       f"{self.tag} (0x{self.base:x}..0x{self.base + self.size:x}), the bank "
                       f"the port is connected to")
            self.errors.append(message)
            raise IndexError(message)
        return start - self.base, stop - self.base

    def __getitem__(self, key: slice):
        start, stop = self._offsets(key, "read")
        return self.memory[start:stop]

    def __setitem__(self, key: slice, data):
        start, stop = self._offsets(key, "write")
        self.memory[start:stop] = bytes(data)


def described_kernel(dut) -> KernelDesc:
    """The kernel as kernel.xml describes it (names and ports only: the register offsets come
    with each start request, from the same kernel.xml)."""
    from hw.vitis.kernel_xml import parse_kernel_xml
    described = parse_kernel_xml(pathlib.Path(P["kernel_xml"]).read_text())
    args = [Arg(a["name"], "pointer", a["port"][len("m_axi_"):]) if a["qualifier"] == 1
            else Arg(a["name"], "scalar") for a in described["args"]]
    bundles = [Bundle(name[len("m_axi_"):], data_width=int(port["dataWidth"]))
               for name, port in described["ports"].items() if name.startswith("m_axi_")]
    return KernelDesc(described["name"], args, bundles)


@cocotb.test()
async def serve(dut):
    clk, rst_n = dut.ap_clk, dut.ap_rst_n
    desc = described_kernel(dut)
    banks = {bank["tag"]: bank for bank in P["banks"]}
    errors: list[str] = []
    monitors = []           # the protocol monitor of every port (sim.axi_monitor)
    for bundle in desc.bundles:
        window = BankWindow(bundle.port, banks[P["ports"][bundle.name]], errors)
        ram = make_axi_ram(dut, bundle.port, clk, rst_n, mem=window)
        ram.size = ram.read_if.size = ram.write_if.size = 1 << 64
        monitors.append(ram.monitor)
    axil = make_axil_master(dut, "s_axi_control", clk, rst_n)
    quiet_axi_logs()
    await start_clock_reset(clk, rst_n)
    driver = KernelDriver(axil, desc, clk)
    connection = Client(P["socket"], family="AF_UNIX")
    connection.send(("ready",))
    elapsed = 0
    while True:
        try:
            request = connection.recv()     # blocks the simulator: no time passes meanwhile
        except EOFError:
            break
        if request[0] == "close":
            break
        if request[0] == "start":
            for offset, word in request[1]:
                await driver.write(offset, word)
            errors.clear()
            await driver.start()
            elapsed = 0
            connection.send(("started",))
        elif request[0] == "read":
            connection.send(("value", await driver.read(request[1])))
        elif request[0] == "write":
            await driver.write(request[1], request[2])
            connection.send(("written",))
        elif request[0] == "wait":
            budget, finished = request[1], False
            while not finished and budget > 0:
                finished = bool(await driver.read(CTRL) & CTRL_AP_DONE)
                if not finished:
                    # as XRT polls: often at first, then at most every 1/16 of the time so far
                    gap = min(MAX_POLL_GAP, max(POLL_GAP, elapsed // 16))
                    await ClockCycles(clk, gap)
                    elapsed += gap
                    budget -= gap
            if finished:
                # after ap_done no burst of the run owes anything on any port
                for monitor in monitors:
                    monitor.settled("after ap_done")
            connection.send(("waited", finished, elapsed, list(errors)))
        else:
            raise ValueError(f"unknown request {request!r}")
    connection.close()
