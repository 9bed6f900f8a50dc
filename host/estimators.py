"""Estimators selected by name and the detection rule of SPEC 3, for many pairs at once.

``hll`` is the specified estimator (the three cardinality estimates of host.similarity, the
kernels' too); ``mle`` is Ertl's joint maximum-likelihood estimator of |X only|, |Y only| and
|X n Y| from the two sketches' register pairs, computed here in numpy: the steps of
kmerspec.golden.hll_joint (statistic, log-likelihood, projected Newton) run over every pair
of a block at once. Results equal the golden model's within 1e-6 |X u Y| on each
cardinality (SPEC 3: the two sum the same terms in a different order and solve the 3 x 3
Newton systems by different eliminations; see tests/test_estimators.py).

Detection: a pair is "below detection" when its shared k-mers are not significantly above
zero (z standard deviations, default 3); such a pair is reported as nothing shared (J = C = 0,
so Mash distance 1 and ANI 0), as Mash reports unrelated genomes at distance 1.
"""

import math

import numpy as np

from kmerspec.golden.hll import HllParams
from kmerspec.golden.hll_joint import (DAMPING, DEFAULT_DETECTION, GAIN_TOLERANCE,
                                       HLL_RELATIVE_ERROR, MAX_ITERATIONS, S_CLIP, SMALLEST_STEP,
                                       STEP_TOLERANCE, top_rank)

__all__ = ["ESTIMATORS", "DEFAULT_DETECTION", "hll_floor", "hll_detected",
           "pair_statistics", "PairStatistics", "joint_mle", "JointEstimates", "mle_block",
           "mle_pairs", "mle_matrix", "mle_query_values", "add_estimator_options",
           "detection_floor", "floor_jaccard_tiles", "mle_dist_tiles", "KERNEL_NOTE",
           "p_value_lines"]

#: estimator names, as ``--estimator`` takes them
ESTIMATORS = ("hll", "mle")


# -- the "hll" estimator's detection -----------------------------------------------------------

def hll_floor(params: HllParams, z: float = DEFAULT_DETECTION) -> float:
    """The Jaccard floor of the "hll" estimator: z (1.04 / sqrt(m)) (0.0244 at p = 14, z = 3).
    A pair is detected iff J >= this floor and J > 0."""
    return z * HLL_RELATIVE_ERROR / math.sqrt(params.m)


def hll_detected(card_rows, card_columns, unions, params: HllParams,
                 z: float = DEFAULT_DETECTION) -> np.ndarray:
    """I = |X| + |Y| - |X u Y| > 0 and I >= z (1.04 / sqrt(m)) |X u Y| (broadcast)."""
    shared = (np.asarray(card_rows, np.float64) + np.asarray(card_columns, np.float64)
              - np.asarray(unions, np.float64))
    return (shared > 0) & (shared >= hll_floor(params, z) * np.asarray(unions, np.float64))


# -- the "mle" estimator ----------------------------------------------------------------------

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


# -- matrices for dist and search ----------------------------------------------------------------

#: pairs per batch: their register codes (m bytes a pair) stay within 64 MiB
_MLE_BATCH_BYTES = 1 << 26


