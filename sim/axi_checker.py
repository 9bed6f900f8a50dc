"""AMD's AXI Protocol Checker bound to the AXI ports of a simulated design, and the cocotb hook
that fails a test when it fires, naming the rules.

The checker is the PG101 IP ("AXI Protocol Checker", module ``axi_protocol_checker_v1_1_12_top``,
AXI4, AXI3 and AXI4-Lite, one ``pc_status`` bit per rule, ``pc_asserted``) that AWS ships as plain
Verilog in aws-fpga: ``hdk/common/verif/models/xilinx_axi_pc/axi_protocol_checker_v1_1_vl_rfs.v``
(branch f2, release v2.0.2; ``git clone https://github.com/aws/aws-fpga``). It is AMD's code under
AMD's licence: the project never copies it, nor its rule table. A run finds it through the
environment variable ``KSA_AWS_FPGA`` (the path of an aws-fpga checkout), compiles it beside the
design, and reads the rule of each ``pc_status`` bit and its message from that file at run time
(:func:`rule_table`). Without the variable nothing is bound and the runs that need the checker
skip, saying why (:func:`unavailable_reason`).

Interface (plain Python, no cocotb, except :class:`CheckerWatch`):

* :class:`CheckedPort`: one AXI4 (any data, address and ID widths) or AXI4-Lite port of a Verilog
  module: its name, protocol and widths, the Verilog expression of each of its signals
  (``signals``, keyed by the AXI name in upper case: ``"AWVALID"``; a signal the port lacks is tied
  to its AXI default: IDs, USER, QOS, REGION, LOCK, CACHE, PROT 0, LEN 0, SIZE the bus width,
  BURST INCR, WSTRB all ones, LAST 1), its clock and active-low reset (expressions), its MAXWAITS
  (:class:`MaxWaits`) and how many bursts in flight the checker tracks. :meth:`CheckedPort.prefixed`
  builds one from a signal prefix (``m_axi_gmem0`` -> ``m_axi_gmem0_AWVALID``).
* :func:`module_ports` reads a module's port declarations (``{name: (direction, width)}``) from
  Verilog text; :func:`axi_ports` finds every AXI port among them by the ``<prefix>_AWVALID``
  convention (AXI4 when it has ``<prefix>_AWLEN``, else AXI4-Lite; widths from the
  declarations): a Vitis kernel's ``m_axi_*`` masters and ``s_axi_control``
  (:func:`vitis_maxwaits`, :func:`vitis_port_options`: what this project's kernels promise).
  Ports named otherwise (a shell's ``sh_ocl_awvalid`` in, ``ocl_sh_awready`` out) are described
  by hand::

      CheckedPort(name="ocl", protocol="AXI4LITE", data_width=32, addr_width=32,
                  signals={"AWVALID": "sh_ocl_awvalid", "AWREADY": "ocl_sh_awready", ...},
                  clock="clk_main_a0", resetn="rst_main_n", maxwaits=CONTROL_MAXWAITS)

* :func:`bind` returns the Verilog with one checker instance per port added at the end of the
  module's body (instance ``<name>_pc``, wires ``<name>_pc_status`` and ``<name>_pc_asserted``
  beside the module's own signals; the module's ports are unchanged). Compile its text together
  with :func:`checker_source`.
* :class:`CheckerWatch` (cocotb): watches ``<name>_pc_asserted`` of each bound port in a scope
  (the module's handle) and raises :class:`AxiCheckerError` with the decoded rules when it rises;
  :meth:`CheckerWatch.check` reads every ``pc_status`` at the end of a test;
  :meth:`CheckerWatch.allow` lets a bench break a port on purpose (a faulty slave model). The
  watch arms at the first reset asserted and released in clock edges (before it, a design that
  starts from random power-on values has not been reset and neither has the checker).
* :data:`BOUND_ENV`: how a runner tells the simulation which ports it bound (JSON, see
  :func:`bound_ports`, :func:`bound_announcement`). ``sim.runner.run_cocotb`` does all of this
  for a toplevel's ports (``axi_checker``; ``sim.runner.bind_axi_checker``).

MAXWAITS, the cycles a VALID may wait for its READY before the checker reports
``*_MAX_WAIT`` (0: not timed), are set to what an AXI firewall in front of the port enforces
(AMD PG293, "AXI Firewall"; XRT programs them):

* ``s_axi_control`` (:data:`CONTROL_MAXWAITS`): AWREADY, WREADY, ARREADY within 0x2000 = 8,192
  cycles. XRT's xocl driver writes ``FW_MAX_WAIT_FIC`` (0x2000) into the MI-side wait registers
  (``MAX_ARREADY_WAITS``, ``MAX_AWREADY_WAITS``, ``MAX_WREADY_WAITS``,
  ``MAX_CONTINUOUS_RTRANSFERS_WAITS``, ``MAX_WRITE_TO_BVALID_WAITS``) of the firewalls in front of
  the control ports (``CTRL_MGMT``, ``CTRL_USER``, ``CTRL_DEBUG``):
  ``src/runtime_src/core/pcie/driver/linux/xocl/subdev/firewall.c`` of github.com/Xilinx/XRT,
  ``resource_max_wait_set`` and ``reset_max_wait``, the same at every release tag from
  202120.2.12.447 to 202520.2.20.197. An MI-side firewall does not time the master's RREADY and
  BREADY (0 here).
* a kernel's ``m_axi`` master (:data:`MASTER_MAXWAITS`): RREADY and BREADY within 0xFFFF = 65,535
  cycles, the reset value of the SI-side firewall's ``MAX_RREADY_WAITS`` and ``MAX_BREADY_WAITS``
  (PG293 v1.2, registers 0x138 and 0x13C: 16'hFFFF); XRT never writes those (``reset_max_wait``
  writes only the MI-side registers). AWREADY, WREADY and ARREADY are the memory's, which no
  firewall times on a master's path (0).

The firewall counts its own clock's cycles (times the prescaler, 0 by default); the checker
counts the port's. AMD's checker has no rule for the firewall's ``RECS_CONTINUOUS_RTRANSFERS``,
``RECS_WRITE_TO_BVALID``, ``RECM_CONTINUOUS_WTRANSFERS`` and ``RECM_WVALID_TO_AWVALID`` waits
(:data:`FIREWALL_WAITS` lists every firewall limit for the project's own monitor).

With ``C_PC_HAS_SYSTEM_RESET`` set (``system_resetn`` tied high) the checker's rules that READY be
low in the first clock edge after ARESETn rises (``XILINX_*READY_RESET``) are live; without it the
checker's reset logic masks them.
"""

