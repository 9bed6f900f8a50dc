"""The JSD engine's Vitis RTL kernels (SPEC sections 4 and 6; docs/jsd_kernels.md).

``QueueBuilderKernel`` (``jsd_builder``): chunks in, one PQA record per ended genome out; host
arguments and layouts in kmerspec/kernels/jsd_builder.py. Genomes that do not end in a chunk keep
their Count-Min and PQA state in the lanes for the next call. The kernel finishes when the chunk
is consumed, every lane is idle and the n_records records are written.

``JsdSimilarityKernel`` (``jsd_similarity``): V pivot PQAs on chip, the JSD of every streamed
PQA with each; host arguments and layouts in kmerspec/kernels/jsd_similarity.py. Each record is
read trailer first (two bursts), so the streamed PQA's total M is known before its queues arrive.
"""

from amaranth.hdl import Mux, Signal

from kmerspec.kernels import jsd_builder, jsd_similarity
from kmerspec.regmap import ERROR_ARGUMENT

from ..vitis.chunk_kernel import (ChunkKernel, Countdown, SplitAddress, StreamKernel, error_word,
                                  issue_once, stream_through)
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
        self.core = QueueBuilderCore(params)
        super().__init__(params)

    def core_quiet(self, core):
        return core.idle

    def on_start(self, m):
        update = Signal()
        m.d.comb += self.core.plain_update.eq(update)
        return [update.eq(self.args.update[0])]


class JsdSimilarityKernel(StreamKernel):
    """V pivot PQAs on chip, JSD of every streamed PQA with each (:class:`JsdSimilarityCore`).

    Parameters
    ----------
    params : kmerspec.kernels.jsd_similarity.Params
    """

    Params = jsd_similarity.Params

    def __init__(self, params: jsd_similarity.Params = jsd_similarity.Params()):
        self.core = JsdSimilarityCore(params)
        super().__init__(params)

    def argument_checks(self):
        """The pointers, and ``n_pivots`` at most the V pivots the kernel holds."""
        return [*super().argument_checks(),
                (self.args.n_pivots > self.params.pivots,
                 error_word(ERROR_ARGUMENT, self.argument_index("n_pivots")))]

    def elaborate_body(self, m, reader, writer, call):
        g = self.params
        m.submodules.core = core = self.core
        stream_through(m, core, reader, writer)

        # each record is read trailer first: the trailer's and the body's 64-bit addresses are
        # registers stepped by the record size in two 32-bit halves, the upper half taking the
        # lower one's carry a cycle later (a 64-bit add in one cycle was 11 levels: 15 CARRY4
        # and its select); no command goes out while an upper half is still due, one cycle per
        # record of 2^R x n / 8 + 1 beats
        body = SplitAddress(m, "body_address")
        trailer = SplitAddress(m, "trailer_address")
        # the records still to request: its "due" a register bit (a nonzero test of the count
        # in front of the address loads was 4.11 ns); no command goes out in the cycle after
        # a load (the addresses settle), the count's adjustment
        records_left = Countdown(m, "records_left", 32)
        body_next = Signal()       # the trailer of the current record has been requested
        in_pivots = Signal()
        write_sent = issue_once(m, call, writer.cmd, self.args.out,
                                self.args.n_pqas * g.bus_bytes)
        m.d.comb += [
            core.n_pivots.eq(self.args.n_pivots),
            core.n_pqas.eq(self.args.n_pqas),
            reader.cmd.payload.addr.eq(Mux(body_next, body.value, trailer.value)),
            reader.cmd.payload.length.eq(Mux(body_next, g.pqa_bytes, g.bus_bytes)),
        ]

        def first_record(base):
            body.load(base, 0)
            trailer.load(base, g.pqa_bytes)

        with m.If(call.starting):
            m.d.comb += core.start.eq(1)
            m.d.sync += [
                core.counts_mode.eq(self.args.mode[0]),
                in_pivots.eq(1), body_next.eq(0),
            ]
            records_left.load(self.args.n_pivots)
            first_record(self.args.pivots)
        with m.If(call.running):
            with m.If(records_left.due):
                m.d.comb += reader.cmd.valid.eq(body.settled & trailer.settled)
                with m.If(reader.cmd.valid & reader.cmd.ready):
                    m.d.sync += body_next.eq(~body_next)
                    with m.If(body_next):
                        body.step(g.record_bytes)
                        trailer.step(g.record_bytes)
                        records_left.step()
            with m.Elif(in_pivots):
                m.d.sync += in_pivots.eq(0)
                records_left.load(self.args.n_pqas)
                first_record(self.args.pqas)
        return ~in_pivots & ~records_left.due & write_sent & ~core.busy & reader.idle
