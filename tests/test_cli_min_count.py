"""`--min-count` on the command line (SPEC 7): sketch and dist equal the golden model, m = 1
files are byte-identical to the plain ones, the filter is recorded per genome and survives
merge, mixed filters compare, mistakes are one line."""

import gzip
import random

import pytest

from host.sketchfile import read_sketches, write_sketches
from kmerspec.golden.hll import Hll, HllParams
from kmerspec.golden.mincount import MinCountParams, passing_kmers
from kmerspec.golden.parse import kmers
from tests.genomes import random_sequence
from tests.test_fast_mincount import reads_text
from tests.cli_helpers import run


@pytest.fixture(scope="module")
def reads_and_reference(tmp_path_factory):
    directory = tmp_path_factory.mktemp("reads")
    rng = random.Random(17)
    genome = random_sequence(rng, 3000)
    reference = directory / "reference.fa"
    reference.write_bytes(b">ref\n" + genome + b"\n")
    reads = directory / "reads.fq.gz"
    reads.write_bytes(gzip.compress(reads_text(rng, genome, 400, 100, 0.01, fastq=True)))
    return reads, reference


def test_sketch_equals_golden_and_records_the_filter(tmp_path, reads_and_reference):
    reads, reference = reads_and_reference
    out = tmp_path / "reads.sketch"
    assert run("sketch", reads, "-o", out, "--index-bits", 10, "--min-count", 2, "--mc-width-bits",
               12) == 0
    sketches = read_sketches(out)
    params = MinCountParams(min_count=2, mc_width_bits=12)
    assert sketches.min_counts == [params.record()]
    assert sketches.params == {"k": 31, "p": 10, "w": 4, "canonical": True, "hash": "fmix64"}
    golden = Hll(HllParams(10, 4)).update(passing_kmers(kmers(gzip.decompress(
        reads.read_bytes()), 31), params))
    assert sketches.registers()[0].tolist() == golden.registers
    golden_out = tmp_path / "golden.sketch"
    assert run("sketch", reads, "-o", golden_out, "--index-bits", 10, "--min-count", 2,
               "--mc-width-bits", 12, "--backend", "golden") == 0
    assert golden_out.read_bytes() == out.read_bytes()


def test_min_count_one_is_byte_identical(tmp_path, reads_and_reference):
    reads, reference = reads_and_reference
    plain, one = tmp_path / "plain.sketch", tmp_path / "one.sketch"
    assert run("sketch", reads, reference, "-o", plain, "--index-bits", 10) == 0
    assert run("sketch", reads, reference, "-o", one, "--index-bits", 10, "--min-count", 1,
               "--mc-depth", 2) == 0
    assert one.read_bytes() == plain.read_bytes()


def test_reads_against_reference(tmp_path, reads_and_reference, capsys):
    """m = 2 lifts Jaccard(reads, reference); a reads sketch (m = 2) and a reference sketch
    (m = 1) compare, merge and show their filter in info. --min-count filters every sequence
    file of the command (as Mash's -m), so the reference comes as a sketch file."""
    reads, reference = reads_and_reference
    reference_sketch = tmp_path / "ref.sketch"
    assert run("sketch", reference, "-o", reference_sketch, "--index-bits", 12) == 0

    def jaccard(*inputs_and_options):
        out = tmp_path / "d.tsv"
        assert run("dist", *inputs_and_options, "-o", out) == 0
        return float(out.read_text().splitlines()[2].split("\t")[2])

    plain = jaccard(reads, reference_sketch)
    filtered = jaccard(reads, reference_sketch, "--min-count", "2")
    assert plain < 0.6 < 0.9 < filtered
    reads_sketch = tmp_path / "r.sketch"
    assert run("sketch", reads, "-o", reads_sketch, "--index-bits", 12, "--min-count", 2) == 0
    merged = tmp_path / "both.sketch"
    assert run("merge", reads_sketch, reference_sketch, "-o", merged) == 0
    assert [bool(record) for record in read_sketches(merged).min_counts] == [True, False]
    assert jaccard(merged) == filtered
    capsys.readouterr()
    assert run("info", merged) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "\tmin_count=2 (Count-Min 4 x 2^20)\t" in lines[1] and "min_count" not in lines[2]


