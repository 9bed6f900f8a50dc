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

from hw.common.pipeline import delayed, popcount
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

    Latency is 4 cycles, throughput one beat per cycle for every input, no backpressure.
    """

    latency = 4

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

        # stage 1: per byte, the bases before it (a popcount of the earlier is_base flags, LUTs
        # and one short adder: a running count would chain B adders)
        payload = self.i.payload
        bases_before = [Signal(count_bits, name=f"bases_before_{j}") for j in range(nbytes + 1)]
        for j in range(nbytes + 1):
            m.d.sync += bases_before[j].eq(popcount(m, list(payload.is_base[:j]),
                                                    f"popcount_{j}"))
        is_break1 = delayed(m, payload.is_break, 1, "is_break")

        # stage 2: per byte, whether a break is at or before it and the bases before the last such
        # break: the latest break wins, selected by a balanced tree (a running Mux would chain B)
        break_seen = [Signal(name=f"break_seen_{j}") for j in range(nbytes)]
        bases_before_break = [Signal(count_bits, name=f"bases_before_break_{j}")
                              for j in range(nbytes)]

        def latest_break(low, high):
            """(any break in bytes [low, high), bases before the latest of them)"""
            if high - low == 1:
                return is_break1[low], Mux(is_break1[low], bases_before[low], 0)
            middle = (low + high) // 2
            seen_low, before_low = latest_break(low, middle)
            seen_high, before_high = latest_break(middle, high)
            return seen_low | seen_high, Mux(seen_high, before_high, before_low)

        for j in range(nbytes):
            seen, before = latest_break(0, j + 1)
            m.d.sync += [break_seen[j].eq(seen), bases_before_break[j].eq(before)]
        bases_before2 = [delayed(m, count, 1, f"bases_before_{j}", reset_less=True)
                         for j, count in enumerate(bases_before)]
        codes2 = delayed(m, payload.codes, 2, "codes", reset_less=True)
        is_base2 = delayed(m, payload.is_base, 2, "is_base")
        eof2 = delayed(m, payload.end_of_file, 2, "eof")
        valid2 = delayed(m, self.i.valid, 2, "valid")

        # stage 3: compaction; for base q, whether a break precedes it in the beat and the run
        # length inside the beat since that break
        compacted = [Signal(2, name=f"compacted_{q}") for q in range(nbytes)]
        broken = [Signal(name=f"broken_{q}") for q in range(nbytes)]
        since_break = [Signal(count_bits, name=f"since_break_{q}") for q in range(nbytes)]
        base_count = Signal(count_bits)
        any_break = Signal()
        tail_run = Signal(count_bits)
        eof3 = Signal()
        valid3 = Signal()
        for q in range(nbytes):
            code = Const(0, 2)
            is_broken = Const(0, 1)
            before = Const(0, count_bits)
            for j in range(q, nbytes):
                here = is_base2[j] & (bases_before2[j] == q)
                code = code | Mux(here, codes2[2 * j:2 * j + 2], 0)
                is_broken = is_broken | (here & break_seen[j])
                before = before | Mux(here, bases_before_break[j], 0)
            m.d.sync += [
                compacted[q].eq(code),
                broken[q].eq(is_broken),
                since_break[q].eq(q + 1 - before),
            ]
        m.d.sync += [
            base_count.eq(bases_before2[nbytes]),
            any_break.eq(break_seen[nbytes - 1]),
            tail_run.eq(bases_before2[nbytes] - bases_before_break[nbytes - 1]),
            eof3.eq(eof2),
            valid3.eq(valid2),
        ]

        # stage 4: the run window (feedback) and the k-mers
        window_bits = 2 * (k - 1)
        window = Signal(window_bits)
        run = Signal(run_bits)
        # as an integer: window oldest-first in the high bits, then the beat's bases
        buffer = Cat(*reversed(compacted), window)
        mask = (1 << (2 * k)) - 1
        for q in range(nbytes):
            word = (buffer >> (2 * (nbytes - 1 - q)))[:2 * k]
            # run + q + 1 >= k as a compare against a constant: the adder in front of the compare
            # was the kernel's deepest path (a carry chain and five LUTs to this flag)
            if_unbroken = run >= (k - q - 1) if q + 1 < k else Const(1, 1)
            m.d.sync += [
                self.o.payload.words[q].eq(word & mask),
                self.o.payload.valid[q].eq(valid3 & (q < base_count)
                                           & Mux(broken[q], since_break[q] >= k, if_unbroken)),
            ]
        m.d.sync += self.o.valid.eq(valid3)
        with m.If(valid3):
            if window_bits:
                with m.Switch(base_count):
                    for shift in range(nbytes + 1):
                        with m.Case(shift):
                            m.d.sync += window.eq(buffer[2 * (nbytes - shift):])
            with m.If(eof3):
                m.d.sync += run.eq(0)
            with m.Elif(any_break):
                m.d.sync += run.eq(tail_run)
            with m.Else():
                m.d.sync += run.eq(Mux(run + base_count >= k, k, run + base_count))
        return m
