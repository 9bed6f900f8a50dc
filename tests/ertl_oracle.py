"""An independent maximiser of the joint likelihood of two HyperLogLog sketches, written from
Ertl's paper ("New cardinality estimation methods for HyperLogLog sketches", 2017, the joint
estimation of two sketches), not from the project's code (kmerspec/golden/hll_joint.py,
host/fast/_mle.c): the tests hold the project's maximiser against it.

The paper's model: the sketches X and Y are made of three disjoint sets, X only, Y only and
shared, each a Poisson process of rate (per register) a, b and x. A register of a set of rate
c is <= k with probability exp(-c 2^-k) below the largest value R and 1 at R; register j of X
is the larger of X only's and shared's, so

    P(K_X <= i, K_Y <= j) = G(i, j) = exp(-(a c_i + b c_j + x c_min(i, j))),

c_k = 2^-k (k < R), c_R = 0, and a register pair (i, j) has the probability of the rectangle,
G(i, j) - G(i-1, j) - G(i, j-1) + G(i-1, j-1) (G = 0 at -1). Here it is written as G(i, j) D
with D = 1 - e^-d10 - e^-d01 (1 - e^-e11) (d10, d01, e11 the exponent steps from (i, j) to
(i-1, j), to (i, j-1), and from (i, j-1) to (i-1, j-1)), which keeps the small probabilities
of large register values without cancelling two numbers near 1.

The maximum over a, b, x >= 0 is searched on every face of the orthant (each subset of the
rates held at exactly 0, the others free) in log-rates, which are unconstrained, by L-BFGS-B
(scipy) from several starts, then the best point is polished; the result is the best value
found anywhere.
"""

import math

import numpy as np
from scipy.optimize import minimize, minimize_scalar

__all__ = ["JointLikelihood", "independent_maximum", "top_value"]


def top_value(p: int, w: int) -> int:
    """R: a register holds at most 2^w - 1 and at most 65 - p (the rank of a 64-bit hash's
    64 - p bits, plus one)."""
    return min((1 << w) - 1, 65 - p)


def _c(k: np.ndarray, top: int) -> np.ndarray:
    """c_k = 2^-k below the top value, 0 at it (its CDF is 1 whatever the rate)."""
    k = np.asarray(k)
    return np.where(k >= top, 0.0, np.ldexp(1.0, -np.minimum(k, 1023)))


class JointLikelihood:
    """The log-likelihood of rates (a, b, x) per register given two sketches' registers."""

    def __init__(self, x: np.ndarray, y: np.ndarray, top: int):
        x, y = np.asarray(x, np.int64), np.asarray(y, np.int64)
        table = np.bincount(x * (top + 1) + y, minlength=(top + 1) ** 2)
        cells = np.flatnonzero(table)
        i, j = np.divmod(cells, top + 1)
        self.count = table[cells].astype(np.float64)
        self.registers = x.size

        def exponent(ii, jj):  # -log G(ii, jj) = rates . exponent(ii, jj), ii, jj >= 0
            return np.stack([_c(ii, top), _c(jj, top), _c(np.minimum(ii, jj), top)], axis=1)

        self.has_i, self.has_j = i >= 1, j >= 1
        here = exponent(i, j)
        left, down = exponent(np.maximum(i - 1, 0), j), exponent(i, np.maximum(j - 1, 0))
        corner = exponent(np.maximum(i - 1, 0), np.maximum(j - 1, 0))
        self.here, self.d10, self.d01, self.e11 = here, left - here, down - here, corner - down
        # the one-sketch tables (the starts)
        self.x_hist = np.bincount(x, minlength=top + 1).astype(np.float64)
        self.y_hist = np.bincount(y, minlength=top + 1).astype(np.float64)
        self.top = top

    def value_and_gradient(self, rates) -> tuple[float, np.ndarray]:
        """L and dL/d(a, b, x); -inf where a register pair has probability 0."""
        r = np.asarray(rates, np.float64)
        s10, s01, s11 = self.d10 @ r, self.d01 @ r, self.e11 @ r
        first = np.where(self.has_i, -np.expm1(-s10), 1.0)
        second = np.where(self.has_i, -np.expm1(-s11), 1.0)
        fall = np.where(self.has_j, np.exp(-s01), 0.0)
        d = first - fall * second
        if np.any(d <= 0):
            return -math.inf, np.zeros(3)
        value = float(np.sum(self.count * (np.log(d) - self.here @ r)))
        d_first = np.where(self.has_i, np.exp(-s10), 0.0)[:, None] * self.d10
        d_second = np.where(self.has_i, np.exp(-s11), 0.0)[:, None] * self.e11
        d_d = d_first + fall[:, None] * (self.d01 * second[:, None] - d_second)
        gradient = (self.count[:, None] * (d_d / d[:, None] - self.here)).sum(axis=0)
        return value, gradient

    def value(self, rates) -> float:
        return self.value_and_gradient(rates)[0]

    def one_sketch_rate(self, hist: np.ndarray) -> float:
        """The maximum-likelihood rate of one sketch alone (its start), 0 for an empty one."""
        if hist[1:].sum() == 0:
            return 0.0
        k = np.arange(self.top + 1)
        below = np.where(k >= 1, _c(np.maximum(k - 1, 0), self.top), math.inf)
        here = _c(k, self.top)

        def minus(log_rate):
            c = math.exp(log_rate)
            with np.errstate(divide="ignore", invalid="ignore"):
                p = np.exp(-c * here) * np.where(k >= 1, -np.expm1(-c * (below - here)), 1.0)
                terms = np.where(hist > 0, hist * np.log(p), 0.0)
            return -float(terms.sum())
        found = minimize_scalar(minus, bounds=(math.log(1e-9), math.log(1e9)), method="bounded",
                                options={"xatol": 1e-12})
        return math.exp(found.x)