from __future__ import annotations

import json
import os
import pathlib
import re
from dataclasses import dataclass, field, replace
from typing import Mapping

__all__ = ["CHECKER_ENV", "CHECKER_FILE", "CHECKER_MODULE", "BOUND_ENV", "MaxWaits",
           "CONTROL_MAXWAITS", "MASTER_MAXWAITS", "FIREWALL_WAITS", "CheckedPort",
           "AxiCheckerError", "checker_source", "unavailable_reason", "rule_table", "decode",
           "module_ports", "axi_ports", "vitis_maxwaits", "vitis_port_options", "bind",
           "bound_ports", "bound_announcement", "CheckerWatch"]

#: The environment variable with the path of an aws-fpga checkout
CHECKER_ENV = "KSA_AWS_FPGA"
#: The checker's file in that checkout, and its top module
CHECKER_FILE = "hdk/common/verif/models/xilinx_axi_pc/axi_protocol_checker_v1_1_vl_rfs.v"
CHECKER_MODULE = "axi_protocol_checker_v1_1_12_top"
#: Set by a runner for the simulation: JSON ``{"source": checker path, "ports": [names]}``
BOUND_ENV = "KSA_AXI_CHECKER_BOUND"


@dataclass(frozen=True)
class MaxWaits:
    """Cycles each channel's VALID may wait for READY before the checker reports it (0: not
    timed): ``aw``, ``w``, ``ar`` the slave's READYs (RECS_*), ``r``, ``b`` the master's
    (RECM_*)."""

    aw: int = 0
    w: int = 0
    ar: int = 0
    r: int = 0
    b: int = 0


