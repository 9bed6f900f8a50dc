"""Small genomes inside large ones, and cardinality at metagenome scale (docs/accuracy.md).

    python bench/containment_small.py [--record]

(the body is written below; this header is completed with the bench)
"""

import numpy as np

from kmerspec.golden.hll import HllParams, top_rank


def simulated_registers(n: int, params: HllParams, rng: np.random.Generator) -> np.ndarray:
    """The registers of a set of ``n`` distinct k-mers, drawn from the distribution their
    hashes give instead of hashing n k-mers: the set's hashes are n independent uniform 64-bit
    words (fmix64 is a bijection, so distinct k-mers hash to distinct words), so the number
    falling in each register is multinomial(n, 1/m), and a register receiving c of them holds
    the largest of c ranks, P(rank <= k) = (1 - 2^-k)^c, drawn by inverting that with one
    uniform number, then capped at the top value R as SPEC 3 caps the rank."""
    m = params.m
    counts = rng.multinomial(n, np.full(m, 1.0 / m))
    registers = np.zeros(m, dtype=np.uint8)
    hit = counts > 0
    uniform = rng.random(int(hit.sum()))
    # smallest k with (1 - 2^-k)^c >= U: k >= -log2(1 - U^(1/c))
    ranks = np.ceil(-np.log2(-np.expm1(np.log(uniform) / counts[hit])))
    registers[hit] = np.minimum(np.maximum(ranks, 1), top_rank(params)).astype(np.uint8)
    return registers
