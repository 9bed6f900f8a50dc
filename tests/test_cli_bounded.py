"""Bounded and interruptible (issue 51): streams read as streams, signals handled as Unix tools
handle them, standard error never written into an input, output names ending in ``/`` refused,
a closed standard error ending the command quietly, and the messages of items 7 and 8.

Each test names what the code before issue 51 did (it fails there); docs/cli.md's issue-51
table lists them. Processes run with TMPDIR set to an empty directory of the test's own, so
that "nothing left in TMPDIR" is checked, not assumed.
"""

import contextlib
import os
import shutil
import signal
import socket
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from host.sketchfile import read_sketches
from tests.cli_helpers import ENV, interruptible, one_error_line, run
from tests.test_cli_safety import genomes  # noqa: F401  (a fixture; refs is conftest.py's)

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def tmpdir_env(tmp_path):
    """The environment of a child process whose TMPDIR is an empty directory of its own."""
    directory = tmp_path / "tmpdir"
    directory.mkdir()
    return directory, {**ENV, "TMPDIR": str(directory)}


def host(*args, env, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "host", *map(str, args)], env=env,
                          capture_output=True, text=True, timeout=120, **kwargs)


def wait_for(condition, process=None, limit=60.0):
    deadline = time.monotonic() + limit
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        assert process is None or process.poll() is None, process.communicate()
        time.sleep(0.02)


# -- item 1: streams read as streams ------------------------------------------------------------

@pytest.mark.parametrize("arguments", [["dist", "/dev/zero", "{g0}"],
                                       ["search", "{g0}", "--db", "/dev/zero"],
                                       ["info", "/dev/zero"], ["merge", "/dev/zero", "-o", "m"],
                                       ["screen", "/dev/zero", "{g0}"],
                                       ["jsd", "/dev/zero", "{g0}"],
                                       ["cluster", "/dev/zero", "{g0}"]])
