"""AXI4 burst reader: commands (address, byte length) in, a stream of data beats out.

``cmd``  : In(stream of CommandLayout)            -- see :mod:`hw.axi.burst` for the rules
``data`` : Out(stream of ReadBeatLayout)          -- ``data`` (bus width), ``keep`` (byte mask),
                                                     ``last`` (final beat of a command)
``axi``  : Out(Axi4Signature)                     -- only AR and R are driven; AW/W/B are left idle
                                                     (use :func:`hw.axi.connect.connect_axi_rw`)
``idle`` : Out(1)   no command in progress and no read data outstanding
``error``: Out(1)   sticky until ``clear``: some R beat had RRESP != OKAY (data are still delivered)
``protocol_error``: Out(1)  sticky until ``clear``: an R beat carried RLAST where its burst (by
                     the ARLEN we issued) does not end, or lacked it on the burst's last beat, or
                     carried an RID other than ours (0); the beats are still counted by ARLEN
``clear``, ``abort``: In(1)  see :class:`~hw.axi.burst.BurstTransfer`; while ``abort``, an AR on
                     offer is held until ARREADY, and the R beats of every burst whose AR was
                     accepted are accepted and dropped (``data.valid`` low) up to the last

Up to ``max_outstanding`` AR bursts are in flight, so with a memory answering every cycle the
output runs at one beat per cycle.  R data are passed through with no buffer: ``RREADY`` follows
``data.ready``, so a consumer's backpressure reaches the memory (legal AXI; the UG1393 advice to
issue AR only when the read data can all be accepted is met when the consumer does not stall).
"""

from amaranth import *
from amaranth.lib import data, stream
from amaranth.lib.wiring import Out

from .signature import AXI_RESP_OKAY
from .burst import BurstTransfer, drive_address_channel

__all__ = ["AxiBurstReader", "ReadBeatLayout"]


def ReadBeatLayout(data_width=512):
    return data.StructLayout({"data": data_width, "keep": data_width // 8, "last": 1})


class AxiBurstReader(BurstTransfer):
    def __init__(self, *, addr_width=64, data_width=512, id_width=1, len_width=32,
                 max_outstanding=4, max_beats=256):
        super().__init__({"data": Out(stream.Signature(ReadBeatLayout(data_width)))},
                         addr_width=addr_width, data_width=data_width, id_width=id_width,
                         len_width=len_width, max_beats=max_beats,
                         bursts_in_flight=max_outstanding)

    def elaborate_channels(self, m, progress):
        axi = self.axi
        # AR
        m.d.comb += [axi.ARVALID.eq(progress.burst_valid), progress.burst_ready.eq(axi.ARREADY),
                     progress.address_valid.eq(axi.ARVALID)]
        drive_address_channel(m, axi, "AR", progress.burst, self.data_width // 8)
        # R
        m.d.comb += [
            self.data.valid.eq(axi.RVALID & progress.beat_due & ~self.abort),
            axi.RREADY.eq((self.data.ready | self.abort) & progress.beat_due),
            self.data.payload.data.eq(axi.RDATA),
            self.data.payload.last.eq(progress.command_end),
            self.data.payload.keep.eq(progress.strobe),
            progress.beat.eq(axi.RVALID & axi.RREADY),
        ]
        with m.If(axi.RVALID & axi.RREADY & (axi.RRESP != AXI_RESP_OKAY)):
            m.d.sync += self.error.eq(1)
        with m.If(axi.RVALID & axi.RREADY & ((axi.RLAST != progress.burst_end) | (axi.RID != 0))):
            m.d.sync += self.protocol_error.eq(1)
        return C(0, 1)