#: The control port behind XRT's control-path firewalls (module docstring)
CONTROL_MAXWAITS = MaxWaits(aw=0x2000, w=0x2000, ar=0x2000)
#: A kernel's master behind an SI-side firewall at its reset values (module docstring)
MASTER_MAXWAITS = MaxWaits(r=0xFFFF, b=0xFFFF)
#: Every wait an AXI firewall times (PG293, "Timeout Faults"), with its limit in cycles, by the
#: side it checks: "slave" (MI-side mode: the control port, XRT's FW_MAX_WAIT_FIC) and "master"
#: (SI-side mode: PG293's reset values, which XRT leaves)
FIREWALL_WAITS = {
    "slave": {"RECS_AWREADY_MAX_WAIT": 0x2000, "RECS_WREADY_MAX_WAIT": 0x2000,
              "RECS_ARREADY_MAX_WAIT": 0x2000, "RECS_CONTINUOUS_RTRANSFERS_MAX_WAIT": 0x2000,
              "RECS_WRITE_TO_BVALID_MAX_WAIT": 0x2000},
    "master": {"RECM_RREADY_MAX_WAIT": 0xFFFF, "RECM_BREADY_MAX_WAIT": 0xFFFF,
               "RECM_CONTINUOUS_WTRANSFERS_MAX_WAIT": 0xFFFF,
               "RECM_WVALID_TO_AWVALID_MAX_WAIT": 0xFFFF},
}

#: Every input of the checker's AXI side: (AXI name, width or a width rule, default when the
#: port lacks it). Width rules: "id", "addr", "data", "strb", "len", "lock", "user"
_INPUTS = (
    ("AWID", "id", "0"), ("AWADDR", "addr", None), ("AWLEN", "len", "0"), ("AWSIZE", 3, "size"),
    ("AWBURST", 2, "2'b01"), ("AWLOCK", "lock", "0"), ("AWCACHE", 4, "0"), ("AWPROT", 3, "0"),
    ("AWQOS", 4, "0"), ("AWREGION", 4, "0"), ("AWUSER", "user", "0"), ("AWVALID", 1, None),
    ("AWREADY", 1, None),
    ("WID", "id", "0"), ("WLAST", 1, "1'b1"), ("WDATA", "data", None), ("WSTRB", "strb", "ones"),
    ("WUSER", "user", "0"), ("WVALID", 1, None), ("WREADY", 1, None),
    ("BID", "id", "0"), ("BRESP", 2, None), ("BUSER", "user", "0"), ("BVALID", 1, None),
    ("BREADY", 1, None),
    ("ARID", "id", "0"), ("ARADDR", "addr", None), ("ARLEN", "len", "0"), ("ARSIZE", 3, "size"),
    ("ARBURST", 2, "2'b01"), ("ARLOCK", "lock", "0"), ("ARCACHE", 4, "0"), ("ARPROT", 3, "0"),
    ("ARQOS", 4, "0"), ("ARREGION", 4, "0"), ("ARUSER", "user", "0"), ("ARVALID", 1, None),
    ("ARREADY", 1, None),
    ("RID", "id", "0"), ("RLAST", 1, "1'b1"), ("RDATA", "data", None), ("RRESP", 2, None),
    ("RUSER", "user", "0"), ("RVALID", 1, None), ("RREADY", 1, None),
)
_PROTOCOLS = {"AXI4": 0, "AXI3": 1, "AXI4LITE": 2}


class AxiCheckerError(AssertionError):
    pass


