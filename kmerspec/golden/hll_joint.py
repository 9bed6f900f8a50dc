"""Reference joint estimation of two HyperLogLog sketches and the detection rule (SPEC 3,
"Estimators" and "Detection").

Ertl's joint maximum-likelihood estimator ("New cardinality estimation methods for
HyperLogLog sketches", 2017, section on joint estimation; the one Dashing uses): the two
sketches X and Y are modelled as built from three disjoint sets, X only, Y only and shared,
whose cardinalities are Poisson rates a, b, x per register. A register of a set of rate c
holds a value <= k with probability F_c(k) = exp(-c 2^-k) for k < R, and 1 for k = R, the
largest rank a register can hold (R = min(2^w - 1, 65 - p)). Register j of X is
max(X only, shared), of Y max(Y only, shared), so

    P(K_X <= i, K_Y <= j) = F_a(i) F_b(j) F_x(min(i, j))

and the probability of the observed pair (i, j) is the finite difference of that.
:func:`log_likelihood_direct` writes exactly this (the obviously correct form);
:func:`log_likelihood` is the same function regrouped into the terms of the register-pair
statistic (SPEC 3), with its gradient and Hessian, which the maximisation uses. Tests check
the two forms against each other, the maximum against its neighbourhood, and the estimates
against exact k-mer sets.

The maximisation is the projected Newton method with an active set of SPEC 3, written out in
plain Python; host/fast/_mle.c takes the same steps in C for the pair loops.
"""

import math
from dataclasses import dataclass

from ..params import DEFAULT_DETECTION, ESTIMATORS
from .hll import HllParams, estimate, top_rank

__all__ = ["ESTIMATORS", "hll_floor", "top_rank", "register_pairs", "PairStatistic",
           "pair_statistic", "log_likelihood", "log_likelihood_direct", "JointEstimate",
           "joint_mle", "HLL_RELATIVE_ERROR", "hll_detected", "hll_p_value", "hll_sigma",
           "detection_cardinality", "relative_error", "raw_expectation", "RAW_BIAS_END",
           "LINEAR_COUNTING_END", "mle_detected", "mle_p_value", "DEFAULT_DETECTION", "maximise",
           "projected_newton", "start_rates", "S_CLIP", "MAX_ITERATIONS", "SMALLEST_STEP",
           "GAIN_TOLERANCE", "SUFFICIENT_RISE", "DAMPING"]

#: the relative standard error of an HLL cardinality estimate is HLL_RELATIVE_ERROR / sqrt(m)
HLL_RELATIVE_ERROR = 1.04
#: s = rate * 2^-k above this contributes exp(-s) < 1e-304 to a derivative: clipped there so
#: that exp never overflows (the same clip in host/hll_joint.py)
S_CLIP = 700.0
#: the maximisation's limits (SPEC 3): steps, the last halving
MAX_ITERATIONS = 200
SMALLEST_STEP = 2.0 ** -40
#: the likelihood a step could still gain (its KKT gain, or what a shortened step could gain)
#: below which the maximum is reached: the rounding of L itself is 1e-16 |L| ~ 1e-12 at p = 14
GAIN_TOLERANCE = 1e-12
#: Armijo's condition: a step is taken if L rises by this fraction of its first-order gain
SUFFICIENT_RISE = 1e-4
#: Levenberg's damping of the Newton system, relative to its largest diagonal term
DAMPING = 1e-9


def _linear_coefficient(k: int, r: int) -> float:
    """A_k: -log F_c(k) = c A_k for the value k (0 for the top value, whose CDF is 1)."""
    return 0.0 if k == r else 2.0 ** -k


def _log_coefficient(k: int, r: int) -> float:
    """B_k: P(value k) = exp(-c A_k) (1 - exp(-c B_k)) for 1 <= k <= R."""
    return 2.0 ** -(k - 1) if k == r else 2.0 ** -k


