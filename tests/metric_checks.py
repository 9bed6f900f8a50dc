"""The expected outputs of dist/search metrics, built from the golden model pair by pair (by either
estimator of SPEC 3): the full matrix (SPEC 3 "Other metrics") and each row's K best by plain
sorting, printed as the CLI prints them; and the printed matrix of dist read back."""

import numpy as np

from host.similarity import mash_distance
from kmerspec.golden.hll import HllParams, containment, estimate, jaccard
from kmerspec.golden.hll_joint import DEFAULT_DETECTION, hll_detected, joint_mle, mle_detected


def golden_matrix(registers: np.ndarray, params: HllParams, metric: str, k: int,
                  columns: np.ndarray | None = None, z: float = DEFAULT_DETECTION,
                  estimator: str = "hll") -> np.ndarray:
    """The metric of every (row, column) pair from golden estimates by ``estimator`` ("hll" or
    "mle"), 0 (J, C) for a pair below detection at ``z`` (SPEC 3 "Detection"); the diagonal
    J = C = 1 (when ``columns`` is None: a square matrix)."""
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
            if estimator == "mle":
                found = joint_mle(row.tolist(), column.tolist(), params)
                similarity[i, j] = (found.containment() if metric == "containment"
                                    else found.jaccard()) if mle_detected(found, z) else 0.0
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


def printed_matrix(path) -> tuple[list[str], np.ndarray]:
    """(names, values) of a ``dist --format tsv`` output."""
    lines = [line.split("\t") for line in path.read_text().splitlines()
             if not line.startswith("#")]
    return [row[0] for row in lines], np.array([[float(v) for v in row[1:]] for row in lines])


def close_to_golden(printed: np.ndarray, expected: np.ndarray, metric: str = "jaccard") -> bool:
    """Printed "mle" values (6 significant digits) against golden ones: the native estimates
    are within 1e-6 of the union of golden's (SPEC 3), and the same pairs are detected (a Mash
    distance of 1, any other metric 0, for a pair below detection)."""
    nothing = 1.0 if metric == "mash" else 0.0
    return (np.allclose(printed, expected, rtol=2e-5, atol=1e-5)
            and bool(((printed != nothing) == (expected != nothing)).all()))
