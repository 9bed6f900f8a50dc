"""``sketch -i``: one sketch per record of a multi-FASTA/FASTQ file, named by its record
(docs/SPEC.md 1.2, docs/cli.md "Genome names, and one sketch per record")."""

import gzip
import random
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from host.sketchfile import read_sketches
from tests.genomes import random_sequence


def random_genome(rng, length: int) -> str:
    return random_sequence(rng, length).decode()

ROOT = Path(__file__).resolve().parent.parent


def cli(*args, cwd):
    return subprocess.run([sys.executable, "-m", "host", *map(str, args)], cwd=cwd,
                          capture_output=True, text=True, timeout=300,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})


def plasmids(seed: int = 5) -> list[tuple[str, str]]:
    rng = random.Random(seed)
    return [(f"p{i} plasmid {i}", random_genome(rng, 3000 + 500 * i)) for i in range(1, 4)]


@pytest.mark.parametrize("compressed", [False, True], ids=["plain", "gz"])
def test_each_record_is_its_own_sketch(tmp_path, compressed):
    records = plasmids()
    text = "".join(f">{header}\n{sequence}\n" for header, sequence in records).encode()
    path = tmp_path / ("plasmids.fa.gz" if compressed else "plasmids.fa")
    path.write_bytes(gzip.compress(text) if compressed else text)
    assert cli("sketch", "-i", path.name, "-o", "each.sketch", cwd=tmp_path).returncode == 0
    assert cli("sketch", path.name, "-o", "whole.sketch", cwd=tmp_path).returncode == 0
    for index, (header, sequence) in enumerate(records):
        (tmp_path / f"r{index}.fa").write_text(f">{header}\n{sequence}\n")
    assert cli("sketch", *[f"r{i}.fa" for i in range(3)], "-o", "alone.sketch",
               cwd=tmp_path).returncode == 0
    each = read_sketches(tmp_path / "each.sketch")
    whole = read_sketches(tmp_path / "whole.sketch")
    alone = read_sketches(tmp_path / "alone.sketch")
    assert each.names == ["p1", "p2", "p3"]
    assert each.files == [[path.name]] * 3
    # each record's sketch is that of the record alone, and their union the file's sketch
    assert np.array_equal(each.registers(), alone.registers())
    assert np.array_equal(each.registers().max(axis=0), whole.registers()[0])


def test_reads_of_a_fastq_file_are_sketched_one_by_one(tmp_path):
    rng = random.Random(2)
    reads = [random_genome(rng, 150) for _ in range(4)]
    # a quality line starting with '@' is no header (a FASTQ record is 4 lines)
    (tmp_path / "r.fq").write_text("".join(f"@read{i} x\n{read}\n+\n@{'I' * 149}\n"
                                           for i, read in enumerate(reads)))
    assert cli("sketch", "-i", "-k", "21", "r.fq", "-o", "r.sketch", cwd=tmp_path).returncode == 0
    assert read_sketches(tmp_path / "r.sketch").names == [f"read{i}" for i in range(4)]


def test_a_name_in_two_files_is_named_by_its_file(tmp_path):
    rng = random.Random(3)
    for name in ("a.fa", "b.fa"):
        (tmp_path / name).write_text(f">contig_1\n{random_genome(rng, 500)}\n"
                                     f">only_{name[0]}\n{random_genome(rng, 500)}\n")
    assert cli("sketch", "-i", "a.fa", "b.fa", "-o", "x.sketch", cwd=tmp_path).returncode == 0
    assert read_sketches(tmp_path / "x.sketch").names == ["a.fa:contig_1", "only_a",
                                                          "b.fa:contig_1", "only_b"]


BAD = {
    "duplicate": (">x\nACGTACGT\n>y\nACGT\n>x\nACGT\n", [],
                  "error: f.fa: records 1 and 3 are both named 'x'; sketch -i needs each "
                  "record's name once"),
    "empty": (">a\nACGT\n> \nACGT\n", [],
              "error: f.fa: record 2: the genome's name '' is empty (sketch -i names each "
              "sketch by its record's header's first word); rename the record"),
    "control": (">a\x1bb\nACGT\n", [], "error: f.fa: record 1: the genome's name 'a\\x1bb' "
                "contains the control character '\\x1b'"),
    "hash": (">#a\nACGT\n", [], "error: f.fa: record 1: the genome's name '#a' starts with "
             "'#'"),
    "min-count": (">a\nACGT\n", ["--min-count", "2"], "error: --min-count: counts k-mers over "
                  "a read set, but with -i each record is its own sketch; drop --min-count"),
    "pqa": (">a\nACGT\n", ["--kind", "pqa"], "error: -i: sketches each record as an HLL "
            "sketch; drop --kind pqa"),
    "not fasta": ("ACGT\n>a\nACGT\n", [], "error: f.fa: not a FASTA/FASTQ file"),
}


@pytest.mark.parametrize("case", list(BAD))
def test_bad_records_are_one_line_naming_file_and_record(tmp_path, case):
    text, options, message = BAD[case]
    (tmp_path / "f.fa").write_text(text)
    found = cli("sketch", "-i", "f.fa", *options, "-o", "out.sketch", cwd=tmp_path)
    assert found.returncode == 2
    assert found.stderr.startswith(message) and found.stderr.count("\n") == 1, found.stderr
    assert not (tmp_path / "out.sketch").exists()
