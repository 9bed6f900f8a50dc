"""Count-Min sketch rows with conservative ("cu") or plain ("cm") update, one insertion per cycle.

The one Count-Min unit of the project (the JSD queue builder, SPEC 4, and the emerging-motif
lanes, SPEC 5). Sequential semantics (:class:`kmerspec.golden.countmin.CountMin`): for an
insertion with row indices i_r, ``v_r = min(C[r][i_r] + 1, 2^counter_bits - 1)``,
``e = min_r v_r``; "cu" writes ``v_r`` where ``v_r == e``, "cm" writes every ``v_r``; the estimate
of the insertion is e. The unit reproduces it exactly for every input sequence, including the
same key in every cycle.

Pipeline (one stage per cycle)::

    H   optional hash front end (``hasher``): key -> d row indices, ``hasher.latency`` cycles
    R   read address = index; the memory word and its saturating increment are registered
        ``read_latency`` cycles later (with 2 behind the BRAM output register)
    P   per row, two candidates of the counter the insertion will see in U, each a select of
        registers: ``kept`` (if the insertion now in U does not update the row) and ``updated``
        (if it does; the two differ only when that insertion writes the same index); and for
        every ordered pair of rows the four compares ``kept/updated_r <= kept/updated_s``
    U   U's decisions (is the row updated) of the insertion ahead pick the registered compare
        bits, so ``c_r <= c_s`` is a register here; smallest, update, the new value
    W   the new value, its increment, index and valid are registered and written to the memory
    E   the estimate: the OR of the increments of the rows whose counter is a smallest one
    O   estimate registered at the output

Each row is its own memory (simple dual-port BRAM, one read and one write port). Read-modify-
write hazards are forwarded, never stalled or ignored: a read does not see the writes of the
insertions that were in U in the ``data_latency + 1`` cycles before its own U cycle
(:attr:`forwarded_distances`). Three cycles before U each row's index is compared with the
indices of those insertions and the flags are registered; two cycles before U the newest of the
writes of distance 3 and more is selected and the choice among distance 1, distance 2, that
write and the memory word is registered; P selects by it. Every value travels with its saturating
increment (computed once, from a register), so no increment is on a forwarding path.

Whether a row is updated is decided from the counters before the increment (``c_r <= c_s`` for
every other row s): the two tests differ only for a saturated counter, whose value the update
leaves unchanged. The only single-cycle loop (the same key every cycle) is ``compare bit ->
smallest -> update -> select -> register`` (two LUT levels); the compares of P start behind one
select of registers and end in the select by U's decisions (8 levels, 3.26 ns with 32-bit
counters in the estimate of hw/vitis/timing.py: ``python bench/timing_parts.py --parts
countmin``). A compare is written as the carry out of ``b - a`` (Yosys maps ``<=`` to a chain
with an inverter in the middle), a saturating increment as the carry out ORed over ``v + 1``.
The estimate needs no minimum tree (``v_r`` grows with ``c_r``, so ``e`` is the increment of any
smallest counter). The price is area: 4 d (d - 1) compares instead of d (d - 1).

Timing: use ``read_latency=2`` at the board clock; with 1 the block RAM's clock-to-out without
output register is on the path into the memory word's register.

Latency :attr:`latency` = ``hasher.latency`` (0 without a hasher) + :attr:`data_latency`
(``read_latency`` + 2, + 1 with more than two banks) + 2 cycles from acceptance to ``o``
(without a hasher and with up to two banks: 5 with ``read_latency=1``, 6 with 2; read it from
the attribute, it grew with the timing work); one
insertion per cycle for every input sequence; the output has no backpressure. ``clear`` zeroes every counter in 2^width_bits cycles
(``busy`` is high meanwhile): with ``stall_while_clearing`` the input's ``ready`` is low then,
otherwise the input is always ready and insertions presented while clearing are dropped.

Banks (``banks`` > 1: the JSD builder's lanes, two banks each for their double-buffered
records): each bank has its own row memories, ``clear`` and ``busy`` bit, and every insertion
names its bank. The insertion pipeline, its forwarding and the compares are shared: an
insertion's bank travels as the top bits of its row indices, so forwarding never crosses banks,
and the memory word is selected by the bank behind the BRAM output registers (with more than two
banks the selected word has a register of its own: :attr:`data_latency` is one more). So any
bank takes insertions while others clear, for the logic of one unit and the memories of all.
"""

