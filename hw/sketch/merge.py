"""End of genome: merge tree, feature unit and the record writer (write gateway) (SPEC 3).

A lane's ``B`` partial sketches are drained word by word (16 registers per word); the
:class:`MergeTree` takes the register-wise max, the :class:`FeatureAccumulator` accumulates the
exact features ``Z = sum 2^(W - r)`` and ``nz`` (through the shared feature unit,
hw/common/feature_unit.py), and the :class:`RecordWriter` packs the merged words into bus beats
followed by a trailer holding the genome tag and the features. The record layout
is documented in docs/jacc_sketch_kernel.md and packed/unpacked by kmerspec/kernels/jacc_sketch.py.
"""

from amaranth.hdl import Cat, Module, Mux, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from kmerspec.params import P, W, check_positive

from ..common.feature_unit import FeatureUnit
from .hll_update import REGISTERS_PER_WORD

__all__ = ["z_bits", "trailer_bits", "MergeTree", "FeatureAccumulator", "RecordWriter"]


def z_bits(p: int, w: int) -> int:
    """Bits of the feature Z: it is at most ``2^p * 2^W``."""
    return p + (1 << w) - 1 + 1


def trailer_bits(p: int, w: int, bus_bits: int) -> int:
    """The trailer: tag (32 bits), nz (32 bits), Z in whole 64-bit words, padded to beats."""
    bits = 64 + 64 * -(-z_bits(p, w) // 64)
    return bus_bits * -(-bits // bus_bits)


def _register_max(m, a, b, w):
    out = Signal(len(a))
    for slot in range(len(a) // w):
        x, y = a[slot * w:(slot + 1) * w], b[slot * w:(slot + 1) * w]
        m.d.sync += out[slot * w:(slot + 1) * w].eq(Mux(x > y, x, y))
    return out


class MergeTree(wiring.Component):
    """Register-wise max of ``ways`` words of 16 ``w``-bit registers, one set per cycle.

    Members
    -------
    words : In(data.ArrayLayout(16 w, ways))
    valid : In(1)
    merged : Out(16 w)
    merged_valid : Out(1)

    Latency :attr:`latency` = max(1, ceil(log2 ways)) registered levels, one word per cycle.
    """

    def __init__(self, ways: int, w: int = W.default):
        check_positive("ways", ways)
        W.check(w)
        self._ways, self._w = ways, w
        super().__init__({
            "words": In(data.ArrayLayout(REGISTERS_PER_WORD * w, ways)),
            "valid": In(1),
            "merged": Out(REGISTERS_PER_WORD * w),
            "merged_valid": Out(1),
        })

    @property
    def latency(self) -> int:
        return max(1, (self._ways - 1).bit_length())

    def elaborate(self, platform):
        m = Module()
        level = [self.words[i] for i in range(self._ways)]
        valid = self.valid
        for _ in range(self.latency):
            next_level = []
            for i in range(0, len(level), 2):
                if i + 1 < len(level):
                    next_level.append(_register_max(m, level[i], level[i + 1], self._w))
                else:
                    alone = Signal(len(level[i]))
                    m.d.sync += alone.eq(level[i])
                    next_level.append(alone)
            level = next_level
            registered_valid = Signal()
            m.d.sync += registered_valid.eq(valid)
            valid = registered_valid
        m.d.comb += [self.merged.eq(level[0]), self.merged_valid.eq(valid)]
        return m


class FeatureAccumulator(wiring.Component):
    """Exact features of a sketch streamed as words: ``Z = sum 2^(W - r)`` and ``nz``.

    Each word goes through a :class:`~hw.common.feature_unit.FeatureUnit` (4-input adders: the
    16 terms of a word are decoded into a register, then summed over two registered levels) into
    the accumulators.

    Members
    -------
    clear : In(1)
        Start a new sketch (takes priority over ``valid`` in the same cycle).
    word : In(16 w)
    valid : In(1)
    z : Out(z_bits(p, w))
    nz : Out(32)
    words : Out(p - 3)
        Words included in ``z`` and ``nz`` since ``clear``.

    ``z``, ``nz`` and ``words`` include a word :attr:`latency` cycles after it was presented;
    one word per cycle.
    """

    def __init__(self, p: int = P.default, w: int = W.default):
        P.check(p)
        W.check(w)
        self._unit = FeatureUnit(REGISTERS_PER_WORD, w, union=False, arity=4)
        super().__init__({
            "clear": In(1),
            "word": In(REGISTERS_PER_WORD * w),
            "valid": In(1),
            "z": Out(z_bits(p, w)),
            "nz": Out(32),
            "words": Out(p - 3),
        })

    @property
    def latency(self) -> int:
        return self._unit.latency + 1

    def elaborate(self, platform):
        m = Module()
        m.submodules.unit = unit = self._unit
        m.d.comb += unit.slot.eq(self.word)
        # a word cleared away while in the unit must not be accumulated
        word_valid = self.valid & ~self.clear
        for _ in range(unit.latency):
            registered = Signal()
            m.d.sync += registered.eq(word_valid & ~self.clear)
            word_valid = registered
        with m.If(self.clear):
            m.d.sync += [self.z.eq(0), self.nz.eq(0), self.words.eq(0)]
        with m.Elif(word_valid):
            m.d.sync += [self.z.eq(self.z + unit.z), self.nz.eq(self.nz + unit.nz),
                         self.words.eq(self.words + 1)]
        return m


class RecordWriter(wiring.Component):
    """Pack merged words into bus beats, then append the trailer (tag, nz, Z).

    Parameters
    ----------
    bus_bits : int
        Bus width; a multiple of the word width ``16 w``.

    Members
    -------
    words : In(stream.Signature(16 w))
        The ``2^(p-4)`` merged words of one sketch, in register order.
    tag, z, nz : In
        Sampled when the trailer is sent: after the last sketch beat left and ``features_ready``.
    features_ready : In(1)
        ``z`` and ``nz`` include every word of the sketch.
    o : Out(stream.Signature(bus_bits))
        Record beats; honours backpressure.
    busy : Out(1)
        A record is in progress (from its first word until its last beat left).
    done : Out(1)
        Pulses in the cycle the last beat of a record is taken.

    Throughput: one word per cycle in, one beat per ``bus_bits / 16 w`` cycles out.
    """

    def __init__(self, bus_bits: int, p: int = P.default, w: int = W.default):
        P.check(p)
        W.check(w)
        word_bits = REGISTERS_PER_WORD * w
        if not isinstance(bus_bits, int) or bus_bits < 64 or bus_bits % word_bits:
            raise ValueError(f"bus_bits must be a multiple of 64 and of 16 w = {word_bits}, "
                             f"not {bus_bits!r}")
        self._bus_bits, self._p, self._w = bus_bits, p, w
        super().__init__({
            "words": In(stream.Signature(word_bits)),
            "tag": In(32),
            "z": In(z_bits(p, w)),
            "nz": In(32),
            "features_ready": In(1),
            "o": Out(stream.Signature(bus_bits)),
            "busy": Out(1),
            "done": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        bus_bits, p, w = self._bus_bits, self._p, self._w
        word_bits = REGISTERS_PER_WORD * w
        words_per_beat = bus_bits // word_bits
        total_words = 1 << (p - 4)
        trailer_beats = trailer_bits(p, w, bus_bits) // bus_bits

        beat = Signal(bus_bits)
        fill = Signal(range(words_per_beat + 1))
        words_taken = Signal(range(total_words + 1))
        trailer = Signal(trailer_beats * bus_bits)
        trailer_left = Signal(range(trailer_beats + 1))

        last_beat_out = Signal()
        m.d.comb += self.busy.eq((words_taken != 0) | self.o.valid | (trailer_left != 0))
        with m.If(self.o.valid & self.o.ready):
            m.d.sync += [self.o.valid.eq(0), last_beat_out.eq(0)]
            m.d.comb += self.done.eq(last_beat_out)

        beat_free = ~self.o.valid | self.o.ready
        # a full beat leaves in the same cycle as the next word arrives: one word per cycle
        emit = (fill == words_per_beat) & beat_free
        take = self.words.valid & self.words.ready
        m.d.comb += self.words.ready.eq((trailer_left == 0) & (words_taken != total_words)
                                        & ((fill != words_per_beat) | emit))
        with m.If(emit):
            m.d.sync += [self.o.payload.eq(beat), self.o.valid.eq(1)]
        with m.If(take):
            m.d.sync += [beat.eq(Cat(beat[word_bits:], self.words.payload)),
                         words_taken.eq(words_taken + 1)]
        m.d.sync += fill.eq(fill - Mux(emit, words_per_beat, 0) + take)

        with m.If(trailer_left != 0):
            with m.If(beat_free):
                m.d.sync += [
                    self.o.payload.eq(trailer[:bus_bits]),
                    self.o.valid.eq(1),
                    trailer.eq(trailer >> bus_bits),
                    trailer_left.eq(trailer_left - 1),
                    last_beat_out.eq(trailer_left == 1),
                ]
        with m.Elif((words_taken == total_words) & (fill == 0) & self.features_ready):
            # every sketch beat has been handed over and the features include every word
            m.d.sync += [
                trailer.eq(Cat(self.tag, self.nz, self.z)),
                trailer_left.eq(trailer_beats),
                words_taken.eq(0),
            ]
        return m
