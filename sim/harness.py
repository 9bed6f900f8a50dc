"""Small Amaranth designs that exist only to test the shared infrastructure under cocotb."""

from amaranth import *
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from hw.axi import AxiLiteControl, AxiBurstReader, AxiBurstWriter, connect_axi_rw
from hw.axi.signature import AxiLiteSignature
from hw.vitis import KernelCore, KernelDesc, Arg, Bundle
from hw.vitis.top import HANDSHAKE_OUTPUTS

__all__ = ["ControlHarness", "CopyKernel"]


class ControlHarness(wiring.Component):
    """:class:`AxiLiteControl` alone, every signal on a flat port: ``s_axi_control_*``,
    ``interrupt``, ``start``, ``done``, ``idle``, ``arg_<name>`` (snapshot) and ``reg_<name>``
    (live register).  Clock ``clk``, active-high reset ``rst``.  The handshake outputs of the
    port (:data:`hw.vitis.top.HANDSHAKE_OUTPUTS`) are low in reset and at the first edge after
    it, as the Vitis top makes them (the control block's READYs are high in its reset state;
    AMD's protocol checker, bound to this port, requires them low there: XILINX_*READY_RESET)."""

    def __init__(self, reg_args, addr_width=12):
        self.reg_args = list(reg_args)
        self.addr_width = addr_width
        members = {}
        lite = AxiLiteSignature(addr_width=addr_width).flip()
        for name, mem in lite.members.items():
            members[f"s_axi_control_{name}"] = mem
        members.update({"interrupt": Out(1), "start": Out(1), "done": In(1), "idle": Out(1)})
        for a in self.reg_args:
            members[f"arg_{a.name}"] = Out(a.width)
            members[f"reg_{a.name}"] = Out(a.width)
        super().__init__(members)

    def elaborate(self, platform):
        m = Module()
        m.submodules.ctl = ctl = AxiLiteControl(self.reg_args, addr_width=self.addr_width)
        released = Signal()  # low in reset and until the first edge after it
        m.d.sync += released.eq(1)
        out_of_reset = ~ResetSignal() & released
        for name, mem in ctl.bus.signature.members.items():
            top, inner = getattr(self, f"s_axi_control_{name}"), getattr(ctl.bus, name)
            if mem.flow == In:
                m.d.comb += inner.eq(top)
            elif name in HANDSHAKE_OUTPUTS["slave"]:
                m.d.comb += top.eq(inner & out_of_reset)
            else:
                m.d.comb += top.eq(inner)
        m.d.comb += [self.interrupt.eq(ctl.interrupt), self.start.eq(ctl.start),
                     ctl.done.eq(self.done), self.idle.eq(ctl.idle)]
        for a in self.reg_args:
            m.d.comb += [getattr(self, f"arg_{a.name}").eq(getattr(ctl.args, a.name)),
                         getattr(self, f"reg_{a.name}").eq(getattr(ctl.regs, a.name))]
        return m


class CopyKernel(KernelCore):
    """Vitis kernel ``copy_<dw>``: copies ``n_bytes`` from ``src`` (m_axi_rd) to ``dst``
    (m_axi_wr) through an AxiBurstReader and an AxiBurstWriter of any data width."""

    def __init__(self, data_width=512, max_outstanding=4):
        self.data_width = data_width
        self.max_outstanding = max_outstanding
        super().__init__(KernelDesc(
            f"copy_{data_width}",
            args=[Arg("src", "pointer", "rd"), Arg("dst", "pointer", "wr"), Arg("n_bytes", "scalar")],
            bundles=[Bundle("rd", data_width=data_width), Bundle("wr", data_width=data_width)]))

    def elaborate(self, platform):
        m = Module()
        dw = self.data_width
        m.submodules.rd = rd = AxiBurstReader(data_width=dw, max_outstanding=self.max_outstanding)
        m.submodules.wr = wr = AxiBurstWriter(data_width=dw)
        connect_axi_rw(m, self.m_axi_rd, reader=rd.axi)
        connect_axi_rw(m, self.m_axi_wr, writer=wr.axi)
        m.d.comb += [
            wr.data.valid.eq(rd.data.valid),
            wr.data.payload.eq(rd.data.payload.data),
            rd.data.ready.eq(wr.data.ready),
            rd.cmd.payload.addr.eq(self.args.src),
            rd.cmd.payload.length.eq(self.args.n_bytes),
            wr.cmd.payload.addr.eq(self.args.dst),
            wr.cmd.payload.length.eq(self.args.n_bytes),
        ]
        rd_pending = Signal()
        wr_pending = Signal()
        busy = Signal()
        m.d.comb += [rd.cmd.valid.eq(rd_pending), wr.cmd.valid.eq(wr_pending)]
        with m.If(self.start):
            m.d.sync += [rd_pending.eq(1), wr_pending.eq(1), busy.eq(1)]
        with m.If(rd.cmd.ready & rd_pending):
            m.d.sync += rd_pending.eq(0)
        with m.If(wr.cmd.ready & wr_pending):
            m.d.sync += wr_pending.eq(0)
        settle = Signal()   # one cycle after both commands left, the idle flags are valid
        m.d.sync += settle.eq(busy & ~rd_pending & ~wr_pending & ~self.start)
        with m.If(settle & busy & ~rd_pending & ~wr_pending & rd.idle & wr.idle):
            m.d.comb += self.done.eq(1)
            m.d.sync += [busy.eq(0), settle.eq(0)]
        return m
