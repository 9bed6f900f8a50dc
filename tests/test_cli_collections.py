"""Collections (issue 46 item 5): -l FILE lists and directories among the inputs of sketch, dist,
search, jsd, merge, screen (directories for motifs too), a list longer than the shell's argument
limit, --top writing edges without --format; and each mistake as one line."""

import errno
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from host.commands.collections import SEQUENCE_SUFFIXES
from host.sketchfile import read_sketches
from tests.cli_helpers import one_error_line, run_status

ROOT = Path(__file__).resolve().parent.parent
GENOMES = sorted((ROOT / "examples" / "genomes").glob("*.fa.gz"))


def names_of(sketch) -> list[str]:
    return read_sketches(sketch).names


def random_genome(rng, length=300) -> bytes:
    return np.frombuffer(b"ACGT", np.uint8)[rng.integers(0, 4, length)].tobytes()


@pytest.fixture
def folder(tmp_path):
    """A directory of sequence files in several spellings, created out of name order, with
    what a directory of genomes also holds: a README, a hidden file, a sub-directory."""
    rng = np.random.default_rng(3)
    folder = tmp_path / "genomes"
    folder.mkdir()
    for name in ("zeta.fna", "alpha.FASTA", "mid.fq", "beta.fa.gz", "gamma.fa.bz2"):
        text = b">" + name.encode() + b"\n" + random_genome(rng) + b"\n"
        if name.endswith(".fq"):
            text = b"@r\n" + random_genome(rng, 80) + b"\n+\n" + b"I" * 80 + b"\n"
        if name.endswith(".gz"):
            import gzip
            text = gzip.compress(text)
        if name.endswith(".bz2"):
            import bz2
            text = bz2.compress(text)
        (folder / name).write_bytes(text)
    (folder / "README.md").write_text("not a genome\n")
    (folder / ".hidden.fa").write_text(">h\nACGTACGTACGT\n")
    (folder / "protein.faa").write_text(">p\nMKV\n")
    for sub in ("sub", "more.fa"):  # not searched, even when named like a genome
        (folder / sub).mkdir()
        (folder / sub / "deep.fa").write_text(">d\nACGTACGTACGTACGTACGTACGTACGTACGTAC\n")
    return folder


def test_a_directory_stands_for_its_sequence_files_sorted_not_recursively(folder, tmp_path):
    out = tmp_path / "d.sketch"
    assert run_status("sketch", folder, "-o", out) == 0
    assert names_of(out) == ["alpha.FASTA", "beta.fa.gz", "gamma.fa.bz2", "mid.fq", "zeta.fna"]
    assert read_sketches(out).files[0] == [str(folder / "alpha.FASTA")]


def test_a_list_file_as_mash_sketch_l(tmp_path, monkeypatch):
    """Relative paths from the current directory (not the list's), blank and # lines skipped,
    spaces and CR around a path removed, the command line's files first."""
    work = tmp_path / "work"
    (work / "lists").mkdir(parents=True)
    for path in GENOMES:
        (work / path.name).write_bytes(path.read_bytes())
    listed = work / "lists" / "genomes.txt"
    listed.write_bytes(b"# the bee viruses\r\n\r\n  vdv1dwv9.fa.gz \r\n\tdwv.fa.gz\r\n"
                       b"#vdv1.fa.gz\n\n")
    monkeypatch.chdir(work)
    assert run_status("sketch", "vdv1dwv5.fa.gz", "-l", "lists/genomes.txt",
                      "-o", "l.sketch") == 0
    assert names_of("l.sketch") == ["vdv1dwv5.fa.gz", "vdv1dwv9.fa.gz", "dwv.fa.gz"]
    assert run_status("sketch", "vdv1dwv5.fa.gz", "vdv1dwv9.fa.gz", "dwv.fa.gz",
                      "-o", "p.sketch") == 0
    listed_registers = read_sketches("l.sketch").registers()
    assert np.array_equal(listed_registers, read_sketches("p.sketch").registers())


@pytest.mark.parametrize("command", ["dist", "search", "cluster", "jsd", "screen", "merge"])
def test_every_command_of_many_genomes_takes_lists_and_directories(command, tmp_path,
                                                                   monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    listed = tmp_path / "list.txt"
    listed.write_text("".join(f"{path}\n" for path in GENOMES))
    kind = ["--kind", "pqa"] if command == "jsd" else []
    assert run_status("sketch", *kind, *GENOMES, "-o", "refs.sketch") == 0
    if command == "merge":
        (tmp_path / "sketches").mkdir()
        for path in GENOMES[:2]:
            assert run_status("sketch", path, "-o", f"sketches/{path.name}.sketch") == 0
        listed.write_text("sketches/dwv.fa.gz.sketch\n")
        assert run_status("merge", "-l", listed, "-o", "a.sketch") == 0
        assert run_status("merge", "sketches", "-o", "b.sketch") == 0
        assert names_of("a.sketch") == ["dwv.fa.gz"]
        assert names_of("b.sketch") == ["dwv.fa.gz", "vdv1.fa.gz"]
        return
    before = {"search": ["--db", "refs.sketch"], "screen": ["refs.sketch"]}.get(command, [])
    outputs = []
    for inputs in (["-l", listed], [GENOMES[0].parent], [str(p) for p in GENOMES]):
        capsys.readouterr()
        out = tmp_path / f"out{len(outputs)}.tsv"
        assert run_status(command, *before, *inputs, "-o", out) == 0, capsys.readouterr().err
        outputs.append(out.read_text())
    assert outputs[0] == outputs[1] == outputs[2]
    assert len(outputs[0].splitlines()) > 2


def test_motifs_take_directories(tmp_path):
    reads = ROOT / "examples" / "reads"
    by_file, by_folder = tmp_path / "f.tsv", tmp_path / "d.tsv"
    control = ROOT / "examples" / "lambda_virus.fa.gz"
    assert run_status("motifs", "--test", *reads.glob("*.fq.gz"), "--control", control,
                      "-o", by_file) == 0
    assert run_status("motifs", "--test", reads, "--control", control, "-o", by_folder) == 0
    assert by_file.read_text() == by_folder.read_text()


def test_list_from_standard_input(tmp_path, monkeypatch):
    import io
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(
        "".join(f"{p}\n" for p in GENOMES).encode())))
    assert run_status("sketch", "-l", "-", "-o", tmp_path / "s.sketch") == 0
    assert names_of(tmp_path / "s.sketch") == [p.name for p in GENOMES]


