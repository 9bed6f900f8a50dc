"""What a reference wins under ``screen -w`` and whether it is significant (SPEC 3 "Screening",
winner-take-all): the joint maximum likelihood of three HyperLogLog sketches, the reference R,
the union U of the references ranked above it and W = the union of the reads and U, and the
likelihood-ratio test of "R has no k-mer in the reads outside U".

Five disjoint sets, Poisson with rates per register: c = R n U, l = R n Q \\ U (what R wins),
r = R \\ (Q u U), u = U \\ R, q = Q \\ (U u R). A register of R is the largest of c, l, r; of
U, of c, u; of W, of c, u, l, q. As for a pair (SPEC 3 "Estimators"), with A_k = 2^-k below the
top value R and 0 at it,

    P(K_R <= i, K_U <= j, K_W <= k) = exp(-(c A_min(i,j,k) + l A_min(i,k) + r A_i
                                           + u A_min(j,k) + q A_k)),

and a register triple has the probability of the box, the eight-corner finite difference of
that (the CDF is 0 at -1). The likelihood is maximised by kmerspec.golden.hll_joint's
projected Newton steps over the five rates, and again with l = 0; LR = 2 (full - null) has
the boundary null distribution (chi^2_0 + chi^2_1) / 2 of the pair test, so the p-value is
erfc(sqrt(LR / 2)) / 2. The pair test cannot answer this: the first pass's p-value is of R's
whole overlap with the reads, which under -w belongs mostly to the references above it.
"""

import itertools
import math

import numpy as np

from kmerspec.golden.hll import HllParams, top_rank
from kmerspec.golden.hll_joint import projected_newton

__all__ = ["LEFTOVER", "ThreeSketches", "leftover_test"]

#: the rates of the model, in this order; LEFTOVER indexes l
RATES = ("c", "l", "r", "u", "q")
LEFTOVER = 1
#: the start's floor per register (as the pair's start, SPEC 3), so that every term is finite
START_FLOOR = 1e-3


def _coefficient(k: np.ndarray, top: int) -> np.ndarray:
    """A_k: 2^-k below the top value, 0 at it, +inf at -1 (the CDF there is 0)."""
    k = np.asarray(k)
    with np.errstate(over="ignore"):
        value = np.where(k >= top, 0.0, np.ldexp(1.0, -np.maximum(k, 0)))
    return np.where(k < 0, np.inf, value)


class ThreeSketches:
    """The log-likelihood of the five rates given the registers of R, U and W
    (``evaluate(rates)``, ``evaluate(rates, True)`` with gradient and Hessian, as
    projected_newton asks)."""

    def __init__(self, reference: np.ndarray, above: np.ndarray, reads_and_above: np.ndarray,
                 params: HllParams):
        top = top_rank(params)
        side = top + 1
        cells = (np.asarray(reference, np.int64) * side + np.asarray(above, np.int64)) * side \
            + np.asarray(reads_and_above, np.int64)
        table = np.bincount(cells, minlength=side ** 3)
        occupied = np.flatnonzero(table)
        self.count = table[occupied].astype(np.float64)
        i, rest = np.divmod(occupied, side * side)
        j, k = np.divmod(rest, side)
        corners, signs = [], []
        for di, dj, dk in itertools.product((0, 1), repeat=3):
            a, b, c = i - di, j - dj, k - dk
            corners.append(np.stack([_coefficient(np.minimum(np.minimum(a, b), c), top),
                                     _coefficient(np.minimum(a, c), top), _coefficient(a, top),
                                     _coefficient(np.minimum(b, c), top), _coefficient(c, top)],
                                    axis=1))
            signs.append(-1.0 if (di + dj + dk) % 2 else 1.0)
        # each corner's exponent relative to the box's own corner (i, j, k), >= 0; corners
        # below -1 (CDF 0) have no term
        self.base = corners[0]
        step = np.stack(corners[1:])  # (7, cells, 5)
        self.present = np.all(np.isfinite(step), axis=2)
        self.step = np.where(self.present[:, :, None], step - self.base[None], 0.0)
        self.signs = np.array(signs[1:])

    def __call__(self, rates, derivatives: bool = False):
        theta = np.asarray(rates, np.float64)
        terms = np.where(self.present, self.signs[:, None] * np.exp(-(self.step @ theta)), 0.0)
        box = 1.0 + terms.sum(axis=0)  # the probability over the CDF at (i, j, k)
        if np.any(box <= 0):
            value = -math.inf
            return (value, [0.0] * 5, [[0.0] * 5 for _ in range(5)]) if derivatives else value
        value = float(self.count @ (np.log(box) - self.base @ theta))
        if not derivatives:
            return value
        weight = self.count / box
        # d box = -sum terms step, d^2 box = sum terms step step^T
        first = -np.einsum("tc,tcr->cr", terms, self.step)
        second = np.einsum("tc,tcr,tcs->crs", terms, self.step, self.step)
        gradient = weight @ first - self.count @ self.base
        hessian = np.einsum("c,crs->rs", weight, second) \
            - np.einsum("c,cr,cs->rs", weight / box, first, first)
        return value, gradient.tolist(), hessian.tolist()


def leftover_test(reference: np.ndarray, above: np.ndarray, reads: np.ndarray,
                  params: HllParams, start_pairs) -> tuple[float, float]:
    """(|R n Q \\ U| per the model's maximum, the likelihood ratio of "it is 0") for reference
    R, the union U of the references above it and the reads Q (registers). ``start_pairs`` =
    (|R \\ U|, |U \\ R|, |R n U|, |R \\ W|, |W \\ R|, |R n W|) from the pair estimates, the
    start of the maximisation."""
    m = params.m
    reads_and_above = np.maximum(reads, above)
    likelihood = ThreeSketches(reference, above, reads_and_above, params)
    r_not_u, u_not_r, r_and_u, r_not_w, w_not_r, r_and_w = (v / m for v in start_pairs)
    start = (r_and_u, max(r_and_w - r_and_u, 0.0), r_not_w, u_not_r,
             max(w_not_r - u_not_r, 0.0))
    start = tuple(v + START_FLOOR for v in start)
    rates, full = projected_newton(likelihood, start)
    if rates[LEFTOVER] <= 0:
        return 0.0, 0.0
    _, null = projected_newton(likelihood, start, fixed_zero=(LEFTOVER,))
    return rates[LEFTOVER] * m, max(0.0, 2.0 * (full - null))
