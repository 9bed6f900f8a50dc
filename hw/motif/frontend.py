"""Kernel front end: bus beats of one byte stream in, bases with run restarts out (SPEC 1).

A beat (:func:`hw.axi.reader.ReadBeatLayout`: data, keep mask with the real bytes first, last)
is shifted out one byte per cycle into a one-byte :class:`hw.sketch.parser.LaneParser`, which
applies the line rules of ``host/golden/parse.py``. Its roles become base events for
:class:`~hw.motif.engine.MotifEngine`: a base is emitted with ``restart`` set when a break byte,
or the end of the stream, came after the previous base. The last byte of the beat marked
``last`` ends the stream (the parser returns to a record start).

Throughput one byte per cycle for every input: ``i.ready`` is high while the shifter is empty
or shows its last byte, so back-to-back beats stream without a bubble. Bases leave at the rate
they occur in the bytes. Latency 1 + parser latency cycles. ``busy`` is high while any byte is
in the shifter or the parser.
"""

from amaranth.hdl import Module, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from hw.axi.reader import ReadBeatLayout
from hw.sketch.parser import LaneParser

from .engine import base_layout
from .params import check_int

__all__ = ["BaseFrontEnd"]


class BaseFrontEnd(wiring.Component):
    """Members: ``i`` In(stream of ReadBeatLayout(data_width)), ``o`` Out(stream of
    base_layout(), always ready), ``busy`` Out(1)."""

    def __init__(self, data_width: int = 512):
        check_int("data_width", data_width, 8, 4096)
        if data_width % 8:
            raise ValueError(f"data_width must be a multiple of 8, not {data_width!r}")
        self._data_width = data_width
        self._parser = LaneParser(1, bytes_per_stage=1)
        super().__init__({
            "i": In(stream.Signature(ReadBeatLayout(data_width))),
            "o": Out(stream.Signature(base_layout(), always_ready=True)),
            "busy": Out(1),
        })

    @property
    def latency(self) -> int:
        return 1 + self._parser.latency

    def elaborate(self, platform):
        m = Module()
        m.submodules.parser = parser = self._parser
        nbytes = self._data_width // 8

        shifter = Signal(self._data_width)
        keep = Signal(nbytes)
        last_beat = Signal()
        loaded = Signal()
        beat_ends = Signal()
        m.d.comb += [
            beat_ends.eq(loaded & ~keep[1] if nbytes > 1 else loaded),
            self.i.ready.eq(~loaded | beat_ends),
        ]
        with m.If(self.i.valid & self.i.ready):
            m.d.sync += [shifter.eq(self.i.payload.data), keep.eq(self.i.payload.keep),
                         last_beat.eq(self.i.payload.last), loaded.eq(self.i.payload.keep[0])]
        with m.Elif(beat_ends):
            m.d.sync += loaded.eq(0)
        with m.Elif(loaded):
            m.d.sync += [shifter.eq(shifter >> 8), keep.eq(keep >> 1)]

        m.d.comb += [
            parser.i.valid.eq(loaded),
            parser.i.payload.bytes.eq(shifter[:8]),
            parser.i.payload.byte_valid.eq(1),
            parser.i.payload.end_of_file.eq(beat_ends & last_beat),
        ]

        roles = parser.o.payload
        restart_pending = Signal(init=1)
        with m.If(parser.o.valid):
            with m.If(roles.is_base[0]):
                m.d.sync += restart_pending.eq(roles.end_of_file)
            with m.Elif(roles.is_break[0] | roles.end_of_file):
                m.d.sync += restart_pending.eq(1)
        m.d.comb += [
            self.o.valid.eq(parser.o.valid & roles.is_base[0]),
            self.o.payload.code.eq(roles.codes[:2]),
            self.o.payload.restart.eq(restart_pending),
        ]

        # bytes inside the parser pipeline
        in_flight = Signal(range(parser.latency + 1))
        with m.If(loaded):
            m.d.sync += in_flight.eq(parser.latency)
        with m.Elif(in_flight != 0):
            m.d.sync += in_flight.eq(in_flight - 1)
        m.d.comb += self.busy.eq(loaded | (in_flight != 0))
        return m