@pytest.mark.parametrize("args, message", [
    (["--min-count", "0"], "argument -m/--min-count: must be from 1 to 255, not 0"),
    (["--min-count", "256"], "argument -m/--min-count: must be from 1 to 255, not 256"),
    (["--mc-width-bits", "25"], "argument --mc-width-bits: must be from 1 to 24, not 25"),
    (["--kind", "pqa", "--min-count", "2"],
     "--min-count: applies to --kind hll sketches, not --kind pqa"),
])
def test_mistakes_are_one_line(tmp_path, reads_and_reference, capsys, args, message):
    reads, _ = reads_and_reference
    out = tmp_path / "x.sketch"
    try:
        status = run("sketch", reads, "-o", out, *args)
    except SystemExit as usage_error:  # argparse's own check
        status = usage_error.code
    assert status == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {message}") and err.count("\n") == 1
    assert not out.exists()


def test_damaged_filter_record_is_refused(tmp_path, reads_and_reference, capsys):
    reads, _ = reads_and_reference
    out = tmp_path / "r.sketch"
    assert run("sketch", reads, "-o", out, "--index-bits", 10, "--min-count", 3) == 0
    sketches = read_sketches(out)
    sketches.min_counts = [dict(sketches.min_counts[0], m=300)]
    write_sketches(out, sketches)
    assert run("info", out) == 2
    assert capsys.readouterr().err == (
        f"error: {out}: damaged sketch file (header: min_count of genome 'reads.fq.gz': min_count "
        f"must be at most 2^mc_counter_bits - 1 = 255, not 300)\n")


def test_a_card_built_without_the_prefilter_is_refused(tmp_path, reads_and_reference, capsys,
                                                       monkeypatch):
    """--min-count 2 on a device whose jacc_sketch binary was built without the prefilter (the
    default build): the identity check of host/control.py, as XrtDevice runs it before the first
    call, refuses it in one line, exit 2, and no output file appears. (The device here answers
    the identity registers of a default build instead of simulating; tests/test_cli_sim_backend.py
    runs --min-count 2 on the simulated RTL.)"""
    from host.control import check_identity
    from host.device import SimDevice

    def run_stream(self, kernel, calls):
        built = kernel.replace(mc_depth=0)   # the same kernel, without the prefilter
        registers = dict(zip(built.desc.status_map().identity_offsets, built.identity_words()))
        check_identity(kernel, lambda offset: registers.get(offset, 0))
        raise AssertionError("the identity check should have refused the binary")

    monkeypatch.setattr(SimDevice, "run_stream", run_stream)
    reads, _ = reads_and_reference
    assert run("sketch", reads, "-o", tmp_path / "x", "--min-count", 2, "--backend",
               "sim") == 2
    assert capsys.readouterr().err == (
        "error: jacc_sketch: built without the minimum-count prefilter (mc_depth=0), asked for "
        "mc_depth=4 (--min-count above 1)\n")
    assert not (tmp_path / "x").exists()


def test_search_filters_its_sequence_queries(tmp_path, reads_and_reference):
    reads, reference = reads_and_reference
    reference_sketch, reads_sketch = tmp_path / "ref.sketch", tmp_path / "r.sketch"
    assert run("sketch", reference, "-o", reference_sketch, "--index-bits", 12) == 0
    assert run("sketch", reads, "-o", reads_sketch, "--index-bits", 12, "--min-count", 2) == 0
    outputs = []
    for query, options in ((reads, ["--min-count", "2"]), (reads_sketch, [])):
        out = tmp_path / "s.tsv"
        assert run("search", query, "--db", reference_sketch, "-o", out, *options) == 0
        outputs.append(out.read_text().splitlines()[2:])
    assert outputs[0] == outputs[1] and float(outputs[0][0].split("\t")[2]) > 0.9
