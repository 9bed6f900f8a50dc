"""Splitting a (byte address, byte length) command into legal AXI4 INCR bursts, and following
the data beats of the issued bursts (the part the burst reader and writer share).

A burst never crosses a 4 KiB boundary and has at most 256 beats (with a 512-bit bus the 4 KiB rule
gives at most 64 beats).  The address is rounded down to the bus width: commands must start on a
beat boundary (the host allocates 4 KiB-aligned buffers).  The length is in bytes and need not be
a multiple of the bus width; the last beat of a command is then partial, and every burst carries
the byte strobes of its command's final beat.  A zero-length command is dropped.

The splitter offers a burst at most every second cycle (its fields are registers, decided in the
cycle before) and takes a command while idle, so back-to-back one-beat commands run at one beat
per three cycles; a command of whole bursts (up to 64 beats each with a 512-bit bus) is not slowed.
"""

from dataclasses import dataclass

from amaranth import *
from amaranth.utils import exact_log2
from amaranth.lib import wiring, data, stream
from amaranth.lib.fifo import SyncFIFOBuffered
from amaranth.lib.wiring import In, Out

from .signature import AXI_BURST_INCR, Axi4Signature
from ..common.pipeline import lookup

__all__ = ["CommandLayout", "BurstLayout", "BurstSplitter", "BurstProgress", "BurstTransfer",
           "drive_address_channel"]


def CommandLayout(addr_width=64, len_width=32):
    """Payload of a reader/writer command: ``addr`` (bytes) and ``length`` (bytes)."""
    return data.StructLayout({"addr": addr_width, "length": len_width})


def BurstLayout(addr_width, data_bytes):
    return data.StructLayout({
        "addr": addr_width,
        "beats_m1": 8,                              # AxLEN
        "last": 1,                                  # last burst of its command
        "final_strobe": data_bytes,                 # byte strobes of the command's final beat
    })


