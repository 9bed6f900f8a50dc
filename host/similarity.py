"""All-pairs estimates of HyperLogLog sketches on the host (SPEC section 3), in native code, by
either estimator of SPEC 3 ("Estimators"), selected by name:

* ``hll``: the pair loop host/fast/_allpairs.c: sketches packed (two 4-bit registers a byte), the
  union and its exact features (Z, nz, and its saturated registers) in SIMD, then the "hll"
  estimator and J with no Python per pair, value for value equal to
  kmerspec.golden.hll.estimate_from_features and the Jaccard formula of SPEC 3;
* ``mle``: Ertl's joint maximum-likelihood estimator, host/fast/_mle.c, equal to
  kmerspec.golden.hll_joint within SPEC 3's tolerance: |X only|, |Y only|, |X n Y| and the
  likelihood ratio of "nothing shared" (:class:`JointEstimates`), from which J, the containment
  in both directions and the detection rule follow.

Each pair is computed once; rows are spread over ``threads`` threads in blocks of balanced pair
counts, and the values do not depend on the thread count. The entry points (:func:`all_pairs`,
:func:`similarity_rows`, :func:`similarity_row_tiles`, :func:`union_rows`, the tasks
:func:`row_tile` and :func:`edge_tile`) take ``estimator`` ("hll" unless given) and
``detection`` (the detection rule's Z; None: every raw estimate).

:func:`union_features` and :func:`estimates` keep the exact-integer numpy path for the kernel's
software model (host.allpairs), whose records carry Z itself.
"""

from collections.abc import Iterator, Sequence

import numpy as np

from kmerspec.golden.hll import HllParams, estimate_from_features
from kmerspec.golden.hll_joint import DEFAULT_DETECTION, ESTIMATORS, hll_floor
from kmerspec.kernels.jacc_similarity import partner_stops
from .detection import HllDetection, erfc
from .fast.native import native
from .registers import pack_registers, packed_width, saturated_counts, unpack_registers
from .fast.threads import map_in_threads, thread_count

__all__ = ["union_features", "estimates", "union_saturated", "cardinalities", "pack_registers",
           "unpack_registers", "packed_width", "saturated_counts",
           "PackedSketches", "JointEstimates", "ESTIMATORS", "all_pairs", "similarity_rows",
           "union_rows", "similarity_row_tiles", "mash_distance", "row_tile", "edge_tile",
           "hll_floor", "joint_triangle"]

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


def estimates(z: list[int], nz: np.ndarray, params: HllParams,
              saturated: np.ndarray | None = None) -> np.ndarray:
    """Cardinality estimates, element for element equal to
    kmerspec.golden.hll.estimate_from_features; ``saturated``: the registers at the top value
    of each (C_R, SPEC 3 "Saturated registers"; default none)."""
    saturated = np.zeros(len(z), np.int64) if saturated is None else saturated
    return np.array([estimate_from_features(zi, int(ni), params, int(si))
                     for zi, ni, si in zip(z, nz, saturated)], dtype=np.float64)


def union_saturated(registers: np.ndarray, params: HllParams, saturated: np.ndarray,
                    left: np.ndarray, right: np.ndarray) -> np.ndarray:
    """C_R of the unions of the pairs (left[t], right[t]): counted from the registers for the
    pairs where a sketch has saturated registers (``saturated``: each sketch's C_R), 0 for the
    others (a union is saturated only where one of its sketches is). The kernels' features
    (Z, nz) do not include it: the host adds it to their unions (SPEC 3)."""
    from kmerspec.golden.hll import top_rank
    out = np.zeros(len(left), dtype=np.int64)
    flagged = np.flatnonzero((saturated[left] > 0) | (saturated[right] > 0))
    top = top_rank(params)
    for lo in range(0, flagged.size, 1024):
        part = flagged[lo:lo + 1024]
        out[part] = (np.maximum(registers[left[part]], registers[right[part]]) == top).sum(axis=1)
    return out


def cardinalities(registers: np.ndarray, params: HllParams) -> np.ndarray:
    """The estimate of every sketch (== kmerspec.golden.hll.estimate)."""
    return PackedSketches(registers, params).cards


