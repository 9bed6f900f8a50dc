"""Nothing lost, third round (issue 44): an output that is an input through a descriptor or a
redirection, a read-only output, closed standard streams, PHYLIP names, long output names,
temporary files of killed runs, the ``--p`` option, and messages that said the wrong thing.

Each refusal: one line ``error: ...``, exit status 2, nothing written. The shell cases run
``python -m host`` in bash, as a user types them (docs/cli.md lists each with its outcome)."""

import os
import re
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import unquote

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from host.io import phylip_name
from host.sketchfile import read_sketches
from tests.cli_helpers import ENV, one_error_line, run, run_status, shell
from tests.genomes import write_related_genomes

@pytest.fixture
def genomes(tmp_path):
    return write_related_genomes(tmp_path, count=3, length=6000, step=0.03, seed=44)


def refused(result: subprocess.CompletedProcess, message: str) -> None:
    assert result.returncode == 2, (result.returncode, result.stderr)
    assert result.stderr == f"error: {message}\n", result.stderr


# -- an output that is an input, through a descriptor or a redirection ------------------------------

@pytest.mark.parametrize("command, victim, message", [
    ("host dist v.sketch -o /dev/fd/3 3<>v.sketch", "v.sketch",
     "/dev/fd/3: file descriptor 3 is also an input (v.sketch)"),
    ("host dist v.sketch -o /proc/self/fd/3 3<>v.sketch", "v.sketch",
     "/proc/self/fd/3: file descriptor 3 is also an input (v.sketch)"),
    ("host dist v.sketch -o fd3 3<>v.sketch", "v.sketch",  # fd3: a symlink to /dev/fd/3
     "fd3: file descriptor 3 is also an input (v.sketch)"),
    ("host sketch v.fa -o /dev/fd/3 3<>v.fa", "v.fa",
     "/dev/fd/3: file descriptor 3 is also an input (v.fa)"),
    ("host dist v.fa -o /dev/stdout >> v.fa", "v.fa",
     "/dev/stdout: standard output is also an input (v.fa)"),
    ("host dist v.fa >> v.fa", "v.fa", "-: standard output is also an input (v.fa)"),
    ("host dist v.fa 1<> v.fa", "v.fa", "-: standard output is also an input (v.fa)"),
    ("host dist - < v.fa >> v.fa", "v.fa",
     "-: standard output is also an input (standard input)"),
    ("host search v.fa --db v.sketch >> v.sketch", "v.sketch",
     "-: standard output is also an input (v.sketch)"),
])
def test_an_input_behind_a_descriptor_is_never_written(tmp_path, genomes, refs, command, victim,
                                                       message):
    (tmp_path / "v.fa").write_bytes(genomes[0].read_bytes())
    (tmp_path / "v.sketch").write_bytes(refs.read_bytes())
    (tmp_path / "fd3").symlink_to("/dev/fd/3")
    before = (tmp_path / victim).read_bytes()
    result = shell(command, tmp_path)
    refused(result, f"{message}; refusing to write into it (send the output elsewhere)")
    assert (tmp_path / victim).read_bytes() == before
    assert not list(tmp_path.glob(".*partial"))


def test_a_descriptor_on_another_file_is_still_written(tmp_path, genomes):
    (tmp_path / "v.fa").write_bytes(genomes[0].read_bytes())
    result = shell("host dist v.fa >> table.tsv && host dist v.fa -o /dev/fd/3 3<>other.tsv",
                   tmp_path)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "table.tsv").read_text().startswith("# kmer-sketch-accel")
    assert (tmp_path / "other.tsv").read_text().startswith("# kmer-sketch-accel")


# -- a read-only output ------------------------------------------------------------------------------

