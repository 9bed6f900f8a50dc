"""Minimum-count prefilter of a sketch lane (SPEC 7): k-mers pass on to the HLL update once the
conservative Count-Min estimate of their count reaches the runtime threshold m.

Pipeline: :class:`~hw.jsd.murmur3.Murmur3Hashes` (seeds ``mc_seed + r``, the row hashes of
SPEC 7) -> :class:`~hw.common.countmin.CountMinUnit` (conservative update, saturating
``counter_bits``-bit counters, read-modify-write hazards forwarded) -> ``estimate >= m``. The
unit keeps the stream order of its input, which SPEC 7 requires (the counters of a conservative
update depend on it): the lane feeds it one k-mer at a time in stream order.

Latency :attr:`latency` = 7 (hashes) + the Count-Min unit's latency (read latency 1) cycles from
an accepted word to its output (if it passes); one word per cycle for every input sequence, the same
word in every cycle included; no backpressure (the output is always ready). ``clear`` zeroes the
counters in 2^width_bits cycles (``busy`` high); words offered meanwhile are dropped, so the lane
clears only between genomes, with nothing in flight.
"""

from amaranth.hdl import Module
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from kmerspec.params import MC_COUNTER_BITS, MC_DEPTH, MC_SEED, MC_WIDTH_BITS

from hw.common.countmin import CountMinUnit
from hw.jsd.murmur3 import Murmur3Hashes

__all__ = ["MinCountFilter"]

_WORD_BITS = 64


class MinCountFilter(wiring.Component):
    """Pass the k-mer words whose Count-Min estimate, after their own insertion, is >= m.

    Parameters
    ----------
    depth, width_bits, counter_bits, seed : int
        ``mc_depth`` rows of 2^``mc_width_bits`` counters of ``mc_counter_bits`` bits, row r
        indexed by the low ``mc_width_bits`` bits of murmur3_32(word, seed + r mod 2^32).

    Members
    -------
    i : In(stream.Signature(64, always_ready=True))
        The canonical k-mer words of one genome, in stream order.
    min_count : In(counter_bits)
        m, at least 1; change it only while no word is in flight.
    o : Out(stream.Signature(64, always_ready=True))
        The words that pass, in order, :attr:`latency` cycles after their acceptance.
    clear : In(1)
        Pulse (nothing in flight) to zero every counter; ``busy`` is high meanwhile.
    busy : Out(1)

    The counter memories are :attr:`rows` (``rows[r].data[i]``), for the tests.
    """

    def __init__(self, *, depth: int = MC_DEPTH.default, width_bits: int = MC_WIDTH_BITS.default,
                 counter_bits: int = MC_COUNTER_BITS.default, seed: int = MC_SEED.default):
        MC_DEPTH.check(depth, "depth")
        MC_WIDTH_BITS.check(width_bits, "width_bits")
        MC_COUNTER_BITS.check(counter_bits, "counter_bits")
        MC_SEED.check(seed, "seed")
        self.depth, self.width_bits, self.counter_bits, self.seed = (depth, width_bits,
                                                                     counter_bits, seed)
        self._hashes = Murmur3Hashes([(seed + row) & 0xFFFFFFFF for row in range(depth)])
        self._countmin = CountMinUnit(depth, width_bits, counter_bits, key_bits=_WORD_BITS)
        super().__init__({
            "i": In(stream.Signature(_WORD_BITS, always_ready=True)),
            "min_count": In(counter_bits),
            "o": Out(stream.Signature(_WORD_BITS, always_ready=True)),
            "clear": In(1),
            "busy": Out(1),
        })

    @property
    def rows(self):
        return self._countmin.rows

    @property
    def latency(self) -> int:
        return Murmur3Hashes.latency + self._countmin.latency

    def elaborate(self, platform):
        m = Module()
        m.submodules.hashes = hashes = self._hashes
        m.submodules.countmin = countmin = self._countmin
        m.d.comb += [
            hashes.i.valid.eq(self.i.valid),
            hashes.i.payload.eq(self.i.payload),
            countmin.i.valid.eq(hashes.o.valid),
            countmin.i.payload.key.eq(hashes.o.payload.word),
            countmin.plain_update.eq(0),
            countmin.clear.eq(self.clear),
            self.busy.eq(countmin.busy),
            self.o.valid.eq(countmin.o.valid & (countmin.o.payload.estimate >= self.min_count)),
            self.o.payload.eq(countmin.o.payload.key),
        ]
        for row in range(self.depth):
            m.d.comb += countmin.i.payload.indices[row].eq(
                hashes.o.payload.hashes[row][:self.width_bits])
        return m
