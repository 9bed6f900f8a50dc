"""Contract of the JACC sketch-construction kernel ``jacc_sketch`` (SPEC 3 and 6;
docs/jacc_sketch_kernel.md): its Params, host arguments and record layout.

Host arguments (index: name, kind, bundle)::

    0 src        pointer  m_axi_gmem0  chunk (kmerspec.chunks: T lanes x B bytes, blocks)
    1 n_bytes    scalar                chunk bytes (a whole number of bus beats)
    2 dst        pointer  m_axi_gmem1  receives n_records sketch records back to back
    3 n_records  scalar                genomes that end in this chunk
    4 min_count  scalar                only in a kernel built with the prefilter (mc_depth > 0):
                                       m of SPEC 7, 1 ..= 2^mc_counter_bits - 1 (1: no filter)

The kernel answers each chunk with one record per genome that ended in it: the packed registers
of the genome's HyperLogLog sketch (``w`` bits each, register j at bit ``w j``), then a trailer
(u32 genome tag, u32 nz, Z little-endian in ``z_bytes``) padded to a whole bus beat.

:func:`run_genomes` drives a whole set of genomes through any "call the kernel on this chunk"
function (the cocotb test's simulated kernel or the host driver's FPGA call).
"""

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from .. import chunks
from ..chunks import ChunkLanes
from ..golden.hll import HllParams
from ..golden.mincount import MinCountParams
from ..interface import Arg
from ..params import (BYTES_PER_LANE, LANES, MC_SEED, SKETCH_MC_COUNTER_BITS, SKETCH_MC_DEPTH,
                      SKETCH_MC_WIDTH_BITS, K, P, W, check_fields)
from . import KernelParams

__all__ = ["Params", "SketchRecord", "unpack_records", "pack_record", "run_genomes", "REGISTERS_PER_WORD"]

#: registers per memory word of the kernel's sketch memories (and per record word)
REGISTERS_PER_WORD = 16