#: runs host.cli.main(argv[2:]) as a user without the right to override file permissions: as
#: root, with CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH dropped (capset(2); dropping needs no
#: privilege); then checks that argv[1] cannot be opened for writing, so that the test tests
#: the refusal and not a permission the process still has
AS_A_USER = r"""
import ctypes, os, sys
if os.geteuid() == 0:
    class Header(ctypes.Structure):
        _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]
    class Data(ctypes.Structure):
        _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32),
                    ("inheritable", ctypes.c_uint32)]
    libc = ctypes.CDLL(None, use_errno=True)
    header, data = Header(0x20080522, 0), (Data * 2)()  # _LINUX_CAPABILITY_VERSION_3
    assert libc.capget(ctypes.byref(header), data) == 0, os.strerror(ctypes.get_errno())
    keep = ~((1 << 1) | (1 << 2)) & 0xFFFFFFFF  # CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH
    data[0].effective &= keep
    data[0].permitted &= keep
    data[0].inheritable &= keep
    assert libc.capset(ctypes.byref(header), data) == 0, os.strerror(ctypes.get_errno())
try:
    os.close(os.open(sys.argv[1], os.O_WRONLY))
    sys.exit("the test process may still write " + sys.argv[1])
except PermissionError:
    pass
from host.cli import main
sys.exit(main(sys.argv[2:]))
"""


def as_a_user(protected: Path, *args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", AS_A_USER, str(protected), *map(str, args)],
                          cwd=protected.parent, env=ENV, capture_output=True, text=True,
                          timeout=120)


@pytest.mark.parametrize("output, arguments", [
    ("ro.tsv", ["dist", "{refs}", "-o", "ro.tsv"]),
    ("ro.sketch", ["sketch", "{g0}", "-o", "ro.sketch"]),
    ("p.phy.params", ["dist", "{refs}", "--format", "phylip", "-o", "p.phy"]),
    ("ro.png", ["dist", "{refs}", "-o", "d.tsv", "--plot", "ro.png"]),
])
def test_a_read_only_output_is_refused_for_a_user(tmp_path, genomes, refs, output, arguments):
    """``echo old > ro.tsv; chmod 444 ro.tsv; dist refs.sketch -o ro.tsv``: refused as mash -o,
    sort -o and the shell's > refuse it; the file, and every other output, unwritten."""
    protected = tmp_path / output
    protected.write_text("old\n")
    protected.chmod(0o444)
    before = sorted(p.name for p in tmp_path.iterdir())
    result = as_a_user(protected, *[a.format(refs=refs, g0=genomes[0]) for a in arguments])
    refused(result, f"{output}: not writable (Permission denied); refusing to replace it "
                    f"(chmod u+w it, or give another output file)")
    assert protected.read_text() == "old\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == before


@pytest.mark.skipif(os.geteuid() != 0, reason="root's own rule; CI runs as root")
def test_root_replaces_a_read_only_output_as_its_shell_would(tmp_path, refs):
    """Root may open any file for writing, so its ``>`` and mash -o replace a 0444 file; so does
    this command line (the check asks the kernel, it does not read the mode bits)."""
    protected = tmp_path / "ro.tsv"
    protected.write_text("old\n")
    protected.chmod(0o444)
    assert run("dist", refs, "-o", protected) == 0
    assert protected.read_text().startswith("# kmer-sketch-accel")
    assert stat.S_IMODE(protected.stat().st_mode) == 0o444


# -- closed standard streams ------------------------------------------------------------------------

def test_closed_standard_error_keeps_messages_out_of_the_data(tmp_path, genomes):
    (tmp_path / "empty.fa").write_bytes(b"")
    result = shell(f"host dist empty.fa {genomes[1]} 2>&- > w.tsv", tmp_path)
    assert result.returncode == 0
    table = (tmp_path / "w.tsv").read_text()
    assert "warning" not in table and table.splitlines()[-1].startswith(f"{genomes[1].name}\t")
    result = shell("host dist missing.fa 2>&- > e.tsv", tmp_path)  # an error, not in the data
    assert result.returncode == 2 and (tmp_path / "e.tsv").read_text() == ""


