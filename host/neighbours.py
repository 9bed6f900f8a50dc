"""Nearest neighbours (``dist --top K``, ``search --top K``) without the full matrix (SPEC 3).

The K best others of a genome are the first K of its matrix row, the diagonal left out, sorted
best value first and equal values by ascending index. Two ways to get them, both equal to that
definition:

* :func:`top_of_rows`: from complete rows, a tile of rows at a time (the software backend and
  Dask: a task computes its rows against every genome and keeps K per row; ``search``);
* :class:`RunningTopK`: from pairs arriving in any order and grouping (the similarity kernel
  computes each pair once, call by call): the candidates of both ends of each pair are merged
  into K per genome as they come, in batches.
"""

from collections.abc import Iterator, Sequence

import numpy as np

from kmerspec.golden.hll import HllParams

from .metrics import base_similarity, express, pair_similarity, ranking_key
from .similarity import similarity_rows, union_rows

__all__ = ["top_of_rows", "RunningTopK", "metric_row_tile", "top_row_tile"]


def top_of_rows(values: np.ndarray, top: int, metric: str, columns: np.ndarray | None = None,
                exclude: Sequence[int] | None = None) -> list[tuple[np.ndarray, np.ndarray]]:
    """(column indices, values) of the ``top`` best of each row of ``values``, best first, ties
    by ascending column index. ``columns`` names the columns (default 0..); ``exclude[r]`` is
    a column position left out of row r (the genome itself), or -1 for none."""
    values = np.asarray(values, np.float64)
    n_rows, n_columns = values.shape
    columns = np.arange(n_columns) if columns is None else np.asarray(columns)
    keys = ranking_key(metric, values).astype(np.float64, copy=True)
    if exclude is not None:
        excluded = np.asarray(exclude)
        rows = np.flatnonzero(excluded >= 0)
        keys[rows, excluded[rows]] = np.inf
    result = []
    for r in range(n_rows):
        row_keys = keys[r]
        kept = min(top, int(np.isfinite(row_keys).sum()))
        if kept <= 0:
            result.append((columns[:0], values[r, :0]))
            continue
        # Every column whose key reaches the kept-th smallest key is a candidate (ties
        # included), so the tie order is settled by the sort, not by the partition.
        limit = np.partition(row_keys, kept - 1)[kept - 1]
        candidates = np.flatnonzero((row_keys <= limit) & np.isfinite(row_keys))
        order = np.lexsort((columns[candidates], row_keys[candidates]))[:kept]
        chosen = candidates[order]
        result.append((columns[chosen], values[r, chosen]))
    return result


class RunningTopK:
    """The ``top`` best partners of each of ``n`` genomes, from pairs added in any order.

    :meth:`add` takes candidates (genome, partner, value); they are merged in batches of at
    least ``n * top`` (and 2^20) candidates with the K kept so far: one stable sort by (genome,
    key, partner), then the first K of each genome. The result does not depend on the order
    or grouping of the candidates.
    """

    _MIN_BATCH = 1 << 20

    def __init__(self, n: int, top: int, metric: str):
        self.n, self.top, self.metric = n, top, metric
        self._genomes = np.empty(0, np.int64)
        self._partners = np.empty(0, np.int64)
        self._values = np.empty(0, np.float64)
        self._pending: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        self._pending_count = 0

    def add(self, genomes, partners, values) -> None:
        genomes = np.asarray(genomes, np.int64)
        self._pending.append((genomes, np.asarray(partners, np.int64),
                              np.asarray(values, np.float64)))
        self._pending_count += genomes.size
        if self._pending_count >= max(self._MIN_BATCH, self.n * self.top):
            self._merge()

    def _merge(self) -> None:
        if not self._pending:
            return
        genomes = np.concatenate([self._genomes, *(p[0] for p in self._pending)])
        partners = np.concatenate([self._partners, *(p[1] for p in self._pending)])
        values = np.concatenate([self._values, *(p[2] for p in self._pending)])
        self._pending, self._pending_count = [], 0
        order = np.lexsort((partners, ranking_key(self.metric, values), genomes))
        genomes, partners, values = genomes[order], partners[order], values[order]
        starts = np.searchsorted(genomes, genomes, side="left")
        keep = np.arange(genomes.size) - starts < self.top
        self._genomes, self._partners, self._values = genomes[keep], partners[keep], values[keep]

    def rows(self) -> Iterator[tuple[int, np.ndarray, np.ndarray]]:
        """(genome, partners, values) for every genome in index order, best first."""
        self._merge()
        bounds = np.searchsorted(self._genomes, np.arange(self.n + 1))
        for i in range(self.n):
            lo, hi = bounds[i], bounds[i + 1]
            yield i, self._partners[lo:hi], self._values[lo:hi]


def metric_row_tile(rows: range, registers, cards: np.ndarray, p: int, w: int, metric: str,
                    k: int, threads: int | None = None, rule=None,
                    estimator: str = "hll", detection: float | None = None) -> np.ndarray:
    """Full matrix rows of ``metric`` (diagonal: J = C = 1): a task of a dist run. "hll": from
    the unions of the tile's rows with every genome (``rule``: the detection of
    pair_similarity); "mle": from the joint estimates of the same pairs, 0 below detection at
    Z = ``detection``."""
    rows = np.asarray(rows, np.int64)
    base = base_similarity(metric)
    if estimator == "mle":
        similarity = similarity_rows(registers, HllParams(p, w), rows, cards, threads,
                                     estimator="mle", kind=base, detection=detection)
        return express(metric, similarity, k)
    unions = union_rows(registers, HllParams(p, w), rows, cards=cards, threads=threads)
    similarity = pair_similarity(base, cards[rows, None], cards[None, :], unions, rule)
    similarity[np.arange(rows.size), rows] = 1.0
    return express(metric, similarity, k)


def top_row_tile(rows: range, registers, cards: np.ndarray, p: int, w: int, metric: str,
                 k: int, top: int, threads: int | None = None, rule=None,
                 estimator: str = "hll", detection: float | None = None
                 ) -> list[tuple[int, np.ndarray, np.ndarray]]:
    """(genome, its ``top`` best others, their values) for each row of the tile: a task of a
    dist --top run; memory is one tile of rows."""
    values = metric_row_tile(rows, registers, cards, p, w, metric, k, threads, rule, estimator,
                             detection)
    best = top_of_rows(values, top, metric, exclude=list(rows))
    return [(i, partners, row) for i, (partners, row) in zip(rows, best)]
