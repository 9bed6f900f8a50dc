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

from host.sketchfile import read_sketches
from tests.cli_helpers import interruptible, one_error_line, run, shell
from tests.genomes import write_related_genomes

ROOT = Path(__file__).resolve().parent.parent
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}


@pytest.fixture
def genomes(tmp_path):
    return write_related_genomes(tmp_path, count=3, length=6000, step=0.03, seed=37)


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
    (["dist", "{refs}", "--index-bits", "12"], "--index-bits"),
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
    ("pqa", "--index-bits", 12, "hll"), ("pqa", "--w", 5, "hll"), ("pqa", "--min-count", 2, "hll"),
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
    signal comes: the hidden .partial file goes, one line names the signal, and the process
    dies of the signal itself (issue 51: the shell sees 128 + n, and a loop ends on Ctrl-C)."""
    fifo = tmp_path / "never.fa"
    os.mkfifo(fifo)
    out = tmp_path / "out.sketch"
    process = subprocess.Popen([sys.executable, "-m", "host", "sketch", str(fifo), "-o", str(out)],
                               cwd=tmp_path, env=ENV, stderr=subprocess.PIPE, text=True,
                               preexec_fn=interruptible)
    try:
        deadline = time.monotonic() + 60
        while not list(tmp_path.glob(".out.sketch.*.partial")):
            assert time.monotonic() < deadline and process.poll() is None
            time.sleep(0.05)
        process.send_signal(signum)
        _, err = process.communicate(timeout=30)
    finally:
        process.kill()
    assert process.returncode == -signum
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
    # given as -, standard input is named as the user typed it, in errors and warnings
    result = shell("echo junk | host dist - ", tmp_path)
    assert result.returncode == 2
    assert result.stderr == "error: -: not a FASTA/FASTQ file (first character is b'j', " \
                            "expected '>' or '@')\n", result.stderr
    result = shell("printf '>a\\nACGT\\n' | host sketch - -o s.sketch", tmp_path)
    assert result.returncode == 0 and result.stderr == "warning: -: no k-mer of length 31\n", \
        result.stderr


def test_sketch_dash_reads_standard_input(tmp_path, genomes):
    result = shell(f"cat {genomes[0]} | host sketch - {genomes[1]} -o s.sketch", tmp_path)
    assert result.returncode == 0, result.stderr
    sketches = read_sketches(tmp_path / "s.sketch")
    assert sketches.names == ["stdin", "g1.fa"]
    alone = tmp_path / "alone.sketch"
    assert run("sketch", genomes[0], "-o", alone) == 0
    assert (sketches.registers()[0] == read_sketches(alone).registers()[0]).all()


# -- messages -------------------------------------------------------------------------------------

def test_full_disk_names_the_output(tmp_path, genomes, capsys, monkeypatch):
    """A write into the hidden .partial file fails as on a full file system (ENOSPC carries no
    file name): the message names the output, nothing is left behind."""
    import host.outputs
    from tests.cli_helpers import FullDisk

    real_fdopen = host.outputs.os.fdopen
    monkeypatch.setattr(host.outputs.os, "fdopen", lambda *a, **k: FullDisk(real_fdopen(*a, **k)))
    out = tmp_path / "d.sketch"
    assert run("sketch", *genomes, "-o", out) == 2
    assert f"error: {out}: No space left on device" in one_error_line(capsys)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(p.name for p in genomes)


def test_threshold_zero_is_refused_as_help_says(genomes, capsys):
    from host.cli import build_parser
    help_text = build_parser()._subparsers._group_actions[0].choices["dist"].format_help()
    assert "Jaccard or containment >= H (0 < H <= 1)" in " ".join(help_text.split())
    assert run("dist", *genomes, "--format", "edges", "--threshold", 0) == 2
    assert ("error: --threshold: must be a Jaccard value above 0, at most 1, not 0 (every pair: "
            "leave --threshold out)") in one_error_line(capsys)
    assert run("dist", *genomes, "--format", "edges", "--threshold", 1e-9) == 0


@pytest.mark.parametrize("options, message", [
    (["--growth", "0"], "--growth: must be a multiple of 1/256 from 1/256 to 65535/256, not 0"),
    (["--growth", "1/1000"], "--growth: must be a multiple of 1/256 from 1/256 to 65535/256, "
                             "not 1/1000"),
    (["--store-sets", "3"], "--store-sets: must be a power of two, not 3"),
    (["--kmin", "12", "--kmax", "10"], "--kmin: must not exceed --kmax"),
])
def test_motif_messages_use_the_options_words(genomes, capsys, options, message):
    assert run("motifs", "--test", genomes[0], "--control", genomes[1], "--kmin", 8, "--kmax", 8,
               *options) == 2
    err = one_error_line(capsys)
    assert err.startswith(f"error: {message}"), err
    assert "Fraction" not in err and "store_sets" not in err and "kmin " not in err


def test_min_count_warning_says_why(tmp_path, genomes, capsys):
    # a FASTA genome is filtered only when asked (--min-count applies to FASTQ reads)
    assert run("sketch", genomes[0], "--min-count", 255, "--min-count-fasta",
               "-o", tmp_path / "m.sketch") == 0
    assert capsys.readouterr().err == (f"warning: {genomes[0]}: no k-mer of length 31 seen at "
                                       f"least 255 times (--min-count 255)\n")


# -- genomes of one file name from different files ---------------------------------------------------

def test_merge_names_same_named_files_by_path_and_renames(tmp_path, genomes, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for directory, genome in (("a", genomes[0]), ("b", genomes[1])):
        (tmp_path / directory).mkdir()
        (tmp_path / directory / "x.fa").write_bytes(genome.read_bytes())
        assert run("sketch", f"{directory}/x.fa", "-o", f"{directory}.sketch") == 0
    assert run("merge", "a.sketch", "b.sketch", "-o", "ab.sketch") == 0
    assert read_sketches(tmp_path / "ab.sketch").names == ["a/x.fa", "b/x.fa"]
    assert run("merge", "a.sketch", "b.sketch", "--rename", "a/x.fa=A", "--rename", "b/x.fa=B",
               "-o", "named.sketch") == 0
    assert read_sketches(tmp_path / "named.sketch").names == ["A", "B"]
    assert run("dist", "a.sketch", "b.sketch", "-o", "d.tsv") == 0
    assert (tmp_path / "d.tsv").read_text().splitlines()[1] == "#genome\ta/x.fa\tb/x.fa"
    capsys.readouterr()
    # one file sketched twice is still one genome given twice
    assert run("merge", "a.sketch", "a.sketch", "-o", "aa.sketch") == 2
    assert "occurs twice (is the file given twice?)" in one_error_line(capsys)
    assert run("merge", "a.sketch", "b.sketch", "--rename", "zz=B", "-o", "z.sketch") == 2
    assert "--rename: no genome named 'zz' in the inputs (names: a/x.fa, b/x.fa)" in \
        one_error_line(capsys)


def test_forked_child_keeps_default_signals_and_spares_the_parent(tmp_path):
    """A child forked while a command runs (multiprocessing with fork) dies of SIGTERM as usual,
    and its signal does not end the parent through the shared wakeup pipe."""
    script = """
