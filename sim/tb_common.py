"""Shared cocotb helpers: clock and reset, random pause generators, AXI models with backpressure
(each with the protocol monitor of :mod:`sim.axi_monitor` on its port: the memories' ``m_axi``
ports and the control master's ``s_axi_control``; and, where the runner bound AMD's AXI protocol
checker, :func:`watch_axi_checker`) and :class:`KernelBench`, the skeleton of every kernel
testbench.

Random back-pressure is the default of every memory model a bench makes (:func:`make_axi_ram`):
READY of AR/AW/W and VALID of R/B low at random (``DEFAULT_PAUSE``) and every B response
delayed by a random number of cycles (``DEFAULT_RESPONSE_LATENCY``), seeded; a bench states its
settings in its log (``AXI stalls: ...``, which the failure message of sim.runner repeats). A run
that measures throughput asks for ``pause`` 0 (and may ask for ``response_latency`` [0, 0]).

Used inside cocotb test modules (they import cocotb; do not import this from plain Python).
"""

import logging
import os
import random
from collections import deque

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, Event, Timer
from cocotb.utils import get_sim_time

from cocotbext.axi import AxiBus, AxiLiteBus, AxiLiteMaster, AxiRam

from sim.axi_checker import FIREWALL_WAITS
from sim.axi_monitor import AxiProtocolMonitor

__all__ = ["start_clock_reset", "random_pause", "set_axi_ram_pauses", "set_axil_master_pauses",
           "make_axi_ram", "make_axil_master", "quiet_axi_logs", "start_two_memory_kernel",
           "delay_write_responses", "axi_settings", "BurstMonitor", "AxiProtocolMonitor",
           "KernelBench", "CLOCK_PERIOD_NS", "FILL", "DEFAULT_PAUSE", "DEFAULT_RESPONSE_LATENCY",
           "SEED_ENV", "MONITOR_ENV", "watch_axi_checker", "kernel_ap_done", "monitors_fatal"]

CLOCK_PERIOD_NS = 4   # 250 MHz, the F1/Alveo kernel clock
#: The stall probability on every AXI channel of a bench's memories (and AXI-Lite master) when
#: the run does not give ``pause``: with sim.tb_common.random_pause's runs of 1..7 cycles, each
#: channel is held about 38 % of the cycles
DEFAULT_PAUSE = 0.2
#: Cycles from a write burst's last W beat (as the memory model takes it) to its B response,
#: uniform in this range, when the run does not give ``response_latency``
DEFAULT_RESPONSE_LATENCY = (0, 64)
#: The environment variable that overrides the default seed of the random stalls (each run's
#: ``seed`` parameter, else 0), to explore other schedules of the same run
SEED_ENV = "KSA_AXI_SEED"
#: ``record``: the project's AXI monitors keep their findings (the bench fails on them at its
#: end, :meth:`KernelBench.check_bursts`) instead of failing the test at once; to see what AMD's
#: protocol checker, where bound, names for the same fault (docs/axi.md)
MONITOR_ENV = "KSA_AXI_MONITOR"
FILL = 0xA5           # output buffers are pre-filled with it: a write past the end shows
GUARD_BYTES = 256     # the bytes after an output buffer that must keep FILL
PAGE = 4096


async def start_clock_reset(clk, rst_n=None, rst=None, cycles=8):
    """Start a 250 MHz clock on ``clk`` and pulse an active-low ``rst_n`` (or active-high ``rst``)."""
    cocotb.start_soon(Clock(clk, CLOCK_PERIOD_NS, unit="ns").start())
    # first the inactive level, so the AXI models (which follow the reset's edges) see the reset
    # begin even when the input starts at the active level (sim.runner garbage_start randomises
    # it): in reset they ignore what the kernel drives before its own reset reaches its registers
    if rst_n is not None:
        rst_n.value = 1
    if rst is not None:
        rst.value = 0
    await Timer(1, unit="ns")
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
    """Random stalls on every channel of an AxiRam (or DdrAxiRam): AW/W/AR ready and B/R valid.
    A DdrAxiRam keeps its refresh gaps on R."""
    chans = (ram.write_if.aw_channel, ram.write_if.w_channel, ram.write_if.b_channel,
             ram.read_if.ar_channel, ram.read_if.r_channel)
    for i, ch in enumerate(chans):
        generator = random_pause(probability, seed * 17 + i) if probability else None
        if ch is ram.read_if.r_channel and hasattr(ram.read_if, "set_random_pauses"):
            ram.read_if.set_random_pauses(generator)
        elif generator is None:
            ch.clear_pause_generator()
            ch.pause = False      # (clearing the generator leaves its last value: maybe paused)
        else:
            ch.set_pause_generator(generator)


