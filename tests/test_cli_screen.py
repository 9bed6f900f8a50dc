"""screen (issue 46 item 6): the bundled reads ranked as mash screen ranks the references, within
0.05 of its identity, against mash's output recorded in tests/data/mash_screen.tsv (its
header names the commands; bench/screen_mash.py --record makes it anew where mash is
installed); the read set as one pool, the abundance filter over it; the detection rule over a
collection of many references; one-line mistakes."""

import gzip
from pathlib import Path

import numpy as np
import pytest

from host.fast.hll import sketch_files
from host.screen import screen
from host.sketchfile import read_sketches
from kmerspec.golden.hll import HllParams
from tests.cli_helpers import one_error_line, run_status

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
REFERENCES = sorted((EXAMPLES / "genomes").glob("*.fa.gz")) + [EXAMPLES / "lambda_virus.fa.gz"]
READS = EXAMPLES / "reads" / "SRR059298_2000.fq.gz"
RECORD = ROOT / "tests" / "data" / "mash_screen.tsv"


def recorded_mash(k: int, winner: bool) -> dict:
    """{reference file name: identity} of mash screen's recorded output."""
    found = {}
    for line in RECORD.read_text().splitlines():
        if line.startswith("#"):
            continue
        fields = line.split("\t")
        if int(fields[0]) == k and (fields[1] == "-w") == winner:
            found[Path(fields[6]).name] = float(fields[2])
    return found


def screened(path: Path) -> list[list[str]]:
    lines = path.read_text().splitlines()
    assert lines[0].startswith("# kmer-sketch-accel ") and " screen " in lines[0]
    assert lines[1] == "#reference\tidentity\tcontainment\tshared_kmers\treference_kmers\tp_value"
    return [line.split("\t") for line in lines[2:]]


@pytest.fixture(scope="module")
def sketches(tmp_path_factory):
    """The references sketched with k = 21 (Mash's default) and 31 (this tool's), p = 14, and
    k = 31 with p = 16."""
    directory = tmp_path_factory.mktemp("screen")
    made = {}
    for k, p in ((21, 14), (31, 14), (31, 16)):
        made[k, p] = directory / f"refs{k}_{p}.sketch"
        assert run_status("sketch", "-k", k, "--index-bits", p, *REFERENCES,
                          "-o", made[k, p]) == 0
    return made


def test_the_record_says_how_it_was_made():
    header = [line for line in RECORD.read_text().splitlines() if line.startswith("#")]
    assert header[0].startswith("# mash screen 2.3 on the bundled examples")
    assert "mash sketch -k K -o refs " + " ".join(
        str(p.relative_to(ROOT)) for p in REFERENCES) in header[1]
    assert f"mash screen [-w] refs.msh {READS.relative_to(ROOT)}" in header[2]


# With -w, vdv1 keeps 0.5 to 0.6 % of its k-mers once the three closer genomes took theirs
# (mash: 6 or 7 of 1,000 hashes; 48 to 58 exact k-mers), and its p-value is that of what it
# wins (issue 53): 0.11 at k = 21, p = 14, above the level, so the ranking is compared with
# every positive estimate (--detection 0), as mash lists every reference with a hash left;
# k = 31 with -w at p = 14 is left out (vdv1's estimate there is 0); the test below checks the
# default detection.
@pytest.mark.parametrize("k, p, winner", [(21, 14, False), (21, 14, True), (31, 14, False),
                                          (31, 16, True)])
def test_screen_ranks_the_references_as_mash_screen(sketches, tmp_path, k, p, winner):
    out = tmp_path / "screen.tsv"
    assert run_status("screen", sketches[k, p], READS,
                      *(["-w", "--detection", "0"] if winner else []), "-o", out) == 0
    rows = screened(out)
    mash = recorded_mash(k, winner)
    assert [row[0] for row in rows] == sorted(mash, key=lambda name: -mash[name])
    for name, identity, containment, *_ in rows:
        assert abs(float(identity) - mash[name]) <= 0.05, (name, identity, mash[name])
        assert float(identity) == pytest.approx(float(containment) ** (1 / k), abs=1e-6)


