"""Record layout of the JSD queue-builder kernel (docs/jsd_kernels.md), and chunk packing.

Input chunks are those of the sketch kernel (kmerspec.layout.sketch: T lanes x B bytes, blocks with
control beats); only the lane geometry matters. The kernel answers each chunk with one record per
genome that ended in it, in completion order (use the tag):

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

from kmerspec.golden.pqa import Pqa
from .sketch import SketchGeometry, pack_chunks, plan_blocks

__all__ = ["JsdGeometry", "PqaRecord", "unpack_records", "pack_pqa", "pack_record",
           "pack_trailer", "unpack_results", "run_genomes"]

ENTRY_BYTES = 8


@dataclass(frozen=True)
class JsdGeometry:
    """Build parameters that fix the layouts: lanes T, bytes per lane B, PQA R and n."""

    lanes: int = 8
    bytes_per_lane: int = 8
    R: int = 12
    n: int = 8

    def __post_init__(self):
        for name, low, high in (("lanes", 1, 64), ("bytes_per_lane", 1, 64), ("R", 1, 20),
                                ("n", 1, 64)):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
                raise ValueError(f"{name} must be an integer from {low} to {high}, not {value!r}")
        if self.bus_bytes < 16:
            raise ValueError(f"the bus ({self.bus_bytes} bytes) must be at least 16 bytes")
        if self.queue_bytes % self.bus_bytes:
            raise ValueError(f"a queue ({self.queue_bytes} bytes) must be a whole number of bus "
                             f"beats ({self.bus_bytes} bytes)")

    @property
    def bus_bytes(self) -> int:
        return self.lanes * self.bytes_per_lane

    @property
    def queue_bytes(self) -> int:
        return self.n * ENTRY_BYTES

    @property
    def pqa_bytes(self) -> int:
        return (1 << self.R) * self.queue_bytes

    @property
    def record_bytes(self) -> int:
        return self.pqa_bytes + self.bus_bytes

    @property
    def chunk_geometry(self) -> SketchGeometry:
        return SketchGeometry(lanes=self.lanes, bytes_per_lane=self.bytes_per_lane)


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


def pack_trailer(record: PqaRecord, geometry: JsdGeometry) -> bytes:
    return (record.tag.to_bytes(4, "little") + record.entropy.to_bytes(4, "little")
            + record.total.to_bytes(8, "little")).ljust(geometry.bus_bytes, b"\0")


def pack_record(record: PqaRecord, geometry: JsdGeometry) -> bytes:
    """A record as the queue builder writes it (queues, then the trailer beat)."""
    return pack_pqa(record.pqa) + pack_trailer(record, geometry)


def unpack_results(data: bytes, count: int, pivots: int, geometry: JsdGeometry) -> list[list[int]]:
    """The similarity kernel's output: per streamed PQA one bus beat of signed Q5.24 JSDs, one
    u32 per pivot (pivot v at byte 4 v)."""
    if len(data) < count * geometry.bus_bytes:
        raise ValueError(f"output holds {len(data)} bytes, {count} results need "
                         f"{count * geometry.bus_bytes}")
    results = []
    for index in range(count):
        beat = data[index * geometry.bus_bytes:(index + 1) * geometry.bus_bytes]
        results.append([int.from_bytes(beat[4 * v:4 * v + 4], "little", signed=True)
                        for v in range(pivots)])
    return results


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


def unpack_records(data: bytes, count: int, geometry: JsdGeometry) -> list[PqaRecord]:
    """Decode ``count`` records written back to back by the kernel."""
    size = geometry.record_bytes
    if len(data) < count * size:
        raise ValueError(f"output holds {len(data)} bytes, {count} records need {count * size}")
    records = []
    for index in range(count):
        record = data[index * size:(index + 1) * size]
        trailer = record[geometry.pqa_bytes:]
        records.append(PqaRecord(
            tag=int.from_bytes(trailer[0:4], "little"),
            entropy=int.from_bytes(trailer[4:8], "little"),
            total=int.from_bytes(trailer[8:16], "little"),
            pqa=unpack_pqa(record, geometry.R, geometry.n),
        ))
    return records


def run_genomes(genomes: Sequence[Sequence[bytes]], geometry: JsdGeometry,
                call_kernel: Callable[[bytes, int], bytes], *, max_block_beats: int = 1024,
                max_chunk_bytes: int = 64 << 20) -> list[PqaRecord]:
    """Build the PQA of every genome: plan and pack chunks, call ``call_kernel(chunk,
    record_count)`` per chunk (it returns the output buffer), unpack, return records in genome
    order."""
    blocks = plan_blocks(genomes, geometry.chunk_geometry, max_block_beats=max_block_beats)
    results: list[PqaRecord | None] = [None] * len(genomes)
    for chunk, tags in pack_chunks(blocks, geometry.chunk_geometry,
                                   max_chunk_bytes=max_chunk_bytes):
        output = call_kernel(chunk, len(tags))
        records = unpack_records(output, len(tags), geometry)
        if sorted(r.tag for r in records) != sorted(tags):
            raise ValueError(f"kernel returned tags {sorted(r.tag for r in records)}, "
                             f"expected {sorted(tags)}")
        for record in records:
            results[record.tag] = record
    return results