def set_axil_master_pauses(master, probability, seed=0):
    """Random idle cycles on every channel of an AxiLiteMaster: AW/W/AR valid, B/R ready."""
    chans = (master.write_if.aw_channel, master.write_if.w_channel, master.write_if.b_channel,
             master.read_if.ar_channel, master.read_if.r_channel)
    for i, ch in enumerate(chans):
        if probability:
            ch.set_pause_generator(random_pause(probability, seed * 31 + i))
        else:
            ch.clear_pause_generator()
            ch.pause = False      # (clearing the generator leaves its last value: maybe paused)


def quiet_axi_logs(level=logging.WARNING):
    for name in list(logging.root.manager.loggerDict):
        if name.startswith("cocotb.") and ("axi" in name.lower() or name.count(".") >= 2):
            logging.getLogger(name).setLevel(level)


def axi_settings(settings: dict, pause=None, seed=None, response_latency=None):
    """(pause, seed, response latency) of a bench: the arguments, else the run's parameters
    ``pause``/``seed``/``response_latency``, else the defaults (the seed from ``SEED_ENV`` if
    set)."""
    pause = float(settings.get("pause", DEFAULT_PAUSE)) if pause is None else pause
    if seed is None:
        seed = int(os.environ.get(SEED_ENV) or settings.get("seed", 0))
    if response_latency is None:
        response_latency = tuple(settings.get("response_latency", DEFAULT_RESPONSE_LATENCY))
    return pause, seed, tuple(response_latency)


class ResponseDelay:
    """Each B response of a cocotbext-axi memory's write side offered ``low..high`` cycles
    (uniform, seeded) after the model finished its burst, in order: its ``b_channel.send`` is
    replaced by one that queues the response with its due time (so the write side goes on
    taking AW and W meanwhile) and a task that hands each to the channel when due. A reset of
    the write side drops the queued responses, as it drops its own."""

    def __init__(self, write_if, clock, low, high, seed):
        self.channel, self.clock = write_if.b_channel, clock
        self.low, self.high = low, high
        self.rng = random.Random(seed)
        self.queue = deque()
        self.arrived = Event()
        self.send = self.channel.send
        self.channel.send = self.delayed
        handle_reset = write_if._handle_reset

        def reset(state):
            if state:
                self.queue.clear()
            handle_reset(state)
        write_if._handle_reset = reset
        cocotb.start_soon(self._run())

    @staticmethod
    def now():
        return int(get_sim_time("ns")) // CLOCK_PERIOD_NS

    async def delayed(self, response):
        due = self.now() + self.rng.randint(self.low, self.high)
        self.queue.append((max(due, self.queue[-1][0]) if self.queue else due, response))
        self.arrived.set()

    async def _run(self):
        while True:
            while not self.queue:
                self.arrived.clear()
                await self.arrived.wait()
            due, response = self.queue[0]
            if due > self.now():
                await ClockCycles(self.clock, due - self.now())
            if self.queue and self.queue[0][1] is response:   # (not dropped by a reset)
                self.queue.popleft()
                await self.send(response)


def delay_write_responses(ram, clock, response_latency, seed=0):
    """Random write-response latency on ``ram`` (an AxiRam or DdrAxiRam): see
    :class:`ResponseDelay`; nothing for (0, 0)."""
    low, high = response_latency
    if high > 0:
        ram.response_delay = ResponseDelay(ram.write_if, clock, low, high, seed)


