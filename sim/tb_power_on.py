"""cocotb check of ``sim.runner``'s ``garbage_start`` on a small design (tests/test_power_on.py):
after reset, the words of a memory without initial contents and a ``reset_less`` register are
random with ``garbage_start`` (and differ between seeds), all zero without it; a reset register
is its reset value either way; a ROM keeps its contents.

Parameters: ``garbage`` (bool: whether the build used garbage_start), ``depth``, ``out`` (a JSON
file that receives what was read, to compare seeds).
"""

import json

import cocotb
from cocotb.triggers import ClockCycles, ReadOnly, RisingEdge

from sim.runner import params
from sim.tb_common import start_clock_reset

P = params()


@cocotb.test()
async def test_power_on_values(dut):
    dut.write_enable.value = 0
    dut.write_data.value = 0
    dut.addr.value = 0
    await start_clock_reset(dut.clk, rst=dut.rst)
    words = []
    for address in range(P["depth"]):
        dut.addr.value = address
        await RisingEdge(dut.clk)
        await ReadOnly()
        words.append(int(dut.word.value))
        await ClockCycles(dut.clk, 1)
    await ReadOnly()
    seen = {"words": words, "flag": int(dut.flag.value), "counter": int(dut.counter.value),
            "rom": int(dut.rom_word.value)}   # the last address is odd: ROM word 1
    with open(P["out"], "w") as out:
        json.dump(seen, out)
    assert seen["counter"] == 5, "a reset register must hold its reset value"
    assert seen["rom"] == 0xA5, "a ROM must keep its contents"
    if P["garbage"]:
        assert len(set(words)) > 1 and any(words), f"memory words not random: {words}"
    else:
        assert not any(words) and seen["flag"] == 0, f"power-on values not zero: {seen}"
