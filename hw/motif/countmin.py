"""Count-Min sketch with conservative update over H3 rows, one insertion per cycle (SPEC 4, 5).

Sequential semantics (:class:`kmerspec.golden.countmin.CountMin`, update "cu"): for key x with row
indices i_r, ``v_r = min(C[r][i_r] + 1, 2^counter_bits - 1)``, ``e = min_r v_r``, write ``v_r``
where ``v_r == e``; the estimate of the insertion is e.

Pipeline (one stage per cycle)::

    H   H3 of the key -> d row indices (registered)
    R   read address = index; the counter arrives ``read_latency`` cycles later (1: the memory's
        own read register; 2: plus the BRAM output register)
    U   forward, increment, minimum, conservative write-back; the write commits this cycle
    O   estimate registered at the output

Read-modify-write hazards are forwarded, never stalled or ignored. A read issued while later
writes are still in the pipeline does not see them: the memory read port is not transparent,
so key t's counter misses the writes of the ``read_latency`` keys before it. Stage U keeps, per
row, the (index, new value) written in each of the last ``read_latency`` cycles and takes the
most recent one whose index matches in place of the memory data. The new value written by the
key one cycle ahead is fed back registered, so the same key every cycle costs nothing: the loop
``forwarded value -> pairwise compares (beside the +1) -> select`` is the only single-cycle
feedback path; the minimum tree of the estimate is outside it.

Latency 2 + ``read_latency`` cycles from ``i`` to ``o``; one key per cycle for every input
sequence; no backpressure. ``clear`` zeroes every counter in 2^cw cycles (``busy`` is high
meanwhile; keys presented then are dropped).
"""

from amaranth.hdl import Cat, Module, Mux, Signal, unsigned
from amaranth.lib import data, stream, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from kmerspec.params import READ_LATENCY, check_int

from .h3 import H3Hash

__all__ = ["CountMinCU", "minimum"]


def minimum(values):
    """Balanced tree of two-input minimums."""
    values = list(values)
    while len(values) > 1:
        paired = [Mux(a <= b, a, b) for a, b in zip(values[0::2], values[1::2])]
        values = paired + values[len(paired) * 2:]
    return values[0]


