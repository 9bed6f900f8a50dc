"""Clusters of genomes at a threshold of a metric (``cluster``; docs/SPEC.md section 3,
"Clustering").

The algorithms see the genomes only through the values of the metric, so they are the same for
every estimator, backend and executor, and the same on exact values (the tests run them on exact
k-mer ANI):

* :func:`greedy`: genomes in an order of preference; each joins the closest representative
  chosen before it (the best value passing the threshold, ties to the earlier representative)
  or, when none passes, becomes the representative of a new cluster. Each genome is compared
  with the representatives only, a block of genomes at a time (``query(rows, columns)`` gives
  the values of a block of pairs), so memory is a block of rows against the representatives,
  never the matrix.
* :func:`components`: single linkage cut at the threshold, the connected components of the pairs
  that pass, from a stream of pairs (the pruned all-pairs loop); memory is one number per genome.
* :func:`linkage_clusters`: average or complete linkage of the metric's distance, cut at the
  threshold's distance (clusters whose linkage height is at most it). Such a cluster never spans
  two single-linkage components (average and complete heights are at least the single one), so
  each component's own matrix is enough.

Clusters are numbered from 1 in the order of preference of their representatives, and the
representative of a linkage cluster is its most preferred member.
"""

from collections.abc import Callable, Iterable

import numpy as np

from .choices import METHODS
from .metrics import lower_is_better, metric_distance, passes

__all__ = ["METHODS", "CENTRALITY_SAMPLE", "self_value", "greedy", "components",
           "linkage_clusters", "number_clusters", "centrality", "central_first"]


#: genomes a greedy block compares with the representatives in one query
GREEDY_BLOCK = 256
#: a genome's centrality is its mean value to at most this many other members of its cluster
CENTRALITY_SAMPLE = 256


def self_value(metric: str) -> float:
    """The metric of a genome with itself (SPEC 3: J = C = 1, D = 0, A = 100)."""
    return {"jaccard": 1.0, "containment": 1.0, "ani": 100.0, "mash": 0.0}[metric]


def _best(values: np.ndarray, metric: str) -> int:
    """Position of the best value (the first of equal ones)."""
    return int(np.argmin(values) if lower_is_better(metric) else np.argmax(values))


def greedy(order: np.ndarray, query: Callable[[np.ndarray, np.ndarray], np.ndarray],
           metric: str, threshold: float, block: int = GREEDY_BLOCK
           ) -> tuple[np.ndarray, np.ndarray]:
    """(representative of each genome, its value to it) by greedy clustering in ``order`` (the
    genomes' indices, most preferred first). ``query(rows, columns)`` returns the metric of
    every pair, a len(rows) x len(columns) array. The result does not depend on ``block``."""
    order = np.asarray(order, dtype=np.int64)
    n = order.size
    representative = np.full(n, -1, dtype=np.int64)
    value = np.full(n, self_value(metric))
    chosen = np.empty(0, dtype=np.int64)  # the representatives, in order of preference
    for start in range(0, n, block):
        rows = order[start:start + block]
        known = query(rows, chosen) if chosen.size else np.empty((rows.size, 0))
        fresh: list[int] = []  # representatives chosen within this block
        for row, genome in enumerate(rows.tolist()):
            values = known[row]
            if fresh:
                values = np.concatenate([values, query(np.array([genome]),
                                                       np.array(fresh))[0]])
            candidates = np.concatenate([chosen, fresh]).astype(np.int64)
            passing = np.flatnonzero(passes(metric, values, threshold))
            if passing.size:
                best = passing[_best(values[passing], metric)]
                representative[genome], value[genome] = candidates[best], values[best]
            else:
                representative[genome] = genome
                fresh.append(genome)
        chosen = np.concatenate([chosen, np.array(fresh, dtype=np.int64)])
    return representative, value


def _roots(parent: np.ndarray, nodes: np.ndarray) -> np.ndarray:
    """The root of each node, compressing the paths walked."""
    roots = nodes.copy()
    while True:
        up = parent[roots]
        if np.array_equal(up, roots):
            break
        roots = up
    parent[nodes] = roots
    return roots