@pytest.mark.parametrize("command, message", [
    ("host dist - {g1} <&-", "-: standard input is closed; nothing to read"),
    ("host sketch - -o s.sketch <&-", "-: standard input is closed; nothing to read"),
    ("host dist /dev/stdin {g1} <&-", "/dev/stdin: standard input is closed; nothing to read"),
    ("host dist {g1} >&-", "-: standard output is closed; nowhere to write"),
    ("host dist {g1} -o /dev/fd/1 >&-", "/dev/fd/1: standard output is closed; nowhere to "
                                        "write"),
    ("cat {g1} | host dist - -", "-: standard input given twice as input; it can be read once "
                                 "(give each genome once)"),
])
def test_closed_or_doubled_standard_streams_are_named(tmp_path, genomes, command, message):
    refused(shell(command.format(g1=genomes[1]), tmp_path), message)
    assert not (tmp_path / "s.sketch").exists()


# -- PHYLIP names -------------------------------------------------------------------------------------

@given(st.text(max_size=30))
@settings(max_examples=300, deadline=None)
def test_phylip_names_round_trip(name):
    written = phylip_name(name)
    assert unquote(written, errors="surrogateescape") == name
    assert not any(c.isspace() or c in "(),:;[]'" for c in written)


@pytest.mark.parametrize("command", ["dist", "jsd"])
def test_phylip_names_the_format_cannot_hold_are_encoded(tmp_path, genomes, command):
    names = ["an other.fa", "100%.fa", "x(1):y;z,w[2]'.fa"]
    for name, genome in zip(names, genomes):
        (tmp_path / name).write_bytes(genome.read_bytes())
    out = tmp_path / "p.phy"
    options = ["--k", 21] if command == "jsd" else []
    assert run(command, *[tmp_path / n for n in names], *options, "--format", "phylip",
               "-o", out) == 0
    lines = out.read_text().splitlines()
    assert lines[0] == "3"
    assert [line.split()[0] for line in lines[1:]] == \
        ["an%20other.fa", "100%25.fa", "x%281%29%3Ay%3Bz%2Cw%5B2%5D%27.fa"]
    assert all(len(line.split()) == 4 for line in lines[1:])
    assert [unquote(line.split()[0]) for line in lines[1:]] == names


# -- long output names, temporary files of killed runs ----------------------------------------------

@pytest.mark.parametrize("length", [254, 255])
def test_an_output_name_up_to_the_file_system_limit_is_written(tmp_path, genomes, length):
    out = tmp_path / ("d" * (length - 4) + ".tsv")
    assert run("dist", genomes[0], "-o", out) == 0
    assert out.read_text().startswith("# kmer-sketch-accel")
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([*(g.name for g in genomes),
                                                                 out.name])


def test_an_output_name_beyond_the_limit_is_one_line(tmp_path, genomes, capsys):
    out = tmp_path / ("d" * 252 + ".tsv")
    assert run("dist", genomes[0], "-o", out) == 2
    assert f"error: {out}: " in one_error_line(capsys)


def blocked_run(tmp_path: Path, fifo: str, out: str) -> subprocess.Popen:
    """``sketch FIFO -o OUT``, waiting on a FIFO nobody writes, once its temporary file exists."""
    os.mkfifo(tmp_path / fifo)
    before = set(tmp_path.glob(f".{out}.*.partial"))
    process = subprocess.Popen([sys.executable, "-m", "host", "sketch", fifo, "-o", out],
                               cwd=tmp_path, env=ENV, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while not set(tmp_path.glob(f".{out}.*.partial")) - before:
        assert time.monotonic() < deadline and process.poll() is None
        time.sleep(0.05)
    return process


def test_a_killed_runs_temporary_file_is_removed_by_the_next_run(tmp_path, genomes):
    killed = blocked_run(tmp_path, "never.fa", "out.sketch")
    killed.kill()  # SIGKILL: no clean-up
    killed.wait()
    stale = set(tmp_path.glob(".out.sketch.*.partial"))
    assert len(stale) == 1
    live = blocked_run(tmp_path, "never2.fa", "out.sketch")
    try:
        mine = set(tmp_path.glob(".out.sketch.*.partial")) - stale
        # files like ours that are not provably ours and stale
        old_format = tmp_path / ".out.sketch.abc_1234.partial"  # an earlier version's: no lock
        old_format.write_bytes(b"")
        link = tmp_path / ".out.sketch.0123456789ab.partial"
        link.symlink_to(genomes[0])
        others = [old_format, link]
        if os.geteuid() == 0:  # another user's
            foreign = tmp_path / ".out.sketch.ba9876543210.partial"
            foreign.write_bytes(b"")
            os.chown(foreign, 65534, 65534)
            others.append(foreign)
        assert run("sketch", genomes[0], "-o", tmp_path / "out.sketch") == 0
        left = set(tmp_path.glob(".out.sketch.*.partial"))
        assert left == mine | set(others)  # the stale one gone, the live run's kept
        assert read_sketches(tmp_path / "out.sketch").names == ["g0.fa"]
        live.send_signal(signal.SIGTERM)
        assert live.wait(timeout=30) == -signal.SIGTERM     # died of it (issue 51)
        assert set(tmp_path.glob(".out.sketch.*.partial")) == set(others)
    finally:
        live.kill()


# -- --p ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("command", [["sketch", "{g0}", "-o", "{out}"], ["dist", "{g0}"],
                                     ["search", "{g0}", "--db", "{refs}"], ["jsd", "{g0}"],
                                     ["motifs", "--test", "{g0}", "--control", "{g1}"]])
