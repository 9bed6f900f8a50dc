"""cocotb module of the F2 CL top (python -m hw.build --board f2), driven only through the
shell's ports, serving requests over a Unix socket: the bench of tests/test_f2_cl.py and the
simulation behind the SDK stand-in (sim/f2_sim.py).

What the shell would be: ``clk_main_a0`` at 250 MHz and ``rst_main_n``; OCL as an AXI4-Lite
master (cocotbext-axi) and PCIS as an AXI4 master, each with random idle cycles on every channel
(``pause``); every other shell input held at 0. What the card would be: the DDR model (an
AxiRam, or with ``memory`` "ddr" the DDR-like model of sim.ddr_memory, over a sparse 64 GiB) on
the CL's memory port (the build's ``ddr_sim_*`` ports, sh_ddr left out), with random stalls and
write-response latency, ``ddr_sim_ready`` raised ``ready_after`` cycles after the reset.

The shell's PCIS timeout (AWS_Shell_Interface_Specification.md, "PCIS Interface Timeout
Details": a transaction must complete within 8 us of its AxVALID, else the shell completes it
itself, throwing writes away and reading 0xFFFFFFFF): :class:`PcisTimeout` times every PCIS
transaction on the CL's side and fails the run when one takes more than ``pcis_timeout_cycles``
(default 8 us at 250 MHz, 2,000 cycles). The shell's own clock starts earlier (a 16-deep FIFO
lies between its timeout counters and the CL), so the figure is a lower bound of the shell's.

The project's protocol monitor (sim.axi_monitor) is on every AXI port of the top: OCL and SDA
(AXI4-Lite), PCIS and PCIM (AXI4; the shell's bursts need not follow the kernels' rules), and the
memory port. ``checker_ports`` and ``checker_source``: the ports to which the runner bound AMD's
AXI protocol checker (sim.axi_checker; sim/f2_sim.py binds it to every port when KSA_AWS_FPGA
names an aws-fpga checkout), whose ``pc_asserted`` fails the run with the rule decoded;
``unmonitored``: ports whose project monitor is left off (to show the checker alone catches a
mutant).

Requests, one at a time, simulated time standing still in between; every answer ends with the
simulated time in ns:

* ``("ocl_read", offset)`` -> ``("value", word, rresp, ns)``
* ``("ocl_write", offset, word)`` -> ``("written", bresp, ns)``
* ``("pcis_write", address, bytes)`` -> ``("written", [non-OKAY bresp], ns)`` (AxiMaster bursts)
* ``("pcis_read", address, length)`` -> ``("data", bytes, [non-OKAY rresp], ns)``
* ``("wait", cycles)`` -> ``("waited", ns)``
* ``("settled",)`` -> ``("settled", [findings], ns)``: every monitor settled (nothing owed)
* ``("report",)`` -> ``("report", {port: handshakes per channel}, [ports AMD's checker
  watches], ns)``
* ``("pcis_latency",)`` -> ``("pcis_latency", {"write": cycles, "read": cycles}, ns)``: the
  longest time a PCIS transaction took so far, from its AxVALID to its B (write) or its RLAST
  beat (read)
* ``("close",)`` or the socket closing: the test ends.
"""

from multiprocessing.connection import Client

from collections import deque

import cocotb
from cocotb.triggers import ClockCycles, ReadOnly, RisingEdge
from cocotb.utils import get_sim_time
from cocotbext.axi import AxiBus, AxiLiteBus, AxiLiteMaster, AxiMaster
from cocotbext.axi.axi_channels import (AxiARBus, AxiAWBus, AxiBBus, AxiRBus, AxiReadBus,
                                        AxiWBus, AxiWriteBus)
from cocotbext.axi.axil_channels import (AxiLiteARBus, AxiLiteAWBus, AxiLiteBBus, AxiLiteRBus,
                                         AxiLiteReadBus, AxiLiteWBus, AxiLiteWriteBus)

from hw.f2.shell import AXI_PORTS, INPUT, shell_ports
from hw.f2.top import SIM_PREFIX
from kmerspec.f2 import DDR_BYTES
from sim.axi_checker import CheckerWatch
from sim.axi_monitor import AxiProtocolMonitor
from sim.runner import params
from sim.tb_common import (axi_settings, make_axi_ram, memory_timing, quiet_axi_logs,
                           set_axil_master_pauses, start_clock_reset)

P = params()
OKAY = 0
#: the shell's PCIS timeout, 8 us at clk_main_a0's 250 MHz
PCIS_TIMEOUT_CYCLES = 8 * 250


