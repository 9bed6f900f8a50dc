"""HyperLogLog: accuracy against exact counts, and the fast backend against the reference."""

import math
import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from host.fast.hll import features as fast_features
from host.fast.hll import hll_ranks, insert_kmers, sketch_files
from host.fast.kmers import kmer_array, kmer_blocks
from kmerspec.golden.hll import Hll, HllParams, estimate, features, hll_rank, jaccard
from kmerspec.golden.parse import kmers
from host.similarity import all_pairs, cardinalities
from tests.genomes import ADVERSARIAL_TEXTS, random_genome_bytes, random_text


def test_rank_edges():
    params = HllParams(p=14, w=4)
    assert hll_rank(0, params) == (0, 15)                   # saturated
    assert hll_rank((1 << 64) - 1, params) == ((1 << 14) - 1, 1)
    assert hll_rank(1 << 49, params) == (0, 1)             # top bit of the low 50 bits set
    assert hll_rank(1 << 40, params) == (0, 10)
    wide = HllParams(p=8, w=8)
    assert hll_rank(0, wide) == (0, 57)                    # 56 low bits, all zero
    assert hll_rank(1, wide) == (0, 56)


def test_parameters_are_validated():
    with pytest.raises(ValueError, match="p must be an integer from 8 to 18, not 7"):
        HllParams(p=7)
    with pytest.raises(ValueError, match="w must be an integer from 4 to 8, not 9"):
        HllParams(w=9)


@pytest.mark.parametrize("p,w", [(14, 4), (8, 8), (18, 5), (10, 6)])
def test_vectorised_ranks_equal_reference(p, w):
    params = HllParams(p, w)
    rng = np.random.default_rng(p * w)
    hashes = rng.integers(0, 2**64, 20000, dtype=np.uint64)
    hashes[:64] = np.uint64(1) << np.arange(64, dtype=np.uint64)
    hashes[64] = 0
    hashes[65:2000] >>= rng.integers(0, 64, 1935).astype(np.uint64)
    index, rank = hll_ranks(hashes, params)
    assert list(zip(index.tolist(), rank.tolist())) == [hll_rank(int(h), params) for h in hashes]


@pytest.mark.parametrize("cardinality", [100, 1_000, 10_000, 100_000, 1_000_000, 10_000_000])
def test_cardinality_error_within_three_standard_errors(cardinality):
    params = HllParams(p=14, w=5)  # w=5: ranks up to 31 are needed beyond ~1e6 distinct items
    rng = np.random.default_rng(cardinality)
    registers = np.zeros(params.m, dtype=np.uint8)
    distinct = np.unique(rng.integers(0, 2**62, int(cardinality * 1.01), dtype=np.uint64))
    distinct = distinct[:cardinality]
    assert distinct.size == cardinality
    for start in range(0, cardinality, 1 << 20):
        insert_kmers(registers, distinct[start:start + (1 << 20)], params)
    relative_error = abs(estimate(registers.tolist(), params) - cardinality) / cardinality
    assert relative_error <= 3 * 1.04 / math.sqrt(params.m)


def test_default_w4_saturates_gracefully_at_genome_scale():
    params = HllParams()  # the JACC default p=14, w=4
    rng = np.random.default_rng(7)
    registers = np.zeros(params.m, dtype=np.uint8)
    items = rng.integers(0, 2**64, 5_000_000, dtype=np.uint64)
    insert_kmers(registers, items, params)
    assert abs(estimate(registers.tolist(), params) - 5e6) / 5e6 <= 3 * 1.04 / 128


def test_estimated_jaccard_tracks_exact_jaccard():
    params = HllParams()
    rng = np.random.default_rng(8)
    for _ in range(12):
        size = int(rng.integers(20_000, 200_000))
        shared = int(size * rng.random())
        pool = np.unique(rng.integers(0, 2**64, 3 * size, dtype=np.uint64))
        rng.shuffle(pool)
        x_items = pool[:size]
        y_items = np.concatenate([pool[:shared], pool[size:2 * size - shared]])
        exact = shared / (2 * size - shared)
        sketches = np.zeros((2, params.m), dtype=np.uint8)
        insert_kmers(sketches[0], x_items, params)
        insert_kmers(sketches[1], y_items, params)
        (_, _, (estimated,)), _ = list(all_pairs(sketches, params))
        assert abs(estimated - exact) < 0.05, (exact, estimated)


def test_golden_jaccard_formula():
    assert jaccard(100, 100, 150) == pytest.approx(50 / 150)
    assert jaccard(100, 100, 0) == 0.0
    assert jaccard(100, 100, 250) == 0.0     # clamped
    assert jaccard(100, 110, 100) == 1.0     # clamped


def golden_registers(texts, k, params, canonical=True):
    sketch = Hll(params)
    for text in texts:
        sketch.update(kmers(text, k, canonical_form=canonical))
    return sketch.registers


@pytest.mark.parametrize("text", ADVERSARIAL_TEXTS)
def test_fast_sketch_equals_golden_on_adversarial_texts(text):
    params = HllParams(p=8, w=4)
    for k in (3, 21, 31):
        assert sketch_files([text], k, params).tolist() == golden_registers([text], k, params)


@settings(max_examples=300, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), k=st.integers(1, 32), p=st.integers(8, 12),
       w=st.integers(4, 8), canonical=st.booleans(), fastq=st.booleans(), unstructured=st.booleans())
def test_fast_backend_equals_golden(seed, k, p, w, canonical, fastq, unstructured):
    rng = random.Random(seed)
    if unstructured:
        texts = [random_text(rng, rng.randint(0, 400)) for _ in range(rng.randint(1, 3))]
    else:
        texts = [random_genome_bytes(rng, records=rng.randint(0, 4), length=200, fastq=fastq)]
    params = HllParams(p, w)
    for text in texts:
        assert kmer_array(text, k, canonical).tolist() == list(kmers(text, k, canonical_form=canonical))
    registers = sketch_files(texts, k, params, canonical)
    assert registers.tolist() == golden_registers(texts, k, params, canonical)
    assert fast_features(registers, params) == features(registers.tolist(), params)


def test_fast_kmers_across_block_seams():
    rng = random.Random(9)
    text = random_genome_bytes(rng, records=30, length=3000)
    for k in (1, 2, 31, 32):
        # 97-byte blocks: many seams, some inside runs and some at breaks
        blocks = list(kmer_blocks(text, k, block_bytes=97))
        assert len(blocks) > 100
        assert np.concatenate(blocks).tolist() == list(kmers(text, k))


def test_cardinalities_equal_golden_estimates():
    params = HllParams(p=10, w=6)
    rng = np.random.default_rng(10)
    registers = rng.integers(0, 20, (20, params.m)).astype(np.uint8)
    registers[0] = 0
    expected = [estimate(r.tolist(), params) for r in registers]
    assert cardinalities(registers, params).tolist() == expected
