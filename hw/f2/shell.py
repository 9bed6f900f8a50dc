"""The F2 small shell's interface to a CL (custom logic), described once, here, from AWS's
interface specification (hdk/docs/AWS_Shell_Interface_Specification.md of aws-fpga, branch f2):
every port's name, direction and width, grouped as the specification groups them, and the value
each output takes when the CL does not use it.

The CL top (:mod:`hw.f2.top`) declares exactly :func:`shell_ports`; tests/test_f2_build.py
compares them with AWS's own hdk/common/shell_stable/design/interfaces/cl_ports.vh (where a
checkout is named by ``KSA_AWS_FPGA``), and Verilator lints the top inside a module whose ports
are that file.

Names follow the shell's conventions: an AXI port's signals are lower case with the prefix of
the side that drives them (``sh_cl_dma_pcis_awvalid`` from the shell, ``cl_sh_dma_pcis_awready``
from the CL); the DDR4 pins of the card are upper case. The AXI4 ports carry AXI3's WID and
user signals (AWUSER/ARUSER 55 bits, WUSER/RUSER 64), but no REGION and no BUSER.
"""

from dataclasses import dataclass

__all__ = ["Port", "AxiPort", "shell_ports", "AXI_PORTS", "port_names", "TIES", "tie_value",
           "INPUT", "OUTPUT", "INOUT", "parse_port_declarations"]

INPUT, OUTPUT, INOUT = "input", "output", "inout"


@dataclass(frozen=True)
class Port:
    name: str
    direction: str
    width: int = 1
    group: str = ""


