"""The JSD engine's Vitis RTL kernels (SPEC sections 4 and 6; docs/jsd_kernels.md).

``QueueBuilderKernel`` (``jsd_build``), host arguments (index: name, kind, bundle)::

    0 src        pointer  m_axi_gmem0  chunk (host.layout.sketch chunk format, T lanes x B bytes)
    1 n_bytes    scalar                chunk bytes (a whole number of bus beats)
    2 dst        pointer  m_axi_gmem1  receives n_records PQA records (host.layout.jsd)
    3 n_records  scalar                genomes that end in this chunk
    4 update     scalar                0: conservative update "cu", 1: plain Count-Min "cm"

Genomes that do not end in a chunk keep their Count-Min and PQA state in the lanes for the next
call. The kernel finishes when the chunk is consumed, every lane is idle and the n_records
records are written.
"""

from amaranth.hdl import Module, Signal

from host.golden.jsd import SAMPLE_SEED
from host.layout.jsd import JsdGeometry

from ..axi import AxiBurstReader, AxiBurstWriter, connect_axi_rw
from ..vitis.core import KernelCore
from ..vitis.description import Arg, Bundle, KernelDesc
from .builder import BuilderParams, QueueBuilderCore

__all__ = ["QueueBuilderKernel", "queue_builder_desc", "JsdKernel"]


def queue_builder_desc(data_width: int = 512, name: str = "jsd_build") -> KernelDesc:
    return KernelDesc(
        name=name,
        args=[Arg("src", "pointer", "gmem0"), Arg("n_bytes", "scalar"),
              Arg("dst", "pointer", "gmem1"), Arg("n_records", "scalar"),
              Arg("update", "scalar")],
        bundles=[Bundle("gmem0", data_width=data_width), Bundle("gmem1", data_width=data_width)],
    )


class QueueBuilderKernel(KernelCore):
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
        super().__init__(queue_builder_desc(self.data_width, name))

    def elaborate(self, platform):
        m = Module()
        dw = self.data_width
        m.submodules.reader = reader = AxiBurstReader(data_width=dw)
        m.submodules.writer = writer = AxiBurstWriter(data_width=dw)
        m.submodules.core = core = self.core
        connect_axi_rw(m, self.m_axi_gmem0, reader=reader.axi)
        connect_axi_rw(m, self.m_axi_gmem1, writer=writer.axi)

        update = Signal()
        records_at_start = Signal(32)
        read_sent = Signal()
        write_sent = Signal()
        m.d.comb += [
            core.plain_update.eq(update),
            core.i.valid.eq(reader.data.valid),
            core.i.payload.eq(reader.data.payload.data),
            reader.data.ready.eq(core.i.ready),
            writer.data.valid.eq(core.o.valid),
            writer.data.payload.eq(core.o.payload),
            core.o.ready.eq(writer.data.ready),
            reader.cmd.payload.addr.eq(self.args.src),
            reader.cmd.payload.length.eq(self.args.n_bytes),
            writer.cmd.payload.addr.eq(self.args.dst),
            writer.cmd.payload.length.eq(self.args.n_records * self.geometry.record_bytes),
        ]
        with m.FSM():
            with m.State("Idle"):
                with m.If(self.start):
                    m.d.sync += [
                        update.eq(self.args.update[0]),
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
                finished = (read_sent & write_sent & reader.idle & ~reader.data.valid & core.idle
                            & (core.records - records_at_start == self.args.n_records))
                with m.If(finished):
                    m.next = "Wait"
            with m.State("Wait"):
                with m.If(writer.idle):
                    m.d.comb += self.done.eq(1)
                    m.next = "Idle"
        return m


#: the name hw/build.py registers for the JSD engine's build kernel
JsdKernel = QueueBuilderKernel
