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
``error``    : Out(1)   sticky until ``clear``: some B had BRESP != OKAY
``clear``, ``abort``: In(1)  see :class:`~hw.axi.burst.BurstTransfer`; while ``abort``, the W beats
                        still due for bursts already issued are sent with WSTRB = 0 (they write
                        nothing) and ``data`` is not accepted

Up to ``max_outstanding`` AW bursts may wait for their B response.  W beats of a burst are sent
only after its AW handshake (W never leads AW); AW is not held back until the data is available.
"""

from amaranth import *
from amaranth.lib import stream
from amaranth.lib.fifo import SyncFIFO
from amaranth.lib.wiring import In, Out

from .signature import AXI_RESP_OKAY
from .burst import BurstTransfer, drive_address_channel

__all__ = ["AxiBurstWriter"]


class AxiBurstWriter(BurstTransfer):
    def __init__(self, *, addr_width=64, data_width=512, id_width=1, len_width=32,
                 max_outstanding=8, max_beats=256):
        self.max_outstanding = max_outstanding
        # AW runs at most one burst ahead of W: the W beats of two bursts are due at once
        super().__init__({"data": In(stream.Signature(data_width)), "cmd_done": Out(1)},
                         addr_width=addr_width, data_width=data_width, id_width=id_width,
                         len_width=len_width, max_beats=max_beats, bursts_in_flight=2)

    def elaborate_channels(self, m, progress):
        axi = self.axi
        # per burst whose B response is due: is it the last burst of its command
        m.submodules.responses = responses = SyncFIFO(width=1, depth=self.max_outstanding)
        # AW
        m.d.comb += [
            axi.AWVALID.eq(progress.burst_valid & responses.w_rdy),
            progress.burst_ready.eq(axi.AWREADY & responses.w_rdy),
            responses.w_en.eq(axi.AWVALID & axi.AWREADY),
            responses.w_data.eq(progress.burst.last),
        ]
        drive_address_channel(m, axi, "AW", progress.burst, self.data_width // 8)
        # W
        m.d.comb += [
            axi.WVALID.eq((self.data.valid | self.abort) & progress.beat_due),
            self.data.ready.eq(axi.WREADY & progress.beat_due & ~self.abort),
            axi.WDATA.eq(self.data.payload),
            axi.WLAST.eq(progress.burst_end),
            axi.WSTRB.eq(Mux(self.abort, 0, progress.strobe)),
            progress.beat.eq(axi.WVALID & axi.WREADY),
        ]
        # B
        b_fire = axi.BVALID & axi.BREADY
        m.d.comb += [axi.BREADY.eq(responses.r_rdy), responses.r_en.eq(b_fire)]
        m.d.sync += self.cmd_done.eq(b_fire & responses.r_data[0])
        with m.If(b_fire & (axi.BRESP != AXI_RESP_OKAY)):
            m.d.sync += self.error.eq(1)
        return responses.r_rdy | self.cmd_done
