"""The JACC sketch-construction Vitis RTL kernel (SPEC sections 3 and 6; docs/sketch_kernel.md).

Host arguments (index: name, kind, bundle)::

    0 src        pointer  m_axi_gmem0  chunk (host.layout.sketch: T lanes x B bytes, blocks)
    1 n_bytes    scalar                chunk bytes (a whole number of bus beats)
    2 dst        pointer  m_axi_gmem1  receives n_records sketch records back to back
    3 n_records  scalar                genomes that end in this chunk

Genomes that do not end in a chunk keep their parser state, k-mer window and partial sketches in
the lanes for the next call, so one genome can span any number of calls. The kernel finishes when
the chunk is consumed and the ``n_records`` records are written (B responses received).
"""

from amaranth.hdl import Module, Signal

from host.layout.sketch import SketchGeometry

from ..axi import AxiBurstReader, AxiBurstWriter, connect_axi_rw
from ..vitis.core import KernelCore
from ..vitis.description import Arg, Bundle, KernelDesc
from .core import SketchCore
from .params import check_k

__all__ = ["sketch_desc", "SketchKernel"]


def sketch_desc(data_width: int = 512, name: str = "sketch") -> KernelDesc:
    return KernelDesc(
        name=name,
        args=[Arg("src", "pointer", "gmem0"), Arg("n_bytes", "scalar"),
              Arg("dst", "pointer", "gmem1"), Arg("n_records", "scalar")],
        bundles=[Bundle("gmem0", data_width=data_width), Bundle("gmem1", data_width=data_width)],
    )


class SketchKernel(KernelCore):
    """Chunks in, one HyperLogLog record per ended genome out (:class:`SketchCore`).

    Parameters
    ----------
    lanes, bytes_per_lane : int
        T genome lanes of B bytes; ``8 T B`` is the AXI data width (a power of two).
    k, p, w : int
        k-mer length (1..32), HLL index bits (8..18), register width (4..8).
    """

    def __init__(self, lanes: int = 8, bytes_per_lane: int = 8, k: int = 31, p: int = 14,
                 w: int = 4, name: str = "sketch"):
        check_k(k)   # before any component exists, so a bad k leaves no unused elaboratable
        self.geometry = SketchGeometry(lanes=lanes, bytes_per_lane=bytes_per_lane, p=p, w=w)
        self.data_width = 8 * self.geometry.bus_bytes
        if self.data_width & (self.data_width - 1) or not 32 <= self.data_width <= 1024:
            raise ValueError(f"the bus (8 x lanes x bytes_per_lane = {self.data_width} bits) "
                             "must be a power of two from 32 to 1024")
        self.core = SketchCore(lanes=lanes, bytes_per_lane=bytes_per_lane, k=k, p=p, w=w)
        super().__init__(sketch_desc(self.data_width, name))

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
            writer.cmd.payload.length.eq(self.args.n_records * self.geometry.record_bytes),
        ]
        with m.FSM():
            with m.State("Idle"):
                with m.If(self.start):
                    m.d.sync += [
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
                            & ~core.ending_genome
                            & (core.records - records_at_start == self.args.n_records))
                with m.If(finished):
                    m.next = "Wait"
            with m.State("Wait"):
                with m.If(writer.idle):
                    m.d.comb += self.done.eq(1)
                    m.next = "Idle"
        return m
