"""RecordChecksum: the self-test's order-independent checksum of the records a core writes."""

from amaranth.hdl import Module, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

__all__ = ["RecordChecksum"]


class RecordChecksum(wiring.Component):
    """Fold every record of ``record_beats`` beats into the checksum of kmerspec/selftest.py.

    Throughput: one beat per cycle; ``i.ready`` is always high (never backpressures).
    Latency: ``checksum`` and ``records`` include a record 2 cycles after its last beat.

    Members
    -------
    i : In(stream.Signature(bus_bits))
        Record beats, back to back.
    checksum : Out(32)
        Sum mod 2^32 of the per-record checksums.
    records : Out(32)
        Records folded in.
    """

    def __init__(self, bus_bits: int, record_beats: int):
        if bus_bits % 32:
            raise ValueError(f"the bus must be whole 32-bit words, not {bus_bits} bits")
        self._bus_bits, self._record_beats = bus_bits, record_beats
        super().__init__({"i": In(stream.Signature(bus_bits)),
                          "checksum": Out(32), "records": Out(32)})

    def elaborate(self, platform):
        m = Module()
        folded = Signal(32)
        folded_valid = Signal()
        beat_index = Signal(range(self._record_beats))
        running = Signal(32)
        # the XOR of rotated words is one XOR tree per bit; registered before the accumulation
        fold = 0
        for j in range(self._bus_bits // 32):
            fold = fold ^ self.i.payload[32 * j:32 * j + 32].rotate_left(j % 32)
        m.d.comb += self.i.ready.eq(1)
        m.d.sync += [folded.eq(fold), folded_valid.eq(self.i.valid)]

        updated = running.rotate_left(1) ^ folded
        with m.If(folded_valid):
            m.d.sync += [running.eq(updated), beat_index.eq(beat_index + 1)]
            with m.If(beat_index == self._record_beats - 1):
                m.d.sync += [running.eq(0), beat_index.eq(0),
                             self.checksum.eq(self.checksum + updated),
                             self.records.eq(self.records + 1)]
        return m
