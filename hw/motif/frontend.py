"""Kernel front end: bus beats of one byte stream in, one base per cycle with run restarts out.

A beat (:func:`hw.axi.reader.ReadBeatLayout`: data, keep mask with the real bytes first, last)
is shifted out ``bytes_per_cycle`` (B) bytes per cycle into a B-byte
:class:`hw.sketch.parser.LaneParser`, which applies the line rules of ``kmerspec/golden/parse.py``.
Each parsed group of B bytes becomes up to B base events (2-bit code, ``restart``: a break
byte, or the end of the stream, came after the previous base), which wait in a FIFO; the output
takes one base per cycle from it. The last byte of the beat marked ``last`` ends the stream
(the parser returns to a record start).

The parser cannot stall, so a group enters it only while the FIFO has room for every group
already inside the parser. Throughput: B bytes per cycle in, one base per cycle out, whichever
binds first: B = 2 keeps FASTA (about one byte per base) at one base per cycle, and B = 8 (the
motif kernel's default) also FASTQ, whose headers, '+' lines and qualities make 2-4 bytes per
base (tests/test_motif_frontend.py measures real reads). B = 1 has no FIFO: one byte per cycle, bases leave as they occur.
``busy`` is high while any byte or base is inside.
"""

from amaranth.hdl import Array, Cat, Const, Module, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.fifo import SyncFIFO
from amaranth.lib.wiring import In, Out

from kmerspec.params import check_int

from hw.axi.reader import ReadBeatLayout
from hw.sketch.parser import LaneParser

from .engine import base_layout

__all__ = ["BaseFrontEnd"]


def _group_layout(bases: int) -> data.StructLayout:
    """Up to ``bases`` base events of one parsed group, the first ``count`` valid."""
    return data.StructLayout({"codes": 2 * bases, "restarts": bases,
                              "count": range(bases + 1)})


