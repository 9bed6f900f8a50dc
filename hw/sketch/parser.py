"""Lane parser: classifies the bytes of one genome lane as base, skip or break (SPEC section 1).

The line rules are exactly those of ``kmerspec/golden/parse.py`` (its docstring). They are a finite
state machine over bytes with eleven states (:class:`LineState`). Running that machine over ``B``
bytes in one clock would put ``B`` chained steps in the state feedback loop, so the parser runs
it *speculatively*: a feed-forward pipeline computes, for every possible start state, the role of
each byte and the state after the beat; the only feedback is one 11-to-1 selection by the true
state register. Each step is one lookup in a constant table indexed by {state, byte class}. That keeps the loop short for any ``B`` and the initiation interval at 1.
"""

from amaranth.hdl import Cat, Const, Module, Signal, Mux
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from kmerspec.golden.line_machine import (BASE_CODES, ByteClass, ByteRole, LineState, line_step,
                                         step_class)
from kmerspec.params import check_positive


__all__ = ["LineState", "ByteRole", "line_step", "lane_bytes_layout", "lane_roles_layout",
           "LaneParser"]


_STATE_BITS = 4
_CLASS_BITS = 3
_ROLE_BITS = 2
_STEP_BITS = _STATE_BITS + _ROLE_BITS


def lane_bytes_layout(bytes_per_lane: int) -> data.StructLayout:
    """One lane's slice of a beat: bytes (first byte lowest), which are real, and end of file."""
    return data.StructLayout({
        "bytes": 8 * bytes_per_lane,
        "byte_valid": bytes_per_lane,
        "end_of_file": 1,
    })


def lane_roles_layout(bytes_per_lane: int) -> data.StructLayout:
    """The parser's output: per byte a 2-bit base code and its role; ``end_of_file`` breaks the
    run after the last byte."""
    return data.StructLayout({
        "codes": 2 * bytes_per_lane,
        "is_base": bytes_per_lane,
        "is_break": bytes_per_lane,
        "end_of_file": 1,
    })


