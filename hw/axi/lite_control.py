"""AXI4-Lite slave implementing the Vitis ap_ctrl_hs control register map (see
:mod:`kmerspec.regmap`).

Core-side handshake (simpler than raw ap_ctrl_hs; this block does the ap_ctrl_hs bookkeeping):

* ``start`` is a one-cycle pulse.  In that cycle (and until the next start) ``args`` holds a
  snapshot of every argument register, taken when the run was launched, so the host may rewrite
  the registers during a run without disturbing it.
* The core raises ``done`` for one cycle when the run has completed (all of its memory writes
  acknowledged).  ``done`` outside a run is ignored.  ``done`` may come as early as the cycle after
  ``start``.
* ``idle`` is high when no run is in progress (ap_idle).

ap_ctrl_hs side: the host writes 1 to CTRL.ap_start; when the block is idle it launches a run
(``start`` pulse one cycle later, ap_idle drops).  The core's ``done`` is also ap_ready: ap_done and
ap_ready latch (both clear on read of CTRL), ap_idle rises, ap_start clears -- unless auto_restart is
set, in which case ap_start stays set and the next run is launched at once.  ISR bit0/bit1 are set
by the done/ready events when enabled in IER, a host write toggles them; ``interrupt = GIE & |ISR``.

Read-only status registers after the arguments (:func:`kmerspec.regmap.layout_status`): ERROR reads
the core's ``error`` (which the core holds from its ``done`` to the next ``start``), the identity
words read as the constants given. FRESH (R/W, bit 0) is set by reset and by a host write of 1;
a launch copies it to ``fresh`` (valid with ``args``) and clears it.
"""

from amaranth import *
from amaranth.lib import wiring, data
from amaranth.lib.wiring import In, Out

from kmerspec.regmap import CTRL, GIE, IER, ISR, CONTROL_ADDR_WIDTH, layout_args, layout_status

from .signature import AxiLiteSignature, AXI_RESP_OKAY

__all__ = ["AxiLiteControl"]


