"""Estimators selected by name and the detection rule of SPEC 3, for the pairs of dist and search.

``hll`` is the specified estimator (the three cardinality estimates of host.similarity, the
kernels' too); ``mle`` is Ertl's joint maximum-likelihood estimator of |X only|, |Y only| and
|X n Y| from the two sketches' register pairs (host.hll_joint computes it; here it is applied to
the pairs of a matrix or a search, in batches). This module also holds ``--estimator``,
``--detection`` and ``--pvalue`` of dist and search.

Detection: a pair is "below detection" when its shared k-mers are not significantly above
zero (z standard deviations, default 3); such a pair is reported as nothing shared (J = C = 0,
so Mash distance 1 and ANI 0), as Mash reports unrelated genomes at distance 1.
"""

import math

import numpy as np

from kmerspec.golden.hll import HllParams
from kmerspec.golden.hll_joint import DEFAULT_DETECTION, HLL_RELATIVE_ERROR

from .hll_joint import JointEstimates, PairStatistics, joint_mle, pair_statistics

__all__ = ["ESTIMATORS", "DEFAULT_DETECTION", "hll_floor", "hll_detected", "mle_pairs",
           "mle_matrix", "mle_query_values", "add_estimator_options", "detection_floor",
           "floor_jaccard_tiles", "mle_dist_tiles", "KERNEL_NOTE", "p_value_lines"]

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
                            "every backend and with --scheduler/--workers, which then sketch "
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
