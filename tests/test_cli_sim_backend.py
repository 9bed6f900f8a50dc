"""`--backend sim` runs the real RTL kernels (generated Verilog, cocotb) through the same
drivers as a card, and gives byte-identical sketches and identical outputs to `--backend sw`."""

import random

import pytest

from host.cli import main
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
    assert main(["sketch", *small_genomes, "--p", "10", "--k", "21", "-o", str(out),
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
    run_both(tmp_path, "sketch", *small_genomes, "--p", "10", "--k", "21")
    sketch = tmp_path / "sw.out"
    kept = tmp_path / "all.sketch"
    sketch.rename(kept)
    matrix = run_both(tmp_path, "dist", str(kept))
    assert matrix.count(b"\n") == 2 + len(small_genomes)
    edges = run_both(tmp_path, "dist", str(kept), "--format", "edges", "--threshold", "0.2")
    assert b"related0.fa\trelated1.fa" in edges or b"related1.fa\trelated0.fa" in edges


def test_metrics_and_top_through_the_similarity_kernel(tmp_path, small_genomes):
    """Containment from the kernel's union features, and --top kept per genome as the kernel
    calls complete: equal to sw, and to the sorted rows of the golden full matrix."""
    sketch = tmp_path / "all.sketch"
    assert main(["sketch", *small_genomes, "--p", "10", "--k", "21", "-o", str(sketch)]) == 0
    sketches = read_sketches(sketch)
    run_both(tmp_path, "dist", str(sketch), "--metric", "containment")
    for metric, top in (("containment", 2), ("mash", 3)):
        edges = run_both(tmp_path, "dist", str(sketch), "--format", "edges", "--metric", metric,
                         "--top", str(top))
        expected = golden_matrix(sketches.arrays["registers"], HllParams(10, 4), metric, 21)
        assert edges.decode().splitlines()[2:] == top_edges_text(expected, sketches.names,
                                                                 top, metric)


def test_jsd(tmp_path, small_genomes):
    options = ["--s", "1", "--R", "4", "--n", "4", "--cw", "8", "--d", "3"]
    # every PQA entry (tag, value) of every genome, built by the queue-builder kernel
    run_both(tmp_path, "sketch", "--kind", "pqa", *small_genomes, "--k", "15", *options)
    run_both(tmp_path, "sketch", "--kind", "pqa", *small_genomes, "--k", "15", "--update", "cm",
             *options)
    run_both(tmp_path, "jsd", *small_genomes[:4], "--k", "15", *options)


def test_motifs(tmp_path, small_genomes):
    rows = run_both(tmp_path, "motifs", "--test", *small_genomes[:2], "--control", small_genomes[3],
                    "--kmin", "8", "--kmax", "9", "--cw", "8", "--threshold", "2")
    assert rows.count(b"\n") > 4
