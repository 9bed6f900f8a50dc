"""The standalone self-test of the JACC sketch core: its input, its checksum, its expected result.

A board without a host (``python -m hw.build --board rfsoc4x2``) runs the sketch core on input made
on chip and shows on its LEDs whether the records it wrote have the checksum the golden model
predicts. This module is that contract, written once for the RTL (hw/selftest/) and its tests:

* **Input.** ``rounds`` rounds; in each, every lane ``t`` of the core's ``T`` lanes carries one
  genome of ``genome_bytes`` bytes (a multiple of ``B``), tag ``round * T + t``, cut into blocks
  of at most ``block_beats`` data beats (chunk format: kmerspec/chunks.py). Byte ``i`` of a genome
  is ``HEADER[i]`` for ``i < len(HEADER)``, a newline where ``(i - len(HEADER)) % LINE ==
  LINE - 1``, and otherwise a base: ``"ACGT"[(s >> 2q) & 3]`` for byte ``q`` of its lane slot in
  the beat (``q < B <= 16``), ``s`` the lane's xorshift32 state advanced once per data beat of that
  lane (the state runs on across genomes; lane ``t`` starts at :func:`lane_seed`). So the parser
  meets a header, line breaks and every base; headers and newlines consume random bits as bases
  do, which keeps the generator's state independent of the byte kind.
* **Checksum.** Per record (``record_bytes / bus_bytes`` beats): ``c = rotl32(c, 1) ^ fold(beat)``
  from ``c = 0``, ``fold`` the XOR of the beat's 32-bit little-endian words each rotated left by
  its index mod 32. The result is the sum mod 2^32 of the record checksums (the order in which the
  core writes the records of one round does not matter) and the record count.
"""

from collections.abc import Iterator
from dataclasses import dataclass

from .chunks import Block, pack_blocks, plan_blocks
from .golden.hashes import rotl32
from .golden.hll import Hll
from .golden.parse import genome_kmers
from .kernels.jacc_sketch import Params as SketchParams, SketchRecord, pack_record

__all__ = ["SelfTestParams", "HEADER", "LINE", "xorshift32", "lane_seed", "genome",
           "genomes", "blocks", "chunk_bytes", "fold", "record_checksum", "expected_result"]

HEADER = b">selftest\n"
LINE = 64
MASK32 = (1 << 32) - 1


