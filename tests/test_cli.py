"""The command line end to end: outputs, parameter checks and bad input."""

import gzip
import os
import random
import subprocess
import sys

import numpy as np
import pytest

from kmerspec.golden.hll import Hll, HllParams
from kmerspec.golden.parse import kmers
from host.similarity import all_pairs
from host.sketchfile import read_sketches
from tests.genomes import random_genome_bytes, related_sequences
from tests.cli_helpers import run


@pytest.fixture
def genomes(tmp_path):
    """Five related genomes (a base sequence with growing mutation) and one FASTQ, one gzip."""
    paths = []
    for i, text in enumerate(related_sequences(11, count=5, length=30_000, step=0.01)):
        body = b"\n".join(text[j:j + 70] for j in range(0, len(text), 70))
        path = tmp_path / f"genome{i}.fa"
        path.write_bytes(b">genome %d\n%s\n" % (i, body))
        paths.append(path)
    fastq = tmp_path / "reads.fq.gz"
    fastq.write_bytes(gzip.compress(random_genome_bytes(random.Random(1), 40, 150, fastq=True)))
    paths.append(fastq)
    return paths


def test_sketch_then_dist_matches_golden(tmp_path, genomes):
    out = tmp_path / "all.sketch"
    assert run("sketch", *genomes, "-o", out, "--index-bits", 10) == 0
    sketches = read_sketches(out)
    assert sketches.names == [p.name for p in genomes]
    assert sketches.params == {"k": 31, "p": 10, "w": 4, "canonical": True, "hash": "fmix64"}
    params = HllParams(10, 4)
    for path, registers in zip(genomes, sketches.registers()):
        data = path.read_bytes()
        if path.suffix == ".gz":
            data = gzip.decompress(data)
        golden = Hll(params).update(kmers(data, 31))
        assert registers.tolist() == golden.registers

    matrix_path = tmp_path / "d.tsv"
    assert run("dist", out, "-o", matrix_path) == 0
    lines = matrix_path.read_text().splitlines()
    assert lines[0].startswith("# kmer-sketch-accel 0.1.0 dist") and "k=31" in lines[0]
    assert lines[1].split("\t") == ["#genome"] + [p.name for p in genomes]
    matrix = np.array([[float(v) for v in line.split("\t")[1:]] for line in lines[2:]])
    assert np.allclose(matrix, matrix.T) and np.all(np.diag(matrix) == 1)
    # more mutations, less similar: the first row decreases along the related genomes
    assert all(np.diff(matrix[0, :5]) < 0)

    # the same matrix straight from the sequence files, and from the golden backend
    direct = tmp_path / "direct.tsv"
    assert run("dist", *genomes, "-o", direct, "--index-bits", 10) == 0
    assert direct.read_text() == matrix_path.read_text()
    golden = tmp_path / "golden.tsv"
    assert run("dist", *genomes[:3], "-o", golden, "--index-bits", 10, "--backend", "golden") == 0
    fast = tmp_path / "fast.tsv"
    assert run("dist", *genomes[:3], "-o", fast, "--index-bits", 10) == 0
    assert golden.read_text() == fast.read_text()


def test_phylip_and_edges(tmp_path, genomes):
    sketch = tmp_path / "s.sketch"
    assert run("sketch", *genomes[:5], "-o", sketch) == 0
    phylip = tmp_path / "d.phy"
    assert run("dist", sketch, "-o", phylip, "--format", "phylip", "--metric", "mash") == 0
    lines = phylip.read_text().splitlines()
    assert lines[0] == "5" and len(lines) == 6
    assert "k=31" in (tmp_path / "d.phy.params").read_text()
    assert all(float(v) == 0 for v in [lines[i + 1].split()[i + 1] for i in range(5)])
    edges = tmp_path / "d.edges"
    assert run("dist", sketch, "-o", edges, "--format", "edges", "--threshold", 0.6) == 0
    rows = [line.split("\t") for line in edges.read_text().splitlines()[2:]]
    assert rows and all(float(j) >= 0.6 for _, _, j in rows)


