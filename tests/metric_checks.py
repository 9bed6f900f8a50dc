"""The expected outputs of dist/search metrics, built from the golden model pair by pair: the full
matrix (SPEC 3 "Other metrics") and each row's K best by plain sorting, printed as the CLI
prints them."""

import numpy as np

from host.similarity import mash_distance
from kmerspec.golden.hll import HllParams, containment, estimate, jaccard
from kmerspec.golden.hll_joint import DEFAULT_DETECTION, hll_detected


def golden_matrix(registers: np.ndarray, params: HllParams, metric: str, k: int,
                  columns: np.ndarray | None = None, z: float = DEFAULT_DETECTION) -> np.ndarray:
    """The metric of every (row, column) pair from golden estimates, 0 (J, C) for a pair below
    detection at ``z`` (SPEC 3 "Detection"); the diagonal J = C = 1 (when ``columns`` is None:
    a square matrix)."""
    columns = registers if columns is None else columns
    square = columns is registers
    cards_rows = [estimate(r.tolist(), params) for r in registers]
    cards_columns = [estimate(c.tolist(), params) for c in columns]
    base = containment if metric == "containment" else jaccard
    similarity = np.empty((len(registers), len(columns)))
    for i, row in enumerate(registers):
        for j, column in enumerate(columns):
            if square and i == j:
                similarity[i, j] = 1.0
                continue
            union = estimate(np.maximum(row, column).tolist(), params)
            similarity[i, j] = base(cards_rows[i], cards_columns[j], union)
            if not hll_detected(cards_rows[i], cards_columns[j], union, params, z):
                similarity[i, j] = 0.0
    if metric in ("jaccard", "containment"):
        return similarity
    distance = mash_distance(similarity, k) + 0.0
    return distance if metric == "mash" else 100.0 * (1.0 - distance)


def best_of_row(row: np.ndarray, top: int, metric: str, skip: int | None = None) -> list[int]:
    """The ``top`` best column indices of ``row``, best first, ties by index, ``skip`` left
    out: the definition, by a plain sort."""
    sign = 1.0 if metric == "mash" else -1.0
    ranked = sorted((j for j in range(row.size) if j != skip), key=lambda j: (sign * row[j], j))
    return ranked[:top]


def top_edges_text(matrix: np.ndarray, names: list[str], top: int, metric: str) -> list[str]:
    """The data lines of ``dist --format edges --top K``."""
    return [f"{names[i]}\t{names[j]}\t{matrix[i, j]:.6g}"
            for i in range(len(names)) for j in best_of_row(matrix[i], top, metric, skip=i)]


def matrix_text(matrix: np.ndarray, names: list[str]) -> list[str]:
    """The data lines of ``dist --format tsv``."""
    return [name + "\t" + "\t".join(f"{v:.6g}" for v in row) for name, row in zip(names, matrix)]
