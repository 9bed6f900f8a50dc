"""cocotb driver behind the ``sim`` backend of the JSD engine: runs a list of kernel calls whose
inputs are files written by :mod:`sim.jsd.backend` and writes each output buffer to a file.

Parameters: ``kernel`` ("build" | "similarity"), ``params`` (the kernel's Params.to_dict()), ``calls``: for "build"
{"chunk": path, "n_records": int, "record_bytes": int, "update": 0|1, "out": path}; for
"similarity" {"pivots": path, "n_pivots": int, "pqas": path, "n_pqas": int, "mode": 0|1,
"out_bytes": int, "out": path}.
"""

import pathlib

import cocotb

from kmerspec.kernels import params_from_dict
from sim.kernel_driver import KernelDriver
from sim.runner import params
from sim.tb_common import make_axi_ram, make_axil_master, quiet_axi_logs, start_clock_reset

P = params()
KERNEL = params_from_dict(P["params"])
DW = KERNEL.data_width
TIMEOUT = int(P.get("timeout_cycles", 50_000_000))


@cocotb.test()
async def run_calls(dut):
    clk, rst_n = dut.ap_clk, dut.ap_rst_n
    sizes = [pathlib.Path(path).stat().st_size for call in P["calls"]
             for key, path in call.items() if key in ("chunk", "pivots", "pqas")]
    half = 1 << max(20, (max(sizes + [1]) + 4096).bit_length())
    rd_ram = make_axi_ram(dut, "m_axi_gmem0", clk, rst_n, size=2 * half)
    wr_ram = make_axi_ram(dut, "m_axi_gmem1", clk, rst_n, size=2 * half)
    axil = make_axil_master(dut, "s_axi_control", clk, rst_n)
    quiet_axi_logs()
    await start_clock_reset(clk, rst_n)
    build = P["kernel"] == "build"
    driver = KernelDriver(axil, KERNEL.desc, clk)
    for call in P["calls"]:
        if build:
            chunk = pathlib.Path(call["chunk"]).read_bytes()
            rd_ram.write(0, chunk)
            await driver.run(timeout_cycles=TIMEOUT, src=0, n_bytes=len(chunk), dst=0,
                             n_records=call["n_records"], update=call["update"])
            size = call["n_records"] * call["record_bytes"]
        else:
            rd_ram.write(0, pathlib.Path(call["pivots"]).read_bytes())
            rd_ram.write(half, pathlib.Path(call["pqas"]).read_bytes())
            await driver.run(timeout_cycles=TIMEOUT, pivots=0, n_pivots=call["n_pivots"],
                             pqas=half, n_pqas=call["n_pqas"], out=0, mode=call["mode"])
            size = call["out_bytes"]
        pathlib.Path(call["out"]).write_bytes(wr_ram.read(0, size))
