"""Ertl's joint maximum-likelihood estimator (the "mle" estimator of SPEC 3) for many pairs at once.

It estimates |X only|, |Y only| and |X n Y| from the register pairs of two sketches, in numpy:
the steps of kmerspec.golden.hll_joint (the register-pair statistic, the log-likelihood with its
gradient and Hessian, the projected Newton maximisation) run over every pair of a block at
once. Results equal the golden model's within 1e-6 |X u Y| on each cardinality (SPEC 3: the two
sum the same terms in a different order and solve the 3 x 3 Newton systems by different
eliminations; see tests/test_estimators.py). host.estimators applies it to the pairs of dist
and search and holds the detection rule and the command-line options.
"""

import numpy as np

from kmerspec.golden.hll import HllParams
from kmerspec.golden.hll_joint import (DAMPING, DEFAULT_DETECTION, GAIN_TOLERANCE,
                                       MAX_ITERATIONS, S_CLIP, SMALLEST_STEP, STEP_TOLERANCE,
                                       top_rank)

__all__ = ["pair_statistics", "PairStatistics", "joint_mle", "JointEstimates", "mle_block"]


def _coefficients(r: int) -> tuple[np.ndarray, np.ndarray]:
    """A_k and B_k of SPEC 3 for k = 0..R (B_0 unused)."""
    k = np.arange(r + 1, dtype=np.float64)
    linear = np.where(k == r, 0.0, 2.0 ** -k)
    log = np.where(k == r, 2.0 ** -(k - 1), 2.0 ** -k)
    return linear, log


class PairStatistics:
    """The register-pair statistic of many pairs: linear sums (n, 3) for (X, Y, shared) and
    the five histograms (n, 5, R + 1): X below, Y below, X above, Y above, equal."""

    def __init__(self, linear: np.ndarray, histograms: np.ndarray, r: int):
        self.linear, self.histograms, self.r = linear, histograms, r

    def __len__(self) -> int:
        return self.linear.shape[0]

    def take(self, index) -> "PairStatistics":
        return PairStatistics(self.linear[index], self.histograms[index], self.r)


def _statistic_matrix(r: int) -> np.ndarray:
    """(R+1)^2 x (3 + 5 (R+1)): the joint histogram N (flattened, i major) times this is
    (linear X, linear Y, linear shared, X below, Y below, X above, Y above, equal)."""
    size = r + 1
    linear_coefficient, _ = _coefficients(r)
    i, j = (a.ravel() for a in np.meshgrid(np.arange(size), np.arange(size), indexing="ij"))
    out = np.zeros((size * size, 3 + 5 * size))
    cells = np.arange(size * size)
    out[:, 0] = linear_coefficient[i]
    out[:, 1] = linear_coefficient[j]
    out[:, 2] = linear_coefficient[np.minimum(i, j)]
    for histogram, (selected, value) in enumerate(((i < j, i), (j < i, j), (i > j, i),
                                                    (j > i, j), (i == j, i))):
        out[cells[selected], 3 + histogram * size + value[selected]] = 1.0
    return out


def pair_statistics(x: np.ndarray, ys: np.ndarray, params: HllParams) -> PairStatistics:
    """The statistic of the pairs (x, ys[t]) from their registers: the joint register
    histogram N[i][j] of each pair (one bincount), then its sums (one product)."""
    r = top_rank(params)
    size = r + 1
    ys = np.asarray(ys, dtype=np.uint8)
    n = ys.shape[0]
    x = np.asarray(x, dtype=np.uint8)
    if max(int(x.max(initial=0)), int(ys.max(initial=0))) > r:
        raise ValueError(f"a register exceeds the largest rank {r} of p={params.p}, w={params.w}")
    # one small bincount per pair beats one large one over offset codes (no int64 copy)
    if size <= 16:
        codes = (x << 4)[None, :] | ys
        width = 16
    else:
        codes = (x.astype(np.uint16) * size)[None, :] + ys
        width = size
    counts = np.empty((n, width * width if size <= 16 else size * size), dtype=np.int64)
    for t in range(n):
        counts[t] = np.bincount(codes[t], minlength=counts.shape[1])
    if size <= 16:  # (16 x 16) -> (size x size)
        counts = counts.reshape(n, 16, 16)[:, :size, :size].reshape(n, size * size)
    sums = counts.astype(np.float64) @ _statistic_matrix(r)
    return PairStatistics(sums[:, :3], sums[:, 3:].reshape(n, 5, size), r)


