"""Thresholds in the chosen metric (SPEC 3 "Thresholds"): ``dist --metric ani --threshold 95`` keeps
the pairs of ANI >= 95 %, pruned by the Jaccard bound of the threshold, which never drops a pair
that passes; the header line states the threshold; containment thresholds are applied without
pruning."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from host.metrics import express, jaccard_bound, passes, threshold_problem, threshold_text
from tests.cli_helpers import run_status
from tests.genomes import write_related_genomes


@settings(max_examples=300, deadline=None)
@given(metric=st.sampled_from(["ani", "mash"]), k=st.integers(1, 32),
       fraction=st.floats(0.0, 0.999), nudge=st.integers(-40, 40))
def test_the_bound_never_prunes_a_pair_that_passes(metric, k, fraction, nudge):
    """Jaccard values around the bound, a few float steps apart: each that passes the metric's
    threshold (as dist computes the metric) is at least the bound, and one a millionth above the
    exact bound passes."""
    threshold = 100.0 * (1 - fraction) if metric == "ani" else fraction
    if threshold_problem(metric, threshold) is not None:
        return
    bound = jaccard_bound(metric, threshold, k)
    distance = threshold if metric == "mash" else 1 - threshold / 100
    exact = math.exp(-k * distance) / (2 - math.exp(-k * distance))
    j = exact
    for _ in range(abs(nudge)):
        j = np.nextafter(j, np.inf if nudge > 0 else -np.inf)
    j = float(np.clip(j, 0.0, 1.0))
    if passes(metric, express(metric, np.array([j]), k), threshold)[0]:
        assert j >= bound
    above = min(1.0, exact * (1 + 1e-6))
    if above > exact:
        assert passes(metric, express(metric, np.array([above]), k), threshold)[0]


def test_threshold_ranges_and_header_text():
    assert threshold_problem("ani", 95) is None and threshold_problem("mash", 0) is None
    assert threshold_problem("ani", 0) == "must be an ANI in percent above 0, at most 100, not 0"
    assert threshold_problem("mash", 1) == "must be a Mash distance from 0, below 1, not 1"
    assert threshold_problem("jaccard", float("nan")) is not None
    assert threshold_text("ani", 95.0) == "ani>=95" and threshold_text("mash", 0.05) == "mash<=0.05"
    assert jaccard_bound("jaccard", 0.3, 21) == 0.3 and jaccard_bound("containment", 0.3, 21) is None


@pytest.fixture(scope="module")
def related(tmp_path_factory):
    """Ten genomes of one base sequence with 0 to 9 % of their bases redrawn: ANI between
    pairs from 100 down to about 80 (a range across the thresholds below), k=21, p=12."""
    directory = tmp_path_factory.mktemp("related")
    paths = write_related_genomes(directory, count=10, length=30_000, step=0.01, seed=5)
    sketch = directory / "related.sketch"
    assert run_status("sketch", *paths, "-k", 21, "--index-bits", 12, "-o", sketch) == 0
    return sketch


def matrix(path):
    lines = path.read_text().splitlines()
    names = lines[1].split("\t")[1:]
    return names, np.array([[float(v) for v in line.split("\t")[1:]] for line in lines[2:]])


def edges(path):
    lines = path.read_text().splitlines()
    return lines[0], {(a, b): float(v) for a, b, v in (line.split("\t")[:3] for line in lines[2:])}


@pytest.mark.parametrize("estimator", ["hll", "mle"])
@pytest.mark.parametrize("metric, threshold", [("ani", 95.0), ("ani", 97.5), ("mash", 0.03),
                                               ("jaccard", 0.3), ("containment", 0.6)])
def test_dist_threshold_keeps_exactly_the_pairs_that_pass(related, tmp_path, metric, threshold,
                                                          estimator):
    full, kept = tmp_path / "full.tsv", tmp_path / "kept.tsv"
    common = ["--metric", metric, "--estimator", estimator]
    assert run_status("dist", related, *common, "-o", full) == 0
    assert run_status("dist", related, *common, "--format", "edges", "--threshold", threshold,
                      "-o", kept) == 0
    names, values = matrix(full)
    header, got = edges(kept)
    if metric != "containment":  # a pair is listed once, either way round (pruning's order)
        position = {name: i for i, name in enumerate(names)}
        got = {tuple(sorted(pair, key=position.get)): value for pair, value in got.items()}
    assert f"metric={metric} threshold={threshold_text(metric, threshold)}" in header
    n = len(names)
    expected = {(names[i], names[j]): values[i, j] for i in range(n) for j in range(n)
                if i != j and (metric == "containment" or i < j)
                and passes(metric, values[i, j], threshold)}
    # the matrix prints 6 significant digits, as the edges do: compare the printed values
    assert set(got) == set(expected)
    assert all(abs(got[pair] - expected[pair]) <= 1e-5 * max(1.0, abs(expected[pair]))
               for pair in got)
    assert 0 < len(got) < (n * (n - 1) // (1 if metric == "containment" else 2))


def test_search_threshold_is_in_the_metric_and_stated(related, tmp_path):
    out = tmp_path / "s.tsv"
    query = related.parent / "g0.fa"
    assert run_status("search", query, "--db", related, "--metric", "ani", "--threshold", 95,
                      "-o", out) == 0
    lines = out.read_text().splitlines()
    assert "metric=ani threshold=ani>=95" in lines[0]
    values = [float(line.split("\t")[2]) for line in lines[2:]]
    assert values and min(values) >= 95