def register_pairs(x: list[int], y: list[int], params: HllParams) -> list[list[int]]:
    """N[i][j]: the number of registers holding i in ``x`` and j in ``y``."""
    r = top_rank(params)
    counts = [[0] * (r + 1) for _ in range(r + 1)]
    for i, j in zip(x, y):
        counts[i][j] += 1
    return counts


@dataclass(frozen=True)
class PairStatistic:
    """The register-pair statistic of SPEC 3: linear sums and five histograms (index k = 1..R;
    index 0 unused)."""

    r: int
    linear_x: float       # sum over registers of A_{K_X}
    linear_y: float       # sum of A_{K_Y}
    linear_shared: float  # sum of A_{min(K_X, K_Y)}
    x_below: list[int]    # K_X = k < K_Y
    y_below: list[int]    # K_Y = k < K_X
    x_above: list[int]    # K_X = k > K_Y
    y_above: list[int]    # K_Y = k > K_X
    equal: list[int]      # K_X = K_Y = k


def pair_statistic(counts: list[list[int]]) -> PairStatistic:
    r = len(counts) - 1
    hist = {name: [0] * (r + 1) for name in ("xb", "yb", "xa", "ya", "eq")}
    lin_x = lin_y = lin_s = 0.0
    for i in range(r + 1):
        for j in range(r + 1):
            n = counts[i][j]
            if not n:
                continue
            lin_x += n * _linear_coefficient(i, r)
            lin_y += n * _linear_coefficient(j, r)
            lin_s += n * _linear_coefficient(min(i, j), r)
            if i < j:
                hist["xb"][i] += n
                hist["ya"][j] += n
            elif i > j:
                hist["xa"][i] += n
                hist["yb"][j] += n
            else:
                hist["eq"][i] += n
    return PairStatistic(r, lin_x, lin_y, lin_s, hist["xb"], hist["yb"], hist["xa"], hist["ya"],
                         hist["eq"])


def log_likelihood_direct(counts: list[list[int]], a: float, b: float, x: float) -> float:
    """The log-likelihood of rates (a, b, x) per register, from the joint CDF's finite
    differences: slow and plain, the reference of :func:`log_likelihood`."""
    r = len(counts) - 1

    def cdf(rate: float, k: int) -> float:
        if k < 0:
            return 0.0
        return 1.0 if k >= r else math.exp(-rate * 2.0 ** -k)

    def joint(i: int, j: int) -> float:
        return cdf(a, i) * cdf(b, j) * cdf(x, min(i, j))

    total = 0.0
    for i in range(r + 1):
        for j in range(r + 1):
            if counts[i][j]:
                p = joint(i, j) - joint(i - 1, j) - joint(i, j - 1) + joint(i - 1, j - 1)
                if p <= 0:
                    return -math.inf
                total += counts[i][j] * math.log(p)
    return total


def _phi(s: float) -> tuple[float, float, float]:
    """log(1 - e^-s) and its first two derivatives (s > 0)."""
    if s <= 0:
        return -math.inf, math.inf, -math.inf
    s_clipped = min(s, S_CLIP)
    up = math.expm1(s_clipped)
    down = -math.expm1(-s)
    return math.log(down), 1.0 / up, -1.0 / (up * -math.expm1(-s_clipped))


