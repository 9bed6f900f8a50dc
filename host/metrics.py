"""The metrics of ``dist`` and ``search`` from HLL estimates (SPEC 3, "Other metrics").

Every metric derives from the three estimates |X|, |Y| and |X u Y|: Jaccard and containment
directly, the Mash distance and ANI from the Jaccard. Containment is asymmetric (row X is the
query, column Y the reference); the others are symmetric. The Jaccard computed here is, value
for value, the one of the native pair loop (host/fast/_allpairs.c): the same float64 operations
in the same order.
"""

import numpy as np

__all__ = ["METRICS", "base_similarity", "pair_similarity", "express", "metric_values",
           "lower_is_better", "ranking_key", "phylip_distance"]

#: Metric names, as ``--metric`` takes them.
METRICS = ("jaccard", "containment", "ani", "mash")


def base_similarity(metric: str) -> str:
    """The similarity a metric is expressed from: ``containment`` or ``jaccard``."""
    if metric not in METRICS:
        raise ValueError(f"metric must be one of {', '.join(METRICS)}, not {metric!r}")
    return "containment" if metric == "containment" else "jaccard"


def pair_similarity(kind: str, card_rows, card_columns, unions, floor: float = 0.0) -> np.ndarray:
    """J(X, Y) or C(X, Y) from |X| (``card_rows``), |Y| and |X u Y| (broadcast as numpy
    arrays): I = |X| + |Y| - |X u Y|, then I / |X u Y| or I / |X|, clamped to [0, 1]; 0 where
    the denominator is 0, and 0 where the pair is below detection, I < ``floor`` |X u Y|
    (SPEC 3 "Detection"; floor 0 keeps every estimate)."""
    card_rows, card_columns = np.asarray(card_rows, np.float64), np.asarray(card_columns, np.float64)
    unions = np.asarray(unions, np.float64)
    denominator = unions if kind == "jaccard" else np.broadcast_to(card_rows, unions.shape)
    shared = card_rows + card_columns - unions
    with np.errstate(divide="ignore", invalid="ignore"):
        value = shared / denominator
    detected = (denominator > 0) & (shared >= floor * unions)
    return np.where(detected, np.clip(value, 0.0, 1.0), 0.0)


def express(metric: str, similarity: np.ndarray, k: int) -> np.ndarray:
    """The metric from its base similarity (J for mash and ani)."""
    if metric in ("jaccard", "containment"):
        return np.asarray(similarity, np.float64) + 0.0
    # here, not at the top: host.cli imports METRICS on every command's start-up, and the
    # all-pairs module behind mash_distance is heavy
    from .similarity import mash_distance
    distance = mash_distance(similarity, k) + 0.0  # + 0.0: no -0.0 for identical sets
    return distance if metric == "mash" else 100.0 * (1.0 - distance)


def metric_values(metric: str, card_rows, card_columns, unions, k: int,
                  floor: float = 0.0) -> np.ndarray:
    """The metric of each pair (X, Y) from the three estimates (``floor``: pair_similarity)."""
    return express(metric, pair_similarity(base_similarity(metric), card_rows, card_columns,
                                           unions, floor), k)


def lower_is_better(metric: str) -> bool:
    """True for a distance (mash), False for a similarity."""
    base_similarity(metric)
    return metric == "mash"


def ranking_key(metric: str, values: np.ndarray) -> np.ndarray:
    """A key that sorts the best value first (ascending)."""
    return np.asarray(values) if lower_is_better(metric) else -np.asarray(values)


def phylip_distance(metric: str, values: np.ndarray) -> np.ndarray:
    """PHYLIP wants a symmetric distance: 1 - J for jaccard, D for mash, 1 - A/100 (= D) for
    ani; containment is asymmetric and has none (the CLI refuses it)."""
    if metric == "containment":
        raise ValueError("containment is asymmetric; PHYLIP needs a symmetric distance")
    if metric == "jaccard":
        return 1.0 - values + 0.0
    if metric == "ani":
        return 1.0 - values / 100.0 + 0.0
    return values