def test_winner_take_all_reports_what_is_significant_in_what_each_reference_wins(sketches,
                                                                                   tmp_path):
    """At the default detection, -w reports the references whose leftover is significant:
    mash's first three; each winner's p-value is its leftover's (vdv1dwv9's, 807 k-mers, about
    1e-57; before issue 53 every winner printed its first pass's, 0 here), and vdv1's 53 k-mers
    (p = 0.11) are left out."""
    plain, winners = tmp_path / "plain.tsv", tmp_path / "winners.tsv"
    assert run_status("screen", sketches[21, 14], READS, "-o", plain) == 0
    assert run_status("screen", sketches[21, 14], READS, "-w", "-o", winners) == 0
    first = {row[0]: float(row[5]) for row in screened(plain)}
    rows = screened(winners)
    assert [row[0] for row in rows] == ["vdv1dwv5.fa.gz", "dwv.fa.gz", "vdv1dwv9.fa.gz"]
    assert first["vdv1dwv9.fa.gz"] == 0 and 0 < float(rows[2][5]) < 1e-30
    assert float(rows[0][5]) == first["vdv1dwv5.fa.gz"]  # the best wins its whole overlap


def test_identity_floor_and_columns(sketches, tmp_path):
    out = tmp_path / "screen.tsv"
    assert run_status("screen", sketches[21, 14], READS, "-i", "0.98", "-o", out) == 0
    rows = screened(out)
    assert [row[0] for row in rows] == ["vdv1dwv5.fa.gz", "dwv.fa.gz", "vdv1dwv9.fa.gz"]
    for name, identity, containment, shared, kmers, p_value in rows:
        assert float(identity) >= 0.98
        assert float(shared) / float(kmers) == pytest.approx(float(containment), rel=1e-3)
        assert float(p_value) < 1e-9