def _psi(a: float, b: float, x: float, coefficient: float):
    """log P(K_X = K_Y = k) without its linear part: log(1 - y (1 - (1-u)(1-v))) with
    u = e^-aB, v = e^-bB, y = e^-xB; value, gradient (a, b, x), Hessian."""
    bb = coefficient
    u, v, y = math.exp(-a * bb), math.exp(-b * bb), math.exp(-x * bb)
    one_u, one_v, one_y = -math.expm1(-a * bb), -math.expm1(-b * bb), -math.expm1(-x * bb)
    h = 1.0 - one_u * one_v
    g = one_y + y * one_u * one_v
    if g <= 0:
        return -math.inf, (math.inf,) * 3, ((0.0,) * 3,) * 3
    grad = (bb * y * u * one_v, bb * y * v * one_u, bb * y * h)
    b2y = bb * bb * y
    second = ((-b2y * u * one_v, b2y * u * v, -b2y * u * one_v),
              (b2y * u * v, -b2y * v * one_u, -b2y * v * one_u),
              (-b2y * u * one_v, -b2y * v * one_u, -b2y * h))
    hess = tuple(tuple(second[i][j] / g - grad[i] * grad[j] / (g * g) for j in range(3))
                 for i in range(3))
    return math.log(g), tuple(d / g for d in grad), hess


def log_likelihood(stat: PairStatistic, rates: tuple[float, float, float], derivatives=False):
    """The log-likelihood of rates (a, b, x) per register from the pair statistic; with
    ``derivatives``, (value, gradient, Hessian)."""
    a, b, x = rates
    value = -(a * stat.linear_x + b * stat.linear_y + x * stat.linear_shared)
    grad = [-stat.linear_x, -stat.linear_y, -stat.linear_shared]
    hess = [[0.0] * 3 for _ in range(3)]
    # (histogram, which rates its s sums: indices into (a, b, x))
    single_terms = ((stat.x_below, (0, 2)), (stat.y_below, (1, 2)), (stat.x_above, (0,)),
                    (stat.y_above, (1,)))
    for k in range(1, stat.r + 1):
        bk = _log_coefficient(k, stat.r)
        for hist, members in single_terms:
            n = hist[k]
            if not n:
                continue
            f, f1, f2 = _phi(sum(rates[i] for i in members) * bk)
            if f == -math.inf:
                return (-math.inf, grad, hess) if derivatives else -math.inf
            value += n * f
            for i in members:
                grad[i] += n * bk * f1
                for j in members:
                    hess[i][j] += n * bk * bk * f2
        n = stat.equal[k]
        if n:
            f, f1, f2 = _psi(a, b, x, bk)
            if f == -math.inf:
                return (-math.inf, grad, hess) if derivatives else -math.inf
            value += n * f
            for i in range(3):
                grad[i] += n * f1[i]
                for j in range(3):
                    hess[i][j] += n * f2[i][j]
    return (value, grad, hess) if derivatives else value


def _solve(matrix: list[list[float]], vector: list[float]) -> list[float] | None:
    """matrix^-1 vector by Gaussian elimination with partial pivoting; None if singular."""
    n = len(vector)
    rows = [list(matrix[i]) + [vector[i]] for i in range(n)]
    for c in range(n):
        pivot = max(range(c, n), key=lambda i: abs(rows[i][c]))
        if rows[pivot][c] == 0:
            return None
        rows[c], rows[pivot] = rows[pivot], rows[c]
        for i in range(c + 1, n):
            f = rows[i][c] / rows[c][c]
            for j in range(c, n + 1):
                rows[i][j] -= f * rows[c][j]
    out = [0.0] * n
    for i in reversed(range(n)):
        out[i] = (rows[i][n] - sum(rows[i][j] * out[j] for j in range(i + 1, n))) / rows[i][i]
    return out


def _binding(rate: float, gradient: float, curvature: float) -> bool:
    """A rate held toward its bound 0 this step: the likelihood falls away from 0 along it
    (gradient <= 0) and its own Newton step, rate + gradient / curvature (curvature = -H_ii),
    reaches 0; at 0 with gradient <= 0, or with curvature <= 0, that is any such rate."""
    return gradient <= 0 and rate * curvature <= -gradient


def _step_to(rates, direction, toward_zero, t):
    """The trial point at step length t: the free rates along ``direction``, the binding ones
    along their own Newton step ``toward_zero``, each clipped at 0."""
    return tuple(max(0.0, r + t * (d + z)) for r, d, z in zip(rates, direction, toward_zero))


