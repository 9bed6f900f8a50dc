"""Screening a read set for references (the ``screen`` command, as ``mash screen``; SPEC 3
"Screening"): for each reference R, the fraction of its k-mers present in the read set Q,
C = |R n Q| / |R|, and the identity C^(1/k), from the two HLL sketches by Ertl's joint MLE
(the native loop of host/fast/_mle.c through host.estimators.mle_pairs).

The joint MLE, not the "hll" inclusion-exclusion: a reference is usually a small set beside a
large read set (the bundled virus, ~10,000 21-mers, in ~50,000 distinct read k-mers), where
|R| + |Q| - |R u Q| carries the union's error, about 0.8 % of |Q| at p = 14, i.e. 4 % of |R|
here; docs/usage.md "Screening reads" has the figures.

Winner-take-all (``mash screen -w``): a k-mer of the read set found in several references is
credited to the best of them only (by the first pass's C, ties in collection order), so that
a reference whose k-mers are all explained by a closer one drops. For reference R and the
union U of the references ranked above it (HLL union: the register-wise maximum), what R wins,
|R n Q \\ U|, and the p-value of "nothing" come from the joint likelihood of the three
sketches R, U and max(Q, U) (host.leftover), not from R's whole overlap with the reads.
"""

import math

import numpy as np

from kmerspec.golden.hll import HllParams

from .estimators import mle_pairs
from .leftover import leftover_test

__all__ = ["ScreenResult", "screen"]

#: references whose winner-take-all pairs are estimated in one batch (three sketches each)
_BATCH = 256


class ScreenResult:
    """Per reference (collection order): C, the estimated shared and reference k-mers, the
    p-value of 'no k-mer of R in the reads', and whether R is reported (detected, and with
    winner-take-all some k-mer left to it)."""

    def __init__(self, containment, shared, kmers, p_values, reported):
        self.containment, self.shared, self.kmers = containment, shared, kmers
        self.p_values, self.reported = p_values, reported

    def identity(self, k: int) -> np.ndarray:
        """C^(1/k), mash screen's identity (0 where C = 0)."""
        return np.where(self.containment > 0, np.maximum(self.containment, 0.0) ** (1.0 / k),
                        0.0)

    def order(self) -> np.ndarray:
        """The reported references, best first (largest C; ties in collection order)."""
        reported = np.flatnonzero(self.reported)
        return reported[np.argsort(-self.containment[reported], kind="stable")]


def screen(references: np.ndarray, reads: np.ndarray, params: HllParams, z: float,
           winner_take_all: bool = False, packed: bool = False) -> ScreenResult:
    """Each reference (rows of ``references``) inside the read set (``reads``, one register
    array). Detection (SPEC 3 "Screening"): a reference is reported when its p-value (of the
    likelihood ratio, SPEC 3 "Detection") is at most P(N(0,1) >= ``z``) / n for n references,
    so that a collection of 100,000 genomes reports no more chance hits than one genome would
    at ``z``; ``z`` = 0 reports every positive estimate. With ``winner_take_all``, the
    shared k-mers, the p-value and the detection of each reference but the best are those of
    what it wins (host.leftover). With ``packed``, ``references`` are in
    host.similarity.pack_registers' layout (a sketch file's, read without unpacking them all)."""
    from .similarity import PackedSketches, pack_registers, unpack_registers
    references = np.ascontiguousarray(references, dtype=np.uint8)
    n = len(references)
    reads = np.asarray(reads, np.uint8)
    if not packed:
        references = pack_registers(references, params)
    sketches = PackedSketches(np.concatenate([references, pack_registers(reads[None, :], params)]),
                              params, packed=True)
    # the pairs (reads, R): one left sketch, so one vectorised pass over every reference
    first = mle_pairs(sketches, params, np.full(n, n), np.arange(n))
    kmers = first.y_only + first.shared
    level = 0.5 * math.erfc(z / math.sqrt(2.0)) / n  # family-wise: Bonferroni over n
    p_values = first.p_values()
    detected = _significant(first.shared, p_values, z, level)
    with np.errstate(divide="ignore", invalid="ignore"):
        containment = np.where(detected & (kmers > 0), first.shared / kmers, 0.0)
    shared = np.where(detected, first.shared, 0.0)
    if winner_take_all:
        def rows(indices):  # the registers of those references, one a byte
            return unpack_registers(references[indices], params)
        shared, p_values = _winner_take_all(rows, reads, params, containment, shared,
                                            p_values)
        detected &= _significant(shared, p_values, z, level)
        with np.errstate(divide="ignore", invalid="ignore"):
            containment = np.where(detected & (kmers > 0), np.clip(shared / kmers, 0.0, 1.0),
                                   0.0)
    return ScreenResult(containment, shared, kmers, p_values, detected & (shared > 0))


def _significant(shared: np.ndarray, p_values: np.ndarray, z: float, level: float):
    """shared > 0, and p <= level unless z = 0 (every positive estimate)."""
    return (shared > 0) & (p_values <= level) if z > 0 else shared > 0


def _winner_take_all(references, reads: np.ndarray, params: HllParams,
                     containment: np.ndarray, shared: np.ndarray, p_values: np.ndarray):
    """(the shared k-mers left to each detected reference once those ranked above it took
    theirs, their p-values): the best keeps its own; for the others, the three-sketch
    maximum likelihood of host.leftover, started from the pair estimates of (R, U) and
    (R, max(Q, U)). 0 and the first p-value for references not detected. ``references(rows)``
    gives those references' registers, one a byte (a batch at a time, never all)."""
    ranked = np.flatnonzero(containment > 0)
    ranked = ranked[np.argsort(-containment[ranked], kind="stable")]
    left, p_left = np.zeros_like(shared), p_values.copy()
    if ranked.size == 0:
        return left, p_left
    left[ranked[0]] = shared[ranked[0]]  # nothing ranks above the best
    above = references(ranked[:1])[0]
    for start in range(1, ranked.size, _BATCH):
        batch = ranked[start:start + _BATCH]
        # U for each reference of the batch: the running union of those ranked above it
        members = references(batch)
        unions = np.maximum.accumulate(np.concatenate([above[None, :], members[:-1]]), axis=0)
        above = np.maximum(unions[-1], members[-1])
        count = batch.size
        registers = np.concatenate([members, unions, np.maximum(unions, reads)])
        rows = np.arange(count)
        with_u = mle_pairs(registers, params, rows, rows + count)
        with_w = mle_pairs(registers, params, rows, rows + 2 * count)
        for t, reference in enumerate(batch.tolist()):
            starts = (with_u.x_only[t], with_u.y_only[t], with_u.shared[t], with_w.x_only[t],
                      with_w.y_only[t], with_w.shared[t])
            kmers, ratio = leftover_test(members[t], unions[t], reads, params, starts)
            left[reference] = kmers
            p_left[reference] = 0.5 * math.erfc(math.sqrt(ratio / 2.0)) if ratio > 0 else 1.0
    return left, p_left
