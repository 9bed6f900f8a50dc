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
    C   the set as operations up to t-2 left it; compare every way's tag (registered)
    U   update (the new row registered)
    W   write the registered row back (commits this cycle)

The row read for operation t misses the writes of t-1, t-2 and t-3 (non-transparent read;
their writes commit in the cycles of t's stages R, C and U). Stage C takes the row t-2 wrote
when the set matches, else the row t-3 wrote when that set matches (both rows registers, so the
choice is one LUT); stage U takes the row t-1 wrote, and its hits are stage C's except in the
way t-1 recorded into, where the hit is "same k-mer as t-1" (compared in stage C). So stage U
starts from registers: the row select, the target way and the new row are a few LUTs, and the
set's read-modify-write loop no longer runs through a 2k-bit compare; the memory's write port
sees registers only (writing in U put the whole decision in front of the LUT-RAM's data input:
7-8 LUT levels in the whole motif kernel).

Latency 5 cycles (the write of an operation commits in its fifth cycle), one operation per
cycle for every input, no backpressure. ``clear`` empties every set (``sets`` cycles, ``busy``).
``readback_address``/``readback_row`` read a row with 1 cycle latency when no operation is in
flight (the read port is shared).
"""

from amaranth.hdl import Array, Cat, Const, Module, Mux, Signal
from amaranth.lib import data, enum, stream, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from kmerspec.params import check_int

from ..common.pipeline import tree_equal
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


#: rows of up to this many valid and victim bits take their miss way from a lookup table
_TABLE_INPUTS = 8


def _miss_way(valid: int, victim: int, ways: int):
    """(one-hot way, full) of a set with these valid bits and victim: the hardware's rule."""
    free = ~valid & ((1 << ways) - 1)
    if free:
        return free & -free, 0
    return (1 << victim if victim < ways else 0), 1


def _after_fill(valid: int, victim: int, ways: int):
    """(valid, victim) after a RECORD that misses: the lowest free way, else the victim advances."""
    free = ~valid & ((1 << ways) - 1)
    if free:
        return valid | (free & -free), victim
    return valid, 0 if victim == ways - 1 else victim + 1


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

    latency = 5

    def elaborate(self, platform):
        m = Module()
        m.submodules.memory = memory = self.memory
        ways = self._ways

        def lowest(bits):
            return Cat(bits[index] & ~bits[:index].any() for index in range(ways))

        def miss_way(free, victim):
            """The way a missing RECORD takes (one-hot: the lowest free way, else the round-robin
            victim) in a set with these free ways and this victim, and whether the set is full."""
            way = Signal(ways)
            m.d.comb += way.eq(Mux(free.any(), lowest(free),
                                   Cat(victim == index for index in range(ways))))
            return way, ~free.any()

        def table(row, after_fill):
            """The same as a lookup table of the row's valid bits and victim (a few ways: one
            LUT per output bit, where the mapper made 4-5 levels of the logic form)."""
            valid_bits = Cat(entry.valid for entry in row.ways)
            words = []
            for index in range(1 << (ways + len(row.next_victim))):
                valid, victim = index & ((1 << ways) - 1), index >> ways
                if after_fill:
                    valid, victim = _after_fill(valid, victim, ways)
                way, full = _miss_way(valid, victim, ways)
                words.append(Const(way | full << ways, ways + 1))
            word = Signal(ways + 1, name="after_fill_miss" if after_fill else "miss_way")
            m.d.comb += word.eq(Array(words)[Cat(valid_bits, row.next_victim)])
            return word[:ways], word[ways]

        def miss_way_of(row):
            if ways + len(row.next_victim) <= _TABLE_INPUTS:
                return table(row, after_fill=False)
            return miss_way(~Cat(entry.valid for entry in row.ways), row.next_victim)

        def miss_way_after_fill(row):
            """:func:`miss_way_of` the row a RECORD that misses ``row`` leaves: it takes the lowest
            free way, or in a full set the victim, and the victim pointer advances."""
            if ways + len(row.next_victim) <= _TABLE_INPUTS:
                return table(row, after_fill=True)
            free = ~Cat(entry.valid for entry in row.ways)
            victim = row.next_victim
            advanced = Mux(victim == ways - 1, 0, victim + 1)
            return miss_way(free & ~lowest(free), Mux(free.any(), victim, advanced))

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
        valid_c = Signal()
        op_c = Signal.like(op_r)
        set_index_c = Signal(self._set_bits)
        m.d.sync += [valid_c.eq(valid_r), op_c.eq(op_r), set_index_c.eq(set_index_r)]
        valid_u = Signal()
        op_u = Signal.like(op_r)
        set_index_u = Signal(self._set_bits)
        # the row stage U made, registered (stage W writes it), and the one before it
        last_row = Signal(self.layout)
        older_row = Signal(self.layout)
        valid_w = Signal()
        set_index_w = Signal(self._set_bits)
        # operation t-2 (now in U) or t-3 (now in W) writes the set operation t reads: the read
        # misses that write
        after_two, after_three = Signal(name="after_two"), Signal(name="after_three")
        m.d.sync += [after_two.eq(valid_u & ~self.busy & (set_index_u == set_index_r)),
                     after_three.eq(valid_w & ~self.busy & (set_index_w == set_index_r))]

        # "same k-mer as the operation before", in two steps: the words' 3-bit chunks compared
        # as the operation enters stage C (registered), their AND as it enters U (one compare in
        # one cycle, its chunks on kept wires, was a 7-LUT chain in the whole kernel's mapping)
        same_chunks = Signal(-(-self._key_bits // 3), name="same_chunks")
        m.d.sync += same_chunks.eq(Cat(op_r.word[low:low + 3] == op_c.word[low:low + 3]
                                       for low in range(0, self._key_bits, 3)))

        # stage C: the set as operations up to t-2 left it, and every way's tag compared with it
        base_c = Signal(self.layout)
        m.d.comb += base_c.eq(Mux(after_two, last_row, Mux(after_three, older_row, read.data)))
        base_hits_c = Cat(entry.valid & tree_equal(m, entry.kmer, op_c.word, f"base_hit{way}")
                          for way, entry in enumerate(base_c.ways))
        base_u = Signal(self.layout)
        base_hits = Signal(ways)
        # the way a RECORD that misses takes (one-hot) and whether the set is full, for the row
        # of stage C and (below) for the row stage U writes: registered beside the rows
        base_miss, base_full = Signal(ways, name="base_miss"), Signal(name="base_full")
        last_miss, last_full = Signal(ways, name="last_miss"), Signal(name="last_full")
        # each candidate row's own, then the row select (the select first put it in front of the
        # lowest-free-way search: 5 levels from the memory's output)
        candidates = [miss_way_of(row) for row in (last_row, older_row, read.data)]

        def select(field):
            newest, older, read_row = (candidate[field] for candidate in candidates)
            return Mux(after_two, newest, Mux(after_three, older, read_row))
        m.d.sync += [base_miss.eq(select(0)), base_full.eq(select(1))]
        # operation t-1 (now in U) writes the same set: stage U takes its row instead, and the
        # way t-1 records into holds t-1's k-mer, so there the hit is "same k-mer as t-1"
        after_one = Signal()
        same_kmer = Signal()
        m.d.sync += [valid_u.eq(valid_c), op_u.eq(op_c), set_index_u.eq(set_index_c),
                     base_u.eq(base_c), base_hits.eq(base_hits_c),
                     after_one.eq(valid_u & ~self.busy & (set_index_u == set_index_c)),
                     same_kmer.eq(same_chunks.all())]

        # stage U: every input of the update a register or one LUT from registers
        last_recorded = Signal(ways)   # one-hot: the way stage U recorded into last cycle
        row = Signal(self.layout)
        m.d.comb += row.eq(Mux(after_one, last_row, base_u))
        # hits, the miss way and (below) each way's write selects are wires of their own: each
        # is then one LUT of registers or of them (left to the mapper, the loop from
        # ``last_recorded`` back to ``last_row`` took 7 LUTs in the whole motif kernel)
        hits = Signal(ways, attrs={"keep": 1})
        for way in range(ways):
            m.d.comb += hits[way].eq(Mux(after_one & last_recorded[way], same_kmer,
                                         base_hits[way]))
        hit = hits.any()
        full = Mux(after_one, last_full, base_full)
        miss = Signal(ways, attrs={"keep": 1})
        m.d.comb += miss.eq(Mux(after_one, last_miss, base_miss))
        # the way a RECORD writes, one-hot: the hit is one-hot already, as a k-mer enters a set
        # only when it misses there, so no set holds it twice (a "lowest hit" search shared its
        # prefix ORs with ``hit``: a chain of LUT2s in the whole kernel's mapping)
        target = Signal(ways)
        m.d.comb += target.eq(Mux(hit, hits, miss))

        # each way's control count plus one (saturating: all ones stay). The halves count side by
        # side (two short carry chains instead of one long one); the high half's carry out only
        # comes when every bit was one.
        def bumped(count):
            half = CONTROL_COUNT_BITS // 2
            low, high = count[:half] + 1, count[half:] + 1
            low_carry, saturated = low[half], low[half] & high[half]
            return Cat(low[:half], Mux(low_carry, high[:half], count[half:])) | \
                saturated.replicate(CONTROL_COUNT_BITS)

        is_record = op_u.op == StoreOp.RECORD
        new_row = Signal(self.layout)
        m.d.comb += new_row.next_victim.eq(row.next_victim)
        with m.If(is_record & ~hit & full):
            m.d.comb += new_row.next_victim.eq(
                Mux(row.next_victim == ways - 1, 0, row.next_victim + 1))
        for way in range(ways):
            old, new = row.ways[way], new_row.ways[way]
            count = Signal(CONTROL_COUNT_BITS, name=f"bumped_count{way}")
            m.d.comb += count.eq(bumped(old.control_count))
            # the selects of the write data as wires of their own, so the data bits are one LUT
            # after them and after the counts' carry chains
            written = Signal(name=f"written{way}", attrs={"keep": 1})
            counted = Signal(name=f"counted{way}", attrs={"keep": 1})
            emptied = Signal(name=f"emptied{way}", attrs={"keep": 1})
            m.d.comb += [written.eq(is_record & target[way]), counted.eq(~is_record & hits[way]),
                         emptied.eq(is_record & ~hit & miss[way])]
            m.d.comb += [
                new.valid.eq(old.valid | written),
                new.kmer.eq(Mux(written, op_u.word, old.kmer)),
                new.value.eq(Mux(written, op_u.value, old.value)),
                new.control_count.eq(Mux(counted, count, Mux(emptied, 0, old.control_count))),
            ]

        # clear and write-back
        clear_address = Signal(self._set_bits)
        with m.If(self.clear & ~self.busy):
            m.d.sync += [self.busy.eq(1), clear_address.eq(0)]
        with m.Elif(self.busy):
            m.d.sync += clear_address.eq(clear_address + 1)
            with m.If(clear_address == self._sets - 1):
                m.d.sync += self.busy.eq(0)
        # the miss way of the new row: its row's own, or after a fill its row's after-fill one
        # (each from registers), so the loop back to the registers is ``hit`` and one select
        # instead of the new row's valid bits through the lowest-free-way search
        # (the after-fill ones of the registered rows: a function of their valid bits and
        # victim; in stage C, behind its row select, they made a 7-level path)
        last_fill_miss, last_fill_full = miss_way_after_fill(last_row)
        base_fill_miss, base_fill_full = miss_way_after_fill(base_u)
        fill_miss = Mux(after_one, last_fill_miss, base_fill_miss)
        fill_full = Mux(after_one, last_fill_full, base_fill_full)
        fills = is_record & ~hit
        m.d.sync += [last_row.eq(new_row), last_miss.eq(Mux(fills, fill_miss, miss)),
                     last_full.eq(Mux(fills, fill_full, full)),
                     last_recorded.eq(Mux(valid_u & is_record, target, 0)),
                     older_row.eq(last_row), valid_w.eq(valid_u), set_index_w.eq(set_index_u)]

        # stage W
        write = memory.write_port()
        with m.If(self.busy):
            m.d.comb += [write.addr.eq(clear_address), write.data.eq(0), write.en.eq(1)]
        with m.Else():
            m.d.comb += [write.addr.eq(set_index_w), write.data.eq(last_row),
                         write.en.eq(valid_w)]
        return m