@dataclass(frozen=True)
class CheckedPort:
    """One AXI port of a Verilog module for :func:`bind` (see the module docstring)."""

    name: str
    protocol: str
    data_width: int
    addr_width: int
    signals: Mapping[str, str]
    id_width: int = 0
    clock: str = "ap_clk"
    resetn: str = "ap_rst_n"
    maxwaits: MaxWaits = MaxWaits()
    #: bursts in flight the checker tracks per direction (more: AUXM_*CAM_OVERFLOW)
    max_bursts: int = 16
    #: narrow bursts (SIZE below the bus width) allowed; False adds the checker's
    #: XILINX_*_SUPPORTS_NARROW_* rules
    narrow_bursts: bool = True
    user_width: int = 1
    extra: Mapping[str, int] = field(default_factory=dict)   # further checker parameters

    def __post_init__(self):
        if self.protocol not in _PROTOCOLS:
            raise ValueError(f"{self.name}: protocol must be one of {sorted(_PROTOCOLS)}")
        if not re.fullmatch(r"[A-Za-z_]\w*", self.name):
            raise ValueError(f"port name {self.name!r} is not a plain Verilog identifier")
        for required in ("AWADDR", "AWVALID", "AWREADY", "WDATA", "WVALID", "WREADY", "BRESP",
                         "BVALID", "BREADY", "ARADDR", "ARVALID", "ARREADY", "RDATA", "RRESP",
                         "RVALID", "RREADY"):
            if required not in self.signals:
                raise ValueError(f"{self.name}: no {required} signal")

    @classmethod
    def prefixed(cls, prefix: str, present, *, protocol=None, data_width=None, addr_width=None,
                 id_width=None, **options) -> "CheckedPort":
        """The port whose signals are ``<prefix>_<AXI name>``; ``present`` maps the module's
        signal names to their widths (:func:`module_ports`' values, or ``{name: width}``);
        protocol and widths from them unless given."""
        widths = {name: (spec[1] if isinstance(spec, tuple) else spec)
                  for name, spec in present.items()}
        signals = {axi: f"{prefix}_{axi}" for axi, _, _ in _INPUTS if f"{prefix}_{axi}" in widths}
        if protocol is None:
            protocol = "AXI4" if "AWLEN" in signals else "AXI4LITE"
        return cls(name=prefix, protocol=protocol,
                   data_width=data_width or widths[f"{prefix}_WDATA"],
                   addr_width=addr_width or widths[f"{prefix}_AWADDR"],
                   id_width=id_width if id_width is not None
                   else widths.get(f"{prefix}_AWID", 0), signals=signals, **options)

    def parameters(self, status_width: int) -> dict:
        """The checker's parameters for this port."""
        waits = self.maxwaits
        return {"C_AXI_PROTOCOL": _PROTOCOLS[self.protocol],
                "C_AXI_ID_WIDTH": max(1, self.id_width),
                "C_AXI_DATA_WIDTH": self.data_width, "C_AXI_ADDR_WIDTH": self.addr_width,
                "C_AXI_AWUSER_WIDTH": self.user_width, "C_AXI_ARUSER_WIDTH": self.user_width,
                "C_AXI_WUSER_WIDTH": self.user_width, "C_AXI_RUSER_WIDTH": self.user_width,
                "C_AXI_BUSER_WIDTH": self.user_width,
                "C_PC_MAXRBURSTS": self.max_bursts, "C_PC_MAXWBURSTS": self.max_bursts,
                # the checker sizes its AR wait counter by the AW limit (v1.1.12): keep the
                # AW limit at least the AR one
                "C_PC_AW_MAXWAITS": max(waits.aw, waits.ar), "C_PC_AR_MAXWAITS": waits.ar,
                "C_PC_W_MAXWAITS": waits.w, "C_PC_R_MAXWAITS": waits.r,
                "C_PC_B_MAXWAITS": waits.b, "C_PC_MESSAGE_LEVEL": 2,
                "C_PC_SUPPORTS_NARROW_BURST": int(self.narrow_bursts),
                "C_PC_MAX_BURST_LENGTH": 16 if self.protocol == "AXI3" else 256,
                "C_PC_HAS_SYSTEM_RESET": 1, "C_PC_STATUS_WIDTH": status_width,
                **self.extra}

    def _width(self, rule):
        axi3 = self.protocol == "AXI3"
        return {"id": max(1, self.id_width), "addr": self.addr_width, "data": self.data_width,
                "strb": self.data_width // 8, "len": 4 if axi3 else 8, "lock": 2 if axi3 else 1,
                "user": self.user_width}.get(rule, rule)

    def _input(self, axi, width_rule, default):
        width = self._width(width_rule)
        if axi in self.signals:
            return self.signals[axi]
        if default is None:
            raise ValueError(f"{self.name}: no {axi} signal")
        if default == "size":
            return f"3'd{(self.data_width // 8).bit_length() - 1}"
        if default == "ones":
            return f"{{{width}{{1'b1}}}}"
        return default if "'" in default else f"{width}'d{default}"

    def instance(self, status_width: int) -> str:
        """The Verilog of this port's checker instance and its two wires."""
        n = self.name
        params = ",\n".join(f"    .{key}({value})"
                            for key, value in self.parameters(status_width).items())
        ports = [f"    .pc_status({n}_pc_status)", f"    .pc_asserted({n}_pc_asserted)",
                 "    .system_resetn(1'b1)", f"    .aclk({self.clock})",
                 f"    .aresetn({self.resetn})"]
        ports += [f"    .pc_axi_{axi.lower()}({self._input(axi, width, default)})"
                  for axi, width, default in _INPUTS]
        return (f"  // AMD AXI Protocol Checker (PG101) on {n}: sim/axi_checker.py\n"
                f"  wire [{status_width - 1}:0] {n}_pc_status;\n"
                f"  wire {n}_pc_asserted;\n"
                f"  {CHECKER_MODULE} #(\n{params}\n  ) {n}_pc (\n" + ",\n".join(ports)
                + "\n  );\n")


