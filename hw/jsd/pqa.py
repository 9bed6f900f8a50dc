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
index in the cycle the insertion is accepted (stage 0); stage 1 receives the words into the BRAM
output register; stage A takes the queue from there, or the most recent of the queues written
2 .. 4 insertions (cycles) earlier whose index matches (flags decided in stage 1, registered), and
compares the new tag and value with its n entries; stage B decides the whole queue from the
registered compare results and registers it; stage W writes it back. The insertion of the
cycle before (distance 1), whose queue B is deciding only now, is covered without a single-cycle
loop through the compares: stage A also compares the new tag and value with that insertion's
entries and with its new entry, and if the queue is the same, stage B picks each compare result
through the same choice (new entry, upper, lower or own neighbour) that made the previous queue,
and the entries from its registered result. So the same queue in every cycle is exact, and no
path runs from a decision through a compare back to a decision.

The decision works on the compare bits alone: with ``at_least`` (value >= e, a prefix of the
sorted queue, K entries) and the hit slot T (else the last slot), the new entry goes to K - 1 if
T < K, else to K; slots T .. K - 2 take their lower neighbour or slots K + 1 .. T their upper
one. An insertion that stores nothing writes its queue back unchanged. Entries carry an
``occupied`` bit (value != 0) in the memory and the pipeline (the new entry sets it, moves keep
it), so a tag hit is a 25-input AND with no zero test of a value behind the memory. Timing:
docs/timing.md (``python bench/timing_parts.py --parts pqa``).

Draining reads the queues 0 .. 2^R - 1 out in order, one per cycle under ``ready``, and writes
each back empty in the cycle after its read (while the next queue is read), so the PQA is ready
for the next genome when the drain ends. A
drained queue leaves from a register of its bank (taken from the memory's output in the cycle
after its read: the first one is valid 3 cycles after the drain pulse), so a reader's select over
the banks starts from registers. The
drain's write clears only the ``occupied`` bits (its tag and value bits are those the insert
pipeline writes to its own bank in that cycle: no per-bank select of 52 zero bits), so an entry
read from the memory is zeroed where it is not occupied, on its way into stage A, and the
drained queues carry ``occupied`` for their reader to do the same.

No result depends on what a slot memory returns when one address is read and written in the
same cycle (UltraRAM, block RAM in READ_FIRST or WRITE_FIRST mode and LUT RAM differ there): the
drain never reads the queue it writes (the write is a cycle behind the read), no insertion reads
a bank while it drains (nor until its last clear is written: ``busy`` falls at least 2 cycles
later), and an insertion whose read meets a write of the same queue (distance 4) takes the
forwarded queue, not the memory word. ``tests/test_power_on.py`` runs the PQA with write-first
(transparent) memories.

Banks (``banks`` > 1: the JSD builder's lanes, two banks each for their double-buffered
records): each bank has its own slot memories, drain port and ``busy`` bit, and every insertion
names its bank; the insert network is shared. The bank travels as the top bits of the queue
index, so forwarding never crosses banks; the memory word is selected by the bank on its way
into stage 1's register. So any bank takes insertions while others drain, for the network of one
PQA and the memories of all.
"""

from functools import cached_property

from amaranth.hdl import Array, Cat, Const, Module, Mux, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from kmerspec.params import check_int

from hw.common.pipeline import bank_bits, one_hot_select, tree_equal


__all__ = ["entry_layout", "slot_layout", "queue_layout", "insert_layout", "slot_memory_attrs", "PqaInsert",
           "VALUE_BITS"]

VALUE_BITS = 32


def entry_layout(R: int) -> data.StructLayout:
    return data.StructLayout({"tag": 32 - R, "value": VALUE_BITS})


def slot_layout(R: int) -> data.StructLayout:
    """An entry as stored and in the insert pipeline: with ``occupied`` (value != 0), so a tag
    compare does not wait for a 32-bit zero test. In the memory an entry whose ``occupied`` is 0
    is empty whatever its tag and value (a drain clears only that bit)."""
    return data.StructLayout({"tag": 32 - R, "value": VALUE_BITS, "occupied": 1})


def queue_layout(R: int, n: int) -> data.StructLayout:
    """One drained queue: its n entries (slot 0 = largest value) as stored (an entry whose
    ``occupied`` is 0 is empty: read its tag and value as 0) and ``last`` on queue 2^R - 1."""
    return data.StructLayout({"entries": data.ArrayLayout(slot_layout(R), n), "last": 1})


def insert_layout(banks: int = 1) -> data.StructLayout:
    """The row-0 hash h0 of the key (queue = low R bits, tag = the rest), its estimate, and with
    more than one bank the insertion's ``bank``."""
    fields = {"hash": 32, "value": VALUE_BITS}
    if banks > 1:
        fields["bank"] = bank_bits(banks)
    return data.StructLayout(fields)


