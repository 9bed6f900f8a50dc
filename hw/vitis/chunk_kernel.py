"""The kernel shell every kernel is built on: reads through m_axi_gmem0, writes through
m_axi_gmem1, ap_start to ap_done; and its "chunk in, records out" form.

:class:`StreamKernel` instantiates the :class:`~hw.axi.AxiBurstReader` (on m_axi_gmem0) and the
:class:`~hw.axi.AxiBurstWriter` (on m_axi_gmem1) and runs the call protocol: a call starts on
``start`` while idle, runs until the kernel's body says it has finished (every read command
issued and consumed, every output beat handed to the writer), then waits for the writer's last B
response and pulses ``done``. A subclass implements :meth:`StreamKernel.elaborate_body`, which
issues the read and write commands and moves the data, given a :class:`CallState` (``starting``:
the start cycle, for latching arguments; ``running``: between it and the finish).

:class:`ChunkKernel` is the shell of the kernels whose core turns chunks into records (sketch, JSD
queue builder). Host arguments start with ``src`` (pointer, m_axi_gmem0), ``n_bytes``, ``dst``
(pointer, m_axi_gmem1), ``n_records``; a subclass may add scalars. One call reads the ``n_bytes``
chunk at ``src`` into the core's input stream (one bus beat per cycle) and writes the core's
output stream, ``n_records`` records of ``record_bytes``, to ``dst``. The call finishes when the
chunk is consumed, the core is quiet and exactly ``n_records`` new records have come out of it.
State the core keeps between calls (genomes spanning chunks) is untouched. A subclass sets
``self.core`` (with streams ``i``/``o`` and a ``records`` counter) before calling
``ChunkKernel.__init__(params)`` (which takes ``record_bytes`` from the Params), and overrides
:meth:`ChunkKernel.core_quiet` (and, for extra arguments, :meth:`ChunkKernel.on_start`).

Errors (the ERROR register, :mod:`kmerspec.regmap`; docs/kernel_interface.md): on ``start`` the
shell checks the arguments (:meth:`StreamKernel.argument_checks`: by default every pointer is
non-zero and aligned to its bus; a kernel adds its own); a failed check ends the call at once
(``done`` the cycle after ``start``, nothing read or written). An error response of the memory
(SLVERR/DECERR) or a slave's protocol error (RLAST misplaced, an RID/BID not ours) is reported at
the end of the call, which completes normally. A body may end a call early by driving
``CallState.failure`` (the chunk kernels do when the chunk and ``n_records`` disagree): the
reader and writer are aborted (:class:`~hw.axi.burst.BurstTransfer`: an address on offer is held
until its handshake and every accepted burst's data beats are transferred, so nothing of the call
stays in the interconnect), the core's registers are reset, and ``done`` follows once both are
idle.

Clean state: a call that starts with ``fresh`` (the control block's FRESH register: set by reset
and by the host, which sets it before its first call; kmerspec.regmap) resets the core first,
one cycle before the body's ``starting``.
"""

from dataclasses import dataclass

from amaranth.hdl import Cat, Module, ResetInserter, Signal, Value, Mux

from kmerspec.regmap import (ERROR_ARGUMENT, ERROR_AXI_READ, ERROR_AXI_READ_PROTOCOL,
                             ERROR_AXI_WRITE, ERROR_AXI_WRITE_PROTOCOL, ERROR_NULL_POINTER, ERROR_RECORDS_EXTRA, ERROR_RECORDS_MISSING,
                             ERROR_UNALIGNED_POINTER)

from ..axi import AxiBurstReader, AxiBurstWriter, connect_axi_rw
from ..common.pipeline import chunked_sum
from .core import KernelCore

__all__ = ["CallState", "StreamKernel", "ChunkKernel", "stream_through", "issue_once",
           "SplitAddress", "Countdown", "error_word", "CHUNK_QUIET_CYCLES"]

#: Cycles a chunk kernel waits, with its input consumed and its core quiet, for records that
#: n_records promised before it ends the call with ERROR_RECORDS_MISSING (longer than any
#: core's latency from its last input beat to its first record beat).
CHUNK_QUIET_CYCLES = 256


def error_word(code: int, argument: int = 0) -> int:
    """An ERROR register value: the code in bits 7:0, the argument index in 15:8."""
    return code | argument << 8


@dataclass(frozen=True)
class CallState:
    """What the shell tells a kernel body about the current call."""

    #: the cycle ``start`` is accepted (arguments are valid: latch what the call needs)
    starting: Value
    #: from the cycle after ``starting`` until the body's ``finished``
    running: Value
    #: 32 bits the body may drive while ``running``: a non-zero ERROR word ends the call
    failure: Signal


