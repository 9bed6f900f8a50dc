"""k-mer buffer: turns the classified bytes of one lane into up to B forward k-mers per cycle.

The bases of a beat are first compacted (skipped bytes and line ends removed), in order. Behind
them sits a register window with the last ``k - 1`` bases of the run, so k-mer ``q`` of the beat,
the one ending at the ``q``-th base, is a fixed slice of ``window ++ compacted bases``: no shifter
sits in the k-mer path, only in the window update (a ``B + 1``-way selection by the base count).
Breaks reset the run length; a k-mer is valid when the run reaching its last base is ``>= k``.
"""

from amaranth.hdl import Cat, Const, Module, Mux, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from kmerspec.params import BYTES_PER_LANE, K, check_positive

from .parser import lane_roles_layout

__all__ = ["kmers_layout", "KmerBuffer"]


def kmers_layout(kmers_per_beat: int) -> data.StructLayout:
    """Up to ``kmers_per_beat`` forward k-mer words (bits [2k-1:0] used), each with a valid flag."""
    return data.StructLayout({
        "words": data.ArrayLayout(64, kmers_per_beat),
        "valid": kmers_per_beat,
    })


class KmerBuffer(wiring.Component):
    """Extract the k-mers of one lane, ``bytes_per_lane`` bytes per cycle.

    Parameters
    ----------
    bytes_per_lane : int
        Bytes per beat (B): at most B bases, so at most B k-mers per cycle.
    k : int
        k-mer length, 1 to 32.

    Members
    -------
    i : In(stream.Signature(lane_roles_layout(B), always_ready=True))
        Classified bytes from :class:`LaneParser`. ``end_of_file`` ends the run after the beat.
    o : Out(stream.Signature(kmers_layout(B), always_ready=True))
        Slot ``q`` holds the k-mer ending at the ``q``-th base of the beat, in stream order.

    Latency is 3 cycles, throughput one beat per cycle for every input, no backpressure.
    """

    latency = 3

    def __init__(self, bytes_per_lane: int = BYTES_PER_LANE.default,
                 k: int = K.default):
        check_positive("bytes_per_lane", bytes_per_lane)
        K.check(k)
        self._bytes_per_lane = bytes_per_lane
        self._k = k
        super().__init__({
            "i": In(stream.Signature(lane_roles_layout(bytes_per_lane), always_ready=True)),
            "o": Out(stream.Signature(kmers_layout(bytes_per_lane), always_ready=True)),
        })

    @property
    def k(self) -> int:
        return self._k

    def elaborate(self, platform):
        m = Module()
        nbytes, k = self._bytes_per_lane, self._k
        count_bits = nbytes.bit_length()
        run_bits = max(k, nbytes).bit_length() + 1

        # stage 1: per byte, the bases before it and the bases before the last break up to it
        bases_before = [Signal(count_bits, name=f"bases_before_{j}") for j in range(nbytes + 1)]
        break_seen = [Signal(name=f"break_seen_{j}") for j in range(nbytes)]
        bases_before_break = [Signal(count_bits, name=f"bases_before_break_{j}")
                              for j in range(nbytes)]
        codes1 = Signal(2 * nbytes)
        is_base1 = Signal(nbytes)
        eof1 = Signal()
        valid1 = Signal()
        payload = self.i.payload
        count = Const(0, count_bits)
        seen = Const(0, 1)
        before_break = Const(0, count_bits)
        for j in range(nbytes):
            m.d.sync += bases_before[j].eq(count)
            seen = seen | payload.is_break[j]
            before_break = Mux(payload.is_break[j], count, before_break)
            m.d.sync += [break_seen[j].eq(seen), bases_before_break[j].eq(before_break)]
            count = (count + payload.is_base[j])[:count_bits]
        m.d.sync += [
            bases_before[nbytes].eq(count),
            codes1.eq(payload.codes),
            is_base1.eq(payload.is_base),
            eof1.eq(payload.end_of_file),
            valid1.eq(self.i.valid),
        ]

        # stage 2: compaction; for base q, whether a break precedes it in the beat and the run
        # length inside the beat since that break
        compacted = [Signal(2, name=f"compacted_{q}") for q in range(nbytes)]
        broken = [Signal(name=f"broken_{q}") for q in range(nbytes)]
        since_break = [Signal(count_bits, name=f"since_break_{q}") for q in range(nbytes)]
        base_count = Signal(count_bits)
        any_break = Signal()
        tail_run = Signal(count_bits)
        eof2 = Signal()
        valid2 = Signal()
        for q in range(nbytes):
            code = Const(0, 2)
            is_broken = Const(0, 1)
            before = Const(0, count_bits)
            for j in range(q, nbytes):
                here = is_base1[j] & (bases_before[j] == q)
                code = code | Mux(here, codes1[2 * j:2 * j + 2], 0)
                is_broken = is_broken | (here & break_seen[j])
                before = before | Mux(here, bases_before_break[j], 0)
            m.d.sync += [
                compacted[q].eq(code),
                broken[q].eq(is_broken),
                since_break[q].eq(q + 1 - before),
            ]
        m.d.sync += [
            base_count.eq(bases_before[nbytes]),
            any_break.eq(break_seen[nbytes - 1]),
            tail_run.eq(bases_before[nbytes] - bases_before_break[nbytes - 1]),
            eof2.eq(eof1),
            valid2.eq(valid1),
        ]

        # stage 3: the run window (feedback) and the k-mers
        window_bits = 2 * (k - 1)
        window = Signal(window_bits)
        run = Signal(run_bits)
        # as an integer: window oldest-first in the high bits, then the beat's bases
        buffer = Cat(*reversed(compacted), window)
        mask = (1 << (2 * k)) - 1
        for q in range(nbytes):
            word = (buffer >> (2 * (nbytes - 1 - q)))[:2 * k]
            if_unbroken = (run + q + 1) >= k
            m.d.sync += [
                self.o.payload.words[q].eq(word & mask),
                self.o.payload.valid[q].eq(valid2 & (q < base_count)
                                           & Mux(broken[q], since_break[q] >= k, if_unbroken)),
            ]
        m.d.sync += self.o.valid.eq(valid2)
        with m.If(valid2):
            if window_bits:
                with m.Switch(base_count):
                    for shift in range(nbytes + 1):
                        with m.Case(shift):
                            m.d.sync += window.eq(buffer[2 * (nbytes - shift):])
            with m.If(eof2):
                m.d.sync += run.eq(0)
            with m.Elif(any_break):
                m.d.sync += run.eq(tail_run)
            with m.Else():
                m.d.sync += run.eq(Mux(run + base_count >= k, k, run + base_count))
        return m
