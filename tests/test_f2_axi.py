"""The F2 CL's way to the card memory, in Amaranth's simulator: kernels' burst writers and readers
of 64- and 512-bit buses, each through an AxiMemoryPort (hw/axi/memory_port.py), into one AxiMux
(hw/axi/mux.py), against the slave models of tests/axi_slave.py, which check ARM's rules every
cycle. What the cocotb bench of the whole CL (tests/test_f2_cl.py) does not meet there:

* slaves that take an address only after its burst's W beats (aw_after_w) or take W beats only
  after their address (w_after_aw), with READY stalls at random: no deadlock, every beat of
  every burst on the right byte lanes (a 64-bit master's beat repeated on every lane, its strobes
  on the lane of its address), in the bursts' order;
* a burst past the memory's end refused in the port (DECERR to the master, never offered to the
  memory), with the other master's traffic going on.
"""

import random

import pytest
from amaranth import Module
from amaranth.lib import wiring
from amaranth.lib.wiring import Out

from hw.axi import AxiBurstReader, AxiBurstWriter
from hw.axi.connect import connect_axi_rw
from hw.axi.memory_port import AxiMemoryPort
from hw.axi.mux import AxiMux, index_bits
from hw.axi.signature import Axi4Signature
from tests.axi_slave import AxiSlave, random_ready
from tests.simulation import simulate
from tests.test_axi_protocol import command

LIMIT = 1 << 20


class Fabric(wiring.Component):
    """A writer and a reader per bus width of ``widths``, through memory ports, into one mux."""

    def __init__(self, widths):
        self.widths = widths
        self.writers = [AxiBurstWriter(data_width=w, max_beats=4, max_outstanding=4)
                        for w in widths]
        self.readers = [AxiBurstReader(data_width=w, max_beats=4, max_outstanding=4)
                        for w in widths]
        super().__init__({"down": Out(Axi4Signature(
            data_width=512, id_width=1 + index_bits(len(widths))))})

    def elaborate(self, platform):
        m = Module()
        m.submodules.mux = mux = AxiMux(len(self.widths))
        for i, width in enumerate(self.widths):
            m.submodules[f"writer{i}"] = writer = self.writers[i]
            m.submodules[f"reader{i}"] = reader = self.readers[i]
            m.submodules[f"port{i}"] = port = AxiMemoryPort(data_width=width, limit=LIMIT,
                                                            depth=8)
            bus = Axi4Signature(data_width=width).create()
            connect_axi_rw(m, bus, reader=reader.axi, writer=writer.axi)
            wiring.connect(m, bus, port.up)
            wiring.connect(m, port.down, getattr(mux, f"up{i}"))
        for name, member in mux.down.signature.members.items():
            if member.flow == Out:
                m.d.comb += getattr(self.down, name).eq(getattr(mux.down, name))
            else:
                m.d.comb += getattr(mux.down, name).eq(getattr(self.down, name))
        return m


