"""Priority Queue Array: one insertion per cycle into 2^R queues of n (tag, value) entries.

Rules (``kmerspec.golden.pqa``): a queue is sorted by value, descending; value 0 is empty and never
matches. Insert (tag, e): the entry with this tag, else the last entry if e > its value, is taken
out (else the insertion is discarded), and (tag, e) is put back after every remaining entry whose
value is >= e. So every output slot j receives one of {slot j - 1, slot j, slot j + 1, the new
entry}: with ``taken`` the slot taken out and ``place`` the new entry's position,

* place <= taken: slots below place keep, slot place gets the new entry, slots up to taken
  take their upper neighbour (j - 1), the rest keep;
* place > taken: slots from taken up to place - 1 take their lower neighbour (j + 1).

The n slots are n memories (2^R words of tag + value, synchronous read), all read at the queue
index in the cycle the insertion is accepted (stage 0); stage 1 receives the words (and decides
the forwarding matches), stage 2 takes them from the BRAM output register, compares the tag and
value against all n entries in parallel and decides the whole queue, stage W writes it back from
registers. The writes of the insertions in stage 2 during the three cycles before an insertion's
own are not visible to its read yet, so the last three written queues are kept and the most recent
one with the same queue index is forwarded: the same queue in every cycle is exact.

Draining reads the queues 0 .. 2^R - 1 out in order, one per cycle under ``ready``, and writes
each back empty as it is read, so the PQA is ready for the next genome when the drain ends.
"""

from amaranth.hdl import Cat, Const, Module, Mux, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from kmerspec.params import check_int


__all__ = ["entry_layout", "queue_layout", "insert_layout", "PqaInsert", "VALUE_BITS"]

VALUE_BITS = 32


def entry_layout(R: int) -> data.StructLayout:
    return data.StructLayout({"tag": 32 - R, "value": VALUE_BITS})


def queue_layout(R: int, n: int) -> data.StructLayout:
    """One drained queue: its n entries (slot 0 = largest value) and ``last`` on queue 2^R - 1."""
    return data.StructLayout({"entries": data.ArrayLayout(entry_layout(R), n), "last": 1})


def insert_layout() -> data.StructLayout:
    """The row-0 hash h0 of the key (queue = low R bits, tag = the rest) and its estimate."""
    return data.StructLayout({"hash": 32, "value": VALUE_BITS})


