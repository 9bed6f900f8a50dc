"""The metrics of ``dist`` and ``search`` from HLL estimates (SPEC 3, "Other metrics").

Every metric derives from the three estimates |X|, |Y| and |X u Y|: Jaccard and containment
directly, the Mash distance and ANI from the Jaccard. Containment is asymmetric (row X is the
query, column Y the reference); the others are symmetric. The Jaccard computed here is, value
for value, the one of the native pair loop (host/fast/_allpairs.c): the same float64 operations
in the same order.
"""

from __future__ import annotations  # numpy's types named below, imported where used

import math

from .choices import ANI_SOURCES, METRICS

__all__ = ["METRICS", "ANI_SOURCES", "DEFAULT_MIN_AF", "containment_ani", "aligned_fraction",
           "base_similarity", "pair_similarity", "express", "metric_values",
           "lower_is_better", "ranking_key", "phylip_distance", "threshold_problem",
           "threshold_text", "passes", "jaccard_bound", "metric_distance"]

#: the smallest aligned fraction of a containment ANI, as ``--min-af`` takes it by default
DEFAULT_MIN_AF = 0.15


def containment_ani(containment, k: int) -> np.ndarray:
    """The containment ANI in percent, 100 C^(1/k) (0 for C = 0): the identity of the smaller
    genome's k-mers in the larger, as mash screen's identity and sourmash's containment ANI."""
    import numpy as np  # here: the command line's parser needs the names alone
    containment = np.clip(np.asarray(containment, np.float64), 0.0, 1.0)
    with np.errstate(divide="ignore"):
        return np.where(containment > 0, 100.0 * containment ** (1.0 / k), 0.0)


def aligned_fraction(card_x, card_y) -> np.ndarray:
    """The aligned fraction a containment ANI rests on: min(|X|, |Y|) / max(|X|, |Y|), the
    part of the larger genome the smaller one spans (it is taken as aligned in full); 0 for
    two empty genomes."""
    import numpy as np
    card_x, card_y = np.asarray(card_x, np.float64), np.asarray(card_y, np.float64)
    larger = np.maximum(card_x, card_y)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(larger > 0, np.minimum(card_x, card_y) / larger, 0.0)


def base_similarity(metric: str) -> str:
    """The similarity a metric is expressed from: ``containment`` or ``jaccard``."""
    if metric not in METRICS:
        raise ValueError(f"metric must be one of {', '.join(METRICS)}, not {metric!r}")
    return "containment" if metric == "containment" else "jaccard"


def pair_similarity(kind: str, card_rows, card_columns, unions, detection=None) -> np.ndarray:
    """J(X, Y) or C(X, Y) from |X| (``card_rows``), |Y| and |X u Y| (broadcast as numpy
    arrays): I = |X| + |Y| - |X u Y|, then I / |X u Y| or I / |X|, clamped to [0, 1]; 0 where
    the denominator is 0, and 0 where the pair is below ``detection`` (the "hll" rule of SPEC 3
    "Detection", a host.detection.HllDetection; None keeps every estimate)."""
    import numpy as np
    card_rows, card_columns = np.asarray(card_rows, np.float64), np.asarray(card_columns, np.float64)
    unions = np.asarray(unions, np.float64)
    denominator = unions if kind == "jaccard" else np.broadcast_to(card_rows, unions.shape)
    shared = card_rows + card_columns - unions
    with np.errstate(divide="ignore", invalid="ignore"):
        value = shared / denominator
    detected = denominator > 0
    if detection is not None:
        detected = detected & detection.detected(card_rows, card_columns, unions)
    return np.where(detected, np.clip(value, 0.0, 1.0), 0.0)


def express(metric: str, similarity: np.ndarray, k: int) -> np.ndarray:
    """The metric from its base similarity (J for mash and ani)."""
    import numpy as np
    if metric in ("jaccard", "containment"):
        return np.asarray(similarity, np.float64) + 0.0
    # here, not at the top: host.cli imports METRICS on every command's start-up, and the
    # all-pairs module behind mash_distance is heavy
    from .similarity import mash_distance
    distance = mash_distance(similarity, k) + 0.0  # + 0.0: no -0.0 for identical sets
    return distance if metric == "mash" else 100.0 * (1.0 - distance)