def components(n: int, pairs: Iterable[tuple[int, np.ndarray]]) -> np.ndarray:
    """The smallest genome index of each genome's connected component, given the pairs that
    pass as (i, partners) rows in any order (single linkage cut at the threshold)."""
    parent = np.arange(n, dtype=np.int64)
    for i, partners in pairs:
        partners = np.asarray(partners, dtype=np.int64)
        if not partners.size:
            continue
        roots = np.unique(_roots(parent, np.concatenate([[i], partners])))
        parent[roots] = roots[0]  # the smallest root: a root is always its set's least index
    return _roots(parent, np.arange(n, dtype=np.int64))


def linkage_clusters(values: np.ndarray, metric: str, method: str, threshold: float
                     ) -> np.ndarray:
    """Cluster labels (0..) of ``method`` linkage ("average", "complete" or "single") of the
    symmetric matrix of ``metric`` values, cut at the distance of ``threshold``: the labels of
    scipy's fcluster with the "distance" criterion on the metric's distance (1 - J, 1 - C, D;
    1 - A/100 for ani)."""
    n = values.shape[0]
    if n == 1:
        return np.zeros(1, dtype=np.int64)
    from scipy.cluster.hierarchy import fcluster, linkage
    from scipy.spatial.distance import squareform
    distance = np.clip(metric_distance(metric, values), 0.0, None)
    distance = (distance + distance.T) / 2
    np.fill_diagonal(distance, 0.0)
    cut = float(metric_distance(metric, np.array(threshold)))
    tree = linkage(squareform(distance, checks=False), method=method)
    return fcluster(tree, t=cut, criterion="distance").astype(np.int64) - 1


def centrality(groups: np.ndarray, query: Callable[[np.ndarray, np.ndarray], np.ndarray],
               metric: str, sample: int = CENTRALITY_SAMPLE) -> np.ndarray:
    """Each genome's mean value of ``metric`` to the other members of its group (labels
    ``groups``), as a similarity (a distance's values negated): against every other member in
    a group of at most ``sample`` + 1, else against ``sample`` members evenly spaced through
    the group (in index order). A genome alone in its group gets -inf (nothing to be central
    to)."""
    groups = np.asarray(groups)
    out = np.full(groups.size, -np.inf)
    order = np.argsort(groups, kind="stable")
    starts = np.flatnonzero(np.concatenate([[True], groups[order][1:] != groups[order][:-1]]))
    for members in np.split(order, starts[1:]) if groups.size else []:
        if members.size < 2:
            continue
        others = members if members.size <= sample + 1 else \
            members[np.linspace(0, members.size - 1, sample).round().astype(np.int64)]
        values = np.asarray(query(members, others), np.float64)
        if lower_is_better(metric):
            values = -values
        itself = members[:, None] == others[None, :]
        counted = (~itself).sum(axis=1)
        out[members] = np.where(itself, 0.0, values).sum(axis=1) / np.maximum(counted, 1)
    return out


def central_first(groups: np.ndarray, query, metric: str, tie_rank: np.ndarray,
                  sample: int = CENTRALITY_SAMPLE) -> np.ndarray:
    """Each genome's rank in the order of preference "centrality": higher centrality in its
    group (:func:`centrality`) first, equal values by ``tie_rank`` (a rank, 0 first)."""
    order = np.lexsort((np.asarray(tie_rank), -centrality(groups, query, metric, sample)))
    rank = np.empty(order.size, dtype=np.int64)
    rank[order] = np.arange(order.size)
    return rank


def number_clusters(groups: np.ndarray, rank: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(cluster number from 1, representative) of each genome from any group labels: the
    representative of a group is its member of least ``rank`` (position in the order of
    preference), and groups are numbered in the order of their representatives' ranks."""
    groups = np.asarray(groups)
    rank = np.asarray(rank)
    labels, inverse = np.unique(groups, return_inverse=True)
    best = np.full(labels.size, -1, dtype=np.int64)
    for genome in np.argsort(rank, kind="stable")[::-1].tolist():  # the best written last
        best[inverse[genome]] = genome
    numbering = np.empty(labels.size, dtype=np.int64)
    numbering[np.argsort(rank[best], kind="stable")] = np.arange(1, labels.size + 1)
    return numbering[inverse], best[inverse]