def stream_through(m: Module, core, reader: AxiBurstReader, writer: AxiBurstWriter) -> None:
    """The reader's beats into ``core.i``, ``core.o`` into the writer."""
    m.d.comb += [
        core.i.valid.eq(reader.data.valid),
        core.i.payload.eq(reader.data.payload.data),
        reader.data.ready.eq(core.i.ready),
        writer.data.valid.eq(core.o.valid),
        writer.data.payload.eq(core.o.payload),
        core.o.ready.eq(writer.data.ready),
    ]


def constant_product(m: Module, value, constant: int, width: int, name: str):
    """``value * constant`` mod 2^width as a registered sum of shifted copies of ``value``, one
    per set bit of the constant (records are 2^a + 2^b bytes or beats: one adder), so no DSP
    multiplies between fabric registers; returns ``(product, latency)``."""
    terms = [(bit, value) for bit in range(width) if constant >> bit & 1]
    if len(terms) > 1:
        return chunked_sum(m, terms, name, width)
    product = Signal(width, name=name)
    m.d.sync += product.eq(Value.cast(value) << terms[0][0] if terms else 0)
    return product, 1


def settled_after(m: Module, call: CallState, cycles: int, name: str) -> Signal:
    """High from ``cycles`` cycles after a call's first running cycle on: a chain of ``cycles``
    + 1 registers fed by the arguments (valid in the start cycle) holds this call's value from
    then on."""
    count = Signal(range(cycles + 1), name=f"{name}_count")
    with m.If(call.starting):
        m.d.sync += count.eq(0)
    with m.Elif(count != cycles):
        m.d.sync += count.eq(count + 1)
    return count == cycles


def issue_once(m: Module, call: CallState, command, address, length, settled=1) -> Signal:
    """Issue one (``address``, ``length``) command on a reader's or writer's ``cmd`` stream per
    call, none if ``length`` is 0, once ``settled`` (``length`` holds its value for this call);
    returns the 1-bit state "issued (or not needed)"."""
    issued = Signal()
    m.d.comb += [command.payload.addr.eq(address), command.payload.length.eq(length)]
    with m.If(call.starting):
        m.d.sync += issued.eq(0)
    # ``length`` is read from the first running cycle on (or once settled), so it may be a
    # register loaded from the arguments in the start cycle; its zero test is registered (a
    # 64-bit test in front of ``issued`` was the sketch kernel's deepest path), so the command
    # goes out a cycle after that
    length_zero = Signal()
    primed = Signal()
    m.d.sync += [length_zero.eq(length == 0), primed.eq(call.running & settled)]
    with m.If(call.starting):
        m.d.sync += primed.eq(0)
    with m.If(call.running & ~issued & settled & primed):
        with m.If(length_zero):
            m.d.sync += issued.eq(1)
        with m.Else():
            m.d.comb += command.valid.eq(1)
    with m.If(command.valid & command.ready):
        m.d.sync += issued.eq(1)
    return issued


class SplitAddress:
    """A 64-bit address register loaded with ``base + offset`` or stepped by a constant below
    2^32, in two 32-bit halves: the low half and its carry in the cycle of the load or step, the
    high half in the next cycle. :attr:`value` is the address whenever :attr:`settled` (a 64-bit
    add in one cycle is 16 CARRY4 and its select: 9-11 levels in the JSD and JACC similarity
    kernels)."""

    def __init__(self, m, name):
        self.m = m
        self.low = Signal(32, name=f"{name}_low")
        self.high = Signal(32, name=f"{name}_high")
        self.carry = Signal(name=f"{name}_carry")
        self.value = Signal(64, name=name)
        self.settled = Signal(name=f"{name}_settled", init=1)
        m.d.comb += self.value.eq(Cat(self.low, self.high))
        m.d.sync += [self.settled.eq(1), self.carry.eq(0)]
        with m.If(~self.settled):
            m.d.sync += self.high.eq(self.high + self.carry)

    def load(self, base, offset):
        """``base + offset`` (both up to 64 bits), each half's sum in one cycle."""
        offset = Value.cast(offset)
        self.m.d.sync += [Cat(self.low, self.carry).eq(base[:32] + offset[:32]),
                          self.high.eq(base[32:64] + offset[32:64]), self.settled.eq(0)]

    def step(self, step):
        assert 0 <= step < 1 << 32
        self.m.d.sync += [Cat(self.low, self.carry).eq(self.low + step), self.settled.eq(0)]


