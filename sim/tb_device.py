"""cocotb module behind host.device.SimDevice: one kernel run on buffers read from files.

Parameters (sim.runner.params): ``arguments`` {name: {"kind": "in"|"out"|"scalar", ...}},
``report`` (a JSON file that receives the cycle count), ``pause`` (stall probability on every
AXI channel), ``seed``, ``timeout_cycles``. Each m_axi bundle gets its own AxiRam; the buffers of
a bundle are placed one after another at 4 KiB-aligned addresses from 0x1000 (0 stays unused so
that a null pointer is never valid).
"""

import json
import pathlib

import cocotb

from sim.kernel_driver import KernelDriver
from sim.runner import params
from sim.tb_common import make_axi_ram, make_axil_master, quiet_axi_logs, start_clock_reset

P = params()
PAGE = 4096


def _align(value: int) -> int:
    return -(-value // PAGE) * PAGE


@cocotb.test()
async def run_kernel(dut):
    from hw.vitis.description import KernelDesc  # noqa: F401  (the desc comes from the DUT's name)
    arguments = P["arguments"]
    clk, rst_n = dut.ap_clk, dut.ap_rst_n

    placement, sizes, contents = {}, {}, {}
    for name, spec in arguments.items():
        if spec["kind"] == "scalar":
            continue
        data = pathlib.Path(spec["path"]).read_bytes() if spec["kind"] == "in" else b""
        size = spec["size"] if spec["kind"] == "out" else len(data)
        bundle = spec["bundle"]
        base = sizes.get(bundle, PAGE)
        placement[name] = (bundle, base)
        contents[name] = data
        sizes[bundle] = _align(base + max(size, 1))

    rams = {bundle: make_axi_ram(dut, f"m_axi_{bundle}", clk, rst_n, size=size,
                                 pause=float(P.get("pause", 0.0)),
                                 seed=int(P.get("seed", 1)) + i)
            for i, (bundle, size) in enumerate(sorted(sizes.items()))}
    axil = make_axil_master(dut, "s_axi_control", clk, rst_n)
    quiet_axi_logs()
    await start_clock_reset(clk, rst_n)
    for name, (bundle, base) in placement.items():
        if contents[name]:
            rams[bundle].write(base, contents[name])

    values = {name: (placement[name][1] if spec["kind"] != "scalar" else spec["value"])
              for name, spec in arguments.items()}
    desc = _desc_of(dut, arguments)
    driver = KernelDriver(axil, desc, clk)
    cycles = await driver.run(timeout_cycles=int(P.get("timeout_cycles", 50_000_000)), **values)
    for name, spec in arguments.items():
        if spec["kind"] == "out":
            bundle, base = placement[name]
            pathlib.Path(spec["path"]).write_bytes(rams[bundle].read(base, spec["size"]))
    pathlib.Path(P["report"]).write_text(json.dumps({"cycles": cycles}))


def _desc_of(dut, arguments):
    """A KernelDesc with the argument order of the run; offsets follow from it as in the RTL."""
    from hw.vitis.description import Arg, Bundle, KernelDesc
    bundles = sorted({spec["bundle"] for spec in arguments.values() if spec["kind"] != "scalar"})
    args = [Arg(name, "scalar") if spec["kind"] == "scalar" else Arg(name, "pointer", spec["bundle"])
            for name, spec in arguments.items()]
    return KernelDesc(dut._name, args, [Bundle(b) for b in bundles])
