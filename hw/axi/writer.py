"""AXI4 burst writer: commands (address, byte length) and a stream of data beats in, AW/W/B out.

``cmd``      : In(stream of CommandLayout)   -- see :mod:`hw.axi.burst`
``data``     : In(stream of bus-width words) -- exactly ceil(length / bus bytes) beats per command,
                                                in command order; bytes past ``length`` on the final
                                                beat are not written (WSTRB cleared)
``axi``      : Out(Axi4Signature)            -- only AW, W and B are driven
``cmd_done`` : Out(1)   one-cycle pulse when the last B response of a command has arrived
``idle``     : Out(1)   no command in progress and every B response received; it falls the cycle
                        after a command is accepted, so a core that raises ap_done on ``idle``
                        after handing over its last command/data is correct
``error``    : Out(1)   sticky: some B had BRESP != OKAY

Up to ``max_outstanding`` AW bursts may wait for their B response.  W beats of a burst are sent
only after its AW handshake (W never leads AW); AW is not held back until the data is available.
"""

from amaranth import *
from amaranth.utils import exact_log2
from amaranth.lib import wiring, data, stream
from amaranth.lib.fifo import SyncFIFO
from amaranth.lib.wiring import In, Out

from .signature import Axi4Signature, AXI_BURST_INCR, AXI_RESP_OKAY
from .burst import BurstSplitter, CommandLayout

__all__ = ["AxiBurstWriter"]


class AxiBurstWriter(wiring.Component):
    def __init__(self, *, addr_width=64, data_width=512, id_width=1, len_width=32,
                 max_outstanding=8, max_beats=256):
        self.addr_width = addr_width
        self.data_width = data_width
        self.id_width = id_width
        self.len_width = len_width
        self.max_outstanding = max_outstanding
        self.max_beats = max_beats
        super().__init__({
            "cmd": In(stream.Signature(CommandLayout(addr_width, len_width))),
            "data": In(stream.Signature(data_width)),
            "axi": Out(Axi4Signature(addr_width=addr_width, data_width=data_width,
                                     id_width=id_width)),
            "cmd_done": Out(1),
            "idle": Out(1),
            "error": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        nbytes = self.data_width // 8
        lb = exact_log2(nbytes)
        axi = self.axi

        m.submodules.split = split = BurstSplitter(
            addr_width=self.addr_width, data_bytes=nbytes, len_width=self.len_width,
            max_beats=self.max_beats)
        wiring.connect(m, wiring.flipped(self.cmd), split.cmd)

        w_layout = data.StructLayout({"beats_m1": 8, "last": 1, "tail": max(1, lb)})
        m.submodules.winfo = winfo = SyncFIFO(width=w_layout.size, depth=2)
        m.submodules.binfo = binfo = SyncFIFO(width=1, depth=self.max_outstanding)

        # AW
        b = split.burst.payload
        can = winfo.w_rdy & binfo.w_rdy
        m.d.comb += [
            axi.AWVALID.eq(split.burst.valid & can),
            split.burst.ready.eq(axi.AWREADY & can),
            axi.AWADDR.eq(b.addr),
            axi.AWLEN.eq(b.beats_m1),
            axi.AWSIZE.eq(lb),
            axi.AWBURST.eq(AXI_BURST_INCR),
            axi.AWID.eq(0),
            axi.AWCACHE.eq(0b0011),
            axi.AWPROT.eq(0),
        ]
        aw_fire = axi.AWVALID & axi.AWREADY
        wi = data.View(w_layout, winfo.w_data)
        m.d.comb += [
            winfo.w_en.eq(aw_fire), binfo.w_en.eq(aw_fire),
            wi.beats_m1.eq(b.beats_m1), wi.last.eq(b.last), wi.tail.eq(b.tail),
            binfo.w_data.eq(b.last),
        ]

        # W
        ri = data.View(w_layout, winfo.r_data)
        beat = Signal(8)
        wlast = Signal()
        m.d.comb += wlast.eq(beat == ri.beats_m1)
        full = Const((1 << nbytes) - 1, nbytes)
        tail_strb = Signal(nbytes)
        m.d.comb += tail_strb.eq((Const(1, nbytes + 1) << ri.tail) - 1)
        m.d.comb += [
            axi.WVALID.eq(self.data.valid & winfo.r_rdy),
            self.data.ready.eq(axi.WREADY & winfo.r_rdy),
            axi.WDATA.eq(self.data.payload),
            axi.WLAST.eq(wlast),
            axi.WSTRB.eq(Mux(wlast & ri.last & (ri.tail != 0), tail_strb, full)),
        ]
        w_fire = axi.WVALID & axi.WREADY
        with m.If(w_fire):
            m.d.sync += beat.eq(Mux(wlast, 0, beat + 1))
        m.d.comb += winfo.r_en.eq(w_fire & wlast)

        # B
        m.d.comb += axi.BREADY.eq(binfo.r_rdy)
        b_fire = axi.BVALID & axi.BREADY
        m.d.comb += binfo.r_en.eq(b_fire)
        m.d.sync += self.cmd_done.eq(b_fire & binfo.r_data[0])
        with m.If(b_fire & (axi.BRESP != AXI_RESP_OKAY)):
            m.d.sync += self.error.eq(1)

        m.d.comb += self.idle.eq(~split.busy & ~binfo.r_rdy & ~self.cmd_done)
        return m