def _gain(bound_gain: float, direction, grad, free) -> float:
    """The KKT gain of a step: the binding rates' part, then g_i d_i of each free rate (summed
    in this order, as host/fast/_mle.c sums it)."""
    gain = bound_gain
    for i in free:
        gain += direction[i] * grad[i]
    return gain


def projected_newton(evaluate, start, fixed_zero: tuple[int, ...] = ()) -> tuple[tuple, float]:
    """The maximum of a log-likelihood over rates >= 0 (SPEC 3, "Maximisation"): (rates,
    value), by projected Newton steps with an active set (Bertsekas, 1982). ``evaluate(rates)``
    is the value, ``evaluate(rates, True)`` (value, gradient, Hessian); as many rates as
    ``start`` has (three for a pair, five for screen's winner-take-all test, SPEC 3
    "Screening").

    Each step: a rate is binding (:func:`_binding`) when the likelihood falls away from 0
    along it and its own Newton step reaches 0; it moves along that step, clipped at -rate so
    that a step of length 1 puts it at 0. The free rates take the damped Newton step of the
    free rates alone, else the scaled gradient. The KKT gain of the step (what the quadratic
    model says is left) stops the maximisation at 1e-12; there is no stop on a small move,
    which a rate much smaller than the others made long before the maximum (issue 53). Step
    lengths 1, 1/2, ... are tried (Armijo: L must rise by 1e-4 of the first-order gain) while
    they could gain more than 1e-12; the scaled gradient is tried when no length of the Newton
    step is taken. At most 200 steps. Coordinates in ``fixed_zero`` stay 0."""
    n = len(start)
    rates = tuple(0.0 if i in fixed_zero else start[i] for i in range(n))
    value, grad, hess = evaluate(rates, True)
    for _ in range(MAX_ITERATIONS):
        curvature = [-hess[i][i] for i in range(n)]
        binding = [i in fixed_zero or _binding(rates[i], grad[i], curvature[i])
                   for i in range(n)]
        free = [i for i in range(n) if not binding[i]]
        toward_zero, bound_gain = [0.0] * n, 0.0
        for i in range(n):
            if binding[i] and rates[i] > 0:
                newton = grad[i] / curvature[i] if curvature[i] > 0 else -rates[i]
                toward_zero[i] = min(newton, -rates[i])
            if binding[i]:
                bound_gain += grad[i] * toward_zero[i]
        scaled = [0.0] * n
        for i in free:
            scaled[i] = grad[i] / curvature[i] if curvature[i] > 0 else grad[i]
        directions = [scaled]
        if free:
            # Levenberg's damping: a direction the likelihood does not depend on (a and x enter
            # only as a + x when no register of X is at or above Y's) leaves -H singular
            damping = DAMPING * max(curvature[i] for i in free)
            step = _solve([[-hess[i][j] + (damping if i == j else 0.0) for j in free]
                           for i in free], [grad[i] for i in free])
            if step is not None and sum(s * grad[i] for s, i in zip(step, free)) > 0:
                newton = [0.0] * n
                for s, i in zip(step, free):
                    newton[i] = s
                directions.insert(0, newton)
        if _gain(bound_gain, directions[0], grad, free) <= GAIN_TOLERANCE:
            break
        taken = None
        for direction in directions:
            gain = _gain(bound_gain, direction, grad, free)
            t = 1.0
            while t >= SMALLEST_STEP and t * gain > GAIN_TOLERANCE:
                trial = _step_to(rates, direction, toward_zero, t)
                first_order = sum(grad[i] * (trial[i] - rates[i]) for i in range(n))
                if first_order > 0:
                    trial_value = evaluate(trial)
                    if trial_value - value >= SUFFICIENT_RISE * first_order:
                        taken = trial
                        break
                t *= 0.5
            if taken is not None:
                break
        if taken is None:
            break
        rates = taken
        value, grad, hess = evaluate(rates, True)
    return rates, value


