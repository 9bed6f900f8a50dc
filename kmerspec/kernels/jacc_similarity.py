"""Contract of the JACC all-pairs similarity kernel ``jacc_similarity`` (SPEC 3 and 6;
docs/jacc_similarity_kernel.md): its Params, host arguments, layouts and call plan.

Host arguments (index: name, kind, bundle)::

    0 sketches      pointer  m_axi_gmem0   sketch buffer (:func:`pack_sketches`)
    1 features      pointer  m_axi_gmem1   receives (pivot_groups + stream_groups) record blocks
    2 first_group   scalar   -             first pivot group (group = D sketches)
    3 pivot_groups  scalar   -             pivot groups to load, 1 .. V / D (any other value
                                           is refused: ERROR_ARGUMENT on argument 3)
    4 stream_groups scalar   -             groups streamed after the pivots

The host uploads the sketches, sorted, in *groups* of ``D`` sketches interleaved slot by slot so
that one bus beat carries one slice of each of the ``D`` sketches of a group. The kernel holds
``V`` pivot sketches on chip and answers every group it reads with ``V x D`` feature records
(Z, nz) of the unions pivot x streamed sketch. :func:`plan_calls` cuts the upper triangle of the
similarity matrix into kernel calls (with the SPEC 3 pruning rule), :func:`call_pairs` says which
records of a call are wanted pairs. The cocotb test, the software model and the FPGA driver all
use these functions, so they cannot disagree.
"""

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from ..golden.hll import HllParams
from ..interface import Arg
from ..params import DATA_WIDTH, JACC_PIVOTS, JACC_STREAMS, P, W, check_fields
from . import KernelParams

__all__ = ["Params", "pack_sketches", "unpack_groups", "pack_features", "unpack_features",
           "KernelCall", "partner_stops", "plan_calls", "call_pairs", "CALL_ARGUMENTS"]

CALL_ARGUMENTS = ("sketches", "features", "first_group", "pivot_groups", "stream_groups")
NZ_BITS = 32


def _power_of_two(value) -> bool:
    return isinstance(value, int) and value > 0 and value & (value - 1) == 0


