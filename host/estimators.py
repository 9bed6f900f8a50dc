"""Estimators selected by name and the detection rule of SPEC 3, for the pairs of dist and search.

``mle`` (the default of dist and search) is Ertl's joint maximum-likelihood estimator of
|X only|, |Y only| and |X n Y| from the two sketches' register pairs; ``hll`` is the
specified estimator (the three cardinality estimates of host.similarity, which the similarity
kernel's union features give too). Both run in the native pair loops of host.similarity
(host/fast/_allpairs.c, host/fast/_mle.c), on every thread, selected by name there; this module
applies them to the blocks of a search or a matrix and holds ``--estimator``, ``--detection``
and ``--pvalue`` of dist and search.

Detection: a pair is "below detection" when its shared k-mers are not significantly above
zero (z standard deviations, default 3); such a pair is reported as nothing shared (J = C = 0,
so Mash distance 1 and ANI 0), as Mash reports unrelated genomes at distance 1.
"""

import numpy as np

from kmerspec.golden.hll import HllParams
from kmerspec.golden.hll_joint import DEFAULT_DETECTION, ESTIMATORS, hll_floor

from .detection import HllDetection, detection_cardinalities, relative_errors

# host.similarity (native code, threads) is imported where it is used: the command line parser
# takes the options below on every command's start-up

__all__ = ["ESTIMATORS", "DEFAULT_ESTIMATOR", "DEFAULT_DETECTION", "hll_floor", "hll_detected",
           "HllDetection", "detection_cardinalities", "relative_errors",
           "mle_pairs", "mle_matrix", "mle_query_values", "block_values", "block_containment_ani",
           "detection_floor", "floor_jaccard_tiles", "KERNEL_NOTE", "p_value_lines"]

#: the estimator of dist and search unless --estimator says otherwise (SPEC 3)
DEFAULT_ESTIMATOR = ESTIMATORS[0]


def hll_detected(card_rows, card_columns, unions, params: HllParams,
                 z: float = DEFAULT_DETECTION) -> np.ndarray:
    """The "hll" detection rule of SPEC 3 (broadcast): :class:`HllDetection`."""
    return HllDetection(params, z).detected(card_rows, card_columns, unions)


# -- the "mle" estimator on pairs, blocks and matrices -------------------------------------------

def _as_packed(registers, params: HllParams):
    from .similarity import PackedSketches
    if isinstance(registers, PackedSketches):
        return registers
    return PackedSketches(np.ascontiguousarray(registers, dtype=np.uint8), params)


def mle_pairs(registers, params: HllParams, left, right, threads: int | None = None):
    """The joint MLE of the pairs (registers[left[t]], registers[right[t]]), in that order
    (computed grouped by left, each group's partners against it): a
    host.similarity.JointEstimates."""
    packed = _as_packed(registers, params)
    left, right = np.asarray(left, np.int64), np.asarray(right, np.int64)
    by_left = np.argsort(left, kind="stable")
    rows, starts = np.unique(left[by_left], return_index=True)
    stops = np.append(starts[1:], left.size)
    found = packed.joint_estimates(rows, starts, stops, right[by_left], threads)
    back = np.empty_like(by_left)
    back[by_left] = np.arange(by_left.size)
    return found.take(back)


def block_values(packed, params: HllParams, rows, columns, kind: str,
                 estimator: str, detection: float | None,
                 threads: int | None = None) -> np.ndarray:
    """(rows x columns) J or C (row in column) by the estimator, 0 for a pair below detection
    at Z = ``detection`` (None: every raw estimate), of the host.similarity.PackedSketches
    ``packed``; every pair of the block is computed."""
    from .metrics import pair_similarity
    from .similarity import union_rows
    rows, columns = np.asarray(rows, np.int64), np.asarray(columns, np.int64)
    if estimator == "mle":
        found = packed.joint_estimates(rows, np.zeros(rows.size), np.full(rows.size, columns.size),
                                       columns, threads)
        return found.values(kind, detection).reshape(rows.size, columns.size)
    unions = union_rows(packed, params, rows, columns, threads=threads)
    rule = None if detection is None else HllDetection(params, detection)
    return pair_similarity(kind, packed.cards[rows, None], packed.cards[None, columns], unions,
                           rule)


