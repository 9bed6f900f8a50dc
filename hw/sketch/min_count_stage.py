"""The minimum-count stage of a sketch lane (SPEC 7): between the B canonicalizers and the B
hash + HLL update pipelines of a :class:`~hw.sketch.lane.SketchLane`.

With ``min_count`` m = 1 the stage is a wire: the B k-mers of a beat go to their B pipelines in
the same cycle, as in a lane without the stage (same records, same throughput, no stall).

With m > 1 SPEC 7 fixes the order of the Count-Min insertions (conservative counters depend on
it), so the beat's k-mers cannot go to B units at once: beats holding a k-mer enter a FIFO, the
:class:`~hw.jsd.serializer.Serializer` hands one k-mer per cycle to the :class:`MinCountFilter`,
and the k-mers that pass go to pipeline 0 (the other B - 1 partial sketches stay empty; the
lane's merge tree takes the register-wise max as always).

Latency: 0 cycles with m = 1; with m > 1 the FIFO (2 cycles when empty), the serializer (1) and
the filter (:attr:`MinCountFilter.latency`). Throughput with m > 1: one k-mer per cycle
(B k-mers of a sequence-only beat take B cycles), so the lane's input must be held while the FIFO
fills. Backpressure: ``full`` is high while fewer than ``in_flight`` free places are left (the
beats already on their way through the front end of the lane when the owner reacts to it).
"""

from amaranth.hdl import Module, Signal
from amaranth.lib import data, fifo, stream, wiring
from amaranth.lib.wiring import In, Out

from kmerspec.golden.mincount import MinCountParams
from kmerspec.params import check_int, check_positive

from hw.jsd.sampler import kmer_beat_layout
from hw.jsd.serializer import Serializer, counted_beat, counted_beat_layout
from .canonical import kmer_layout
from .min_count import MinCountFilter

__all__ = ["MinCountStage", "slots_layout"]


def slots_layout(bytes_per_lane: int) -> data.ArrayLayout:
    """The B k-mer slots of one lane beat, each a word and its valid flag."""
    return data.ArrayLayout(kmer_layout(), bytes_per_lane)


class MinCountStage(wiring.Component):
    """Parameters
    ----------
    prefilter : MinCountParams
        The Count-Min geometry (its ``min_count`` is not used: m is the runtime input).
    bytes_per_lane : int
        B, the k-mer slots of a beat.
    in_flight : int
        Beats that may still arrive after ``full`` rises (the owner's reaction time).
    tail_latency : int
        Cycles from the stage's output to the partial sketch (hash + HLL update), for
        ``settled``.

    Members
    -------
    i : In(stream.Signature(slots_layout(B), always_ready=True))
    o : Out(stream.Signature(slots_layout(B), always_ready=True))
    min_count : In(mc_counter_bits)
        m; 0 and 1 are the wire. Change it only while ``settled``.
    full : Out(1)
        Hold the lane's input (m > 1 only).
    settled : Out(1)
        No k-mer that entered the stage is on its way to the partial sketches, and the counters
        are not being cleared (always with m = 1: the lane's own insert latency covers it).
    clear : In(1)
        Pulse to zero the counters (2^mc_width_bits cycles, ``busy``); k-mers arriving meanwhile
        wait in the FIFO.
    busy : Out(1)

    The Count-Min rows are ``filter.rows`` (for the tests).
    """

    def __init__(self, prefilter: MinCountParams, *, bytes_per_lane: int, in_flight: int,
                 tail_latency: int):
        check_positive("bytes_per_lane", bytes_per_lane)
        check_int("in_flight", in_flight, 0, 1024)
        check_int("tail_latency", tail_latency, 0, 1024)
        self._bytes_per_lane = bytes_per_lane
        self._in_flight = in_flight
        self._tail_latency = tail_latency
        # twice the beats in flight: after a hold, the beats released keep the serializer busy
        # for at least in_flight beats' worth of k-mers before the FIFO could run dry
        self.fifo_depth = 2 * in_flight + 4
        self.filter = MinCountFilter(depth=prefilter.mc_depth,
                                     width_bits=prefilter.mc_width_bits,
                                     counter_bits=prefilter.mc_counter_bits,
                                     seed=prefilter.mc_seed)
        super().__init__({
            "i": In(stream.Signature(slots_layout(bytes_per_lane), always_ready=True)),
            "o": Out(stream.Signature(slots_layout(bytes_per_lane), always_ready=True)),
            "min_count": In(prefilter.mc_counter_bits),
            "full": Out(1),
            "settled": Out(1),
            "clear": In(1),
            "busy": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        B = self._bytes_per_lane
        m.submodules.beats = beats = fifo.SyncFIFOBuffered(width=counted_beat_layout(B).size,
                                                           depth=self.fifo_depth)
        m.submodules.serializer = serializer = Serializer(B)
        m.submodules.filter = kmer_filter = self.filter

        filtering = self.min_count > 1
        beat = Signal(kmer_beat_layout(B))
        for slot in range(B):
            m.d.comb += [beat.words[slot].eq(self.i.payload[slot].word),
                         beat.valid[slot].eq(self.i.payload[slot].valid)]
        m.d.comb += [
            beats.w_en.eq(filtering & self.i.valid & (beat.valid != 0)),
            beats.w_data.eq(counted_beat(beat)),
            self.full.eq(filtering & (beats.level + self._in_flight >= self.fifo_depth)),
            serializer.i.valid.eq(beats.r_rdy),
            serializer.i.payload.eq(beats.r_data),
            beats.r_en.eq(serializer.i.ready),
            serializer.run.eq(~kmer_filter.busy),
            kmer_filter.i.valid.eq(serializer.o.valid & serializer.o.payload.kmer),
            kmer_filter.i.payload.eq(serializer.o.payload.word),
            kmer_filter.min_count.eq(self.min_count),
            kmer_filter.clear.eq(self.clear),
            self.busy.eq(kmer_filter.busy),
        ]
        with m.If(filtering):
            m.d.comb += [
                self.o.valid.eq(kmer_filter.o.valid),
                self.o.payload[0].word.eq(kmer_filter.o.payload),
                self.o.payload[0].valid.eq(kmer_filter.o.valid),
            ]
        with m.Else():
            m.d.comb += [self.o.valid.eq(self.i.valid), self.o.payload.eq(self.i.payload)]

        # cycles until the last k-mer that entered the filter has reached the partial sketch
        tail = Signal(range(self.filter.latency + self._tail_latency + 2))
        with m.If(kmer_filter.i.valid):
            m.d.sync += tail.eq(self.filter.latency + self._tail_latency + 1)
        with m.Elif(tail != 0):
            m.d.sync += tail.eq(tail - 1)
        # with the filter running, an empty serializer offers no token. (``clear`` is not part of
        # it: the owner pulses clear because of settled, which would close a combinational loop;
        # busy follows clear in the next cycle.)
        m.d.comb += self.settled.eq(~filtering | (~beats.r_rdy & ~serializer.o.valid & (tail == 0)
                                                  & ~kmer_filter.busy))
        return m