def test_a_list_longer_than_the_shells_argument_limit(tmp_path):
    """4,500 genomes whose paths add up to more than ARG_MAX: the operating system refuses
    them as arguments (E2BIG), a list file takes them."""
    arg_max = os.sysconf("SC_ARG_MAX")
    rng = np.random.default_rng(5)
    folder = tmp_path / ("d" * 200)
    folder.mkdir()
    count = 4500
    paths = [folder / f"{i:05d}_{'g' * 220}.fa" for i in range(count)]
    assert sum(len(str(p)) + 1 for p in paths) > arg_max
    text = random_genome(rng, 40 * count)
    for i, path in enumerate(paths):
        path.write_bytes(b">g\n" + text[40 * i:40 * i + 40] + b"\n")
    with pytest.raises(OSError) as refused:
        subprocess.run(["true", *map(str, paths)])
    assert refused.value.errno == errno.E2BIG
    listed = tmp_path / "genomes.txt"
    listed.write_text("".join(f"{p}\n" for p in paths))
    out = tmp_path / "many.sketch"
    assert run_status("sketch", "-l", listed, "-o", out, "--index-bits", "8") == 0
    sketches = read_sketches(out)
    assert sketches.names == [p.name for p in paths]
    assert all(row.any() for row in sketches.registers())
    found = tmp_path / "found.tsv"
    assert run_status("search", "-l", listed, "--db", out, "--top", "1", "-o", found) == 0
    hits = [line.split("\t") for line in found.read_text().splitlines()[2:]]
    assert len(hits) == count and all(query == best for query, best, _ in hits)


def test_top_writes_edges_without_format(tmp_path):
    edges, implied = tmp_path / "e.tsv", tmp_path / "i.tsv"
    assert run_status("dist", *GENOMES, "--format", "edges", "--top", 2, "-o", edges) == 0
    assert run_status("dist", *GENOMES, "--top", 2, "-o", implied) == 0
    assert implied.read_text() == edges.read_text()
    assert implied.read_text().splitlines()[1].startswith("#genome_a\tgenome_b")


def test_directory_suffixes_are_the_documented_ones():
    usage = (ROOT / "docs" / "usage.md").read_text()
    for suffix in SEQUENCE_SUFFIXES:
        assert f"`*{suffix}`" in usage, suffix


@pytest.mark.parametrize("case, expected", [
    ("missing list", "nolist.txt: no such list file (-l)"),
    ("empty list", "empty.txt: lists no files (-l FILE: one path per line"),
    ("listed file missing", "list.txt: line 3: missing.fa: no such file"),
    ("directory without sequences", "notes: a directory with no FASTA/FASTQ files"),
    ("list is a FASTA file", "x.fa: a FASTA/FASTQ file, not a list of paths"),
    ("list is gzip", "dwv.fa.gz: a gzip-compressed file, not a list of paths"),
    ("list is a directory", "notes: a directory, not a list file"),
    ("no input", "no input given: name the input files or their directories, or list them"),
    ("stdin twice", "-: standard input cannot be both an input (-) and a list (-l -)"),
    ("output over the list", "list.txt: is also an input"),
    ("top with tsv", "--top: gives K edges per genome, which --format tsv cannot hold"),
])
def test_mistakes_are_one_line(case, expected, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    Path("notes").mkdir()
    Path("notes/README.md").write_text("genomes elsewhere\n")
    Path("empty.txt").write_text("\n# nothing here\n\n")
    Path("list.txt").write_text(f"{GENOMES[0]}\n\nmissing.fa\n")
    Path("x.fa").write_text(">x\nACGT\n")
    out = tmp_path / "out.tsv"
    args = {
        "missing list": ["dist", "-l", "nolist.txt"],
        "empty list": ["dist", "-l", "empty.txt"],
        "listed file missing": ["dist", "-l", "list.txt"],
        "directory without sequences": ["dist", "notes"],
        "list is a FASTA file": ["dist", "-l", "x.fa"],
        "list is gzip": ["dist", "-l", GENOMES[0]],
        "list is a directory": ["dist", "-l", "notes"],
        "no input": ["dist"],
        "stdin twice": ["dist", "-", "-l", "-"],
        "output over the list": ["sketch", GENOMES[0], "-l", "x.fa.list"],
        "top with tsv": ["dist", *GENOMES, "--top", "1", "--format", "tsv"],
    }[case]
    if case == "output over the list":
        Path("list.txt").write_text(f"{GENOMES[1]}\n")
        args = ["sketch", "-l", "list.txt"]
        out = tmp_path / "list.txt"
    capsys.readouterr()
    before = out.read_bytes() if out.exists() else None
    assert run_status(*args, "-o", out) == 2
    assert expected in one_error_line(capsys)
    assert (out.read_bytes() if out.exists() else None) == before
