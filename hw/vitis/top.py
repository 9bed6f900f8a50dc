"""Vitis RTL kernel top level: wraps a :class:`~hw.vitis.core.KernelCore` with the ap_ctrl_hs
control block and gives it the exact port names Vitis requires.

Ports (all flat, names emitted verbatim by ``amaranth.back.verilog.convert``)::

    ap_clk, ap_rst_n (active-low, synchronous), interrupt
    s_axi_control_{AW,W,B,AR,R}*   AXI4-Lite slave, 32-bit data, 12-bit address
    m_axi_<bundle>_{AW,W,B,AR,R}*  AXI4 master per bundle (64-bit address, LOCK 1 bit)

Reset: the core's registers see ``~ap_rst_n`` through two register stages (ap_rst_n fans out to
every register of the kernel; the stages let the tools replicate it), so the state they drive
lags the input by two cycles. Every AXI VALID and READY the top drives (ARVALID, AWVALID,
WVALID, RREADY, BREADY of each m_axi port; AWREADY, WREADY, BVALID, ARREADY, RVALID of
s_axi_control) is therefore and-ed with the raw ``ap_rst_n`` and with the inner reset's
complement at the port: all are low from the first cycle ap_rst_n is low (ARM IHI 0022, A3.1.2:
VALIDs low during reset) until the registers behind them are out of reset, two edges after
ap_rst_n rose. A master may start an access right after the first edge at which ARESETn is high;
the control block's READYs, high in their reset state, would take it in the next edge, which
still resets the block, and it would never be answered. So nothing is offered or taken while any
register behind a port is in reset (two LUT inputs on each of these outputs, ap_rst_n and the
last reset stage; no register path lengthened). The READYs are low at the first edge after reset
too (AMD's protocol checker, PG101: XILINX_*READY_RESET).

The module name is the kernel name: ``verilog.convert(VitisKernel(core), name=desc.name)``
(:func:`to_verilog` does this).
"""

from amaranth import *
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from ..axi.lite_control import AxiLiteControl
from ..axi.signature import AxiLiteSignature
from .description import KernelDesc, bundle_signature

__all__ = ["VitisKernel", "to_verilog", "top_port_names", "HANDSHAKE_OUTPUTS"]

#: The handshake members a master drives (m_axi) and a slave drives (s_axi_control): low
#: while ap_rst_n is low and until the registers behind them are out of reset
HANDSHAKE_OUTPUTS = {"master": ("ARVALID", "AWVALID", "WVALID", "RREADY", "BREADY"),
                     "slave": ("AWREADY", "WREADY", "BVALID", "ARREADY", "RVALID")}


def _flat(prefix, sig, flip):
    out = {}
    for name, member in sig.members.items():
        flow = member.flow
        if flip:
            flow = flow.flip()
        out[f"{prefix}_{name}"] = (flow, member.shape)
    return out


def _top_members(desc: KernelDesc):
    members = {"ap_clk": (In, 1), "ap_rst_n": (In, 1), "interrupt": (Out, 1)}
    lite = AxiLiteSignature(addr_width=desc.control_addr_width, data_width=32)
    for k, (flow, shape) in _flat("s_axi_control", lite, flip=True).items():
        members[k] = (In if flow == In else Out, shape)
    for b in desc.bundles:
        for k, (flow, shape) in _flat(b.port, bundle_signature(b), flip=False).items():
            members[k] = (In if flow == In else Out, shape)
    return members


def top_port_names(desc: KernelDesc):
    """``{port name: ("in"|"out", width)}`` of the Vitis top, for checks against kernel.xml."""
    from amaranth.hdl import Shape
    return {k: ("in" if f is In else "out", Shape.cast(s).width)
            for k, (f, s) in _top_members(desc).items()}


class VitisKernel(wiring.Component):
    def __init__(self, core):
        self.core = core
        self.desc = core.desc
        super().__init__({k: f(s) for k, (f, s) in _top_members(self.desc).items()})

    def elaborate(self, platform):
        m = Module()
        desc = self.desc

        # Clock and pipelined synchronous reset.
        m.domains.sync = cd_sync = ClockDomain("sync")
        m.domains.ap = cd_ap = ClockDomain("ap", reset_less=True)
        rst_pipe = Signal(2, init=0b11)
        m.d.comb += [cd_sync.clk.eq(self.ap_clk), cd_ap.clk.eq(self.ap_clk)]
        m.d.ap += rst_pipe.eq(Cat(~self.ap_rst_n, rst_pipe[0]))
        m.d.comb += cd_sync.rst.eq(rst_pipe[1])

        m.submodules.control = control = AxiLiteControl(desc.reg_args, identity=desc.identity,
                                                         addr_width=desc.control_addr_width)
        m.submodules.core = core = self.core

        # every register behind the ports is out of reset: ap_rst_n high (from its first low
        # cycle on, before the stages see it) and the last stage low (until two edges after it
        # rose: the control block's READYs would take an access that the reset then forgets)
        out_of_reset = Signal()
        m.d.comb += out_of_reset.eq(self.ap_rst_n & ~rst_pipe[1])

        def drive(top, inner, name, side):
            quiet = name in HANDSHAKE_OUTPUTS[side]
            m.d.comb += top.eq(inner & out_of_reset if quiet else inner)

        for name, member in control.bus.signature.members.items():
            top = getattr(self, f"s_axi_control_{name}")
            inner = getattr(control.bus, name)
            if member.flow == In:         # into the control block (bus is a flipped port)
                m.d.comb += inner.eq(top)
            else:
                drive(top, inner, name, "slave")
        m.d.comb += self.interrupt.eq(control.interrupt)

        m.d.comb += [core.start.eq(control.start), control.done.eq(core.done),
                     control.error.eq(core.error), core.fresh.eq(control.fresh)]
        for a in desc.args:
            m.d.comb += getattr(core.args, a.name).eq(getattr(control.args, a.name))

        for b in desc.bundles:
            port = getattr(core, b.port)
            for name, member in port.signature.members.items():
                top = getattr(self, f"{b.port}_{name}")
                inner = getattr(port, name)
                if member.flow == Out:
                    drive(top, inner, name, "master")
                else:
                    m.d.comb += inner.eq(top)

        # Extra core inputs are tied to 0 (the default of an undriven signal).
        return m


def to_verilog(top_or_core, **kwargs):
    """Verilog text of a kernel (a :class:`VitisKernel` or a core to wrap); module = kernel name.
    Memory initialisation is written compactly (:mod:`.emit`)."""
    from .emit import convert
    top = top_or_core if isinstance(top_or_core, VitisKernel) else VitisKernel(top_or_core)
    return convert(top, top.desc.name, **kwargs)
