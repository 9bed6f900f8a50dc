"""Genomes clustered at a threshold, for the API and ``cluster``: greedily with one representative
per cluster (as galah dereplicates) or by single, average or complete linkage; the algorithms are
host.clustering's, the pairs those of host.api.pairs (``pair_tiles``, ``query_block``) by the
run's estimator and detection."""

from dataclasses import dataclass

import numpy as np

from ..clustering import GREEDY_BLOCK, central_first, components, greedy, linkage_clusters, \
    number_clusters, self_value
from ..io import InputError, bounded_lines, open_input
from ..metrics import express, jaccard_bound, passes
from ..scheduler import LocalExecutor
from ..sketchfile import SketchSet
from .pairs import Comparison, pair_tiles, query_block, query_tile, row_tiles
from .run import Run
from kmerspec.golden.hll import HllParams

__all__ = ["Clustering", "Clusters", "ORDERS", "cluster_genomes", "preference", "pair_query",
           "metric_matrix", "square", "groups_of", "subset"]

#: the orders of preference by name (``order``); any other value is a file of genome names
ORDERS = ("centrality", "size", "input", "quality")


@dataclass(frozen=True)
class Clustering(Comparison):
    """How genomes are clustered: at ``threshold`` of ``metric`` (ANI >= 95 percent, the ANI
    of the smaller genome's k-mers in the larger, ``ani_from`` "containment", by default), by
    ``method`` (greedy, single, average, complete), the representatives in the order of
    preference ``order`` (centrality, size, input, quality with the CheckM/CheckM2/dRep table
    ``quality``, or a file of genome names); pairs as :class:`Comparison` compares them."""

    metric: str = "ani"
    threshold: float = 95.0
    ani_from: str = "containment"
    method: str = "greedy"
    order: str = "centrality"
    quality: str | None = None


@dataclass
class Clusters:
    """What :func:`cluster_genomes` found, one entry a genome in input order: ``cluster``
    (1 = the most preferred representative's), ``representative`` (its genome index),
    ``values`` (the metric to it), ``fractions`` (the aligned fraction of a containment ANI,
    else None); ``query(rows, columns, fractions=False)`` compares more pairs the same way."""

    cluster: np.ndarray
    representative: np.ndarray
    values: np.ndarray
    fractions: np.ndarray | None
    query: object


def cluster_genomes(sketches: SketchSet, how: Clustering, run: Run, executor) -> Clusters:
    """Cluster the HLL ``sketches`` as ``how`` says, pairs on the run's backend (and threads)
    or the Dask workers of ``executor``."""
    n = len(sketches)
    query, cards = pair_query(how, run, sketches, executor)
    rank = preference(how, sketches, cards)
    progress = run.progress("cluster", n, "genomes")
    containment = how.ani_from == "containment"
    if how.method == "greedy":
        representative, _ = greedy(np.argsort(rank, kind="stable"), query, how.metric,
                                   how.threshold, block=GREEDY_BLOCK)
        groups = representative
        if how.order == "centrality":  # the clusters anew, the central genomes first
            rank = central_first(groups, query, how.metric, rank)
            representative, _ = greedy(np.argsort(rank, kind="stable"), query, how.metric,
                                       how.threshold, block=GREEDY_BLOCK)
            groups = representative
    elif containment:
        groups = _linkage_groups_of_queries(how, query, n)
    else:
        groups = _linkage_groups(how, run, sketches, executor)
    if how.method != "greedy" and how.order == "centrality":
        rank = central_first(groups, query, how.metric, rank)
    progress.advance(n)
    progress.close()
    cluster, representative = number_clusters(groups, rank)
    values, fractions = _values_to_representatives(query, representative, how.metric)
    return Clusters(cluster, representative, values, fractions, query)


