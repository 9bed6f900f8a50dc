"""The compiled float64 JSD matrix (host/jsdmatrix.py, host/fast/_jsd.c) against the golden
float64 JSD of kmerspec.golden.entropy, pair by pair, both modes, empty PQAs included."""

import numpy as np
import pytest

from host.fast.threads import map_in_threads
from host.jsdmatrix import PqaArrays, entropies, jsd_row_tile
from kmerspec.golden.entropy import jsd_from_pqas


def random_pqas(rng: np.random.Generator, genomes: int, R: int = 3, n: int = 4) -> PqaArrays:
    """PQAs with shared and private tags (distinct within a queue, as a PQA keeps them),
    repeated counts and some empty genomes."""
    tags = np.array([[rng.choice(12, n, replace=False) for _ in range(1 << R)]
                     for _ in range(genomes)], dtype=np.uint32)  # few tags: overlaps
    values = rng.integers(0, 6, (genomes, 1 << R, n), dtype=np.uint32)
    values[rng.random(genomes) < 0.25] = 0  # empty genomes
    tags[values == 0] = 0
    return PqaArrays(tags, values)


@pytest.mark.parametrize("mode", ["textbook", "counts"])
def test_rows_equal_golden_float(mode):
    pqas = random_pqas(np.random.default_rng(5), 12)
    entropy = entropies(pqas)
    matrix = jsd_row_tile(range(len(pqas)), pqas, entropy, mode, "float")
    for a in range(len(pqas)):
        for b in range(len(pqas)):
            expected = 0.0 if a == b else jsd_from_pqas(pqas.pqa(a), pqas.pqa(b), mode)
            assert matrix[a, b] == pytest.approx(expected, abs=1e-12), (a, b)
    assert np.array_equal(matrix, matrix.T)  # the walk is symmetric, float for float


def test_row_tiles_on_threads_equal_one_pass():
    pqas = random_pqas(np.random.default_rng(6), 30)
    entropy = entropies(pqas)
    whole = jsd_row_tile(range(30), pqas, entropy, "textbook", "float")
    tiles = [range(s, min(s + 7, 30)) for s in range(0, 30, 7)]
    parts = map_in_threads(lambda tile: jsd_row_tile(tile, pqas, entropy, "textbook", "float"),
                           tiles, 3)
    assert np.array_equal(np.vstack(list(parts)), whole)


@pytest.mark.parametrize("arithmetic", ["float", "fixed"])
@pytest.mark.parametrize("mode", ["textbook", "counts"])
def test_the_same_entries_give_exactly_0_and_nothing_is_below_0(mode, arithmetic):
    """Genomes holding the same entries (copies, and one with a queue's entries in another
    order) have JSD exactly 0, not the rounding of the entropies' difference; no value is
    below 0, in the counts mode either (where the difference itself can be negative)."""
    rng = np.random.default_rng(9)
    pqas = random_pqas(rng, 10, R=4, n=6)
    tags, values = pqas.tags.copy(), pqas.values.copy()
    donors = [g for g in range(10) if values[g].any()][:3]
    tags[-3:], values[-3:] = tags[donors], values[donors]
    tags[-1, 0], values[-1, 0] = tags[-1, 0, ::-1], values[-1, 0, ::-1]
    copies = PqaArrays(tags, values)
    entropy = entropies(copies)
    matrix = jsd_row_tile(range(10), copies, entropy, mode, arithmetic)
    for copy, donor in zip(range(7, 10), donors):
        assert matrix[copy, donor] == 0.0 and matrix[donor, copy] == 0.0
    assert (matrix >= 0.0).all()
    if arithmetic == "float":  # the same rows as golden's rule gives
        for a in range(10):
            for b in range(10):
                if a != b:
                    assert matrix[a, b] == pytest.approx(
                        jsd_from_pqas(copies.pqa(a), copies.pqa(b), mode), abs=1e-12)


def test_a_negative_counts_difference_is_0():
    """The counts mode pools raw counts: with very different totals H(pooled) < (H_P + H_Q) / 2
    (-4.96 bits for 1,000 counts of 1 against one of 1e6); the native loop prints 0, as
    golden's jsd_from_pqas."""
    from kmerspec.golden.entropy import jsd_difference
    R, n = 8, 8
    tags = np.zeros((2, 1 << R, n), dtype=np.uint32)
    values = np.zeros((2, 1 << R, n), dtype=np.uint32)
    for h in range(1000):
        queue, slot = h % (1 << R), h >> R
        tags[0, queue, slot], values[0, queue, slot] = (h >> R) + 1, 1
    tags[1, 0, 0], values[1, 0, 0] = 77, 10**6
    pqas = PqaArrays(tags, values)
    assert jsd_difference(pqas.pqa(0), pqas.pqa(1), "counts") < -4.9
    matrix = jsd_row_tile(range(2), pqas, entropies(pqas), "counts", "float")
    assert matrix[0, 1] == 0.0 and matrix[1, 0] == 0.0
    assert jsd_from_pqas(pqas.pqa(0), pqas.pqa(1), "counts") == 0.0
