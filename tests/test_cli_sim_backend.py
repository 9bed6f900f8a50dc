"""`--backend sim` runs the real RTL kernels (generated Verilog, cocotb) through the same
drivers as a card, and gives byte-identical sketches and identical outputs to `--backend sw`."""

import random

import numpy as np
import pytest

from host.cli import main
from host.drivers import jsd_matrix
from host.sketchfile import read_sketches
from kmerspec.golden.hll import HllParams
from tests.genomes import random_genome_bytes, related_sequences
from tests.metric_checks import golden_matrix, top_edges_text


@pytest.fixture(scope="module")
def small_genomes(tmp_path_factory):
    """Five small genomes: related FASTA, a FASTQ, CRLF, N runs, lowercase, an empty file."""
    directory = tmp_path_factory.mktemp("genomes")
    paths = []
    for i, text in enumerate(related_sequences(41, count=3, length=1500, step=0.02,
                                               alphabet=b"ACGTN")):
        body = b"\r\n".join(text[j:j + 61] for j in range(0, len(text), 61))
        path = directory / f"related{i}.fa"
        path.write_bytes(b">related %d\r\n%s\r\n>second record\nacgtacgtNNNNacgtacgtacgttgca\n"
                         % (i, body))
        paths.append(path)
    reads = directory / "reads.fq"
    reads.write_bytes(random_genome_bytes(random.Random(4), records=6, length=120, fastq=True))
    empty = directory / "empty.fa"
    empty.write_bytes(b"")
    return [str(p) for p in paths + [reads, empty]]


def test_simulator_output_stays_off_the_terminal(tmp_path, small_genomes, capfd):
    """Verilator's build lines and warnings, and cocotb's log, go to a log file that is
    removed when the run succeeds; the terminal sees nothing (first here: it builds)."""
    out = tmp_path / "sim.sketch"
    assert main(["sketch", *small_genomes, "--index-bits", "10", "--k", "21", "-o", str(out),
                 "--backend", "sim"]) == 0
    captured = capfd.readouterr()
    # one warning line for the empty genome file, nothing from the simulator
    assert captured.out == "" and captured.err.splitlines() == [
        f"warning: {small_genomes[-1]}: empty file, no k-mers"]


def run_both(tmp_path, command, *args):
    outputs = {}
    for backend in ("sw", "sim"):
        out = tmp_path / f"{backend}.out"
        assert main([command, *args, "-o", str(out), "--backend", backend]) == 0
        outputs[backend] = out.read_bytes()
    assert outputs["sim"] == outputs["sw"]
    return outputs["sw"]


def test_sketch_and_dist(tmp_path, small_genomes):
    run_both(tmp_path, "sketch", *small_genomes, "--index-bits", "10", "--k", "21")
    sketch = tmp_path / "sw.out"
    kept = tmp_path / "all.sketch"
    sketch.rename(kept)
    # --estimator hll: the similarity kernel's estimator (the default, mle, runs on the host)
    matrix = run_both(tmp_path, "dist", str(kept), "--estimator", "hll")
    assert matrix.count(b"\n") == 2 + len(small_genomes)
    edges = run_both(tmp_path, "dist", str(kept), "--format", "edges", "--threshold", "0.2",
                     "--estimator", "hll")
    assert b"related0.fa\trelated1.fa" in edges or b"related1.fa\trelated0.fa" in edges


def test_metrics_and_top_through_the_similarity_kernel(tmp_path, small_genomes):
    """Containment from the kernel's union features, and --top kept per genome as the kernel
    calls complete: equal to sw, and to the sorted rows of the golden full matrix."""
    sketch = tmp_path / "all.sketch"
    assert main(["sketch", *small_genomes, "--index-bits", "10", "--k", "21", "-o", str(sketch)]) == 0
    sketches = read_sketches(sketch)
    # --estimator hll: the kernel's estimator (the default, mle, estimates on the host)
    run_both(tmp_path, "dist", str(sketch), "--metric", "containment", "--estimator", "hll")
    for metric, top in (("containment", 2), ("mash", 3)):
        edges = run_both(tmp_path, "dist", str(sketch), "--format", "edges", "--metric", metric,
                         "--top", str(top), "--estimator", "hll")
        expected = golden_matrix(sketches.registers(), HllParams(10, 4), metric, 21)
        assert edges.decode().splitlines()[2:] == top_edges_text(expected, sketches.names,
                                                                 top, metric)


def test_jsd(tmp_path, small_genomes):
    options = ["--s", "1", "--R", "4", "--n", "4", "--cw", "8", "--d", "3"]
    # every PQA entry (tag, value) of every genome, built by the queue-builder kernel
    run_both(tmp_path, "sketch", "--kind", "pqa", *small_genomes, "--k", "15", *options)
    run_both(tmp_path, "sketch", "--kind", "pqa", *small_genomes, "--k", "15", "--update", "cm",
             *options)


