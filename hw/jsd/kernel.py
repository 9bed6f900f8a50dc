"""The JSD engine's Vitis RTL kernels (SPEC sections 4 and 6; docs/jsd_kernels.md).

``QueueBuilderKernel`` (``jsd_build``), host arguments (index: name, kind, bundle)::

    0 src        pointer  m_axi_gmem0  chunk (kmerspec.layout.sketch chunk format, T lanes x B bytes)
    1 n_bytes    scalar                chunk bytes (a whole number of bus beats)
    2 dst        pointer  m_axi_gmem1  receives n_records PQA records (kmerspec.layout.jsd)
    3 n_records  scalar                genomes that end in this chunk
    4 update     scalar                0: conservative update "cu", 1: plain Count-Min "cm"

Genomes that do not end in a chunk keep their Count-Min and PQA state in the lanes for the next
call. The kernel finishes when the chunk is consumed, every lane is idle and the n_records
records are written.

``JsdSimilarityKernel`` (``jsd_similarity``), host arguments::

    0 pivots    pointer  m_axi_gmem0  n_pivots records (queue-builder layout, back to back)
    1 n_pivots  scalar                1 .. V
    2 pqas      pointer  m_axi_gmem0  n_pqas records compared with every pivot
    3 n_pqas    scalar
    4 out       pointer  m_axi_gmem1  n_pqas result beats (kmerspec.layout.jsd.unpack_results)
    5 mode      scalar                0: textbook JSD, 1: "counts" (pooled raw counts)

Each record is read trailer first (two bursts), so the streamed PQA's total M is known before its
queues arrive.
"""

from amaranth.hdl import Mux, Signal

from kmerspec.golden.jsd import SAMPLE_SEED
from kmerspec.layout.jsd import JsdGeometry

from ..vitis.chunk_kernel import ChunkKernel, StreamKernel, issue_once, stream_through
from ..vitis.description import Arg, Bundle, KernelDesc
from .builder import BuilderParams, QueueBuilderCore
from .similarity import JsdSimilarityCore, SimilarityParams

__all__ = ["QueueBuilderKernel", "queue_builder_desc", "JsdKernel", "JsdSimilarityKernel",
           "similarity_desc"]


def queue_builder_desc(data_width: int = 512, name: str = "jsd_build") -> KernelDesc:
    return KernelDesc(
        name=name,
        args=[Arg("src", "pointer", "gmem0"), Arg("n_bytes", "scalar"),
              Arg("dst", "pointer", "gmem1"), Arg("n_records", "scalar"),
              Arg("update", "scalar")],
        bundles=[Bundle("gmem0", data_width=data_width), Bundle("gmem1", data_width=data_width)],
    )


class QueueBuilderKernel(ChunkKernel):
    """Chunks in, one PQA record per ended genome out (parameters: :class:`BuilderParams`)."""

    def __init__(self, lanes: int = 8, bytes_per_lane: int = 8, k: int = 31, s: int = 10,
                 sample_seed: int = SAMPLE_SEED, d: int = 5, cw: int = 14, R: int = 12,
                 n: int = 8, fifo_depth: int = 64, name: str = "jsd_build"):
        self.params = BuilderParams(lanes=lanes, bytes_per_lane=bytes_per_lane, k=k, s=s,
                                    sample_seed=sample_seed, d=d, cw=cw, R=R, n=n,
                                    fifo_depth=fifo_depth)
        self.geometry = JsdGeometry(lanes, bytes_per_lane, R, n)
        self.data_width = self.params.bus_bits
        if self.data_width & (self.data_width - 1):
            raise ValueError(f"the bus (8 x lanes x bytes_per_lane = {self.data_width} bits) "
                             "must be a power of two")
        self.core = QueueBuilderCore(self.params)
        self.record_bytes = self.geometry.record_bytes
        super().__init__(queue_builder_desc(self.data_width, name))

    def core_quiet(self, core):
        return core.idle

    def on_start(self, m):
        update = Signal()
        m.d.comb += self.core.plain_update.eq(update)
        return [update.eq(self.args.update[0])]


#: the name hw/build.py registers for the JSD engine's build kernel
JsdKernel = QueueBuilderKernel


def similarity_desc(data_width: int = 512, name: str = "jsd_similarity") -> KernelDesc:
    return KernelDesc(
        name=name,
        args=[Arg("pivots", "pointer", "gmem0"), Arg("n_pivots", "scalar"),
              Arg("pqas", "pointer", "gmem0"), Arg("n_pqas", "scalar"),
              Arg("out", "pointer", "gmem1"), Arg("mode", "scalar")],
        bundles=[Bundle("gmem0", data_width=data_width), Bundle("gmem1", data_width=data_width)],
    )


class JsdSimilarityKernel(StreamKernel):
    """V pivot PQAs on chip, JSD of every streamed PQA with each (:class:`JsdSimilarityCore`)."""

    def __init__(self, pivots: int = 8, R: int = 12, n: int = 8, data_width: int = 512,
                 name: str = "jsd_similarity"):
        self.params = SimilarityParams(pivots=pivots, R=R, n=n, bus_bits=data_width)
        self.geometry = JsdGeometry(data_width // 64, 8, R, n)
        self.data_width = data_width
        self.core = JsdSimilarityCore(self.params)
        super().__init__(similarity_desc(data_width, name))

    def elaborate_body(self, m, reader, writer, call):
        g = self.geometry
        m.submodules.core = core = self.core
        stream_through(m, core, reader, writer)

        record_address = Signal(64)
        records_left = Signal(33)
        body_next = Signal()       # the trailer of the current record has been requested
        in_pivots = Signal()
        write_sent = issue_once(m, call, writer.cmd, self.args.out,
                                self.args.n_pqas * g.bus_bytes)
        m.d.comb += [
            core.n_pivots.eq(self.args.n_pivots),
            core.n_pqas.eq(self.args.n_pqas),
            reader.cmd.payload.addr.eq(Mux(body_next, record_address,
                                           record_address + g.pqa_bytes)),
            reader.cmd.payload.length.eq(Mux(body_next, g.pqa_bytes, g.bus_bytes)),
        ]
        with m.If(call.starting):
            m.d.comb += core.start.eq(1)
            m.d.sync += [
                core.counts_mode.eq(self.args.mode[0]),
                record_address.eq(self.args.pivots),
                records_left.eq(self.args.n_pivots),
                in_pivots.eq(1), body_next.eq(0),
            ]
        with m.If(call.running):
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
        return ~in_pivots & (records_left == 0) & write_sent & ~core.busy & reader.idle
