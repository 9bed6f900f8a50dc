"""python -m host jsd / motifs / sketch --kind pqa against the golden model."""

import random

import numpy as np
import pytest

from host.cli import main
from kmerspec.golden.entropy import FIXED_ONE
from kmerspec.golden.jsd import JsdParams, build_pqa_files, jsd_between, jsd_between_fixed
from kmerspec.golden.motif import MotifParams, find_motifs
from host.sketchfile import read_sketches
from tests.genomes import write_related_genomes


@pytest.fixture
def family(tmp_path):
    """Four genomes of one family: a base sequence with 0..3 % point mutations."""
    return write_related_genomes(tmp_path, count=4, length=12_000, step=0.01, seed=31,
                                 prefix="member")


def read_matrix(path):
    lines = [line for line in path.read_text().splitlines() if not line.startswith("#")]
    return np.array([[float(v) for v in line.split("\t")[1:]] for line in lines])


def test_pqa_sketches_equal_golden_and_jsd_matches(tmp_path, family):
    options = ["--s", "3", "--R", "6", "--n", "4", "--cw", "10", "--d", "3"]
    sketch = tmp_path / "pqa.sketch"
    assert main(["sketch", "--kind", "pqa", *map(str, family), "-o", str(sketch), *options]) == 0
    stored = read_sketches(sketch)
    params = JsdParams(s=3, R=6, n=4, cw=10, d=3)
    golden = [build_pqa_files([p.read_bytes()], params) for p in family]
    for pqa, tags, values in zip(golden, stored.arrays["tags"], stored.arrays["values"]):
        assert [list(zip(t, v)) for t, v in zip(tags.tolist(), values.tolist())] == pqa.queues

    for arithmetic in ("float", "fixed"):
        out = tmp_path / f"jsd_{arithmetic}.tsv"
        assert main(["jsd", str(sketch), "-o", str(out), "--arithmetic", arithmetic]) == 0
        matrix = read_matrix(out)
        for a in range(4):
            for b in range(4):
                if a == b:
                    assert matrix[a, b] == 0
                elif arithmetic == "float":
                    assert matrix[a, b] == pytest.approx(jsd_between(golden[a], golden[b]), abs=1e-6)
                else:
                    expected = jsd_between_fixed(golden[a], golden[b]) / FIXED_ONE
                    assert matrix[a, b] == pytest.approx(expected, abs=1e-6)
        assert np.all(np.diff(matrix[0]) > 0)  # more mutations, more divergence

    # straight from sequences, sw and golden backends agree
    for backend in ("sw", "golden"):
        out = tmp_path / f"direct_{backend}.tsv"
        assert main(["jsd", *map(str, family[:3]), "-o", str(out), "--backend", backend,
                     *options]) == 0
    assert (tmp_path / "direct_sw.tsv").read_text() == (tmp_path / "direct_golden.tsv").read_text()


@pytest.mark.parametrize("mode", ["textbook", "counts"])
@pytest.mark.parametrize("arithmetic", ["float", "fixed"])
def test_jsd_of_identical_files_is_exactly_0(tmp_path, family, mode, arithmetic):
    """Two copies of a genome (and a third under another name) print JSD 0 exactly, not the
    rounding of the entropies' difference (-1.78e-15 .. -6.7e-13 before), and nothing is
    below 0 (SPEC 4)."""
    copies = []
    for name in ("copy_a.fa", "copy_b.fa"):
        copies.append(tmp_path / name)
        copies[-1].write_bytes(family[2].read_bytes())
    out = tmp_path / "jsd.tsv"
    assert main(["jsd", *map(str, family), *map(str, copies), "--s", "1", "--R", "6", "--n", "8",
                 "--mode", mode, "--arithmetic", arithmetic, "-o", str(out)]) == 0
    matrix = read_matrix(out)
    for a, b in ((2, 4), (2, 5), (4, 5)):
        assert matrix[a, b] == 0.0 and matrix[b, a] == 0.0
    assert (matrix >= 0).all() and (matrix[:4, :4][~np.eye(4, dtype=bool)] > 0).all()
    lines = out.read_text().splitlines()
    assert all("-" not in value for line in lines[2:] for value in line.split("\t")[1:])


def test_jsd_refuses_hll_sketches(tmp_path, family, capsys):
    hll = tmp_path / "hll.sketch"
    assert main(["sketch", str(family[0]), "-o", str(hll)]) == 0
    assert main(["jsd", str(hll), "-o", str(tmp_path / "x.tsv")]) == 2
    assert "jsd needs PQA sketches" in capsys.readouterr().err


@pytest.fixture
def chip(tmp_path):
    rng = random.Random(5)
    motif = "TTGACGCATGCAAT"

    def sequence(n):
        return "".join(rng.choice("ACGT") for _ in range(n))
    test, control = tmp_path / "peaks.fa", tmp_path / "background.fa"
    with open(test, "w") as out:
        for i in range(120):
            s = sequence(rng.randint(150, 260))
            if rng.random() < 0.5:
                p = rng.randint(0, len(s) - len(motif))
                s = s[:p] + motif + s[p + len(motif):]
            out.write(f">peak{i}\n{s}\n")
    with open(control, "w") as out:
        for i in range(120):
            out.write(f">bg{i}\n{sequence(200)}\n")
    return test, control, motif


def test_motifs_find_the_planted_motif_and_equal_golden(tmp_path, chip):
    test, control, motif = chip
    outputs = {}
    for backend in ("sw", "golden"):
        out = tmp_path / f"motifs_{backend}.tsv"
        assert main(["motifs", "--test", str(test), "--control", str(control), "-o", str(out),
                     "--kmin", "10", "--kmax", "12", "--threshold", "20,20,25", "--growth", "2.5",
                     "--cw", "10", "--backend", backend]) == 0
        outputs[backend] = out.read_text()
    assert outputs["sw"] == outputs["golden"]
    rows = [line.split("\t") for line in outputs["sw"].splitlines() if line[0].isdigit()]
    assert {kmer for k, kmer, _, _ in rows if k == "12"} >= {motif[i:i + 12] for i in range(3)}
    params = MotifParams(kmin=10, kmax=12, cw=10, thresholds=(20, 20, 25), growth=2.5)
    golden = find_motifs([test.read_bytes()], [control.read_bytes()], params)
    assert [(str(r.k), r.kmer, str(r.test_estimate), str(r.control_count)) for r in golden] == \
        [tuple(row) for row in rows]


@pytest.mark.parametrize("option,value,message", [
    ("--threshold", "5,6", "--threshold lists 2 values for k = 10..12"),
    ("--threshold", "x", "--threshold must be an integer"),
    ("--growth", "1/1000", "--growth: must be a multiple of 1/256"),
])
def test_motif_options_are_checked(tmp_path, chip, capsys, option, value, message):
    test, control, _ = chip
    out = tmp_path / "m.tsv"
    status = main(["motifs", "--test", str(test), "--control", str(control), "-o", str(out),
                   "--kmin", "10", "--kmax", "12", option, value])
    assert status == 2 and message in capsys.readouterr().err and not out.exists()