class PcisTimeout:
    """Times every transaction of the PCIS port from its AxVALID (the cycle the shell presents
    the address) to its completion (its B, or the R beat with RLAST), per ID in order (AXI
    answers the transactions of one ID in order); ``longest`` keeps the longest of each
    direction. A transaction past ``limit`` cycles raises AssertionError (fails the test): the
    shell would have completed it itself."""

    def __init__(self, dut, clk, rst_n, limit):
        axi = AXI_PORTS["pcis"]
        self.clk, self.rst_n, self.limit = clk, rst_n, limit
        self.signals = {(ch, f): getattr(dut, axi.signal(ch, f))
                        for ch, f in (("aw", "valid"), ("aw", "ready"), ("aw", "id"),
                                      ("b", "valid"), ("b", "ready"), ("b", "id"),
                                      ("ar", "valid"), ("ar", "ready"), ("ar", "id"),
                                      ("r", "valid"), ("r", "ready"), ("r", "id"),
                                      ("r", "last"))}
        self.longest = {"write": 0, "read": 0}
        self.errors: list[str] = []
        self._task = cocotb.start_soon(self._run())

    def _high(self, channel, field):
        return str(self.signals[(channel, field)].value) == "1"

    def _value(self, channel, field):
        return int(self.signals[(channel, field)].value)

    async def _run(self):
        cycle = 0
        presented = {"aw": None, "ar": None}      # the cycle the waiting address came
        open_ = {"write": {}, "read": {}}         # ID -> deque of start cycles
        ends = {"write": ("aw", "b", None), "read": ("ar", "r", "last")}
        while True:
            await RisingEdge(self.clk)
            await ReadOnly()
            cycle += 1
            if str(self.rst_n.value) != "1":
                presented = {"aw": None, "ar": None}
                open_ = {"write": {}, "read": {}}
                continue
            if not any(self._high(ch, "valid") for ch in ("aw", "ar", "b", "r")) and \
                    not any(open_["write"].values()) and not any(open_["read"].values()):
                continue        # idle (the Python per cycle is the simulation's cost)
            for direction, (address, response, last) in ends.items():
                if self._high(address, "valid"):
                    if presented[address] is None:
                        presented[address] = cycle
                    if self._high(address, "ready"):
                        open_[direction].setdefault(self._value(address, "id"), deque()).append(
                            presented[address])
                        presented[address] = None
                if self._high(response, "valid") and self._high(response, "ready") and \
                        (last is None or self._high(response, last)):
                    starts = open_[direction].get(self._value(response, "id"))
                    if starts:
                        self.longest[direction] = max(self.longest[direction],
                                                      cycle - starts.popleft())
                waiting = [starts[0] for starts in open_[direction].values() if starts]
                if presented[address] is not None:
                    waiting.append(presented[address])
                if waiting and cycle - min(waiting) > self.limit:
                    found = (f"pcis: a {direction} took more than {self.limit} cycles from its "
                             f"{address.upper()}VALID (cycle {min(waiting)}): the shell's PCIS "
                             "timeout (8 us) would have ended it, writes thrown away and reads "
                             "0xFFFFFFFF")
                    self.errors.append(found)
                    raise AssertionError(found)


def channel_bus(dut, port, cls, channel):
    """A cocotbext channel bus of ``cls`` on the shell port ``port``'s signals (hw.f2.shell
    names them; a shell port's signals carry the prefix of the side that drives each)."""
    axi = AXI_PORTS[port]
    names = {}
    for signal in list(cls._signals) + list(cls._optional_signals):
        try:
            names[signal] = axi.signal(channel, signal[len(channel):])
        except KeyError:
            pass
    required = {s: names[s] for s in cls._signals}
    optional = {s: names[s] for s in cls._optional_signals if s in names}
    bound = type(f"F2{cls.__name__}", (cls,), {"_signals": required,
                                               "_optional_signals": optional})
    return bound(dut)


def axi_bus(dut, port):
    return AxiBus(AxiWriteBus(*(channel_bus(dut, port, cls, ch) for cls, ch in
                                ((AxiAWBus, "aw"), (AxiWBus, "w"), (AxiBBus, "b")))),
                  AxiReadBus(*(channel_bus(dut, port, cls, ch) for cls, ch in
                               ((AxiARBus, "ar"), (AxiRBus, "r")))))


def axil_bus(dut, port):
    return AxiLiteBus(AxiLiteWriteBus(*(channel_bus(dut, port, cls, ch) for cls, ch in
                                        ((AxiLiteAWBus, "aw"), (AxiLiteWBus, "w"),
                                         (AxiLiteBBus, "b")))),
                      AxiLiteReadBus(*(channel_bus(dut, port, cls, ch) for cls, ch in
                                       ((AxiLiteARBus, "ar"), (AxiLiteRBus, "r")))))


def shell_monitor(dut, port, clk, rst_n):
    """The project's monitor on the shell port ``port``."""
    axi = AXI_PORTS[port]

    def name(signal):
        for channel in ("AW", "AR", "W", "B", "R"):
            if signal.startswith(channel):
                try:
                    return axi.signal(channel.lower(), signal[len(channel):].lower())
                except KeyError:
                    return None
        return None
    return AxiProtocolMonitor(dut, port, clk, 32 if axi.lite else axi.data_width, rst_n=rst_n,
                              names=name, lite=axi.lite, kernel_rules=False)


