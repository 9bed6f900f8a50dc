"""One AXI4 master's way onto a shared card memory: its range checked, its IDs kept aside, its
narrow bus placed on the memory's byte lanes.

``up``   : In(Axi4Signature(data_width=W, id_width=I))   the master (a kernel's m_axi port, or
                                                         the F2 shell's PCIS port)
``down`` : Out(Axi4Signature(data_width=512, id_width=1)) towards the interconnect (hw.axi.mux);
                                                         every burst with ID 0

What it does, per burst:

* **Range.** A burst whose bytes do not all lie below ``limit`` (the memory's size) never reaches
  the memory: a read is answered with LEN + 1 beats of DECERR (data 0), a write's W beats are
  taken and dropped and its B is DECERR, each in its place among the master's other responses.
  A master thus learns of a stray pointer (a kernel reports ERROR_AXI_READ/WRITE) instead of
  reading or writing another address of a memory that ignores the high address bits. A refused
  write's B waits for its last W beat, as a memory's would.
* **IDs.** Bursts go down with ID 0, so the memory answers them in order (ARM IHI 0022, A5.3:
  responses of one ID keep their order), and each response goes up with the ID of the burst it
  answers, kept in a FIFO in issue order. The master may use any IDs (the shell's PCIS uses 16
  bits); its responses come back in issue order, which AXI allows for any IDs.
* **Lanes.** With W < 512 the burst goes down as it came (a narrow transfer: AxSIZE is the
  master's, the address unchanged): each W beat is repeated on every W-bit lane with its strobes
  on the lane of its address, each R beat taken from that lane. Beat i of a burst starting at
  lane s uses lane (s + i) mod (512 / W); the masters of this project issue INCR bursts of
  full-width, aligned beats (hw.axi.burst), for which that is the lane AXI gives (A3.4.1). With
  W = 512 (the PCIS port) data and strobes pass unchanged, narrow or unaligned.

W before AW (A3.3.1: a master need not wait for AWREADY): an AW is taken into a FIFO as soon as
there is room, whatever the interconnect does, and its W beats flow (or are dropped) from then
on, so a memory that takes W beats before their address is served.

Latency: AR and R pass through combinationally; an AW is offered down the second cycle after it
was taken (``SyncFIFOBuffered``); a response can go up the second cycle after its burst was taken.
Throughput: one beat per cycle on every channel. Backpressure passes through in both
directions. ``depth`` bursts of each direction may be outstanding (the shell issues at most 32
per direction on PCIS: AWS_Shell_Interface_Specification.md, "PCIS Interface Timeout Details").
"""

from amaranth import *
from amaranth.lib import data, wiring
from amaranth.lib.fifo import SyncFIFOBuffered
from amaranth.lib.wiring import In, Out
from amaranth.utils import exact_log2

from .signature import Axi4Signature

__all__ = ["AxiMemoryPort", "MEMORY_DATA_WIDTH", "DECERR"]

#: The data width of the memory side (the F2 DDR controller's AXI4 port: sh_ddr, 512 bits)
MEMORY_DATA_WIDTH = 512
DECERR = 0b11


