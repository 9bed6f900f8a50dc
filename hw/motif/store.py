"""Heavy-hitter store: set-associative (k-mer, estimate, control count) table (SPEC section 5).

Rules (:class:`kmerspec.golden.motif.HeavyHitterStore`): set = H3 of the k-mer; full tag compare.
``RECORD (x, e)``: hit -> the way's value becomes e; miss with a free way -> the lowest free way
gets (x, e, control count 0); miss in a full set -> the way at the set's round-robin pointer is
replaced and the pointer advances (mod ways). ``COUNT x``: on a hit the way's control count
adds 1 (32-bit saturating); a miss changes nothing.

A set is one memory row (:func:`set_layout`: every way plus the round-robin pointer), so each
operation is one read-modify-write of one row. Pipeline::

    H   H3 set index (registered)
    R   read the set's row
    U   compare all ways, update, write the row back (commits this cycle)

The row read for operation t does not see the write of operation t-1 (non-transparent read),
so stage U takes the row it wrote last cycle instead when the set index matches.

Latency 3 cycles (the write of an operation commits in its third cycle), one operation per
cycle for every input, no backpressure. ``clear`` empties every set (``sets`` cycles, ``busy``).
``readback_address``/``readback_row`` read a row with 1 cycle latency when no operation is in
flight (the read port is shared).
"""

from amaranth.hdl import Module, Mux, Signal
from amaranth.lib import data, enum, stream, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from kmerspec.params import check_int

from .h3 import H3Hash

__all__ = ["StoreOp", "CONTROL_COUNT_BITS", "entry_layout", "set_layout", "store_op_layout",
           "HeavyHitterStore"]

CONTROL_COUNT_BITS = 32


class StoreOp(enum.Enum, shape=1):
    RECORD = 0
    COUNT = 1


def entry_layout(key_bits: int, value_bits: int) -> data.StructLayout:
    return data.StructLayout({"valid": 1, "kmer": key_bits, "value": value_bits,
                              "control_count": CONTROL_COUNT_BITS})


def set_layout(key_bits: int, value_bits: int, ways: int) -> data.StructLayout:
    return data.StructLayout({
        "ways": data.ArrayLayout(entry_layout(key_bits, value_bits), ways),
        "next_victim": max(1, (ways - 1).bit_length()),
    })


def store_op_layout(key_bits: int, value_bits: int) -> data.StructLayout:
    return data.StructLayout({"op": StoreOp, "word": key_bits, "value": value_bits})


