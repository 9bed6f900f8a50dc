"""Genome names that would break a table (a tab, newline or other control character adds
columns or rows; a leading '#' makes a row a comment) are refused in one line, whether they
come from a file name, a sketch file or merge --rename (issue 37)."""

import pytest

from host.io import name_problem
from host.sketchfile import read_sketches, write_sketches
from tests.cli_helpers import run_status

GENOME = b">g\n" + b"ACGTTGCAAGCTTAGCCATGGATCCAGTACGTAGCTAGCTAGGCTAACG" * 4 + b"\n"


@pytest.mark.parametrize("name,problem", [("a\tb.fa", "control character '\\t'"),
                                          ("a\nb.fa", "control character '\\n'"),
                                          ("#a.fa", "starts with '#'"), ("", "is empty")])
def test_name_problem(name, problem):
    assert problem in name_problem(name)


def test_plain_names_pass():
    assert name_problem("E. coli K-12 (MG1655).fa") is None


@pytest.mark.parametrize("file_name", ["a\tb.fa", "line\nbreak.fa", "#comment.fa"])
def test_a_file_name_that_breaks_a_table_is_refused(tmp_path, capsys, file_name):
    genome = tmp_path / file_name
    genome.write_bytes(GENOME)
    out = tmp_path / "out.sketch"
    assert run_status("sketch", genome, "-o", out) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "rename the file" in err
    assert not out.exists()


def test_a_sketch_holding_such_a_name_is_refused_by_dist_and_mended_by_rename(tmp_path, capsys):
    genome, other = tmp_path / "g.fa", tmp_path / "h.fa"
    genome.write_bytes(GENOME)
    other.write_bytes(GENOME.replace(b"ACGT", b"AGCT"))
    good = tmp_path / "good.sketch"
    assert run_status("sketch", genome, other, "-o", good) == 0
    sketches = read_sketches(good)   # a sketch file written with such a name (by hand or old)
    sketches.names = ["g\tx", "h.fa"]
    bad = tmp_path / "bad.sketch"
    with open(bad, "wb") as out:
        write_sketches(out, sketches)
    capsys.readouterr()
    assert run_status("dist", bad, "-o", tmp_path / "d.tsv") == 2
    assert "holds a genome named 'g\\tx'" in capsys.readouterr().err
    assert not (tmp_path / "d.tsv").exists()
    assert run_status("search", genome, "--db", bad) == 2
    assert "rename it with merge --rename" in capsys.readouterr().err
    assert run_status("merge", bad, "--rename", "g\tx=#g", "-o", tmp_path / "m.sketch") == 2
    assert "starts with '#'" in capsys.readouterr().err
    assert run_status("merge", bad, "--rename", "g\tx=g", "-o", tmp_path / "m.sketch") == 0
    assert run_status("dist", tmp_path / "m.sketch", "-o", tmp_path / "d.tsv") == 0
    rows = (tmp_path / "d.tsv").read_text().splitlines()
    assert [row.split("\t")[0] for row in rows[2:]] == ["g", "h.fa"]
