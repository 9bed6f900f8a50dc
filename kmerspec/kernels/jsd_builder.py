"""Contract of the JSD queue-builder kernel ``jsd_builder`` (SPEC 4 and 6;
docs/jsd_kernels.md): its Params, host arguments and record layout.

Host arguments (index: name, kind, bundle)::

    0 src        pointer  m_axi_gmem0  chunk (kmerspec.chunks format, T lanes x B bytes)
    1 n_bytes    scalar                chunk bytes (a whole number of bus beats)
    2 dst        pointer  m_axi_gmem1  receives n_records PQA records
    3 n_records  scalar                genomes that end in this chunk
    4 update     scalar                0: conservative update "cu", 1: plain Count-Min "cm"

Input chunks are those of the JACC sketch kernel (kmerspec.chunks); only the lane geometry
matters. The kernel answers each chunk with one record per genome that ended in it, in
completion order (use the tag):

=========================  =================================================================
bytes                      content (little-endian)
=========================  =================================================================
[0, 2^R n 8)               queue q at byte 8 n q: n entries of 8 bytes, slot 0 = largest
                           value; entry = value u32 (0 = empty), then tag u32 (h0 >> R)
+0x00 u32                  genome tag
+0x04 u32                  entropy, unsigned Q5.24 (kmerspec.golden.entropy.entropy_fixed)
+0x08 u64                  M = sum of the PQA values
+0x10 .. end of the beat   zero
=========================  =================================================================

The trailer is one bus beat (8 T B bytes), so a record is 2^R n 8 + 8 T B bytes
(262,208 bytes for R = 12, n = 8 on a 512-bit bus, the thesis' figure).
"""

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from .. import chunks
from .. import params as spec
from ..chunks import ChunkLanes
from ..golden.jsd import JsdParams
from ..golden.pqa import Pqa
from ..interface import Arg
from . import KernelParams

__all__ = ["Params", "PqaRecordLayout", "PqaRecord", "unpack_records", "unpack_pqa", "pack_pqa",
           "pack_record", "pack_trailer", "run_genomes", "ENTRY_BYTES"]

ENTRY_BYTES = 8
#: the JsdParams fields that are also build parameters of the kernel
ALGORITHM_FIELDS = ("k", "s", "sample_seed", "d", "cw", "R", "n")


class PqaRecordLayout:
    """Sizes of a PQA record (queues, then a one-beat trailer) for Params with ``R``, ``n`` and
    ``bus_bytes``: the queue builder writes such records, the JSD similarity kernel reads them."""

    R: int
    n: int
    bus_bytes: int

    @property
    def queue_bytes(self) -> int:
        return self.n * ENTRY_BYTES

    @property
    def beats_per_queue(self) -> int:
        return self.queue_bytes // self.bus_bytes

    @property
    def pqa_bytes(self) -> int:
        return (1 << self.R) * self.queue_bytes

    @property
    def record_bytes(self) -> int:
        return self.pqa_bytes + self.bus_bytes


