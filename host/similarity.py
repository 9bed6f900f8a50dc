"""All-pairs HyperLogLog Jaccard on the host (SPEC section 3), in native code.

The pair loop is host/fast/_allpairs.c: sketches packed (two 4-bit registers a byte), the union
and its exact features (Z, nz) in SIMD, then the "hll" estimator and J with no Python per pair,
value for value equal to kmerspec.golden.hll.estimate_from_features and the Jaccard formula of
SPEC 3. Each pair is computed once; rows are spread over ``threads`` threads in blocks of
balanced pair counts, and the values do not depend on the thread count.

:func:`union_features` and :func:`estimates` keep the exact-integer numpy path for the kernel's
software model (host.allpairs), whose records carry Z itself.
"""

from collections.abc import Iterator, Sequence

import numpy as np

from kmerspec.golden.hll import HllParams, estimate_from_features
from kmerspec.kernels.jacc_similarity import partner_stops
from .fast.native import native
from .fast.threads import map_in_threads, thread_count

__all__ = ["union_features", "estimates", "cardinalities", "pack_registers", "PackedSketches",
           "all_pairs", "similarity_rows", "union_rows", "similarity_row_tiles", "mash_distance",
           "row_tile", "edge_tile"]

# Pairs per native call: large enough that the call overhead vanishes, small enough that a few
# blocks per thread balance the load and the values of one batch of rows stay small.
_BLOCK_PAIRS = 1 << 16
_MIN_BLOCK_PAIRS = 1 << 10
_BATCH_PAIRS = 1 << 22
# The full matrix is assembled once (each pair computed once) up to this size; beyond it, each
# row tile is computed on its own (the pairs across tiles twice) so memory stays bounded.
_MATRIX_BYTES = 1 << 30


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


def pack_registers(registers: np.ndarray, params: HllParams) -> np.ndarray:
    """The layout of the native pair loop: w = 4 registers two to a byte (register 2i in the
    low nibble of byte i), wider ones a byte each; one C-contiguous row per sketch."""
    registers = np.asarray(registers, dtype=np.uint8)
    if registers.ndim != 2 or registers.shape[1] != params.m:
        raise ValueError(f"registers must be an n x {params.m} array, not shape "
                         f"{registers.shape}")
    if params.w != 4:
        return np.ascontiguousarray(registers)
    return np.ascontiguousarray(registers[:, 0::2] | (registers[:, 1::2] << 4))


def cardinalities(registers: np.ndarray, params: HllParams) -> np.ndarray:
    """The estimate of every sketch (== kmerspec.golden.hll.estimate)."""
    return PackedSketches(registers, params).cards


