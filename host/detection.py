"""The "hll" estimator's detection rule of SPEC 3 ("Detection") for many pairs at once: from the
three estimates |X|, |Y|, |X u Y| of each pair (or its Jaccard and the two cardinalities), with
the raw formula's bias beside linear counting's switch taken out and linear counting's own
standard error, as kmerspec.golden.hll_joint.hll_detected does for one pair. Imports nothing of
host/ (host.similarity and host.estimators both use it)."""

import math

import numpy as np

from kmerspec.golden.hll import HllParams, top_rank
from kmerspec.golden.hll_joint import (DEFAULT_DETECTION, HLL_RELATIVE_ERROR,
                                       LINEAR_COUNTING_END, RAW_BIAS_END)

__all__ = ["HllDetection", "detection_cardinalities", "relative_errors", "erfc"]

#: the complementary error function of each element (math.erfc: a software install has no
#: scipy, which only the plot extra installs)
erfc = np.vectorize(math.erfc, otypes=[np.float64])


def _raw_expectation(t: np.ndarray, params: HllParams) -> np.ndarray:
    """kmerspec.golden.hll_joint.raw_expectation of each element of t."""
    r = top_rank(params)
    mean, below = np.zeros_like(t), np.zeros_like(t)
    for k in range(r + 1):
        cdf = np.exp(-t * 2.0 ** -k) if k < r else np.ones_like(t)
        mean += (cdf - below) * 2.0 ** -k
        below = cdf
    return 0.7213 / (1 + 1.079 / params.m) / mean


def detection_cardinalities(estimates, params: HllParams) -> np.ndarray:
    """kmerspec.golden.hll_joint.detection_cardinality of each estimate (the same bisection,
    vectorised over the estimates it changes)."""
    estimates = np.asarray(estimates, np.float64)
    m = params.m
    band = (estimates > LINEAR_COUNTING_END * m) & (
        estimates < _raw_expectation(np.array(RAW_BIAS_END), params) * m)
    if not band.any():
        return estimates
    wanted = estimates[band]
    low, high = np.full(wanted.shape, 2.0), np.full(wanted.shape, RAW_BIAS_END)
    for _ in range(64):
        middle = 0.5 * (low + high)
        below = _raw_expectation(middle, params) * m < wanted
        low, high = np.where(below, middle, low), np.where(below, high, middle)
    out = estimates.copy()
    out[band] = 0.5 * (low + high) * m
    return out


def relative_errors(estimates, params: HllParams) -> np.ndarray:
    """kmerspec.golden.hll_joint.relative_error of each estimate."""
    t = np.asarray(estimates, np.float64) / params.m
    linear = (t > 0) & (t <= LINEAR_COUNTING_END)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        counting = np.sqrt(np.expm1(t) - t) / t
    return np.where(linear, np.maximum(HLL_RELATIVE_ERROR, counting),
                    HLL_RELATIVE_ERROR) / math.sqrt(params.m)


class HllDetection:
    """The "hll" estimator's detection rule at Z (SPEC 3 "Detection",
    kmerspec.golden.hll_joint.hll_detected) for many pairs: from their three estimates, or
    from their Jaccard and the two cardinalities (|X u Y| = (|X| + |Y|) / (1 + J), what a
    pair loop of Jaccard values leaves). ``cards``: the genomes' estimates, for the pairs
    given by index (:meth:`of_jaccard_at`)."""

    def __init__(self, params: HllParams, z: float = DEFAULT_DETECTION,
                 cards: np.ndarray | None = None):
        self.params, self.z, self.cards = params, z, cards

    def sigma(self, card_rows, card_columns, unions) -> tuple[np.ndarray, np.ndarray]:
        """(I, sigma) of each pair (broadcast), as kmerspec.golden.hll_joint.hll_sigma."""
        params = self.params
        card_rows, card_columns, unions = np.broadcast_arrays(
            np.asarray(card_rows, np.float64), np.asarray(card_columns, np.float64),
            np.asarray(unions, np.float64))
        union = detection_cardinalities(unions, params)
        shared = (detection_cardinalities(card_rows, params)
                  + detection_cardinalities(card_columns, params) - union)
        error = np.maximum(np.maximum(relative_errors(card_rows, params),
                                      relative_errors(card_columns, params)),
                           relative_errors(unions, params))
        return shared, error * union

    def detected(self, card_rows, card_columns, unions) -> np.ndarray:
        """I > 0 and I >= Z sigma, False for an empty union."""
        shared, sigma = self.sigma(card_rows, card_columns, unions)
        return (np.asarray(unions) > 0) & (shared > 0) & (shared >= self.z * sigma)

    def p_values(self, card_rows, card_columns, unions) -> np.ndarray:
        """P(N(0,1) >= I / sigma), 1 for an empty union."""
        shared, sigma = self.sigma(card_rows, card_columns, unions)
        with np.errstate(divide="ignore", invalid="ignore"):
            p = 0.5 * erfc(shared / sigma / math.sqrt(2.0))
        return np.where(np.asarray(unions) > 0, p, 1.0)

    def of_jaccard(self, jaccard, card_rows, card_columns) -> np.ndarray:
        """Which pairs of Jaccard estimates (J = I / |X u Y| clamped to [0, 1]) are
        detected: J > 0 and the rule on |X u Y| = (|X| + |Y|) / (1 + J)."""
        jaccard = np.asarray(jaccard, np.float64)
        total = np.asarray(card_rows, np.float64) + np.asarray(card_columns, np.float64)
        return (jaccard > 0) & self.detected(card_rows, card_columns, total / (1.0 + jaccard))

    def of_jaccard_at(self, jaccard, rows, columns) -> np.ndarray:
        """:meth:`of_jaccard` of the pairs of genomes (rows, columns) (indices into cards,
        broadcast)."""
        return self.of_jaccard(jaccard, self.cards[rows], self.cards[columns])