def checker_source(environ: Mapping[str, str] | None = None) -> pathlib.Path | None:
    """The checker's Verilog file in the checkout ``KSA_AWS_FPGA`` names, or None."""
    root = (os.environ if environ is None else environ).get(CHECKER_ENV)
    if not root:
        return None
    path = pathlib.Path(root) / CHECKER_FILE
    return path if path.is_file() else None


def unavailable_reason(environ: Mapping[str, str] | None = None) -> str | None:
    """Why AMD's checker cannot be bound here (None: it can)."""
    root = (os.environ if environ is None else environ).get(CHECKER_ENV)
    if not root:
        return (f"AMD's AXI protocol checker is not bound: {CHECKER_ENV} is not set (the path of "
                f"an aws-fpga checkout, https://github.com/aws/aws-fpga, branch f2)")
    if checker_source(environ) is None:
        return f"AMD's AXI protocol checker is not bound: no {CHECKER_FILE} under {root}"
    return None


_RULE_BIT = re.compile(r"`REPORTER_MACRO\(\s*(\d+)\s*,\s*PC_\d+_(\w+?)\s*,\s*`(\w+)")
_MESSAGE = re.compile(r"`define\s+(\w+)\s+\"([^\"]*)\"")


def rule_table(source) -> dict[int, tuple[str, str]]:
    """``{pc_status bit: (rule name, the checker's message)}`` read from the checker's file:
    each bit's reporter line names its rule and the macro of its message."""
    text = pathlib.Path(source).read_text(errors="replace")
    messages = dict(_MESSAGE.findall(text))
    table = {}
    for bit, rule, macro in _RULE_BIT.findall(text):
        table[int(bit)] = (rule, messages.get(macro, ""))
    if not table:
        raise ValueError(f"{source}: no pc_status rule table (REPORTER_MACRO lines) found")
    return table


def decode(status: int, table: Mapping[int, tuple[str, str]]) -> list[str]:
    """The rules (``"PC_<bit> <rule>: <message>"``) whose bits are set in ``status``."""
    found = []
    for bit in range(status.bit_length()):
        if status >> bit & 1:
            rule, message = table.get(bit, (f"bit {bit}", ""))
            text = message.split(". ", 1)[1] if ". " in message else message
            found.append(f"PC_{bit:02d} {rule}" + (f": {text}" if text else ""))
    return found


_DECLARATION = re.compile(
    r"\b(input|output|inout)\s+(?:(?:wire|reg|logic|signed|unsigned|var)\s+)*"
    r"(?:\[\s*(\d+)\s*:\s*(\d+)\s*\]\s*)?([A-Za-z_][\w$]*)")


def _module_span(text: str, module: str) -> tuple[int, int]:
    """(start of ``module <name>``, start of its ``endmodule``)."""
    start = re.search(rf"^\s*module\s+{re.escape(module)}\s*[#(;]", text, flags=re.M)
    if start is None:
        raise ValueError(f"no module {module} in the Verilog")
    end = re.compile(r"^\s*endmodule\b", flags=re.M).search(text, start.end())
    if end is None:
        raise ValueError(f"module {module} has no endmodule")
    return start.start(), end.start()


def module_ports(text: str, module: str) -> dict[str, tuple[str, int]]:
    """``{port name: (direction, width)}`` of ``module`` in Verilog ``text``: one declaration
    per port (``input [63:0] a;`` as Amaranth writes it, or ANSI ``input wire [63:0] a,``)."""
    begin, end = _module_span(text, module)
    ports = {}
    for direction, high, low, name in _DECLARATION.findall(text[begin:end]):
        width = abs(int(high) - int(low)) + 1 if high else 1
        ports.setdefault(name, (direction, width))
    return ports