@dataclass(frozen=True)
class Params(ChunkLanes, PqaRecordLayout, KernelParams):
    """Build parameters: lane geometry T x B (``8 T B`` bits, a power of two >= 128, is the bus),
    the SPEC 4 parameters k, s, sample_seed, d, cw, R (1..20 in the kernel), n, the depth of
    each lane's sampled-beat FIFO and its Count-Min + PQA banks (``record_banks`` 2: a genome's
    record is written while the lane takes the next genome, at twice the memories). The
    Count-Min update rule (``update``) is a runtime argument.
    """

    KERNEL = "jsd_builder"

    lanes: int = spec.LANES.default
    bytes_per_lane: int = spec.BYTES_PER_LANE.default
    k: int = spec.K.default
    s: int = spec.SAMPLE_BITS.default
    sample_seed: int = spec.SAMPLE_SEED.default
    d: int = spec.JSD_DEPTH.default
    cw: int = spec.CM_WIDTH_BITS.default
    R: int = spec.KERNEL_QUEUE_BITS.default
    n: int = spec.PQA_SLOTS.default
    fifo_depth: int = spec.FIFO_DEPTH.default
    record_banks: int = spec.RECORD_BANKS.default

    def __post_init__(self):
        spec.check_fields(self, (spec.LANES, spec.BYTES_PER_LANE, spec.K, spec.SAMPLE_BITS,
                                 spec.SAMPLE_SEED, spec.JSD_DEPTH, spec.CM_WIDTH_BITS,
                                 spec.KERNEL_QUEUE_BITS, spec.PQA_SLOTS, spec.FIFO_DEPTH,
                                 spec.RECORD_BANKS))
        bits = self.data_width
        if bits < 128:
            raise ValueError(f"the bus (8 x lanes x bytes_per_lane = {bits} bits) must "
                             "be at least 128 bits for the record trailer")
        if bits & (bits - 1):
            raise ValueError(f"the bus (8 x lanes x bytes_per_lane = {bits} bits) "
                             "must be a power of two")
        if self.queue_bytes % self.bus_bytes:
            raise ValueError(f"a queue (n x 64 = {8 * self.queue_bytes} bits) must be a whole "
                             f"number of bus beats ({bits} bits)")

    @classmethod
    def for_algorithm(cls, algorithm: JsdParams, **geometry) -> "Params":
        """The kernel for the SPEC 4 parameters ``algorithm`` (its ``update`` is a runtime
        argument; the kernel hashes canonical k-mers only), with ``geometry`` (lanes,
        bytes_per_lane, fifo_depth, record_banks) as given or default."""
        if not algorithm.canonical:
            raise ValueError("the queue-builder kernel uses canonical k-mers; drop --no-canonical "
                             "or use --backend sw")
        return cls(**{name: getattr(algorithm, name) for name in ALGORITHM_FIELDS}, **geometry)

    @property
    def algorithm(self) -> JsdParams:
        """The SPEC 4 parameters this kernel computes with (update "cu"; it is a runtime
        argument)."""
        return JsdParams(**{name: getattr(self, name) for name in ALGORITHM_FIELDS})

    def host_args(self) -> list[Arg]:
        return [Arg("src", "pointer", "gmem0"), Arg("n_bytes", "scalar"),
                Arg("dst", "pointer", "gmem1"), Arg("n_records", "scalar"),
                Arg("update", "scalar")]

    @property
    def data_width(self) -> int:
        return 8 * self.bus_bytes


@dataclass
class PqaRecord:
    tag: int
    entropy: int
    total: int
    pqa: Pqa


def pack_pqa(pqa: Pqa) -> bytes:
    """The queue part of a record (also the PQA input of the similarity kernel)."""
    out = bytearray()
    for queue in pqa.queues:
        for tag, value in queue:
            out += value.to_bytes(4, "little") + (tag if value else 0).to_bytes(4, "little")
    return bytes(out)


def pack_trailer(record: PqaRecord, params: Params) -> bytes:
    return (record.tag.to_bytes(4, "little") + record.entropy.to_bytes(4, "little")
            + record.total.to_bytes(8, "little")).ljust(params.bus_bytes, b"\0")


def pack_record(record: PqaRecord, params: Params) -> bytes:
    """A record as the queue builder writes it (queues, then the trailer beat)."""
    return pack_pqa(record.pqa) + pack_trailer(record, params)


def unpack_pqa(data: bytes, R: int, n: int) -> Pqa:
    queues = []
    for q in range(1 << R):
        queue = []
        for j in range(n):
            offset = (q * n + j) * ENTRY_BYTES
            value = int.from_bytes(data[offset:offset + 4], "little")
            tag = int.from_bytes(data[offset + 4:offset + 8], "little")
            queue.append((tag, value) if value else (0, 0))
        queues.append(queue)
    return Pqa(R, n, queues)


def unpack_records(data: bytes, count: int, params: Params) -> list[PqaRecord]:
    """Decode ``count`` records written back to back by the kernel."""
    size = params.record_bytes
    if len(data) < count * size:
        raise ValueError(f"output holds {len(data)} bytes, {count} records need {count * size}")
    records = []
    for index in range(count):
        record = data[index * size:(index + 1) * size]
        trailer = record[params.pqa_bytes:]
        records.append(PqaRecord(
            tag=int.from_bytes(trailer[0:4], "little"),
            entropy=int.from_bytes(trailer[4:8], "little"),
            total=int.from_bytes(trailer[8:16], "little"),
            pqa=unpack_pqa(record, params.R, params.n),
        ))
    return records


def run_genomes(genomes: Sequence[Sequence[bytes]], params: Params,
                call_kernel: Callable[[bytes, int], bytes], **limits) -> list[PqaRecord]:
    """The record of every genome, in genome order (:func:`kmerspec.chunks.run_genomes`)."""
    return chunks.run_genomes(genomes, params, call_kernel,
                              lambda data, count: unpack_records(data, count, params), **limits)
