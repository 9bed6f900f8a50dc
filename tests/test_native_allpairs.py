"""Native all-pairs Jaccard (host/fast/_allpairs.c) against the golden estimator and formula,
on every SIMD level this CPU has, for every register width, and for any number of threads."""

import numpy as np
import pytest

import host.similarity as similarity
from host.similarity import (PackedSketches, all_pairs, cardinalities, similarity_row_tiles,
                             similarity_rows)
from kmerspec.golden.hll import HllParams, estimate, jaccard


def _sketches(rng, n, params):
    """Sketches from empty to saturated: random fill levels, one all zero, one all max, and
    the second half near copies of the first (pairs of high J)."""
    rows = np.zeros((n, params.m), dtype=np.uint8)
    for row in rows[2:]:
        inserts = int(rng.integers(0, 4 * params.m))
        ranks = np.minimum(rng.geometric(rng.uniform(0.05, 0.6), inserts), params.max_rank)
        np.maximum.at(row, rng.integers(0, params.m, inserts), ranks.astype(np.uint8))
    rows[1] = params.max_rank
    half = n // 2
    changed = rng.random((n - half, params.m)) < 0.05
    rows[half:] = np.where(changed, rng.integers(0, params.max_rank + 1, changed.shape),
                           rows[:n - half])
    return rows


def _golden_pairs(registers, params):
    cards = [estimate(r.tolist(), params) for r in registers]
    n = len(registers)
    return {(i, j): jaccard(cards[i], cards[j],
                            estimate(np.maximum(registers[i], registers[j]).tolist(), params))
            for i in range(n) for j in range(i + 1, n)}


@pytest.mark.parametrize("p, w", [(8, 4), (10, 4), (9, 5), (8, 6), (8, 8)])
def test_pairs_equal_golden(simd_level, p, w):
    params = HllParams(p, w)
    registers = _sketches(np.random.default_rng(p * 10 + w), 12, params)
    expected = _golden_pairs(registers, params)
    got = {(i, j): v for i, js, values in all_pairs(registers, params, threads=1)
           for j, v in zip(js.tolist(), values.tolist())}
    assert got == expected
    assert cardinalities(registers, params).tolist() == \
        [estimate(r.tolist(), params) for r in registers]


def test_pairs_across_row_and_column_tiles_equal_golden(simd_level):
    """More sketches than a row tile (48) and a column tile (16) of the native pair loop, in
    one call: every pair and every row's prepared sketch right where the tiles meet."""
    params = HllParams(8, 4)
    registers = _sketches(np.random.default_rng(99), 100, params)
    expected = _golden_pairs(registers, params)
    got = {(i, j): v for i, js, values in all_pairs(registers, params, threads=1)
           for j, v in zip(js.tolist(), values.tolist())}
    assert got == expected


def test_wide_registers_round_like_python_integers():
    """w = 8: Z reaches 2^263; float64(Z / 2^255) must be Python's correctly rounded quotient,
    here with registers chosen so that Z has far more than 53 significant bits."""
    params = HllParams(8, 8)
    rng = np.random.default_rng(4)
    registers = rng.choice(np.array([0, 1, 2, 60, 130, 254, 255], dtype=np.uint8),
                           (6, params.m))
    assert cardinalities(registers, params).tolist() == \
        [estimate(r.tolist(), params) for r in registers]
    got = {(i, j): v for i, js, values in all_pairs(registers, params)
           for j, v in zip(js.tolist(), values.tolist())}
    assert got == _golden_pairs(registers, params)


@pytest.mark.parametrize("threshold", [None, 0.05, 0.4])
def test_thread_count_does_not_change_pairs(threshold):
    params = HllParams(10, 4)
    registers = _sketches(np.random.default_rng(7), 60, params)
    packed = PackedSketches(registers, params)
    one = [(i, js.tolist(), v.tolist()) for i, js, v in all_pairs(packed, params, threshold,
                                                                   threads=1)]
    assert sum(len(js) for _, js, _ in one) > 0
    for threads in (2, 3, 8):
        assert [(i, js.tolist(), v.tolist()) for i, js, v in
                all_pairs(packed, params, threshold, threads=threads)] == one
    tile = range(10, 25)  # one tile of ranks, as a cluster task computes it
    assert [(i, js.tolist(), v.tolist()) for i, js, v in
            all_pairs(packed, params, threshold, ranks=tile, threads=2)] == one[10:25]