def split_reads(tmp_path) -> tuple[Path, Path]:
    """The bundled reads in two FASTQ files (as a pair of files of one run would be)."""
    lines = gzip.decompress(READS.read_bytes()).splitlines(keepends=True)
    half = (len(lines) // 8) * 4
    first, second = tmp_path / "reads_1.fq", tmp_path / "reads_2.fq"
    first.write_bytes(b"".join(lines[:half]))
    second.write_bytes(b"".join(lines[half:]))
    return first, second


def test_the_read_files_are_one_pool_and_min_count_counts_over_it(sketches, tmp_path):
    """Two read files give what their concatenation gives, also with -m 2, whose Count-Min
    counts a k-mer over both files: a k-mer seen once in each passes."""
    first, second = split_reads(tmp_path)
    whole = tmp_path / "whole.fq"
    whole.write_bytes(first.read_bytes() + second.read_bytes())
    for options in ([], ["-m", "2"]):
        outputs = []
        for reads in ([whole], [first, second]):
            out = tmp_path / f"out{len(outputs)}.tsv"
            assert run_status("screen", sketches[21, 14], *reads, *options, "-o", out) == 0
            outputs.append(out.read_text())
        assert outputs[0] == outputs[1], options


def test_the_golden_backend_screens_alike(sketches, tmp_path):
    """The pool of two files with -m 2 through the golden model (files handed as bytes, one
    genome) equals the native backend's (files streamed)."""
    reads = split_reads(tmp_path)
    outputs = []
    for backend in ("sw", "golden"):
        out = tmp_path / f"{backend}.tsv"
        assert run_status("screen", sketches[21, 14], *reads, "-m", 2, "-w", "--backend",
                          backend, "-o", out) == 0
        outputs.append(out.read_text())
    assert outputs[0] == outputs[1] and len(outputs[0].splitlines()) == 5


def test_the_abundance_filter_applies_to_the_reads_as_in_dist(sketches, tmp_path):
    """screen -m 2 READS equals screen of the reads sketched by sketch -m 2, and differs from
    the unfiltered screen (the read errors' k-mers are gone)."""
    read_sketch = tmp_path / "reads.sketch"
    assert run_status("sketch", "-k", 21, "-m", 2, READS, "-o", read_sketch) == 0
    outputs = {}
    for name, args in {"filtered": [READS, "-m", 2], "sketch": [read_sketch],
                       "plain": [READS]}.items():
        out = tmp_path / f"{name}.tsv"
        assert run_status("screen", sketches[21, 14], *args, "-o", out) == 0
        outputs[name] = [row[1:] for row in screened(out)]
    assert outputs["filtered"] == outputs["sketch"]
    assert outputs["filtered"] != outputs["plain"]
    params = HllParams(14, 4)
    plain = sketch_files([gzip.decompress(READS.read_bytes())], 21, params)
    filtered = read_sketches(read_sketch).registers()[0]
    assert (filtered <= plain).all() and (filtered < plain).any()


def test_no_chance_hits_among_many_references():
    """5,000 random 200-base references against the real reads: each is a chance of a hit by
    noise, so screen's detection holds the whole collection at the level of one pair; none
    is reported (at the plain level of one pair, about 0.00135 x 5,000 = 7 would be)."""
    rng = np.random.default_rng(11)
    params = HllParams(14, 4)
    reads = sketch_files([gzip.decompress(READS.read_bytes())], 31, params)
    bases = np.frombuffer(b"ACGT", np.uint8)
    references = np.stack([sketch_files([b">r\n" + bases[rng.integers(0, 4, 200)].tobytes()],
                                        31, params) for _ in range(5000)])
    found = screen(references, reads, params, z=3.0)
    assert not found.reported.any()
    assert (found.p_values < 0.00135).sum() >= 2  # the chances were there


@pytest.mark.parametrize("case, expected", [
    ("refs not a sketch", "dwv.fa.gz: is FASTA/FASTQ, but screen takes the references' "
                          "sketch file first and the reads after it: python -m host sketch "
                          "GENOMES -o refs.sketch, then python -m host screen refs.sketch"),
    ("raw reads first", "SRR059298_2000.fq.gz: is FASTA/FASTQ, but screen takes the "
                        "references' sketch file first and the reads after it: python -m host "
                        "screen <refs> <reads>"),
    ("refs of pqa", "REFS needs HLL sketches"),
    ("no reads", "no input given"),
    ("reads missing", "nothing.fq: no such file"),
    ("identity above 1", "must be from 0 to 1"),
    ("detection above 100", "must be from 0 to 100 standard deviations"),
    ("reads sketch of other k", "sketched with k=31, but"),
])
def test_mistakes_are_one_line(case, expected, sketches, tmp_path, capsys):
    refs = sketches[21, 14]
    args = {
        "refs not a sketch": [REFERENCES[0], READS],
        "raw reads first": [READS, refs],
        "refs of pqa": [tmp_path / "pqa.sketch", READS],
        "no reads": [refs],
        "reads missing": [refs, tmp_path / "nothing.fq"],
        "identity above 1": [refs, READS, "-i", "95"],
        "detection above 100": [refs, READS, "--detection", "101"],
        "reads sketch of other k": [refs, tmp_path / "k31.sketch"],
    }[case]
    if case == "refs of pqa":
        assert run_status("sketch", "--kind", "pqa", REFERENCES[0], "-o", args[0]) == 0
    if case == "reads sketch of other k":
        assert run_status("sketch", READS, "-o", args[1]) == 0
    capsys.readouterr()
    out = tmp_path / "out.tsv"
    assert run_status("screen", *args, "-o", out) == 2
    assert expected.replace("<refs>", str(refs)).replace("<reads>", str(READS)) in \
        one_error_line(capsys)
    assert not out.exists()


def test_references_that_look_like_a_read_set_are_named(sketches, tmp_path, capsys):
    """The read set's sketch given as REFS and the references as READS (issue 53: it ran in
    silence and printed identity 0.94 for "the reads inside the references"): one warning
    line naming the order; references far larger than the read set: the same line; the
    right order: none."""
    reads_sketch, out = tmp_path / "reads.sketch", tmp_path / "out.tsv"
    assert run_status("sketch", "-k", 21, READS, "-o", reads_sketch) == 0
    capsys.readouterr()
    assert run_status("screen", reads_sketch, sketches[21, 14], "-o", out) == 0
    warning = capsys.readouterr().err.strip().splitlines()
    assert len(warning) == 1 and warning[0].startswith(f"warning: {reads_sketch}: REFS looks "
                                                       f"like a read set (it is one genome "
                                                       f"sketched from reads)"), warning
    assert "screen takes the references first, then the reads" in warning[0]
    few = tmp_path / "few.fq"  # 4 reads: every reference has over 10 times their k-mers
    few.write_bytes(b"".join(gzip.decompress(READS.read_bytes()).splitlines(keepends=True)[:16]))
    assert run_status("screen", sketches[21, 14], few, "-o", out) == 0
    warning = capsys.readouterr().err.strip().splitlines()
    assert len(warning) == 1 and "every reference has over 10 times the read set's" in \
        warning[0], warning
    assert run_status("screen", sketches[21, 14], READS, "-o", out) == 0
    assert capsys.readouterr().err == ""
