"""Reference HyperLogLog sketch (SPEC section 3)."""

import math
from collections.abc import Iterable
from dataclasses import dataclass, field

from ..params import P, W, check_fields
from .hashes import fmix64

__all__ = ["HllParams", "Hll", "hll_rank", "features", "estimate", "jaccard", "containment",
           "estimate_from_features", "top_rank", "saturated_count", "tau", "harmonic_sum"]


@dataclass(frozen=True)
class HllParams:
    """HyperLogLog parameters: ``p`` index bits (m = 2^p registers), ``w``-bit registers."""

    p: int = P.default
    w: int = W.default

    def __post_init__(self):
        check_fields(self, (P, W))

    @property
    def m(self) -> int:
        return 1 << self.p

    @property
    def max_rank(self) -> int:
        """W = 2^w - 1: the saturated rank, and the exponent scale of Z."""
        return (1 << self.w) - 1


def hll_rank(h: int, params: HllParams) -> tuple[int, int]:
    """(register index, rank) of a 64-bit hash: top p bits, leading zeros of the rest + 1."""
    index = h >> (64 - params.p)
    low_bits = 64 - params.p
    low = h & ((1 << low_bits) - 1)
    leading_zeros = low_bits - low.bit_length()
    return index, min(leading_zeros + 1, params.max_rank)


@dataclass
class Hll:
    """A HyperLogLog sketch: a list of m registers."""

    params: HllParams = field(default_factory=HllParams)
    registers: list[int] = None

    def __post_init__(self):
        if self.registers is None:
            self.registers = [0] * self.params.m

    def insert_hash(self, h: int) -> None:
        index, rank = hll_rank(h, self.params)
        if rank > self.registers[index]:
            self.registers[index] = rank

    def insert_kmer(self, kmer: int) -> None:
        self.insert_hash(fmix64(kmer))

    def update(self, kmers: Iterable[int]) -> "Hll":
        for kmer in kmers:
            self.insert_kmer(kmer)
        return self

    def union(self, other: "Hll") -> "Hll":
        if other.params != self.params:
            raise ValueError(f"cannot unite HLL sketches with {self.params} and {other.params}")
        return Hll(self.params, [max(a, b) for a, b in zip(self.registers, other.registers)])

    def features(self) -> tuple[int, int]:
        return features(self.registers, self.params)

    def estimate(self) -> float:
        return estimate(self.registers, self.params)


def features(registers: list[int], params: HllParams) -> tuple[int, int]:
    """Exact integer features (Z, nz): Z = sum 2^(W - r), nz = number of zero registers."""
    top = params.max_rank
    z = sum(1 << (top - r) for r in registers)
    nz = sum(1 for r in registers if r == 0)
    return z, nz


def top_rank(params: HllParams) -> int:
    """R: the largest value a register holds (2^w - 1 saturated, or 65 - p when every low hash
    bit is zero). A register at R is censored: its rank is at least R."""
    return min(params.max_rank, 65 - params.p)


def saturated_count(registers: list[int], params: HllParams) -> int:
    """C_R: the registers at the top value R (SPEC 3 "Saturated registers")."""
    top = top_rank(params)
    return sum(1 for r in registers if r == top)


def tau(x: float) -> float:
    """Ertl's tau (2017, the corrected estimator): the expected share, in units of 2^-(R-1) per
    register, of the harmonic sum's terms above R - 1 given that a fraction 1 - x of the
    registers is censored at R; 0 for x = 0 or 1. The series is summed until it stops
    changing (float64, in this order: host/fast/_allpairs.c repeats it operation for
    operation)."""
    if x == 0.0 or x == 1.0:
        return 0.0
    y = 1.0
    z = 1.0 - x
    while True:
        x = math.sqrt(x)
        previous = z
        y *= 0.5
        z -= (1.0 - x) * (1.0 - x) * y
        if z == previous:
            return z / 3.0


def harmonic_sum(z: int, saturated: int, params: HllParams) -> float:
    """sum_j 2^-r_j with the C_R registers at R counted as censored: (Z - C_R 2^(W - R)) / 2^W
    + m tau(1 - C_R / m) 2^-(R - 1); exactly Z / 2^W when C_R = 0. When every register is
    at R the censored sum is 0 (no finite estimate): Z / 2^W is kept, a lower bound."""
    if not saturated or saturated == params.m:
        return z / (1 << params.max_rank)
    r = top_rank(params)
    m = params.m
    below = (z - saturated * (1 << (params.max_rank - r))) / (1 << params.max_rank)
    return below + m * tau(1.0 - saturated / m) * 2.0 ** -(r - 1)


def estimate_from_features(z: int, nz: int, params: HllParams, saturated: int = 0) -> float:
    """The "hll" cardinality estimator from the features, with linear counting for small sets
    and the ``saturated`` registers (C_R, counted from the registers: not a kernel feature)
    censored (SPEC 3)."""
    m = params.m
    alpha = 0.7213 / (1 + 1.079 / m)
    e = alpha * m * m / harmonic_sum(z, saturated, params)
    if e <= 2.5 * m and nz > 0:
        e = m * math.log(m / nz)
    return e


def estimate(registers: list[int], params: HllParams) -> float:
    return estimate_from_features(*features(registers, params), params,
                                  saturated_count(registers, params))


def jaccard(card_x: float, card_y: float, card_union: float) -> float:
    """(|X| + |Y| - |X u Y|) / |X u Y|, clamped to [0, 1]; 0 for an empty union."""
    if card_union <= 0:
        return 0.0
    return min(1.0, max(0.0, (card_x + card_y - card_union) / card_union))


def containment(card_x: float, card_y: float, card_union: float) -> float:
    """Containment of X in Y: (|X| + |Y| - |X u Y|) / |X|, clamped to [0, 1]; 0 for an empty
    X (SPEC 3, "Other metrics")."""
    if card_x <= 0:
        return 0.0
    return min(1.0, max(0.0, (card_x + card_y - card_union) / card_x))