class Countdown:
    """A count of things still due, loaded with n and stepped down by one, whose "some due"
    (n > 0) is a register bit, not a compare: it holds n - 1 in one more bit than n, and
    :attr:`due` is the inverted sign. (A nonzero test of a 33-bit count that is also decremented
    was a 7-level path in the similarity kernels.) The - 1 is applied in the cycle after a load,
    in which :meth:`step` must not be called and :attr:`due` is 1 whatever n."""

    def __init__(self, m, name, width):
        self.m = m
        self.value = Signal(width + 1, name=name)
        self.adjust = Signal(name=f"{name}_adjust")
        self.due = ~self.value[-1]
        m.d.sync += self.adjust.eq(0)
        with m.If(self.adjust):
            m.d.sync += self.value.eq(self.value - 1)

    def load(self, n):
        self.m.d.sync += [self.value.eq(n), self.adjust.eq(1)]

    def step(self):
        self.m.d.sync += self.value.eq(self.value - 1)


class StreamKernel(KernelCore):
    """Base of every kernel (see the module docstring); ``self.data_width`` is the bus width.

    ``self.core_reset`` (1 bit) pulses when an aborted call ends and when a call starts with
    ``fresh`` (the cycle before ``starting``): a body resets its core's registers with it
    (``ResetInserter``), and a core that keeps memories across calls clears them after its reset,
    so that the next call starts from a clean state.
    """

    #: The core keeps state across calls (a FRESH call resets it first, one cycle); a kernel
    #: that keeps nothing starts a FRESH call like any other.
    keeps_state = False

    def __init__(self, params):
        """``params``: the kernel's Params (kmerspec.kernels): its ``desc`` (host arguments and
        ports) and its ``data_width`` (the bus width)."""
        self.params = params
        self.data_width = params.data_width
        super().__init__(params.desc)

    def argument_checks(self) -> list:
        """``[(condition, ERROR word)]`` on ``self.args`` at ``start``, the first true one wins.
        Default: every pointer argument is non-zero and a multiple of its bus width in bytes."""
        checks = []
        for index, arg in enumerate(self.desc.args):
            if arg.kind != "pointer":
                continue
            value = getattr(self.args, arg.name)
            bus_bytes = self.desc.bundle(arg.bundle).data_width // 8
            checks.append((value == 0, error_word(ERROR_NULL_POINTER, index)))
            checks.append((value[:max(1, bus_bytes.bit_length() - 1)] != 0 if bus_bytes > 1
                           else Value.cast(0), error_word(ERROR_UNALIGNED_POINTER, index)))
        return checks

    def argument_index(self, name: str) -> int:
        return [arg.name for arg in self.desc.args].index(name)

    def elaborate_body(self, m: Module, reader: AxiBurstReader, writer: AxiBurstWriter,
                       call: CallState) -> Value:
        """Build the kernel's work; return ``finished``, a 1-bit value: while ``call.running``,
        the call has read and handed over everything (only the writer may still be busy)."""
        raise NotImplementedError

    def elaborate(self, platform):
        m = Module()
        m.submodules.reader = reader = AxiBurstReader(data_width=self.data_width)
        m.submodules.writer = writer = AxiBurstWriter(data_width=self.data_width)
        connect_axi_rw(m, self.m_axi_gmem0, reader=reader.axi)
        connect_axi_rw(m, self.m_axi_gmem1, writer=writer.axi)
        starting, running, failure = Signal(), Signal(), Signal(32)
        self.core_reset = Signal()
        finished = self.elaborate_body(m, reader, writer, CallState(starting, running, failure))

        argument_error = Signal(32)
        for condition, word in reversed(self.argument_checks()):
            argument_error = Mux(condition, word, argument_error)
        error = Signal(32)       # the argument or body failure of this call
        m.d.comb += [
            reader.clear.eq(starting), writer.clear.eq(starting),
            self.error.eq(Mux(error != 0, error,
                              Mux(reader.error, ERROR_AXI_READ,
                                  Mux(writer.error, ERROR_AXI_WRITE,
                                      Mux(reader.protocol_error, ERROR_AXI_READ_PROTOCOL,
                                          Mux(writer.protocol_error, ERROR_AXI_WRITE_PROTOCOL,
                                              0)))))),
        ]
        with m.FSM():
            with m.State("Idle"):
                # a refused call never reaches the body; a fresh one resets the core first
                fresh = self.fresh if self.keeps_state else 0
                m.d.comb += starting.eq(self.start & (argument_error == 0) & ~fresh)
                with m.If(self.start):
                    m.d.sync += error.eq(argument_error)
                    with m.If(argument_error != 0):
                        m.next = "Refuse"
                    with m.Elif(fresh):
                        m.d.comb += self.core_reset.eq(1)
                        m.next = "Begin"
                    with m.Else():
                        m.next = "Run"
            with m.State("Begin"):
                m.d.comb += starting.eq(1)
                m.next = "Run"
            with m.State("Run"):
                m.d.comb += running.eq(1)
                with m.If(failure != 0):
                    m.d.sync += error.eq(failure)
                    m.next = "Abort"
                with m.Elif(finished):
                    m.next = "Wait"
            with m.State("Wait"):
                with m.If(writer.idle):
                    m.d.comb += self.done.eq(1)
                    m.next = "Idle"
            with m.State("Abort"):
                m.d.comb += [reader.abort.eq(1), writer.abort.eq(1)]
                with m.If(reader.idle & writer.idle):
                    m.d.comb += [self.done.eq(1), self.core_reset.eq(1)]
                    m.next = "Idle"
            with m.State("Refuse"):
                m.d.comb += self.done.eq(1)
                m.next = "Idle"
        return m


