"""The JACC sketch-construction Vitis RTL kernel ``jacc_sketch`` (SPEC sections 3 and 6;
docs/jacc_sketch_kernel.md).

Host arguments, chunk and record layouts: kmerspec/kernels/jacc_sketch.py. Genomes that do not
end in a chunk keep their parser state, k-mer window and partial sketches in the lanes for the
next call, so one genome can span any number of calls. The kernel finishes when the chunk is
consumed and the ``n_records`` records are written (B responses received).
"""

from kmerspec.kernels.jacc_sketch import Params

from ..vitis.chunk_kernel import ChunkKernel
from .core import SketchCore

__all__ = ["JaccSketchKernel"]


class JaccSketchKernel(ChunkKernel):
    """Chunks in, one HyperLogLog record per ended genome out (:class:`SketchCore`).

    Parameters
    ----------
    params : kmerspec.kernels.jacc_sketch.Params
        Lanes T, bytes per lane B (``8 T B`` is the AXI data width), k, p and w.
    """

    Params = Params

    def __init__(self, params: Params = Params()):
        self.params = params
        self.data_width = params.data_width
        self.core = SketchCore(lanes=params.lanes, bytes_per_lane=params.bytes_per_lane,
                               k=params.k, p=params.p, w=params.w)
        self.record_bytes = params.record_bytes
        super().__init__(params.desc)

    def core_quiet(self, core):
        return ~core.ending_genome