class BurstSplitter(wiring.Component):
    """``cmd`` (CommandLayout stream) in, ``burst`` (BurstLayout stream) out.  ``busy`` while a
    command is being split.  ``drop`` (level): offer no burst and forget the command being split.
    A command is taken while idle; its first burst is offered two cycles later, each further one
    two cycles after the one before was taken (every burst field a register)."""

    def __init__(self, *, addr_width=64, data_bytes=64, len_width=32, max_beats=256):
        if data_bytes & (data_bytes - 1) or not 1 <= data_bytes <= 128:
            raise ValueError("data_bytes must be a power of two <= 128")
        if not 1 <= max_beats <= 256:
            raise ValueError("max_beats must be 1..256")
        self.addr_width, self.data_bytes, self.len_width = addr_width, data_bytes, len_width
        self.max_beats = min(max_beats, 4096 // data_bytes)
        super().__init__({
            "cmd": In(stream.Signature(CommandLayout(addr_width, len_width))),
            "burst": Out(stream.Signature(BurstLayout(addr_width, data_bytes))),
            "busy": Out(1),
            "drop": In(1),
        })

    def elaborate(self, platform):
        m = Module()
        lb = exact_log2(self.data_bytes)
        beats_per_4k = 4096 // self.data_bytes
        limit_bits = max(1, (self.max_beats - 1).bit_length())
        remaining_bits = self.len_width - lb + 1

        # Everything the burst needs is a register or a select of registers: the beats still to
        # issue minus one, and the next burst's beat limit minus one (the beats to the next 4 KiB
        # boundary, at most max_beats), decided when the address is loaded or advanced.
        busy = Signal()
        addr = Signal(self.addr_width)
        remaining_m1 = Signal(remaining_bits)
        limit_m1 = Signal(limit_bits)
        last_beat_strobe = Signal(self.data_bytes)

        def limit_m1_at(address):
            """The beat limit minus one of a burst starting at ``address`` (beat-aligned)."""
            to_boundary_m1 = (beats_per_4k - 1) - address[lb:12]
            return Mux(to_boundary_m1 >= self.max_beats, self.max_beats - 1, to_boundary_m1)

        # The burst's length and "final" are decided in the cycle after the state changed and
        # offered from registers from the next (a burst at most every second cycle; a burst is
        # up to 4 KiB of beats): remaining <= limit, without a compare as wide as the command's
        # length. In the same cycle as the burst, the compare, the length select and the final
        # burst's byte strobes behind them were 8 LUTs from remaining_m1 into the due-burst FIFO.
        decided = Signal()
        final = Signal()
        beats_m1 = Signal(limit_bits)
        with m.If(busy & ~decided):
            ends = ((remaining_m1[limit_bits:] == 0)
                    & (remaining_m1[:limit_bits] <= limit_m1))
            m.d.sync += [decided.eq(1), final.eq(ends),
                         beats_m1.eq(Mux(ends, remaining_m1[:limit_bits], limit_m1))]

        m.d.comb += [
            self.busy.eq(busy),
            self.burst.valid.eq(busy & decided & ~self.drop),
            self.burst.payload.addr.eq(addr),
            self.burst.payload.beats_m1.eq(beats_m1),
            self.burst.payload.last.eq(final),
            self.burst.payload.final_strobe.eq(last_beat_strobe),
        ]

        fire = self.burst.valid & self.burst.ready
        with m.If(fire):
            # after a non-final burst of limit beats (after a final one nothing matters)
            # remaining_m1 - (limit_m1 + 1): adding the complement of limit_m1, zero-extended
            minus_limit = Cat(~limit_m1, C((1 << (remaining_bits - limit_bits)) - 1,
                                           remaining_bits - limit_bits))
            m.d.sync += [remaining_m1.eq((remaining_m1 + minus_limit)[:remaining_bits]),
                         decided.eq(0)]
            if self.max_beats >= beats_per_4k:
                # a non-final burst always ends on the 4 KiB boundary
                m.d.sync += [addr.eq(Cat(C(0, 12), next_page(addr[12:]))),
                             limit_m1.eq(beats_per_4k - 1)]
            else:
                # within the page the burst never crosses it: only the offset moves
                offset = (Cat(C(1, 1), addr[lb:12]) + Cat(C(1, 1), limit_m1))[1:]  # a + b + 1
                advanced = Cat(C(0, lb), offset[:12 - lb],
                               Mux(offset[12 - lb], next_page(addr[12:]), addr[12:]))
                m.d.sync += [addr.eq(advanced), limit_m1.eq(limit_m1_at(advanced))]
            with m.If(final):
                m.d.sync += busy.eq(0)

        # a command is taken while idle, not in the cycle its predecessor's final burst goes
        # (the load enable does not wait for the burst handshake)
        m.d.comb += self.cmd.ready.eq(~busy)
        with m.If(self.cmd.valid & self.cmd.ready):
            length = self.cmd.payload.length
            start = Cat(C(0, lb), self.cmd.payload.addr[lb:])
            m.d.sync += [
                addr.eq(start),
                limit_m1.eq(limit_m1_at(start)),
                # beats - 1 = (length - 1) >> lb; a zero length is dropped (busy stays low)
                remaining_m1.eq((length - 1)[lb:]),
                decided.eq(0),
                # the bytes below the length's tail on a partial final beat, else all: each
                # strobe a truth table of the tail's bits (as compares with constants they were
                # carry chains, 7 levels in the whole motif kernel)
                last_beat_strobe.eq(Cat(*lookup(
                    m, list(length[:lb]),
                    [(1 << tail) - 1 if tail else (1 << self.data_bytes) - 1
                     for tail in range(self.data_bytes)],
                    self.data_bytes, "last_beat_strobe")) if lb else 1),
                busy.eq(length != 0),
            ]
        with m.If(self.drop):
            m.d.sync += busy.eq(0)
        return m


def next_page(page: Value) -> Value:
    """``page + 1`` as a carry-select adder of two halves (the upper half's +1 computed beside the
    lower half's, then selected by whether the lower half is all ones), so no carry chain is
    longer than half of ``page``: a 52-bit +1 was 9 logic levels."""
    page = Value.cast(page)
    half = len(page) // 2
    if half < 8:
        return (page + 1)[:len(page)]
    low, high = page[:half], page[half:]
    return Cat((low + 1)[:half], Mux(low.all(), (high + 1)[:len(high)], high))


def drive_address_channel(m, axi, channel, burst, beat_bytes):
    """Drive AXI4 address channel ``channel`` ("AR" or "AW") of ``axi`` from a BurstLayout
    payload: INCR, full-width beats, normal non-secure data access, modifiable/bufferable."""
    m.d.comb += [
        getattr(axi, f"{channel}ADDR").eq(burst.addr),
        getattr(axi, f"{channel}LEN").eq(burst.beats_m1),
        getattr(axi, f"{channel}SIZE").eq(exact_log2(beat_bytes)),
        getattr(axi, f"{channel}BURST").eq(AXI_BURST_INCR),
        getattr(axi, f"{channel}ID").eq(0),
        getattr(axi, f"{channel}CACHE").eq(0b0011),
        getattr(axi, f"{channel}PROT").eq(0),
    ]


@dataclass(frozen=True)
class BurstProgress:
    """The bursts a :class:`BurstTransfer` issues and the place of its current data beat."""

    #: the next burst (BurstLayout); a handshake with ``burst_ready`` issues it: the reader's
    #: address handshake, the writer's claim (its AW then goes through a queue of its own)
    burst: Value
    burst_valid: Value
    burst_ready: Signal
    #: drive with the address channel's VALID where the subclass offers ``burst`` on the bus
    #: (``burst_valid`` and its own conditions): once high it is held until ``burst_ready``,
    #: abort or not; 0 where the burst is not on the bus (the writer's claim)
    address_valid: Signal
    #: some issued burst still has data beats to come: data may flow
    beat_due: Value
    #: some issued burst still has data beats to come, including one issued in the cycle
    #: before (``beat_due`` shows it a cycle later)
    bursts_due: Value
    #: drive high when a data beat is transferred (only while ``beat_due``)
    beat: Signal
    #: the current data beat is the last of its burst / of its command
    burst_end: Value
    command_end: Value
    #: the bytes of the current data beat that belong to the command (partial on its last)
    strobe: Value


class BurstTransfer(wiring.Component):
    """Base of :class:`~hw.axi.AxiBurstReader` and :class:`~hw.axi.AxiBurstWriter`: commands
    (``cmd``) split into bursts, and a FIFO of the ``bursts_in_flight`` issued bursts whose data
    beats are due (the address channel waits while it is full). A subclass adds its data members
    and implements :meth:`elaborate_channels`, which drives ``axi`` from a :class:`BurstProgress`
    and returns the 1-bit "responses outstanding" (the writer's B responses; 0 for the reader).

    ``idle``: no command being split, no data beat due, nothing outstanding. ``error``: sticky,
    some response was not OKAY (set by the subclass); ``protocol_error``: sticky, the slave broke
    the protocol (RLAST on the wrong beat or missing, an RID or BID that is not ours); both until
    ``clear`` (a pulse, e.g. at the start of a call).

    ``abort`` (level, a failed call) ends the transfer as AXI4 allows (ARM IHI 0022, A3.2.1: once
    VALID is asserted it stays, with its payload, until the handshake): a burst whose address is
    on offer keeps it until READY, and no further burst is issued; the command being split is
    forgotten; the data beats of every issued burst are still transferred (the reader accepts
    and drops its R beats up to RLAST; the writer sends the AW and the W beats of every burst it
    claimed, see there). ``idle`` rises once all of that is done: within the address
    handshakes, ``bursts_in_flight`` x ``max_beats`` data beats, the memory's latency and
    (writer) the B responses, however long the slave holds READY low. ``abort`` must stay high
    until ``idle``.
    """

    def __init__(self, data_members, *, addr_width, data_width, id_width, len_width, max_beats,
                 bursts_in_flight):
        self.data_width = data_width
        self._splitter = BurstSplitter(addr_width=addr_width, data_bytes=data_width // 8,
                                       len_width=len_width, max_beats=max_beats)
        self._bursts_in_flight = bursts_in_flight
        super().__init__({
            "cmd": In(stream.Signature(CommandLayout(addr_width, len_width))),
            **data_members,
            "axi": Out(Axi4Signature(addr_width=addr_width, data_width=data_width,
                                     id_width=id_width)),
            "idle": Out(1),
            "error": Out(1),
            "protocol_error": Out(1),
            "clear": In(1),
            "abort": In(1),
        })

    def elaborate_channels(self, m: Module, progress: BurstProgress) -> Value:
        raise NotImplementedError

    def elaborate(self, platform):
        m = Module()
        nbytes = self.data_width // 8
        m.submodules.split = split = self._splitter
        wiring.connect(m, wiring.flipped(self.cmd), split.cmd)
        # a burst on offer (VALID shown, no handshake yet) is not dropped by an abort
        address_valid = Signal()
        offered = Signal()
        m.d.sync += offered.eq(address_valid & ~split.burst.ready)
        m.d.comb += split.drop.eq(self.abort & ~offered)
        with m.If(self.clear):
            m.d.sync += [self.error.eq(0), self.protocol_error.eq(0)]
        # per issued burst: its beats, whether it ends its command, and the byte strobes of its
        # final beat (its command's final-beat strobes if it is the command's last burst, else
        # all), so WSTRB is a select of registers. Buffered: its head is a
        # register (a LUT-RAM read in front of the burst-end compare and the FIFO's level was the
        # sketch kernel's longest path); a burst's beats may start a cycle after it entered
        due_layout = data.StructLayout({"beats_m1": 8, "single": 1, "last": 1,
                                        "final_strobe": nbytes})
        m.submodules.due = due = SyncFIFOBuffered(width=due_layout.size,
                                                   depth=self._bursts_in_flight)

        burst = split.burst.payload
        burst_ready = Signal()
        m.d.comb += [
            split.burst.ready.eq(burst_ready & due.w_rdy),
            due.w_en.eq(split.burst.valid & split.burst.ready),
        ]
        entering = data.View(due_layout, due.w_data)
        m.d.comb += [entering.beats_m1.eq(burst.beats_m1), entering.single.eq(burst.beats_m1 == 0),
                     entering.last.eq(burst.last),
                     entering.final_strobe.eq(burst.final_strobe | ~burst.last.replicate(nbytes))]

        current = data.View(due_layout, due.r_data)
        beat_index = Signal(8)
        beat, burst_end, command_end = Signal(), Signal(), Signal()
        # "this beat ends the burst" from registers: at a burst's first beat its entry's
        # ``single``, later the compare made at the beat before (compared here, behind the
        # handshake, it was 8 LUTs from the kernel's FSM into the FIFO's head in the motif kernel)
        first_beat = Signal(init=1)
        next_ends = Signal()
        m.d.comb += [
            burst_end.eq(Mux(first_beat, current.single, next_ends)),
            command_end.eq(burst_end & current.last),
            due.r_en.eq(beat & burst_end),
        ]
        with m.If(beat):
            m.d.sync += [beat_index.eq(Mux(burst_end, 0, beat_index + 1)),
                         first_beat.eq(burst_end),
                         next_ends.eq(beat_index + 1 == current.beats_m1)]
        strobe = Mux(burst_end, current.final_strobe, Const((1 << nbytes) - 1, nbytes))
        outstanding = self.elaborate_channels(m, BurstProgress(
            burst=burst, burst_valid=split.burst.valid & due.w_rdy, burst_ready=burst_ready,
            address_valid=address_valid,
            beat_due=due.r_rdy, bursts_due=due.level != 0, beat=beat, burst_end=burst_end,
            command_end=command_end,
            strobe=strobe[:nbytes]))
        # (a burst just entered is in the FIFO a cycle before ``r_rdy`` shows it: count the level)
        m.d.comb += self.idle.eq(~split.busy & (due.level == 0) & ~outstanding)
        return m