@dataclass(frozen=True)
class AxiPort:
    """One AXI port between the shell and the CL. ``master``: "shell" or "cl" (who drives the
    address channels); ``master_prefix``/``slave_prefix``: the prefixes of the signals each side
    drives; ``lite``: AXI4-Lite (32-bit data, no bursts); ``user``: the width of AWUSER and
    ARUSER (0: none)."""
    name: str
    master: str
    master_prefix: str
    slave_prefix: str
    lite: bool = False
    user: int = 0
    id_width: int = 16
    addr_width: int = 64
    data_width: int = 512

    def fields(self):
        """``[(channel, field, width, driven by the master)]`` in the shell's order."""
        if self.lite:
            aw = [("aw", "addr", 32, True)] + ([("aw", "user", self.user, True)] if self.user else [])
            ar = [("ar", "addr", 32, True)] + ([("ar", "user", self.user, True)] if self.user else [])
            return (aw + [("aw", "valid", 1, True), ("aw", "ready", 1, False),
                          ("w", "data", 32, True), ("w", "strb", 4, True), ("w", "valid", 1, True),
                          ("w", "ready", 1, False),
                          ("b", "resp", 2, False), ("b", "valid", 1, False), ("b", "ready", 1, True)]
                    + ar + [("ar", "valid", 1, True), ("ar", "ready", 1, False),
                            ("r", "data", 32, False), ("r", "resp", 2, False),
                            ("r", "valid", 1, False), ("r", "ready", 1, True)])
        address = [("id", self.id_width), ("addr", self.addr_width), ("len", 8), ("size", 3),
                   ("burst", 2), ("cache", 4), ("lock", 1), ("prot", 3), ("qos", 4),
                   ("user", 55)]
        out = [("aw", f, w, True) for f, w in address]
        out += [("aw", "valid", 1, True), ("aw", "ready", 1, False)]
        out += [("w", "id", self.id_width, True), ("w", "data", self.data_width, True),
                ("w", "strb", self.data_width // 8, True), ("w", "last", 1, True),
                ("w", "user", 64, True), ("w", "valid", 1, True), ("w", "ready", 1, False)]
        out += [("b", "id", self.id_width, False), ("b", "resp", 2, False),
                ("b", "valid", 1, False), ("b", "ready", 1, True)]
        out += [("ar", f, w, True) for f, w in address]
        out += [("ar", "valid", 1, True), ("ar", "ready", 1, False)]
        out += [("r", "id", self.id_width, False), ("r", "data", self.data_width, False),
                ("r", "resp", 2, False), ("r", "last", 1, False), ("r", "user", 64, False),
                ("r", "valid", 1, False), ("r", "ready", 1, True)]
        return out

    def signal(self, channel, field):
        """The port name of ``channel`` + ``field`` (e.g. "aw", "valid")."""
        for ch, f, _, by_master in self.fields():
            if (ch, f) == (channel, field):
                return (self.master_prefix if by_master else self.slave_prefix) + ch + f
        raise KeyError(f"{self.name} has no {channel}{field}")

    def ports(self):
        cl_drives_master = self.master == "cl"
        return [Port((self.master_prefix if by_master else self.slave_prefix) + ch + f,
                     OUTPUT if by_master == cl_drives_master else INPUT, w, self.name)
                for ch, f, w, by_master in self.fields()]


#: The AXI ports, by name
AXI_PORTS = {
    "pcim": AxiPort("pcim", "cl", "cl_sh_pcim_", "sh_cl_pcim_"),
    "pcis": AxiPort("pcis", "shell", "sh_cl_dma_pcis_", "cl_sh_dma_pcis_"),
    "ocl": AxiPort("ocl", "shell", "ocl_cl_", "cl_ocl_", lite=True, user=55),
    "sda": AxiPort("sda", "shell", "sda_cl_", "cl_sda_", lite=True),
}


def _ports(group, direction, *specs):
    out = []
    for spec in specs:
        name, width = spec if isinstance(spec, tuple) else (spec, 1)
        out.append(Port(name, direction, width, group))
    return out


def _hbm_monitor(index):
    """The HBM monitor APB signals of stack ``index`` (the shell declares all but the reset as
    CL outputs)."""
    return (_ports("hbm_monitor", INPUT, f"hbm_apb_preset_n_{index}")
            + _ports("hbm_monitor", OUTPUT, (f"hbm_apb_paddr_{index}", 22),
                     (f"hbm_apb_pprot_{index}", 3), f"hbm_apb_psel_{index}",
                     f"hbm_apb_penable_{index}", f"hbm_apb_pwrite_{index}",
                     (f"hbm_apb_pwdata_{index}", 32), (f"hbm_apb_pstrb_{index}", 4),
                     f"hbm_apb_pready_{index}", (f"hbm_apb_prdata_{index}", 32),
                     f"hbm_apb_pslverr_{index}"))


def shell_ports() -> list[Port]:
    """Every port of the shell's interface to the CL, in the specification's order."""
    ports = (
        _ports("global", INPUT, "clk_main_a0", "rst_main_n", "clk_hbm_ref", "sh_cl_flr_assert")
        + _ports("global", OUTPUT, "cl_sh_flr_done", ("cl_sh_status0", 32),
                 ("cl_sh_status1", 32), ("cl_sh_status2", 32), ("cl_sh_id0", 32),
                 ("cl_sh_id1", 32))
        + _ports("global", INPUT, ("sh_cl_ctl0", 32), ("sh_cl_ctl1", 32), ("sh_cl_ctl2", 32),
                 ("sh_cl_status_vdip", 16))
        + _ports("global", OUTPUT, ("cl_sh_status_vled", 16))
        + _ports("global", INPUT, ("sh_cl_pwr_state", 2))
        + _ports("global", OUTPUT, "cl_sh_dma_wr_full", "cl_sh_dma_rd_full")
        + AXI_PORTS["pcim"].ports()
        + _ports("pcim", INPUT, ("cfg_max_payload", 2), ("cfg_max_read_req", 3))
        + _ports("ddr", INPUT, "CLK_DIMM_DP", "CLK_DIMM_DN")
        + _ports("ddr", OUTPUT, "M_ACT_N", ("M_MA", 18), ("M_BA", 2), ("M_BG", 2), ("M_CKE", 2),
                 ("M_ODT", 2), ("M_CS_N", 2), ("M_CLK_DN", 2), ("M_CLK_DP", 2), "M_PAR")
        + _ports("ddr", INOUT, ("M_DQ", 64), ("M_ECC", 8), ("M_DQS_DP", 18), ("M_DQS_DN", 18))
        + _ports("ddr", OUTPUT, "RST_DIMM_N")
        + _ports("ddr_stat", INPUT, ("sh_cl_ddr_stat_addr", 8), ("sh_cl_ddr_stat_wdata", 32),
                 "sh_cl_ddr_stat_wr", "sh_cl_ddr_stat_rd", ("sh_cl_ddr_stat_user", 3))
        + _ports("ddr_stat", OUTPUT, "cl_sh_ddr_stat_ack", ("cl_sh_ddr_stat_rdata", 32),
                 ("cl_sh_ddr_stat_int", 8))
        + _ports("irq", OUTPUT, ("cl_sh_apppf_irq_req", 16))
        + _ports("irq", INPUT, ("sh_cl_apppf_irq_ack", 16))
        + AXI_PORTS["pcis"].ports()
        + AXI_PORTS["ocl"].ports()
        + AXI_PORTS["sda"].ports()
        + _ports("debug", INPUT, "drck", "shift", "tdi", "update", "sel")
        + _ports("debug", OUTPUT, "tdo")
        + _ports("debug", INPUT, "tms", "tck", "runtest", "reset", "capture", "bscanid_en")
        + _ports("global", INPUT, ("sh_cl_glcount0", 64), ("sh_cl_glcount1", 64))
        + _hbm_monitor(1) + _hbm_monitor(0)
        + _ports("c2c", INPUT, "PCIE_EP_PERSTN", "PCIE_EP_REF_CLK_P", "PCIE_EP_REF_CLK_N")
        + _ports("c2c", OUTPUT, ("PCIE_EP_TXP", 8), ("PCIE_EP_TXN", 8))
        + _ports("c2c", INPUT, ("PCIE_EP_RXP", 8), ("PCIE_EP_RXN", 8))
        + _ports("c2c", OUTPUT, "PCIE_RP_PERSTN")
        + _ports("c2c", INPUT, "PCIE_RP_REF_CLK_P", "PCIE_RP_REF_CLK_N")
        + _ports("c2c", OUTPUT, ("PCIE_RP_TXP", 8), ("PCIE_RP_TXN", 8))
        + _ports("c2c", INPUT, ("PCIE_RP_RXP", 8), ("PCIE_RP_RXN", 8))
    )
    names = [p.name for p in ports]
    assert len(set(names)) == len(names), "a shell port is described twice"
    return ports


def port_names() -> dict:
    """``{name: (direction, width)}`` of :func:`shell_ports`."""
    return {p.name: (p.direction, p.width) for p in shell_ports()}


#: What an output the CL does not drive itself is tied to, when not 0: AWS's CL_TEMPLATE.sv ties
#: every unused output to 0 except these (the others, driven by the CL, are set in hw.f2.top)
TIES = {"cl_sh_flr_done": 1}


def tie_value(name):
    return TIES.get(name, 0)


_DECLARATION = None


def parse_port_declarations(text: str) -> dict:
    """``{name: (direction, width)}`` of the port declarations in Verilog ``text`` (a port list
    such as AWS's cl_ports.vh, or a generated top): ``input|output|inout [logic|wire]
    [[msb:lsb]] name``, comments removed."""
    import re
    global _DECLARATION
    if _DECLARATION is None:
        _DECLARATION = re.compile(r"\b(input|output|inout)\s+(?:logic\s+|wire\s+|reg\s+)?"
                                  r"(?:\[\s*(\d+)\s*:\s*(\d+)\s*\]\s*)?([A-Za-z_]\w*)")
    text = re.sub(r"//[^\n]*", "", re.sub(r"/\*.*?\*/", "", text, flags=re.S))
    found = {}
    for direction, msb, lsb, name in _DECLARATION.findall(text):
        width = abs(int(msb) - int(lsb)) + 1 if msb else 1
        if name in found:
            raise ValueError(f"port {name} declared twice")
        found[name] = (direction, width)
    return found