def preference(how: "Clustering", sketches: SketchSet, cards: np.ndarray) -> np.ndarray:
    """Each genome's rank in the order of preference (0 = most preferred); for "centrality"
    the rank by size, which breaks its ties and makes its first pass."""
    n = len(sketches)
    if how.order == "input":
        return np.arange(n)
    if how.order in ("size", "centrality"):
        order = np.lexsort((np.arange(n), -cards))
    elif how.order == "quality":
        from ..quality import quality_scores
        scores = quality_scores(how.quality, sketches.names, sketches.files)
        order = np.lexsort((np.arange(n), -cards, -scores))
    else:
        order = _order_file(how.order, sketches)
    rank = np.empty(n, dtype=np.int64)
    rank[order] = np.arange(n)
    return rank


def _order_file(path: str, sketches: SketchSet) -> np.ndarray:
    index = {name: i for i, name in enumerate(sketches.names)}
    for i, files in enumerate(sketches.files):  # a genome may be named by its file as given
        for file in files:
            index.setdefault(file, i)
    order, seen = [], {}
    what = "a text file of genome names (--order)"
    try:
        with open_input(path, "a file of genome names (--order)") as table:
            # a line at a time, each line naming a genome once: memory holds no more than the
            # genomes' own order, whatever the file (host.io.bounded_lines)
            for number, raw in bounded_lines(table, path, what):
                try:
                    line = raw.decode("utf-8")
                except UnicodeDecodeError:
                    raise InputError(f"{path}: --order: not a text file of genome names "
                                     f"(line {number} is not UTF-8)") from None
                name = line.split("\t")[0].strip()
                if not name or name.startswith("#"):
                    continue
                order.append(_ordered(path, number, name, index, seen))
    except OSError as error:
        raise InputError(f"{path}: --order: {error.strerror or error}") from None
    missing = [sketches.names[i] for i in range(len(sketches)) if i not in seen]
    if missing:
        raise InputError(f"{path}: --order does not name {len(missing)} input genome(s), "
                         f"first {missing[0]!r}; name every genome once")
    return np.array(order, dtype=np.int64)


def _ordered(path: str, number: int, name: str, index: dict, seen: dict) -> int:
    """The genome line ``number`` of the --order file names, once."""
    if name not in index:
        raise InputError(f"{path}: line {number}: --order names {name!r}, which is not an "
                         f"input genome")
    genome = index[name]
    if genome in seen:
        raise InputError(f"{path}: line {number}: --order names {name!r} again (line "
                         f"{seen[genome]})")
    seen[genome] = number
    return genome


def pair_query(how: "Clustering", run: Run, sketches: SketchSet, executor):
    """``query(rows, columns, fractions=False)``: the metric of those pairs by the run's
    estimator (with ``fractions``, and the aligned fractions of a containment ANI), in this
    process (threads) or split by columns over the Dask workers."""
    params = HllParams(sketches.params["p"], sketches.params["w"])
    k = sketches.params["k"]
    packed = sketches.packed_sketches()
    local = isinstance(executor, LocalExecutor)
    options = (how.metric, how.estimator, how.detection)
    ani = (how.ani_from or "jaccard", how.min_af)
    if not local:
        shared = executor.share(packed)
        threads = run.threads or 1

    def query(rows, columns, fractions=False):
        if local:
            return query_block(packed, params, k, rows, columns, *options, run.threads, *ani,
                               fractions)
        parts = [columns[tile.start:tile.stop] for tile in row_tiles(columns.size)]
        found = list(executor.map_ordered(query_tile, parts, shared, params.p, params.w, k,
                                          rows, *options, threads, *ani, True))
        values = np.hstack([part[0] for part in found])
        if not fractions:
            return values
        return values, (np.hstack([part[1] for part in found]) if found[0][1] is not None
                        else None)
    return query, packed.cards


def _linkage_groups(how: "Clustering", run: Run, sketches: SketchSet, executor) -> np.ndarray:
    """Group labels of single, average or complete linkage cut at the threshold: the
    single-linkage components from the pruned all-pairs loop (pairs that pass only), then each
    component's own linkage for average and complete."""
    n, k = len(sketches), sketches.params["k"]
    bound = jaccard_bound(how.metric, how.threshold, k)
    edge_tiles, _ = pair_tiles(how, run, sketches, executor, bound)

    def passing():
        for tile in edge_tiles:
            for i, js, jaccard in tile:
                keep = passes(how.metric, express(how.metric, jaccard, k), how.threshold)
                yield i, js[keep]
    return _linkage_within(how, components(n, passing()), lambda members: metric_matrix(
        how, run, subset(sketches, members), executor, note=False))