#: the log-rates searched: e^-40 per register is a set of 1e-13 elements at p = 16, i.e. the face
#: where that rate is 0; e^20 is 3e13 at p = 16
LOWEST, HIGHEST = -40.0, 20.0


def _maximise_face(likelihood: JointLikelihood, free: list[int], start: np.ndarray):
    """The best (value, rates) over the face where only ``free`` rates are nonzero, from
    ``start`` (its free rates > 0), by L-BFGS-B in log-rates."""
    def minus(theta):
        rates = np.zeros(3)
        rates[free] = np.exp(np.clip(theta, LOWEST, HIGHEST))
        value, gradient = likelihood.value_and_gradient(rates)
        if not math.isfinite(value):
            return 1e300, np.zeros(len(free))
        return -value, -gradient[free] * rates[free]
    theta = np.log(start[free])
    found = minimize(minus, theta, jac=True, method="BFGS",
                     options={"maxiter": 5000, "gtol": 1e-9})
    rates = np.zeros(3)
    rates[free] = np.exp(np.clip(found.x, LOWEST, HIGHEST))
    return likelihood.value(rates), rates


FACES = ([0, 1, 2], [0, 1], [1, 2], [0, 2], [0], [1], [2])


def independent_maximum(x: np.ndarray, y: np.ndarray, top: int) -> tuple[float, np.ndarray]:
    """(max L, the rates (a, b, x) per register where it is) over a, b, x >= 0."""
    likelihood = JointLikelihood(x, y, top)
    rate_x = max(likelihood.one_sketch_rate(likelihood.x_hist), 1e-6)
    rate_y = max(likelihood.one_sketch_rate(likelihood.y_hist), 1e-6)
    smaller = min(rate_x, rate_y)
    best_value, best_rates = likelihood.value(np.zeros(3)), np.zeros(3)
    for share in (1e-4, 0.05, 0.3, 0.7, 0.95, 0.9999):
        s = share * smaller
        start = np.array([max(rate_x - s, 1e-6), max(rate_y - s, 1e-6), s])
        for free in FACES:
            value, rates = _maximise_face(likelihood, free, start)
            if value > best_value:
                best_value, best_rates = value, rates
    # the polish: the best point's face again, from it
    free = [i for i in range(3) if best_rates[i] > 0]
    if free:
        value, rates = _maximise_face(likelihood, free, best_rates)
        if value > best_value:
            best_value, best_rates = value, rates
    return best_value, best_rates