class AxiMemoryPort(wiring.Component):
    """See the module docstring. ``limit``: bytes of the memory (addresses 0 .. limit-1);
    ``depth``: bursts outstanding per direction."""

    def __init__(self, *, data_width=512, id_width=1, limit=1 << 36, depth=32,
                 addr_width=64):
        if MEMORY_DATA_WIDTH % data_width:
            raise ValueError(f"data width {data_width} does not divide {MEMORY_DATA_WIDTH}")
        if not 0 < limit <= 1 << addr_width:
            raise ValueError(f"limit {limit} is not within the {addr_width}-bit address space")
        self.data_width, self.id_width, self.limit, self.depth = data_width, id_width, limit, depth
        self.addr_width = addr_width
        self.lanes = MEMORY_DATA_WIDTH // data_width
        super().__init__({
            "up": In(Axi4Signature(addr_width=addr_width, data_width=data_width,
                                   id_width=id_width)),
            "down": Out(Axi4Signature(addr_width=addr_width, data_width=MEMORY_DATA_WIDTH,
                                      id_width=1)),
        })

    def _in_range(self, m, channel):
        """1 when the burst on offer on ``channel`` (AR/AW) lies below ``limit``."""
        up = self.up
        addr, length, size = (getattr(up, f"{channel}{f}") for f in ("ADDR", "LEN", "SIZE"))
        end = Signal(self.addr_width + 10, name=f"{channel.lower()}_end")
        m.d.comb += end.eq(addr + ((length + 1) << size))
        ok = Signal(name=f"{channel.lower()}_in_range")
        m.d.comb += ok.eq(end <= self.limit)
        return ok

    def _lane(self, channel):
        """The lane of the first beat of the burst on offer."""
        lane_bits = max(1, exact_log2(self.lanes))
        if self.lanes == 1:
            return C(0, lane_bits)
        beat_bits = exact_log2(self.data_width // 8)
        return getattr(self.up, f"{channel}ADDR")[beat_bits:beat_bits + lane_bits]

    def elaborate(self, platform):
        m = Module()
        up, down = self.up, self.down
        lane_bits = max(1, exact_log2(self.lanes))
        lane_mask = self.lanes - 1
        id_w = self.id_width

        # ---- read ---------------------------------------------------------------------------
        read_entry = data.StructLayout({"id": id_w, "err": 1, "last": 8, "lane": lane_bits})
        m.submodules.reads = reads = SyncFIFOBuffered(width=read_entry.size, depth=self.depth)
        ar_ok = self._in_range(m, "AR")
        for name in ("ADDR", "LEN", "SIZE", "BURST", "LOCK", "CACHE", "PROT", "QOS", "REGION"):
            m.d.comb += getattr(down, f"AR{name}").eq(getattr(up, f"AR{name}"))
        m.d.comb += [
            down.ARID.eq(0),
            down.ARVALID.eq(up.ARVALID & reads.w_rdy & ar_ok),
            up.ARREADY.eq(reads.w_rdy & (down.ARREADY | ~ar_ok)),
            reads.w_en.eq(up.ARVALID & up.ARREADY),
            reads.w_data.eq(Cat(up.ARID, ~ar_ok, up.ARLEN, self._lane("AR"))),
        ]
        head = data.View(read_entry, reads.r_data)
        r_beat = Signal(8)
        r_lane = Signal(lane_bits)
        m.d.comb += r_lane.eq((head.lane + r_beat) & lane_mask if self.lanes > 1 else 0)
        last_of_error = Signal()
        m.d.comb += last_of_error.eq(r_beat == head.last)
        with m.If(reads.r_rdy & head.err):           # a refused burst: DECERR beats
            m.d.comb += [up.RVALID.eq(1), up.RRESP.eq(DECERR), up.RLAST.eq(last_of_error),
                         up.RDATA.eq(0), down.RREADY.eq(0)]
        with m.Else():
            m.d.comb += [up.RVALID.eq(reads.r_rdy & down.RVALID), up.RRESP.eq(down.RRESP),
                         up.RLAST.eq(down.RLAST),
                         up.RDATA.eq(down.RDATA.word_select(r_lane, self.data_width)
                                     if self.lanes > 1 else down.RDATA),
                         down.RREADY.eq(reads.r_rdy & up.RREADY)]
        m.d.comb += up.RID.eq(head.id)
        r_fire = up.RVALID & up.RREADY
        with m.If(r_fire):
            m.d.sync += r_beat.eq(r_beat + 1)
            with m.If(up.RLAST):
                m.d.sync += r_beat.eq(0)
                m.d.comb += reads.r_en.eq(1)

        # ---- write --------------------------------------------------------------------------
        aw_fields = {"addr": self.addr_width, "len": 8, "size": 3, "burst": 2, "lock": 1,
                     "cache": 4, "prot": 3, "qos": 4, "region": 4}
        aw_entry = data.StructLayout(aw_fields)
        w_entry = data.StructLayout({"err": 1, "lane": lane_bits})
        b_entry = data.StructLayout({"id": id_w, "err": 1})
        m.submodules.addresses = addresses = SyncFIFOBuffered(width=aw_entry.size,
                                                              depth=self.depth)
        m.submodules.data_route = route = SyncFIFOBuffered(width=w_entry.size, depth=self.depth)
        m.submodules.responses = responses = SyncFIFOBuffered(width=b_entry.size,
                                                              depth=self.depth)
        aw_ok = self._in_range(m, "AW")
        room = addresses.w_rdy & route.w_rdy & responses.w_rdy
        aw_fire = Signal()
        m.d.comb += [
            up.AWREADY.eq(room),
            aw_fire.eq(up.AWVALID & room),
            addresses.w_en.eq(aw_fire & aw_ok),
            addresses.w_data.eq(Cat(*(getattr(up, f"AW{f.upper()}") for f in aw_fields))),
            route.w_en.eq(aw_fire),
            route.w_data.eq(Cat(~aw_ok, self._lane("AW"))),
            responses.w_en.eq(aw_fire),
            responses.w_data.eq(Cat(up.AWID, ~aw_ok)),
        ]
        offered = data.View(aw_entry, addresses.r_data)
        m.d.comb += [down.AWVALID.eq(addresses.r_rdy), down.AWID.eq(0),
                     addresses.r_en.eq(down.AWVALID & down.AWREADY)]
        for f in aw_fields:
            m.d.comb += getattr(down, f"AW{f.upper()}").eq(getattr(offered, f))

        burst = data.View(w_entry, route.r_data)
        w_beat = Signal(8)
        w_lane = Signal(lane_bits)
        m.d.comb += w_lane.eq((burst.lane + w_beat) & lane_mask if self.lanes > 1 else 0)
        m.d.comb += [down.WDATA.eq(Cat(*([up.WDATA] * self.lanes))),
                     down.WLAST.eq(up.WLAST)]
        if self.lanes > 1:
            beat_bytes = self.data_width // 8
            m.d.comb += down.WSTRB.eq((up.WSTRB << (w_lane * beat_bytes))[:MEMORY_DATA_WIDTH // 8])
        else:
            m.d.comb += down.WSTRB.eq(up.WSTRB)
        with m.If(route.r_rdy & burst.err):          # a refused burst: its beats are dropped
            m.d.comb += [up.WREADY.eq(1), down.WVALID.eq(0)]
        with m.Else():
            m.d.comb += [down.WVALID.eq(route.r_rdy & up.WVALID),
                         up.WREADY.eq(route.r_rdy & down.WREADY)]
        with m.If(up.WVALID & up.WREADY):
            m.d.sync += w_beat.eq(w_beat + 1)
            with m.If(up.WLAST):
                m.d.sync += w_beat.eq(0)
                m.d.comb += route.r_en.eq(1)

        # a refused burst's B comes after its last W beat was taken (A3.3.1), in order: count
        # the refused bursts whose W beats are all in and whose B is still owed
        refused_written = Signal(range(self.depth + 1))
        w_refused_done = Signal()
        b_refused_sent = Signal()
        m.d.comb += w_refused_done.eq(route.r_rdy & burst.err & up.WVALID & up.WREADY & up.WLAST)
        m.d.sync += refused_written.eq(refused_written + w_refused_done - b_refused_sent)

        answer = data.View(b_entry, responses.r_data)
        with m.If(responses.r_rdy & answer.err):
            m.d.comb += [up.BVALID.eq(refused_written != 0), up.BRESP.eq(DECERR),
                         down.BREADY.eq(0), b_refused_sent.eq(up.BVALID & up.BREADY)]
        with m.Else():
            m.d.comb += [up.BVALID.eq(responses.r_rdy & down.BVALID), up.BRESP.eq(down.BRESP),
                         down.BREADY.eq(responses.r_rdy & up.BREADY)]
        m.d.comb += [up.BID.eq(answer.id), responses.r_en.eq(up.BVALID & up.BREADY)]
        return m