def test_double_dash_p_is_refused_as_ambiguous(tmp_path, genomes, refs, capsys, command):
    out = tmp_path / "x.sketch"
    args = [a.format(g0=genomes[0], g1=genomes[1], refs=refs, out=out) for a in command]
    capsys.readouterr()
    assert run_status(*args, "--p", 10) == 2
    assert one_error_line(capsys).startswith(
        "error: --p: ambiguous, so refused: give -p N (--threads N) for threads, or "
        "--index-bits P for the HLL index bits (2^P registers)")
    assert not out.exists()


def test_help_says_which_option_is_which(tmp_path, genomes):
    from host.cli import build_parser
    text = " ".join(build_parser()._subparsers._group_actions[0].choices["sketch"]
                    .format_help().split())
    assert "-p N, --threads N threads of the sw backend (Mash's -p)" in text
    assert "--p [P] refused as ambiguous" in text
    assert "--index-bits P HLL index bits: 2^P registers of w bits per sketch (not -p, " \
           "threads)" in text
    out = tmp_path / "s.sketch"
    assert run("sketch", genomes[0], "-p", 2, "--index-bits", 10, "-o", out) == 0
    assert read_sketches(out).params["p"] == 10


# -- messages ---------------------------------------------------------------------------------------

def test_a_sketch_file_named_as_sequence_is_named_a_sketch(tmp_path, refs, capsys):
    renamed = tmp_path / "renamed.fa"
    renamed.write_bytes(refs.read_bytes())
    assert run("sketch", renamed, "-o", tmp_path / "x.sketch") == 2
    assert one_error_line(capsys) == (
        f"error: {renamed}: a sketch file, not a FASTA/FASTQ file (sketch reads sequence "
        f"files; dist, search and jsd read sketch files too)\n")
    assert run("dist", renamed, "-o", tmp_path / "d.tsv") == 0  # told by content, not name


@pytest.mark.parametrize("compression, tool", [("gzip", "gzip"), ("bzip2", "bzip2"),
                                               ("xz", "xz")])
def test_a_compressed_sketch_is_named_as_such(tmp_path, genomes, refs, capsys, compression,
                                              tool):
    import bz2
    import gzip
    import lzma
    compress = {"gzip": gzip.compress, "bzip2": bz2.compress, "xz": lzma.compress}[compression]
    packed = tmp_path / "refs.sketch.z"
    packed.write_bytes(compress(refs.read_bytes()))
    article = "an" if compression == "xz" else "a"
    expected = (f"error: {packed}: {article} {compression}-compressed sketch file; sketch files "
                f"are read uncompressed: decompress it first ({tool} -d)\n")
    for args in (["info", packed], ["merge", packed, "-o", tmp_path / "m.sketch"],
                 ["search", genomes[0], "--db", packed], ["dist", packed, genomes[1]],
                 ["sketch", packed, "-o", tmp_path / "s.sketch"]):
        assert run(*args) == 2, args
        assert one_error_line(capsys) == expected, args
    assert not (tmp_path / "m.sketch").exists() and not (tmp_path / "s.sketch").exists()


