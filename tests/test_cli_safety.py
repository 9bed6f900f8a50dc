"""Nothing lost, nothing silently wrong at the command line (issue 37, the CLI items): an output
that is an input is refused, /dev/stdout and descriptor paths are written in place, options that
do not apply are refused, signals clean up, a closed pipe ends quietly, pipes are read as inputs.
Each refusal: one line ``error: ...``, exit status 2, nothing written."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from host.cli import main
from host.sketchfile import read_sketches
from tests.genomes import write_related_genomes

ROOT = Path(__file__).resolve().parent.parent
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}


@pytest.fixture
def genomes(tmp_path):
    return write_related_genomes(tmp_path, count=3, length=6000, step=0.03, seed=37)


@pytest.fixture
def refs(tmp_path, genomes):
    path = tmp_path / "refs.sketch"
    assert run("sketch", *genomes, "-o", path) == 0
    return path


def run(*args):
    return main([str(a) for a in args])


def one_error_line(capsys) -> str:
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: "), err
    return err


def shell(command: str, cwd, **extra) -> subprocess.CompletedProcess:
    """``python -m host`` as ``host`` in a bash command line (for pipes and redirections)."""
    host = f"{sys.executable} -m host"
    return subprocess.run(["bash", "-c", command.replace("host ", host + " ", 1)], cwd=cwd,
                          env=ENV, capture_output=True, text=True, timeout=120, **extra)


# -- an output that is an input -----------------------------------------------------------------

@pytest.mark.parametrize("how", ["same", "symlink", "hardlink"])
def test_output_that_is_an_input_is_refused(tmp_path, genomes, refs, capsys, how):
    cases = {
        "sketch": lambda out: ["sketch", genomes[0], "-o", out],
        "dist": lambda out: ["dist", refs, genomes[1], "-o", out],
        "search": lambda out: ["search", genomes[1], "--db", refs, "-o", out],
        "motifs": lambda out: ["motifs", "--test", genomes[1], "--control", genomes[2],
                               "--kmin", 8, "--kmax", 8, "--cw", 8, "-o", out],
    }
    for command, arguments in cases.items():
        victim = {"sketch": genomes[0], "dist": refs, "search": refs, "motifs": genomes[2]}[command]
        before = victim.read_bytes()
        if how == "same":
            out = victim
        else:
            out = tmp_path / f"{command}-{how}.out"
            out.unlink(missing_ok=True)
            (out.symlink_to if how == "symlink" else out.hardlink_to)(victim)
        assert run(*arguments(out)) == 2, command
        err = one_error_line(capsys)
        assert f"{out}: is also an input" in err and "refusing to overwrite" in err, err
        assert victim.read_bytes() == before, command
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".partial")]


def test_output_beside_inputs_is_still_written(tmp_path, genomes):
    """The refusal compares files, not names: a new file beside the inputs is fine."""
    assert run("sketch", *genomes, "-o", tmp_path / "g0.fa.sketch") == 0


def test_empty_output_name_is_named(genomes, capsys):
    assert run("dist", *genomes, "-o", "") == 2
    assert "error: '': an empty output file name (give -o FILE, or -o - for standard output)" \
        in one_error_line(capsys)


# -- /dev/stdout and descriptor paths are written in place ---------------------------------------

def test_dev_stdout_appends_when_stdout_is_appended_to(tmp_path, refs):
    """``-o /dev/stdout >> f`` must add to f (the descriptor's O_APPEND), not replace it by a
    rename onto the /proc/self/fd/1 target."""
    target = tmp_path / "f.txt"
    target.write_text("kept line\n")
    result = shell(f"host dist {refs} -o /dev/stdout >> {target}", tmp_path)
    assert result.returncode == 0, result.stderr
    text = target.read_text()
    assert text.startswith("kept line\n# kmer-sketch-accel") and text.count("#genome") == 1
    result = shell(f"host dist {refs} -o /dev/stdout >> {target}", tmp_path)
    assert target.read_text().count("#genome") == 2 and target.read_text().startswith("kept")


@pytest.mark.parametrize("path", ["/dev/stdout", "/dev/fd/1", "/proc/self/fd/1", "link"])
def test_descriptor_paths_into_a_pipe(tmp_path, refs, path):
    if path == "link":
        (tmp_path / "link").symlink_to("/dev/stdout")
    result = shell(f"host dist {refs} -o {path} | cat", tmp_path)
    assert result.returncode == 0 and result.stderr == ""
    assert result.stdout.startswith("# kmer-sketch-accel 0.1.0 dist")
    assert len(result.stdout.splitlines()) == 5


def test_other_descriptor_is_written_through(tmp_path, refs):
    result = shell(f"host dist {refs} -o /dev/fd/3 3>> out.txt", tmp_path)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "out.txt").read_text().startswith("# kmer-sketch-accel")


def test_closed_stdout_is_named(tmp_path, refs):
    result = shell(f"host dist {refs} >&-", tmp_path)
    assert result.returncode == 2
    assert result.stderr == "error: -: standard output is closed; nowhere to write\n"


# -- a reader that goes away ------------------------------------------------------------------------

@pytest.mark.parametrize("output", ["", "-o -", "-o /dev/stdout"])
def test_closed_pipe_ends_quietly(tmp_path, refs, output):
    result = shell(f"set -o pipefail; host dist {refs} {output} | head -c 0", tmp_path)
    assert result.returncode == 128 + signal.SIGPIPE
    assert result.stderr == ""


# -- options that do not apply ------------------------------------------------------------------------

@pytest.mark.parametrize("arguments, option", [
    (["dist", "{refs}", "--k", "21"], "-k"),
    (["dist", "{refs}", "-m", "2"], "--min-count"),
    (["dist", "{refs}", "--p", "12"], "--index-bits"),
    (["search", "{refs}", "--db", "{refs}", "--no-canonical"], "--no-canonical"),
    (["jsd", "{pqa}", "--s", "5"], "--sample-bits"),
])
def test_sketching_options_with_only_sketch_files_are_refused(tmp_path, genomes, refs, capsys,
                                                              arguments, option):
    pqa = tmp_path / "p.sketch"
    assert run("sketch", "--kind", "pqa", *genomes, "-o", pqa) == 0
    capsys.readouterr()
    args = [a.format(refs=refs, pqa=pqa) for a in arguments]
    assert run(*args, "-o", tmp_path / "out.tsv") == 2
    err = one_error_line(capsys)
    assert err.startswith(f"error: {option}: sets how sequence files are sketched, but only "
                          f"sketch files were given"), err
    assert not (tmp_path / "out.tsv").exists()


def test_sketching_options_apply_when_sequences_are_given(tmp_path, genomes):
    assert run("dist", *genomes, "--k", 21, "-o", tmp_path / "d.tsv") == 0
    assert "k=21" in (tmp_path / "d.tsv").read_text().splitlines()[0]


@pytest.mark.parametrize("kind, option, value, other", [
    ("pqa", "--p", 12, "hll"), ("pqa", "--w", 5, "hll"), ("pqa", "--min-count", 2, "hll"),
    ("pqa", "--mc-depth", 2, "hll"), ("hll", "--s", 5, "pqa"), ("hll", "--R", 8, "pqa"),
    ("hll", "--update", "cm", "pqa")])
def test_options_of_the_other_kind_are_refused(tmp_path, genomes, capsys, kind, option, value,
                                               other):
    out = tmp_path / "x.sketch"
    assert run("sketch", "--kind", kind, genomes[0], option, value, "-o", out) == 2
    assert f"applies to --kind {other} sketches, not --kind {kind}" in one_error_line(capsys)
    assert not out.exists()


@pytest.mark.parametrize("backend", ["sw", "golden"])
def test_xclbin_without_an_fpga_backend_is_refused(tmp_path, genomes, capsys, backend):
    binary = tmp_path / "k.xclbin"
    binary.write_bytes(b"xclbin")
    assert run("dist", *genomes, "--backend", backend, "--xclbin", binary) == 2
    assert (f"error: --xclbin: applies to --backend xrt (or auto), not --backend {backend}"
            in one_error_line(capsys))


def test_empty_sketch_file_is_refused_by_dist(tmp_path, refs, capsys):
    empty = tmp_path / "empty.sketch"
    empty.write_bytes(b"")
    assert run("dist", refs, empty, "-o", tmp_path / "d.tsv") == 2
    assert f"error: {empty}: empty file, not a sketch file" in one_error_line(capsys)
    assert not (tmp_path / "d.tsv").exists()


def test_search_refuses_a_collection_with_a_duplicated_name(tmp_path, genomes, refs, capsys):
    from host.sketchfile import write_sketches
    sketches = read_sketches(refs)
    sketches.names[2] = sketches.names[0]
    doubled = tmp_path / "doubled.sketch"
    with open(doubled, "wb") as file:
        write_sketches(file, sketches)
    assert run("search", genomes[0], "--db", doubled) == 2
    err = one_error_line(capsys)
    assert f"{doubled}: holds two references named 'g0.fa' (genomes 1 and 3)" in err, err


# -- signals ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT])
def test_signal_removes_the_partial_output(tmp_path, signum):
    """The command waits on a FIFO nobody writes (a worker thread blocked in open) when the
    signal comes: the hidden .partial file goes, one line names the signal, status 128 + n."""
    fifo = tmp_path / "never.fa"
    os.mkfifo(fifo)
    out = tmp_path / "out.sketch"
    process = subprocess.Popen([sys.executable, "-m", "host", "sketch", str(fifo), "-o", str(out)],
                               cwd=tmp_path, env=ENV, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while not list(tmp_path.glob(".out.sketch.*.partial")):
            assert time.monotonic() < deadline and process.poll() is None
            time.sleep(0.05)
        process.send_signal(signum)
        _, err = process.communicate(timeout=30)
    finally:
        process.kill()
    assert process.returncode == 128 + signum
    assert err == f"error: interrupted ({signal.Signals(signum).name})\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["never.fa"]


# -- pipes as inputs ----------------------------------------------------------------------------------

def test_dist_and_search_read_pipes(tmp_path, genomes, refs):
    g0, g1 = genomes[:2]
    result = shell(f"host dist <(cat {g0}) <(cat {g1})", tmp_path)
    assert result.returncode == 0, result.stderr
    rows = result.stdout.splitlines()[2:]
    files = shell(f"host dist {g0} {g1}", tmp_path).stdout.splitlines()[2:]
    assert [r.split("\t")[1:] for r in rows] == [r.split("\t")[1:] for r in files]
    result = shell(f"cat {g1} | host search /dev/stdin --db {refs}", tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[2].split("\t") == ["stdin", "g1.fa", "1"]
    # a sketch file through a pipe is told from a sequence file as a regular one is
    result = shell(f"cat {refs} | host dist /dev/stdin", tmp_path)
    assert result.returncode == 0 and result.stdout.splitlines()[1].split("\t")[1] == "g0.fa"


def test_pipe_errors_name_the_pipe(tmp_path):
    result = shell("echo junk | host dist /dev/stdin", tmp_path)
    assert result.returncode == 2
    assert result.stderr.startswith("error: /dev/stdin: not a FASTA/FASTQ file"), result.stderr


def test_sketch_dash_reads_standard_input(tmp_path, genomes):
    result = shell(f"cat {genomes[0]} | host sketch - {genomes[1]} -o s.sketch", tmp_path)
    assert result.returncode == 0, result.stderr
    sketches = read_sketches(tmp_path / "s.sketch")
    assert sketches.names == ["stdin", "g1.fa"]
    alone = tmp_path / "alone.sketch"
    assert run("sketch", genomes[0], "-o", alone) == 0
    assert (sketches.arrays["registers"][0] == read_sketches(alone).arrays["registers"][0]).all()
