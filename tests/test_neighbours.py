"""Nearest neighbours (host.neighbours) against a plain sort of each row: full rows, and pairs
arriving in random order and grouping, both ways, with many exact ties."""

import numpy as np
import pytest

from host.neighbours import RunningTopK, top_of_rows
from tests.metric_checks import best_of_row


def tied_matrix(rng, n, metric):
    """A symmetric (or, for containment, asymmetric) matrix of few distinct values: ties."""
    values = rng.integers(0, 5, (n, n)) / 4.0
    if metric != "containment":
        values = np.triu(values, 1) + np.triu(values, 1).T
    if metric == "ani":
        values = 90 + 10 * values
    np.fill_diagonal(values, 0.0 if metric == "mash" else values.max())
    return values


@pytest.mark.parametrize("metric", ["jaccard", "containment", "ani", "mash"])
@pytest.mark.parametrize("top", [1, 2, 5, 40])
def test_top_of_rows_is_the_sorted_row(metric, top):
    rng = np.random.default_rng(top)
    values = tied_matrix(rng, 23, metric)
    rows = range(4, 11)
    best = top_of_rows(values[4:11], top, metric, exclude=list(rows))
    for i, (columns, found) in zip(rows, best):
        expected = best_of_row(values[i], top, metric, skip=i)
        assert columns.tolist() == expected and found.tolist() == values[i, expected].tolist()


def test_top_of_rows_with_named_columns_and_nothing_excluded():
    values = np.array([[0.5, 0.9, 0.5, 0.1]])
    ((columns, found),) = top_of_rows(values, 3, "jaccard", columns=np.array([10, 11, 12, 13]))
    assert columns.tolist() == [11, 10, 12] and found.tolist() == [0.9, 0.5, 0.5]


@pytest.mark.parametrize("metric", ["jaccard", "containment", "mash"])
def test_running_top_k_is_independent_of_order_and_grouping(metric, monkeypatch):
    monkeypatch.setattr(RunningTopK, "_MIN_BATCH", 7)  # merge often
    rng = np.random.default_rng(3)
    n, top = 31, 4
    values = tied_matrix(rng, n, metric)
    pairs = np.array([(i, j) for i in range(n) for j in range(i + 1, n)])
    for trial in range(3):
        pairs = pairs[rng.permutation(len(pairs))]
        best = RunningTopK(n, top, metric)
        for chunk in np.array_split(pairs, rng.integers(1, 40)):
            i, j = chunk[:, 0], chunk[:, 1]
            best.add(i, j, values[i, j])
            best.add(j, i, values[j, i])
        rows = list(best.rows())
        assert [i for i, _, _ in rows] == list(range(n))
        for i, partners, found in rows:
            expected = best_of_row(values[i], top, metric, skip=i)
            assert partners.tolist() == expected, (trial, i)
            assert found.tolist() == values[i, expected].tolist()


def test_running_top_k_of_few_genomes():
    best = RunningTopK(3, 5, "jaccard")
    best.add([0], [2], [0.25])
    best.add([2], [0], [0.25])
    assert [(i, p.tolist(), v.tolist()) for i, p, v in best.rows()] == [
        (0, [2], [0.25]), (1, [], []), (2, [0], [0.25])]