from functools import cached_property

from amaranth.hdl import Array, Cat, Module, Mux, Signal, unsigned
from amaranth.lib import data, stream, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from kmerspec.params import CM_COUNTER_BITS, CM_WIDTH_BITS, JSD_DEPTH, READ_LATENCY, check_int

from .pipeline import bank_bits

__all__ = ["countmin_input_layout", "countmin_output_layout", "CountMinUnit"]


def countmin_input_layout(depth: int, width_bits: int, key_bits: int,
                          banks: int = 1) -> data.StructLayout:
    """Input of a unit without hash front end: the counter index of the insertion in each row,
    ``key_bits`` carried along to the output, and with more than one bank the insertion's
    ``bank``."""
    fields = {"indices": data.ArrayLayout(width_bits, depth), "key": key_bits}
    if banks > 1:
        fields["bank"] = bank_bits(banks)
    return data.StructLayout(fields)


def countmin_output_layout(key_bits: int, counter_bits: int) -> data.StructLayout:
    """The key of an insertion and its estimate e."""
    return data.StructLayout({"key": key_bits, "estimate": counter_bits})


class CountMinUnit(wiring.Component):
    """``depth`` rows x 2^``width_bits`` saturating ``counter_bits``-bit counters.

    Parameters
    ----------
    depth : int
        d, number of rows (1 to 16).
    width_bits : int
        cw, log2 of the counters per row (1 to 24).
    counter_bits : int
        Counter width (1 to 32); counters saturate at 2^counter_bits - 1.
    key_bits : int
        Width of the key carried from input to output (the hashed key with a ``hasher``).
    read_latency : int
        1 or 2, see the module docstring.
    hasher : component or None
        Hash front end: a component with members ``key`` (In(key_bits)) and ``hashes``
        (Out(ArrayLayout(width_bits, depth))) and an attribute ``latency`` (the cycles from
        ``key`` to ``hashes``, no handshake), such as :class:`hw.motif.h3.H3Hash`. Without it
        the input carries the row indices (:func:`countmin_input_layout`).
    stall_while_clearing : bool
        True: ``i.ready`` is low while clearing. False: the input is always ready and
        insertions presented while clearing are dropped.

    Members
    -------
    i : In(stream.Signature(key_bits or countmin_input_layout(...)))
        One insertion per cycle.
    o : Out(stream.Signature(countmin_output_layout(...), always_ready=True))
        The key and the estimate of each insertion, in order, :attr:`latency` cycles after its
        acceptance.
    banks : int
        1 to 128 banks of counters sharing the insertion logic (module docstring); with more than
        one the input names the bank of each insertion (only without a hasher).
    plain_update : In(1)
        0 = conservative update ("cu"), 1 = plain Count-Min ("cm"). Change it only while no
        insertion is in flight.
    clear : In(banks)
        Pulse bit b to zero every counter of bank b (2^width_bits cycles). Pulse it only when no
        insertion into bank b is in flight.
    busy : Out(banks)
        Bit b is high while bank b clears.

    The counter memories are :attr:`bank_rows` (``bank_rows[b][r].data[i]`` is counter i of row
    r in bank b) and :attr:`rows`, bank 0's.
    """

    def __init__(self, depth: int, width_bits: int, counter_bits: int, key_bits: int, *,
                 read_latency: int = 1, hasher=None, stall_while_clearing: bool = False,
                 banks: int = 1):
        JSD_DEPTH.check(depth, "depth")      # the range of both d (JSD_DEPTH, MOTIF_DEPTH)
        CM_WIDTH_BITS.check(width_bits, "width_bits")
        CM_COUNTER_BITS.check(counter_bits)
        check_int("key_bits", key_bits, 0 if hasher is None else 1, 1024)
        READ_LATENCY.check(read_latency)
        check_int("banks", banks, 1, 128)
        if banks > 1 and hasher is not None:
            raise ValueError("a unit with a hasher has one bank (the input carries no bank)")
        if hasher is not None:
            expected = {"key": In(key_bits),
                        "hashes": Out(data.ArrayLayout(width_bits, depth))}
            if (dict(hasher.signature.members) != expected
                    or not isinstance(getattr(hasher, "latency", None), int)):
                raise ValueError(f"hasher must have members key: In({key_bits}) and hashes: "
                                 f"Out(ArrayLayout({width_bits}, {depth})) and an integer "
                                 f"latency, not {hasher!r}")
        #: build parameters, read back by tests and by the components around the unit
        self.depth, self.width_bits, self.counter_bits = depth, width_bits, counter_bits
        self.key_bits, self.read_latency, self.banks = key_bits, read_latency, banks
        self._hasher = hasher
        self._stall = bool(stall_while_clearing)
        input_shape = (key_bits if hasher is not None
                       else countmin_input_layout(depth, width_bits, key_bits, banks))
        super().__init__({
            "i": In(stream.Signature(input_shape, always_ready=not self._stall)),
            "o": Out(stream.Signature(countmin_output_layout(key_bits, counter_bits),
                                      always_ready=True)),
            "plain_update": In(1),
            "clear": In(banks),
            "busy": Out(banks),
        })

    @cached_property
    def bank_rows(self) -> list:
        # made on first use (elaborate, or a test reading counters): a unit built only for its
        # interface or latency then holds no memory that is never elaborated
        return [[Memory(shape=unsigned(self.counter_bits), depth=1 << self.width_bits, init=[])
                 for _ in range(self.depth)] for _ in range(self.banks)]

    @property
    def rows(self) -> list:
        return self.bank_rows[0]

    @property
    def latency(self) -> int:
        front = self._hasher.latency if self._hasher is not None else 0
        return front + self.data_latency + 2

    @property
    def data_latency(self) -> int:
        """Cycles from a read address to stage U: the memory's read register (with
        ``read_latency`` 2 also the BRAM output register), with more than two banks the selected
        word's register, the register of the memory word and its increment, and stage P."""
        return self.read_latency + 2 + self._select_stage

    @property
    def _select_stage(self) -> int:
        return int(self.banks > 2)

    @property
    def forwarded_distances(self) -> tuple:
        """The distances (cycles between the U stages of two insertions) at which a write is
        forwarded; the memory read covers every larger one. (A test's mutant leaves one out.)"""
        return tuple(range(1, self.data_latency + 2))

    def elaborate(self, platform):
        m = Module()
        depth, latency, banks = self.depth, self.data_latency, self.banks
        width = self.width_bits
        index_bits = width + bank_bits(banks)     # a row index and the bank on top

        clear_addresses = []
        for bank in range(banks):
            address = Signal(width, name=f"clear_address_{bank}")
            busy = self.busy[bank]
            with m.If(self.clear[bank] & ~busy):
                m.d.sync += [busy.eq(1), address.eq(0)]
            with m.Elif(busy):
                m.d.sync += address.eq(address + 1)
                with m.If(address == (1 << width) - 1):
                    m.d.sync += busy.eq(0)
            clear_addresses.append(address)

        def clearing(index):
            """Whether the bank of a (bank-extended) row index is clearing."""
            return self.busy.bit_select(index[width:], 1) if banks > 1 else self.busy[0]

        # stage H: the read addresses of an accepted insertion
        if self._hasher is None:
            key_r = self.i.payload.key
            indices_r = [Cat(self.i.payload.indices[row], self.i.payload.bank) if banks > 1
                         else self.i.payload.indices[row] for row in range(depth)]
            accepted_r = ~clearing(indices_r[0])
            valid_r = self.i.valid & accepted_r
        else:
            m.submodules.hash = hasher = self._hasher
            m.d.comb += hasher.key.eq(self.i.payload)
            accepted_r = ~self.busy[0]
            valid_r = self.i.valid & accepted_r
            key_r = self.i.payload
            for _ in range(hasher.latency):
                valid_r, key_r = self._delay(m, valid_r), self._delay(m, key_r)
            indices_r = [hasher.hashes[row] for row in range(depth)]
        if self._stall:
            m.d.comb += self.i.ready.eq(accepted_r)

        # stages R .. U: stages[k] = (valid, row indices) of the insertion k cycles after R
        stages = [(valid_r, indices_r)]
        key_u = key_r
        for _ in range(latency):
            valid, indices = stages[-1]
            stages.append((self._delay(m, valid), [self._delay(m, index) for index in indices]))
            key_u = self._delay(m, key_u)
        valid_u, indices_u = stages[-1]

        updated = [Signal(name=f"updated_{row}") for row in range(depth)]
        plus_ones, if_kept, if_updated = [], [], []
        for row in range(depth):
            bank_words = []
            for bank in range(banks):
                memory = self.bank_rows[bank][row]
                m.submodules[f"row_{row}" if banks == 1 else f"bank{bank}_row_{row}"] = memory
                read = memory.read_port()
                m.d.comb += read.addr.eq(indices_r[row][:width])
                word = read.data
                if self.read_latency == 2:
                    word = self._delay(m, word)       # the BRAM output register
                bank_words.append(word)
            word = bank_words[0]
            if banks > 1:
                word = Array(bank_words)[stages[self.read_latency][1][row][width:]]
            if self._select_stage:
                word = self._delay(m, word)
            memory_value = self._delay(m, word)
            memory_plus_one = self._delay(m, self._saturating_increment(word))

            # the writes of stage W (age 0) and older: valid, index, value, saturating value + 1
            written = [(Signal(name=f"written_valid_{row}_{age}"),
                        Signal(index_bits, name=f"written_index_{row}_{age}"),
                        Signal(self.counter_bits, name=f"written_value_{row}_{age}"),
                        Signal(self.counter_bits, name=f"written_plus_one_{row}_{age}"))
                       for age in range(latency - 1)]

            # U - 3: whether the insertion of each forwarded distance writes this row's index,
            # from the insertions then in U - 2 .. U and the writes of W and older, registered
            probe = stages[latency - 3][1][row]
            writers = ([(stages[latency - 3 + d][0], stages[latency - 3 + d][1][row])
                        for d in (1, 2, 3)] + [(valid, index) for valid, index, _, _ in written])
            matches = []
            for distance in range(1, latency + 2):
                match = Signal(name=f"forward_{row}_{distance}")
                if distance in self.forwarded_distances:
                    valid, index = writers[distance - 1]
                    m.d.sync += match.eq(valid & ~clearing(index) & (index == probe))
                matches.append(match)

            # U - 2: the newest write of distance 3 .. latency + 1 (in W and older now), and
            # which candidate stage P takes: 0 distance 1, 1 distance 2, 2 that write, 3 memory
            older_value = Signal(self.counter_bits, name=f"older_value_{row}")
            older_plus_one = Signal(self.counter_bits, name=f"older_plus_one_{row}")
            value, value_plus_one = written[-1][2], written[-1][3]
            for match, (_, _, newer, newer_plus_one) in reversed(list(zip(matches[2:],
                                                                          written[:-1]))):
                value = Mux(match, newer, value)
                value_plus_one = Mux(match, newer_plus_one, value_plus_one)
            source = Signal(2, name=f"source_{row}")
            newest = Signal(name=f"forward_newest_{row}")
            m.d.sync += [older_value.eq(value), older_plus_one.eq(value_plus_one),
                         source.eq(Mux(matches[0], 0, Mux(matches[1], 1,
                                                          Mux(Cat(matches[2:]).any(), 2, 3)))),
                         newest.eq(matches[0])]

            # stage P (U - 1): the row's counter in U if the insertion now in U does not update
            # the row (kept) and if it does, each a select of registers
            current = Signal(self.counter_bits, name=f"current_{row}")     # c_r of U
            plus_one = Signal(self.counter_bits, name=f"plus_one_{row}")   # v_r of U
            kept = Signal(self.counter_bits, name=f"if_kept_{row}")
            kept_plus_one = Signal(self.counter_bits, name=f"if_kept_plus_one_{row}")
            if_updated_signal = Signal(self.counter_bits, name=f"if_updated_{row}")
            candidates = [current, written[0][2], older_value, memory_value]
            candidates_plus_one = [plus_one, written[0][3], older_plus_one, memory_plus_one]
            # (if updated, the newest write's increment, else the same candidate: one select of
            # registers, as wide as the other two)
            m.d.comb += [kept.eq(Array(candidates)[source]),
                         kept_plus_one.eq(Array(candidates_plus_one)[source]),
                         if_updated_signal.eq(Array([plus_one] + candidates[1:])[source])]
            plus_two = self._saturating_increment(plus_one)
            takes_update = updated[row] & newest
            m.d.sync += [current.eq(Mux(takes_update, plus_one, kept)),
                         plus_one.eq(Mux(takes_update, plus_two, kept_plus_one))]
            plus_ones.append(plus_one)
            if_kept.append(kept)
            if_updated.append(if_updated_signal)

            # stage W: U's new value and its increment, registered and written to the memory;
            # a row that is not updated writes back its value, which changes nothing
            for bank in range(banks):
                write = self.bank_rows[bank][row].write_port()
                ours = written[0][1][width:] == bank if banks > 1 else 1
                with m.If(self.busy[bank]):
                    m.d.comb += [write.addr.eq(clear_addresses[bank]), write.data.eq(0),
                                 write.en.eq(1)]
                with m.Else():
                    m.d.comb += [write.addr.eq(written[0][1][:width]),
                                 write.data.eq(written[0][2]), write.en.eq(written[0][0] & ours)]
            m.d.sync += [written[0][0].eq(valid_u & ~clearing(indices_u[row])),
                         written[0][1].eq(indices_u[row]),
                         written[0][2].eq(Mux(updated[row], plus_one, current)),
                         written[0][3].eq(Mux(updated[row], plus_two, plus_one))]
            for elder, newer in zip(written[1:], written[:-1]):
                m.d.sync += [elder[0].eq(newer[0] & ~clearing(newer[1])), elder[1].eq(newer[1]),
                             elder[2].eq(newer[2]), elder[3].eq(newer[3])]

        # Stage P compares the candidates of every two rows, for each of the four ways the
        # insertion in U may update the two, and U's decisions pick the registered result: in
        # U, ``c_r <= c_s`` is a register.
        at_most = {}
        for row in range(depth):
            for other in range(depth):
                if other == row:
                    continue
                flag = Signal(name=f"at_most_{row}_{other}")
                pairs = {(u_r, u_s): self._at_most((if_updated if u_r else if_kept)[row],
                                                   (if_updated if u_s else if_kept)[other])
                         for u_r in (0, 1) for u_s in (0, 1)}
                m.d.sync += flag.eq(Mux(updated[row],
                                        Mux(updated[other], pairs[1, 1], pairs[1, 0]),
                                        Mux(updated[other], pairs[0, 1], pairs[0, 0])))
                at_most[row, other] = flag

        # stage U: a row is updated if its counter is a smallest one (the two tests differ only
        # for a saturated counter, whose value the update leaves unchanged)
        smallest_flags = []
        for row in range(depth):
            smallest = Signal(name=f"smallest_{row}")
            m.d.comb += smallest.eq(Cat(at_most[row, other] for other in range(depth)
                                        if other != row).all() if depth > 1 else 1)
            m.d.comb += updated[row].eq(self.plain_update | smallest)
            smallest_flags.append(smallest)

        # stage E: e = min_r v_r is the increment of a smallest counter (v_r grows with c_r);
        # every smallest row has the same value, so the estimate is the OR of their increments
        # (two LUT levels after registers instead of a minimum tree after the compares)
        valid_e, key_e = self._delay(m, valid_u), self._delay(m, key_u)
        estimate_candidates = [self._delay(m, Mux(flag, value, 0))
                               for flag, value in zip(smallest_flags, plus_ones)]
        estimate = Cat(Cat(candidate[bit] for candidate in estimate_candidates).any()
                       for bit in range(self.counter_bits))
        # stage O
        m.d.sync += [self.o.valid.eq(valid_e), self.o.payload.key.eq(key_e),
                     self.o.payload.estimate.eq(estimate)]
        return m

    @staticmethod
    def _at_most(a, b):
        # a <= b as the carry out of b - a: one carry chain (Yosys maps ``<=`` to a chain with
        # an inverter in the middle)
        return (b + (~a)[:len(a)] + 1)[len(a)]

    @staticmethod
    def _saturating_increment(value):
        # the carry out of value + 1 (all ones) saturates the sum with one OR per bit after the
        # chain, instead of an all-ones test and a select that ABC puts behind the chain
        width = len(value)
        total = value + 1
        return (total[:width] | total[width].replicate(width))[:width]

    @staticmethod
    def _delay(m, value):
        delayed = Signal(len(value))
        m.d.sync += delayed.eq(value)
        return delayed