def maximise(stat: PairStatistic, start: tuple[float, float, float],
             fixed_zero: tuple[int, ...] = ()) -> tuple[tuple[float, float, float], float]:
    """The maximum of a pair's log-likelihood over a, b, x >= 0 (:func:`projected_newton`)."""
    return projected_newton(
        lambda rates, derivatives=False: log_likelihood(stat, rates, derivatives), start,
        fixed_zero)


@dataclass(frozen=True)
class JointEstimate:
    """Cardinalities from the joint MLE, and the likelihood-ratio statistic of 'shared = 0'."""

    x_only: float
    y_only: float
    shared: float
    likelihood_ratio: float

    @property
    def card_x(self) -> float:
        return self.x_only + self.shared

    @property
    def card_y(self) -> float:
        return self.y_only + self.shared

    @property
    def union(self) -> float:
        return self.x_only + self.y_only + self.shared

    def jaccard(self) -> float:
        return self.shared / self.union if self.union > 0 else 0.0

    def containment(self) -> float:
        """Of X in Y."""
        return self.shared / self.card_x if self.card_x > 0 else 0.0


def start_rates(card_x: float, card_y: float, card_union: float, m: int) -> tuple[float, ...]:
    """The start of the maximisation: inclusion-exclusion of the "hll" estimates, per
    register, each at least 1e-3 so that every term of the likelihood is finite."""
    floor = 1e-3
    return (max(card_union - card_y, 0.0) / m + floor, max(card_union - card_x, 0.0) / m + floor,
            max(card_x + card_y - card_union, 0.0) / m + floor)


def joint_mle(x: list[int], y: list[int], params: HllParams) -> JointEstimate:
    """Ertl's joint MLE of |X only|, |Y only| and |X n Y| from two sketches' registers."""
    m = params.m
    stat = pair_statistic(register_pairs(x, y, params))
    union = [max(i, j) for i, j in zip(x, y)]
    start = start_rates(estimate(x, params), estimate(y, params), estimate(union, params), m)
    rates, full = maximise(stat, start)
    ratio = 0.0  # x = 0 is its own null fit
    if rates[2] > 0:
        _, null = maximise(stat, start, fixed_zero=(2,))
        ratio = max(0.0, 2.0 * (full - null))
    return JointEstimate(rates[0] * m, rates[1] * m, rates[2] * m, ratio)


# -- detection (SPEC 3, "Detection") ------------------------------------------------------------

def hll_floor(params: HllParams, z: float = DEFAULT_DETECTION) -> float:
    """The "hll" rule in Jaccard terms where it is one (every estimate below 2 m or above 8 m,
    :func:`hll_sigma`): a pair is detected iff J > 0 and J >= z (1.04 / sqrt(m)) (0.0244 at
    p = 14, z = 3)."""
    return z * HLL_RELATIVE_ERROR / math.sqrt(params.m)


#: the raw formula (SPEC 3, E = alpha_m m^2 / sum 2^-K) is biased upward for small sets, by
#: 2.5 % at 2.5 m where linear counting hands over to it; above this many elements per
#: register its bias is below 1e-4, and the detection rule takes the estimate as it is
RAW_BIAS_END = 8.0
#: linear counting is used at or below this many per register (SPEC 3)
LINEAR_COUNTING_END = 2.5


def raw_expectation(t: float, params: HllParams) -> float:
    """The expectation of the raw formula per register for a set of t elements per register
    (Poisson, the model of SPEC 3's "mle" estimator): alpha_m / E[2^-K], P(K <= k) =
    exp(-t 2^-k) below the top value R, 1 at it (the large-m limit of E[alpha_m m^2 /
    sum_j 2^-K_j] / m)."""
    r = top_rank(params)
    mean, below = 0.0, 0.0
    for k in range(r + 1):
        cdf = math.exp(-t * 2.0 ** -k) if k < r else 1.0
        mean += (cdf - below) * 2.0 ** -k
        below = cdf
    return 0.7213 / (1 + 1.079 / params.m) / mean


