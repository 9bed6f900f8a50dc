"""Checks shared by the kernel tests."""

__all__ = ["assert_vitis_kernel_verilog"]

#: ports of a Vitis RTL kernel that XRT and v++ rely on (one of each interface)
VITIS_PORTS = ("ap_clk", "ap_rst_n", "interrupt", "s_axi_control_AWADDR", "m_axi_gmem0_ARADDR",
               "m_axi_gmem1_WDATA")


def assert_vitis_kernel_verilog(text: str, module: str) -> None:
    """``text`` defines Verilog module ``module`` with the Vitis kernel port names."""
    assert f"module {module}(" in text
    missing = [port for port in VITIS_PORTS if port not in text]
    assert not missing, f"module {module} lacks the ports {missing}"
