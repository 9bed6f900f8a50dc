"""HLL update unit: one hash inserted per cycle into one of two banks of partial sketches in block
RAM (SPEC 3), while the other bank is drained.

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

Two banks (double-buffered genome ends): each bank is its own memory with its own read and write
port, so inserts into one bank and the drain (read and clear) of the other run in the same cycle.
Every hash carries its bank through the pipeline and a forwarding match requires the same bank,
so an update of one bank never reaches a word of the other.

No result depends on what a memory returns when one address is read and written in the same
cycle (block RAM in READ_FIRST or WRITE_FIRST mode, UltraRAM, LUT RAM all differ there): an
insert's read that collides with a write is always replaced by the forwarded word, and a drained
word is cleared one cycle after its read (``clear`` registers), while the drain reads the next
word; an insert read of the word being cleared in that cycle (an insert into the bank right after
its drain) is zeroed by a registered bypass (``cleared``). ``tests/test_power_on.py`` runs the
unit with write-first memories.
"""

from amaranth.hdl import Module, Mux, Signal
from amaranth.lib import memory, stream, wiring
from amaranth.lib.wiring import In, Out

from kmerspec.params import P, W

from .canonical import kmer_layout

__all__ = ["REGISTERS_PER_WORD", "hash_index_rank", "drain_controls", "HllUpdate"]

REGISTERS_PER_WORD = 16