@dataclass(frozen=True)
class SelfTestParams:
    """The sketch core's geometry and the generated input: ``rounds`` genomes of
    ``genome_bytes`` bytes per lane, blocks of ``block_beats`` data beats, ``seed``."""

    sketch: SketchParams = SketchParams()
    genome_bytes: int = 32768
    rounds: int = 2
    block_beats: int = 256
    seed: int = 0x5EED

    def __post_init__(self):
        b = self.sketch.bytes_per_lane
        if b > 16:
            raise ValueError(f"the self-test draws 2 bits per byte from a 32-bit state: "
                             f"bytes_per_lane must be at most 16, not {b}")
        if not isinstance(self.genome_bytes, int) or self.genome_bytes <= len(HEADER) \
                or self.genome_bytes % b or self.genome_bytes >= 1 << 24:
            raise ValueError(f"genome_bytes must be a multiple of bytes_per_lane = {b} from "
                             f"{len(HEADER) + 1} to 2^24 - 1, not {self.genome_bytes!r}")
        for name in ("rounds", "block_beats"):
            value = getattr(self, name)
            if not isinstance(value, int) or not 1 <= value < 1 << 16:
                raise ValueError(f"{name} must be an integer from 1 to 65535, not {value!r}")
        if not isinstance(self.seed, int) or not 0 <= self.seed <= MASK32:
            raise ValueError(f"seed must be a 32-bit unsigned integer, not {self.seed!r}")

    @property
    def genome_beats(self) -> int:
        return self.genome_bytes // self.sketch.bytes_per_lane

    @property
    def records(self) -> int:
        return self.rounds * self.sketch.lanes

    @property
    def record_beats(self) -> int:
        return self.sketch.record_bytes // self.sketch.bus_bytes

    @property
    def input_beats(self) -> int:
        """Chunk beats of the whole test: control beats of every block plus the data beats."""
        blocks_per_genome = -(-self.genome_beats // self.block_beats)
        return self.rounds * (blocks_per_genome * self.sketch.control_beats + self.genome_beats)


def xorshift32(s: int) -> int:
    """Marsaglia's xorshift32 (13, 17, 5); never maps a nonzero state to zero."""
    s ^= (s << 13) & MASK32
    s ^= s >> 17
    s ^= (s << 5) & MASK32
    return s


def lane_seed(params: SelfTestParams, lane: int) -> int:
    """Lane ``lane``'s initial xorshift32 state (nonzero)."""
    return ((params.seed ^ (0x9E3779B9 * (lane + 1))) & MASK32) or 1


def _byte_kind(i: int) -> int | None:
    """The fixed byte at genome offset ``i`` (header or newline), None for a base."""
    if i < len(HEADER):
        return HEADER[i]
    if (i - len(HEADER)) % LINE == LINE - 1:
        return ord("\n")
    return None


def genome(params: SelfTestParams, lane: int, state: int) -> tuple[bytes, int]:
    """One genome of ``lane`` starting from xorshift state ``state``: (bytes, the state after)."""
    b = params.sketch.bytes_per_lane
    out = bytearray()
    for beat in range(params.genome_beats):
        state = xorshift32(state)
        for q in range(b):
            fixed = _byte_kind(beat * b + q)
            out.append(fixed if fixed is not None else b"ACGT"[(state >> 2 * q) & 3])
    return bytes(out), state


def genomes(params: SelfTestParams) -> Iterator[tuple[int, bytes]]:
    """(tag, genome bytes) of every genome, round by round, lane by lane."""
    states = [lane_seed(params, t) for t in range(params.sketch.lanes)]
    for r in range(params.rounds):
        for t in range(params.sketch.lanes):
            data, states[t] = genome(params, t, states[t])
            yield r * params.sketch.lanes + t, data


def blocks(params: SelfTestParams) -> list[Block]:
    """The blocks the generator emits, in order: the host's own schedule
    (:func:`kmerspec.chunks.plan_blocks`) of the genomes in tag order, which with genomes of one
    length keeps the lanes in step (every block the same byte count in every lane)."""
    return plan_blocks([[data] for _, data in genomes(params)], params.sketch,
                       max_block_beats=params.block_beats)


def chunk_bytes(params: SelfTestParams) -> bytes:
    """Every chunk beat the generator emits, back to back."""
    return pack_blocks(blocks(params), params.sketch)


def fold(beat: bytes) -> int:
    """XOR of the beat's 32-bit little-endian words, word ``j`` rotated left by ``j mod 32``."""
    f = 0
    for j in range(len(beat) // 4):
        f ^= rotl32(int.from_bytes(beat[4 * j:4 * j + 4], "little"), j % 32)
    return f


def record_checksum(record: bytes, bus_bytes: int) -> int:
    c = 0
    for start in range(0, len(record), bus_bytes):
        c = rotl32(c, 1) ^ fold(record[start:start + bus_bytes])
    return c


def expected_result(params: SelfTestParams) -> tuple[int, int]:
    """(checksum, record count) the golden model predicts."""
    sketch = params.sketch
    total = 0
    for tag, data in genomes(params):
        hll = Hll(sketch.hll).update(genome_kmers([data], sketch.k))
        z, nz = hll.features()
        record = pack_record(SketchRecord(tag=tag, registers=hll.registers, z=z, nz=nz), sketch)
        total = (total + record_checksum(record, sketch.bus_bytes)) & MASK32
    return total, params.records
