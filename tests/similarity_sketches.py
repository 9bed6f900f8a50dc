"""Test sketch sets for the similarity kernel: HyperLogLog sketches of related synthetic genomes
(one ancestor, descendants with point mutations, deletions and insertions, so that the Jaccard
values spread over [0, 1]), random register arrays, and the corner cases empty and saturated."""

import random

import numpy as np

from host.fast.hll import insert_kmers
from host.fast.kmers import kmer_array
from kmerspec.golden.hll import HllParams

__all__ = ["genome_family", "sketch_set"]


def _mutate(rng: random.Random, sequence: bytearray, rate: float) -> bytearray:
    out = bytearray()
    for base in sequence:
        roll = rng.random()
        if roll < rate * 0.8:
            out.append(rng.choice(b"ACGT"))
        elif roll < rate * 0.9:
            continue
        else:
            out.append(base)
            if roll > 1 - rate * 0.1:
                out.append(rng.choice(b"ACGT"))
    return out


def genome_family(rng: random.Random, count: int, length: int) -> list[bytes]:
    """FASTA texts of ``count`` genomes: the ancestor's prefixes of varied length, mutated at
    rates from 0 to 20 %, with a few unrelated ones."""
    ancestor = bytearray(rng.choice(b"ACGT") for _ in range(length))
    genomes = []
    for i in range(count):
        if i % 5 == 4:
            size = rng.randint(length // 8, length)
            sequence = bytearray(rng.choice(b"ACGT") for _ in range(size))
        else:
            cut = rng.randint(length // 3, length)
            sequence = _mutate(rng, ancestor[:cut], rng.choice([0.0, 0.002, 0.01, 0.05, 0.2]))
        lines = b"\n".join(bytes(sequence[k:k + 70]) for k in range(0, len(sequence), 70))
        genomes.append(b">g%d synthetic\n%s\n" % (i, lines))
    return genomes


def sketch_set(n_genomes: int, n_random: int, params: HllParams, seed: int = 1,
               length: int = 3000, k: int = 21) -> np.ndarray:
    """(n_genomes + n_random + 2) x m registers: genome sketches, random sketches of varied
    fill, one empty and one saturated sketch, in a shuffled order."""
    rng = random.Random(seed)
    rows = []
    for text in genome_family(rng, n_genomes, length):
        row = np.zeros(params.m, dtype=np.uint8)
        insert_kmers(row, kmer_array(text, k, True), params)
        rows.append(row)
    nprng = np.random.default_rng(seed)
    for _ in range(n_random):
        inserts = int(nprng.integers(0, 4 * params.m))
        row = np.zeros(params.m, dtype=np.uint8)
        ranks = np.minimum(nprng.geometric(0.5, inserts), params.max_rank).astype(np.uint8)
        np.maximum.at(row, nprng.integers(0, params.m, inserts), ranks)
        rows.append(row)
    rows.append(np.zeros(params.m, dtype=np.uint8))
    rows.append(np.full(params.m, params.max_rank, dtype=np.uint8))
    rng.shuffle(rows)
    return np.stack(rows)
