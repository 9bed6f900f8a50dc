"""``--threads N`` on the command line: the outputs are byte for byte the same for every N."""

import gzip
import random

import pytest

from host.cli import main
from tests.genomes import random_genome_bytes


@pytest.fixture
def genome_paths(tmp_path):
    rng = random.Random(12)
    base = random_genome_bytes(rng, records=3, length=4000)
    paths = []
    for i in range(6):
        text = bytearray(base)
        for position in rng.sample(range(len(text)), 40 * i):
            if text[position:position + 1] in (b"A", b"C", b"G", b"T"):
                text[position] = rng.choice(b"ACGT")
        path = tmp_path / (f"g{i}.fa.gz" if i % 2 else f"g{i}.fa")
        path.write_bytes(gzip.compress(bytes(text)) if i % 2 else bytes(text))
        paths.append(str(path))
    return paths


def _run(*args):
    return main([str(a) for a in args])


@pytest.mark.parametrize("command, options", [
    ("sketch", ["--index-bits", "10"]),
    ("sketch", ["--kind", "pqa", "--s", "2", "--R", "6", "--cw", "10"]),
    ("dist", ["--index-bits", "10"]),
    ("dist", ["--index-bits", "10", "--format", "edges", "--threshold", "0.1"]),
    ("dist", ["--index-bits", "10", "--metric", "containment"]),
    ("dist", ["--index-bits", "10", "--format", "edges", "--top", "2", "--metric", "ani"]),
    ("jsd", ["--s", "2", "--R", "6", "--cw", "10"]),
])
def test_output_is_the_same_for_every_thread_count(tmp_path, genome_paths, command, options):
    outputs = []
    for threads in (1, 2, 5):
        out = tmp_path / f"out{threads}"
        assert _run(command, *genome_paths, "-o", out, "--threads", threads, *options) == 0
        outputs.append(out.read_bytes())
    assert outputs[0] and outputs[1] == outputs[0] and outputs[2] == outputs[0]


def test_motifs_are_the_same_for_every_thread_count(tmp_path, genome_paths):
    outputs = []
    for threads in (1, 3):
        out = tmp_path / f"m{threads}.tsv"
        assert _run("motifs", "--test", *genome_paths[:2], "--control", *genome_paths[2:4],
                    "--kmin", 5, "--kmax", 8, "--cw", 10, "--threshold", 3, "-o", out,
                    "--threads", threads) == 0
        outputs.append(out.read_bytes())
    assert outputs[0].count(b"\n") > 4 and outputs[1] == outputs[0]


def test_threads_must_be_positive(tmp_path, genome_paths, capsys):
    with pytest.raises(SystemExit) as exit_info:
        _run("sketch", genome_paths[0], "-o", tmp_path / "x", "--threads", 0)
    assert exit_info.value.code == 2
    assert "--threads: must be from 1 to 4096, not 0" in capsys.readouterr().err