def test_an_endless_device_is_refused_at_its_first_bytes(tmp_path, genomes, tmpdir_env,
                                                         arguments):
    """Before: copied into TMPDIR in full first (9.6 GB in 60 s for dist; 11.4 GB in 15 s for
    search --db). Now its first bytes tell it is neither a sketch nor a sequence file."""
    directory, env = tmpdir_env
    result = host(*(a.format(g0=genomes[0]) for a in arguments), env=env, cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.startswith("error: /dev/zero: not a "), result.stderr
    assert result.stderr.count("\n") == 1
    assert list(directory.iterdir()) == []


@pytest.mark.parametrize("arguments", [["sketch", "-l", "/dev/zero", "-o", "x.sketch"],
                                       ["motifs", "--test", "/dev/zero", "--control", "{g0}"],
                                       ["cluster", "{g0}", "{g1}", "--order", "/dev/zero"],
                                       ["cluster", "{g0}", "{g1}", "--quality", "/dev/zero"]])
def test_lists_order_files_and_motif_inputs_are_bounded(tmp_path, genomes, tmpdir_env,
                                                        arguments):
    """Before: read whole into memory, at about 2 GB/s, until killed."""
    _, env = tmpdir_env
    result = host(*(a.format(g0=genomes[0], g1=genomes[1]) for a in arguments), env=env,
                  cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.startswith("error: /dev/zero: ") and "NUL byte at offset 0" in \
        result.stderr, result.stderr


def test_a_quality_table_keeps_only_the_rows_of_the_run(tmp_path, genomes):
    """--quality: rows of genomes the run does not have are read past, not held (a project's
    CheckM2 report covers more bins than one run clusters), even when they repeat a name; a
    run's genome named twice is still refused."""
    names = [Path(g).name.split(".")[0] for g in genomes[:2]]
    table = tmp_path / "quality_report.tsv"
    rows = [f"{name}\t{90 + i}\t1.0" for i, name in enumerate(names)]
    rows += [f"other{i % 7}\t50\t2.0" for i in range(1000)]
    table.write_text("Name\tCompleteness\tContamination\n" + "\n".join(rows) + "\n")
    assert run("cluster", *genomes[:2], "--quality", table, "-o", tmp_path / "c.tsv") == 0
    table.write_text(table.read_text() + f"{names[1]}\t80\t1.0\n")
    assert run("cluster", *genomes[:2], "--quality", table, "-o", tmp_path / "d.tsv") == 2
    assert not (tmp_path / "d.tsv").exists()


def test_a_list_line_without_end_is_refused_at_its_limit(tmp_path, genomes, capsys):
    endless = tmp_path / "endless.txt"
    endless.write_bytes(b"x" * 70_000)
    assert run("dist", "-l", endless) == 2
    assert f"{endless}: line 1: longer than 65,536 bytes, not a list of paths" in \
        one_error_line(capsys)
    listed = tmp_path / "twice.txt"
    listed.write_text(f"{genomes[0]}\n{genomes[1]}\n{genomes[0]}\n")
    assert run("dist", "-l", listed) == 2
    assert f"{listed}: line 3: {genomes[0]}: listed twice (also line 1)" in one_error_line(capsys)


@pytest.mark.parametrize("kind", ["plain", "gzip", "pipe"])
def test_a_genome_held_whole_is_bounded(tmp_path, monkeypatch, capsys, kind):
    """The backends that take whole genomes (here golden) hold at most host.io.WHOLE_FILE_LIMIT
    bytes of one file (set to 64 KiB here): before, ``(echo '>a'; yes ACGT) | sketch -
    --backend golden`` grew by about 200 MB a second until memory ran out."""
    import gzip
    import host.io
    monkeypatch.setattr(host.io, "WHOLE_FILE_LIMIT", 1 << 16)
    text = b">a\n" + b"ACGTTGCAAC\n" * 7_000           # 77 kB
    out = tmp_path / "a.sketch"
    if kind == "pipe":
        read_end, write_end = os.pipe()
        def feed():
            with open(write_end, "wb") as writer:
                with contextlib.suppress(BrokenPipeError):
                    writer.write(text)
        feeder = threading.Thread(target=feed)
        feeder.start()
        source = f"/dev/fd/{read_end}"
    else:
        source = tmp_path / "a.fa"
        source.write_bytes(gzip.compress(text) if kind == "gzip" else text)
    try:
        assert run("sketch", source, "--backend", "golden", "-o", out) == 2
    finally:
        if kind == "pipe":
            os.close(read_end)
            feeder.join()
    assert one_error_line(capsys) == (f"error: {source}: more than 64 KiB of sequence "
                                      f"in one file, which this backend holds whole (the sw "
                                      f"backend, the default, reads files of any size as they "
                                      f"come)\n")
    assert not out.exists()
    monkeypatch.setattr(host.io, "WHOLE_FILE_LIMIT", len(text))
    if kind != "pipe":
        assert run("sketch", source, "--backend", "golden", "-o", out) == 0


@pytest.mark.parametrize("option, output", [("--order", "-o"), ("--order", "--reps"),
                                            ("--quality", "-o"), ("--quality", "--plot")])
def test_an_order_file_or_quality_table_is_never_an_output(tmp_path, refs, genomes, capsys,
                                                           option, output):
    """Before: ``cluster refs --order order.txt -o order.txt`` (or ``--quality q.tsv``, or
    ``--reps``) replaced the file it read, exit 0."""
    table = tmp_path / "table.txt"
    if option == "--order":
        table.write_text("".join(f"{Path(g).name}\n" for g in reversed(genomes)))
    else:
        table.write_text("genome\tcompleteness\tcontamination\n"
                         + "".join(f"{Path(g).stem}\t90\t1\n" for g in genomes))
    before = table.read_bytes()
    extra = ["-o", tmp_path / "c.tsv"] if output != "-o" else []
    assert run("cluster", refs, option, table, output, table, *extra) == 2
    assert one_error_line(capsys) == (f"error: {table}: is also an input; refusing to overwrite "
                                      f"it (give another output file)\n")
    assert table.read_bytes() == before


def test_pipes_are_read_once_and_nothing_is_left_in_tmpdir(tmp_path, genomes, tmpdir_env):
    """A sequence stream is read as it arrives, a sketch file through a pipe spooled into an
    unlinked file: while the command runs, TMPDIR holds no name; the results equal those of the
    files."""
    directory, env = tmpdir_env
    two = tmp_path / "two.sketch"
    assert run("sketch", *genomes[:2], "-o", two) == 0
    files = host("dist", two, genomes[2], env=env).stdout.splitlines()
    script = (f"cat {two} | {sys.executable} -m host dist - <(cat {genomes[2]}; sleep 2) "
              f"& sleep 1; ls -A {directory}; wait")
    result = subprocess.run(["bash", "-c", script], env=env, capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("# kmer-sketch-accel")     # ls printed nothing before it
    assert len(lines) == len(files) == 5
    assert [line.split("\t")[1:] for line in lines[2:]] == \
        [line.split("\t")[1:] for line in files[2:]]
    assert list(directory.iterdir()) == []


def test_a_pipe_sketch_longer_than_its_header_states_is_refused(tmp_path, refs, tmpdir_env):
    directory, env = tmpdir_env
    result = subprocess.run(["bash", "-c", f"(cat {refs}; head -c 10000000 /dev/zero) | "
                                           f"{sys.executable} -m host info -"],
                            env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 2
    assert result.stderr.startswith("error: -: damaged sketch file (goes on past the ")
    assert list(directory.iterdir()) == []


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_while_a_pipe_is_spooled_leaves_nothing_in_tmpdir(tmp_path, refs, tmpdir_env,
                                                                    signum):
    """Before: 112 MB left in TMPDIR after Ctrl-C on ``bzcat big | dist - refs.sketch``."""
    directory, env = tmpdir_env
    fifo = tmp_path / "slow.sketch"
    os.mkfifo(fifo)
    process = subprocess.Popen([sys.executable, "-m", "host", "info", str(fifo)], env=env,
                               stderr=subprocess.PIPE, text=True, preexec_fn=interruptible)
    writer = open(fifo, "wb")
    try:
        data = refs.read_bytes()
        writer.write(data[:len(data) // 2])     # half a sketch file: the spool is under way
        writer.flush()
        time.sleep(0.5)
        process.send_signal(signum)
        _, err = process.communicate(timeout=60)
    finally:
        writer.close()
        process.kill()
    assert process.returncode == -signum
    assert err == f"error: interrupted ({signal.Signals(signum).name})\n"
    assert list(directory.iterdir()) == []


def test_workers_refuse_a_stream(tmp_path, genomes, capsys):
    assert run("dist", "/dev/stdin", genomes[0], "--workers", 1) == 2
    assert "/dev/stdin: a pipe or descriptor, which only this process can read" in \
        one_error_line(capsys)


# -- item 2: signals ----------------------------------------------------------------------------

def test_nohup_keeps_sighup_ignored_and_the_work_finishes(tmp_path, genomes):
    """Before: nohup ... sketch &, then kill -HUP: exit 129, nothing written."""
    fifo = tmp_path / "later.fa"
    os.mkfifo(fifo)
    out = tmp_path / "out.sketch"
    process = subprocess.Popen(["nohup", sys.executable, "-m", "host", "sketch", str(fifo),
                                "-o", str(out)], env=ENV, cwd=tmp_path,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        writer = open(fifo, "wb")      # the command has opened its end: it runs
        wait_for(lambda: list(tmp_path.glob(".out.sketch.*.partial")), process)
        process.send_signal(signal.SIGHUP)
        time.sleep(0.3)
        writer.write(genomes[0].read_bytes())
        writer.close()
        process.communicate(timeout=60)
    finally:
        process.kill()
    assert process.returncode == 0
    assert read_sketches(out).names == ["later.fa"]


def test_a_trapped_sigterm_stays_ignored(tmp_path, genomes):
    """``(trap '' TERM; exec ...)``: before, SIGTERM ended the command anyway."""
    fifo = tmp_path / "later.fa"
    os.mkfifo(fifo)
    out = tmp_path / "out.sketch"
    process = subprocess.Popen(["bash", "-c", f"trap '' TERM; exec {sys.executable} -m host "
                                              f"sketch {fifo} -o {out}"], env=ENV, cwd=tmp_path,
                               stderr=subprocess.PIPE, text=True)
    try:
        writer = open(fifo, "wb")
        wait_for(lambda: list(tmp_path.glob(".out.sketch.*.partial")), process)
        process.send_signal(signal.SIGTERM)
        time.sleep(0.3)
        writer.write(genomes[0].read_bytes())
        writer.close()
        _, err = process.communicate(timeout=60)
    finally:
        process.kill()
    assert process.returncode == 0, err
    assert out.exists()


def test_ctrl_c_ends_a_shell_loop(tmp_path, genomes):
    """Ctrl-C (SIGINT to the foreground process group) during the first of three commands of a
    bash loop: the command dies of SIGINT, so bash ends the loop. Before, the command exited
    with status 130 and bash ran the next two."""
    loop = (f"for i in 1 2 3; do (cat {genomes[0]}; sleep 3) | {sys.executable} -m host "
            f"sketch - -o $i.sketch; echo \"done $i: $?\"; done")
    process = subprocess.Popen(["bash", "-c", loop], cwd=tmp_path, env=ENV,
                               start_new_session=True, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True,
                               preexec_fn=interruptible)
    try:
        wait_for(lambda: list(tmp_path.glob(".1.sketch.*.partial")), process)
        os.killpg(process.pid, signal.SIGINT)
        out, err = process.communicate(timeout=60)
    finally:
        with pytest.raises(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
    assert err == "error: interrupted (SIGINT)\n"
    assert out == "" and process.returncode == -signal.SIGINT
    assert not list(tmp_path.glob("*.sketch"))


# -- item 3: standard error never writes into an input ------------------------------------------

@pytest.mark.parametrize("case", ["refused output", "warning", "usage error"])
def test_standard_error_on_an_input_writes_nothing_into_it(tmp_path, genomes, case):
    """``dist s2.fa x.fa -o /dev/stderr 2>> s2.fa`` wrote its refusal into s2.fa; ``dist
    empty.fa s1.fa 2>> s1.fa`` appended its warning to s1.fa. Now messages go nowhere; the
    exit status still says what happened."""
    victim = genomes[1]
    before = victim.read_bytes()
    empty = tmp_path / "empty.fa"
    empty.write_bytes(b"")
    arguments = {"refused output": ["dist", victim, genomes[0], "-o", "/dev/stderr"],
                 "warning": ["dist", empty, victim],
                 "usage error": ["dist", victim, "--no-such-option"]}[case]
    with open(victim, "ab") as error_stream:
        result = subprocess.run([sys.executable, "-m", "host", *map(str, arguments)], env=ENV,
                                stdout=subprocess.DEVNULL, stderr=error_stream, timeout=120)
    assert result.returncode == (0 if case == "warning" else 2)
    assert victim.read_bytes() == before


# -- item 4: output names ending in '/'; a closed standard error --------------------------------

@pytest.mark.parametrize("arguments", [["dist", "{g0}", "{g1}", "-o", "keep.txt/"],
                                       ["sketch", "{g0}", "-o", "results/"],
                                       ["merge", "{refs}", "-o", "keep.txt/"],
                                       ["cluster", "{g0}", "{g1}", "--reps", "x/"],
                                       ["dist", "{g0}", "{g1}", "-o", "keep.txt/."]])
def test_an_output_name_ending_in_a_slash_is_refused(tmp_path, genomes, refs, capsys,
                                                     monkeypatch, arguments):
    """Before: ``-o keep.txt/`` replaced keep.txt, ``-o results/`` made a file ``results``."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "keep.txt").write_text("kept\n")
    assert run(*(a.format(g0=genomes[0], g1=genomes[1], refs=refs) for a in arguments)) == 2
    name = arguments[-1]
    assert f"error: {name}: not a directory, and an output file name cannot end in " in \
        one_error_line(capsys)
    assert (tmp_path / "keep.txt").read_text() == "kept\n"
    assert not (tmp_path / "results").exists() and not (tmp_path / "x").exists()


@pytest.mark.parametrize("arguments", [["dist", "{empty}", "{g0}", "-o", "{out}"],
                                       ["dist", "{missing}", "{g0}"],
                                       ["dist", "{g0}", "{g1}"]])
def test_a_closed_standard_error_ends_the_command_quietly(tmp_path, genomes, arguments):
    """Standard error a pipe whose reader has gone (``2>&1 | head -0``): status 141, as a
    process killed by SIGPIPE. Before: an attempted BrokenPipeError traceback and status 1."""
    empty = tmp_path / "empty.fa"
    empty.write_bytes(b"")
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        result = subprocess.run([sys.executable, "-m", "host", *(
            a.format(empty=empty, g0=genomes[0], g1=genomes[1], out=tmp_path / "o.tsv",
                     missing=tmp_path / "missing.fa") for a in arguments)],
            env=ENV, stdout=write_end if "-o" not in arguments else subprocess.DEVNULL,
            stderr=write_end, timeout=120)
    finally:
        os.close(write_end)
    assert result.returncode == 141


def test_head_zero_on_both_streams_exits_141(tmp_path, genomes):
    result = subprocess.run(["bash", "-c", f"{sys.executable} -m host dist {genomes[0]} "
                                           f"{tmp_path / 'missing.fa'} 2>&1 | head -0; "
                                           f"echo ${{PIPESTATUS[0]}}"],
                            env=ENV, capture_output=True, text=True, timeout=120)
    assert result.stdout == "141\n" and result.stderr == ""


# -- item 7: standard input as descriptor 0; - everywhere -------------------------------------

def test_standard_input_is_read_through_its_descriptor(tmp_path, genomes):
    """A socket on standard input (ssh, process supervisors): Linux refuses to open
    /dev/stdin again ("No such device or address"), so it is read as descriptor 0."""
    ours, theirs = socket.socketpair()
    data = genomes[0].read_bytes()
    feeder = threading.Thread(target=lambda: (ours.sendall(data), ours.close()))
    feeder.start()
    try:
        result = subprocess.run([sys.executable, "-m", "host", "dist", "-", str(genomes[1])],
                                stdin=theirs, env=ENV, capture_output=True, text=True,
                                timeout=120)
    finally:
        feeder.join()
        theirs.close()
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[1] == f"#genome\tstdin\t{genomes[1].name}"


@pytest.mark.skipif(os.geteuid() != 0, reason="handing a pipe to another user needs root")
@pytest.mark.skipif(shutil.which("setpriv") is None, reason="no setpriv (util-linux)")
def test_a_pipe_of_another_user_is_read(tmp_path, genomes):
    """``cat x.fa | sudo -u other ks dist -``: the pipe belongs to its writer; reopening
    /dev/stdin by its /proc path was refused ("/dev/stdin: permission denied")."""
    result = subprocess.run(
        ["bash", "-c", f"cat {genomes[0]} | setpriv --reuid=65534 --regid=65534 --clear-groups "
                       f"{sys.executable} -m host dist -"],
        env=ENV, capture_output=True, text=True, timeout=120, cwd="/")
    if "Permission denied" in result.stderr and "/dev/stdin" not in result.stderr:
        pytest.skip(f"this checkout is not readable by another user ({result.stderr[:80]})")
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[1] == "#genome\tstdin"


def test_dash_is_standard_input_for_search_db_and_screen_refs(tmp_path, genomes, refs):
    """Before: ``search --db -`` and ``screen -`` said "-: no such file"."""
    with open(refs, "rb") as db:
        result = subprocess.run([sys.executable, "-m", "host", "search", str(genomes[0]),
                                 "--db", "-"], stdin=db, env=ENV, capture_output=True,
                                text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[2].split("\t")[:2] == ["g0.fa", "g0.fa"]
    with open(refs, "rb") as db:
        result = subprocess.run([sys.executable, "-m", "host", "screen", "-", str(genomes[0])],
                                stdin=db, env=ENV, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[2].startswith("g0.fa\t1.000000")


# -- item 8: messages -----------------------------------------------------------------------------

def test_a_full_tmpdir_names_tmpdir_not_the_input(tmp_path, refs, monkeypatch, capsys):
    """Before: ``/dev/zero: cannot read (No space left on device)`` for a full TMPDIR."""
    import errno
    import tempfile

    class Full:
        def write(self, data):
            raise OSError(errno.ENOSPC, "No space left on device")

        def close(self):
            pass
    monkeypatch.setattr(tempfile, "TemporaryFile", lambda *a, **k: Full())
    read_end, write_end = os.pipe()
    os.write(write_end, refs.read_bytes())
    os.close(write_end)
    try:
        assert run("info", f"/dev/fd/{read_end}") == 2
    finally:
        os.close(read_end)
    err = one_error_line(capsys)
    assert (f"error: /dev/fd/{read_end}: a sketch file from a pipe is held in TMPDIR "
            f"({tempfile.gettempdir()}), which has no room: No space left on device") in err


def test_a_full_plot_disk_names_the_plot(tmp_path, genomes, monkeypatch, capsys):
    """Before: the message named the table (or every output), whose disk was not full."""
    pytest.importorskip("matplotlib")
    pytest.importorskip("scipy")
    import host.outputs
    from tests.cli_helpers import FullDisk
    real_fdopen = host.outputs.os.fdopen
    plot = tmp_path / "p.png"

    def fdopen(handle, *args, **kwargs):
        raw = real_fdopen(handle, *args, **kwargs)
        return FullDisk(raw) if os.readlink(f"/proc/self/fd/{handle}").startswith(
            str(tmp_path / ".p.png.")) else raw
    monkeypatch.setattr(host.outputs.os, "fdopen", fdopen)
    assert run("dist", *genomes, "-o", tmp_path / "d.tsv", "--plot", plot) == 2
    assert f"error: {plot}: No space left on device" in one_error_line(capsys)
    assert not (tmp_path / "d.tsv").exists() and not plot.exists()


def test_genomes_read_from_standard_input_in_two_sketches_merge(tmp_path, genomes, capsys):
    """Two ``sketch -`` sketches both hold a genome named stdin: before, merge refused them as
    one genome given twice; now they are named by their sketch files, which --rename takes."""
    for name, genome in (("a", genomes[0]), ("b", genomes[1])):
        with open(genome, "rb") as stdin:
            assert subprocess.run([sys.executable, "-m", "host", "sketch", "-", "-o",
                                   str(tmp_path / f"{name}.sketch")], stdin=stdin, env=ENV,
                                  timeout=120).returncode == 0
    a, b = tmp_path / "a.sketch", tmp_path / "b.sketch"
    assert run("merge", a, b, "-o", tmp_path / "ab.sketch") == 0
    assert read_sketches(tmp_path / "ab.sketch").names == [f"{a}:stdin", f"{b}:stdin"]
    assert run("merge", a, b, "--rename", f"{a}:stdin=A", "--rename", f"{b}:stdin=B",
               "-o", tmp_path / "named.sketch") == 0
    assert read_sketches(tmp_path / "named.sketch").names == ["A", "B"]
    assert run("merge", a, a, "-o", tmp_path / "aa.sketch") == 2     # one file twice: still
    assert "occurs twice" in one_error_line(capsys)


def test_a_deleted_working_directory_is_named(tmp_path, genomes):
    """Before: ``error: No such file or directory``, naming nothing."""
    gone = tmp_path / "gone"
    gone.mkdir()
    result = subprocess.run(["bash", "-c", f"cd {gone} && rmdir {gone} && {sys.executable} -m "
                                           f"host dist x.fa {genomes[0]}"],
                            env=ENV, capture_output=True, text=True, timeout=120)
    assert result.returncode == 2
    assert result.stderr == ("error: the current directory no longer exists (deleted), so "
                             "relative paths name nothing; cd to an existing directory, or give "
                             "absolute paths\n")


@pytest.mark.parametrize("option", [["-k", "3_1"], ["--threshold", "0_5", "--format", "edges"]])
def test_an_underscore_in_a_number_is_refused(genomes, capsys, option):
    """Before: ``-k 3_1`` was read as 31 (Python's literal syntax)."""
    with pytest.raises(SystemExit):
        run("dist", *genomes, *option)
    assert f"'{option[1]}'" in one_error_line(capsys)


def test_info_escapes_control_characters_of_crafted_names(tmp_path, refs, capsys):
    """Before: a crafted sketch's ESC sequences reached the terminal raw."""
    from host.sketchfile import write_sketches
    sketches = read_sketches(refs)
    sketches.names[0] = "evil\x1b]0;owned\x07\x1b[2J"
    crafted = tmp_path / "crafted.sketch"
    write_sketches(crafted, sketches)
    capsys.readouterr()
    assert run("info", crafted) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\x07" not in out
    assert "  evil\\x1b]0;owned\\x07\\x1b[2J\t" in out


def test_a_hard_linked_input_is_the_same_genome(tmp_path, genomes, capsys):
    """Before: a hard link was a second genome (J = 1), a symlink "given twice"."""
    linked = tmp_path / "linked.fa"
    linked.hardlink_to(genomes[0])
    assert run("dist", genomes[0], linked) == 2
    assert (f"error: {linked}: given twice as input (also as {genomes[0]}, a hard link to it)"
            in one_error_line(capsys))


def test_a_replaced_output_keeps_owner_and_acl_and_names_its_hard_links(tmp_path, genomes,
                                                                        capsys):
    """Before: replaced by a rename, silently losing hard links, owner and ACL."""
    import struct
    out = tmp_path / "d.tsv"
    assert run("dist", *genomes[:2], "-o", out) == 0
    other = tmp_path / "other-name.tsv"
    other.hardlink_to(out)
    old = other.read_text()
    acl = struct.pack("<I", 2) + b"".join(struct.pack("<HHI", tag, perm, uid) for tag, perm, uid in
                                         [(1, 6, 0xFFFFFFFF), (2, 4, 1234), (4, 4, 0xFFFFFFFF),
                                          (0x10, 4, 0xFFFFFFFF), (0x20, 4, 0xFFFFFFFF)])
    try:
        os.setxattr(out, "system.posix_acl_access", acl)
    except OSError:
        acl = None      # a file system without ACLs: the rest still holds
    owner = (65534, 65534) if os.geteuid() == 0 else (os.geteuid(), os.getegid())
    os.chown(out, *owner)
    capsys.readouterr()
    assert run("dist", *genomes, "-o", out) == 0
    assert capsys.readouterr().err == (f"warning: {out}: replaced by a new file; its 1 other "
                                       f"hard link keeps the old content\n")
    status = out.stat()
    assert (status.st_uid, status.st_gid) == owner and stat.S_IMODE(status.st_mode) == 0o644
    if acl is not None:
        assert os.getxattr(out, "system.posix_acl_access") == acl
    assert other.read_text() == old and out.read_text() != old


def test_an_interrupted_local_cluster_says_one_line(tmp_path, genomes):
    """``--workers 2`` interrupted: before, multiprocessing's resource_tracker warned of leaked
    semaphores after the line; now the tasks are cancelled and the cluster closed first."""
    pytest.importorskip("distributed")
    if shutil.which("pgrep") is None:
        pytest.skip("no pgrep (procps) to see the workers start")
    # Eight genomes of 1 Gbase each (2.2 CPU s each here), stored as gzip members of a repeated
    # line (8 MB each): one of 40 Mbases was done within the wait on CI's machine, and the run
    # ended with 0 before its interruption.
    import gzip
    import numpy as np
    rng = np.random.default_rng(51)
    names = []
    for number in range(8):
        line = np.frombuffer(b"ACGT", np.uint8)[rng.integers(0, 4, 16_000)].tobytes() + b"\n"
        member = gzip.compress(line * 250, compresslevel=9)     # 4 Mbases
        names.append(tmp_path / f"big-{number}.fa.gz")
        with open(names[-1], "wb") as out:
            out.write(gzip.compress(f">big-{number}\n".encode()) + member * 250)
    process = subprocess.Popen([sys.executable, "-m", "host", "dist", *map(str, names),
                                *map(str, genomes), "--workers", "2", "-o", str(tmp_path / "d.tsv")],
                               env=ENV, stderr=subprocess.PIPE, text=True,
                               preexec_fn=interruptible)
    try:
        def workers_started():
            children = subprocess.run(["pgrep", "-P", str(process.pid)], capture_output=True,
                                      text=True).stdout.split()
            return len(children) >= 2
        wait_for(workers_started, process)
        time.sleep(2)
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=60)
    finally:
        process.kill()
    assert process.returncode == -signal.SIGINT, err
    lines = [line for line in err.splitlines() if "Port 8787 is already in use" not in line
             and "Perhaps you already have a cluster running" not in line
             and "Hosting the HTTP server" not in line and "warnings.warn(" not in line]
    assert lines == ["error: interrupted (SIGINT)"]
    assert not (tmp_path / "d.tsv").exists()


def test_motifs_memory_is_bounded_by_its_budget_not_by_the_input(tmp_path, genomes):
    """``motifs`` on a 20 MB FASTA (k = 10, 11) in a child process: its peak resident memory
    stays within host.fast.motif.memory_budget (80.5 MiB here;
    measured 54 MB on 40 MB), which does not grow with the input. Before, the file was held
    whole and its k-mers of length kmin as an array (8 bytes a base): 702 MB on 40 MB."""
    import numpy as np
    from host.fast.motif import memory_budget
    from kmerspec.golden.motif import MotifParams
    rng = np.random.default_rng(7)
    test = tmp_path / "test.fa"
    with open(test, "wb") as out:
        for record in range(4):
            out.write(f">r{record}\n".encode())
            out.write(np.frombuffer(b"ACGT", np.uint8)[rng.integers(0, 4, 5_000_000)].tobytes()
                      + b"\n")
    # measured from a small Python of its own that forks and runs the command: wait4's peak
    # of that child is the command's (a child forked from pytest would start at pytest's size)
    measure = ("import os, sys\npid = os.fork()\nif pid == 0:\n    os.execv(sys.executable, "
               "[sys.executable, '-m', 'host', *sys.argv[1:]])\n_, status, usage = "
               "os.wait4(pid, 0)\nprint(usage.ru_maxrss)\n"
               "sys.exit(os.waitstatus_to_exitcode(status))")
    result = subprocess.run([sys.executable, "-c", measure, "motifs", "--test", str(test),
                             "--control", str(genomes[0]), "--kmin", "10", "--kmax", "11",
                             "-o", str(tmp_path / "m.tsv")], env=ENV, capture_output=True,
                            text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    peak = int(result.stdout) * 1024          # kilobytes on Linux
    assert peak <= memory_budget(MotifParams(kmin=10, kmax=11)), peak