@dataclass(frozen=True)
class Params(ChunkLanes, KernelParams):
    """Build parameters: ``lanes`` T, ``bytes_per_lane`` B (the bus is ``8 T B`` bits, a power of
    two from 32 to 1024 and a multiple of 16 w), k-mer length ``k``, HLL ``p`` and ``w``.

    The minimum-count prefilter (SPEC 7) is built when ``mc_depth`` > 0 (default 0: not built,
    the kernel is the plain sketch kernel): per lane ``mc_depth`` rows of 2^``mc_width_bits``
    ``mc_counter_bits``-bit counters, row seeds from ``mc_seed``; such a kernel takes the runtime
    argument ``min_count``."""

    KERNEL = "jacc_sketch"

    lanes: int = LANES.default
    bytes_per_lane: int = BYTES_PER_LANE.default
    k: int = K.default
    p: int = P.default
    w: int = W.default
    mc_depth: int = SKETCH_MC_DEPTH.default
    mc_width_bits: int = SKETCH_MC_WIDTH_BITS.default
    mc_counter_bits: int = SKETCH_MC_COUNTER_BITS.default
    mc_seed: int = MC_SEED.default

    def __post_init__(self):
        check_fields(self, (LANES, BYTES_PER_LANE, K, P, W, SKETCH_MC_DEPTH, SKETCH_MC_WIDTH_BITS,
                            SKETCH_MC_COUNTER_BITS, MC_SEED))
        bits = self.data_width
        if bits & (bits - 1) or not 32 <= bits <= 1024:
            raise ValueError(f"the bus (8 x lanes x bytes_per_lane = {bits} bits) must be a "
                             "power of two from 32 to 1024")
        if bits % (REGISTERS_PER_WORD * self.w) or self.bus_bytes < 8:
            raise ValueError(f"the bus ({bits} bits) must be at least 64 bits and "
                             f"a multiple of 16 w = {REGISTERS_PER_WORD * self.w} bits")

    def host_args(self) -> list[Arg]:
        return ([Arg("src", "pointer", "gmem0"), Arg("n_bytes", "scalar"),
                 Arg("dst", "pointer", "gmem1"), Arg("n_records", "scalar")]
                + ([Arg("min_count", "scalar")] if self.mc_depth else []))

    @property
    def prefilter(self) -> MinCountParams | None:
        """The prefilter's Count-Min (with min_count 1), or None when it is not built."""
        if not self.mc_depth:
            return None
        return MinCountParams(mc_depth=self.mc_depth, mc_width_bits=self.mc_width_bits,
                              mc_counter_bits=self.mc_counter_bits, mc_seed=self.mc_seed)

    def with_prefilter(self, min_count: MinCountParams) -> "Params":
        """These Params with the prefilter of ``min_count`` (m > 1), else unchanged."""
        if not min_count.active:
            return self
        return self.replace(mc_depth=min_count.mc_depth, mc_width_bits=min_count.mc_width_bits,
                            mc_counter_bits=min_count.mc_counter_bits, mc_seed=min_count.mc_seed)

    @property
    def hll(self) -> HllParams:
        return HllParams(self.p, self.w)

    @property
    def data_width(self) -> int:
        return 8 * self.bus_bytes

    @property
    def registers(self) -> int:
        return 1 << self.p

    @property
    def sketch_bytes(self) -> int:
        return self.registers * self.w // 8

    @property
    def z_bytes(self) -> int:
        z_bits = self.p + (1 << self.w)
        return 8 * -(-z_bits // 64)

    @property
    def trailer_bytes(self) -> int:
        return self.bus_bytes * -(-(8 + self.z_bytes) // self.bus_bytes)

    @property
    def record_bytes(self) -> int:
        return self.sketch_bytes + self.trailer_bytes


@dataclass
class SketchRecord:
    tag: int
    registers: list[int]
    z: int
    nz: int


def unpack_records(data: bytes, count: int, params: Params) -> list[SketchRecord]:
    """Decode ``count`` records written back to back by the kernel."""
    size = params.record_bytes
    if len(data) < count * size:
        raise ValueError(f"output holds {len(data)} bytes, {count} records need {count * size}")
    records = []
    mask = (1 << params.w) - 1
    for index in range(count):
        record = data[index * size:(index + 1) * size]
        packed = int.from_bytes(record[:params.sketch_bytes], "little")
        registers = [(packed >> (params.w * j)) & mask for j in range(params.registers)]
        trailer = record[params.sketch_bytes:]
        records.append(SketchRecord(
            tag=int.from_bytes(trailer[0:4], "little"),
            nz=int.from_bytes(trailer[4:8], "little"),
            z=int.from_bytes(trailer[8:8 + params.z_bytes], "little"),
            registers=registers,
        ))
    return records


def pack_record(record: SketchRecord, params: Params) -> bytes:
    """The bytes the kernel writes for ``record`` (the inverse of :func:`unpack_records`): the
    registers packed ``w`` bits each from bit 0, then the trailer: tag, nz, Z, zero padding to
    whole beats."""
    packed = 0
    for j, value in enumerate(record.registers):
        packed |= value << (params.w * j)
    trailer = (record.tag.to_bytes(4, "little") + record.nz.to_bytes(4, "little")
               + record.z.to_bytes(params.z_bytes, "little"))
    return (packed.to_bytes(params.sketch_bytes, "little")
            + trailer.ljust(params.trailer_bytes, b"\0"))


def run_genomes(genomes: Sequence[Sequence[bytes]], params: Params,
                call_kernel: Callable[[bytes, int], bytes], **limits) -> list[SketchRecord]:
    """The record of every genome, in genome order (:func:`kmerspec.chunks.run_genomes`)."""
    return chunks.run_genomes(genomes, params, call_kernel,
                              lambda data, count: unpack_records(data, count, params), **limits)