def drain_controls(p: int) -> dict:
    """The drain inputs of a sketch of ``2^(p-4)`` words (:class:`HllUpdate`'s, and those of
    the lane that drives all its units with them): ``drain_addr``, ``drain_en``, ``drain_bank``,
    ``drain_both``."""
    return {"drain_addr": In(p - 4), "drain_en": In(1), "drain_bank": In(1), "drain_both": In(1)}


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
    """Two banks of one partial HyperLogLog sketch: a one-insert-per-cycle update port and a drain
    port.

    Parameters
    ----------
    p, w : int
        Index bits (8..18) and register width (4..8).

    Members
    -------
    i : In(stream.Signature(kmer_layout(), always_ready=True))
        64-bit hashes; ``payload.valid`` marks a real one. Every cycle can insert.
    bank : In(1)
        The bank the hash on ``i`` goes to (sampled with it).
    drain_addr : In(p - 4)
        Word to read while draining.
    drain_en : In(1)
        Read word ``drain_addr`` of bank ``drain_bank`` (out on ``drain_data`` one cycle later)
        and clear it to zero (written in the next cycle; a word is drained once per drain, not
        in two cycles in a row). Only while no insert into that bank is in flight
        (:attr:`latency` cycles after its last valid hash); inserts into the other bank may go
        on, and into the drained bank from the cycle of its last drain on.
    drain_bank : In(1)
        The bank drained.
    drain_both : In(1)
        With ``drain_en``: clear word ``drain_addr`` of both banks (the clear after reset, no
        insert in flight); ``drain_data`` is then bank ``drain_bank``'s.
    drain_data : Out(16 * w)
        Register ``16 a + r`` of word ``a`` in bits ``[w r, w r + w)``.

    Insert latency (hash in to memory written) is :attr:`latency` cycles; drain latency 1 cycle,
    one word per cycle; no backpressure.
    """

    latency = 5

    def __init__(self, p: int = P.default, w: int = W.default):
        P.check(p)
        W.check(w)
        self._p, self._w = p, w
        super().__init__({
            "i": In(stream.Signature(kmer_layout(), always_ready=True)),
            "bank": In(1),
            **drain_controls(p),
            "drain_data": Out(REGISTERS_PER_WORD * w),
        })

    @property
    def words(self) -> int:
        return 1 << (self._p - 4)

    def elaborate(self, platform):
        m = Module()
        p, w = self._p, self._w
        word_bits = REGISTERS_PER_WORD * w
        banks = [memory.Memory(shape=word_bits, depth=self.words, init=[]) for _ in range(2)]
        for number, bank in enumerate(banks):
            m.submodules[f"bank{number}"] = bank
        self.banks = banks   # the elaborated memories, for tests that inspect the sketches
        reads = [bank.read_port() for bank in banks]
        writes = [bank.write_port() for bank in banks]
        drains = [self.drain_en & (self.drain_both | (self.drain_bank == number))
                  for number in range(2)]

        # stage 1: index and rank
        index, rank = hash_index_rank(m, self.i.payload.word, p, w)
        insert1 = Signal()
        index1 = Signal(p)
        rank1 = Signal(w)
        bank1 = Signal()
        m.d.sync += [insert1.eq(self.i.valid & self.i.payload.valid), index1.eq(index),
                     rank1.eq(rank), bank1.eq(self.bank)]

        # the clear of a drained word, one cycle after its read (no address is read and written
        # in the same cycle by the drain)
        clears = [Signal(name=f"clear_{number}") for number in range(2)]
        clear_addr = Signal(p - 4)
        m.d.sync += [*(clear.eq(drain) for clear, drain in zip(clears, drains)),
                     clear_addr.eq(self.drain_addr)]

        # stage 2: read the word (in both banks; a bank being drained reads the drain address)
        insert2 = Signal()
        addr2 = Signal(p - 4)
        slot2 = Signal(4)
        rank2 = Signal(w)
        bank2 = Signal()
        for read, drain in zip(reads, drains):
            m.d.comb += [read.addr.eq(Mux(drain, self.drain_addr, index1[4:])), read.en.eq(1)]
        m.d.sync += [insert2.eq(insert1), addr2.eq(index1[4:]), slot2.eq(index1[:4]),
                     rank2.eq(rank1), bank2.eq(bank1)]
        # the word this read gets is being cleared in this cycle: whatever the memory returns
        # on the collision, the word is 0 (the registered bypass)
        cleared = Signal()
        m.d.sync += cleared.eq(Mux(bank1, clears[1], clears[0]) & (clear_addr == index1[4:]))

        # stage 3: the BRAM output register; each forwarding match of stage 4 is decided here,
        # registered, against the updates that will be 1 .. 3 cycles old then (the read of
        # stage 2 misses the writes of the updates in stage 4 during the three cycles before
        # its own: W writes one cycle after the update)
        data3 = Signal(word_bits)
        insert3 = Signal()
        addr3 = Signal(p - 4)
        slot3 = Signal(4)
        rank3 = Signal(w)
        bank3 = Signal()
        m.d.sync += [data3.eq(Mux(cleared, 0, Mux(bank2, reads[1].data, reads[0].data))),
                     insert3.eq(insert2),
                     addr3.eq(addr2), slot3.eq(slot2), rank3.eq(rank2), bank3.eq(bank2)]
        # (valid, bank, address, word) of the updates 1, 2, 3 cycles ago; the newest is stage W
        written = [(Signal(name=f"written_valid_{age}"), Signal(name=f"written_bank_{age}"),
                    Signal(p - 4, name=f"written_addr_{age}"),
                    Signal(word_bits, name=f"written_word_{age}")) for age in (1, 2, 3)]
        sources = [(insert3, bank3, addr3)] + [entry[:3] for entry in written[:-1]]
        matches = [Signal(name=f"forward_{age}") for age in (1, 2, 3)]
        # an update of the other bank is not this word's history, whatever its address
        m.d.sync += [match.eq(valid & (bank == bank2) & (addr == addr2))
                     for match, (valid, bank, addr) in zip(matches, sources)]

        # stage 4: modify, forwarding the most recent matching update
        current = data3
        for match, (*_, word) in reversed(list(zip(matches, written))):
            current = Mux(match, word, current)
        updated = Signal(word_bits)
        m.d.comb += updated.eq(current)
        for slot in range(REGISTERS_PER_WORD):
            with m.If((slot3 == slot) & (rank3 > current[slot * w:(slot + 1) * w])):
                m.d.comb += updated[slot * w:(slot + 1) * w].eq(rank3)
        m.d.sync += [target.eq(source) for target, source
                     in zip(written[0], (insert3, bank3, addr3, updated))]
        for older, newer in zip(written[1:], written[:-1]):
            m.d.sync += [o.eq(n) for o, n in zip(older, newer)]

        # stage W: write the registered update into its bank; a drained word is cleared in the
        # cycle after its read (no update of that bank is in flight then)
        valid_w, bank_w, addr_w, word_w = written[0]
        for number, (write, clear) in enumerate(zip(writes, clears)):
            m.d.comb += [write.addr.eq(Mux(clear, clear_addr, addr_w)),
                         write.data.eq(Mux(clear, 0, word_w)),
                         write.en.eq(clear | (valid_w & (bank_w == number)))]

        drained_bank = Signal()
        m.d.sync += drained_bank.eq(self.drain_bank)
        m.d.comb += self.drain_data.eq(Mux(drained_bank, reads[1].data, reads[0].data))
        return m