def block_containment_ani(packed, params: HllParams, rows, columns, k: int, estimator: str,
                          detection: float | None, threads: int | None = None
                          ) -> tuple[np.ndarray, np.ndarray]:
    """(rows x columns) (containment ANI, aligned fraction) by the estimator (SPEC 3 "Other
    metrics"): C = |X n Y| / min(|X|, |Y|), the smaller genome in the larger, then 100 C^(1/k);
    0 for a pair below detection at Z = ``detection`` (None: every estimate). The
    cardinalities are the estimator's own (the joint MLE's |X only| + |X n Y| for "mle")."""
    from .metrics import aligned_fraction, containment_ani
    from .similarity import union_rows
    rows, columns = np.asarray(rows, np.int64), np.asarray(columns, np.int64)
    shape = (rows.size, columns.size)
    if estimator == "mle":
        found = packed.joint_estimates(rows, np.zeros(rows.size),
                                       np.full(rows.size, columns.size), columns, threads)
        shared = found.shared.reshape(shape)
        card_x = (found.x_only + found.shared).reshape(shape)
        card_y = (found.y_only + found.shared).reshape(shape)
        detected = (shared > 0) if detection is None else found.detected(detection).reshape(shape)
    else:
        unions = union_rows(packed, params, rows, columns, threads=threads)
        card_x, card_y = np.broadcast_arrays(packed.cards[rows, None], packed.cards[None, columns])
        shared = card_x + card_y - unions
        detected = shared > 0
        if detection is not None:
            detected &= HllDetection(params, detection).detected(card_x, card_y, unions)
    smaller = np.minimum(card_x, card_y)
    with np.errstate(divide="ignore", invalid="ignore"):
        containment = np.where(detected & (smaller > 0), shared / smaller, 0.0)
    return containment_ani(containment, k), aligned_fraction(card_x, card_y)


def mle_matrix(registers, params: HllParams, kind: str, z: float = DEFAULT_DETECTION,
               threads: int | None = None) -> np.ndarray:
    """The full matrix of J or C (row in column) by the "mle" estimator, pairs below
    detection 0, the diagonal 1 (SPEC 3). Each pair is estimated once."""
    from .similarity import similarity_row_tiles
    packed = _as_packed(registers, params)
    whole = range(packed.n)
    (_, matrix), = similarity_row_tiles(packed, params, [whole], threads=threads,
                                        estimator="mle", kind=kind, detection=z)
    return np.array(matrix)


def mle_query_values(references: np.ndarray, queries: np.ndarray, params: HllParams, kind: str,
                     z: float = DEFAULT_DETECTION, threads: int | None = None) -> np.ndarray:
    """(queries x references) J or C (query in reference) by the "mle" estimator, pairs below
    detection 0."""
    packed = _as_packed(np.concatenate([references, queries]), params)
    n_ref = len(references)
    return block_values(packed, params, np.arange(len(queries)) + n_ref, np.arange(n_ref),
                        kind, "mle", z, threads)


KERNEL_NOTE = ("note: --estimator mle: the pairs are estimated on the host from the sketches; "
               "the similarity kernel returns union features (Z, nz) only, not the register "
               "pairs the joint MLE needs")


def p_value_lines(registers, params: HllParams, estimator: str, row: int, columns,
                  threads: int | None = None) -> list[str]:
    """"\t<p>" for each pair (row, columns[t]): the p-value of SPEC 3 "Detection" by the
    estimator (--pvalue). ``registers`` may be a PackedSketches of them."""
    columns = np.asarray(columns, np.int64)
    if columns.size == 0:
        return []
    packed = _as_packed(registers, params)
    if estimator == "mle":
        p = packed.joint_estimates([row], [0], [columns.size], columns, threads).p_values()
    else:
        from .similarity import union_rows
        cards = packed.cards
        unions = union_rows(packed, params, [row], columns, threads=threads)[0]
        p = HllDetection(params).p_values(cards[row], cards[columns], unions)
    return [f"\t{value:.3g}" for value in p.tolist()]


def detection_floor(args, params: HllParams, cards: np.ndarray | None = None) -> HllDetection:
    """The "hll" estimator's detection rule for these options (``cards``: the genomes'
    estimates, for tiles of Jaccard values)."""
    return HllDetection(params, args.detection, cards)


def floor_jaccard_tiles(edge_tiles, row_tiles, rule: HllDetection, threshold: float | None):
    """Apply the "hll" detection rule (with the genomes' cardinalities) to tiles of Jaccard
    values from the native pair loop (a pair below detection -> 0; the diagonal stays 1);
    edges keep only values >= ``threshold`` after it."""
    def rows(tiles):
        for tile, block in tiles:
            tile_rows = np.asarray(tile)
            block = np.where(rule.of_jaccard_at(block, tile_rows[:, None],
                                                np.arange(block.shape[1])[None, :]),
                             block, 0.0)
            block[np.arange(len(tile)), tile_rows] = 1.0
            yield tile, block

    def edges(tiles):
        for tile in tiles:
            out = []
            for i, js, values in tile:
                values = np.where(rule.of_jaccard_at(values, i, js), values, 0.0)
                if threshold is not None:
                    keep = values >= threshold
                    js, values = js[keep], values[keep]
                out.append((i, js, values))
            yield out

    return (None if edge_tiles is None else edges(edge_tiles),
            None if row_tiles is None else rows(row_tiles))