class CountMinCU(wiring.Component):
    """``d`` rows x 2^``cw`` saturating ``counter_bits``-bit counters with conservative update.

    Parameters
    ----------
    key_bits : int
        Key width (2k for k-mers).
    cw : int
        log2 of the row width.
    counter_bits : int
        Counter width; counters saturate at 2^counter_bits - 1.
    seed_matrices : list of list of int
        One H3 seed matrix per row (``key_bits`` words of ``cw`` bits); d = its length.
    read_latency : int
        1 or 2, see the module docstring.

    Members
    -------
    i : In(stream.Signature(key_bits, always_ready=True))
        One key per cycle.
    o : Out(stream.Signature({"word", "estimate"}, always_ready=True))
        The key and the estimate e of its insertion, :attr:`latency` cycles after ``i``.
    clear : In(1)
        Pulse: zero all counters.
    busy : Out(1)
        Clearing.

    The counter memories are :attr:`rows` (``rows[r].data[i]`` is counter i of row r).
    """

    def __init__(self, key_bits: int, cw: int, counter_bits: int, seed_matrices, *,
                 read_latency: int = 1):
        check_int("key_bits", key_bits, 1, 64)
        check_int("cw", cw, 1, 20)
        check_int("counter_bits", counter_bits, 1, 32)
        self._key_bits = key_bits
        self._cw = cw
        self._counter_bits = counter_bits
        self._read_latency = READ_LATENCY.check(read_latency)
        self._hash = H3Hash(key_bits, cw, seed_matrices)
        self.rows = [Memory(shape=unsigned(counter_bits), depth=1 << cw, init=[])
                     for _ in seed_matrices]
        super().__init__({
            "i": In(stream.Signature(key_bits, always_ready=True)),
            "o": Out(stream.Signature(data.StructLayout({
                "word": key_bits, "estimate": counter_bits}), always_ready=True)),
            "clear": In(1),
            "busy": Out(1),
        })

    @property
    def depth(self) -> int:
        return len(self.rows)

    @property
    def latency(self) -> int:
        return 2 + self._read_latency

    def elaborate(self, platform):
        m = Module()
        m.submodules.hash = hasher = self._hash
        max_count = (1 << self._counter_bits) - 1
        latency = self._read_latency

        # stage H
        m.d.comb += hasher.key.eq(self.i.payload)
        valid_h = Signal()
        word_h = Signal(self._key_bits)
        m.d.sync += [valid_h.eq(self.i.valid & ~self.busy), word_h.eq(self.i.payload)]

        # stage R: the key, its indices and valid travel alongside the memory read
        valid_u, word_u = valid_h, word_h
        indices_u = [hasher.hashes[row] for row in range(self.depth)]
        for _ in range(latency):
            valid_u, word_u = self._delay(m, valid_u), self._delay(m, word_u)
            indices_u = [self._delay(m, index) for index in indices_u]

        clear_address = Signal(self._cw)
        with m.If(self.clear & ~self.busy):
            m.d.sync += [self.busy.eq(1), clear_address.eq(0)]
        with m.Elif(self.busy):
            m.d.sync += clear_address.eq(clear_address + 1)
            with m.If(clear_address == (1 << self._cw) - 1):
                m.d.sync += self.busy.eq(0)

        incremented = []
        currents = []
        history = []   # per row: [(valid, index, new value) written 1..latency cycles ago]
        for row, memory in enumerate(self.rows):
            m.submodules[f"row_{row}"] = memory
            read = memory.read_port()
            m.d.comb += read.addr.eq(hasher.hashes[row])
            counter = read.data
            if latency == 2:
                counter = self._delay(m, counter)
            written = [(Signal(name=f"written_valid_{row}_{age}"),
                        Signal(self._cw, name=f"written_index_{row}_{age}"),
                        Signal(self._counter_bits, name=f"written_value_{row}_{age}"))
                       for age in range(1, latency + 1)]
            history.append(written)
            current = counter
            for valid, index, value in reversed(written):   # the most recent wins
                current = Mux(valid & (index == indices_u[row]), value, current)
            current_signal = Signal(self._counter_bits, name=f"current_{row}")
            m.d.comb += current_signal.eq(current)
            currents.append(current_signal)
            plus_one = Signal(self._counter_bits, name=f"incremented_{row}")
            m.d.comb += plus_one.eq(Mux(current_signal == max_count, max_count,
                                        current_signal + 1))
            incremented.append(plus_one)

        estimate = Signal(self._counter_bits)
        m.d.comb += estimate.eq(minimum(incremented))
        for row, memory in enumerate(self.rows):
            write = memory.write_port()
            # v_r == min_s v_s, decided from the counters before the increment so that the
            # comparisons run beside the adders instead of after a minimum tree: the two tests
            # differ only for a saturated counter, whose value the write leaves unchanged
            conservative = Signal(name=f"conservative_{row}")
            m.d.comb += conservative.eq(Cat(currents[row] <= currents[other]
                                            for other in range(self.depth) if other != row).all()
                                        if self.depth > 1 else 1)
            new_value = Mux(conservative, incremented[row], currents[row])
            with m.If(self.busy):
                m.d.comb += [write.addr.eq(clear_address), write.data.eq(0), write.en.eq(1)]
            with m.Else():
                m.d.comb += [write.addr.eq(indices_u[row]), write.data.eq(new_value),
                             write.en.eq(valid_u & conservative)]
            written = history[row]
            m.d.sync += [written[0][0].eq(valid_u & ~self.busy),
                         written[0][1].eq(indices_u[row]),
                         written[0][2].eq(new_value)]
            for older, newer in zip(written[1:], written[:-1]):
                m.d.sync += [older[0].eq(newer[0] & ~self.busy), older[1].eq(newer[1]),
                             older[2].eq(newer[2])]

        m.d.sync += [self.o.valid.eq(valid_u), self.o.payload.word.eq(word_u),
                     self.o.payload.estimate.eq(estimate)]
        return m

    @staticmethod
    def _delay(m, value):
        delayed = Signal.like(value) if isinstance(value, Signal) else Signal(len(value))
        m.d.sync += delayed.eq(value)
        return delayed
