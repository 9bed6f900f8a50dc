"""The "chunk in, records out" kernel shell shared by the sketch and JSD queue-builder kernels.

Host arguments start with ``src`` (pointer, m_axi_gmem0), ``n_bytes``, ``dst`` (pointer,
m_axi_gmem1), ``n_records``; a subclass may add scalars. One call reads the ``n_bytes`` chunk at
``src`` into the core's input stream (one bus beat per cycle) and writes the core's output stream,
``n_records`` records of ``record_bytes``, to ``dst``. ``done`` rises when the chunk is consumed,
the core is quiet, exactly ``n_records`` new records have come out of it, and every write has its
B response. State the core keeps between calls (genomes spanning chunks) is untouched.

A subclass sets ``self.core`` (with streams ``i``/``o`` and a ``records`` counter) and
``self.record_bytes`` before calling ``KernelCore.__init__``, and overrides :meth:`core_quiet`
(and, for extra arguments, :meth:`on_start`).
"""

from amaranth.hdl import Module, Signal

from ..axi import AxiBurstReader, AxiBurstWriter, connect_axi_rw
from .core import KernelCore

__all__ = ["ChunkKernel"]


class ChunkKernel(KernelCore):
    """Base of kernels that turn chunks into records (see the module docstring)."""

    def core_quiet(self, core):
        """A 1-bit value: the core holds no unfinished record work from this call."""
        raise NotImplementedError

    def on_start(self, m: Module) -> list:
        """Statements for the ``sync`` domain on the start cycle (latch extra arguments)."""
        return []

    def elaborate(self, platform):
        m = Module()
        dw = self.data_width
        m.submodules.reader = reader = AxiBurstReader(data_width=dw)
        m.submodules.writer = writer = AxiBurstWriter(data_width=dw)
        m.submodules.core = core = self.core
        connect_axi_rw(m, self.m_axi_gmem0, reader=reader.axi)
        connect_axi_rw(m, self.m_axi_gmem1, writer=writer.axi)

        records_at_start = Signal(32)
        read_sent = Signal()
        write_sent = Signal()
        m.d.comb += [
            core.i.valid.eq(reader.data.valid),
            core.i.payload.eq(reader.data.payload.data),
            reader.data.ready.eq(core.i.ready),
            writer.data.valid.eq(core.o.valid),
            writer.data.payload.eq(core.o.payload),
            core.o.ready.eq(writer.data.ready),
            reader.cmd.payload.addr.eq(self.args.src),
            reader.cmd.payload.length.eq(self.args.n_bytes),
            writer.cmd.payload.addr.eq(self.args.dst),
            writer.cmd.payload.length.eq(self.args.n_records * self.record_bytes),
        ]
        start_statements = self.on_start(m)
        with m.FSM():
            with m.State("Idle"):
                with m.If(self.start):
                    m.d.sync += [
                        *start_statements,
                        records_at_start.eq(core.records),
                        read_sent.eq(self.args.n_bytes == 0),
                        write_sent.eq(self.args.n_records == 0),
                    ]
                    m.next = "Run"
            with m.State("Run"):
                m.d.comb += [reader.cmd.valid.eq(~read_sent), writer.cmd.valid.eq(~write_sent)]
                with m.If(reader.cmd.valid & reader.cmd.ready):
                    m.d.sync += read_sent.eq(1)
                with m.If(writer.cmd.valid & writer.cmd.ready):
                    m.d.sync += write_sent.eq(1)
                finished = (read_sent & write_sent & reader.idle & ~reader.data.valid
                            & self.core_quiet(core)
                            & (core.records - records_at_start == self.args.n_records))
                with m.If(finished):
                    m.next = "Wait"
            with m.State("Wait"):
                with m.If(writer.idle):
                    m.d.comb += self.done.eq(1)
                    m.next = "Idle"
        return m