def axi_ports(ports: Mapping[str, tuple[str, int]], *, clock="ap_clk", resetn="ap_rst_n",
              maxwaits=None, port_options=None, **options) -> list[CheckedPort]:
    """Every AXI port among a module's ``ports`` (:func:`module_ports`): each prefix with a
    ``<prefix>_AWVALID``, AXI4 with ``<prefix>_AWLEN``, else AXI4-Lite. ``maxwaits(port name,
    protocol)`` gives each port's :class:`MaxWaits` (default: :func:`vitis_maxwaits`);
    ``port_options(port name, protocol)`` further :class:`CheckedPort` fields per port
    (e.g. :func:`vitis_port_options`); ``options`` the fields of every port."""
    maxwaits = maxwaits or vitis_maxwaits
    found = []
    for name in ports:
        if name.endswith("_AWVALID"):
            prefix = name[:-len("_AWVALID")]
            port = CheckedPort.prefixed(prefix, ports, clock=clock, resetn=resetn, **options)
            port = replace(port, maxwaits=maxwaits(prefix, port.protocol))
            if port_options is not None:
                port = replace(port, **port_options(prefix, port.protocol))
            found.append(port)
    return found


def vitis_maxwaits(name: str, protocol: str) -> MaxWaits:
    """A Vitis kernel's ports: ``s_axi_control`` (AXI4-Lite) behind a control-path firewall,
    ``m_axi_*`` masters behind an SI-side one (module docstring)."""
    return CONTROL_MAXWAITS if protocol == "AXI4LITE" else MASTER_MAXWAITS


def vitis_port_options(name: str, protocol: str) -> dict:
    """What this project's Vitis kernels promise beyond AXI4 (hw/axi): a master issues only
    full-width bursts (the checker's ``XILINX_*_SUPPORTS_NARROW_*`` rules on); the control port
    (:class:`hw.axi.lite_control.AxiLiteControl`) holds at most two writes without their B (one
    answered, one taken) and one read: a third taken before a B is ``AUXM_WCAM_OVERFLOW``."""
    if protocol == "AXI4LITE":
        return {"max_bursts": 2}
    return {"narrow_bursts": False}


def bind(text: str, module: str, ports, source) -> str:
    """``text`` with a checker instance per port of ``ports`` (:class:`CheckedPort`) at the end
    of ``module``'s body; the status width is the number of rules in ``source`` (the checker's
    file, :func:`checker_source`), which must be compiled with the result."""
    width = max(rule_table(source)) + 1
    _, end = _module_span(text, module)
    body = "".join(port.instance(width) for port in ports)
    return text[:end] + body + text[end:]


def bound_ports(environ: Mapping[str, str] | None = None) -> tuple[pathlib.Path | None, list]:
    """Inside a simulation: (the checker's file, the names of the bound ports) a runner
    announced in :data:`BOUND_ENV`, or (None, [])."""
    raw = (os.environ if environ is None else environ).get(BOUND_ENV)
    if not raw:
        return None, []
    bound = json.loads(raw)
    return pathlib.Path(bound["source"]), list(bound["ports"])


def bound_announcement(source, ports) -> str:
    """The :data:`BOUND_ENV` value for ``ports`` (:class:`CheckedPort` or names)."""
    return json.dumps({"source": str(source),
                       "ports": [getattr(port, "name", port) for port in ports]})


def _level(handle):
    """A 1-bit signal's value, None while it is unresolved (X/Z)."""
    try:
        return bool(int(handle.value))
    except ValueError:
        return None