def test_pruning_never_loses_a_pair_and_pruned_pairs_are_below_threshold():
    params = HllParams(p=10, w=4)
    rng = np.random.default_rng(12)
    pool = rng.integers(0, 2**64, 400_000, dtype=np.uint64)
    registers = np.zeros((40, params.m), dtype=np.uint8)
    from host.fast.hll import insert_kmers
    for row in registers:  # nested and overlapping sets of very different sizes
        start = int(rng.integers(0, 200_000))
        insert_kmers(row, pool[start:start + int(rng.integers(100, 200_000))], params)
    full = {(min(i, j), max(i, j)): v for i, js, vs in all_pairs(registers, params)
            for j, v in zip(js.tolist(), vs.tolist())}
    for h in (0.05, 0.2, 0.5, 0.9):
        pruned = {(min(i, j), max(i, j)): v for i, js, vs in all_pairs(registers, params, h)
                  for j, v in zip(js.tolist(), vs.tolist())}
        assert pruned == {pair: v for pair, v in full.items() if v >= h}


def test_incompatible_sketches_are_refused(tmp_path, genomes, capsys):
    a, b = tmp_path / "a.sketch", tmp_path / "b.sketch"
    assert run("sketch", genomes[0], "-o", a) == 0
    assert run("sketch", genomes[1], "-o", b, "--k", 21) == 0
    out = tmp_path / "d.tsv"
    assert run("dist", a, b, "-o", out) == 2
    message = capsys.readouterr().err
    assert "k=21" in message and "k=31" in message and str(b) in message
    assert not out.exists()
    merged = tmp_path / "m.sketch"
    assert run("merge", a, b, "-o", merged) == 2
    assert not merged.exists()


def test_merge_reuses_sketches(tmp_path, genomes):
    a, b, merged = tmp_path / "a.sketch", tmp_path / "b.sketch", tmp_path / "m.sketch"
    assert run("sketch", *genomes[:2], "-o", a) == 0
    assert run("sketch", *genomes[2:4], "-o", b) == 0
    assert run("merge", a, b, "-o", merged) == 0
    together = tmp_path / "t.sketch"
    assert run("sketch", *genomes[:4], "-o", together) == 0
    m, t = read_sketches(merged), read_sketches(together)
    assert m.names == t.names and np.array_equal(m.registers(), t.registers())


@pytest.mark.parametrize("problem", ["missing", "directory", "binary", "truncated_gzip",
                                     "not_fasta", "unreadable", "empty_ok"])
def test_bad_input_is_named_and_nothing_is_written(tmp_path, genomes, capsys, monkeypatch, problem):
    bad = tmp_path / "bad.fa"
    expected = {
        "missing": "no such file",
        "directory": "a directory with no FASTA/FASTQ files",  # a directory of genomes is read
        "binary": "binary content",
        "truncated_gzip": "truncated gzip",
        "not_fasta": "not a FASTA/FASTQ file",
        "unreadable": "permission denied",
    }.get(problem)
    if problem == "directory":
        bad.mkdir()
    elif problem == "binary":
        bad.write_bytes(b">x\nACGT\x00\x01\x02" + bytes(range(256)))
    elif problem == "truncated_gzip":
        bad.write_bytes(gzip.compress(b">x\n" + b"ACGT" * 10000)[:-20])
    elif problem == "not_fasta":
        bad.write_bytes(b"hello world\n")
    elif problem == "unreadable":
        bad.write_bytes(b">x\nACGT\n")
        real_open = open

        def refusing_open(path, *args, **kwargs):
            if str(path) == str(bad):
                raise PermissionError(13, "Permission denied", str(path))
            return real_open(path, *args, **kwargs)
        monkeypatch.setattr("builtins.open", refusing_open)
    elif problem == "empty_ok":
        bad.write_bytes(b"")
    out = tmp_path / "out.sketch"
    status = run("sketch", genomes[0], bad, "-o", out)
    err = capsys.readouterr().err
    if problem == "empty_ok":
        assert status == 0 and not read_sketches(out).registers()[1].any()
        return
    assert status == 2
    assert err.count("\n") == 1 and str(bad) in err and expected in err, err
    assert not out.exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".out")] == []


def test_module_entry_point_and_help():
    result = subprocess.run([sys.executable, "-m", "host", "--help"], capture_output=True,
                            text=True, cwd=os.path.dirname(os.path.dirname(__file__)))
    assert result.returncode == 0
    for command in ("sketch", "dist", "merge", "info"):
        assert command in result.stdout
