"""Chunk decoder: splits the 512-bit input beats of a chunk into per-lane byte beats.

A chunk is a sequence of blocks (byte-level table in docs/jacc_sketch_kernel.md). A block is
``control_beats`` control beats holding one 64-bit control word per lane (word ``t`` at bits
``[64 t, 64 t + 64)`` of the control beats, first beat lowest), then as many data beats as the
longest lane needs. Control word: bits [23:0] byte count of the lane in this block, bit 24 end of
file, bit 25 end of genome (implies end of file), bits [31:26] zero, bits [63:32] genome tag.
In a data beat lane ``t`` owns bytes ``[t B, t B + B)``; its first ``count`` bytes of the block are
real, the rest padding. The flags take effect after the lane's last byte of the block (with the
last control beat when its count is 0).
"""

from amaranth.hdl import Cat, Module, Mux, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from kmerspec.params import check_positive

from .parser import lane_bytes_layout

__all__ = ["COUNT_BITS", "EOF_BIT", "EOG_BIT", "TAG_LSB", "control_beats", "ChunkDecoder"]

COUNT_BITS = 24
EOF_BIT = 24
EOG_BIT = 25
TAG_LSB = 32


def control_beats(lanes: int, bus_bits: int) -> int:
    return -(-64 * lanes // bus_bits)


class ChunkDecoder(wiring.Component):
    """Decode chunk beats into lane beats, one input beat per cycle.

    Members
    -------
    i : In(stream.Signature(T * B * 8))
        Chunk beats. ``ready`` is ``~hold``.
    hold : In(1)
        Stop taking beats (the owner is merging a sketch).
    lanes : Out(data.ArrayLayout(lane_bytes_layout(B), T))
    lanes_valid : Out(1)
        ``lanes`` holds a beat, one cycle after the input beat was taken (control beats give a
        beat without bytes, which carries the flags of lanes with an empty block).
    end_of_genome : Out(T)
        With ``lanes_valid``: the genome of lane ``t`` ends after this beat.
    tags : Out(data.ArrayLayout(32, T))
        The tags of the current block (valid with ``end_of_genome``).
    """

    def __init__(self, *, lanes: int = 8, bytes_per_lane: int = 8):
        check_positive("lanes", lanes)
        check_positive("bytes_per_lane", bytes_per_lane)
        self._lanes, self._bytes_per_lane = lanes, bytes_per_lane
        self._bus_bits = 8 * lanes * bytes_per_lane
        super().__init__({
            "i": In(stream.Signature(self._bus_bits)),
            "hold": In(1),
            "lanes": Out(data.ArrayLayout(lane_bytes_layout(bytes_per_lane), lanes)),
            "lanes_valid": Out(1),
            "end_of_genome": Out(lanes),
            "tags": Out(data.ArrayLayout(32, lanes)),
        })

    def elaborate(self, platform):
        m = Module()
        lanes, nbytes, bus_bits = self._lanes, self._bytes_per_lane, self._bus_bits
        beats = control_beats(lanes, bus_bits)

        in_data = Signal()
        control_index = Signal(range(beats))
        control = Signal(bus_bits * beats)   # shift register of the block's control beats
        remaining = [Signal(COUNT_BITS, name=f"remaining{t}") for t in range(lanes)]
        # per lane: remaining > j for j = 0 .. B, registered with it (decided from the count
        # loaded or from the remaining before the step), so the data beat's byte valids, its
        # last-beat test and the block end are selects of registers, not compares behind them
        more_than = [Signal(nbytes + 1, name=f"more_than{t}") for t in range(lanes)]
        ends_file = Signal(lanes)
        ends_genome = Signal(lanes)

        take = self.i.valid & self.i.ready
        m.d.comb += self.i.ready.eq(~self.hold)
        m.d.sync += self.lanes_valid.eq(take)

        words = Cat(control[bus_bits:], self.i.payload)
        with m.If(take & ~in_data):
            m.d.sync += control.eq(words)
            with m.If(control_index == beats - 1):
                m.d.sync += control_index.eq(0)
                any_bytes = 0
                for t in range(lanes):
                    word = words[64 * t:64 * t + 64]
                    count = word[:COUNT_BITS]
                    empty = count == 0
                    any_bytes = any_bytes | ~empty
                    eog = word[EOG_BIT]
                    m.d.sync += [
                        remaining[t].eq(count),
                        more_than[t].eq(Cat(count > j for j in range(nbytes + 1))),
                        ends_file[t].eq(word[EOF_BIT] | eog),
                        ends_genome[t].eq(eog),
                        self.tags[t].eq(word[TAG_LSB:TAG_LSB + 32]),
                        self.lanes[t].byte_valid.eq(0),
                        self.lanes[t].end_of_file.eq(empty & (word[EOF_BIT] | eog)),
                        self.end_of_genome[t].eq(empty & eog),
                    ]
                m.d.sync += in_data.eq(any_bytes)
            with m.Else():
                m.d.sync += control_index.eq(control_index + 1)
                for t in range(lanes):
                    m.d.sync += [self.lanes[t].byte_valid.eq(0), self.lanes[t].end_of_file.eq(0),
                                 self.end_of_genome[t].eq(0)]

        with m.If(take & in_data):
            block_ends = 1
            for t in range(lanes):
                left, more = remaining[t], more_than[t]
                last = more[0] & ~more[nbytes]
                block_ends = block_ends & ~more[nbytes]
                valid_bytes = more[:nbytes]
                m.d.sync += [
                    # after this beat: left - B > j, i.e. left > B + j (false once left <= B)
                    more.eq(Cat(left > nbytes + j for j in range(nbytes + 1))),
                    self.lanes[t].bytes.eq(self.i.payload[8 * nbytes * t:8 * nbytes * (t + 1)]),
                    self.lanes[t].byte_valid.eq(valid_bytes),
                    self.lanes[t].end_of_file.eq(last & ends_file[t]),
                    self.end_of_genome[t].eq(last & ends_genome[t]),
                    left.eq(Mux(left > nbytes, left - nbytes, 0)),
                ]
            m.d.sync += in_data.eq(~block_ends)
        return m
