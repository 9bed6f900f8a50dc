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
                        the data buffer. While ``abort``: ``data`` is not accepted, no further
                        burst is claimed, every claimed burst (see below) gets its AW and all its
                        W beats from the buffer, each with its own WSTRB, and its B response, then
                        the beats left in the buffer (they belong to no burst) are dropped

Data are buffered (``buffer_beats`` = 2 x the burst length). A burst is *claimed* once all of its
data beats are in the buffer: it then enters the AW queue (``max_outstanding`` deep) and the
queue of bursts owed W beats, at once. AW and W are two independent channels from there (ARM IHI
0022, A3.3.1: the master must not wait for AWREADY before asserting WVALID): the W beats of a
claimed burst are offered as soon as the bursts before it have had theirs, whether or not its AW
has been accepted, and its AW is offered as soon as the AWs before it were accepted. So AW never
leads its data into the interconnect (a slave holding AWREADY low never holds a shared bank's
address channel while our data do not exist yet), and a slave that waits for WVALID, or for all
of a burst's W beats, before AWREADY is served. Claims stop only at ``max_outstanding`` bursts
without their B response. AW payloads come from the AW queue's output register; WVALID, WDATA,
WSTRB and WLAST from the buffer's output register and the due-burst FIFO's head, so all hold
while READY is low.

Bursts are at most ``max_beats`` (16 by default, Vitis HLS's ``max_write_burst_length``: 1 KiB
on a 512-bit bus) so that the buffer is distributed RAM (2 x 16 words). Throughput: with a
memory that answers every cycle, one beat per cycle in steady state (a burst is claimed when its
last beat is counted, while the previous burst's W beats flow); a command's last W beat follows
its last data beat by :func:`write_tail_cycles` (at most 19 cycles).
"""

from types import SimpleNamespace

from amaranth import *
from amaranth.lib import data, stream
from amaranth.utils import exact_log2
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
    claim waits for its last beat (a cycle to count it, a cycle for ``buffered``), its first W
    beat a cycle more, then its beats, at most ``burst_beats`` (tests/test_axi_protocol.py
    measures it)."""
    return min(beats, burst_beats) + 3


class AxiBurstWriter(BurstTransfer):
    def __init__(self, *, addr_width=64, data_width=512, id_width=1, len_width=32,
                 max_outstanding=8, max_beats=WRITE_BURST_BEATS):
        self.max_outstanding = max_outstanding
        self.addr_width = addr_width
        # the W beats of two claimed bursts are due at once (the buffer holds two bursts)
        super().__init__({"data": In(stream.Signature(data_width)), "cmd_done": Out(1)},
                         addr_width=addr_width, data_width=data_width, id_width=id_width,
                         len_width=len_width, max_beats=max_beats, bursts_in_flight=2)
        self.burst_beats = self._splitter.max_beats
        self.buffer_beats = 2 * self.burst_beats

    def elaborate_channels(self, m, progress):
        axi = self.axi
        lb = exact_log2(self.data_width // 8)
        # the data beats not yet sent on W; emptied at ``clear`` and once an abort owes no beat
        flush = Signal()
        m.submodules.buffer = buffer = ResetInserter(flush)(
            SyncFIFOBuffered(width=self.data_width, depth=self.buffer_beats))
        # per claimed burst whose B response is due: is it the last burst of its command
        m.submodules.responses = responses = SyncFIFO(width=1, depth=self.max_outstanding)
        # per claimed burst whose AW has not been accepted: its address above the beat offset
        # and its length (every burst of a claim fits: at most max_outstanding are claimed)
        beats_bits = max(1, (self.burst_beats - 1).bit_length())
        aw_layout = data.StructLayout({"page_beat": self.addr_width - lb, "beats_m1": beats_bits})
        m.submodules.addresses = addresses = SyncFIFOBuffered(width=aw_layout.size,
                                                              depth=self.max_outstanding)

        accept = self.data.valid & self.data.ready
        m.d.comb += [buffer.w_en.eq(self.data.valid & ~self.abort),
                     buffer.w_data.eq(self.data.payload),
                     self.data.ready.eq(buffer.w_rdy & ~self.abort)]

        # the claim: the splitter's burst once the buffer holds all its beats that no claimed
        # burst owns (``unclaimed``); ``buffered`` is a register decided from the burst's own
        # fields while the splitter offers it (it can only rise until the claim: beats only
        # come in until then)
        unclaimed = Signal(range(self.buffer_beats + 1))
        buffered = Signal()
        claim = progress.burst_valid & progress.burst_ready
        m.d.comb += [
            progress.burst_ready.eq(buffered & responses.w_rdy & addresses.w_rdy),
            # no burst of the splitter is on offer on the bus: an abort may drop it unclaimed
            progress.address_valid.eq(0),
            responses.w_en.eq(claim),
            responses.w_data.eq(progress.burst.last),
            addresses.w_en.eq(claim),
            addresses.w_data.eq(Cat(progress.burst.addr[lb:], progress.burst.beats_m1)),
        ]
        m.d.sync += [
            buffered.eq(progress.burst_valid & ~claim & (unclaimed > progress.burst.beats_m1)),
            unclaimed.eq(unclaimed + accept - Mux(claim, progress.burst.beats_m1 + 1, 0)),
        ]
        # AW: the head of the queue of claimed bursts, in claim order
        head = data.View(aw_layout, addresses.r_data)
        m.d.comb += [axi.AWVALID.eq(addresses.r_rdy),
                     addresses.r_en.eq(axi.AWREADY)]
        drive_address_channel(m, axi, "AW", SimpleNamespace(
            addr=Cat(C(0, lb), head.page_beat), beats_m1=head.beats_m1), self.data_width // 8)
        # W: the buffer's head for the burst at the head of the due FIFO (claimed bursts, in
        # claim order), whatever the AW channel does
        m.d.comb += [
            axi.WVALID.eq(buffer.r_rdy & progress.beat_due),
            buffer.r_en.eq(axi.WREADY & progress.beat_due),
            axi.WDATA.eq(buffer.r_data),
            axi.WLAST.eq(progress.burst_end),
            axi.WSTRB.eq(progress.strobe),
            progress.beat.eq(axi.WVALID & axi.WREADY),
        ]
        # an abort claims nothing (the splitter drops its burst), so it owes no more beats once
        # no claimed burst awaits W beats: what is left in the buffer belongs to no burst
        m.d.comb += flush.eq(self.clear | (self.abort & ~progress.bursts_due))
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
        # (a claimed burst's response entry outlives its AW and W: it covers both)
        return responses.r_rdy | self.cmd_done