def _mle_of_pairs(registers: np.ndarray, params: HllParams, left: np.ndarray, right: np.ndarray,
                  cards: np.ndarray, unions: np.ndarray) -> JointEstimates:
    """The joint MLE of the pairs (left[t], right[t]), in batches; ``unions`` their "hll"
    union estimates."""
    parts = []
    batch = max(1, _MLE_BATCH_BYTES // params.m)
    for lo in range(0, left.size, batch):
        part = slice(lo, lo + batch)
        stats = [pair_statistics(registers[i], registers[right[part][left[part] == i]], params)
                 for i in np.unique(left[part])]
        order = np.argsort(left[part], kind="stable")  # pairs grouped by left, as stats are
        stat = PairStatistics(np.concatenate([s.linear for s in stats]),
                              np.concatenate([s.histograms for s in stats]), stats[0].r)
        estimate = joint_mle(stat, cards[left[part]][order], cards[right[part]][order],
                             unions[part][order], params.m)
        back = np.empty_like(order)
        back[order] = np.arange(order.size)
        parts.append(JointEstimates(*(getattr(estimate, name)[back] for name in
                                      ("x_only", "y_only", "shared", "likelihood_ratio"))))
    names = ("x_only", "y_only", "shared", "likelihood_ratio")
    return JointEstimates(*(np.concatenate([getattr(p, name) for p in parts]) if parts
                            else np.zeros(0) for name in names))


def _pair_unions(registers: np.ndarray, params: HllParams, left: np.ndarray, right: np.ndarray,
                 cards: np.ndarray) -> np.ndarray:
    from .similarity import union_rows
    out = np.empty(left.size)
    for i in np.unique(left):
        at = np.flatnonzero(left == i)
        out[at] = union_rows(registers, params, [i], right[at], cards=cards)[0]
    return out


def mle_pairs(registers: np.ndarray, params: HllParams, left, right) -> JointEstimates:
    """The joint MLE of the pairs (registers[left[t]], registers[right[t]])."""
    from .similarity import cardinalities
    registers = np.ascontiguousarray(registers, dtype=np.uint8)
    left, right = np.asarray(left, np.int64), np.asarray(right, np.int64)
    cards = cardinalities(registers, params)
    return _mle_of_pairs(registers, params, left, right, cards,
                         _pair_unions(registers, params, left, right, cards))


def mle_matrix(registers: np.ndarray, params: HllParams, kind: str,
               z: float = DEFAULT_DETECTION) -> np.ndarray:
    """The full matrix of J or C (row in column) by the "mle" estimator, pairs below
    detection 0, the diagonal 1 (SPEC 3). Each pair is estimated once."""
    n = len(registers)
    left, right = np.triu_indices(n, 1)
    estimates = mle_pairs(registers, params, left, right)
    detected = estimates.detected(z)
    matrix = np.eye(n)
    matrix[left, right] = np.where(detected, estimates.similarity(kind), 0.0)
    if kind == "jaccard":
        matrix[right, left] = matrix[left, right]
    else:  # C(Y, X): the same estimate seen from Y
        swapped = JointEstimates(estimates.y_only, estimates.x_only, estimates.shared,
                                 estimates.likelihood_ratio)
        matrix[right, left] = np.where(detected, swapped.similarity(kind), 0.0)
    return matrix


def mle_query_values(references: np.ndarray, queries: np.ndarray, params: HllParams, kind: str,
                     z: float = DEFAULT_DETECTION) -> np.ndarray:
    """(queries x references) J or C (query in reference) by the "mle" estimator, pairs below
    detection 0."""
    registers = np.concatenate([references, queries])
    n_ref, n_query = len(references), len(queries)
    left = np.repeat(np.arange(n_query) + n_ref, n_ref)
    right = np.tile(np.arange(n_ref), n_query)
    estimates = mle_pairs(registers, params, left, right)
    values = np.where(estimates.detected(z), estimates.similarity(kind), 0.0)
    return values.reshape(n_query, n_ref)


# -- the command line (dist and search) ----------------------------------------------------------

KERNEL_NOTE = ("note: --estimator mle: the pairs are estimated on the host from the sketches; "
               "the similarity kernel returns union features (Z, nz) only, not the register "
               "pairs the joint MLE needs")


def _detection_z(text: str) -> float:
    import argparse
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0.0 <= value <= 100.0:
        raise argparse.ArgumentTypeError(f"must be from 0 to 100 standard deviations, not {text}")
    return value


_detection_z.__name__ = "number"


def add_estimator_options(sub) -> None:
    """--estimator and --detection (SPEC 3) on a dist or search parser."""
    group = sub.add_argument_group("Estimator and detection (SPEC 3)")
    group.add_argument("--estimator", choices=ESTIMATORS, default="hll",
                       help="hll: |X| + |Y| - |X u Y| from the three HLL estimates (default; "
                            "what the kernels compute); mle: Ertl's joint maximum-likelihood "
                            "estimate of the shared k-mers from the two sketches' registers "
                            "(more accurate for small overlaps and unequal sizes; slower: "
                            "the pairs are estimated in this process, on one thread, with "
                            "every backend and with --cluster/--workers, which then sketch "
                            "only)")
    group.add_argument("--detection", type=_detection_z, default=DEFAULT_DETECTION, metavar="Z",
                       help="report a pair as sharing nothing (J = C = 0, Mash distance 1, ANI "
                            "0) unless its shared k-mers are Z standard deviations above zero "
                            "(hll: I >= Z 1.04/sqrt(2^p) |X u Y|; mle: likelihood ratio >= Z^2); "
                            "0 prints every estimate (default 3)")
    group.add_argument("--pvalue", action="store_true",
                       help="add a p_value column to each line (dist --format edges, search): "
                            "the one-sided p-value of 'nothing shared' (hll: P(N(0,1) >= "
                            "I / sigma); mle: of the likelihood ratio), as mash dist prints it "
                            "(default: no such column)")


def p_value_lines(registers: np.ndarray, params: HllParams, estimator: str, row: int,
                  columns) -> list[str]:
    """"\t<p>" for each pair (row, columns[t]): the p-value of SPEC 3 "Detection" by the
    estimator (--pvalue)."""
    columns = np.asarray(columns, np.int64)
    if columns.size == 0:
        return []
    rows = np.full(columns.size, row, dtype=np.int64)
    if estimator == "mle":
        p = mle_pairs(registers, params, rows, columns).p_values()
    else:
        from scipy.special import erfc
        from .similarity import cardinalities, union_rows
        registers = np.ascontiguousarray(registers, dtype=np.uint8)
        cards = cardinalities(registers, params)
        unions = union_rows(registers, params, [row], columns, cards=cards)[0]
        sigma = HLL_RELATIVE_ERROR / math.sqrt(params.m) * unions
        with np.errstate(divide="ignore", invalid="ignore"):
            p = 0.5 * erfc((cards[row] + cards[columns] - unions) / sigma / math.sqrt(2.0))
        p = np.where(unions > 0, p, 1.0)
    return [f"\t{value:.3g}" for value in p.tolist()]


def detection_floor(args, params: HllParams) -> float:
    """The "hll" estimator's floor on I / |X u Y| for these options."""
    return hll_floor(params, args.detection)


def floor_jaccard_tiles(edge_tiles, row_tiles, floor: float, threshold: float | None):
    """Apply the "hll" detection floor to tiles of Jaccard values from the native pair loop
    (J < floor -> 0; the diagonal stays 1); edges keep only values >= ``threshold`` after it."""
    def rows(tiles):
        for tile, block in tiles:
            block = np.where(block >= floor, block, 0.0)
            block[np.arange(len(tile)), np.asarray(tile)] = 1.0
            yield tile, block

    def edges(tiles):
        for tile in tiles:
            out = []
            for i, js, values in tile:
                values = np.where(values >= floor, values, 0.0)
                if threshold is not None:
                    keep = values >= threshold
                    js, values = js[keep], values[keep]
                out.append((i, js, values))
            yield out

    return (None if edge_tiles is None else edges(edge_tiles),
            None if row_tiles is None else rows(row_tiles))


def mle_dist_tiles(registers: np.ndarray, params: HllParams, metric: str, k: int,
                   threshold: float | None, top: int | None, z: float):
    """(edge tiles, row tiles) of dist with the "mle" estimator, as host.cli's
    _software_tiles gives them: edges of J >= threshold, the ``top`` best by the metric, or
    full rows of the base similarity (J, or C for containment)."""
    from .metrics import base_similarity, express
    from .neighbours import top_of_rows
    base = base_similarity(metric)
    matrix = mle_matrix(registers, params, base, z)
    n = matrix.shape[0]
    if threshold is not None:
        return [[(i, np.flatnonzero((np.arange(n) > i) & (matrix[i] >= threshold)),
                  matrix[i][(np.arange(n) > i) & (matrix[i] >= threshold)])
                 for i in range(n)]], None
    if top is not None:
        values = express(metric, matrix, k)
        best = top_of_rows(values, top, metric, exclude=list(range(n)))
        return [[(i, partners, row) for i, (partners, row) in enumerate(best)]], None
    return None, [(range(n), matrix)]