@dataclass(frozen=True)
class Params(KernelParams):
    """Build parameters: pivots V (a multiple of D), streamed sketches per beat D (a power of
    two), HLL ``p`` and ``w``, and the bus width ``data_width`` of both m_axi ports.

    Registers sit in ``field_bits``-wide fields (4 for w = 4, 8 for w = 5..8), value in the low
    ``w`` bits. A beat has D slots of ``slot_bits = data_width / D``; a sketch takes
    ``beats_per_group`` beats, one slot in each.
    """

    KERNEL = "jacc_similarity"

    pivots: int = JACC_PIVOTS.default
    streams: int = JACC_STREAMS.default
    p: int = P.default
    w: int = W.default
    data_width: int = DATA_WIDTH.default

    def __post_init__(self):
        check_fields(self, (JACC_PIVOTS, JACC_STREAMS, P, W))
        if not _power_of_two(self.data_width) or self.data_width < 64:
            raise ValueError(f"data_width must be a power of two >= 64, not {self.data_width!r}")
        if not _power_of_two(self.streams) or self.streams > self.data_width // self.field_bits:
            raise ValueError(f"streams (D) must be a power of two with D * {self.field_bits} <= "
                             f"{self.data_width}, not {self.streams!r}")
        if not isinstance(self.pivots, int) or self.pivots < 1 or self.pivots % self.streams:
            raise ValueError(f"pivots (V) must be a positive multiple of streams "
                             f"({self.streams}), not {self.pivots!r}")
        if self.m * self.field_bits < self.slot_bits:
            raise ValueError(f"a sketch ({self.m * self.field_bits} bits) is smaller than a "
                             f"slot ({self.slot_bits} bits): lower streams (D)")

    def host_args(self) -> list[Arg]:
        sketches, features, *scalars = CALL_ARGUMENTS
        return ([Arg(sketches, "pointer", "gmem0"), Arg(features, "pointer", "gmem1")]
                + [Arg(name, "scalar") for name in scalars])

    @cached_property
    def hll(self) -> HllParams:
        return HllParams(self.p, self.w)

    @property
    def m(self) -> int:
        return self.hll.m

    @property
    def max_rank(self) -> int:
        return self.hll.max_rank

    @property
    def field_bits(self) -> int:
        return 4 if self.w == 4 else 8

    @property
    def slot_bits(self) -> int:
        return self.data_width // self.streams

    @property
    def registers_per_slot(self) -> int:
        return self.slot_bits // self.field_bits

    @property
    def beats_per_group(self) -> int:
        return self.m // self.registers_per_slot

    @property
    def beat_bytes(self) -> int:
        return self.data_width // 8

    @property
    def group_bytes(self) -> int:
        return self.beats_per_group * self.beat_bytes

    @property
    def pivot_groups(self) -> int:
        """Groups of D pivots held on chip (V / D)."""
        return self.pivots // self.streams

    @property
    def z_bits(self) -> int:
        """Bits of Z: at most m 2^W."""
        return self.p + self.max_rank + 1

    @cached_property
    def record_bytes(self) -> int:
        """One feature record: nz (u32) then Z, padded to a power of two >= 8 bytes."""
        size = 8
        while size * 8 < NZ_BITS + self.z_bits:
            size *= 2
        return size

    @property
    def records_per_group(self) -> int:
        return self.pivots * self.streams

    @property
    def record_beats(self) -> int:
        """Bus beats of the records of one group (the last one zero padded)."""
        return -(-self.records_per_group * self.record_bytes // self.beat_bytes)

    @property
    def record_block_bytes(self) -> int:
        return self.record_beats * self.beat_bytes


def _groups_of(count: int, geometry: Params) -> int:
    return -(-count // geometry.streams)


def pack_sketches(registers: np.ndarray, geometry: Params) -> bytes:
    """The sketch buffer: rows of ``registers`` (n x m, in upload order) in groups of D, padded
    with empty sketches to whole groups. Beat b of group g, slot s holds registers
    [b R, (b+1) R) of sketch g D + s (R = registers_per_slot), register i of the slot at bits
    [i f, i f + w) of the slot (f = field_bits), slot s at bits [s slot_bits, ...) of the beat."""
    registers = np.asarray(registers)
    g = geometry
    if registers.ndim != 2 or registers.shape[1] != g.m:
        raise ValueError(f"registers must be an n x {g.m} array, not shape {registers.shape}")
    if registers.size and int(registers.max()) > g.max_rank:
        raise ValueError(f"a register exceeds the largest rank {g.max_rank} of w = {g.w}")
    groups = _groups_of(registers.shape[0], g)
    padded = np.zeros((groups * g.streams, g.m), dtype=np.uint8)
    padded[:registers.shape[0]] = registers
    # (group, slot, beat, register) -> (group, beat, slot, register): beat-major order
    fields = padded.reshape(groups, g.streams, g.beats_per_group, g.registers_per_slot)
    fields = fields.transpose(0, 2, 1, 3).reshape(-1)
    if g.field_bits == 4:
        fields = fields[0::2] | (fields[1::2] << 4)
    return fields.astype(np.uint8).tobytes()


def unpack_groups(buffer: bytes, first_group: int, count: int,
                  geometry: Params) -> np.ndarray:
    """Registers of groups [first_group, first_group + count) of a sketch buffer: an array
    (count, D, m) of uint8, the inverse of :func:`pack_sketches`."""
    g = geometry
    start, stop = first_group * g.group_bytes, (first_group + count) * g.group_bytes
    if first_group < 0 or count < 0 or stop > len(buffer):
        raise ValueError(f"groups [{first_group}, {first_group + count}) are outside the "
                         f"buffer of {len(buffer) // g.group_bytes} groups")
    raw = np.frombuffer(buffer, dtype=np.uint8, offset=start, count=stop - start)
    if g.field_bits == 4:
        fields = np.empty(raw.size * 2, dtype=np.uint8)
        fields[0::2], fields[1::2] = raw & 0xF, raw >> 4
    else:
        fields = raw
    fields = fields.reshape(count, g.beats_per_group, g.streams, g.registers_per_slot)
    return fields.transpose(0, 2, 1, 3).reshape(count, g.streams, g.m)


def pack_features(z: np.ndarray, nz: np.ndarray, geometry: Params) -> bytes:
    """Feature records of whole groups: ``z`` and ``nz`` of shape (groups, V, D). Record
    (j, s) of group q sits at byte q record_block_bytes + (j D + s) record_bytes: nz as u32
    little-endian, then Z little-endian in the remaining record_bytes - 4 bytes."""
    g = geometry
    z, nz = np.asarray(z), np.asarray(nz)
    groups = z.shape[0]
    records = bytearray(groups * g.record_block_bytes)
    zb = g.record_bytes - NZ_BITS // 8
    for q in range(groups):
        base = q * g.record_block_bytes
        for r, (zv, nv) in enumerate(zip(z[q].reshape(-1).tolist(), nz[q].reshape(-1).tolist())):
            at = base + r * g.record_bytes
            records[at:at + 4] = int(nv).to_bytes(4, "little")
            records[at + 4:at + g.record_bytes] = int(zv).to_bytes(zb, "little")
    return bytes(records)


def unpack_features(records: bytes, groups: int,
                    geometry: Params) -> tuple[np.ndarray, np.ndarray]:
    """(Z, nz) arrays of shape (groups, V, D) from feature records (Z as Python ints)."""
    g = geometry
    if len(records) < groups * g.record_block_bytes:
        raise ValueError(f"feature records hold {len(records)} bytes, {groups} groups need "
                         f"{groups * g.record_block_bytes}")
    z = np.empty((groups, g.records_per_group), dtype=object)
    nz = np.empty((groups, g.records_per_group), dtype=np.int64)
    for q in range(groups):
        base = q * g.record_block_bytes
        for r in range(g.records_per_group):
            at = base + r * g.record_bytes
            nz[q, r] = int.from_bytes(records[at:at + 4], "little")
            z[q, r] = int.from_bytes(records[at + 4:at + g.record_bytes], "little")
    shape = (groups, g.pivots, g.streams)
    return z.reshape(shape), nz.reshape(shape)


@dataclass(frozen=True)
class KernelCall:
    """One kernel run: pivots are the sketches of ranks [first_pivot, first_pivot + n_pivots),
    loaded as groups [first_group, first_group + pivot_groups); then ``stream_groups`` groups
    follow. The kernel answers ``groups`` record blocks, one per group read."""

    first_pivot: int
    n_pivots: int
    first_group: int
    pivot_groups: int
    stream_groups: int

    @property
    def groups(self) -> int:
        return self.pivot_groups + self.stream_groups

    def scalar_arguments(self) -> dict[str, int]:
        return {"first_group": self.first_group, "pivot_groups": self.pivot_groups,
                "stream_groups": self.stream_groups}


def partner_stops(sorted_cards: np.ndarray, threshold: float | None) -> np.ndarray:
    """For each rank r: rank r is compared with ranks r+1 .. stop[r]-1 (host.similarity's rule:
    |Y| <= |X| / h with a relative margin 1e-12, none for an empty X)."""
    n = len(sorted_cards)
    if threshold is None:
        return np.full(n, n, dtype=np.int64)
    if not 0 < threshold <= 1:
        raise ValueError(f"threshold must be in (0, 1], not {threshold!r}")
    cards = np.asarray(sorted_cards, dtype=np.float64)
    limits = np.where(cards > 0, cards / threshold * (1 + 1e-12), 0.0)
    return np.searchsorted(cards, limits, side="right").astype(np.int64)


def plan_calls(n: int, geometry: Params, stops: np.ndarray | None = None
               ) -> list[KernelCall]:
    """Kernel calls covering every pair (r, t), r < t < stops[r], of n sorted sketches.

    Call c takes ranks [c V, c V + V) as pivots; the stream runs up to the largest stop of its
    pivots (the stops grow with the rank, so the last pivot's). Calls with no pair are skipped.
    """
    g = geometry
    stops = np.full(n, n, dtype=np.int64) if stops is None else np.asarray(stops)
    calls = []
    for first in range(0, n, g.pivots):
        count = min(g.pivots, n - first)
        first_group = first // g.streams
        pivot_groups = _groups_of(count, g)
        stream_stop = int(stops[first:first + count].max())
        stream_groups = max(0, _groups_of(stream_stop, g) - first_group - pivot_groups)
        if not np.any(stops[first:first + count] > np.arange(first, first + count) + 1):
            continue  # no pivot has a partner
        calls.append(KernelCall(first, count, first_group, pivot_groups, stream_groups))
    return calls


def call_pairs(call: KernelCall, n: int, geometry: Params,
               stops: np.ndarray | None = None) -> tuple[np.ndarray, ...]:
    """The wanted records of a call: arrays (r, t, q, j, s): record (j, s) of the call's group q
    holds the union of ranks r < t, with t < stops[r]."""
    g = geometry
    q, j, s = np.meshgrid(np.arange(call.groups), np.arange(g.pivots), np.arange(g.streams),
                          indexing="ij")
    q, j, s = q.ravel(), j.ravel(), s.ravel()
    r = call.first_pivot + j
    t = (call.first_group + q) * g.streams + s
    stop = np.full(r.size, n) if stops is None else np.asarray(stops)[np.minimum(r, n - 1)]
    keep = (j < call.n_pivots) & (r < t) & (t < n) & (t < stop)
    return r[keep], t[keep], q[keep], j[keep], s[keep]
