"""The joint MLE's maximiser reaches the maximum (SPEC 3, "Maximisation"), held against an
independent optimiser written from Ertl's paper (tests/ertl_oracle.py: the likelihood as the
joint CDF's rectangle probabilities, maximised in log-rates on every face of the orthant by
scipy), over random pairs of a small set against a huge one, the case containment, search and
screen exist for and where the projected Newton steps without an active set stopped short
(issue 53: 13 of the first 200 pairs below, by up to 3.9 log-units).

The sketches are drawn from the model's own register distribution (a part of n elements gives
register value ceil(log2((n / m) / E)), E exponential, clipped to [0, R]; a sketch is the
register-wise maximum of its parts), which is what the maximiser is asked to fit; its accuracy
against real k-mer sets is tests/test_estimators.py's.

CI runs 30 pairs (about 10 s); the full run of 1,200 is ``-m slow`` (about 6 minutes).
"""

import math

import numpy as np
import pytest

from host.estimators import mle_pairs
from kmerspec.golden.hll import HllParams
from kmerspec.golden.hll_joint import joint_mle
from tests.ertl_oracle import JointLikelihood, independent_maximum, top_value

#: the project's log-likelihood may be below the independent maximum by this, relative
RELATIVE_SHORTFALL = 1e-6


def model_part(n: float, m: int, top: int, rng: np.random.Generator) -> np.ndarray:
    """The registers of a Poisson set of n elements (rate n / m per register)."""
    with np.errstate(divide="ignore"):
        ranks = np.ceil(np.log2((n / m) / rng.exponential(1.0, m)))
    return np.clip(ranks, 0, top).astype(np.uint8)


def small_against_huge(rng: np.random.Generator):
    """p in 12..16, w in 4..6, |X| log-uniform in 1e3..1e6 and |Y| in 1e6..1e8, X disjoint
    from Y, partly inside it (a uniform fraction) or wholly inside, a third each."""
    p, w = int(rng.integers(12, 17)), int(rng.integers(4, 7))
    m, top = 1 << p, top_value(p, w)
    small, large = 10 ** rng.uniform(3, 6), 10 ** rng.uniform(6, 8)
    relation = ("disjoint", "partly inside", "inside")[int(rng.integers(3))]
    shared = {"disjoint": 0.0, "inside": small}.get(relation, small * rng.uniform())
    x_only, y_only, both = (model_part(n, m, top, rng)
                            for n in (small - shared, large - shared, shared))
    return HllParams(p, w), np.maximum(x_only, both), np.maximum(y_only, both), relation


def shortfalls(params: HllParams, x: np.ndarray, y: np.ndarray):
    """(independent maximum, its rates, the golden model's L below it, the native loop's),
    every L by the independent likelihood."""
    likelihood = JointLikelihood(x, y, top_value(params.p, params.w))
    best, rates = independent_maximum(x, y, top_value(params.p, params.w))
    m = params.m
    golden = joint_mle(x.tolist(), y.tolist(), params)
    native = mle_pairs(np.array([x, y]), params, [0], [1], threads=1)
    golden_value = likelihood.value((golden.x_only / m, golden.y_only / m, golden.shared / m))
    native_value = likelihood.value((native.x_only[0] / m, native.y_only[0] / m,
                                     native.shared[0] / m))
    return best, rates, best - golden_value, best - native_value


def check_pairs(count: int, seed: int) -> list[tuple]:
    rng = np.random.default_rng(seed)
    worst = []
    for case in range(count):
        params, x, y, relation = small_against_huge(rng)
        best, _, golden_short, native_short = shortfalls(params, x, y)
        allowed = RELATIVE_SHORTFALL * abs(best)
        assert golden_short <= allowed, (case, params, relation, golden_short)
        assert native_short <= allowed, (case, params, relation, native_short)
        worst.append((golden_short / abs(best), native_short / abs(best)))
    return worst


def test_the_maximum_of_small_sets_against_huge_ones():
    """30 random pairs. The maximiser before issue 53 left 13 of the first 200 pairs of this
    seed short by more than 1e-3 log-units, up to 3.9 (2.8e-5 relative); this test stopped at
    the 15th (p = 15, w = 6, X inside Y), 0.16 log-units short (1.7e-6 relative)."""
    check_pairs(30, seed=1)


@pytest.mark.slow
def test_the_maximum_of_1200_small_sets_against_huge_ones():
    worst = np.array(check_pairs(1200, seed=2))
    print(f"largest relative shortfall: golden {worst[:, 0].max():.3g}, native "
          f"{worst[:, 1].max():.3g}")


def test_a_small_set_disjoint_from_a_huge_one_is_fitted_at_the_maximum():
    """1e4 k-mers disjoint from 5e7 at p = 14, w = 4 (issue 53's example), 12 draws: |X only|
    and |shared| where the independent optimiser's maximum is (within 1e-6 of |X u Y|), not
    where the steps stopped (before issue 53 the maximiser gave 12,311 for the maximum's
    9,974 in the fourth draw, 177 log-units below the maximum)."""
    params = HllParams(14, 4)
    m, top = params.m, top_value(14, 4)
    rng = np.random.default_rng(12)
    for draw in range(12):
        x = model_part(1e4, m, top, rng)
        y = model_part(5e7, m, top, rng)
        best, rates, golden_short, native_short = shortfalls(params, x, y)
        assert max(golden_short, native_short) <= RELATIVE_SHORTFALL * abs(best)
        found = mle_pairs(np.array([x, y]), params, [0], [1], threads=1)
        union = 5e7 + 1e4
        assert math.isclose(found.x_only[0], rates[0] * m, abs_tol=1e-6 * union), draw
        assert math.isclose(found.shared[0], rates[2] * m, abs_tol=1e-6 * union), draw