class PackedSketches:
    """Sketches packed for the native pair loop, with their cardinalities: pack once, then
    share (it pickles) with every tile of a run."""

    def __init__(self, registers: np.ndarray, params: HllParams, cards: np.ndarray | None = None):
        self.params = params
        self.packed = pack_registers(registers, params)
        self.n = self.packed.shape[0]
        if cards is None:
            cards = np.empty(self.n, dtype=np.float64)
            native.cardinalities(self.packed, params.w, params.p, cards)
        self.cards = np.ascontiguousarray(cards, dtype=np.float64)

    def jaccard(self, rows: np.ndarray, starts: np.ndarray, stops: np.ndarray,
                order: np.ndarray, threads: int | None = None) -> np.ndarray:
        """J(rows[t], order[u]) for u in [starts[t], stops[t]), row after row, in one array."""
        return self._pair_values(native.jaccard_rows, rows, starts, stops, order, threads)

    def unions(self, rows: np.ndarray, starts: np.ndarray, stops: np.ndarray,
               order: np.ndarray, threads: int | None = None) -> np.ndarray:
        """|X u Y| estimates of the same pairs as :meth:`jaccard` (host.metrics derives every
        metric from them)."""
        return self._pair_values(native.union_rows, rows, starts, stops, order, threads)

    def _pair_values(self, function, rows, starts, stops, order, threads) -> np.ndarray:
        rows, starts, stops = (np.ascontiguousarray(a, dtype=np.int64) for a in (rows, starts, stops))
        order = np.ascontiguousarray(order, dtype=np.int64)
        counts = stops - starts
        ends = np.cumsum(counts)
        out = np.empty(int(ends[-1]) if ends.size else 0, dtype=np.float64)
        # Cut the rows where the running pair count crosses a multiple of the block size: at
        # least four blocks per thread when there are enough pairs.
        block = max(_MIN_BLOCK_PAIRS, min(_BLOCK_PAIRS, out.size // (4 * thread_count(threads))))
        cuts = np.unique(np.searchsorted(ends, np.arange(block, out.size, block), side="right"))
        bounds = [0, *cuts.tolist(), rows.size]

        def run(block: tuple[int, int]) -> None:
            lo, hi = block
            if lo < hi:
                first = int(ends[lo - 1]) if lo else 0
                function(self.packed, self.params.w, self.params.p, self.cards, rows[lo:hi],
                         starts[lo:hi], stops[lo:hi], order, out[first:int(ends[hi - 1])])
        for _ in map_in_threads(run, zip(bounds[:-1], bounds[1:]), threads):
            pass
        return out


def _packed(registers, params: HllParams, cards: np.ndarray | None) -> PackedSketches:
    if isinstance(registers, PackedSketches):
        if registers.params != params:
            raise ValueError(f"the sketches were packed for {registers.params}, not {params}")
        return registers
    return PackedSketches(registers, params, cards)


def pair_order(cards: np.ndarray, threshold: float | None) -> np.ndarray:
    """The order genomes are visited in: input order, or ascending cardinality when pruning."""
    if threshold is not None and not 0 < threshold <= 1:
        raise ValueError(f"threshold must be in (0, 1], not {threshold!r}")
    if threshold is None:
        return np.arange(cards.size)
    return np.argsort(cards, kind="stable")


def all_pairs(registers: np.ndarray, params: HllParams, threshold: float | None = None, *,
              cards: np.ndarray | None = None, ranks: range | None = None,
              threads: int | None = None) -> Iterator[tuple[int, np.ndarray, np.ndarray]]:
    """For each genome i, yield (i, js, J) over the genomes j > i it must be compared with.

    Without a threshold every j > i is compared. With threshold h (0 < h <= 1), genomes are
    taken in ascending cardinality and genome i is compared only with the j whose cardinality
    is at most |X_i| / h (SPEC 3 pruning); pairs left out cannot reach J >= h, and only pairs
    with J >= h are yielded. Indices refer to the rows of ``registers``. ``ranks`` restricts
    the walk to those positions of the visiting order (one tile of a distributed run), and
    ``cards`` passes precomputed cardinalities. ``threads`` (default all cores) share the
    pairs; the result does not depend on it.
    """
    pairs = _packed(registers, params, cards)
    order = pair_order(pairs.cards, threshold)
    # |Y| <= |X| / h, with a relative margin so float rounding never prunes a pair that the
    # unpruned computation would keep.
    stops = partner_stops(pairs.cards[order], threshold)
    ranks = np.asarray(ranks if ranks is not None else range(pairs.n), dtype=np.int64)
    starts = ranks + 1
    stops = np.maximum(stops[ranks], starts) if ranks.size else ranks
    counts = stops - starts
    position = 0
    while position < ranks.size:
        # a batch of rows holding about _BATCH_PAIRS pairs (at least one row)
        end = int(np.searchsorted(np.cumsum(counts[position:]), _BATCH_PAIRS, side="right"))
        end = position + max(1, end)
        batch = slice(position, end)
        values = pairs.jaccard(order[ranks[batch]], starts[batch], stops[batch], order, threads)
        offset = 0
        for rank, start, stop in zip(ranks[batch].tolist(), starts[batch].tolist(),
                                     stops[batch].tolist()):
            partners, row = order[start:stop], values[offset:offset + stop - start]
            offset += stop - start
            if threshold is not None:
                keep = row >= threshold
                partners, row = partners[keep], row[keep]
            yield int(order[rank]), partners, row
        position = end


def similarity_rows(registers: np.ndarray, params: HllParams, rows: Sequence[int],
                    cards: np.ndarray | None = None, threads: int | None = None) -> np.ndarray:
    """Full rows of the Jaccard matrix (diagonal 1), for streaming a matrix row block by block.

    Equal, value for value, to the pairs of all_pairs: the union and the sum |X| + |Y| are
    symmetric in floating point. Pairs of two rows of the block are computed once.
    """
    pairs = _packed(registers, params, cards)
    rows = np.asarray(rows, dtype=np.int64)
    members = np.zeros(pairs.n, dtype=bool)
    members[rows] = True
    # The block's rows first: row q meets rows q+1.. of the block and every other genome.
    order = np.concatenate([rows, np.flatnonzero(~members)])
    starts = np.arange(1, rows.size + 1)
    values = pairs.jaccard(rows, starts, np.full(rows.size, pairs.n), order, threads)
    out = np.empty((rows.size, pairs.n))
    offset = 0
    for q in range(rows.size):
        partners = order[q + 1:]
        out[q, partners] = values[offset:offset + partners.size]
        out[q + 1:, rows[q]] = values[offset:offset + rows.size - q - 1]
        out[q, rows[q]] = 1.0
        offset += partners.size
    return out


def union_rows(registers, params: HllParams, rows: Sequence[int],
               columns: Sequence[int] | None = None, cards: np.ndarray | None = None,
               threads: int | None = None) -> np.ndarray:
    """The (rows x columns) block of |X u Y| estimates (columns default: every genome; a
    genome with itself gives its own estimate). Every pair of the block is computed, so a row
    block costs len(rows) x len(columns) unions whatever else was computed before."""
    pairs = _packed(registers, params, cards)
    rows = np.asarray(rows, dtype=np.int64)
    columns = np.arange(pairs.n) if columns is None else np.asarray(columns, dtype=np.int64)
    out = pairs.unions(rows, np.zeros(rows.size), np.full(rows.size, columns.size), columns,
                       threads)
    return out.reshape(rows.size, columns.size)


def similarity_row_tiles(registers: np.ndarray, params: HllParams, tiles: Sequence[range],
                         cards: np.ndarray | None = None, threads: int | None = None
                         ) -> Iterator[tuple[range, np.ndarray]]:
    """(tile, full rows) for each tile of rows, in order.

    Up to _MATRIX_BYTES of matrix, every pair is computed once (the upper triangle, mirrored);
    past it, tile by tile with :func:`similarity_rows` so that memory stays one tile of rows.
    """
    pairs = _packed(registers, params, cards)
    n = pairs.n
    if n * n * 8 > _MATRIX_BYTES:
        for tile in tiles:
            yield tile, similarity_rows(pairs, params, tile, threads=threads)
        return
    matrix = np.eye(n)
    for i, js, values in all_pairs(pairs, params, threads=threads):
        matrix[i, js] = values
        matrix[js, i] = values
    for tile in tiles:
        yield tile, matrix[tile.start:tile.stop]


def mash_distance(j: np.ndarray | float, k: int) -> np.ndarray:
    """Mash distance -1/k ln(2J/(1+J)); 1 where J = 0."""
    j = np.asarray(j, dtype=np.float64)
    with np.errstate(divide="ignore"):
        d = -np.log(2 * j / (1 + j)) / k
    return np.where(j > 0, np.minimum(d, 1.0), 1.0)


def row_tile(rows: range, registers: np.ndarray, cards: np.ndarray, p: int, w: int,
             threads: int | None = None) -> np.ndarray:
    """One block of full matrix rows: a task of a (possibly distributed) dist run."""
    return similarity_rows(registers, HllParams(p, w), rows, cards, threads)


def edge_tile(ranks: range, registers: np.ndarray, cards: np.ndarray, p: int, w: int,
              threshold: float, threads: int | None = None
              ) -> list[tuple[int, np.ndarray, np.ndarray]]:
    """The kept pairs of a block of positions of the pruned walk: a task of a dist run."""
    return list(all_pairs(registers, HllParams(p, w), threshold, cards=cards, ranks=ranks,
                          threads=threads))
