"""A small genome inside a large one, found by ``search --metric containment`` with the defaults
(the joint MLE, SPEC 3): a 100 kb piece of a 5 Mb genome, the lambda phage inserted into a
bacterial genome (S. aureus NCTC8325 of Debian's sibelia-examples), and an unrelated 100 kb piece
below detection. The full table over five genera and 5-200 kb: bench/containment_small.py."""

import numpy as np
import pytest

from bench.containment_accuracy import SIBELIA
from bench.containment_small import EXAMPLES, fasta, inserted, piece, records
from tests.cli_helpers import run_status


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    directory = tmp_path_factory.mktemp("small_inside_large")
    rng = np.random.default_rng(100)
    letters = np.frombuffer(b"ACGT", np.uint8)
    large = [(b"random 5 Mb", letters[rng.integers(0, 4, 5_000_000)].tobytes())]
    aureus = records(SIBELIA / "C-Sibelia/Staphylococcus_aureus/NCTC8325.fasta.gz")
    pylori = records(SIBELIA / "Sibelia/Helicobacter_pylori/Helicobacter_pylori.fasta.gz")[:1]
    lam = records(EXAMPLES / "lambda_virus.fa.gz")
    texts = {"large.fa": fasta(large), "aureus.fa": fasta(aureus),
             "aureus_lambda.fa": fasta(inserted(aureus, lam[0][1], rng)),
             "lambda.fa": fasta(lam),
             "large_100k.fa": b">piece\n" + piece(large, 100_000, rng) + b"\n",
             "aureus_100k.fa": b">piece\n" + piece(aureus, 100_000, rng) + b"\n",
             "unrelated_100k.fa": b">piece\n" + piece(pylori, 100_000, rng) + b"\n"}
    for file, text in texts.items():
        (directory / file).write_bytes(text)
    db = directory / "db.sketch"
    assert run_status("sketch", *(directory / f for f in ("large.fa", "aureus.fa",
                                                          "aureus_lambda.fa")), "-o", db) == 0
    return directory, db


def containment(directory, db, *options) -> dict:
    out = directory / "hits.tsv"
    queries = [directory / f for f in ("large_100k.fa", "aureus_100k.fa", "unrelated_100k.fa",
                                       "lambda.fa")]
    assert run_status("search", *queries, "--db", db, "--metric", "containment", "--pvalue",
                      *options, "-o", out) == 0
    found = {}
    for line in out.read_text().splitlines():
        if not line.startswith("#"):
            query, reference, value, p = line.split("\t")
            found[query, reference] = (float(value), float(p))
    return found


def test_defaults_find_the_small_genome_inside_the_large_one(files):
    directory, db = files
    found = containment(directory, db)
    assert found["large_100k.fa", "large.fa"][0] >= 0.9  # 100 kb of 5 Mb: exact 1
    assert found["aureus_100k.fa", "aureus.fa"][0] >= 0.9
    assert found["aureus_100k.fa", "aureus_lambda.fa"][0] >= 0.9
    assert found["lambda.fa", "aureus_lambda.fa"][0] >= 0.9  # 48.5 kb in 2.9 Mb
    assert found["lambda.fa", "aureus.fa"][0] == 0.0
    for reference in ("large.fa", "aureus.fa", "aureus_lambda.fa"):  # below detection
        value, p = found["unrelated_100k.fa", reference]
        assert value == 0.0 and p > 0.00135
    for query, reference in (("large_100k.fa", "large.fa"), ("lambda.fa", "aureus_lambda.fa")):
        assert found[query, reference][1] < 1e-20  # and significant


def test_the_hll_estimator_misses_them(files):
    """What the issue saw with the old default: the hll estimator's floor (J >= 0.0244 at
    p = 14) leaves a genome under 2.4 % the size of another undetected inside it."""
    directory, db = files
    found = containment(directory, db, "--estimator", "hll")
    assert found["lambda.fa", "aureus_lambda.fa"][0] == 0.0
    assert found["large_100k.fa", "large.fa"][0] == 0.0
