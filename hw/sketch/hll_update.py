"""HLL update unit: one hash inserted per cycle into a partial sketch in block RAM (SPEC 3).

The ``2^p`` registers of ``w`` bits sit 16 to a memory word (:data:`REGISTERS_PER_WORD`), so a
sketch is ``2^(p-4)`` words of ``16 w`` bits (p=14, w=4: 1024 x 64, two BRAM36). An insert reads
its word, puts ``max(register, rank)`` in its register and writes the word back one cycle later.
Stages: index and rank; read; the BRAM output register (where the forwarding matches are
decided and registered); modify; write (W, from registers). A read misses the updates made in the
three cycles before its own modify cycle (the read port is not transparent and W writes one cycle
after the modify), so the last three updated words are kept and the most recent one with a
matching address replaces the memory word: the result equals the sequential model for every
sequence, including one word hit every cycle. The read data and the write data come from and go
to registers only (timing: no block RAM clock-to-out or setup on the modify path).
"""

from amaranth.hdl import Module, Mux, Signal
from amaranth.lib import memory, stream, wiring
from amaranth.lib.wiring import In, Out

from kmerspec.params import P, W

from .canonical import kmer_layout

__all__ = ["REGISTERS_PER_WORD", "hash_index_rank", "HllUpdate"]

REGISTERS_PER_WORD = 16


def hash_index_rank(m, h, p, w):
    """Combinational (index, rank) of 64-bit hash ``h``: top p bits; leading zeros of the rest
    plus one, saturated at ``2^w - 1``."""
    low_bits = 64 - p
    max_rank = (1 << w) - 1
    rank = Signal(w)
    m.d.comb += rank.eq(min(low_bits + 1, max_rank))
    # only the top max_rank - 1 bits can give an unsaturated rank; the highest set bit wins
    for leading_zeros in reversed(range(min(low_bits, max_rank - 1))):
        with m.If(h[low_bits - 1 - leading_zeros]):
            m.d.comb += rank.eq(leading_zeros + 1)
    return h[low_bits:], rank


class HllUpdate(wiring.Component):
    """One partial HyperLogLog sketch with a one-insert-per-cycle update port and a drain port.

    Parameters
    ----------
    p, w : int
        Index bits (8..18) and register width (4..8).

    Members
    -------
    i : In(stream.Signature(kmer_layout(), always_ready=True))
        64-bit hashes; ``payload.valid`` marks a real one. Every cycle can insert.
    drain_addr : In(p - 4)
        Word to read while draining.
    drain_en : In(1)
        Read word ``drain_addr`` (out on ``drain_data`` one cycle later) and clear it to zero.
        Only while no insert is in flight (:attr:`latency` cycles after the last valid hash).
    drain_data : Out(16 * w)
        Register ``16 a + r`` of word ``a`` in bits ``[w r, w r + w)``.

    Insert latency (hash in to memory written) is :attr:`latency` cycles.
    """

    latency = 5

    def __init__(self, p: int = P.default, w: int = W.default):
        P.check(p)
        W.check(w)
        self._p, self._w = p, w
        super().__init__({
            "i": In(stream.Signature(kmer_layout(), always_ready=True)),
            "drain_addr": In(p - 4),
            "drain_en": In(1),
            "drain_data": Out(REGISTERS_PER_WORD * w),
        })

    @property
    def words(self) -> int:
        return 1 << (self._p - 4)

    def elaborate(self, platform):
        m = Module()
        p, w = self._p, self._w
        word_bits = REGISTERS_PER_WORD * w
        m.submodules.registers = registers = memory.Memory(shape=word_bits, depth=self.words,
                                                           init=[])
        read = registers.read_port()
        write = registers.write_port()

        # stage 1: index and rank
        index, rank = hash_index_rank(m, self.i.payload.word, p, w)
        insert1 = Signal()
        index1 = Signal(p)
        rank1 = Signal(w)
        m.d.sync += [insert1.eq(self.i.valid & self.i.payload.valid), index1.eq(index),
                     rank1.eq(rank)]

        # stage 2: read the word
        insert2 = Signal()
        addr2 = Signal(p - 4)
        slot2 = Signal(4)
        rank2 = Signal(w)
        m.d.comb += [read.addr.eq(Mux(self.drain_en, self.drain_addr, index1[4:])), read.en.eq(1)]
        m.d.sync += [insert2.eq(insert1), addr2.eq(index1[4:]), slot2.eq(index1[:4]),
                     rank2.eq(rank1)]

        # stage 3: the BRAM output register; each forwarding match of stage 4 is decided here,
        # registered, against the updates that will be 1 .. 3 cycles old then (the read of
        # stage 2 misses the writes of the updates in stage 4 during the three cycles before
        # its own: W writes one cycle after the update)
        data3 = Signal(word_bits)
        insert3 = Signal()
        addr3 = Signal(p - 4)
        slot3 = Signal(4)
        rank3 = Signal(w)
        m.d.sync += [data3.eq(read.data), insert3.eq(insert2), addr3.eq(addr2), slot3.eq(slot2),
                     rank3.eq(rank2)]
        # (valid, address, word) of the updates 1, 2, 3 cycles ago; the newest is stage W
        written = [(Signal(name=f"written_valid_{age}"), Signal(p - 4, name=f"written_addr_{age}"),
                    Signal(word_bits, name=f"written_word_{age}")) for age in (1, 2, 3)]
        sources = [(insert3, addr3)] + [(valid, addr) for valid, addr, _ in written[:-1]]
        matches = [Signal(name=f"forward_{age}") for age in (1, 2, 3)]
        m.d.sync += [match.eq(valid & (addr == addr2)) for match, (valid, addr)
                     in zip(matches, sources)]

        # stage 4: modify, forwarding the most recent matching update
        current = data3
        for match, (_, _, word) in reversed(list(zip(matches, written))):
            current = Mux(match, word, current)
        updated = Signal(word_bits)
        m.d.comb += updated.eq(current)
        for slot in range(REGISTERS_PER_WORD):
            with m.If((slot3 == slot) & (rank3 > current[slot * w:(slot + 1) * w])):
                m.d.comb += updated[slot * w:(slot + 1) * w].eq(rank3)
        m.d.sync += [written[0][0].eq(insert3), written[0][1].eq(addr3),
                     written[0][2].eq(updated)]
        for older, newer in zip(written[1:], written[:-1]):
            m.d.sync += [o.eq(n) for o, n in zip(older, newer)]

        # stage W: write the registered update
        m.d.comb += [write.addr.eq(written[0][1]), write.data.eq(written[0][2]),
                     write.en.eq(written[0][0])]

        # drain: clear each word as it is read
        m.d.comb += self.drain_data.eq(read.data)
        with m.If(self.drain_en):
            m.d.comb += [write.addr.eq(self.drain_addr), write.data.eq(0), write.en.eq(1)]
        return m
