"""AXI4 burst reader: commands (address, byte length) in, a stream of data beats out.

``cmd``  : In(stream of CommandLayout)            -- see :mod:`hw.axi.burst` for the rules
``data`` : Out(stream of ReadBeatLayout)          -- ``data`` (bus width), ``keep`` (byte mask),
                                                     ``last`` (final beat of a command)
``axi``  : Out(Axi4Signature)                     -- only AR and R are driven; AW/W/B are left idle
                                                     (use :func:`hw.axi.connect.connect_axi_rw`)
``idle`` : Out(1)   no command in progress and no read data outstanding
``error``: Out(1)   sticky: some R beat had RRESP != OKAY (data are still delivered)

Up to ``max_outstanding`` AR bursts are in flight, so with a memory answering every cycle the
output runs at one beat per cycle.  R data are passed through with no buffer: ``RREADY`` follows
``data.ready``, so a consumer's backpressure reaches the memory (legal AXI; the UG1393 advice to
issue AR only when the read data can all be accepted is met when the consumer does not stall).
"""

from amaranth import *
from amaranth.utils import exact_log2
from amaranth.lib import wiring, data, stream
from amaranth.lib.fifo import SyncFIFO
from amaranth.lib.wiring import In, Out

from .signature import Axi4Signature, AXI_BURST_INCR, AXI_RESP_OKAY
from .burst import BurstSplitter, CommandLayout

__all__ = ["AxiBurstReader", "ReadBeatLayout"]


def ReadBeatLayout(data_width=512):
    return data.StructLayout({"data": data_width, "keep": data_width // 8, "last": 1})


class AxiBurstReader(wiring.Component):
    def __init__(self, *, addr_width=64, data_width=512, id_width=1, len_width=32,
                 max_outstanding=4, max_beats=256):
        self.addr_width = addr_width
        self.data_width = data_width
        self.id_width = id_width
        self.len_width = len_width
        self.max_outstanding = max_outstanding
        self.max_beats = max_beats
        super().__init__({
            "cmd": In(stream.Signature(CommandLayout(addr_width, len_width))),
            "data": Out(stream.Signature(ReadBeatLayout(data_width))),
            "axi": Out(Axi4Signature(addr_width=addr_width, data_width=data_width,
                                     id_width=id_width)),
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

        info_layout = data.StructLayout({"beats_m1": 8, "last": 1, "tail": max(1, lb)})
        m.submodules.info = info = SyncFIFO(width=info_layout.size, depth=self.max_outstanding)

        # AR
        b = split.burst.payload
        m.d.comb += [
            axi.ARVALID.eq(split.burst.valid & info.w_rdy),
            split.burst.ready.eq(axi.ARREADY & info.w_rdy),
            axi.ARADDR.eq(b.addr),
            axi.ARLEN.eq(b.beats_m1),
            axi.ARSIZE.eq(lb),
            axi.ARBURST.eq(AXI_BURST_INCR),
            axi.ARID.eq(0),
            axi.ARCACHE.eq(0b0011),
            axi.ARPROT.eq(0),
            info.w_en.eq(axi.ARVALID & axi.ARREADY),
        ]
        w_info = data.View(info_layout, info.w_data)
        m.d.comb += [w_info.beats_m1.eq(b.beats_m1), w_info.last.eq(b.last), w_info.tail.eq(b.tail)]

        # R
        r_info = data.View(info_layout, info.r_data)
        beat = Signal(8)
        burst_end = Signal()
        m.d.comb += burst_end.eq(beat == r_info.beats_m1)
        cmd_end = Signal()
        m.d.comb += cmd_end.eq(burst_end & r_info.last)

        full_keep = Const((1 << nbytes) - 1, nbytes)
        tail_keep = Signal(nbytes)
        m.d.comb += tail_keep.eq((Const(1, nbytes + 1) << r_info.tail) - 1)

        m.d.comb += [
            self.data.valid.eq(axi.RVALID & info.r_rdy),
            axi.RREADY.eq(self.data.ready & info.r_rdy),
            self.data.payload.data.eq(axi.RDATA),
            self.data.payload.last.eq(cmd_end),
            self.data.payload.keep.eq(Mux(cmd_end & (r_info.tail != 0), tail_keep, full_keep)),
        ]
        r_fire = axi.RVALID & axi.RREADY
        with m.If(r_fire):
            m.d.sync += beat.eq(Mux(burst_end, 0, beat + 1))
            with m.If(axi.RRESP != AXI_RESP_OKAY):
                m.d.sync += self.error.eq(1)
        m.d.comb += info.r_en.eq(r_fire & burst_end)

        m.d.comb += self.idle.eq(~split.busy & ~info.r_rdy)
        return m