def payload(master, beat, width):
    """The data of a master's beat: its index and the beat's, filling the bus."""
    word = (master + 1) << 12 | beat
    return sum(word << (16 * k) for k in range(width // 16)) & ((1 << width) - 1)


def run(widths, commands, seed, **slave_options):
    """``commands``: per master, (address, length) of one write; returns the slave."""
    dut = Fabric(widths)
    slave = AxiSlave(dut.down, ready=random_ready(seed, 0.3), data_rate=0.7, seed=seed,
                     response_latency=(0, 6), kernel_rules=False, **slave_options)
    done = []

    def producer(i, total):
        async def produce(ctx):
            writer = dut.writers[i]
            rng = random.Random(seed * 7 + i)
            for beat in range(total):
                while rng.random() < 0.2:
                    ctx.set(writer.data.valid, 0)
                    await ctx.tick()
                ctx.set(writer.data.valid, 1)
                ctx.set(writer.data.payload, payload(i, beat, widths[i]))
                while True:
                    _, _, taken = await ctx.tick().sample(writer.data.ready)
                    if taken:
                        break
            ctx.set(writer.data.valid, 0)
        return produce

    def driver(i):
        async def drive(ctx):
            address, length = commands[i]
            await command(ctx, dut.writers[i], address, length)
            await ctx.tick().repeat(3)
            for _ in range(6000):
                if ctx.get(dut.writers[i].idle):
                    done.append(i)
                    return
                await ctx.tick()
            raise AssertionError(f"writer {i} not idle: {slave.owed_writes} owed")
        return drive

    async def main(ctx):
        while len(done) < len(widths):
            await ctx.tick()
        await ctx.tick().repeat(10)

    beats = [-(-length // (w // 8)) for (_, length), w in zip(commands, widths)]
    simulate(dut, main, *(driver(i) for i in range(len(widths))),
             background=[slave.run, *(producer(i, n) for i, n in enumerate(beats))])
    slave.settled()
    return slave


def expected_beats(widths, commands):
    """``{address of a beat: (lane, data, strobe)}`` of every W beat the memory must see."""
    out = {}
    for i, ((address, length), width) in enumerate(zip(commands, widths)):
        size = width // 8
        for beat in range(-(-length // size)):
            at = address + beat * size
            valid = min(size, length - beat * size)
            out[at] = ((at % 64) // size, payload(i, beat, width), (1 << valid) - 1)
    return out


@pytest.mark.parametrize("seed", [1, 2])
@pytest.mark.parametrize("slave_mode", ["aw_after_w", "w_after_aw"])
def test_writes_reach_the_memory_on_their_lanes(seed, slave_mode):
    widths = [64, 512, 64]
    commands = [(0x1008, 8 * 23 - 3), (0x4000, 64 * 9), (0x8100, 8 * 11)]
    slave = run(widths, commands, seed, **{slave_mode: True})
    expected = expected_beats(widths, commands)
    seen, beats = {}, iter(slave.w_beats)
    for _, address, count in slave.aw:                    # W beats come in the AWs' order
        for j in range(count):
            _, data, strobe, last = next(beats)
            width = widths[[i for i, (a, n) in enumerate(commands) if a <= address < a + n
                            + 64][0]]
            size = width // 8
            at = address + j * size
            lane = (at % 64) // size
            assert strobe & ~(((1 << size) - 1) << (lane * size)) == 0, hex(at)
            assert last == (j == count - 1)
            seen[at] = (lane, (data >> (lane * width)) & ((1 << width) - 1),
                        strobe >> (lane * size))
            if width < 512:     # the beat is repeated on every lane
                assert data == sum(seen[at][1] << (k * width) for k in range(512 // width))
    assert seen == expected


def test_a_read_past_the_memory_is_refused_in_the_port():
    dut = Fabric([64, 512])
    slave = AxiSlave(dut.down, ready=random_ready(3, 0.3), data_rate=0.7, seed=3,
                     kernel_rules=False)
    outcome = {}

    async def main(ctx):
        await command(ctx, dut.readers[0], LIMIT - 16, 64)       # 16 bytes below the end
        await command(ctx, dut.readers[1], 0x2000, 256)
        taken = {0: 0, 1: 0}
        for _ in range(400):
            for i, reader in enumerate(dut.readers):
                ctx.set(reader.data.ready, 1)
                if ctx.get(reader.data.valid):
                    taken[i] += 1
            await ctx.tick()
        outcome.update(taken=taken, errors=[ctx.get(r.error) for r in dut.readers],
                       idle=[ctx.get(r.idle) for r in dut.readers])

    simulate(dut, main, background=[slave.run])
    slave.settled()
    assert outcome["errors"] == [1, 0] and outcome["idle"] == [1, 1]
    assert outcome["taken"] == {0: 8, 1: 4}
    # the reader splits its command at the 4 KiB boundary that is the memory's end: the burst
    # below it reaches the memory, the one past it only the port, which answers DECERR
    assert sorted(address for _, address, _ in slave.ar) == [0x2000, LIMIT - 16]