class ChunkKernel(StreamKernel):
    """Base of kernels that turn chunks into records (see the module docstring)."""

    keeps_state = True

    def __init__(self, params):
        self.record_bytes = params.record_bytes
        super().__init__(params)

    def core_quiet(self, core):
        """A 1-bit value: the core holds no unfinished record work from this call."""
        raise NotImplementedError

    def on_start(self, m: Module) -> list:
        """Statements for the ``sync`` domain on the start cycle (latch extra arguments)."""
        return []

    def argument_checks(self):
        """The pointers, and: ``n_bytes`` a whole number of bus beats, ``n_records`` records fit
        in a 32-bit byte length."""
        bus_bytes = self.data_width // 8
        most_records = (1 << 32) // self.record_bytes - 1
        return [*super().argument_checks(),
                (self.args.n_bytes % bus_bytes != 0,
                 error_word(ERROR_ARGUMENT, self.argument_index("n_bytes"))),
                (self.args.n_records > most_records,
                 error_word(ERROR_ARGUMENT, self.argument_index("n_records")))]

    def elaborate_body(self, m, reader, writer, call):
        core = self.core
        m.submodules.core = ResetInserter({"sync": self.core_reset})(core)
        stream_through(m, core, reader, writer)
        read_sent = issue_once(m, call, reader.cmd, self.args.src, self.args.n_bytes)
        # the arguments are latched at the start, so the registered products of this call's
        # record count hold from ``settled`` on
        bus_bytes = self.data_width // 8
        if self.record_bytes % bus_bytes:
            raise ValueError(f"{self.desc.name}: records of {self.record_bytes} bytes are not "
                             f"whole {bus_bytes}-byte bus beats")
        write_length, length_latency = constant_product(m, self.args.n_records,
                                                        self.record_bytes, 32, "write_length")
        expected_beats, beats_latency = constant_product(
            m, self.args.n_records, self.record_bytes // bus_bytes, 32, "expected_beats")
        settled = settled_after(m, call, max(length_latency, beats_latency) - 1, "products")
        self._check_record_count(m, core, reader, call, expected_beats, settled)
        write_sent = issue_once(m, call, writer.cmd, self.args.dst, write_length, settled)
        # the call's last record number (modulo 2^32), latched at the start so that the test
        # below is an equality and not a 32-bit difference and compare in one cycle
        records_target = Signal(32)
        start_statements = self.on_start(m)
        with m.If(call.starting):
            m.d.sync += [*start_statements,
                         records_target.eq(core.records + self.args.n_records)]
        # registered: low in the first running cycle, then one cycle behind the record count
        records_complete = Signal()
        m.d.sync += records_complete.eq(~call.starting & (core.records == records_target))
        return (read_sent & write_sent & reader.idle & ~reader.data.valid & self.core_quiet(core)
                & records_complete)

    def _check_record_count(self, m, core, reader, call, expected_beats, settled):
        """``call.failure`` when the chunk and ``n_records`` (``expected_beats`` record beats,
        valid once ``settled``) disagree: the core offers a beat past the ``n_records`` records
        (too many records), or the chunk has been read, the core is quiet and no record beat
        came for CHUNK_QUIET_CYCLES cycles while beats are missing."""
        beats_out = Signal(32)
        quiet_for = Signal(range(CHUNK_QUIET_CYCLES + 1))
        with m.If(call.starting):
            m.d.sync += [beats_out.eq(0), quiet_for.eq(0)]
        with m.If(core.o.valid & core.o.ready):
            m.d.sync += beats_out.eq(beats_out + 1)
        input_done = reader.idle & ~reader.data.valid & ~core.i.valid
        quiet = call.running & settled & input_done & self.core_quiet(core) & ~core.o.valid
        with m.If(quiet & (beats_out < expected_beats)):
            with m.If(quiet_for != CHUNK_QUIET_CYCLES):
                m.d.sync += quiet_for.eq(quiet_for + 1)
        with m.Else():
            m.d.sync += quiet_for.eq(0)
        index = self.argument_index("n_records")
        with m.If(call.running & settled & core.o.valid & (beats_out == expected_beats)):
            m.d.comb += call.failure.eq(error_word(ERROR_RECORDS_EXTRA, index))
        with m.Elif(quiet_for == CHUNK_QUIET_CYCLES):
            m.d.comb += call.failure.eq(error_word(ERROR_RECORDS_MISSING, index))
