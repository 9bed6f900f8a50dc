"""The JSD engine's Vitis RTL kernels (SPEC sections 4 and 6; docs/jsd_kernels.md).

``QueueBuilderKernel`` (``jsd_builder``): chunks in, one PQA record per ended genome out; host
arguments and layouts in kmerspec/kernels/jsd_builder.py. Genomes that do not end in a chunk keep
their Count-Min and PQA state in the lanes for the next call. The kernel finishes when the chunk
is consumed, every lane is idle and the n_records records are written.

``JsdSimilarityKernel`` (``jsd_similarity``): V pivot PQAs on chip, the JSD of every streamed
PQA with each; host arguments and layouts in kmerspec/kernels/jsd_similarity.py. Each record is
read trailer first (two bursts), so the streamed PQA's total M is known before its queues arrive.
"""

from amaranth.hdl import Module, Mux, Signal

from kmerspec.kernels import jsd_builder, jsd_similarity

from ..axi import AxiBurstReader, AxiBurstWriter, connect_axi_rw
from ..vitis.chunk_kernel import ChunkKernel
from ..vitis.core import KernelCore
from .builder import QueueBuilderCore
from .similarity import JsdSimilarityCore

__all__ = ["QueueBuilderKernel", "JsdSimilarityKernel"]


class QueueBuilderKernel(ChunkKernel):
    """Chunks in, one PQA record per ended genome out (:class:`QueueBuilderCore`).

    Parameters
    ----------
    params : kmerspec.kernels.jsd_builder.Params
    """

    Params = jsd_builder.Params

    def __init__(self, params: jsd_builder.Params = jsd_builder.Params()):
        self.params = params
        self.data_width = params.data_width
        self.core = QueueBuilderCore(params)
        self.record_bytes = params.record_bytes
        super().__init__(params.desc)

    def core_quiet(self, core):
        return core.idle

    def on_start(self, m):
        update = Signal()
        m.d.comb += self.core.plain_update.eq(update)
        return [update.eq(self.args.update[0])]


class JsdSimilarityKernel(KernelCore):
    """V pivot PQAs on chip, JSD of every streamed PQA with each (:class:`JsdSimilarityCore`).

    Parameters
    ----------
    params : kmerspec.kernels.jsd_similarity.Params
    """

    Params = jsd_similarity.Params

    def __init__(self, params: jsd_similarity.Params = jsd_similarity.Params()):
        self.params = params
        self.data_width = params.data_width
        self.core = JsdSimilarityCore(params)
        super().__init__(params.desc)

    def elaborate(self, platform):
        m = Module()
        dw = self.data_width
        g = self.params
        m.submodules.reader = reader = AxiBurstReader(data_width=dw)
        m.submodules.writer = writer = AxiBurstWriter(data_width=dw)
        m.submodules.core = core = self.core
        connect_axi_rw(m, self.m_axi_gmem0, reader=reader.axi)
        connect_axi_rw(m, self.m_axi_gmem1, writer=writer.axi)

        record_address = Signal(64)
        records_left = Signal(33)
        body_next = Signal()       # the trailer of the current record has been requested
        in_pivots = Signal()
        write_sent = Signal()
        m.d.comb += [
            core.i.valid.eq(reader.data.valid),
            core.i.payload.eq(reader.data.payload.data),
            reader.data.ready.eq(core.i.ready),
            writer.data.valid.eq(core.o.valid),
            writer.data.payload.eq(core.o.payload),
            core.o.ready.eq(writer.data.ready),
            core.n_pivots.eq(self.args.n_pivots),
            core.n_pqas.eq(self.args.n_pqas),
            reader.cmd.payload.addr.eq(Mux(body_next, record_address,
                                           record_address + g.pqa_bytes)),
            reader.cmd.payload.length.eq(Mux(body_next, g.pqa_bytes, g.bus_bytes)),
            writer.cmd.payload.addr.eq(self.args.out),
            writer.cmd.payload.length.eq(self.args.n_pqas * g.bus_bytes),
        ]
        with m.FSM():
            with m.State("Idle"):
                with m.If(self.start):
                    m.d.comb += core.start.eq(1)
                    m.d.sync += [
                        core.counts_mode.eq(self.args.mode[0]),
                        record_address.eq(self.args.pivots),
                        records_left.eq(self.args.n_pivots),
                        in_pivots.eq(1), body_next.eq(0),
                        write_sent.eq(self.args.n_pqas == 0),
                    ]
                    m.next = "Run"
            with m.State("Run"):
                with m.If(records_left != 0):
                    m.d.comb += reader.cmd.valid.eq(1)
                    with m.If(reader.cmd.ready):
                        m.d.sync += body_next.eq(~body_next)
                        with m.If(body_next):
                            m.d.sync += [record_address.eq(record_address + g.record_bytes),
                                         records_left.eq(records_left - 1)]
                with m.Elif(in_pivots):
                    m.d.sync += [in_pivots.eq(0), record_address.eq(self.args.pqas),
                                 records_left.eq(self.args.n_pqas)]
                m.d.comb += writer.cmd.valid.eq(~write_sent)
                with m.If(writer.cmd.valid & writer.cmd.ready):
                    m.d.sync += write_sent.eq(1)
                with m.If(~in_pivots & (records_left == 0) & write_sent & ~core.busy
                          & reader.idle):
                    m.next = "Wait"
            with m.State("Wait"):
                with m.If(writer.idle):
                    m.d.comb += self.done.eq(1)
                    m.next = "Idle"
        return m
