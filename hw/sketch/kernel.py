"""The JACC sketch-construction Vitis RTL kernel (SPEC sections 3 and 6; docs/sketch_kernel.md).

Host arguments (index: name, kind, bundle)::

    0 src        pointer  m_axi_gmem0  chunk (kmerspec.layout.sketch: T lanes x B bytes, blocks)
    1 n_bytes    scalar                chunk bytes (a whole number of bus beats)
    2 dst        pointer  m_axi_gmem1  receives n_records sketch records back to back
    3 n_records  scalar                genomes that end in this chunk

Genomes that do not end in a chunk keep their parser state, k-mer window and partial sketches in
the lanes for the next call, so one genome can span any number of calls. The kernel finishes when
the chunk is consumed and the ``n_records`` records are written (B responses received).
"""

from kmerspec.layout.sketch import SketchGeometry

from ..vitis.chunk_kernel import ChunkKernel
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


class SketchKernel(ChunkKernel):
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
        self.record_bytes = self.geometry.record_bytes
        super().__init__(sketch_desc(self.data_width, name))

    def core_quiet(self, core):
        return ~core.ending_genome
