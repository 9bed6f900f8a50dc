"""Cycles of an abort of the shared AXI reader and writer at 512 bits (docs/kernel_interface.md,
Errors), in the Amaranth simulator against the slave model of tests/axi_slave.py with a memory
that answers every cycle:

* reader: the consumer stalled, so 4 bursts of 64 beats are accepted and owed, then ``abort``:
  cycles until ``idle``;
* writer: data offered for 50 cycles with WREADY low until cycle 60 (2 bursts of 16 beats
  claimed and owed), then ``abort``: cycles until ``idle``.

    python bench/axi_abort_cycles.py
"""

import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))

from hw.axi import AxiBurstReader, AxiBurstWriter  # noqa: E402
from tests.simulation import simulate  # noqa: E402
from tests.axi_slave import AxiSlave  # noqa: E402
from tests.test_axi_protocol import abort_until_idle, command  # noqa: E402


def abort_cycles(dut, slave, stall, owed: str, label: str) -> dict:
    """``stall(ctx)`` leaves beats owed, then ``abort``: ``label`` -> the slave's ``owed`` count
    at the abort, ``cycles`` -> the cycles until ``idle``; nothing is owed after it."""
    out = {}

    async def driver(ctx):
        await stall(ctx)
        out[label] = getattr(slave, owed)
        out["cycles"] = await abort_until_idle(ctx, dut, 5000)
    simulate(dut, driver, background=[slave.run])
    assert getattr(slave, owed) == 0
    slave.settled()
    return out


def reader_abort():
    dut = AxiBurstReader(data_width=512)

    async def stall(ctx):
        ctx.set(dut.data.ready, 0)
        await command(ctx, dut, 0x10000, 1 << 20)
        await ctx.tick().repeat(40)
    return abort_cycles(dut, AxiSlave(dut.axi), stall, "owed_reads", "owed R beats")


def writer_abort():
    dut = AxiBurstWriter(data_width=512)
    slave = AxiSlave(dut.axi, ready=lambda channel, cycle: channel != "W" or cycle > 60)

    async def stall(ctx):
        await command(ctx, dut, 0x10000, 1 << 20)
        ctx.set(dut.data.valid, 1)
        await ctx.tick().repeat(50)
        ctx.set(dut.data.valid, 0)
    return abort_cycles(dut, slave, stall, "owed_writes", "owed W beats + B")


if __name__ == "__main__":
    print("reader (512-bit, 4 x 64-beat bursts owed):", reader_abort())
    print("writer (512-bit, 2 x 16-beat bursts owed, WREADY low to cycle 60):", writer_abort())