def _linkage_within(how: "Clustering", groups: np.ndarray, matrix_of) -> np.ndarray:
    """Group labels of the run's linkage from the single-linkage components ``groups``:
    single linkage is those; average and complete cut each component's own linkage tree, its
    matrix of the metric from ``matrix_of(members)``."""
    if how.method == "single":
        return groups
    labels = np.empty(groups.size, dtype=np.int64)
    next_label = 0
    for members in groups_of(groups):
        sub = np.zeros(1, dtype=np.int64)
        if members.size > 1:
            sub = linkage_clusters(matrix_of(members), how.metric, how.method, how.threshold)
        labels[members] = sub + next_label
        next_label += int(sub.max()) + 1
    return labels


def groups_of(labels: np.ndarray) -> list[np.ndarray]:
    """The genomes of each label, ascending, labels in ascending order (one sort, not a pass
    over every genome per label)."""
    order = np.argsort(labels, kind="stable")
    starts = np.flatnonzero(np.concatenate([[True], labels[order][1:] != labels[order][:-1]]))
    return np.split(order, starts[1:]) if labels.size else []


def subset(sketches: SketchSet, members: np.ndarray) -> SketchSet:
    return SketchSet(kind=sketches.kind, params=sketches.params,
                     names=[sketches.names[i] for i in members.tolist()],
                     files=[sketches.files[i] for i in members.tolist()],
                     arrays={"registers": sketches.arrays["registers"][members]},
                     origin=sketches.origin)


def metric_matrix(how: "Clustering", run: Run, sketches: SketchSet, executor, note: bool = True
            ) -> np.ndarray:
    """The full matrix of the metric by the run's estimator (dist's row tiles)."""
    n, k = len(sketches), sketches.params["k"]
    _, row_tiles_ = pair_tiles(how, run, sketches, executor, None, note=note)
    similarity = np.empty((n, n))
    for tile, rows in row_tiles_:
        similarity[tile.start:tile.stop] = rows
    return express(how.metric, similarity, k)


def _values_to_representatives(query, representative: np.ndarray, metric: str):
    """(each genome's value to its representative, and the aligned fraction of a containment
    ANI (None otherwise)), a cluster at a time (the metric of a genome with itself, and 1, for
    the representatives)."""
    values = np.full(representative.size, self_value(metric))
    fractions = np.ones(representative.size)
    for group in groups_of(representative):
        rep = int(representative[group[0]])
        members = group[group != rep]
        if members.size:
            found, fraction = query(members, np.array([rep]), fractions=True)
            values[members] = found[:, 0]
            if fraction is None:
                fractions = None
            elif fractions is not None:
                fractions[members] = fraction[:, 0]
    return values, fractions


def _linkage_groups_of_queries(how: "Clustering", query, n: int) -> np.ndarray:
    """Group labels of single, average or complete linkage of a metric the all-pairs loops do
    not compute (the containment ANI), from blocks of rows against every genome: the passing
    pairs' components, then each component's own matrix for average and complete."""
    every = np.arange(n)

    def passing():
        for tile in row_tiles(n):
            rows = np.arange(tile.start, tile.stop)
            values = query(rows, every)
            for row, genome in enumerate(rows.tolist()):
                keep = passes(how.metric, values[row], how.threshold)
                keep[genome] = False
                yield genome, every[keep]
    return _linkage_within(how, components(n, passing()),
                           lambda members: square(query, members, how.metric))


def square(query, members: np.ndarray, metric: str) -> np.ndarray:
    """The matrix of ``query`` over ``members``, its diagonal the metric of a genome with
    itself."""
    matrix = query(members, members)
    np.fill_diagonal(matrix, self_value(metric))
    return matrix