def make_axi_ram(dut, prefix, clk, rst_n, size=1 << 20, mem=None, pause=None, seed=None,
                 reset_active_level=False, ddr=None, response_latency=None, kernel_rules=True):
    """An ideal AxiRam, or with ``ddr`` (a sim.ddr_memory.DdrTiming) the DDR-like DdrAxiRam,
    with random stalls on every channel (``pause``) and random write-response latency
    (``response_latency``, cycles (low, high)); None takes the defaults (:func:`axi_settings`
    without parameters). ``ram.monitor`` is the :class:`~sim.axi_monitor.AxiProtocolMonitor`
    of its port (a broken rule fails the test at once; ``kernel_rules``: with the kernels' burst
    rules, sim.axi_monitor)."""
    pause, seed, response_latency = axi_settings({}, pause, seed, response_latency)
    dut._log.info("AXI stalls: %s: pause %.2f on every channel, B responses %d..%d cycles after "
                  "their last W beat, seed %d (run parameters pause, response_latency, seed; "
                  "%s=N overrides a default seed)", prefix, pause, *response_latency, seed,
                  SEED_ENV)
    watch_axi_checker(dut, clk, rst_n, reset_active_level)
    bus = AxiBus.from_prefix(dut, prefix)
    if ddr is None:
        ram = AxiRam(bus, clk, rst_n, reset_active_level=reset_active_level, size=size, mem=mem)
    else:
        from sim.ddr_memory import DdrAxiRam
        ram = DdrAxiRam(bus, clk, rst_n, reset_active_level=reset_active_level, size=size,
                        mem=mem, timing=ddr)
    for lg in ("write_if", "read_if"):
        getattr(ram, lg).log.setLevel(logging.WARNING)
    set_axi_ram_pauses(ram, pause, seed)
    delay_write_responses(ram, clk, response_latency, seed * 13 + 5)
    # the kernel is the master: its RREADY/BREADY low in and right after reset, the waits an
    # SI-side AXI firewall times, nothing owed in the edge its ap_done rises
    ram.monitor = AxiProtocolMonitor(dut, prefix, clk, len(getattr(dut, f"{prefix}_WDATA")),
                                     rst_n=rst_n if not reset_active_level else None,
                                     kernel_rules=kernel_rules,
                                     reset_readies=("R", "B"), waits=FIREWALL_WAITS["master"],
                                     done=kernel_ap_done(dut))
    ram.monitor.rules.fatal = monitors_fatal()
    return ram


def monitors_fatal() -> bool:
    """Whether the project's AXI monitors fail a test at their first finding (``MONITOR_ENV``)."""
    mode = os.environ.get(MONITOR_ENV, "fatal")
    if mode not in ("fatal", "record"):
        raise ValueError(f"{MONITOR_ENV} must be 'fatal' or 'record', not {mode!r}")
    return mode == "fatal"


def kernel_ap_done(dut):
    """The ``ap_done`` register of a Vitis kernel's control block (``control.ap_done`` in the
    generated Verilog), or None for a design without one."""
    try:
        return dut.control.ap_done
    except AttributeError:
        return None


#: the CheckerWatch of each simulated toplevel (one per simulation: cocotb runs one toplevel)
_CHECKER_WATCHES = {}


def watch_axi_checker(dut, clk, rst_n, reset_active_level=False):
    """The :class:`~sim.axi_checker.CheckerWatch` of ``dut``: AMD's AXI protocol checker on
    every AXI port the runner bound it to fails the test when it fires (nothing bound without
    ``KSA_AWS_FPGA``: the log says so). Started once per test, by the first memory model or
    control master a bench makes."""
    from sim.axi_checker import CheckerWatch
    key = id(dut)
    watch = _CHECKER_WATCHES.get(key)
    if watch is None or not watch.running:       # (the tasks of a test end with it)
        watch = _CHECKER_WATCHES[key] = CheckerWatch(dut, clk, rst_n,
                                                     reset_active_level=reset_active_level,
                                                     log=dut._log)
    return watch


