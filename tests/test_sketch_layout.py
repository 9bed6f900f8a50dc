"""kmerspec/kernels/jacc_sketch.py and kmerspec/chunks.py: the kernel's Params, control words,
block planning, record decoding."""

import random
from dataclasses import dataclass

import pytest

from kmerspec.chunks import ChunkLanes, control_word, pack_blocks, pack_chunks, plan_blocks
from kmerspec.kernels.jacc_sketch import Params, unpack_records


@dataclass(frozen=True)
class ThreeLanes(ChunkLanes):
    """A lane geometry no kernel is built with (a 192-bit bus): the chunk format allows any."""

    lanes: int = 3
    bytes_per_lane: int = 8


def test_default_geometry():
    geometry = Params()
    assert (geometry.bus_bytes, geometry.control_beats) == (64, 1)
    assert (geometry.sketch_bytes, geometry.trailer_bytes, geometry.record_bytes) == \
        (8192, 64, 8256)
    assert Params(lanes=2, bytes_per_lane=4, p=8).control_beats == 2


def test_control_word_fields():
    word = control_word(0xABCDEF, end_of_file=True, end_of_genome=True, tag=0x12345678)
    assert word == 0xABCDEF | 1 << 24 | 1 << 25 | 0x12345678 << 32
    with pytest.raises(ValueError, match=r"^count must be from 0 to 16777215, not 16777216$"):
        control_word(1 << 24)
    with pytest.raises(ValueError, match=r"^p must be an integer from 8 to 18, not 7$"):
        Params(p=7)


def test_plan_blocks_reassembles_every_genome():
    rng = random.Random(4)
    geometry = ThreeLanes()
    genomes = [[bytes(rng.randrange(256) for _ in range(rng.randint(0, 90)))
                for _ in range(rng.randint(0, 3))] for _ in range(11)]
    streams = {tag: [b""] for tag in range(len(genomes))}
    ended = []
    blocks = plan_blocks(genomes, geometry, max_block_beats=5)
    for block in blocks:
        for piece, end_of_file, end_of_genome, tag in block.lanes:
            if piece or end_of_file:
                streams[tag][-1] += piece
            if end_of_file:
                streams[tag].append(b"")
            if end_of_genome:
                ended.append(tag)
    assert sorted(ended) == list(range(len(genomes)))
    for tag, files in enumerate(genomes):
        assert streams[tag][:-1] == (files or [b""])
    chunks = pack_chunks(blocks, geometry, max_chunk_bytes=256)
    assert b"".join(chunk for chunk, _ in chunks) == pack_blocks(blocks, geometry)
    assert sorted(tag for _, tags in chunks for tag in tags) == list(range(len(genomes)))
    assert all(len(chunk) % geometry.bus_bytes == 0 for chunk, _ in chunks)


def test_unpack_records():
    geometry = Params(lanes=2, bytes_per_lane=4, p=8, w=4)
    registers = [j % 16 for j in range(256)]
    sketch = bytes((registers[2 * i] | registers[2 * i + 1] << 4) for i in range(128))
    trailer = (7).to_bytes(4, "little") + (3).to_bytes(4, "little") + (99).to_bytes(8, "little")
    record, = unpack_records(sketch + trailer, 1, geometry)
    assert (record.tag, record.nz, record.z, record.registers) == (7, 3, 99, registers)
    with pytest.raises(ValueError, match=r"^output holds 10 bytes, 1 records need 144$"):
        unpack_records(b"\0" * 10, 1, geometry)