def test_small_blocks_and_pruning_keep_every_pair(monkeypatch):
    """Blocks of a handful of pairs (many cuts inside rows) give the same rows."""
    params = HllParams(8, 4)
    registers = _sketches(np.random.default_rng(8), 40, params)
    expected = [(i, js.tolist(), v.tolist()) for i, js, v in all_pairs(registers, params, 0.1)]
    monkeypatch.setattr(similarity, "_BLOCK_PAIRS", 7)
    monkeypatch.setattr(similarity, "_MIN_BLOCK_PAIRS", 7)
    monkeypatch.setattr(similarity, "_BATCH_PAIRS", 50)
    assert [(i, js.tolist(), v.tolist()) for i, js, v in
            all_pairs(registers, params, 0.1, threads=3)] == expected


def test_full_rows_are_the_pairs_mirrored(monkeypatch):
    params = HllParams(9, 4)
    registers = _sketches(np.random.default_rng(9), 23, params)
    matrix = np.eye(23)
    for (i, j), value in _golden_pairs(registers, params).items():
        matrix[i, j] = matrix[j, i] = value
    assert np.array_equal(similarity_rows(registers, params, range(5, 13), threads=2),
                          matrix[5:13])
    tiles = [range(s, min(s + 4, 23)) for s in range(0, 23, 4)]
    whole = [(t, rows.copy()) for t, rows in similarity_row_tiles(registers, params, tiles)]
    monkeypatch.setattr(similarity, "_MATRIX_BYTES", 0)  # tile by tile instead
    tiled = list(similarity_row_tiles(registers, params, tiles, threads=2))
    for (tile, rows), (other_tile, other_rows) in zip(whole, tiled):
        assert tile == other_tile
        assert np.array_equal(rows, matrix[tile.start:tile.stop])
        assert np.array_equal(other_rows, rows)


def test_packed_sketches_must_match_the_parameters():
    packed = PackedSketches(np.zeros((2, 256), dtype=np.uint8), HllParams(8, 4))
    with pytest.raises(ValueError, match="the sketches were packed for"):
        list(all_pairs(packed, HllParams(8, 5)))
    with pytest.raises(ValueError, match=r"registers must be an n x 512 array, not shape"):
        PackedSketches(np.zeros((2, 256), dtype=np.uint8), HllParams(9, 4))


def _adversarial_registers(rng, p):
    """4-bit registers that stress the vector loops' counters: all empty and all saturated
    (their byte tallies at the most they hold), 0s and 15s alternating and in runs, every
    pair of values side by side, and random mixes heavy in 0 and 15."""
    m = 1 << p
    rows = [np.zeros(m), np.full(m, 15), np.arange(m) % 2 * 15, (np.arange(m) // 64) % 2 * 15,
            np.arange(m) % 16, np.arange(m) // 16 % 16, np.arange(m) * 7 % 16]
    for _ in range(5):
        rows.append(np.where(rng.random(m) < 0.5, rng.choice([0, 15], m),
                             rng.integers(0, 16, m)))
    return np.array(rows, dtype=np.uint8)


@pytest.mark.parametrize("p", [8, 9, 12])
def test_union_features_of_every_level_equal_numpy(simd_level, p):
    """Z, zeros and saturated registers of the union, by the w = 4 loop of each SIMD level,
    exactly as numpy counts them, on every pair of adversarial sketches (p = 8: two vector
    tallies short of a full one; 9 and 12 cross them)."""
    from host.fast.native import native
    params = HllParams(p, 4)
    registers = _adversarial_registers(np.random.default_rng(p), p)
    packed = similarity.pack_registers(registers, params).ravel()
    for x in range(len(registers)):
        for y in range(len(registers)):
            union = np.maximum(registers[x], registers[y]).astype(np.int64)
            expected = (int((1 << (15 - union)).sum()), int((union == 0).sum()),
                        int((union == 15).sum()))
            assert native.union_features4(packed, p, x, y) == expected, (simd_level, x, y)