def detection_cardinality(estimate_: float, params: HllParams) -> float:
    """The estimate the detection rule takes: a raw-formula estimate between 2.5 m and
    raw_expectation(8) m is replaced by m t, t in [2, 8] the rate whose raw expectation it
    is (bisection to float64's resolution); any other estimate is taken as it is."""
    m = params.m
    if not LINEAR_COUNTING_END * m < estimate_ < raw_expectation(RAW_BIAS_END, params) * m:
        return estimate_
    low, high = 2.0, RAW_BIAS_END
    for _ in range(64):
        middle = 0.5 * (low + high)
        if raw_expectation(middle, params) * m < estimate_:
            low = middle
        else:
            high = middle
    return 0.5 * (low + high) * m


def relative_error(estimate_: float, params: HllParams) -> float:
    """The relative standard error of an "hll" estimate: 1.04 / sqrt(m) for the raw formula;
    for linear counting (at most 2.5 m; t = E / m) sqrt(e^t - t - 1) / (t sqrt(m)) (Whang,
    Vander-Zanden and Taylor, 1990) where that is larger (above t = 2: 1.18 / sqrt(m) at
    2.5)."""
    t = estimate_ / params.m
    factor = HLL_RELATIVE_ERROR
    if 0 < t <= LINEAR_COUNTING_END:
        factor = max(factor, math.sqrt(math.expm1(t) - t) / t)
    return factor / math.sqrt(params.m)


def hll_sigma(card_x: float, card_y: float, card_union: float, params: HllParams):
    """(I, sigma) of the "hll" detection rule (SPEC 3 "Detection"): I = |X|' + |Y|' -
    |X u Y|' of the detection cardinalities, sigma = the largest relative error of the three
    estimates times |X u Y|'. Outside 2 m .. 8 m (each estimate) this is I = |X| + |Y| -
    |X u Y| and sigma = (1.04 / sqrt(m)) |X u Y|."""
    union = detection_cardinality(card_union, params)
    shared = (detection_cardinality(card_x, params) + detection_cardinality(card_y, params)
              - union)
    error = max(relative_error(card_x, params), relative_error(card_y, params),
                relative_error(card_union, params))
    return shared, error * union


def hll_detected(card_x: float, card_y: float, card_union: float, params: HllParams,
                 z: float = DEFAULT_DETECTION) -> bool:
    """The "hll" estimator's rule: I > 0 and I >= z sigma (:func:`hll_sigma`)."""
    if card_union <= 0:
        return False
    shared, sigma = hll_sigma(card_x, card_y, card_union, params)
    return shared > 0 and shared >= z * sigma


def hll_p_value(card_x: float, card_y: float, card_union: float, params: HllParams) -> float:
    """P(N(0, 1) >= I / sigma) (:func:`hll_sigma`); 1 for an empty union."""
    if card_union <= 0:
        return 1.0
    shared, sigma = hll_sigma(card_x, card_y, card_union, params)
    return 0.5 * math.erfc(shared / sigma / math.sqrt(2.0))


def mle_detected(estimate_: JointEstimate, z: float = DEFAULT_DETECTION) -> bool:
    """The "mle" estimator's rule: shared > 0 and the likelihood ratio >= z^2."""
    return estimate_.shared > 0 and estimate_.likelihood_ratio >= z * z


def mle_p_value(estimate_: JointEstimate) -> float:
    """P(T >= LR) for T ~ (chi^2_0 + chi^2_1) / 2, the likelihood ratio's null distribution
    when the shared rate is on the boundary 0: 1 for LR = 0, else erfc(sqrt(LR / 2)) / 2."""
    if estimate_.likelihood_ratio <= 0:
        return 1.0
    return 0.5 * math.erfc(math.sqrt(estimate_.likelihood_ratio / 2.0))