def test_one_file_name_in_two_folders_names_both_by_path(tmp_path, genomes, monkeypatch):
    """docs/cli.md: genomes are named by file name, by path where file names collide; so also
    between a sketch file's genome and a sequence file."""
    monkeypatch.chdir(tmp_path)
    for folder, genome in (("a", genomes[0]), ("b", genomes[1])):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "x.fa").write_bytes(genome.read_bytes())
    assert run("sketch", "a/x.fa", "-o", "a.sketch") == 0
    assert run("sketch", "b/x.fa", "-o", "b.sketch") == 0
    assert run("dist", "a.sketch", "b/x.fa", "-o", "d.tsv") == 0
    assert (tmp_path / "d.tsv").read_text().splitlines()[1] == "#genome\ta/x.fa\tb/x.fa"
    # the same file, once sketched and once as sequence, is still one genome given twice
    for args, source in ((["a.sketch", "a/x.fa"], "a/x.fa"),
                         (["a.sketch", "b.sketch", "b/x.fa"], "b/x.fa")):
        result = shell(f"host dist {' '.join(args)}", tmp_path)
        assert result.returncode == 2 and result.stderr.startswith(f"error: {source}: genome ")
        assert "give each genome once" in result.stderr


def test_cr_only_line_ends_and_rna_get_a_warning_that_says_why(tmp_path, genomes, capsys):
    """SPEC 1 is unchanged (CR ignored, U breaks the window as N does): the warning names the
    cause, and the RNA file sketches exactly as the same file with N for U."""
    text = genomes[0].read_bytes()
    cr_only = tmp_path / "mac.fa"
    cr_only.write_bytes(text.replace(b"\n", b"\r"))
    rna, as_n = tmp_path / "rna.fa", tmp_path / "n.fa"
    header, sequence = text.split(b"\n", 1)
    rna.write_bytes(header + b"\n" + sequence.replace(b"T", b"U"))
    as_n.write_bytes(header + b"\n" + sequence.replace(b"T", b"N"))
    capsys.readouterr()
    assert run("sketch", cr_only, rna, "-o", tmp_path / "s.sketch") == 0
    err = capsys.readouterr().err
    assert err.startswith("warning: 2 inputs have no k-mers: ") and err.count("\n") == 1
    assert (f"{cr_only}: no k-mer of length 31: its lines end in CR alone (classic Mac OS), "
            f"so the whole file is one header line (lines end at LF, CR is ignored: SPEC 1); "
            f"convert first: tr '\\r' '\\n'") in err
    assert (f"{rna}: no k-mer of length 31: it is RNA: U is no k-mer base (it breaks the k-mer "
            f"window as N does: SPEC 1); convert to DNA first: sed '/^>/!y/Uu/Tt/'") in err
    # a longer RNA keeps a few k-mers: no "no k-mer" warning, but one that says why
    import random
    rng = random.Random(44)
    long_rna = tmp_path / "long.fa"
    long_rna.write_bytes(b">r\n" + bytes(rng.choice(b"ACGU") for _ in range(200_000)) + b"\n")
    long_n = tmp_path / "long_n.fa"
    long_n.write_bytes(long_rna.read_bytes().replace(b"U", b"N"))
    assert run("sketch", long_rna, long_n, as_n, rna, "-o", tmp_path / "l.sketch") == 0
    err = capsys.readouterr().err
    assert err.startswith("warning: 3 inputs have no or almost no k-mers: ")
    assert re.search(rf"{long_rna}: almost no k-mers \(~\d+ distinct in 200,004 bytes\): it "
                     rf"is RNA", err), err
    assert f"{as_n}: no k-mer of length 31; " in err  # N: no cause to name
    sketches = read_sketches(tmp_path / "l.sketch").registers()
    assert sketches[0].any() and (sketches[0] == sketches[1]).all()
    assert (sketches[2] == sketches[3]).all()
