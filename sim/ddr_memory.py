"""A DDR-like AXI memory model for the kernel benches, next to cocotbext-axi's ideal AxiRam.

cocotbext-axi's AxiRam answers a read burst on the cycle after its AR handshake and serves
bursts one after another, so a kernel measured against it never sees the memory latency that
decides its throughput on a card. :class:`DdrAxiRam` keeps AxiRam's storage and write side and
replaces the read side with the behaviour of a DDR4 controller behind an AXI port:

* **latency**: the first beat of a burst is offered ``read_latency`` cycles after its AR
  handshake at the earliest (Xilinx DDR4 MIG behind SmartConnect: about 100-200 kernel cycles);
* **pipelining**: bursts are answered in order and their latencies overlap, so back-to-back
  bursts stream at one beat per cycle once enough of them are outstanding;
* **outstanding limit**: at most ``max_outstanding`` bursts are accepted and not yet answered;
  ARREADY is low while the limit is reached (a master with fewer outstanding reads than
  ``latency / burst length`` cannot reach one beat per cycle);
* **refresh**: every ``refresh_interval`` cycles the R channel offers nothing for
  ``refresh_cycles`` cycles (DDR4: tREFI = 7.8 us = 1950 cycles at 250 MHz, tRFC of an 8 Gb
  device = 350 ns = 88 cycles), on top of any random stalls of the bench's ``pause`` setting.

Writes are accepted as AxiRam accepts them (a DDR controller buffers writes; the kernels wait for
their B responses only at the end of a call).
"""

from __future__ import annotations

import logging
from collections import deque
from dataclasses import dataclass

import cocotb
from cocotb.triggers import Event, RisingEdge

from cocotbext.axi import AxiBus, AxiResp
from cocotbext.axi.axi_ram import AxiRamRead, AxiRamWrite
from cocotbext.axi.memory import Memory

__all__ = ["DdrTiming", "DdrAxiRam", "DDR4"]


@dataclass(frozen=True)
class DdrTiming:
    """Read timing of :class:`DdrAxiRam`, in kernel clock cycles."""

    read_latency: int = 150
    max_outstanding: int = 8
    refresh_interval: int = 1950
    refresh_cycles: int = 88

    def __post_init__(self):
        if self.read_latency < 1 or self.max_outstanding < 1:
            raise ValueError("read_latency and max_outstanding must be at least 1")
        if self.refresh_cycles and not 0 < self.refresh_cycles < self.refresh_interval:
            raise ValueError("refresh_cycles must be shorter than refresh_interval")

    @property
    def peak_beats_per_cycle(self) -> float:
        """The most the R channel can offer: one beat per cycle outside refresh gaps."""
        return 1 - self.refresh_cycles / self.refresh_interval

    @classmethod
    def from_dict(cls, settings: dict | None) -> "DdrTiming":
        return cls(**(settings or {}))


#: DDR4-2400 behind a Vitis shell's SmartConnect, at a 250 MHz kernel clock
DDR4 = DdrTiming()


def refresh_pauses(timing: DdrTiming, other=None):
    """Pause generator for the R channel: the refresh gaps, or'ed with ``other`` (a bench's
    random stalls)."""
    cycle = 0
    while True:
        refreshing = timing.refresh_cycles and cycle % timing.refresh_interval \
            >= timing.refresh_interval - timing.refresh_cycles
        random_stall = next(other) if other is not None else False
        yield bool(refreshing or random_stall)
        cycle += 1


class DdrAxiRamRead(AxiRamRead):
    """The read side of :class:`DdrAxiRam` (INCR bursts of full-width beats, as the kernels
    issue them; see the module docstring for the timing)."""

    def __init__(self, bus, clock, reset=None, reset_active_level=True, *, timing: DdrTiming,
                 **kwargs):
        self.timing = timing
        self.cycle = 0
        self._accepted: deque = deque()        # (AR transaction, cycle of its handshake)
        self._arrived = Event()
        self._in_flight = 0                    # accepted and not yet fully answered
        self.max_in_flight = 0                 # the most ever outstanding (for tests)
        self._tasks = []
        super().__init__(bus, clock, reset, reset_active_level, **kwargs)
        sink = self.ar_channel
        # The AR sink drops ARREADY while full(): count the bursts taken from its queue and
        # not yet answered, so that accepted-and-unanswered never exceeds the limit.
        sink.full = lambda: sink.count() + self._in_flight >= self.timing.max_outstanding

    def set_random_pauses(self, generator=None):
        """Random R stalls on top of the refresh gaps."""
        self.r_channel.set_pause_generator(refresh_pauses(self.timing, generator))

    def _handle_reset(self, state):
        if state:
            for task in self._tasks:
                task.kill()
            self._tasks = []
            self._accepted.clear()
            self._in_flight = 0
            self.ar_channel.clear()
            self.r_channel.clear()
        elif not self._tasks:
            self._tasks = [cocotb.start_soon(self._count_cycles()),
                           cocotb.start_soon(self._accept()),
                           cocotb.start_soon(self._answer())]
            if self.r_channel._pause_generator is None:
                self.set_random_pauses()

    async def _count_cycles(self):
        """Count cycles, and end a burst when its RLAST beat is taken on the bus (not when it is
        queued in the R source), so that the limit holds on the bus."""
        edge, bus = RisingEdge(self.clock), self.r_channel.bus
        while True:
            await edge
            self.cycle += 1
            if bus.rvalid.value == 1 and bus.rready.value == 1 and bus.rlast.value == 1:
                self._in_flight -= 1
                self.ar_channel.wake_event.set()   # ARREADY may rise again

    async def _accept(self):
        while True:
            ar = await self.ar_channel.recv()
            self._in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self._in_flight + self.ar_channel.count())
            self._accepted.append((ar, self.cycle))
            self._arrived.set()

    async def _answer(self):
        edge = RisingEdge(self.clock)
        while True:
            while not self._accepted:
                self._arrived.clear()
                await self._arrived.wait()
            ar, accepted_at = self._accepted.popleft()
            while self.cycle < accepted_at + self.timing.read_latency:
                await edge
            address = int(ar.araddr)
            beats = int(getattr(ar, "arlen", 0)) + 1
            size = 1 << int(getattr(ar, "arsize", self.max_burst_size))
            assert size == self.byte_lanes, f"narrow read burst (size {size}) at 0x{address:x}"
            assert (address & 0xFFF) + beats * size <= 0x1000, \
                f"read crosses 4 KiB at 0x{address:x}"
            for beat in range(beats):
                r = self.r_channel._transaction_obj()
                r.rid = int(getattr(ar, "arid", 0))
                r.rlast = beat == beats - 1
                r.rresp = AxiResp.OKAY
                word = address - address % size + beat * size
                r.rdata = int.from_bytes(await self._read(word, size), "little")
                await self.r_channel.send(r)


class DdrAxiRam(Memory):
    """AxiRam's storage and write side with :class:`DdrAxiRamRead` as the read side."""

    def __init__(self, bus: AxiBus, clock, reset=None, reset_active_level=True, size=2 ** 64,
                 mem=None, timing: DdrTiming = DDR4, **kwargs):
        self.write_if = None
        self.read_if = None
        super().__init__(size, mem, **kwargs)
        self.write_if = AxiRamWrite(bus.write, clock, reset, reset_active_level, mem=self.mem)
        self.read_if = DdrAxiRamRead(bus.read, clock, reset, reset_active_level, mem=self.mem,
                                     timing=timing)
        for side in (self.write_if, self.read_if):
            side.log.setLevel(logging.WARNING)
