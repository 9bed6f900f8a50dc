"""All-pairs HyperLogLog Jaccard on the host (SPEC section 3), vectorised.

Cardinalities and union features are exact integers where they fit in int64 (w <= 5, which
covers the defaults) and exact Python integers otherwise; estimates then follow the same
float64 formula as kmerspec.golden.hll.
"""

from collections.abc import Iterator

import numpy as np

from kmerspec.golden.hll import HllParams, estimate_from_features

__all__ = ["union_features", "estimates", "jaccard_row", "all_pairs"]

_ROW_BLOCK_REGISTERS = 1 << 24  # registers per vectorised block of unions (16 MiB of uint8)


def union_features(x: np.ndarray, ys: np.ndarray, params: HllParams) -> tuple[list[int], np.ndarray]:
    """(Z, nz) of the unions of sketch ``x`` with each row of ``ys``; Z as exact ints.

    With ``x`` None the rows of ``ys`` are taken as unions already (the kernel model's use).
    """
    unions = np.maximum(x[None, :], ys) if x is not None else ys
    return _features_of_rows(unions, params)


def _features_of_rows(rows: np.ndarray, params: HllParams) -> tuple[list[int], np.ndarray]:
    top = params.max_rank
    nz = (rows == 0).sum(axis=1)
    if top + params.p < 62:
        powers = np.array([1 << (top - r) for r in range(top + 1)], dtype=np.int64)
        return powers[rows].sum(axis=1).tolist(), nz
    # Wide registers: Z exceeds int64; sum the histogram with Python integers.
    offsets = (np.arange(rows.shape[0]) * (top + 1))[:, None]
    histograms = np.bincount((rows + offsets).ravel(), minlength=rows.shape[0] * (top + 1))
    histograms = histograms.reshape(rows.shape[0], top + 1)
    z = [sum(int(c) << (top - r) for r, c in enumerate(h)) for h in histograms]
    return z, nz


def estimates(z: list[int], nz: np.ndarray, params: HllParams) -> np.ndarray:
    """Cardinality estimates, element for element equal to kmerspec.golden.hll.estimate_from_features."""
    return np.array([estimate_from_features(zi, int(ni), params) for zi, ni in zip(z, nz)],
                    dtype=np.float64)


def cardinalities(registers: np.ndarray, params: HllParams) -> np.ndarray:
    z, nz = _features_of_rows(registers, params)
    return estimates(z, nz, params)


def _jaccard(card_x: float, card_y: np.ndarray, card_union: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        j = (card_x + card_y - card_union) / card_union
    return np.where(card_union > 0, np.clip(j, 0.0, 1.0), 0.0)


def jaccard_row(registers: np.ndarray, cards: np.ndarray, i: int, js: np.ndarray,
                params: HllParams) -> np.ndarray:
    """Jaccard estimates between genome i and genomes ``js``."""
    z, nz = union_features(registers[i], registers[js], params)
    return _jaccard(cards[i], cards[js], estimates(z, nz, params))


def _check_threshold(threshold: float | None) -> None:
    if threshold is not None and not 0 < threshold <= 1:
        raise ValueError(f"threshold must be in (0, 1], not {threshold!r}")


def pair_order(cards: np.ndarray, threshold: float | None) -> np.ndarray:
    """The order genomes are visited in: input order, or ascending cardinality when pruning."""
    _check_threshold(threshold)
    if threshold is None:
        return np.arange(cards.size)
    return np.argsort(cards, kind="stable")


def all_pairs(registers: np.ndarray, params: HllParams, threshold: float | None = None, *,
              cards: np.ndarray | None = None,
              ranks: range | None = None) -> Iterator[tuple[int, np.ndarray, np.ndarray]]:
    """For each genome i, yield (i, js, J) over the genomes j > i it must be compared with.

    Without a threshold every j > i is compared. With threshold h (0 < h <= 1), genomes are
    taken in ascending cardinality and genome i is compared only with the j whose cardinality
    is at most |X_i| / h (SPEC 3 pruning); pairs left out cannot reach J >= h, and only pairs
    with J >= h are yielded. Indices refer to the rows of ``registers``. ``ranks`` restricts
    the walk to those positions of the visiting order (one tile of a distributed run), and
    ``cards`` passes precomputed cardinalities.
    """
    n = registers.shape[0]
    if cards is None:
        cards = cardinalities(registers, params)
    order = pair_order(cards, threshold)
    sorted_cards = cards[order]
    block = max(1, _ROW_BLOCK_REGISTERS // max(1, registers.shape[1]))
    for rank in ranks if ranks is not None else range(n):
        i = order[rank]
        stop = n
        if threshold is not None:
            # |Y| <= |X| / h, with a relative margin so float rounding never prunes a pair
            # that the unpruned computation would keep.
            limit = sorted_cards[rank] / threshold * (1 + 1e-12) if sorted_cards[rank] > 0 else 0.0
            stop = int(np.searchsorted(sorted_cards, limit, side="right"))
        partners = order[rank + 1:stop]
        values = np.concatenate([
            jaccard_row(registers, cards, i, partners[start:start + block], params)
            for start in range(0, partners.size, block)]) if partners.size else np.empty(0)
        if threshold is not None:
            keep = values >= threshold
            partners, values = partners[keep], values[keep]
        yield int(i), partners, values


def similarity_rows(registers: np.ndarray, params: HllParams, rows: range,
                    cards: np.ndarray | None = None) -> np.ndarray:
    """Full rows of the Jaccard matrix (diagonal 1), for streaming a matrix row block by block.

    Equal, value for value, to the pairs of all_pairs: the union and the sum |X| + |Y| are
    symmetric in floating point.
    """
    if cards is None:
        cards = cardinalities(registers, params)
    n = registers.shape[0]
    block = max(1, _ROW_BLOCK_REGISTERS // max(1, registers.shape[1]))
    out = np.empty((len(rows), n))
    everyone = np.arange(n)
    for row, i in enumerate(rows):
        out[row] = np.concatenate([jaccard_row(registers, cards, i, everyone[s:s + block], params)
                                   for s in range(0, n, block)]) if n else np.empty(0)
        out[row, i] = 1.0
    return out


def mash_distance(j: np.ndarray | float, k: int) -> np.ndarray:
    """Mash distance -1/k ln(2J/(1+J)); 1 where J = 0."""
    j = np.asarray(j, dtype=np.float64)
    with np.errstate(divide="ignore"):
        d = -np.log(2 * j / (1 + j)) / k
    return np.where(j > 0, np.minimum(d, 1.0), 1.0)




def row_tile(rows: range, registers: np.ndarray, cards: np.ndarray, p: int, w: int) -> np.ndarray:
    """One block of full matrix rows: a task of a (possibly distributed) dist run."""
    return similarity_rows(registers, HllParams(p, w), rows, cards)


def edge_tile(ranks: range, registers: np.ndarray, cards: np.ndarray, p: int, w: int,
              threshold: float) -> list[tuple[int, np.ndarray, np.ndarray]]:
    """The kept pairs of a block of positions of the pruned walk: a task of a dist run."""
    return list(all_pairs(registers, HllParams(p, w), threshold, cards=cards, ranks=ranks))