class LaneParser(wiring.Component):
    """Classify ``bytes_per_lane`` bytes of one lane per cycle.

    Parameters
    ----------
    bytes_per_lane : int
        Bytes per beat (B).
    bytes_per_stage : int
        Bytes resolved per speculative pipeline stage; trades latency for logic depth. The
        default 1 keeps each stage one 7-input table step (4 LUT levels, 2.53 ns at B = 8 in
        ``bench/timing_parts.py``); 2 chains two steps (6 levels, 3.53 ns) with half the
        stages.

    Members
    -------
    i : In(stream.Signature(lane_bytes_layout(B), always_ready=True))
        One beat of the lane. ``end_of_file`` returns the parser to a record start after the
        beat (the next byte begins a new file).
    o : Out(stream.Signature(lane_roles_layout(B), always_ready=True))
        Roles of the beat's bytes, in order.

    Latency is :attr:`latency` cycles, throughput one beat per cycle for every input, no
    backpressure (the sketch datapath never stalls; its owner stops the input instead).
    """

    def __init__(self, bytes_per_lane: int = 8, *, bytes_per_stage: int = 1):
        check_positive("bytes_per_lane", bytes_per_lane)
        check_positive("bytes_per_stage", bytes_per_stage)
        self._bytes_per_lane = bytes_per_lane
        self._bytes_per_stage = bytes_per_stage
        super().__init__({
            "i": In(stream.Signature(lane_bytes_layout(bytes_per_lane), always_ready=True)),
            "o": Out(stream.Signature(lane_roles_layout(bytes_per_lane), always_ready=True)),
        })

    @property
    def bytes_per_lane(self) -> int:
        return self._bytes_per_lane

    @property
    def latency(self) -> int:
        """Cycles from an input beat to its roles at the output."""
        speculative_stages = -(-self._bytes_per_lane // self._bytes_per_stage)
        return 1 + speculative_stages + 1

    def elaborate(self, platform):
        m = Module()
        nbytes = self._bytes_per_lane
        states = list(LineState)
        # the step table as one constant indexed by {state, class}: each step is a 7-input lookup
        step_table = 0
        for state in states:
            for byte_class in ByteClass:
                target, role = step_class(state, byte_class)
                entry = target | role << _STATE_BITS
                step_table |= entry << (_STEP_BITS * (state << _CLASS_BITS | byte_class))
        step_table = Const(step_table, _STEP_BITS << (_STATE_BITS + _CLASS_BITS))

        # stage 0: byte classes and base codes
        classes = [Signal(_CLASS_BITS, name=f"class_{j}") for j in range(nbytes)]
        codes = Signal(2 * nbytes)
        eof = Signal()
        valid = Signal()
        m.d.sync += [valid.eq(self.i.valid), eof.eq(self.i.payload.end_of_file)]
        for j in range(nbytes):
            byte = self.i.payload.bytes[8 * j:8 * j + 8]
            byte_class = Mux(byte == 0x0D, ByteClass.CR,
                         Mux(byte == 0x0A, ByteClass.LF,
                         Mux(byte == ord(">"), ByteClass.GT,
                         Mux(byte == ord("@"), ByteClass.AT,
                         Mux(byte.matches(*BASE_CODES), ByteClass.BASE, ByteClass.OTHER)))))
            m.d.sync += classes[j].eq(Mux(self.i.payload.byte_valid[j], byte_class,
                                          ByteClass.INVALID))
            # A, C, G, T (either case) have bits 2..1 = 00, 01, 11, 10: codes 0, 1, 2, 3
            code = Mux(byte[2], Cat(~byte[1], 1), Cat(byte[1], 0))
            m.d.sync += codes[2 * j:2 * j + 2].eq(code)

        # speculative stages: for every start state, the running state and each byte's role
        running = [Const(s, _STATE_BITS) for s in states]
        roles = [[None] * nbytes for _ in states]
        for start in range(0, nbytes, self._bytes_per_stage):
            for j in range(start, min(start + self._bytes_per_stage, nbytes)):
                for s_index in range(len(states)):
                    step = Signal(_STEP_BITS, name=f"step_{s_index}_{j}")
                    m.d.comb += step.eq(step_table.word_select(Cat(classes[j], running[s_index]),
                                                               _STEP_BITS))
                    running[s_index] = step[:_STATE_BITS]
                    roles[s_index][j] = step[_STATE_BITS:]
            # pipeline register: everything still needed later moves one stage on
            running = [self._stage(m, value) for value in running]
            roles = [[None if r is None else self._stage(m, r) for r in row] for row in roles]
            classes = [self._stage(m, c) for c in classes]
            codes = self._stage(m, codes)
            eof = self._stage(m, eof)
            valid = self._stage(m, valid)

        # feedback: the true state selects one speculative row
        state = Signal(_STATE_BITS, init=LineState.LS_RECORD)
        next_state = Cat(*running).word_select(state, _STATE_BITS)
        with m.If(valid):
            m.d.sync += state.eq(Mux(eof, LineState.LS_RECORD, next_state))

        m.d.sync += [
            self.o.valid.eq(valid),
            self.o.payload.codes.eq(codes),
            self.o.payload.end_of_file.eq(eof),
        ]
        for j in range(nbytes):
            role = Cat(*(row[j] for row in roles)).word_select(state, _ROLE_BITS)
            m.d.sync += [
                self.o.payload.is_base[j].eq(valid & (role == ByteRole.BASE)),
                self.o.payload.is_break[j].eq(valid & (role == ByteRole.BREAK)),
            ]
        return m

    @staticmethod
    def _stage(m, value):
        registered = Signal.like(value) if isinstance(value, Signal) else Signal(len(value))
        m.d.sync += registered.eq(value)
        return registered