#: Depth of one UltraScale+ UltraRAM (URAM288: 4K words of 72 bits, one slot of 53 bits).
URAM_DEPTH = 4096


def slot_memory_attrs(R: int) -> dict:
    """A slot of 2^R >= 4K entries goes to UltraRAM (one URAM288 instead of six BRAM36, as the
    JSD thesis placed its PQAs: the default builder's two banks then fit beside the F1 shell);
    smaller slots stay in block or distributed RAM. Vivado and Yosys both read ``ram_style``.
    Nothing is assumed of the contents at configuration: the builder clears every bank after
    every reset."""
    return {"ram_style": "ultra"} if (1 << R) >= URAM_DEPTH else {}


class PqaInsert(wiring.Component):
    """2^R queues x n entries with a one-cycle insert network and a drain port.

    Parameters
    ----------
    R : int
        log2 of the number of queues, 1 to 20.
    n : int
        Entries per queue, 1 to 64.
    banks : int
        1 to 128 banks of queues sharing the insert network (module docstring).

    Members
    -------
    i : In(stream.Signature(insert_layout(banks)))
        One insertion per cycle (value >= 1); ``ready`` is low only while the insertion's bank
        drains.
    drain : In(banks)
        Pulse bit b to start draining bank b; only when no insertion into bank b is in flight
        (:attr:`latency` cycles after the last accepted one).
    busy : Out(banks)
        Bit b is high from bank b's drain pulse until every queue of bank b has been read out.
    o : Out(stream.Signature(queue_layout(R, n))), with more banks ``.array(banks)``
        The drained queues of a bank in order, one per cycle while ``ready`` is high (with more
        banks ``o[b]`` is bank b's).

    Insertions take effect :attr:`latency` = 5 cycles after acceptance (2 before the BRAM
    output register and the registered write, 4 before the split of the insert network into A
    and B; read it from the attribute).
    """

    latency = 5
    #: the distances (insertions, one per cycle) at which a later insertion into the same queue
    #: reads the memory before the earlier one's write and gets the queue forwarded instead:
    #: 1 through stage B's choice, 2 .. 4 through stage A's select
    forwarded_distances = (1, 2, 3, 4)

    def __init__(self, R: int = 12, n: int = 8, *, banks: int = 1):
        check_int("R", R, 1, 20)
        check_int("n", n, 1, 64)
        check_int("banks", banks, 1, 128)
        self.R = R
        self.n = n
        self.banks = banks
        output = Out(stream.Signature(queue_layout(R, n)))
        super().__init__({
            "i": In(stream.Signature(insert_layout(banks))),
            "drain": In(banks),
            "busy": Out(banks),
            "o": output if banks == 1 else output.array(banks),
        })

    @cached_property
    def bank_slots(self) -> list:
        """One memory per slot and bank; ``bank_slots[b][j].data[q]`` is entry j of queue q in
        bank b (tests read it: tag, value and occupied)."""
        # made on first use (elaborate, or a test reading entries): a unit built only for its
        # interface holds no memory that is never elaborated
        return [[Memory(shape=slot_layout(self.R), depth=1 << self.R, init=[],
                        attrs=slot_memory_attrs(self.R)) for _ in range(self.n)]
                for _ in range(self.banks)]

    @property
    def slots(self) -> list:
        """Bank 0's slot memories."""
        return self.bank_slots[0]

    @property
    def bank_outputs(self) -> list:
        """The drain port of each bank: ``[o]`` with one bank, ``list(o)`` with more."""
        return [self.o] if self.banks == 1 else list(self.o)

    def elaborate(self, platform):
        m = Module()
        R, n, banks = self.R, self.n, self.banks
        queue_bits = R + bank_bits(banks)
        slot = slot_layout(R)
        queue_count = 1 << R

        # insertion stage 0: accept and read (the queue index carries the bank on top)
        bank_in = self.i.payload.bank if banks > 1 else Const(0, 1)
        queue_in = self.i.payload.hash[:R] if banks == 1 else Cat(self.i.payload.hash[:R],
                                                                    bank_in)
        accepted = self.i.valid & self.i.ready
        m.d.comb += self.i.ready.eq(~self.busy.bit_select(bank_in, 1))
        valid1 = Signal()
        queue1 = Signal(queue_bits)
        tag1 = Signal(32 - R)
        value1 = Signal(VALUE_BITS)
        m.d.sync += [
            valid1.eq(accepted),
            queue1.eq(queue_in),
            tag1.eq(self.i.payload.hash[R:]),
            value1.eq(self.i.payload.value),
        ]

        # per bank: the drain reads queue `drain_address` and writes it empty in the next cycle
        # (`clear_address`, `clearing`: never read and written in one cycle); otherwise the
        # insertion reads
        bank_reads, bank_writes, drains = [], [], []
        for bank, (memories, output) in enumerate(zip(self.bank_slots, self.bank_outputs)):
            busy = self.busy[bank]
            reads, writes = [], []
            for j, memory in enumerate(memories):
                m.submodules[f"slot{j}" if banks == 1 else f"bank{bank}_slot{j}"] = memory
                reads.append(memory.read_port(transparent_for=()))
                writes.append(memory.write_port())
            # the drain: read queue `drain_address` (`fetched`: the memory's output holds it),
            # then take it into the output register when that is free, so the drained queues
            # leave from registers (the memory's own output register, for Vivado)
            drain_address = Signal(R + 1, name=f"drain_address_{bank}")
            fetched = Signal(name=f"fetched_{bank}")
            fetched_queue = Signal(R, name=f"fetched_queue_{bank}")
            taken = Signal(name=f"taken_{bank}")
            draining_read = Signal(name=f"draining_read_{bank}")
            m.d.comb += [
                taken.eq(fetched & (~output.valid | output.ready)),
                draining_read.eq(busy & (drain_address != queue_count) & (~fetched | taken)),
            ]
            clear_address = Signal(R, name=f"clear_address_{bank}")
            clearing = Signal(name=f"clearing_{bank}")
            m.d.sync += [clearing.eq(draining_read), clear_address.eq(drain_address[:R])]
            with m.If(draining_read):
                m.d.sync += [drain_address.eq(drain_address + 1), fetched.eq(1),
                             fetched_queue.eq(drain_address)]
            with m.Elif(taken):
                m.d.sync += fetched.eq(0)
            with m.If(taken):
                m.d.sync += [output.valid.eq(1),
                             output.payload.last.eq(fetched_queue == queue_count - 1),
                             output.payload.entries.eq(Cat(*(read.data for read in reads)))]
            with m.Elif(output.ready):
                m.d.sync += output.valid.eq(0)
            with m.If(output.valid & output.ready & output.payload.last):
                m.d.sync += busy.eq(0)
            with m.Elif(self.drain[bank] & ~busy):
                m.d.sync += [busy.eq(1), drain_address.eq(0)]
            # while a bank drains only the drain reads it (an insertion into the other bank must
            # not move the drained word); with one bank nothing is accepted then
            read_enable = (accepted | draining_read if banks == 1
                           else Mux(busy, draining_read, accepted))
            for read in reads:
                m.d.comb += [read.addr.eq(Mux(busy, drain_address, self.i.payload.hash[:R])),
                             read.en.eq(read_enable)]
            bank_reads.append(reads)
            bank_writes.append(writes)
            drains.append((clear_address, clearing))

        def stage_signals(name):
            return (Signal(name=f"valid_{name}"), Signal(queue_bits, name=f"queue_{name}"),
                    Signal(32 - R, name=f"tag_{name}"), Signal(VALUE_BITS, name=f"value_{name}"))

        valid_a, queue_a, tag_a, value_a = stage_signals("a")
        valid_b, queue_b, tag_b, value_b = stage_signals("b")
        m.d.sync += [valid_a.eq(valid1), queue_a.eq(queue1), tag_a.eq(tag1), value_a.eq(value1),
                     valid_b.eq(valid_a), queue_b.eq(queue_a), tag_b.eq(tag_a),
                     value_b.eq(value_a)]

        # (valid, queue, entries) of the queues decided in B 1, 2, 3 cycles ago; the newest is
        # the one W writes now
        written = [(Signal(name=f"written_valid_{age}"),
                    Signal(queue_bits, name=f"written_queue_{age}"),
                    [Signal(slot, name=f"written_entry_{age}_{j}") for j in range(n)])
                   for age in (1, 2, 3)]

        # stage 1: the memory words arrive (into the BRAM output register for A); the flags of
        # the forwarding in A are decided against the insertions that will then be 2, 3, 4
        # insertions old (in B now, written 1 and 2 cycles ago). With more banks the word is
        # selected by the bank on its way into the register (behind the BRAM output); an entry
        # that is not occupied is zeroed in A (zeroed on the way in, the selected `occupied` bit
        # drove the register's reset: the UltraRAM's clock-to-out, the 16-bank select and the
        # reset were 4.03 ns in the whole builder)
        data_a = [Signal(slot, name=f"data_a_{j}") for j in range(n)]
        for j in range(n):
            words = [reads[j].data for reads in bank_reads]
            word = words[0] if banks == 1 else Array(words)[queue1[R:]]
            m.d.sync += data_a[j].eq(word)
        # The most recent match wins: the choice is registered one-hot (each written queue, or
        # the memory word), so A selects by an AND-OR instead of a chain of selects. The queue
        # compares are made a cycle earlier still, in stage 0, against the insertions then one
        # stage behind the ones they will be in stage 1 (in A, in B, written 1 cycle ago).
        sources = [(valid_a, queue_a), (valid_b, queue_b), (written[0][0], written[0][1])]
        newer_match = Const(0, 1)
        choose_written = []
        for distance, (valid, queue) in enumerate(sources, start=2):
            choose = Signal(name=f"forward_a_{distance}")
            if distance in self.forwarded_distances:
                match = Signal(name=f"match1_{distance}")
                m.d.sync += match.eq(valid & (queue == queue_in))
                m.d.sync += choose.eq(match & ~newer_match)
                newer_match = newer_match | match
            choose_written.append(choose)
        choose_memory = Signal(name="forward_a_none", init=1)
        m.d.sync += choose_memory.eq(~newer_match)

        # stage A: the queue (memory word or a forwarded written queue, the most recent wins)
        entries_a = []
        for j in range(n):
            entry = Signal(slot, name=f"entry_a_{j}")
            memory_word = Mux(data_a[j].occupied, data_a[j], 0)
            m.d.comb += entry.eq(one_hot_select(
                [memory_word] + [words[j].as_value() for _, _, words in written],
                Cat(choose_memory, *choose_written)))
            entries_a.append(entry)
        # the queue of the insertion in B: its forwarded queue, or the result of the insertion
        # of the cycle before it (registered in written[0])
        held_b = [Signal(slot, name=f"held_b_{j}") for j in range(n)]
        forward_b = Signal()
        m.d.sync += [h.eq(e) for h, e in zip(held_b, entries_a)]
        entries_b = []
        for j in range(n):
            entry = Signal(slot, name=f"entry_b_{j}")
            m.d.comb += entry.eq(Mux(forward_b, written[0][2][j], held_b[j]))
            entries_b.append(entry)

        def hits(entries, tag, name):
            return Cat(*(entry.occupied & tree_equal(m, entry.tag, tag, f"{name}_{j}")
                         for j, entry in enumerate(entries)))

        def at_least(entries, value):
            return Cat(*(entry.value >= value for entry in entries))

        # A's compares, registered for B: against its own queue, and against the queue and the
        # new entry of the insertion now in B (used if that one has the same queue)
        compares = {
            "hit": (hits(entries_a, tag_a, "hit"), n),
            "at_least": (at_least(entries_a, value_a), n),
            "hit_previous": (hits(entries_b, tag_a, "hit_previous"), n),
            "at_least_previous": (at_least(entries_b, value_a), n),
            "hit_previous_new": (tag_b == tag_a, 1),
            "at_least_previous_new": (value_b >= value_a, 1),
        }
        registered = {}
        for name, (value, width) in compares.items():
            registered[name] = Signal(width, name=f"{name}_b")
            m.d.sync += registered[name].eq(value)
        if 1 in self.forwarded_distances:
            m.d.sync += forward_b.eq(valid_b & (queue_b == queue_a))

        # stage B: the compare bits of the queue being decided; after a same-queue insertion in
        # the cycle before, each is taken through the choice that made that queue's slot
        chose_new = Signal(n)
        chose_lower = Signal(n)
        chose_upper = Signal(n)
        chosen_new, chosen_lower, chosen_upper = Signal(n), Signal(n), Signal(n)
        m.d.sync += [chosen_new.eq(chose_new), chosen_lower.eq(chose_lower),
                     chosen_upper.eq(chose_upper)]

        def through_choice(own, previous, previous_new):
            bits = Signal(n)
            for j in range(n):
                lower = previous[j + 1] if j + 1 < n else 0
                upper = previous[j - 1] if j > 0 else 0
                after_previous = Mux(chosen_new[j], previous_new,
                                     Mux(chosen_lower[j], lower,
                                         Mux(chosen_upper[j], upper, previous[j])))
                m.d.comb += bits[j].eq(Mux(forward_b, after_previous, own[j]))
            return bits

        hit = through_choice(registered["hit"], registered["hit_previous"],
                             registered["hit_previous_new"])
        ge = through_choice(registered["at_least"], registered["at_least_previous"],
                            registered["at_least_previous_new"])

        hit_up_to = [Cat(*(hit[i] for i in range(j + 1))).any() for j in range(n)]
        store = Signal()
        taken_before_place = Signal()   # the hit slot is one of the `at_least` prefix
        m.d.comb += [store.eq(hit.any() | ~ge[n - 1]), taken_before_place.eq((hit & ge).any())]
        for j in range(n):
            ge_above = ge[j - 1] if j > 0 else 1
            ge_below = ge[j + 1] if j + 1 < n else 0
            hit_above = hit_up_to[j - 1] if j > 0 else 0
            m.d.comb += [
                chose_new[j].eq(store & Mux(taken_before_place, ge[j] & ~ge_below,
                                            ~ge[j] & ge_above)),
                chose_lower[j].eq(store & taken_before_place & hit_up_to[j] & ge_below),
                chose_upper[j].eq(store & ~taken_before_place & ~ge_above & ~hit_above
                                  if j > 0 else 0),
            ]
        new_entry = Signal(slot)
        m.d.comb += [new_entry.tag.eq(tag_b), new_entry.value.eq(value_b),
                     new_entry.occupied.eq(1)]
        results = []
        for j in range(n):
            result = Signal(slot, name=f"result{j}")
            with m.If(chose_new[j]):
                m.d.comb += result.eq(new_entry)
            with m.Elif(chose_lower[j]):
                m.d.comb += result.eq(entries_b[j + 1] if j + 1 < n else entries_b[j])
            with m.Elif(chose_upper[j]):
                m.d.comb += result.eq(entries_b[j - 1] if j > 0 else entries_b[j])
            with m.Else():
                m.d.comb += result.eq(entries_b[j])
            results.append(result)
        m.d.sync += [written[0][0].eq(valid_b), written[0][1].eq(queue_b)]
        m.d.sync += [w.eq(r) for w, r in zip(written[0][2], results)]
        for older, newer in zip(written[1:], written[:-1]):
            m.d.sync += [older[0].eq(newer[0]), older[1].eq(newer[1])]
            m.d.sync += [o.eq(nw) for o, nw in zip(older[2], newer[2])]

        # stage W: write the registered queue back (a draining bank writes its drain instead:
        # only the occupied bit counts there)
        for bank, (writes, (clear_address, clearing)) in enumerate(zip(bank_writes, drains)):
            ours = written[0][1][R:] == bank if banks > 1 else 1
            busy = self.busy[bank]
            for j, write in enumerate(writes):
                entry = written[0][2][j]
                m.d.comb += write.data.eq(Cat(entry.tag, entry.value, entry.occupied & ~busy))
                with m.If(busy):
                    m.d.comb += [write.addr.eq(clear_address), write.en.eq(clearing)]
                with m.Else():
                    m.d.comb += [write.addr.eq(written[0][1][:R]),
                                 write.en.eq(written[0][0] & ours)]
        return m