class CheckerWatch:
    """cocotb: fails the test when a bound checker of ``scope`` (the handle of the module its
    instances are in) asserts ``pc_asserted``, with the port's name, the cycle and the rules
    decoded from ``pc_status``. ``ports`` and ``source`` default to what the runner announced
    (:func:`bound_ports`); with no port bound it watches nothing (``active`` False, ``reason``
    says why). ``reset`` (a handle, active low unless ``reset_active_level``): the watch arms
    once it has been asserted and released. Findings are logged on ``log`` and kept in
    ``findings``."""

    def __init__(self, scope, clock, reset=None, *, reset_active_level=False, ports=None,
                 source=None, log=None):
        import cocotb
        if ports is None or source is None:
            announced_source, announced = bound_ports()
            ports = announced if ports is None else ports
            source = announced_source if source is None else source
        self.ports = [getattr(port, "name", port) for port in ports or []]
        self.reason = None if self.ports else (unavailable_reason() or
                                               "AMD's AXI protocol checker is not bound here")
        self.scope, self.clock, self.log = scope, clock, log
        self.reset, self.reset_active_level = reset, bool(reset_active_level)
        self.table = rule_table(source) if self.ports else {}
        self.findings = []
        self._allowed = {}
        self.cycle = 0
        self._tasks = [cocotb.start_soon(self._watch(port)) for port in self.ports]
        if self.ports:
            self._tasks.append(cocotb.start_soon(self._count()))
            if log is not None:
                log.info("AMD AXI protocol checker bound to %s (%s)", ", ".join(self.ports),
                         source)
        elif log is not None:
            log.info("%s", self.reason)

    @property
    def active(self) -> bool:
        return bool(self.ports)

    @property
    def running(self) -> bool:
        """Its tasks still run (cocotb ends a test's tasks with the test); True when inactive."""
        return not self._tasks or not all(task.done() for task in self._tasks)

    async def _count(self):
        from cocotb.triggers import RisingEdge
        while True:
            await RisingEdge(self.clock)
            self.cycle += 1

    async def _armed(self):
        """Return once the reset has been asserted in a clock edge and released in a later one,
        and one more edge has passed (``pc_asserted`` registers ``pc_status``, which the reset
        clears; a level set before the clock runs, as a bench's set-up does, is no reset)."""
        from cocotb.triggers import RisingEdge
        if self.reset is None:
            return
        active = self.reset_active_level
        while True:
            while _level(self.reset) is not active:
                await self.reset.value_change
            await RisingEdge(self.clock)
            if _level(self.reset) is active:
                break
        while _level(self.reset) is not (not active):
            await RisingEdge(self.clock)
        await RisingEdge(self.clock)

    def allow(self, port, reason):
        """A bench breaks the protocol on ``port`` on purpose (a faulty slave, a reset outside
        AXI's contract): the checker's next finding there is logged with ``reason`` and does not
        fail the test. ``pc_status`` holds its bits until a reset, so the port is unchecked from
        that finding to the next reset, where the watch re-arms."""
        if port in self.ports:
            self._allowed[port] = (reason,)      # (a new object: a later allow is told apart)
            if self.log is not None:
                self.log.info("AMD AXI protocol checker on %s: findings allowed until its next "
                              "reset (%s)", port, reason)

    async def _watch(self, port):
        from cocotb.triggers import ReadOnly, RisingEdge
        await self._armed()
        asserted = getattr(self.scope, f"{port}_pc_asserted")
        while True:
            if _level(asserted):
                await ReadOnly()
            else:
                await RisingEdge(asserted)
                await ReadOnly()
            allowance = self._allowed.get(port)
            if allowance is None:
                self._report(port)
            self.findings.append((port, self.cycle, self.rules(port)))
            if self.log is not None:
                self.log.info("AMD AXI protocol checker on %s, cycle %d, allowed (%s): %s",
                              port, self.cycle, allowance[0], "; ".join(self.rules(port)))
            await self._armed()            # the next reset clears pc_status
            if self._allowed.get(port) is allowance:    # (not one given since)
                del self._allowed[port]

    def rules(self, port) -> list[str]:
        """The rules set now in ``port``'s ``pc_status``."""
        return decode(int(getattr(self.scope, f"{port}_pc_status").value), self.table)

    def _report(self, port):
        rules = self.rules(port)
        self.findings.append((port, self.cycle, rules))
        text = f"{port}: AMD AXI protocol checker, cycle {self.cycle}: " + "; ".join(rules)
        if self.log is not None:
            self.log.error("%s", text)
        raise AxiCheckerError(text)

    def check(self):
        """Raise if any bound checker's ``pc_status`` has a rule set now (but on a port whose
        findings are allowed)."""
        for port in self.ports:
            if port not in self._allowed and self.rules(port):
                self._report(port)