def _single(s: np.ndarray, count: np.ndarray):
    """count * log(1 - e^-s) and count times its two derivatives; -inf where s = 0 < count."""
    used = count > 0
    positive = s > 0
    safe = np.where(positive, s, 1.0)
    clipped = np.minimum(safe, S_CLIP)
    up = np.expm1(clipped)
    value = np.where(used, np.where(positive, count * np.log(-np.expm1(-safe)), -np.inf), 0.0)
    first = np.where(used, count / up, 0.0)
    second = np.where(used, -count / (up * -np.expm1(-clipped)), 0.0)
    return value, first, second


def _log_likelihood(stat: PairStatistics, rates: np.ndarray, derivatives: bool = False):
    """Vectorised kmerspec.golden.hll_joint.log_likelihood: value (n,), gradient (n, 3),
    Hessian (n, 3, 3) of rates (n, 3) per register."""
    _, log_coefficient = _coefficients(stat.r)
    bk = log_coefficient[None, 1:]
    hist = stat.histograms[:, :, 1:]
    a, b, x = (rates[:, c:c + 1] for c in range(3))
    value = -(rates * stat.linear).sum(axis=1)
    grad = -stat.linear.copy()
    hess = np.zeros((rates.shape[0], 3, 3))
    for h, members in enumerate(((0, 2), (1, 2), (0,), (1,))):
        s = sum(rates[:, c:c + 1] for c in members) * bk
        f, f1, f2 = _single(s, hist[:, h])
        value = value + f.sum(axis=1)
        if derivatives:
            for c in members:
                grad[:, c] += (bk * f1).sum(axis=1)
                for d in members:
                    hess[:, c, d] += (bk * bk * f2).sum(axis=1)
    count = hist[:, 4]
    used = count > 0
    u, v, y = np.exp(-a * bk), np.exp(-b * bk), np.exp(-x * bk)
    one_u, one_v, one_y = -np.expm1(-a * bk), -np.expm1(-b * bk), -np.expm1(-x * bk)
    g = one_y + y * one_u * one_v
    valid = g > 0
    safe_g = np.where(valid, g, 1.0)
    equal_terms = np.where(used, np.where(valid, count * np.log(safe_g), -np.inf), 0.0)
    value = value + equal_terms.sum(axis=1)
    if not derivatives:
        return value
    hh = 1.0 - one_u * one_v
    first = (bk * y * u * one_v, bk * y * v * one_u, bk * y * hh)
    b2y = bk * bk * y
    second = ((-b2y * u * one_v, b2y * u * v, -b2y * u * one_v),
              (b2y * u * v, -b2y * v * one_u, -b2y * v * one_u),
              (-b2y * u * one_v, -b2y * v * one_u, -b2y * hh))
    weight = np.where(used & valid, count, 0.0)
    for c in range(3):
        grad[:, c] += (weight * first[c] / safe_g).sum(axis=1)
        for d in range(3):
            term = second[c][d] / safe_g - first[c] * first[d] / (safe_g * safe_g)
            hess[:, c, d] += (weight * term).sum(axis=1)
    return value, grad, hess


def _maximise(stat: PairStatistics, start: np.ndarray, fix_shared: bool = False
              ) -> tuple[np.ndarray, np.ndarray]:
    """Vectorised kmerspec.golden.hll_joint.maximise: (rates (n, 3), log-likelihood (n,))."""
    rates = np.array(start, dtype=np.float64)
    fixed = np.array([False, False, fix_shared])
    rates[:, fixed] = 0.0
    value, grad, hess = _log_likelihood(stat, rates, True)
    running = np.arange(len(stat))
    for _ in range(MAX_ITERATIONS):
        if running.size == 0:
            break
        r, g, hm = rates[running], grad[running], -hess[running]
        free = ~fixed[None, :] & ~((r == 0) & (g <= 0))
        some = free.any(axis=1)
        running, r, g, hm, free = running[some], r[some], g[some], hm[some], free[some]
        if running.size == 0:
            break
        pinned = ~free
        hm[pinned[:, :, None] | pinned[:, None, :]] = 0.0
        hm[:, np.arange(3), np.arange(3)] += pinned
        g_free = np.where(free, g, 0.0)
        diagonal = np.diagonal(hm, axis1=1, axis2=2)
        damping = DAMPING * np.where(free, diagonal, -np.inf).max(axis=1)
        hm[:, np.arange(3), np.arange(3)] += np.where(free, damping[:, None], 0.0)
        singular = np.linalg.det(hm) == 0
        hm[singular] = np.eye(3)
        step = np.linalg.solve(hm, g_free[:, :, None])[:, :, 0]
        downhill = singular | ((step * g_free).sum(axis=1) <= 0)
        step[downhill] = g_free[downhill]
        gaining = (step * g_free).sum(axis=1) > GAIN_TOLERANCE
        running, r, step = running[gaining], r[gaining], step[gaining]
        if running.size == 0:
            break
        sub = stat.take(running)
        t = np.ones(running.size)
        accepted = np.zeros(running.size, dtype=bool)
        trial = r.copy()
        pending = np.arange(running.size)
        while pending.size and t[pending[0]] >= SMALLEST_STEP:
            candidate = np.maximum(0.0, r[pending] + t[pending, None] * step[pending])
            ok = _log_likelihood(sub.take(pending), candidate) >= value[running[pending]]
            trial[pending[ok]] = candidate[ok]
            accepted[pending[ok]] = True
            pending = pending[~ok]
            t[pending] *= 0.5
        moved = np.abs(trial - r).max(axis=1)
        rates[running[accepted]] = trial[accepted]
        keep = running[accepted]
        if keep.size:
            value[keep], grad[keep], hess[keep] = _log_likelihood(stat.take(keep), rates[keep],
                                                                  True)
        converged = moved[accepted] <= STEP_TOLERANCE * (1.0 + rates[keep].max(axis=1))
        running = keep[~converged]
    return rates, value