def metric_values(metric: str, card_rows, card_columns, unions, k: int,
                  detection=None) -> np.ndarray:
    """The metric of each pair (X, Y) from the three estimates (``detection``:
    pair_similarity)."""
    return express(metric, pair_similarity(base_similarity(metric), card_rows, card_columns,
                                           unions, detection), k)


def lower_is_better(metric: str) -> bool:
    """True for a distance (mash), False for a similarity."""
    base_similarity(metric)
    return metric == "mash"


def ranking_key(metric: str, values: np.ndarray) -> np.ndarray:
    """A key that sorts the best value first (ascending)."""
    import numpy as np
    return np.asarray(values) if lower_is_better(metric) else -np.asarray(values)


def phylip_distance(metric: str, values: np.ndarray) -> np.ndarray:
    """PHYLIP wants a symmetric distance: 1 - J for jaccard, D for mash, 1 - A/100 (= D) for
    ani; containment is asymmetric and has none (the CLI refuses it)."""
    if metric == "containment":
        raise ValueError("containment is asymmetric; PHYLIP needs a symmetric distance")
    return metric_distance(metric, values)


# -- thresholds in the metric's own units (SPEC 3 "Thresholds") --------------------------------

#: what a threshold of each metric is, for messages and help
THRESHOLD_RANGES = {"jaccard": "a Jaccard value above 0, at most 1",
                    "containment": "a containment above 0, at most 1",
                    "ani": "an ANI in percent above 0, at most 100",
                    "mash": "a Mash distance from 0, below 1"}

#: relative margin by which the Jaccard bound of an ANI or Mash threshold is lowered, so that no
#: rounding of the metric's float computation can pass a pair the pruning dropped
BOUND_MARGIN = 1e-9


def threshold_problem(metric: str, threshold: float) -> str | None:
    """Why ``threshold`` is not a threshold of ``metric`` (None when it is one). A threshold
    every pair passes (J >= 0, D <= 1) is refused: it is the same as none."""
    base_similarity(metric)
    if metric == "mash":
        valid = 0.0 <= threshold < 1.0
    else:
        valid = 0.0 < threshold <= (100.0 if metric == "ani" else 1.0)
    if valid:
        return None
    return f"must be {THRESHOLD_RANGES[metric]}, not {threshold:g}"


def threshold_text(metric: str, threshold: float | None) -> str | None:
    """The threshold as the header line states it: ``ani>=95``, ``mash<=0.05``."""
    if threshold is None:
        return None
    return f"{metric}{'<=' if lower_is_better(metric) else '>='}{threshold:g}"


def passes(metric: str, values, threshold: float) -> np.ndarray:
    """Which values of ``metric`` pass ``threshold`` (<= for the Mash distance, else >=)."""
    import numpy as np
    values = np.asarray(values, np.float64)
    return values <= threshold if lower_is_better(metric) else values >= threshold


def jaccard_bound(metric: str, threshold: float | None, k: int) -> float | None:
    """The Jaccard value every pair passing ``threshold`` of ``metric`` reaches, for pruning
    (SPEC 3): the threshold itself for jaccard; for ani and mash, J0 = e / (2 - e) with
    e = exp(-k D), D the Mash distance of the threshold (D = -ln(2J / (1 + J)) / k solved for
    J), lowered by a relative 1e-9 so that float rounding of the metric never passes a pair
    below it. None for no threshold and for containment, which Jaccard does not bound (C(X, Y)
    = 1 for any X inside a larger Y)."""
    if threshold is None or metric == "containment":
        return None
    problem = threshold_problem(metric, threshold)
    if problem is not None:
        raise ValueError(f"threshold {problem}")
    if metric == "jaccard":
        return float(threshold)
    distance = threshold if metric == "mash" else 1.0 - threshold / 100.0
    e = math.exp(-k * distance)
    return min(1.0, e / (2.0 - e)) * (1.0 - BOUND_MARGIN)


def metric_distance(metric: str, values: np.ndarray) -> np.ndarray:
    """A distance from values of ``metric``, 0 for identical genomes, for trees and linkage:
    1 - J, 1 - C, the Mash distance D (mash), 1 - A / 100 (= D, ani)."""
    import numpy as np
    if metric == "mash":
        return np.asarray(values, np.float64) + 0.0
    if metric == "ani":
        return 1.0 - np.asarray(values, np.float64) / 100.0 + 0.0
    return 1.0 - np.asarray(values, np.float64) + 0.0
