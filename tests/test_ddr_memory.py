"""sim.ddr_memory.DdrAxiRam against cocotbext-axi's AxiMaster (sim/tb_ddr_memory.py): the read
latency, the outstanding-burst limit and data integrity under refresh gaps and random stalls."""

import pytest

from sim.runner import run_cocotb

SIGNALS = {  # name: (width, driven by the master)
    "AWID": (1, True), "BID": (1, False), "ARID": (1, True), "RID": (1, False),
    "AWADDR": (32, True), "AWLEN": (8, True), "AWSIZE": (3, True), "AWBURST": (2, True),
    "AWVALID": (1, True), "AWREADY": (1, False), "WDATA": (None, True), "WSTRB": (None, True),
    "WLAST": (1, True), "WVALID": (1, True), "WREADY": (1, False), "BRESP": (2, False),
    "BVALID": (1, False), "BREADY": (1, True), "ARADDR": (32, True), "ARLEN": (8, True),
    "ARSIZE": (3, True), "ARBURST": (2, True), "ARVALID": (1, True), "ARREADY": (1, False),
    "RDATA": (None, False), "RRESP": (2, False), "RLAST": (1, False), "RVALID": (1, False),
    "RREADY": (1, True),
}


def meeting_point(data_width: int) -> str:
    """A module whose ports are only wires for the two cocotb models to drive and sample."""
    widths = {"WDATA": data_width, "WSTRB": data_width // 8, "RDATA": data_width}
    ports = ["input wire clk", "input wire rst_n"] + [
        f"input wire [{(width or widths[name]) - 1}:0] m_axi_{name}"
        for name, (width, _) in SIGNALS.items()]
    return "module axi_meeting(\n  " + ",\n  ".join(ports) + "\n);\nendmodule\n"


@pytest.mark.parametrize("timing", [
    {"read_latency": 150, "max_outstanding": 4},
    {"read_latency": 20, "max_outstanding": 2, "refresh_interval": 300, "refresh_cycles": 40},
])
def test_ddr_memory_model(timing):
    run_cocotb(meeting_point(128), "sim.tb_ddr_memory", toplevel="axi_meeting",
               simulator="icarus", parameters={"timing": timing})
