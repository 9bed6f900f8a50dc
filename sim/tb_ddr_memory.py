"""cocotb tests of sim.ddr_memory.DdrAxiRam: an AxiMaster and the memory model meet on the ports
of an empty Verilog module (tests/test_ddr_memory.py), a monitor records every AR and R
handshake.

Parameters (sim.runner.params): ``timing`` (DdrTiming fields).
"""

import random

import cocotb
from cocotb.triggers import ReadOnly, RisingEdge

from cocotbext.axi import AxiBus, AxiMaster

from sim.ddr_memory import DdrAxiRam, DdrTiming
from sim.runner import params
from sim.tb_common import quiet_axi_logs, random_pause, start_clock_reset

P = params()
TIMING = DdrTiming.from_dict(P.get("timing"))
MEMORY_BYTES = 1 << 20


class Handshakes:
    """Cycles of AR handshakes and R beats (and of the beats with RLAST) on the bus."""

    def __init__(self, dut):
        self.dut, self.cycle = dut, 0
        self.ar, self.r, self.r_last = [], [], []
        cocotb.start_soon(self._run())

    async def _run(self):
        dut = self.dut
        while True:
            await RisingEdge(dut.clk)
            await ReadOnly()
            self.cycle += 1
            if int(dut.m_axi_ARVALID.value) and int(dut.m_axi_ARREADY.value):
                self.ar.append(self.cycle)
            if int(dut.m_axi_RVALID.value) and int(dut.m_axi_RREADY.value):
                self.r.append(self.cycle)
                if int(dut.m_axi_RLAST.value):
                    self.r_last.append(self.cycle)

    def max_outstanding(self) -> int:
        """The most bursts ever accepted on AR and not yet ended by RLAST."""
        events = sorted([(c, 1) for c in self.ar] + [(c, -1) for c in self.r_last],
                        key=lambda event: (event[0], -event[1]))
        level = peak = 0
        for _, step in events:
            level += step
            peak = max(peak, level)
        return peak


async def setup(dut):
    bus = AxiBus.from_prefix(dut, "m_axi")
    ram = DdrAxiRam(bus, dut.clk, dut.rst_n, reset_active_level=False, size=MEMORY_BYTES,
                    timing=TIMING)
    master = AxiMaster(bus, dut.clk, dut.rst_n, reset_active_level=False)
    quiet_axi_logs()
    await start_clock_reset(dut.clk, dut.rst_n)
    return ram, master, Handshakes(dut)


@cocotb.test()
async def first_beat_after_the_read_latency(dut):
    ram, master, bus = await setup(dut)
    beat = len(dut.m_axi_RDATA) // 8
    ram.write(0x2000, bytes(range(256)) * (4 * beat // 256 + 1))
    data = await master.read(0x2000, 4 * beat)
    assert data.data == ram.read(0x2000, 4 * beat)
    assert len(bus.ar) == 1 and len(bus.r) == 4
    latency = bus.r[0] - bus.ar[0]
    # one edge for the answer process to see the handshake, one for the R source's register
    assert TIMING.read_latency <= latency <= TIMING.read_latency + 3, latency
    if not TIMING.refresh_cycles:
        assert bus.r == list(range(bus.r[0], bus.r[0] + 4)), "one beat per cycle"


@cocotb.test()
async def outstanding_bursts_are_limited_and_pipelined(dut):
    ram, master, bus = await setup(dut)
    beat = len(dut.m_axi_RDATA) // 8
    ram.write(0, bytes(random.Random(1).randrange(256) for _ in range(64 * 16 * beat)))
    reads = [master.init_read(i * 16 * beat, 16 * beat) for i in range(64)]
    for i, read in enumerate(reads):
        await read.wait()
        assert read.data.data == ram.read(i * 16 * beat, 16 * beat)
    assert bus.max_outstanding() == TIMING.max_outstanding
    assert ram.read_if.max_in_flight == TIMING.max_outstanding
    # at most max_outstanding bursts of 16 beats per (latency + 16) cycles
    cycles = bus.r[-1] - bus.ar[0] + 1
    ceiling = min(TIMING.max_outstanding * 16 / (TIMING.read_latency + 16),
                  TIMING.peak_beats_per_cycle)
    dut._log.info("%d beats in %d cycles: %.3f beats/cycle (ceiling %.3f)", len(bus.r), cycles,
                  len(bus.r) / cycles, ceiling)
    assert len(bus.r) / cycles <= ceiling + 0.02
    assert len(bus.r) / cycles >= 0.8 * ceiling, "bursts overlap their latencies"


@cocotb.test()
async def random_bursts_keep_their_data_under_refresh_and_stalls(dut):
    ram, master, bus = await setup(dut)
    ram.read_if.set_random_pauses(random_pause(0.2, seed=9))
    beat = len(dut.m_axi_RDATA) // 8
    rng = random.Random(4)
    reference = bytearray(rng.randrange(256) for _ in range(1 << 16))
    ram.write(0, bytes(reference))
    for _ in range(8):            # writes through the bus are seen by later reads
        address = rng.randrange(0, len(reference) // beat - 8) * beat
        data = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 8) * beat))
        await master.write(address, data)
        reference[address:address + len(data)] = data
    reads = []
    for _ in range(100):
        beats = rng.randrange(1, 64)
        address = rng.randrange(0, len(reference) // 4096 - 1) * 4096 \
            + rng.randrange(0, 4096 // beat - beats + 1) * beat
        reads.append((address, beats * beat, master.init_read(address, beats * beat)))
    for address, length, read in reads:
        await read.wait()
        assert read.data.data == bytes(reference[address:address + length]), hex(address)
    assert bus.max_outstanding() <= TIMING.max_outstanding
    gaps = [b - a for a, b in zip(bus.r, bus.r[1:])]
    if TIMING.refresh_cycles:
        assert max(gaps) > TIMING.refresh_cycles, "a refresh gap"