class PqaInsert(wiring.Component):
    """2^R queues x n entries with a one-cycle insert network and a drain port.

    Parameters
    ----------
    R : int
        log2 of the number of queues, 1 to 20.
    n : int
        Entries per queue, 1 to 64.

    Members
    -------
    i : In(stream.Signature(insert_layout()))
        One insertion per cycle (value >= 1); ``ready`` is low only while draining.
    drain : In(1)
        Pulse to start draining; only when no insertion is in flight (:attr:`latency` cycles
        after the last accepted one).
    busy : Out(1)
        High from the drain pulse until every queue has been read out.
    o : Out(stream.Signature(queue_layout(R, n)))
        The drained queues in order, one per cycle while ``ready`` is high.

    Insertions take effect :attr:`latency` = 4 cycles after acceptance (was 2 before the
    BRAM output register and the registered write; read it from the attribute).
    """

    latency = 4

    def __init__(self, R: int = 12, n: int = 8):
        check_int("R", R, 1, 20)
        check_int("n", n, 1, 64)
        self.R = R
        self.n = n
        super().__init__({
            "i": In(stream.Signature(insert_layout())),
            "drain": In(1),
            "busy": Out(1),
            "o": Out(stream.Signature(queue_layout(R, n))),
        })
        #: one memory per slot; ``slots[j].data[q]`` is entry j of queue q (tests read it)
        self.slots = [Memory(shape=entry_layout(R), depth=1 << R, init=[]) for _ in range(n)]

    def elaborate(self, platform):
        m = Module()
        R, n = self.R, self.n
        queue_bits = R
        queue_count = 1 << R

        reads, writes = [], []
        for j, memory in enumerate(self.slots):
            m.submodules[f"slot{j}"] = memory
            reads.append(memory.read_port(transparent_for=()))
            writes.append(memory.write_port())

        # drain: read queue `drain_address`, write it empty in the same cycle (read sees old data)
        drain_address = Signal(queue_bits + 1)
        drain_advance = Signal()
        data_queue = Signal(queue_bits)
        m.d.comb += drain_advance.eq(self.busy & (~self.o.valid | self.o.ready))
        with m.If(self.busy):
            with m.If(drain_advance):
                with m.If(drain_address == queue_count):
                    m.d.sync += [self.busy.eq(0), self.o.valid.eq(0)]
                with m.Else():
                    m.d.sync += [drain_address.eq(drain_address + 1), self.o.valid.eq(1),
                                 data_queue.eq(drain_address)]
        with m.Elif(self.drain):
            m.d.sync += [self.busy.eq(1), drain_address.eq(0)]
        draining_read = drain_advance & (drain_address != queue_count)
        m.d.comb += [
            self.o.payload.last.eq(data_queue == queue_count - 1),
            self.o.payload.entries.eq(Cat(*(read.data for read in reads))),
        ]

        # insertion stage 0: accept and read
        accepted = self.i.valid & self.i.ready
        m.d.comb += self.i.ready.eq(~self.busy)
        stage_valid = Signal()
        stage_queue = Signal(queue_bits)
        stage_tag = Signal(32 - R)
        stage_value = Signal(VALUE_BITS)
        m.d.sync += [
            stage_valid.eq(accepted),
            stage_queue.eq(self.i.payload.hash[:R]),
            stage_tag.eq(self.i.payload.hash[R:]),
            stage_value.eq(self.i.payload.value),
        ]
        for read in reads:
            m.d.comb += [
                read.addr.eq(Mux(self.busy, drain_address, self.i.payload.hash[:R])),
                read.en.eq(accepted | draining_read),
            ]

        # insertion stage 1: the memory words arrive (registered into the BRAM output register
        # for stage 2); the forwarding matches of stage 2 are decided here and registered,
        # against the writes that will be 1 .. 3 cycles old then (the read of stage 0 misses
        # the writes of the insertions in stage 2 during the three cycles before its own: stage
        # W writes one cycle after stage 2)
        data1 = [read.data for read in reads]
        valid1, queue1, tag1, value1 = stage_valid, stage_queue, stage_tag, stage_value
        # (valid, queue, entries) of the queues written 1, 2, 3 cycles ago; the newest is W's
        written = [(Signal(name=f"written_valid_{age}"), Signal(queue_bits, name=f"written_queue_{age}"),
                    [Signal(entry_layout(R), name=f"written_entry_{age}_{j}") for j in range(n)])
                   for age in (1, 2, 3)]
        valid2 = Signal()
        queue2 = Signal(queue_bits)
        store2 = Signal()
        sources = [(valid2 & store2, queue2)] + [(v, q) for v, q, _ in written[:-1]]
        matches = [Signal(name=f"forward_{age}") for age in (1, 2, 3)]
        m.d.sync += [match.eq(valid & (queue == queue1)) for match, (valid, queue)
                     in zip(matches, sources)]

        # insertion stage 2: forward, compare against every entry, decide the queue
        tag2 = Signal(32 - R)
        value2 = Signal(VALUE_BITS)
        data2 = [Signal(entry_layout(R), name=f"data2_{j}") for j in range(n)]
        m.d.sync += [valid2.eq(valid1), queue2.eq(queue1), tag2.eq(tag1), value2.eq(value1)]
        m.d.sync += [d2.eq(d1) for d2, d1 in zip(data2, data1)]
        stage_valid, stage_queue, stage_tag, stage_value = valid2, queue2, tag2, value2
        entries = []
        for j in range(n):
            entry = Signal(entry_layout(R), name=f"entry{j}")
            current = data2[j]
            for match, (_, _, words) in reversed(list(zip(matches, written))):
                current = Mux(match, words[j], current)
            m.d.comb += entry.eq(current)
            entries.append(entry)

        hit = Cat(*((entry.value != 0) & (entry.tag == stage_tag) for entry in entries))
        at_least = Cat(*(entry.value >= stage_value for entry in entries))
        evict = ~hit.any() & (stage_value > entries[-1].value)
        store = hit.any() | evict
        # taken as a one-hot vector: the hit slot, else the last slot
        taken = Mux(hit.any(), hit, Const(1 << (n - 1), n))
        # place = number of remaining entries with value >= e (a prefix of the sorted queue)
        remaining_at_least = at_least & ~taken
        place = Signal(range(n + 1))
        m.d.comb += place.eq(sum(remaining_at_least[j] for j in range(n)))
        taken_index = Signal(range(n))
        for j in range(n):
            with m.If(taken[j]):
                m.d.comb += taken_index.eq(j)

        new_entry = Signal(entry_layout(R))
        m.d.comb += [new_entry.tag.eq(stage_tag), new_entry.value.eq(stage_value)]
        m.d.comb += store2.eq(store)
        results = []
        for j in range(n):
            result = Signal(entry_layout(R), name=f"result{j}")
            upper = entries[j - 1] if j > 0 else entries[j]
            lower = entries[j + 1] if j + 1 < n else entries[j]
            with m.If(j == place):
                m.d.comb += result.eq(new_entry)
            with m.Elif((place < j) & (j <= taken_index)):
                m.d.comb += result.eq(upper)
            with m.Elif((taken_index <= j) & (j < place)):
                m.d.comb += result.eq(lower)
            with m.Else():
                m.d.comb += result.eq(entries[j])
            results.append(result)
        m.d.sync += [written[0][0].eq(stage_valid & store), written[0][1].eq(stage_queue)]
        m.d.sync += [w.eq(r) for w, r in zip(written[0][2], results)]
        for older, newer in zip(written[1:], written[:-1]):
            m.d.sync += [older[0].eq(newer[0]), older[1].eq(newer[1])]
            m.d.sync += [o.eq(nw) for o, nw in zip(older[2], newer[2])]

        # stage W: write the registered queue back (the drain writes instead while busy)
        for j, write in enumerate(writes):
            with m.If(self.busy):
                m.d.comb += [write.addr.eq(drain_address), write.data.eq(0),
                             write.en.eq(draining_read)]
            with m.Else():
                m.d.comb += [write.addr.eq(written[0][1]), write.data.eq(written[0][2][j]),
                             write.en.eq(written[0][0])]
        return m
