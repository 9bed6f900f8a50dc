"""cocotb module behind :func:`sim.motif.backend.run_motif_kernel_sim`: one kernel run on packed
inputs read from files, the result buffer written to a file. Parameters: ``test_path``,
``control_path``, ``thresholds_path``, ``growth_q8``, ``result_path``, ``result_bytes``."""

import pathlib

import cocotb

from kmerspec.kernels import params_from_dict
from sim.kernel_driver import KernelDriver
from sim.runner import params
from sim.tb_common import make_axi_ram, make_axil_master, quiet_axi_logs, start_clock_reset

P = params()
TEST_BASE = 0x1000


def _align(value, to=4096):
    return -(-value // to) * to


@cocotb.test()
async def run_kernel(dut):
    test = pathlib.Path(P["test_path"]).read_bytes()
    control = pathlib.Path(P["control_path"]).read_bytes()
    thresholds = pathlib.Path(P["thresholds_path"]).read_bytes()
    control_base = _align(TEST_BASE + len(test))
    thresholds_base = _align(control_base + len(control))
    result_base = _align(thresholds_base + len(thresholds))
    size = _align(result_base + int(P["result_bytes"]))
    clk, rst_n = dut.ap_clk, dut.ap_rst_n
    rd_ram = make_axi_ram(dut, "m_axi_gmem0", clk, rst_n, size=size)
    wr_ram = make_axi_ram(dut, "m_axi_gmem1", clk, rst_n, size=size)
    axil = make_axil_master(dut, "s_axi_control", clk, rst_n)
    quiet_axi_logs()
    await start_clock_reset(clk, rst_n)
    rd_ram.write(TEST_BASE, test)
    rd_ram.write(control_base, control)
    rd_ram.write(thresholds_base, thresholds)
    driver = KernelDriver(axil, params_from_dict(P["params"]).desc, clk)
    await driver.run(timeout_cycles=4 * (len(test) + len(control)) + int(P["clear_cycles"])
                     + 100_000,
                     test=TEST_BASE, test_bytes=len(test), control=control_base,
                     control_bytes=len(control), thresholds=thresholds_base,
                     growth_q8=int(P["growth_q8"]), result=result_base)
    pathlib.Path(P["result_path"]).write_bytes(wr_ram.read(result_base, int(P["result_bytes"])))
