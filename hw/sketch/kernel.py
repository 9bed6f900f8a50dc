"""The JACC sketch-construction Vitis RTL kernel ``jacc_sketch`` (SPEC sections 3 and 6;
docs/jacc_sketch_kernel.md).

Host arguments, chunk and record layouts: kmerspec/kernels/jacc_sketch.py. Genomes that do not
end in a chunk keep their parser state, k-mer window and partial sketches in the lanes for the
next call, so one genome can span any number of calls. The kernel finishes when the chunk is
consumed and the ``n_records`` records are written (B responses received).

Built with the minimum-count prefilter (``mc_depth`` > 0, SPEC 7), the kernel takes a fifth
argument ``min_count``, latched at ap_start; 0 or a value above 2^mc_counter_bits - 1 ends the
call with ERROR_ARGUMENT. Keep it the same for every call of a genome.
"""

from amaranth.hdl import Signal

from kmerspec.kernels.jacc_sketch import Params
from kmerspec.regmap import ERROR_ARGUMENT

from ..vitis.chunk_kernel import ChunkKernel, error_word
from .core import SketchCore

__all__ = ["JaccSketchKernel"]


class JaccSketchKernel(ChunkKernel):
    """Chunks in, one HyperLogLog record per ended genome out (:class:`SketchCore`).

    Parameters
    ----------
    params : kmerspec.kernels.jacc_sketch.Params
        Lanes T, bytes per lane B (``8 T B`` is the AXI data width), k, p and w; with
        ``mc_depth`` > 0 the minimum-count prefilter and its ``min_count`` argument.
    """

    Params = Params

    def __init__(self, params: Params = Params()):
        self.core = SketchCore(lanes=params.lanes, bytes_per_lane=params.bytes_per_lane,
                               k=params.k, p=params.p, w=params.w, prefilter=params.prefilter)
        super().__init__(params)

    def core_quiet(self, core):
        return ~core.ending_genome

    def argument_checks(self):
        checks = super().argument_checks()
        if self.params.prefilter is not None:
            most = (1 << self.params.mc_counter_bits) - 1
            checks.append(((self.args.min_count == 0) | (self.args.min_count > most),
                           error_word(ERROR_ARGUMENT, self.argument_index("min_count"))))
        return checks

    def on_start(self, m):
        if self.params.prefilter is None:
            return []
        min_count = Signal(self.params.mc_counter_bits)
        m.d.comb += self.core.min_count.eq(min_count)
        return [min_count.eq(self.args.min_count)]
