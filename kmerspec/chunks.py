"""The chunk format shared by the chunk kernels (JACC sketch, JSD queue builder; SPEC section 6).

The host packs the byte streams of many genomes into chunks: ``T`` lanes, each carrying one
genome at a time, ``B`` bytes per lane per beat, in blocks introduced by control beats (one 64-bit
control word per lane: byte count, end of file, end of genome, genome tag). A kernel answers each
chunk with one record per genome that ended in it. Only the lane geometry matters here, so these
functions take any kernel Params that is a :class:`ChunkLanes` (fields ``kmerspec.params.LANES``
and ``BYTES_PER_LANE``).
"""

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np


__all__ = ["ChunkLanes", "control_word", "Block", "plan_blocks", "pack_blocks", "iter_chunks",
           "pack_chunks", "run_genomes", "COUNT_BITS", "EOF_BIT", "EOG_BIT", "TAG_LSB"]

COUNT_BITS = 24
EOF_BIT = 24
EOG_BIT = 25
TAG_LSB = 32


class ChunkLanes:
    """Mixin of a chunk kernel's Params, which has the fields ``lanes`` (T, :data:`LANES`) and
    ``bytes_per_lane`` (B, :data:`BYTES_PER_LANE`)."""

    lanes: int
    bytes_per_lane: int

    @property
    def bus_bytes(self) -> int:
        return self.lanes * self.bytes_per_lane

    @property
    def control_beats(self) -> int:
        """Beats of a block's control words (8 bytes per lane)."""
        return -(-8 * self.lanes // self.bus_bytes)


def control_word(count: int, *, end_of_file: bool = False, end_of_genome: bool = False,
                 tag: int = 0) -> int:
    """A lane's 64-bit control word for one block."""
    if not 0 <= count < 1 << COUNT_BITS:
        raise ValueError(f"count must be from 0 to {(1 << COUNT_BITS) - 1}, not {count!r}")
    if not 0 <= tag < 1 << 32:
        raise ValueError(f"tag must be a 32-bit unsigned integer, not {tag!r}")
    return (count | int(end_of_file) << EOF_BIT | int(end_of_genome) << EOG_BIT
            | tag << TAG_LSB)


@dataclass
class Block:
    """One block: per lane (bytes, end_of_file, end_of_genome, tag)."""

    lanes: list[tuple[bytes, bool, bool, int]]

    @property
    def genomes_ended(self) -> list[int]:
        return [tag for _, _, eog, tag in self.lanes if eog]


def plan_blocks(genomes: Sequence[Sequence[bytes]], geometry: ChunkLanes, *,
                max_block_beats: int = 1024) -> list[Block]:
    """Schedule genomes (each a list of files) onto the lanes and cut their streams into blocks.

    A lane takes the next genome as soon as its previous one ended. A block is as long as the
    shortest unfinished file among the busy lanes (capped at ``max_block_beats``), so only lanes
    that finish a file pad their slots. The tag of a genome is its index in ``genomes``.
    """
    if len(genomes) >= 1 << 32:
        raise ValueError("at most 2^32 - 1 genomes per run")
    lane_count, nbytes = geometry.lanes, geometry.bytes_per_lane
    queue = list(range(len(genomes)))
    queue.reverse()
    # per lane: [tag, files left (list), offset in the current file] or None when idle
    lanes: list[list | None] = [None] * lane_count
    blocks = []
    while True:
        for t in range(lane_count):
            if lanes[t] is None and queue:
                tag = queue.pop()
                files = [bytes(f) for f in genomes[tag]] or [b""]
                lanes[t] = [tag, files, 0]
        busy = [t for t in range(lane_count) if lanes[t] is not None]
        if not busy:
            return blocks
        shortest = min(len(lanes[t][1][0]) - lanes[t][2] for t in busy)
        beats = min(-(-shortest // nbytes), max_block_beats)
        capacity = beats * nbytes
        entries = []
        for t in range(lane_count):
            if lanes[t] is None:
                entries.append((b"", False, False, 0))
                continue
            tag, files, offset = lanes[t]
            piece = files[0][offset:offset + capacity]
            lanes[t][2] = offset + len(piece)
            ends_file = lanes[t][2] == len(files[0])
            ends_genome = ends_file and len(files) == 1
            entries.append((piece, ends_file, ends_genome, tag))
            if ends_genome:
                lanes[t] = None
            elif ends_file:
                lanes[t] = [tag, files[1:], 0]
        blocks.append(Block(entries))


def _block_beats(block: Block, geometry: ChunkLanes) -> int:
    """Data beats of a block: its longest lane slot in whole beats."""
    return max(-(-len(piece) // geometry.bytes_per_lane) for piece, *_ in block.lanes)


def pack_blocks(blocks: Sequence[Block], geometry: ChunkLanes) -> bytes:
    """The chunk bytes of consecutive blocks."""
    nbytes, bus, lanes = geometry.bytes_per_lane, geometry.bus_bytes, geometry.lanes
    out = bytearray()
    for block in blocks:
        control = b"".join(control_word(len(piece), end_of_file=eof, end_of_genome=eog,
                                        tag=tag).to_bytes(8, "little")
                           for piece, eof, eog, tag in block.lanes)
        out += control.ljust(geometry.control_beats * bus, b"\0")
        beats = _block_beats(block, geometry)
        # beat-major, lane-minor: beat j carries bytes [jB, (j+1)B) of every lane's slot
        data = np.zeros((beats, lanes, nbytes), dtype=np.uint8)
        for lane, (piece, *_) in enumerate(block.lanes):
            slot = np.frombuffer(piece, dtype=np.uint8)
            full = len(piece) // nbytes
            data[:full, lane, :] = slot[:full * nbytes].reshape(full, nbytes)
            if len(piece) % nbytes:
                data[full, lane, :len(piece) % nbytes] = slot[full * nbytes:]
        out += data.tobytes()
    return bytes(out)


def iter_chunks(blocks: Sequence[Block], geometry: ChunkLanes, *,
                max_chunk_bytes: int = 64 << 20) -> Iterator[tuple[bytes, list[int]]]:
    """Group blocks into kernel calls and pack each only when it is asked for:
    ``(chunk bytes, tags of the genomes ending in it)``.

    A chunk holds whole blocks; a block larger than ``max_chunk_bytes`` gets a chunk alone.
    """
    current, size = [], 0
    for block in blocks:
        block_bytes = (geometry.control_beats + _block_beats(block, geometry)) * geometry.bus_bytes
        if current and size + block_bytes > max_chunk_bytes:
            yield pack_blocks(current, geometry), [t for b in current for t in b.genomes_ended]
            current, size = [], 0
        current.append(block)
        size += block_bytes
    if current:
        yield pack_blocks(current, geometry), [t for b in current for t in b.genomes_ended]


def pack_chunks(blocks: Sequence[Block], geometry: ChunkLanes, *,
                max_chunk_bytes: int = 64 << 20) -> list[tuple[bytes, list[int]]]:
    """Every chunk of :func:`iter_chunks`, packed."""
    return list(iter_chunks(blocks, geometry, max_chunk_bytes=max_chunk_bytes))


def run_genomes(genomes: Sequence[Sequence[bytes]], geometry: ChunkLanes,
                call_kernel: Callable[[bytes, int], bytes], unpack_records: Callable, *,
                max_block_beats: int = 1024, max_chunk_bytes: int = 64 << 20) -> list:
    """Run every genome through a chunk kernel: plan, pack, call ``call_kernel(chunk,
    record_count)`` per chunk (it returns the output buffer), decode it with
    ``unpack_records(buffer, count)``, and return the records (with a ``tag``) in genome order."""
    blocks = plan_blocks(genomes, geometry, max_block_beats=max_block_beats)
    results: list = [None] * len(genomes)
    for chunk, tags in pack_chunks(blocks, geometry, max_chunk_bytes=max_chunk_bytes):
        records = unpack_records(call_kernel(chunk, len(tags)), len(tags))
        if sorted(r.tag for r in records) != sorted(tags):
            raise ValueError(f"kernel returned tags {sorted(r.tag for r in records)}, "
                             f"expected {sorted(tags)}")
        for record in records:
            results[record.tag] = record
    return results