def make_axil_master(dut, prefix, clk, rst_n, pause=0.0, seed=0, reset_active_level=False,
                     reset_readies=("AR", "AW", "W")):
    """An AxiLiteMaster on the control port ``prefix`` with random idle cycles (``pause``) and
    ``m.monitor``, the project's AXI4-Lite monitor of the port (the kernel is the slave: its
    ``reset_readies`` low in and right after reset, the waits of an MI-side AXI firewall; a bare
    control block without the Vitis top passes ``reset_readies=()``)."""
    watch_axi_checker(dut, clk, rst_n, reset_active_level)
    m = AxiLiteMaster(AxiLiteBus.from_prefix(dut, prefix), clk, rst_n,
                      reset_active_level=reset_active_level)
    for lg in ("write_if", "read_if"):
        getattr(m, lg).log.setLevel(logging.WARNING)
    set_axil_master_pauses(m, pause, seed)
    m.monitor = AxiProtocolMonitor(dut, prefix, clk, len(getattr(dut, f"{prefix}_WDATA")),
                                   rst_n=rst_n, reset_active_level=reset_active_level,
                                   lite=True, reset_readies=reset_readies,
                                   waits=FIREWALL_WAITS["slave"])
    m.monitor.rules.fatal = monitors_fatal()
    return m


def memory_timing(settings: dict):
    """The memory model a bench's parameters ask for: ``memory`` "ideal" (default: AxiRam) or
    "ddr" (DdrAxiRam with the ``ddr`` timing fields over sim.ddr_memory.DDR4); None for ideal."""
    memory = settings.get("memory", "ideal")
    if memory == "ideal":
        return None
    if memory != "ddr":
        raise ValueError(f"memory must be 'ideal' or 'ddr', not {memory!r}")
    from sim.ddr_memory import DdrTiming
    return DdrTiming.from_dict(settings.get("ddr"))


async def start_two_memory_kernel(dut, size, pause=DEFAULT_PAUSE, seed=0, ddr=None,
                                  response_latency=DEFAULT_RESPONSE_LATENCY):
    """The usual bench of a gmem0-reads / gmem1-writes kernel: an AxiRam (or with ``ddr`` a
    DdrAxiRam) on each m_axi port and an AXI-Lite master, all with ``pause`` stall probability
    (and the write memory with ``response_latency``), then clock and reset. Returns (read RAM,
    write RAM, AXI-Lite master)."""
    clk, rst_n = dut.ap_clk, dut.ap_rst_n
    rd_ram = make_axi_ram(dut, "m_axi_gmem0", clk, rst_n, size=size, pause=pause, seed=seed,
                          ddr=ddr, response_latency=response_latency)
    wr_ram = make_axi_ram(dut, "m_axi_gmem1", clk, rst_n, size=size, pause=pause, seed=seed + 7,
                          ddr=ddr, response_latency=response_latency)
    axil = make_axil_master(dut, "s_axi_control", clk, rst_n, pause=pause, seed=seed + 3)
    quiet_axi_logs()
    await start_clock_reset(clk, rst_n)
    return rd_ram, wr_ram, axil


#: The checker of every m_axi port (sim.axi_monitor); the old name kept for the benches
BurstMonitor = AxiProtocolMonitor