def test_jsd_matrix(tmp_path, small_genomes, monkeypatch):
    """Both JSD kernels: the PQAs from the queue builder, the matrix from the JSD similarity
    kernel (the fixed-point JSD, bit for bit)."""
    import host.drivers
    matrices = []
    monkeypatch.setattr(host.drivers, "jsd_matrix",
                        lambda *args: matrices.append(args) or jsd_matrix(*args))
    options = ["--s", "1", "--R", "4", "--n", "4", "--cw", "8", "--d", "3"]
    run_both(tmp_path, "jsd", *small_genomes[:4], "--k", "15", "--arithmetic", "fixed", *options)
    assert len(matrices) == 1 and matrices[0][0].name == "sim"     # the kernel made the matrix


def test_motifs(tmp_path, small_genomes):
    rows = run_both(tmp_path, "motifs", "--test", *small_genomes[:2], "--control", small_genomes[3],
                    "--kmin", "8", "--kmax", "9", "--cw", "8", "--threshold", "2")
    assert rows.count(b"\n") > 4


@pytest.mark.parametrize("built, command, message", [
    # the binaries the tests above build (no extra Verilator build): asked for something else
    ("jacc_sketch.k=21", ["sketch", "--index-bits", "10", "--k", "31"],
     "jacc_sketch: built with k=21, asked for 31"),
    ("jacc_sketch.p=10", ["sketch", "--index-bits", "12", "--k", "21"],
     "jacc_sketch: built with p=10, asked for 12"),
    ("jsd_builder.s=1", ["sketch", "--kind", "pqa", "--k", "15", "--s", "2", "--R", "4", "--n",
                         "4", "--cw", "8", "--d", "3"],
     "jsd_builder: built with s=1, asked for 2"),
    ("jsd_builder.R=4", ["sketch", "--kind", "pqa", "--k", "15", "--s", "1", "--R", "5", "--n",
                         "4", "--cw", "8", "--d", "3"],
     "jsd_builder: built with R=4, asked for 5"),
    ("motif.kmin=8", ["motifs", "--kmin", "7", "--kmax", "9", "--cw", "8", "--threshold", "2"],
     "motif: built with kmin=8, asked for 7"),
])
def test_binary_built_otherwise_is_refused(tmp_path, small_genomes, capfd, monkeypatch, built,
                                           command, message):
    """A binary built with other parameters than the run asks for: one line, exit 2, nothing
    written (KMER_SKETCH_SIM_BUILD simulates such a binary, as a card built with -P would be)."""
    monkeypatch.setenv("KMER_SKETCH_SIM_BUILD", built)
    out = tmp_path / "refused.out"
    files = (["--test", *small_genomes[:2], "--control", small_genomes[3]]
             if command[0] == "motifs" else small_genomes[:3])
    capfd.readouterr()
    assert main([*command, *files, "-o", str(out), "--backend", "sim"]) == 2
    assert capfd.readouterr().err.splitlines() == [f"error: {message}"]
    assert not out.exists()


def test_min_count_sketch_and_dist_on_reads(tmp_path, small_genomes):
    """SPEC 7 on the RTL, m = 2: reads simulated (fixed seed, 2 % substitutions) from a 600-base
    fragment of phage lambda (examples/lambda_virus.fa.gz) and that fragment as a reference;
    the kernel is tests/test_sketch_kernel.py::FILTERED's (the same Verilog); the sketch file
    records the filter, and the filter changes the reads' sketch."""
    import gzip
    import pathlib
    from tests.test_fast_mincount import reads_text
    lambda_fa = pathlib.Path(__file__).parent.parent / "examples" / "lambda_virus.fa.gz"
    sequence = b"".join(gzip.decompress(lambda_fa.read_bytes()).split(b"\n")[1:])
    fragment = sequence[20_000:20_600]
    reads = tmp_path / "lambda_reads.fq"
    reads.write_bytes(reads_text(random.Random(21), fragment, 60, 50, 0.02, fastq=True))
    reference = tmp_path / "lambda_fragment.fa"
    reference.write_bytes(b">lambda 20000..20600\n" + fragment + b"\n")
    options = ["--index-bits", "10", "--k", "21", "--mc-depth", "2", "--mc-width-bits", "8"]
    filtered = run_both(tmp_path, "sketch", str(reads), *options, "--min-count", "2")
    (tmp_path / "filtered.sketch").write_bytes(filtered)
    filtered_set = read_sketches(tmp_path / "filtered.sketch")
    assert filtered_set.min_counts[0]["m"] == 2
    (tmp_path / "plain.sketch").write_bytes(
        run_both(tmp_path, "sketch", str(reads), "--index-bits", "10", "--k", "21"))
    plain_set = read_sketches(tmp_path / "plain.sketch")
    assert not all(np.array_equal(plain_set.arrays[key], filtered_set.arrays[key])
                   for key in plain_set.arrays), "the filter should change the reads' sketch"
    run_both(tmp_path, "dist", str(reads), str(reference), *options, "--min-count", "2")
