"""Count-Min rows with conservative ("cu") or plain ("cm") update, one insertion per cycle.

Each of the ``d`` rows is its own memory (``amaranth.lib.memory``, synchronous read, one read and
one write port: a simple dual-port BRAM). An insertion reads its ``d`` counters in the cycle it
is accepted and computes and writes the new values in the next cycle, so only the write of the
insertion directly before it is not yet visible in the memory: a per-row forwarding register
(address, value, write enable) replaces the read value when the addresses match. The result is
exactly the sequential model of ``kmerspec.golden.countmin.CountMin`` for every input sequence,
including the same key in every cycle.

Update rule (golden model): ``v_r = min(C[r][i_r] + 1, 2^counter_bits - 1)``, ``e = min_r v_r``;
"cu" writes ``v_r`` where ``v_r == e``, "cm" writes every ``v_r``. The estimate is e.
"""

from amaranth.hdl import Cat, Const, Module, Mux, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from kmerspec.params import check_int


__all__ = ["countmin_input_layout", "countmin_output_layout", "CountMinRows"]


def countmin_input_layout(depth: int, width_bits: int, key_bits: int) -> data.StructLayout:
    """The counter index of the key in each row, and ``key_bits`` carried along to the output."""
    return data.StructLayout({"indices": data.ArrayLayout(width_bits, depth), "key": key_bits})


def countmin_output_layout(key_bits: int, counter_bits: int) -> data.StructLayout:
    return data.StructLayout({"estimate": counter_bits, "key": key_bits})


class CountMinRows(wiring.Component):
    """``depth`` rows x 2^``width_bits`` saturating counters.

    Parameters
    ----------
    depth : int
        d, number of rows (1 to 16).
    width_bits : int
        cw, log2 of the counters per row (1 to 24).
    counter_bits : int
        Counter width (1 to 32; SPEC 4 uses 32).
    key_bits : int
        Width of the payload carried from input to output (e.g. the row-0 hash for the PQA).

    Members
    -------
    i : In(stream.Signature(countmin_input_layout(...)))
        One insertion per cycle; ``ready`` is low only while clearing.
    o : Out(stream.Signature(countmin_output_layout(...), always_ready=True))
        The estimate of each insertion, in order, :attr:`latency` = 2 cycles after acceptance.
    plain_update : In(1)
        Runtime update rule: 0 = conservative ("cu"), 1 = plain Count-Min ("cm").
        Change it only while no insertion is in flight.
    clear : In(1)
        Pulse to zero every counter; takes 2^width_bits cycles. Pulse only when no insertion is
        in flight (``o`` has delivered every accepted insertion).
    busy : Out(1)
        High while clearing.
    """

    latency = 2

    def __init__(self, depth: int = 5, width_bits: int = 14, counter_bits: int = 32,
                 key_bits: int = 32):
        check_int("depth", depth, 1, 16)
        check_int("width_bits", width_bits, 1, 24)
        check_int("counter_bits", counter_bits, 1, 32)
        check_int("key_bits", key_bits, 0, 1024)
        self.depth = depth
        self.width_bits = width_bits
        self.counter_bits = counter_bits
        self.key_bits = key_bits
        super().__init__({
            "i": In(stream.Signature(countmin_input_layout(depth, width_bits, key_bits))),
            "o": Out(stream.Signature(countmin_output_layout(key_bits, counter_bits),
                                      always_ready=True)),
            "plain_update": In(1),
            "clear": In(1),
            "busy": Out(1),
        })
        #: one memory per row; ``rows[r].data[i]`` is counter i of row r (tests read it)
        self.rows = [Memory(shape=counter_bits, depth=1 << width_bits, init=[])
                     for _ in range(depth)]

    def elaborate(self, platform):
        m = Module()
        max_count = (1 << self.counter_bits) - 1
        clear_address = Signal(self.width_bits)
        m.d.comb += self.i.ready.eq(~self.busy)
        with m.If(self.busy):
            m.d.sync += clear_address.eq(clear_address + 1)
            with m.If(clear_address == (1 << self.width_bits) - 1):
                m.d.sync += self.busy.eq(0)
        with m.Elif(self.clear):
            m.d.sync += [self.busy.eq(1), clear_address.eq(0)]

        accepted = self.i.valid & self.i.ready
        stage_valid = Signal()
        stage_indices = Signal(data.ArrayLayout(self.width_bits, self.depth))
        stage_key = Signal(self.key_bits)
        m.d.sync += [
            stage_valid.eq(accepted),
            stage_indices.eq(self.i.payload.indices),
            stage_key.eq(self.i.payload.key),
        ]

        incremented = []
        write_ports = []
        for row, memory in enumerate(self.rows):
            m.submodules[f"row{row}"] = memory
            read = memory.read_port(transparent_for=())
            write = memory.write_port()
            write_ports.append(write)
            m.d.comb += [read.addr.eq(self.i.payload.indices[row]), read.en.eq(accepted)]
            # the write of the previous cycle is the only one the read did not see
            last_address = Signal(self.width_bits, name=f"last_address{row}")
            last_value = Signal(self.counter_bits, name=f"last_value{row}")
            last_written = Signal(name=f"last_written{row}")
            m.d.sync += [last_address.eq(write.addr), last_value.eq(write.data),
                         last_written.eq(write.en)]
            forwarded = Mux(last_written & (last_address == stage_indices[row]),
                            last_value, read.data)
            value = Signal(self.counter_bits, name=f"incremented{row}")
            m.d.comb += value.eq(Mux(forwarded == max_count, max_count, forwarded + 1))
            incremented.append(value)

        estimate = incremented[0]
        for value in incremented[1:]:
            estimate = Mux(value < estimate, value, estimate)
        estimate_now = Signal(self.counter_bits)
        m.d.comb += estimate_now.eq(estimate)

        for row, (write, value) in enumerate(zip(write_ports, incremented)):
            with m.If(self.busy):
                m.d.comb += [write.addr.eq(clear_address), write.data.eq(0), write.en.eq(1)]
            with m.Else():
                m.d.comb += [
                    write.addr.eq(stage_indices[row]),
                    write.data.eq(value),
                    write.en.eq(stage_valid & (self.plain_update | (value == estimate_now))),
                ]

        m.d.sync += [
            self.o.valid.eq(stage_valid),
            self.o.payload.estimate.eq(estimate_now),
            self.o.payload.key.eq(stage_key),
        ]
        return m
