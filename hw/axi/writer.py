"""AXI4 burst writer: commands (address, byte length) and a stream of data beats in, AW/W/B out.

``cmd``      : In(stream of CommandLayout)   -- see :mod:`hw.axi.burst`
``data``     : In(stream of bus-width words) -- exactly ceil(length / bus bytes) beats per command,
                                                in command order; bytes past ``length`` on the final
                                                beat are not written (WSTRB cleared). Beats may
                                                come before their command (they wait in the
                                                buffer)
``axi``      : Out(Axi4Signature)            -- only AW, W and B are driven
``cmd_done`` : Out(1)   one-cycle pulse when the last B response of a command has arrived
``idle``     : Out(1)   no command in progress and every B response received; it falls the cycle
                        after a command is accepted, so a core that raises ap_done on ``idle``
                        after handing over its last command/data is correct
``error``    : Out(1)   sticky until ``clear``: some B had BRESP != OKAY
``protocol_error``: Out(1)  sticky until ``clear``: some B carried a BID other than ours (0)
``clear``, ``abort``: In(1)  see :class:`~hw.axi.burst.BurstTransfer`. ``clear`` also empties
                        the data buffer. While ``abort``: ``data`` is not accepted, an AW on
                        offer is held until AWREADY, every burst whose AW was accepted gets its W
                        beats from the buffer (its data exist: see below) with their own WSTRB,
                        then the beats left in the buffer are dropped

Data are buffered, and a burst's AW is offered only once all of its data beats are in the buffer
(``buffer_beats`` = 2 x the burst length): a slave that holds AWREADY low never holds a shared
bank's address channel while our data do not exist yet, and W follows its AW at one beat per
cycle. W beats of a burst are sent only after its AW handshake (W never leads AW). WVALID,
WDATA, WSTRB and WLAST come from the buffer's output register and the due-burst FIFO's head, so
they hold while WREADY is low.

Bursts are at most ``max_beats`` (16 by default, Vitis HLS's ``max_write_burst_length``: 1 KiB
on a 512-bit bus) so that the buffer is distributed RAM (2 x 16 words). Throughput: with a
memory that answers every cycle, one beat per cycle in steady state (the AW of each burst waits
for its last beat and two cycles more, during which the previous burst's W beats flow); a
command's last W beat follows its last data beat by :func:`write_tail_cycles` (at most 19
cycles).

Up to ``max_outstanding`` AW bursts may wait for their B response.
"""

from amaranth import *
from amaranth.lib import stream
from amaranth.lib.fifo import SyncFIFO, SyncFIFOBuffered
from amaranth.lib.wiring import In, Out

from .signature import AXI_RESP_OKAY
from .burst import BurstTransfer, drive_address_channel

__all__ = ["AxiBurstWriter", "write_tail_cycles", "WRITE_BURST_BEATS"]

#: The writer's default burst length in beats (Vitis HLS's default max_write_burst_length)
WRITE_BURST_BEATS = 16


def write_tail_cycles(beats: int, burst_beats: int = WRITE_BURST_BEATS) -> int:
    """Cycles from the last data beat of a ``beats``-beat command taken by the writer to its
    last W beat, when the data come one per cycle and the memory never stalls: the last burst's
    AW waits for its last beat (a cycle to count it, a cycle for ``buffered``), its first W beat
    a cycle more, then its beats, at most ``burst_beats`` (tests/test_axi_protocol.py measures
    it)."""
    return min(beats, burst_beats) + 3


class AxiBurstWriter(BurstTransfer):
    def __init__(self, *, addr_width=64, data_width=512, id_width=1, len_width=32,
                 max_outstanding=8, max_beats=WRITE_BURST_BEATS):
        self.max_outstanding = max_outstanding
        # AW runs at most one burst ahead of W: the W beats of two bursts are due at once
        super().__init__({"data": In(stream.Signature(data_width)), "cmd_done": Out(1)},
                         addr_width=addr_width, data_width=data_width, id_width=id_width,
                         len_width=len_width, max_beats=max_beats, bursts_in_flight=2)
        self.burst_beats = self._splitter.max_beats
        self.buffer_beats = 2 * self.burst_beats

    def elaborate_channels(self, m, progress):
        axi = self.axi
        # the data beats not yet sent on W; emptied at ``clear`` and once an abort owes no beat
        flush = Signal()
        m.submodules.buffer = buffer = ResetInserter(flush)(
            SyncFIFOBuffered(width=self.data_width, depth=self.buffer_beats))
        # per burst whose B response is due: is it the last burst of its command
        m.submodules.responses = responses = SyncFIFO(width=1, depth=self.max_outstanding)

        accept = self.data.valid & self.data.ready
        m.d.comb += [buffer.w_en.eq(self.data.valid & ~self.abort),
                     buffer.w_data.eq(self.data.payload),
                     self.data.ready.eq(buffer.w_rdy & ~self.abort)]

        # AW: the beats in the buffer that no accepted AW has claimed yet; ``buffered`` (the
        # burst on offer has all its beats) is a register, decided from the burst's own fields
        # while it is offered by the splitter: it can only rise until the handshake (beats only
        # come in until then), so AWVALID never falls before AWREADY
        unclaimed = Signal(range(self.buffer_beats + 1))
        buffered = Signal()
        aw_fire = axi.AWVALID & axi.AWREADY
        m.d.comb += [
            axi.AWVALID.eq(progress.burst_valid & buffered & responses.w_rdy),
            progress.address_valid.eq(axi.AWVALID),
            progress.burst_ready.eq(axi.AWREADY & buffered & responses.w_rdy),
            responses.w_en.eq(aw_fire),
            responses.w_data.eq(progress.burst.last),
        ]
        m.d.sync += [
            buffered.eq(progress.burst_valid & ~aw_fire & (unclaimed > progress.burst.beats_m1)),
            unclaimed.eq(unclaimed + accept - Mux(aw_fire, progress.burst.beats_m1 + 1, 0)),
        ]
        drive_address_channel(m, axi, "AW", progress.burst, self.data_width // 8)
        # W: the buffer's head for the burst at the head of the due FIFO
        m.d.comb += [
            axi.WVALID.eq(buffer.r_rdy & progress.beat_due),
            buffer.r_en.eq(axi.WREADY & progress.beat_due),
            axi.WDATA.eq(buffer.r_data),
            axi.WLAST.eq(progress.burst_end),
            axi.WSTRB.eq(progress.strobe),
            progress.beat.eq(axi.WVALID & axi.WREADY),
        ]
        # an abort owes no more beats once no AW is on offer and no accepted burst awaits W
        # beats: what is left in the buffer belongs to no burst
        m.d.comb += flush.eq(self.clear | (self.abort & ~axi.AWVALID & ~progress.bursts_due))
        with m.If(flush):
            m.d.sync += [unclaimed.eq(0), buffered.eq(0)]
        # B
        b_fire = axi.BVALID & axi.BREADY
        m.d.comb += [axi.BREADY.eq(responses.r_rdy), responses.r_en.eq(b_fire)]
        m.d.sync += self.cmd_done.eq(b_fire & responses.r_data[0])
        with m.If(b_fire & (axi.BRESP != AXI_RESP_OKAY)):
            m.d.sync += self.error.eq(1)
        with m.If(b_fire & (axi.BID != 0)):
            m.d.sync += self.protocol_error.eq(1)
        return responses.r_rdy | self.cmd_done