class JointEstimates:
    """Ertl's joint MLE of many pairs (cardinalities) and the likelihood-ratio statistic of
    'shared = 0'."""

    def __init__(self, x_only, y_only, shared, likelihood_ratio):
        self.x_only, self.y_only, self.shared = x_only, y_only, shared
        self.likelihood_ratio = likelihood_ratio

    def similarity(self, kind: str) -> np.ndarray:
        """J (kind "jaccard") or C of X in Y ("containment"); 0 for an empty denominator."""
        denominator = self.x_only + self.shared
        if kind == "jaccard":
            denominator = denominator + self.y_only
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(denominator > 0, self.shared / denominator, 0.0)

    def detected(self, z: float = DEFAULT_DETECTION) -> np.ndarray:
        """shared > 0 and LR >= z^2."""
        return (self.shared > 0) & (self.likelihood_ratio >= z * z)

    def p_values(self) -> np.ndarray:
        """P(T >= LR), T ~ (chi^2_0 + chi^2_1) / 2; 1 for LR = 0."""
        from scipy.special import erfc
        ratio = self.likelihood_ratio
        return np.where(ratio > 0, 0.5 * erfc(np.sqrt(np.maximum(ratio, 0) / 2.0)), 1.0)


def joint_mle(stat: PairStatistics, card_x, card_y, card_union, m: int) -> JointEstimates:
    """The joint MLE of each pair of ``stat``, started (as SPEC 3) from the "hll" estimates
    |X|, |Y| and |X u Y| of the pairs."""
    card_x, card_y, card_union = (np.broadcast_to(np.asarray(c, np.float64), (len(stat),))
                                  for c in (card_x, card_y, card_union))
    floor = 1e-3
    start = np.stack([np.maximum(card_union - card_y, 0.0) / m + floor,
                      np.maximum(card_union - card_x, 0.0) / m + floor,
                      np.maximum(card_x + card_y - card_union, 0.0) / m + floor], axis=1)
    rates, full = _maximise(stat, start)
    ratio = np.zeros(len(stat))  # x = 0 is its own null fit
    shared = np.flatnonzero(rates[:, 2] > 0)
    if shared.size:
        _, null = _maximise(stat.take(shared), start[shared], fix_shared=True)
        ratio[shared] = np.maximum(0.0, 2.0 * (full[shared] - null))
    return JointEstimates(rates[:, 0] * m, rates[:, 1] * m, rates[:, 2] * m, ratio)


def mle_block(registers: np.ndarray, params: HllParams, rows, columns, cards: np.ndarray,
              unions: np.ndarray) -> JointEstimates:
    """The joint MLE of every pair (rows[q], columns[t]), flattened row by row; ``cards`` are
    the "hll" estimates of every sketch, ``unions`` (len(rows), len(columns)) those of the
    pairs' unions (the start)."""
    parts = []
    columns = np.asarray(columns, np.int64)
    for q, row in enumerate(np.asarray(rows, np.int64).tolist()):
        stat = pair_statistics(registers[row], registers[columns], params)
        parts.append(joint_mle(stat, cards[row], cards[columns], unions[q], params.m))
    return JointEstimates(*(np.concatenate([getattr(p, name) for p in parts]) if parts
                            else np.zeros(0)
                            for name in ("x_only", "y_only", "shared", "likelihood_ratio")))
