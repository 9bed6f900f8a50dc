"""Reference minimum-count prefilter of the HyperLogLog (SPEC section 7).

Per genome, every k-mer in stream order is inserted into a Count-Min sketch with conservative
update (:class:`kmerspec.golden.countmin.CountMin`, row r hashed by murmur3_32 with seed
``mc_seed + r``); the k-mer goes on to the HLL iff the estimate of that insertion is at least
``m``. With m = 1 the Count-Min is not used at all.
"""

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from ..params import MC_COUNTER_BITS, MC_DEPTH, MC_SEED, MC_WIDTH_BITS, MIN_COUNT, check_fields
from .countmin import CountMin, murmur3_row_indices

__all__ = ["MinCountParams", "min_count_counter", "passing_kmers"]


@dataclass(frozen=True)
class MinCountParams:
    """The prefilter: runtime ``min_count`` m and the Count-Min's build parameters."""

    min_count: int = MIN_COUNT.default
    mc_depth: int = MC_DEPTH.default
    mc_width_bits: int = MC_WIDTH_BITS.default
    mc_counter_bits: int = MC_COUNTER_BITS.default
    mc_seed: int = MC_SEED.default

    def __post_init__(self):
        check_fields(self, (MIN_COUNT, MC_DEPTH, MC_WIDTH_BITS, MC_COUNTER_BITS, MC_SEED))
        if self.min_count > self.max_count:
            raise ValueError(f"min_count must be at most 2^mc_counter_bits - 1 = "
                             f"{self.max_count}, not {self.min_count}")

    @property
    def max_count(self) -> int:
        return (1 << self.mc_counter_bits) - 1

    @property
    def active(self) -> bool:
        """False for m = 1: the k-mers go to the HLL untouched."""
        return self.min_count > 1

    def record(self) -> dict:
        """What a sketch file records of a genome sketched with this filter ({} for m = 1)."""
        if not self.active:
            return {}
        return {"m": self.min_count, "mc_depth": self.mc_depth,
                "mc_width_bits": self.mc_width_bits, "mc_counter_bits": self.mc_counter_bits,
                "mc_seed": self.mc_seed}

    @classmethod
    def from_record(cls, record: dict) -> "MinCountParams":
        if not record:
            return cls()
        fields = dict(record)
        return cls(min_count=fields.pop("m"), **fields)


def min_count_counter(params: MinCountParams) -> CountMin:
    """A fresh (all-zero) conservative-update Count-Min of the prefilter: one per genome."""
    return CountMin(params.mc_depth, params.mc_width_bits, params.mc_counter_bits,
                    murmur3_row_indices(params.mc_depth, params.mc_width_bits, params.mc_seed),
                    update="cu")


def passing_kmers(kmers: Iterable[int], params: MinCountParams,
                  counter: CountMin | None = None) -> Iterator[int]:
    """The k-mers of one genome that enter its HLL, in order (every k-mer for m = 1).

    ``counter`` (default: a fresh one) holds the counters afterwards, for tests of the state.
    """
    if not params.active:
        yield from kmers
        return
    counter = counter if counter is not None else min_count_counter(params)
    for kmer in kmers:
        if counter.insert(kmer) >= params.min_count:
            yield kmer