import os, signal, time
from host.interrupts import ending_signals
with ending_signals(lambda: None):
    pid = os.fork()
    if pid == 0:
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(2)
        os._exit(0)
    _, status = os.waitpid(pid, 0)
    time.sleep(0.5)
print("child", os.WTERMSIG(status) if os.WIFSIGNALED(status) else "exited")
"""
    result = subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=ENV,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout == f"child {int(signal.SIGTERM)}\n"


def test_sketch_files_through_pipes(tmp_path, genomes, refs):
    """A sketch file is a zip archive, read by seeking: search --db, info and merge copy a pipe
    first, and name it as given."""
    result = shell(f"host search {genomes[0]} --db <(cat {refs})", tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[2].split("\t") == ["g0.fa", "g0.fa", "1"]
    result = shell(f"cat {refs} | host info /dev/stdin", tmp_path)
    assert result.returncode == 0 and result.stdout.startswith("/dev/stdin: 3 hll sketches")
    result = shell(f"cat {refs} | host merge /dev/stdin -o m.sketch", tmp_path)
    assert result.returncode == 0, result.stderr
    assert read_sketches(tmp_path / "m.sketch").names == ["g0.fa", "g1.fa", "g2.fa"]
    result = shell("echo junk | host info /dev/stdin", tmp_path)
    assert result.returncode == 2 and result.stderr.startswith("error: /dev/stdin: not a sketch")


def test_interrupt_while_starting_is_one_line():
    """Ctrl-C while the modules load (before main can catch it): one line, no traceback, and
    the process dies of SIGINT. The interrupt is raised by the import of host.cli itself."""
    script = """
import sys

class Interrupting:
    def find_spec(self, name, path=None, target=None):
        if name == "host.cli":
            raise KeyboardInterrupt
        return None

sys.meta_path.insert(0, Interrupting())
from host.__main__ import run
run()
"""
    result = subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=ENV,
                            capture_output=True, text=True, timeout=60)
    assert result.stderr == "error: interrupted (SIGINT)\n"
    assert result.returncode == -signal.SIGINT     # died of it, as Unix tools do (issue 51)