class KernelBench:
    """The skeleton of a kernel testbench: an AxiRam on m_axi_gmem0 (read) and m_axi_gmem1
    (write), an AXI-Lite master, clock and reset, a :class:`BurstMonitor` on both bundles and a
    :class:`~sim.kernel_driver.KernelDriver`, all from the test's ``pause``, ``seed``,
    ``response_latency`` (:func:`axi_settings`: random stalls and B latency by default),
    ``memory`` and ``ddr`` parameters (:func:`memory_timing`; ``memory_bytes`` overrides the size of each
    memory, 4 MiB unless the testbench asks otherwise); buffers placed one after another at 4
    KiB-aligned addresses from 0x1000, or with the parameter ``address_base`` (64-byte aligned)
    each ``address_base`` further: the memories wrap their addresses modulo their size, so with
    a base just below 2^32 - 0x1000 the kernel's first buffer crosses into the upper half of its
    64-bit addresses (``memory_bytes`` then must not divide 2^32, so that an address off by
    2^32 reaches other bytes).

    ``bench = await KernelBench.start(dut, desc)``; per call ``bench.new_call()``, then
    ``bench.input(data)`` and ``bench.output(size)`` give addresses for the kernel arguments,
    ``await bench.driver.run(...)``, and ``bench.read_output(address)`` returns the bytes written
    (checking that nothing was written past them); after every call of :meth:`timed_call` (and
    :meth:`run_chunks`) both ports are settled (no burst owes anything), and
    ``bench.check_bursts()`` checks that at the end.
    """

    def __init__(self, dut, desc, memory_bytes, pause, seed, address_base=0):
        assert address_base % 64 == 0, f"address_base 0x{address_base:x} is not 64-byte aligned"
        # else a wrong upper address half would reach the same bytes of the wrapping memory
        assert not address_base or (1 << 32) % memory_bytes, \
            "with address_base, memory_bytes must not divide 2^32"
        self.dut, self.desc, self.memory_bytes = dut, desc, memory_bytes
        self.address_base = address_base
        self.pause, self.seed = pause, seed
        self.data_width = desc.bundles[0].data_width
        self._outputs = {}
        self.calls = []          # (input beats, cycles from ap_start to ap_done) of every call
        self.new_call()

    @classmethod
    async def start(cls, dut, desc, *, memory_bytes=1 << 22, pause=None, seed=None):
        from sim.kernel_driver import KernelDriver
        from sim.runner import params
        settings = params()
        memory_bytes = int(settings.get("memory_bytes", memory_bytes))
        pause, seed, response_latency = axi_settings(settings, pause, seed)
        bench = cls(dut, desc, memory_bytes, pause, seed, int(settings.get("address_base", 0)))
        clk = dut.ap_clk
        bench.read_ram, bench.write_ram, axil = await start_two_memory_kernel(
            dut, memory_bytes, pause, seed, ddr=memory_timing(settings),
            response_latency=response_latency)
        bench.monitors = (bench.read_ram.monitor, bench.write_ram.monitor)
        bench.control = axil.monitor
        # every byte the kernel writes lies in an output buffer of the call (bench.output)
        bench.write_ram.monitor.rules.expect_writes([], exact=False)
        bench.driver = KernelDriver(axil, desc, clk)
        return bench

    def set_pause(self, probability, seed):
        """Change the stall probability of both memories (between calls)."""
        set_axi_ram_pauses(self.read_ram, probability, seed)
        set_axi_ram_pauses(self.write_ram, probability, seed + 100)

    def new_call(self):
        """Place the next call's buffers from the start of both memories again."""
        self._next = {"read": PAGE, "write": PAGE}
        self._outputs.clear()
        if hasattr(self, "write_ram"):
            self.write_ram.monitor.rules.expect_writes([], exact=False)

    def _place(self, memory, size):
        address = self._next[memory]
        self._next[memory] = -(-(address + size + GUARD_BYTES) // PAGE) * PAGE
        assert self._next[memory] <= self.memory_bytes, f"{memory} memory too small"
        return self.address_base + address

    def _ram_pieces(self, address, size):
        """(memory address, offset, length) of the bytes [address, address + size) in a memory
        that wraps its addresses modulo its size."""
        ram = address % self.memory_bytes
        first = min(size, self.memory_bytes - ram)
        return [(ram, 0, first)] + ([(0, first, size - first)] if size > first else [])

    def _ram_write(self, ram, address, data):
        for at, offset, length in self._ram_pieces(address, len(data)):
            ram.write(at, data[offset:offset + length])

    def _ram_read(self, ram, address, size):
        return b"".join(ram.read(at, length) for at, _, length in self._ram_pieces(address, size))

    def input(self, data: bytes) -> int:
        """Copy ``data`` into the read memory; its address."""
        address = self._place("read", len(data))
        self._ram_write(self.read_ram, address, data)
        return address

    def output(self, size: int) -> int:
        """Reserve ``size`` bytes (pre-filled with FILL) in the write memory; its address."""
        address = self._place("write", size)
        self._ram_write(self.write_ram, address, bytes([FILL]) * (size + GUARD_BYTES))
        self._outputs[address] = size
        self.write_ram.monitor.rules.add_expected_write(address, size)
        return address

    def read_output(self, address: int) -> bytes:
        """The bytes the kernel wrote to the output at ``address``; nothing past them."""
        size = self._outputs[address]
        guard = self._ram_read(self.write_ram, address + size, GUARD_BYTES)
        assert guard == bytes([FILL]) * GUARD_BYTES, \
            f"{self.desc.name} wrote past the {size}-byte output at 0x{address:x}"
        return self._ram_read(self.write_ram, address, size)

    async def run_chunks(self, genomes, geometry, timeout_cycles, *, max_block_beats,
                         max_chunk_bytes, **scalars) -> list:
        """Send ``genomes`` to a chunk kernel as the host does (``kmerspec.chunks`` planning and
        packing), one call per chunk with the extra ``scalars``; each call is bounded by
        ``timeout_cycles(chunk, tags)``. Returns every call's output buffer, in call order."""
        from kmerspec.chunks import pack_chunks, plan_blocks
        outputs = []
        blocks = plan_blocks(genomes, geometry, max_block_beats=max_block_beats)
        for chunk, tags in pack_chunks(blocks, geometry, max_chunk_bytes=max_chunk_bytes):
            self.new_call()
            src, dst = self.input(chunk), self.output(len(tags) * geometry.record_bytes)
            cycles = await self.timed_call(timeout_cycles(chunk, tags), len(chunk), src=src,
                                           n_bytes=len(chunk), dst=dst, n_records=len(tags),
                                           **scalars)
            outputs.append(self.read_output(dst))
            self.dut._log.info("chunk of %d beats, %d records: %d cycles",
                               len(chunk) // geometry.bus_bytes, len(tags), cycles)
        return outputs

    async def timed_call(self, timeout_cycles, input_bytes, **arguments) -> int:
        """One kernel call; its cycles from the ap_start write to the ap_done read (as the host
        sees a call: memory latency, genome ends and record writes included) are appended to
        ``calls`` with its input beats."""
        from cocotb.utils import get_sim_time
        await self.driver.set_args(**arguments)
        started = get_sim_time("ns")
        await self.driver.run(timeout_cycles)      # the arguments are already written
        cycles = round((get_sim_time("ns") - started) / CLOCK_PERIOD_NS)
        self.calls.append((input_bytes * 8 // self.data_width, cycles))
        self.settled(f"after call {len(self.calls)}")
        return cycles

    def settled(self, label=""):
        """No burst of either port owes a beat or a response, no W beat lacks its AW (after an
        ap_done the kernel has completed every burst it started; the monitors check it in the
        clock edge ap_done rises too), the control port owes nothing, and AMD's checker, where
        bound, has found nothing."""
        for monitor in (*self.monitors, self.control):
            monitor.settled(label)
        watch_axi_checker(self.dut, self.dut.ap_clk, self.dut.ap_rst_n).check()

    def write_report(self, **figures):
        """With a ``report`` parameter (a path): the calls and ``figures`` as JSON, for bench/."""
        import json
        import pathlib
        from sim.runner import params
        path = params().get("report")
        if path:
            pathlib.Path(path).write_text(json.dumps({"calls": self.calls, **figures}))

    def check_bursts(self):
        """No port broke a rule, and no burst still owes beats or a response."""
        for monitor in (*self.monitors, self.control):
            assert not monitor.errors, monitor.errors[:5]
        self.settled("at the end")