class BaseFrontEnd(wiring.Component):
    """Members: ``i`` In(stream of ReadBeatLayout(data_width)), ``o`` Out(stream of
    base_layout(), always ready), ``busy`` Out(1)."""

    def __init__(self, data_width: int = 512, bytes_per_cycle: int = 1):
        check_int("data_width", data_width, 8, 4096)
        check_int("bytes_per_cycle", bytes_per_cycle, 1, 8)
        if data_width % (8 * bytes_per_cycle):
            raise ValueError(f"data_width must be a multiple of 8 x bytes_per_cycle, not "
                             f"{data_width!r}")
        self._data_width = data_width
        self._bytes_per_cycle = bytes_per_cycle
        self._parser = LaneParser(bytes_per_cycle)
        self._fifo_depth = 2 * (self._parser.latency + 3) if bytes_per_cycle > 1 else 0
        super().__init__({
            "i": In(stream.Signature(ReadBeatLayout(data_width))),
            "o": Out(stream.Signature(base_layout(), always_ready=True)),
            "busy": Out(1),
        })

    @property
    def latency(self) -> int:
        """Cycles from a byte entering the shifter to its base at the output (empty FIFO)."""
        return 2 + self._parser.latency + (2 if self._fifo_depth else 0)

    def elaborate(self, platform):
        m = Module()
        m.submodules.parser = parser = self._parser
        width = self._bytes_per_cycle
        nbytes = self._data_width // 8
        groups = nbytes // width

        # beat shifter: ``width`` bytes per cycle while the parser may take a group
        shifter = Signal(self._data_width)
        keep = Signal(nbytes)
        last_beat = Signal()
        loaded = Signal()
        may_send = Signal()
        beat_ends = Signal()
        m.d.comb += [
            beat_ends.eq(loaded & ~keep[width] if groups > 1 else loaded),
            self.i.ready.eq(~loaded | (beat_ends & may_send)),
        ]
        with m.If(self.i.valid & self.i.ready):
            m.d.sync += [shifter.eq(self.i.payload.data), keep.eq(self.i.payload.keep),
                         last_beat.eq(self.i.payload.last), loaded.eq(self.i.payload.keep[0])]
        with m.Elif(beat_ends & may_send):
            m.d.sync += loaded.eq(0)
        with m.Elif(loaded & may_send):
            m.d.sync += [shifter.eq(shifter >> 8 * width), keep.eq(keep >> width)]
        sending = loaded & may_send
        m.d.comb += [
            parser.i.valid.eq(sending),
            parser.i.payload.bytes.eq(shifter[:8 * width]),
            parser.i.payload.byte_valid.eq(keep[:width]),
            parser.i.payload.end_of_file.eq(beat_ends & last_beat),
        ]

        # parsed group -> base events; ``restart`` carries across groups. Two stages: per byte,
        # the bases before it and its restart flag, registered; then each slot's base selected
        # from them (in one cycle behind the parser's output the two were 7 LUT levels into the
        # FIFO's LUT-RAM)
        roles = parser.o.payload
        restart_pending = Signal(init=1)
        before_r = [Signal(range(width + 1), name=f"before{byte}") for byte in range(width + 1)]
        restart_r = Signal(width)
        is_base_r = Signal(width)
        codes_r = Signal(2 * width)
        group_valid = Signal()

        def pending_before(byte):
            """Whether the base at ``byte`` restarts its run: a break since the last base
            before it, or none before it and a restart pending from earlier groups; written as
            ORs over the bytes (as the byte-by-byte recurrence it was a chain of 8 LUTs)."""
            # (break, first byte it must see no base from); the pending restart is a break
            # in front of byte 0
            breaks = [(restart_pending, 0)] + [(roles.is_break[j], j) for j in range(byte)]
            return Cat(brk & ~roles.is_base[first:byte].any() for brk, first in breaks).any()

        for byte in range(width + 1):
            # the bases before this byte, as a table of the is_base bits (a LUT function of at
            # most ``width`` inputs) rather than a chain of adders
            before = Array(Const(bin(bits).count("1"), range(width + 1))
                           for bits in range(1 << byte))[roles.is_base[:byte]] if byte else 0
            m.d.sync += before_r[byte].eq(before)
            if byte == width:
                break
            m.d.sync += restart_r[byte].eq(pending_before(byte))
        m.d.sync += [is_base_r.eq(roles.is_base), codes_r.eq(roles.codes),
                     group_valid.eq(parser.o.valid & roles.is_base.any())]
        with m.If(parser.o.valid):
            m.d.sync += restart_pending.eq(pending_before(width) | roles.end_of_file)
        group = Signal(_group_layout(width))
        m.d.comb += group.count.eq(before_r[width])
        for byte in range(width):
            for slot in range(byte + 1):
                with m.If(is_base_r[byte] & (before_r[byte] == slot)):
                    m.d.comb += [group.codes[2 * slot:2 * slot + 2].eq(
                                     codes_r[2 * byte:2 * byte + 2]),
                                 group.restarts[slot].eq(restart_r[byte])]

        in_parser = Signal(range(parser.latency + 1))
        with m.If(sending):
            m.d.sync += in_parser.eq(parser.latency)
        with m.Elif(in_parser != 0):
            m.d.sync += in_parser.eq(in_parser - 1)

        if not self._fifo_depth:
            m.d.comb += [
                may_send.eq(1),
                self.o.valid.eq(group_valid),
                self.o.payload.code.eq(group.codes[:2]),
                self.o.payload.restart.eq(group.restarts[0]),
                self.busy.eq(loaded | (in_parser != 0) | group_valid),
            ]
            return m

        m.submodules.fifo = fifo = SyncFIFO(width=len(group.as_value()), depth=self._fifo_depth)
        # at most parser.latency + 2 groups are between the shifter and the FIFO
        m.d.comb += [
            may_send.eq(fifo.level <= self._fifo_depth - (parser.latency + 3)),
            fifo.w_en.eq(group_valid),
            fifo.w_data.eq(group),
        ]
        # the group being sent out sits in registers: the choice to pop the FIFO then depends
        # on registered values only, not on the FIFO's read data
        current = Signal(_group_layout(width))
        current_valid = Signal()
        index = Signal(range(width))
        following = Signal(range(width + 1), init=1)     # index + 1
        # "the base at ``index`` is the group's last" is a register too (compared behind the
        # group's count, it was 7 levels into the FIFO's read and level in the whole kernel)
        at_last = Signal()
        current_ends = current_valid & at_last
        m.d.comb += [
            fifo.r_en.eq(fifo.r_rdy & (~current_valid | current_ends)),
            self.o.valid.eq(current_valid),
            self.o.payload.code.eq(current.codes.word_select(index, 2)),
            self.o.payload.restart.eq(current.restarts.bit_select(index, 1)),
        ]
        incoming = data.View(_group_layout(width), fifo.r_data)
        with m.If(fifo.r_en):
            m.d.sync += [current.eq(fifo.r_data), current_valid.eq(1), index.eq(0),
                         following.eq(1), at_last.eq(incoming.count == 1)]
        with m.Elif(current_ends):
            m.d.sync += current_valid.eq(0)
        with m.Elif(current_valid):
            m.d.sync += [index.eq(following), following.eq(following + 1),
                         at_last.eq(following + 1 == current.count)]
        m.d.comb += self.busy.eq(loaded | (in_parser != 0) | group_valid | fifo.r_rdy
                                 | current_valid)
        return m
