"""HyperLogLog sketching, register-identical to kmerspec.golden.hll.

Files are sketched in one native pass (parse, canonical k-mer, fmix64, register update; see
host/fast/_kmer_stream.c), block by block, by host.fast.sketch, whose registers are given here
as numpy arrays; the vectorised functions insert k-mer words that are already at hand.
"""

from collections.abc import Iterable, Iterator

import numpy as np

from kmerspec.golden.hashes import FMIX64
from kmerspec.golden.hll import HllParams
from kmerspec.golden.mincount import MinCountParams
from .hashing import fmix_array
from .kmers import BLOCK_BYTES
from .sketch import file_registers, genome_registers

__all__ = ["fmix64_array", "hll_ranks", "insert_kmers", "sketch_files", "sketch_genomes",
           "union", "features"]

_U64 = np.uint64


def fmix64_array(words: np.ndarray) -> np.ndarray:
    """MurmurHash3's fmix64 of every word (uint64 arithmetic wraps modulo 2^64)."""
    return fmix_array(words.astype(np.uint64, copy=True), FMIX64)


def _bit_length(values: np.ndarray) -> np.ndarray:
    """Number of significant bits of each uint64 (0 for 0).

    float64 holds integers below 2^53 exactly, so each 32-bit half converts without rounding and
    frexp's exponent is its bit length.
    """
    high = (values >> _U64(32)).astype(np.float64)
    low = (values & _U64(0xFFFFFFFF)).astype(np.float64)
    high_length = np.frexp(high)[1]
    return np.where(high_length > 0, high_length + 32, np.frexp(low)[1])


def hll_ranks(hashes: np.ndarray, params: HllParams) -> tuple[np.ndarray, np.ndarray]:
    """(register index, rank) of each hash: top p bits, leading zeros of the low bits + 1."""
    low_bits = 64 - params.p
    index = (hashes >> _U64(low_bits)).astype(np.intp)
    low = hashes & _U64((1 << low_bits) - 1)
    rank = (low_bits + 1) - _bit_length(low).astype(np.int16)
    return index, np.minimum(rank, params.max_rank).astype(np.uint8)


def insert_kmers(registers: np.ndarray, kmers: np.ndarray, params: HllParams) -> None:
    """Insert k-mer words into a register array in place."""
    index, rank = hll_ranks(fmix64_array(kmers), params)
    np.maximum.at(registers, index, rank)


def sketch_files(files: list, k: int, params: HllParams, canonical: bool = True,
                 block_bytes: int = BLOCK_BYTES,
                 min_count: MinCountParams = MinCountParams()) -> np.ndarray:
    """The registers of one genome made of several files (uint8 array of m registers; the bytes
    of host.fast.sketch.file_registers)."""
    return np.frombuffer(file_registers(files, k, params, canonical, block_bytes, min_count),
                         dtype=np.uint8)


def sketch_genomes(genomes: Iterable[list], k: int, params: HllParams, canonical: bool = True,
                   threads: int | None = None,
                   min_count: MinCountParams = MinCountParams()) -> Iterator[np.ndarray]:
    """The registers of each genome, in order, as uint8 arrays
    (host.fast.sketch.genome_registers)."""
    return (np.frombuffer(registers, dtype=np.uint8)
            for registers in genome_registers(genomes, k, params, canonical, threads, min_count))


def union(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.maximum(a, b)


def features(registers: np.ndarray, params: HllParams) -> tuple[int, int]:
    """Exact (Z, nz) of one sketch, as Python ints."""
    counts = np.bincount(registers, minlength=params.max_rank + 1)
    z = sum(int(count) << (params.max_rank - rank) for rank, count in enumerate(counts))
    return z, int(counts[0])
