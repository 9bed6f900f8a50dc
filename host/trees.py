"""Trees from a distance matrix (``dist --format newick``): UPGMA and neighbour joining, written
as Newick.

A tree is a node: a leaf is a genome's index (int), an inner node a list of (child, branch
length) pairs. Branch lengths are in the units of the distance (the Mash distance for dist).

* UPGMA (average linkage, scipy's): rooted and ultrametric; an inner node at linkage height h sits
  h / 2 above its leaves, so the path between two leaves is the average distance of their
  clusters (the leaves' own distance for two leaves).
* Neighbour joining (Saitou and Nei 1987, with Studier and Keppler's Q criterion): at each step
  the pair (i, j) of least Q(i, j) = (r - 2) d(i, j) - R_i - R_j (R_i the row sum over the r
  nodes left; ties to the first pair in the matrix's current order) becomes a node u, limb
  lengths d(i, j) / 2 +- (R_i - R_j) / (2 (r - 2)), and d(u, k) = (d(i, k) + d(j, k) - d(i, j)) / 2.
  A negative limb length is set to 0 and its sibling's becomes d(i, j), which keeps their path
  length. The last three nodes meet at one node (an unrooted tree, as Newick writes it: a root of
  three children). O(n^3) time, one n x n matrix.

Names are quoted by Newick's rule where they hold anything besides letters, digits, ``.`` and
``-`` (a blank, ``_``, which unquoted Newick reads as a blank, or ``(),:;[]'``), with a quote
doubled, so every standard parser reads back the names as written.
"""

import re

import numpy as np

from .choices import TREES

__all__ = ["TREES", "upgma", "neighbour_joining", "newick", "newick_name"]


_PLAIN_NAME = re.compile(r"[A-Za-z0-9.\-]+")


def _check(distance: np.ndarray) -> np.ndarray:
    distance = np.asarray(distance, dtype=np.float64)
    if distance.ndim != 2 or distance.shape[0] != distance.shape[1]:
        raise ValueError(f"a distance matrix must be square, not shape {distance.shape}")
    if not np.all(np.isfinite(distance)):
        raise ValueError("the distance matrix holds a value that is not finite")
    distance = (distance + distance.T) / 2  # equal by construction; exactly symmetric now
    np.fill_diagonal(distance, 0.0)
    return distance


def upgma(distance: np.ndarray):
    """The UPGMA tree of a symmetric distance matrix (needs scipy)."""
    distance = _check(distance)
    n = distance.shape[0]
    if n == 1:
        return [(0, 0.0)]
    from scipy.cluster.hierarchy import linkage
    from scipy.spatial.distance import squareform
    steps = linkage(squareform(distance, checks=False), method="average")
    nodes: list = list(range(n))
    heights = [0.0] * n
    for a, b, height, _ in steps:
        a, b, top = int(a), int(b), max(float(height) / 2, heights[int(a)], heights[int(b)])
        nodes.append([(nodes[a], top - heights[a]), (nodes[b], top - heights[b])])
        heights.append(top)
    return nodes[-1]


def neighbour_joining(distance: np.ndarray):
    """The neighbour-joining tree of a symmetric distance matrix (unrooted: a root of three
    children, or of the two genomes when there are two)."""
    d = _check(distance).copy()
    n = d.shape[0]
    nodes: list = list(range(n))
    if n <= 2:
        return [(node, float(d[0, -1]) / 2 if n == 2 else 0.0) for node in nodes]
    r = n
    while r > 3:
        active = d[:r, :r]
        sums = active.sum(axis=1)
        q = (r - 2) * active - sums[:, None] - sums[None, :]
        q[np.diag_indices(r)] = np.inf
        i, j = divmod(int(np.argmin(q)), r)
        i, j = min(i, j), max(i, j)
        dij = d[i, j]
        li = dij / 2 + (sums[i] - sums[j]) / (2 * (r - 2))
        lj = dij - li
        if li < 0:
            li, lj = 0.0, dij
        elif lj < 0:
            li, lj = dij, 0.0
        joined = (d[i, :r] + d[j, :r] - dij) / 2
        nodes[i] = [(nodes[i], float(li)), (nodes[j], float(lj))]
        d[i, :r] = d[:r, i] = joined
        d[i, i] = 0.0
        last = r - 1  # the last node moves into j's place; the matrix shrinks by one
        if j != last:
            d[j, :r] = d[last, :r]
            d[:r, j] = d[:r, last]
            d[j, j] = 0.0
            nodes[j] = nodes[last]
        r -= 1
    a, b, c = 0, 1, 2
    lengths = [(d[a, b] + d[a, c] - d[b, c]) / 2, (d[a, b] + d[b, c] - d[a, c]) / 2,
               (d[a, c] + d[b, c] - d[a, b]) / 2]
    return [(nodes[x], max(0.0, float(length))) for x, length in zip((a, b, c), lengths)]


def newick_name(name: str) -> str:
    """``name`` as a Newick label: unchanged when plain, else in single quotes, a quote
    doubled."""
    if _PLAIN_NAME.fullmatch(name):
        return name
    return "'" + name.replace("'", "''") + "'"


def _length(value: float) -> str:
    return f"{max(0.0, value) + 0.0:.8g}"


def newick(tree, names) -> str:
    """The Newick text of ``tree`` (one line, ending in ``;``), leaves named by ``names``.
    Written without recursion: a tree of n genomes may be n nodes deep."""
    if isinstance(tree, list) and len(tree) == 1:  # one genome
        tree = tree[0][0]
    out = []
    stack = [tree]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            out.append(item)
        elif isinstance(item, (int, np.integer)):
            out.append(newick_name(names[int(item)]))
        else:
            parts: list = ["("]
            for index, (child, length) in enumerate(item):
                parts += [","] * bool(index) + [child, f":{_length(length)}"]
            stack.extend(reversed(parts + [")"]))
    return "".join(out) + ";"