class Shell:
    """The shell and the card around the CL: masters, memory, monitors."""

    def __init__(self, dut):
        self.dut = dut
        self.clk, self.rst_n = dut.clk_main_a0, dut.rst_main_n
        pause, seed, latency = axi_settings(P)
        for port in shell_ports():
            if port.direction == INPUT and port.name not in ("clk_main_a0", "rst_main_n") \
                    and not any(port.name == AXI_PORTS[p].signal(ch, f)
                                for p in ("ocl", "pcis")
                                for ch, f, _, by_master in AXI_PORTS[p].fields() if by_master):
                getattr(dut, port.name).value = 0
        getattr(dut, f"{SIM_PREFIX}_ready").value = 0
        self.pcis = AxiMaster(axi_bus(dut, "pcis"), self.clk, self.rst_n,
                              reset_active_level=False)
        self.ocl = AxiLiteMaster(axil_bus(dut, "ocl"), self.clk, self.rst_n,
                                 reset_active_level=False)
        set_axil_master_pauses(self.pcis, pause, seed * 7 + 1)
        set_axil_master_pauses(self.ocl, pause, seed * 7 + 2)
        self.memory = make_axi_ram(dut, SIM_PREFIX, self.clk, self.rst_n, size=DDR_BYTES,
                                   pause=pause, seed=seed * 7 + 3, ddr=memory_timing(P),
                                   response_latency=latency, kernel_rules=False)
        self.memory.size = self.memory.read_if.size = self.memory.write_if.size = DDR_BYTES
        self.monitors = {port: shell_monitor(dut, port, self.clk, self.rst_n)
                         for port in ("ocl", "pcis", "sda", "pcim")}
        self.monitors["memory"] = self.memory.monitor
        for port in P.get("unmonitored", []):        # a mutant for AMD's checker alone
            self.monitors.pop(port)._task.cancel()
        # AMD's AXI protocol checkers the runner bound to the ports (sim/f2_sim.py), if any
        self.pcis_timeout = PcisTimeout(dut, self.clk, self.rst_n,
                                        int(P.get("pcis_timeout_cycles", PCIS_TIMEOUT_CYCLES)))
        self.checkers = CheckerWatch(dut, self.clk, self.rst_n, ports=P.get("checker_ports", []),
                                     source=P.get("checker_source"), log=dut._log)
        quiet_axi_logs()

    async def start(self):
        await start_clock_reset(self.clk, self.rst_n)
        await ClockCycles(self.clk, int(P.get("ready_after", 16)))
        getattr(self.dut, f"{SIM_PREFIX}_ready").value = 1

    def findings(self):
        found = []
        try:
            self.checkers.check()
        except AssertionError as error:
            found.append(str(error))
        found += self.pcis_timeout.errors
        for port, monitor in self.monitors.items():
            found += monitor.errors
            try:
                monitor.settled(f"{port}, when asked")
            except AssertionError as error:
                found.append(str(error))
        return found

    def handshakes(self):
        return {port: dict(monitor.rules.handshakes) for port, monitor in self.monitors.items()}


def now_ns():
    return int(get_sim_time("ns"))


@cocotb.test()
async def serve(dut):
    shell = Shell(dut)
    await shell.start()
    connection = Client(P["socket"], family="AF_UNIX")
    connection.send(("ready", now_ns()))
    while True:
        try:
            request = connection.recv()     # blocks the simulator: no time passes meanwhile
        except EOFError:
            break
        kind = request[0]
        if kind == "close":
            break
        if kind == "ocl_read":
            response = await shell.ocl.read(request[1], 4)
            connection.send(("value", int.from_bytes(response.data, "little"),
                             int(response.resp), now_ns()))
        elif kind == "ocl_write":
            response = await shell.ocl.write(request[1], int(request[2]).to_bytes(4, "little"))
            connection.send(("written", int(response.resp), now_ns()))
        elif kind == "pcis_write":
            response = await shell.pcis.write(request[1], request[2])
            bad = [int(response.resp)] if int(response.resp) != OKAY else []
            connection.send(("written", bad, now_ns()))
        elif kind == "pcis_read":
            response = await shell.pcis.read(request[1], request[2])
            bad = [int(response.resp)] if int(response.resp) != OKAY else []
            connection.send(("data", bytes(response.data), bad, now_ns()))
        elif kind == "wait":
            await ClockCycles(shell.clk, max(1, int(request[1])))
            connection.send(("waited", now_ns()))
        elif kind == "settled":
            connection.send(("settled", shell.findings(), now_ns()))
        elif kind == "report":
            connection.send(("report", shell.handshakes(), shell.checkers.ports, now_ns()))
        elif kind == "pcis_latency":
            connection.send(("pcis_latency", dict(shell.pcis_timeout.longest), now_ns()))
        else:
            raise ValueError(f"unknown request {request!r}")
    connection.close()
    found = shell.findings()
    assert not found, "; ".join(found[:5])