class PackedSketches:
    """Sketches packed for the native pair loop, with their cardinalities: pack once, then
    share (it pickles) with every tile of a run. With ``packed``, ``registers`` is in
    :func:`pack_registers`' layout already (a sketch file's, host.sketchfile) and is used as it
    is, not copied."""

    def __init__(self, registers: np.ndarray, params: HllParams, cards: np.ndarray | None = None,
                 packed: bool = False):
        self.params = params
        if packed:
            registers = np.asarray(registers)
            if registers.dtype != np.uint8 or registers.ndim != 2 or \
                    registers.shape[1] != packed_width(params):
                raise ValueError(f"packed registers must be an n x {packed_width(params)} "
                                 f"uint8 array, not {registers.dtype} {registers.shape}")
            self.packed = np.ascontiguousarray(registers)
        else:
            self.packed = pack_registers(registers, params)
        self.n = self.packed.shape[0]
        saturated = np.empty(self.n, dtype=np.uint32)
        estimated = np.empty(self.n, dtype=np.float64)
        native.cardinalities(self.packed, params.w, params.p, estimated, saturated)
        #: each sketch's registers at the top value (SPEC 3 "Saturated registers")
        self.saturated = saturated
        self.cards = np.ascontiguousarray(estimated if cards is None else cards, dtype=np.float64)

    def jaccard(self, rows: np.ndarray, starts: np.ndarray, stops: np.ndarray,
                order: np.ndarray, threads: int | None = None) -> np.ndarray:
        """J(rows[t], order[u]) for u in [starts[t], stops[t]), row after row, in one array."""
        return self._pair_values(native.jaccard_rows, rows, starts, stops, order, threads)

    def unions(self, rows: np.ndarray, starts: np.ndarray, stops: np.ndarray,
               order: np.ndarray, threads: int | None = None) -> np.ndarray:
        """|X u Y| estimates of the same pairs as :meth:`jaccard` (host.metrics derives every
        metric from them)."""
        return self._pair_values(native.union_rows, rows, starts, stops, order, threads)

    def joint_estimates(self, rows: np.ndarray, starts: np.ndarray, stops: np.ndarray,
                        order: np.ndarray, threads: int | None = None) -> "JointEstimates":
        """The "mle" estimator of the same pairs as :meth:`jaccard` (host/fast/_mle.c)."""
        prepared = self._joint_prepared()
        return JointEstimates.from_values(self._pair_values(
            native.mle_rows, rows, starts, stops, order, threads, per_pair=4, extra=prepared))

    def __getstate__(self) -> dict:
        # what the joint MLE prepares is remade where it is needed, not shipped to workers
        return {key: value for key, value in self.__dict__.items() if key != "_prepared"}

    def _joint_prepared(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Each sketch's bit planes, register histogram and one-sketch likelihood maximum
        (the null fit of the likelihood ratio), made once: as many bytes as the packed
        sketches (w = 4), again."""
        if getattr(self, "_prepared", None) is None:
            p, w = self.params.p, self.params.w
            planes = np.empty(self.n * w * (self.params.m // 64), dtype=np.uint64)
            hist = np.empty(self.n * 64, dtype=np.uint32)
            null = np.empty(self.n, dtype=np.float64)
            native.mle_prepare(self.packed, w, p, self.cards, planes, hist, null)
            self._prepared = (planes, hist, null)
        return self._prepared

    def _pair_values(self, function, rows, starts, stops, order, threads, per_pair: int = 1,
                     extra: tuple = ()) -> np.ndarray:
        rows, starts, stops = (np.ascontiguousarray(a, dtype=np.int64) for a in (rows, starts, stops))
        order = np.ascontiguousarray(order, dtype=np.int64)
        counts = stops - starts
        ends = np.cumsum(counts)
        pairs = int(ends[-1]) if ends.size else 0
        values = np.empty(pairs * per_pair, dtype=np.float64)
        # Cut the rows where the running pair count crosses a multiple of the block size: at
        # least four blocks per thread when there are enough pairs.
        block = max(_MIN_BLOCK_PAIRS, min(_BLOCK_PAIRS, pairs // (4 * thread_count(threads))))
        cuts = np.unique(np.searchsorted(ends, np.arange(block, pairs, block), side="right"))
        bounds = [0, *cuts.tolist(), rows.size]

        def run(block: tuple[int, int]) -> None:
            lo, hi = block
            if lo < hi:
                first = int(ends[lo - 1]) if lo else 0
                function(self.packed, self.params.w, self.params.p, self.cards, rows[lo:hi],
                         starts[lo:hi], stops[lo:hi], order,
                         values[first * per_pair:int(ends[hi - 1]) * per_pair], *extra)
        for _ in map_in_threads(run, zip(bounds[:-1], bounds[1:]), threads):
            pass
        return values


class JointEstimates:
    """The "mle" estimator of many pairs (X, Y): |X only|, |Y only|, |X n Y| and the
    likelihood-ratio statistic of 'shared = 0' (SPEC 3), one array each."""

    def __init__(self, x_only, y_only, shared, likelihood_ratio):
        self.x_only, self.y_only, self.shared = x_only, y_only, shared
        self.likelihood_ratio = likelihood_ratio

    @classmethod
    def from_values(cls, values: np.ndarray) -> "JointEstimates":
        """From PackedSketches.joint_estimates' rows of four."""
        values = np.asarray(values, np.float64).reshape(-1, 4)
        return cls(*(values[:, c] for c in range(4)))

    def __len__(self) -> int:
        return len(self.shared)

    def take(self, index) -> "JointEstimates":
        return JointEstimates(self.x_only[index], self.y_only[index], self.shared[index],
                              self.likelihood_ratio[index])

    def swapped(self) -> "JointEstimates":
        """The same pairs seen from Y: (Y, X)."""
        return JointEstimates(self.y_only, self.x_only, self.shared, self.likelihood_ratio)

    def similarity(self, kind: str) -> np.ndarray:
        """J (kind "jaccard") or C of X in Y ("containment"); 0 for an empty denominator."""
        denominator = self.x_only + self.shared
        if kind == "jaccard":
            denominator = denominator + self.y_only
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(denominator > 0, self.shared / denominator, 0.0)

    def detected(self, z: float = DEFAULT_DETECTION) -> np.ndarray:
        """shared > 0 and LR >= z^2 (SPEC 3 "Detection")."""
        return (self.shared > 0) & (self.likelihood_ratio >= z * z)

    def values(self, kind: str, detection: float | None) -> np.ndarray:
        """J or C, 0 for a pair below detection at Z = ``detection`` (None: every estimate)."""
        value = self.similarity(kind)
        return value if detection is None else np.where(self.detected(detection), value, 0.0)

    def p_values(self) -> np.ndarray:
        """P(T >= LR), T ~ (chi^2_0 + chi^2_1) / 2; 1 for LR = 0."""
        ratio = self.likelihood_ratio
        return np.where(ratio > 0, 0.5 * erfc(np.sqrt(np.maximum(ratio, 0) / 2.0)), 1.0)



def _check_estimator(estimator: str) -> None:
    if estimator not in ESTIMATORS:
        raise ValueError(f"estimator must be one of {', '.join(ESTIMATORS)}, not {estimator!r}")


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


def _row_batches(counts: np.ndarray, per_pair: int = 1) -> Iterator[slice]:
    """Consecutive rows holding about _BATCH_PAIRS values each (``per_pair`` a pair; at least
    one row)."""
    position = 0
    while position < counts.size:
        end = int(np.searchsorted(np.cumsum(counts[position:]), _BATCH_PAIRS // per_pair,
                                  side="right"))
        end = position + max(1, end)
        yield slice(position, end)
        position = end


def joint_triangle(registers, params: HllParams, *, cards: np.ndarray | None = None,
                   ranks: range | None = None, threads: int | None = None
                   ) -> Iterator[tuple[int, np.ndarray, JointEstimates]]:
    """For each genome i (of ``ranks``, default all), (i, js, estimates): the "mle" estimator
    of the pairs (i, j) for every j > i, each pair once."""
    pairs = _packed(registers, params, cards)
    ranks = np.asarray(ranks if ranks is not None else range(pairs.n), dtype=np.int64)
    order = np.arange(pairs.n)
    starts, stops = ranks + 1, np.full(ranks.size, pairs.n)
    for batch in _row_batches(stops - starts, per_pair=4):
        found = pairs.joint_estimates(ranks[batch], starts[batch], stops[batch], order, threads)
        offset = 0
        for i, start in zip(ranks[batch].tolist(), starts[batch].tolist()):
            partners = order[start:]
            yield i, partners, found.take(slice(offset, offset + partners.size))
            offset += partners.size


def all_pairs(registers: np.ndarray, params: HllParams, threshold: float | None = None, *,
              cards: np.ndarray | None = None, ranks: range | None = None,
              threads: int | None = None, estimator: str = "hll",
              detection: float | None = None) -> Iterator[tuple[int, np.ndarray, np.ndarray]]:
    """For each genome i, yield (i, js, J) over the genomes j > i it must be compared with.

    Without a threshold every j > i is compared. With threshold h (0 < h <= 1), only pairs
    with J >= h are yielded. For ``estimator`` "hll", genomes are taken in ascending
    cardinality and genome i is compared only with the j whose cardinality is at most
    |X_i| / h (SPEC 3 pruning); pairs left out cannot reach J >= h. The "mle" estimator's J is
    not bounded by the "hll" cardinalities, so it compares every pair, in input order. J is
    0 for a pair below detection at Z = ``detection`` (None: the raw estimate), before the
    threshold. Indices refer to the rows of ``registers``. ``ranks`` restricts the walk to
    those positions of the visiting order (one tile of a distributed run), and ``cards``
    passes precomputed cardinalities. ``threads`` (default all cores) share the pairs; the
    result does not depend on it.
    """
    _check_estimator(estimator)
    if estimator == "mle":
        if threshold is not None and not 0 < threshold <= 1:
            raise ValueError(f"threshold must be in (0, 1], not {threshold!r}")
        for i, partners, found in joint_triangle(registers, params, cards=cards, ranks=ranks,
                                                 threads=threads):
            row = found.values("jaccard", detection)
            if threshold is not None:
                keep = row >= threshold
                partners, row = partners[keep], row[keep]
            yield i, partners, row
        return
    pairs = _packed(registers, params, cards)
    order = pair_order(pairs.cards, threshold)
    # |Y| <= |X| / h, with a relative margin so float rounding never prunes a pair that the
    # unpruned computation would keep.
    stops = partner_stops(pairs.cards[order], threshold)
    ranks = np.asarray(ranks if ranks is not None else range(pairs.n), dtype=np.int64)
    starts = ranks + 1
    stops = np.maximum(stops[ranks], starts) if ranks.size else ranks
    rule = None if detection is None else HllDetection(params, detection, pairs.cards)
    for batch in _row_batches(stops - starts):
        values = pairs.jaccard(order[ranks[batch]], starts[batch], stops[batch], order, threads)
        offset = 0
        for rank, start, stop in zip(ranks[batch].tolist(), starts[batch].tolist(),
                                     stops[batch].tolist()):
            partners, row = order[start:stop], values[offset:offset + stop - start]
            offset += stop - start
            if rule is not None:
                row = np.where(rule.of_jaccard_at(row, order[rank], partners), row, 0.0)
            if threshold is not None:
                keep = row >= threshold
                partners, row = partners[keep], row[keep]
            yield int(order[rank]), partners, row


def similarity_rows(registers: np.ndarray, params: HllParams, rows: Sequence[int],
                    cards: np.ndarray | None = None, threads: int | None = None, *,
                    estimator: str = "hll", kind: str = "jaccard",
                    detection: float | None = None) -> np.ndarray:
    """Full rows of the matrix of J (``kind`` "jaccard") or C (row in column, "containment";
    "mle" only: the "hll" containment comes from :func:`union_rows`), diagonal 1, for streaming
    a matrix row block by block; pairs below detection 0 as in :func:`all_pairs`.

    Equal, value for value, to the pairs of all_pairs: the union and the sum |X| + |Y| are
    symmetric in floating point, and a joint estimate of (Y, X) is that of (X, Y) swapped. Pairs
    of two rows of the block are computed once.
    """
    _check_estimator(estimator)
    if estimator == "hll" and kind != "jaccard":
        raise ValueError("similarity_rows: the hll estimator's rows are of Jaccard")
    pairs = _packed(registers, params, cards)
    rows = np.asarray(rows, dtype=np.int64)
    members = np.zeros(pairs.n, dtype=bool)
    members[rows] = True
    # The block's rows first: row q meets rows q+1.. of the block and every other genome.
    order = np.concatenate([rows, np.flatnonzero(~members)])
    starts = np.arange(1, rows.size + 1)
    stops = np.full(rows.size, pairs.n)
    if estimator == "mle":
        found = pairs.joint_estimates(rows, starts, stops, order, threads)
        values, mirrored = found.values(kind, detection), found.swapped().values(kind, detection)
    else:
        values = pairs.jaccard(rows, starts, stops, order, threads)
        if detection is not None:
            rule = HllDetection(params, detection, pairs.cards)
            value_rows = np.repeat(rows, stops - starts)
            value_columns = np.concatenate([order[start:stop] for start, stop in
                                            zip(starts.tolist(), stops.tolist())])
            values = np.where(rule.of_jaccard_at(values, value_rows, value_columns), values, 0.0)
        mirrored = values
    out = np.empty((rows.size, pairs.n))
    offset = 0
    for q in range(rows.size):
        partners = order[q + 1:]
        out[q, partners] = values[offset:offset + partners.size]
        out[q + 1:, rows[q]] = mirrored[offset:offset + rows.size - q - 1]
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
                         cards: np.ndarray | None = None, threads: int | None = None, *,
                         estimator: str = "hll", kind: str = "jaccard",
                         detection: float | None = None
                         ) -> Iterator[tuple[range, np.ndarray]]:
    """(tile, full rows) for each tile of rows, in order (the rows of :func:`similarity_rows`).

    Up to _MATRIX_BYTES of matrix, every pair is computed once (the upper triangle, mirrored);
    past it, tile by tile with :func:`similarity_rows` so that memory stays one tile of rows.
    """
    _check_estimator(estimator)
    pairs = _packed(registers, params, cards)
    n = pairs.n
    if n * n * 8 > _MATRIX_BYTES:
        for tile in tiles:
            yield tile, similarity_rows(pairs, params, tile, threads=threads,
                                        estimator=estimator, kind=kind, detection=detection)
        return
    matrix = np.eye(n)
    if estimator == "mle":
        for i, js, found in joint_triangle(pairs, params, threads=threads):
            matrix[i, js] = found.values(kind, detection)
            matrix[js, i] = found.swapped().values(kind, detection)
    else:
        if kind != "jaccard":
            raise ValueError("similarity_row_tiles: the hll estimator's rows are of Jaccard")
        for i, js, values in all_pairs(pairs, params, threads=threads, detection=detection):
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
             threads: int | None = None, estimator: str = "hll", kind: str = "jaccard",
             detection: float | None = None) -> np.ndarray:
    """One block of full matrix rows: a task of a (possibly distributed) dist run."""
    return similarity_rows(registers, HllParams(p, w), rows, cards, threads, estimator=estimator,
                           kind=kind, detection=detection)


def edge_tile(ranks: range, registers: np.ndarray, cards: np.ndarray, p: int, w: int,
              threshold: float, threads: int | None = None, estimator: str = "hll",
              detection: float | None = None) -> list[tuple[int, np.ndarray, np.ndarray]]:
    """The kept pairs of a block of positions of the (pruned, for hll) walk: a task of a dist
    run."""
    return list(all_pairs(registers, HllParams(p, w), threshold, cards=cards, ranks=ranks,
                          threads=threads, estimator=estimator, detection=detection))