class HeavyHitterStore(wiring.Component):
    """``sets`` x ``ways`` heavy-hitter store for ``key_bits``-bit k-mers.

    Parameters
    ----------
    key_bits : int
        Key width (2k).
    value_bits : int
        Width of the recorded estimate (the Count-Min counter width).
    sets, ways : int
        Geometry; ``sets`` is a power of two.
    seed_matrix : list of int
        H3 seed matrix of the set index: ``key_bits`` words of log2(sets) bits.

    Members
    -------
    i : In(stream.Signature(store_op_layout, always_ready=True))
    clear : In(1), busy : Out(1)
    readback_address : In(log2 sets), readback_row : Out(set_layout)
        The row of ``readback_address`` presented one cycle earlier.

    The state is :attr:`memory` (``memory.data[set]`` is a :func:`set_layout` value).
    """

    def __init__(self, key_bits: int, value_bits: int, sets: int, ways: int, seed_matrix):
        check_int("key_bits", key_bits, 1, 64)
        check_int("value_bits", value_bits, 1, 32)
        check_int("sets", sets, 1, 1 << 16)
        check_int("ways", ways, 1, 64)
        if sets & (sets - 1):
            raise ValueError(f"sets must be a power of two, not {sets!r}")
        self._key_bits = key_bits
        self._value_bits = value_bits
        self._sets = sets
        self._ways = ways
        self._set_bits = max(1, (sets - 1).bit_length())
        index_bits = (sets - 1).bit_length()
        self._hash = H3Hash(key_bits, max(1, index_bits), [seed_matrix]) if index_bits else None
        self.layout = set_layout(key_bits, value_bits, ways)
        self.memory = Memory(shape=self.layout, depth=sets, init=[])
        super().__init__({
            "i": In(stream.Signature(store_op_layout(key_bits, value_bits), always_ready=True)),
            "clear": In(1),
            "busy": Out(1),
            "readback_address": In(self._set_bits),
            "readback_row": Out(self.layout),
        })

    latency = 3

    def elaborate(self, platform):
        m = Module()
        m.submodules.memory = memory = self.memory
        ways = self._ways

        # stage H
        set_index_r = Signal(self._set_bits)
        if self._hash is not None:
            m.submodules.hash = hasher = self._hash
            m.d.comb += [hasher.key.eq(self.i.payload.word), set_index_r.eq(hasher.hashes[0])]
        valid_r = Signal()
        op_r = Signal(store_op_layout(self._key_bits, self._value_bits))
        m.d.sync += [valid_r.eq(self.i.valid & ~self.busy), op_r.eq(self.i.payload)]

        # stage R
        read = memory.read_port()
        m.d.comb += read.addr.eq(Mux(valid_r, set_index_r, self.readback_address))
        m.d.comb += self.readback_row.eq(read.data)
        valid_u = Signal()
        op_u = Signal.like(op_r)
        set_index_u = Signal(self._set_bits)
        m.d.sync += [valid_u.eq(valid_r), op_u.eq(op_r), set_index_u.eq(set_index_r)]

        # stage U
        last_valid = Signal()
        last_index = Signal(self._set_bits)
        last_row = Signal(self.layout)
        row = Signal(self.layout)
        m.d.comb += row.eq(Mux(last_valid & (last_index == set_index_u), last_row, read.data))

        hits = Signal(ways)
        for way in range(ways):
            entry = row.ways[way]
            m.d.comb += hits[way].eq(entry.valid & (entry.kmer == op_u.word))
        hit = hits.any()
        hit_way = Signal(range(ways))
        free_way = Signal(range(ways))
        has_free = Signal()
        for way in reversed(range(ways)):   # the lowest index wins
            with m.If(hits[way]):
                m.d.comb += hit_way.eq(way)
            with m.If(~row.ways[way].valid):
                m.d.comb += [free_way.eq(way), has_free.eq(1)]

        new_row = Signal(self.layout)
        m.d.comb += new_row.eq(row)
        max_control = (1 << CONTROL_COUNT_BITS) - 1
        with m.If(op_u.op == StoreOp.RECORD):
            target = Signal(range(ways))
            with m.If(hit):
                m.d.comb += target.eq(hit_way)
            with m.Elif(has_free):
                m.d.comb += target.eq(free_way)
            with m.Else():
                m.d.comb += target.eq(row.next_victim)
                m.d.comb += new_row.next_victim.eq(
                    Mux(row.next_victim == ways - 1, 0, row.next_victim + 1))
            for way in range(ways):
                with m.If(target == way):
                    entry = new_row.ways[way]
                    m.d.comb += [entry.valid.eq(1), entry.kmer.eq(op_u.word),
                                 entry.value.eq(op_u.value)]
                    with m.If(~hit):
                        m.d.comb += entry.control_count.eq(0)
        with m.Else():
            for way in range(ways):
                count = row.ways[way].control_count
                with m.If(hits[way] & (count != max_control)):
                    m.d.comb += new_row.ways[way].control_count.eq(count + 1)

        # clear and write-back
        clear_address = Signal(self._set_bits)
        with m.If(self.clear & ~self.busy):
            m.d.sync += [self.busy.eq(1), clear_address.eq(0)]
        with m.Elif(self.busy):
            m.d.sync += clear_address.eq(clear_address + 1)
            with m.If(clear_address == self._sets - 1):
                m.d.sync += self.busy.eq(0)
        write = memory.write_port()
        with m.If(self.busy):
            m.d.comb += [write.addr.eq(clear_address), write.data.eq(0), write.en.eq(1)]
        with m.Else():
            m.d.comb += [write.addr.eq(set_index_u), write.data.eq(new_row), write.en.eq(valid_u)]
        m.d.sync += [last_valid.eq(valid_u & ~self.busy), last_index.eq(set_index_u),
                     last_row.eq(new_row)]
        return m
