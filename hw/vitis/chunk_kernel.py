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
``self.core`` (with streams ``i``/``o`` and a ``records`` counter) and ``self.record_bytes``
before calling ``KernelCore.__init__``, and overrides :meth:`ChunkKernel.core_quiet` (and, for
extra arguments, :meth:`ChunkKernel.on_start`).
"""

from dataclasses import dataclass

from amaranth.hdl import Module, Signal, Value

from ..axi import AxiBurstReader, AxiBurstWriter, connect_axi_rw
from .core import KernelCore

__all__ = ["CallState", "StreamKernel", "ChunkKernel", "stream_through", "issue_once"]


@dataclass(frozen=True)
class CallState:
    """What the shell tells a kernel body about the current call."""

    #: the cycle ``start`` is accepted (arguments are valid: latch what the call needs)
    starting: Value
    #: from the cycle after ``starting`` until the body's ``finished``
    running: Value


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


def issue_once(m: Module, call: CallState, command, address, length) -> Signal:
    """Issue one (``address``, ``length``) command on a reader's or writer's ``cmd`` stream per
    call, none if ``length`` is 0; returns the 1-bit state "issued (or not needed)"."""
    issued = Signal()
    m.d.comb += [command.payload.addr.eq(address), command.payload.length.eq(length)]
    with m.If(call.starting):
        m.d.sync += issued.eq(length == 0)
    with m.If(call.running):
        m.d.comb += command.valid.eq(~issued)
    with m.If(command.valid & command.ready):
        m.d.sync += issued.eq(1)
    return issued


class StreamKernel(KernelCore):
    """Base of every kernel (see the module docstring); ``self.data_width`` is the bus width."""

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
        starting, running = Signal(), Signal()
        finished = self.elaborate_body(m, reader, writer, CallState(starting, running))
        with m.FSM():
            with m.State("Idle"):
                m.d.comb += starting.eq(self.start)
                with m.If(self.start):
                    m.next = "Run"
            with m.State("Run"):
                m.d.comb += running.eq(1)
                with m.If(finished):
                    m.next = "Wait"
            with m.State("Wait"):
                with m.If(writer.idle):
                    m.d.comb += self.done.eq(1)
                    m.next = "Idle"
        return m


class ChunkKernel(StreamKernel):
    """Base of kernels that turn chunks into records (see the module docstring)."""

    def core_quiet(self, core):
        """A 1-bit value: the core holds no unfinished record work from this call."""
        raise NotImplementedError

    def on_start(self, m: Module) -> list:
        """Statements for the ``sync`` domain on the start cycle (latch extra arguments)."""
        return []

    def elaborate_body(self, m, reader, writer, call):
        m.submodules.core = core = self.core
        stream_through(m, core, reader, writer)
        read_sent = issue_once(m, call, reader.cmd, self.args.src, self.args.n_bytes)
        write_sent = issue_once(m, call, writer.cmd, self.args.dst,
                                self.args.n_records * self.record_bytes)
        records_at_start = Signal(32)
        start_statements = self.on_start(m)
        with m.If(call.starting):
            m.d.sync += [*start_statements, records_at_start.eq(core.records)]
        return (read_sent & write_sent & reader.idle & ~reader.data.valid & self.core_quiet(core)
                & (core.records - records_at_start == self.args.n_records))