class AxiLiteControl(wiring.Component):
    """ap_ctrl_hs control block.

    Parameters
    ----------
    args : sequence of :class:`kmerspec.regmap.RegArg` (or anything with ``name`` and ``width``)
        Arguments in host order.
    identity : sequence of int
        The read-only identity words (a kernel's ``Params.identity_words()``).

    Members
    -------
    bus : In(AxiLiteSignature)   the ``s_axi_control`` slave port
    interrupt : Out(1)
    start : Out(1)   one-cycle launch pulse
    done : In(1)     one-cycle completion pulse from the core
    error : In(32)   the ERROR register (the outcome of the last call)
    fresh : Out(1)   the call must start from a clean kernel (snapshot at launch, like ``args``)
    idle : Out(1)
    args : Out(StructLayout)   one field per argument (width 32 or 64), snapshot taken at launch
    regs : Out(StructLayout)   the live argument registers (as the host last wrote them)
    """

    def __init__(self, args, *, identity=(), addr_width=CONTROL_ADDR_WIDTH):
        self.slots = layout_args(args, addr_width=addr_width)
        self.identity = tuple(identity)
        self.status = layout_status(args, len(self.identity), addr_width=addr_width)
        self.addr_width = addr_width
        layout = data.StructLayout({s.name: s.width for s in self.slots} or {"_none": 1})
        super().__init__({
            "bus": In(AxiLiteSignature(addr_width=addr_width, data_width=32)),
            "interrupt": Out(1),
            "start": Out(1),
            "done": In(1),
            "error": In(32),
            "fresh": Out(1),
            "idle": Out(1, init=1),
            "args": Out(layout),
            "regs": Out(layout),
        })

    def elaborate(self, platform):
        m = Module()
        bus = self.bus

        ap_start = Signal()
        ap_done = Signal()
        ap_ready = Signal()
        auto_restart = Signal()
        gie = Signal()
        ier = Signal(2)
        isr = Signal(2)
        idle = Signal(init=1)
        m.d.comb += self.idle.eq(idle)

        arg_regs = {s.name: Signal(s.width, name=f"arg_{s.name}") for s in self.slots}
        for s in self.slots:
            m.d.comb += getattr(self.regs, s.name).eq(arg_regs[s.name])

        # ---- run control --------------------------------------------------------------------
        launch = Signal()
        m.d.comb += launch.eq(ap_start & idle)
        m.d.sync += self.start.eq(launch)
        fresh_pending = Signal(init=1)
        with m.If(launch):
            m.d.sync += [idle.eq(0), self.fresh.eq(fresh_pending), fresh_pending.eq(0)]
            for s in self.slots:
                m.d.sync += getattr(self.args, s.name).eq(arg_regs[s.name])
        finish = Signal()
        # done counts only during a run: ~idle holds from the start cycle on.
        m.d.comb += finish.eq(self.done & ~idle)
        with m.If(finish):
            m.d.sync += idle.eq(1)

        m.d.comb += self.interrupt.eq(gie & isr.any())

        # ---- AXI-Lite write path ------------------------------------------------------------
        aw_held = Signal()
        aw_addr = Signal(self.addr_width)
        w_held = Signal()
        w_data = Signal(32)
        w_strb = Signal(4)
        bvalid = Signal()

        m.d.comb += [
            bus.AWREADY.eq(~aw_held),
            bus.WREADY.eq(~w_held),
            bus.BVALID.eq(bvalid),
            bus.BRESP.eq(AXI_RESP_OKAY),
        ]
        with m.If(bus.AWVALID & ~aw_held):
            m.d.sync += [aw_held.eq(1), aw_addr.eq(bus.AWADDR)]
        with m.If(bus.WVALID & ~w_held):
            m.d.sync += [w_held.eq(1), w_data.eq(bus.WDATA), w_strb.eq(bus.WSTRB)]
        with m.If(bvalid & bus.BREADY):
            m.d.sync += bvalid.eq(0)

        do_write = Signal()
        m.d.comb += do_write.eq(aw_held & w_held & ~bvalid)
        with m.If(do_write):
            m.d.sync += [aw_held.eq(0), w_held.eq(0), bvalid.eq(1)]

        wmask = Signal(32)
        m.d.comb += wmask.eq(Cat(w_strb[i].replicate(8) for i in range(4)))
        waddr = Signal(self.addr_width - 2)
        m.d.comb += waddr.eq(aw_addr[2:])

        def merged(old):
            return (old & ~wmask) | (w_data & wmask)

        wr_ctrl = do_write & (waddr == CTRL // 4) & w_strb[0]
        wr_isr = do_write & (waddr == ISR // 4) & w_strb[0]

        with m.If(do_write & w_strb[0] & (waddr == self.status.fresh // 4) & w_data[0]):
            m.d.sync += fresh_pending.eq(1)
        with m.If(do_write & w_strb[0]):
            with m.Switch(waddr):
                with m.Case(GIE // 4):
                    m.d.sync += gie.eq(w_data[0])
                with m.Case(IER // 4):
                    m.d.sync += ier.eq(w_data[0:2])
        with m.If(do_write):
            for s in self.slots:
                reg = arg_regs[s.name]
                for i, off in enumerate(range(s.offset, s.offset + s.size, 4)):
                    with m.If(waddr == off // 4):
                        m.d.sync += reg[32 * i:32 * i + 32].eq(merged(reg[32 * i:32 * i + 32]))

        # ---- AXI-Lite read path -------------------------------------------------------------
        rvalid = Signal()
        rdata = Signal(32)
        m.d.comb += [
            bus.ARREADY.eq(~rvalid),
            bus.RVALID.eq(rvalid),
            bus.RDATA.eq(rdata),
            bus.RRESP.eq(AXI_RESP_OKAY),
        ]
        with m.If(rvalid & bus.RREADY):
            m.d.sync += rvalid.eq(0)
        do_read = Signal()
        m.d.comb += do_read.eq(bus.ARVALID & ~rvalid)
        raddr = Signal(self.addr_width - 2)
        m.d.comb += raddr.eq(bus.ARADDR[2:])
        rd_ctrl = do_read & (raddr == CTRL // 4)
        with m.If(do_read):
            m.d.sync += rvalid.eq(1)
            with m.Switch(raddr):
                with m.Case(CTRL // 4):
                    m.d.sync += rdata.eq(Cat(ap_start, ap_done, idle, ap_ready,
                                             C(0, 3), auto_restart))
                with m.Case(GIE // 4):
                    m.d.sync += rdata.eq(gie)
                with m.Case(IER // 4):
                    m.d.sync += rdata.eq(ier)
                with m.Case(ISR // 4):
                    m.d.sync += rdata.eq(isr)
                for s in self.slots:
                    for i, off in enumerate(range(s.offset, s.offset + s.size, 4)):
                        with m.Case(off // 4):
                            m.d.sync += rdata.eq(arg_regs[s.name][32 * i:32 * i + 32])
                with m.Case(self.status.error // 4):
                    m.d.sync += rdata.eq(self.error)
                with m.Case(self.status.fresh // 4):
                    m.d.sync += rdata.eq(fresh_pending)
                for offset, word in zip(self.status.identity_offsets, self.identity):
                    with m.Case(offset // 4):
                        m.d.sync += rdata.eq(word)
                with m.Default():
                    m.d.sync += rdata.eq(0)

        # ---- CTRL / ISR state (events win over host accesses in the same cycle) --------------
        with m.If(finish):
            m.d.sync += [ap_done.eq(1), ap_ready.eq(1)]
        with m.Elif(rd_ctrl):
            m.d.sync += [ap_done.eq(0), ap_ready.eq(0)]

        with m.If(wr_ctrl):
            m.d.sync += auto_restart.eq(w_data[7])
        with m.If(finish):
            m.d.sync += ap_start.eq(auto_restart | (wr_ctrl & w_data[0]))
        with m.Elif(wr_ctrl & w_data[0]):
            m.d.sync += ap_start.eq(1)

        for bit in range(2):
            with m.If(finish & ier[bit]):
                m.d.sync += isr[bit].eq(1)
            with m.Elif(wr_isr & w_data[bit]):
                m.d.sync += isr[bit].eq(~isr[bit])

        return m
