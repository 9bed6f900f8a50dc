"""What the command line does with output paths and user mistakes (issue 18).

Outputs: ``-o -`` is standard output, a device or FIFO is written in place, a symlink is
followed, and nothing (side files and plots included) is written unless the command succeeds.
Mistakes: one line ``error: <file>: <cause>``, exit status 2, never a traceback.
"""

import os
import select
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from host.cli import build_parser
from host.sketchfile import read_sketches
from tests.genomes import write_related_genomes
from tests.cli_helpers import one_error_line, run

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def genomes(tmp_path):
    return write_related_genomes(tmp_path, count=3, length=8000, step=0.02, seed=18)


def listing(directory: Path) -> dict:
    return {p.name: (p.stat().st_mtime_ns, p.stat().st_size) for p in directory.iterdir()}


# -- output targets --------------------------------------------------------------------------

def test_full_device_is_written_in_place_and_its_error_is_one_line(genomes, capsys):
    assert run("sketch", genomes[0], "-o", "/dev/full") == 2
    assert "/dev/full: cannot write (No space left on device)" in one_error_line(capsys)
    assert stat.S_ISCHR(os.stat("/dev/full").st_mode)
    assert run("sketch", genomes[0], "-o", "/dev/null") == 0
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)


def test_symlink_is_followed_and_stays_a_symlink(tmp_path, genomes):
    target = tmp_path / "real" / "refs.sketch"
    target.parent.mkdir()
    target.write_bytes(b"old")
    link = tmp_path / "refs.sketch"
    link.symlink_to(target)
    assert run("sketch", *genomes, "-o", link) == 0
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert read_sketches(target).names == ["g0.fa", "g1.fa", "g2.fa"]
    dangling = tmp_path / "new.sketch"
    dangling.symlink_to(tmp_path / "real" / "created.sketch")
    assert run("sketch", genomes[0], "-o", dangling) == 0
    assert dangling.is_symlink() and read_sketches(dangling).names == ["g0.fa"]
    assert [p.name for p in target.parent.iterdir() if p.name.startswith(".")] == []


def test_fifo_is_written_in_place(tmp_path, genomes):
    """The command runs in its own process with a time limit, so a FIFO that never connects
    fails this test instead of blocking the suite."""
    regular = tmp_path / "d.tsv"
    assert run("dist", *genomes, "-o", regular) == 0
    fifo = tmp_path / "d.fifo"
    os.mkfifo(fifo)
    writer = subprocess.Popen([sys.executable, "-m", "host", "dist", *map(str, genomes),
                               "-o", str(fifo)], cwd=ROOT, stderr=subprocess.PIPE)
    # O_NONBLOCK: the open returns at once, and the read below waits (with a limit) for data
    descriptor = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    received = bytearray()
    try:
        with os.fdopen(descriptor, "rb", buffering=0) as reader:
            os.set_blocking(reader.fileno(), True)
            deadline = time.monotonic() + 300
            while time.monotonic() < deadline:
                chunk = (reader.read(1 << 16) if select.select([reader], [], [], 1.0)[0]
                         else b"")
                received += chunk
                if not chunk and writer.poll() is not None:
                    break  # the writer has exited and nothing more is in the FIFO
        assert writer.wait(timeout=60) == 0, writer.stderr.read()
    finally:
        if writer.poll() is None:
            writer.kill()
            writer.wait()
        writer.stderr.close()
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)
    assert bytes(received) == regular.read_bytes()


def test_dash_is_standard_output(tmp_path, genomes, capsys):
    regular = tmp_path / "d.tsv"
    assert run("dist", *genomes, "-o", regular) == 0
    capsys.readouterr()
    assert run("dist", *genomes, "-o", "-") == 0
    assert capsys.readouterr().out == regular.read_text()
    assert not (tmp_path / "-").exists() and not Path("-").exists()
    # PHYLIP to standard output: the matrix, and no parameters file named "-.params"
    assert run("dist", *genomes, "-o", "-", "--format", "phylip") == 0
    assert capsys.readouterr().out.splitlines()[0] == "3"
    assert not Path("-.params").exists()


def test_binary_sketch_to_a_pipe_and_refused_on_a_terminal(tmp_path, genomes):
    regular = tmp_path / "s.sketch"
    assert run("sketch", *genomes, "-o", regular) == 0
    command = [sys.executable, "-m", "host", "sketch", *map(str, genomes), "-o", "-"]
    piped = subprocess.run(command, capture_output=True, cwd=ROOT)
    assert piped.returncode == 0 and piped.stdout == regular.read_bytes(), piped.stderr
    controller, terminal = os.openpty()
    try:
        on_terminal = subprocess.run(command, stdout=terminal, stderr=subprocess.PIPE, cwd=ROOT)
    finally:
        os.close(terminal)
        os.close(controller)
    err = on_terminal.stderr.decode()
    assert on_terminal.returncode == 2 and err.count("\n") == 1
    assert err.startswith("error: -: this output is binary; refusing to write it to a terminal")


def test_unwritable_directory(tmp_path, genomes, capsys):
    if os.geteuid() == 0:  # root writes anywhere it may chmod; /sys refuses even root
        directory = Path("/sys")
    else:
        directory = tmp_path / "read-only"
        directory.mkdir()
        directory.chmod(0o555)
    out = directory / "out.sketch"
    assert run("sketch", genomes[0], "-o", out) == 2
    err = one_error_line(capsys)
    assert f"error: {out}: cannot create a file in {directory}" in err
    assert not out.exists()
    assert run("sketch", genomes[0], "-o", tmp_path / "missing" / "out.sketch") == 2
    assert "no such directory" in one_error_line(capsys)
    assert run("sketch", genomes[0], "-o", tmp_path) == 2
    assert "is a directory" in one_error_line(capsys)


def test_existing_output_keeps_its_permissions(tmp_path, genomes):
    out = tmp_path / "d.tsv"
    out.write_text("old")
    out.chmod(0o640)
    assert run("dist", *genomes, "-o", out) == 0
    assert stat.S_IMODE(out.stat().st_mode) == 0o640 and out.read_text() != "old"


@pytest.mark.parametrize("failure", ["plot_format", "late_input"])
def test_no_side_file_is_left_when_a_command_fails(tmp_path, genomes, capsys, failure):
    phylip, image, bad = tmp_path / "p.phy", tmp_path / "h.png", tmp_path / "bad.fa"
    if failure == "plot_format":
        inputs, plot = genomes, tmp_path / "h.xyz"
        expected = "h.xyz: unknown image format 'xyz'"
    else:  # the outputs are reserved, genomes sketched, then a later input is bad
        bad.write_bytes(b"not a sequence file\n")
        inputs, plot = [*genomes, bad], image
        expected = "bad.fa: not a FASTA/FASTQ file"
    arguments = ["dist", *inputs, "-o", phylip, "--format", "phylip", "--metric", "mash",
                 "--plot", plot]
    before = listing(tmp_path)
    assert run(*arguments) == 2
    assert expected in one_error_line(capsys)
    assert listing(tmp_path) == before  # no p.phy, p.phy.params, image or temporary file


def test_phylip_side_file_and_no_negative_zero(tmp_path, genomes):
    phylip = tmp_path / "p.phy"
    assert run("dist", *genomes, "-o", phylip, "--format", "phylip", "--metric", "mash") == 0
    rows = phylip.read_text().splitlines()[1:]
    assert [row.split()[i + 1] for i, row in enumerate(rows)] == ["0.000000"] * 3
    assert "-0.0" not in phylip.read_text()
    assert "metric=mash" in (tmp_path / "p.phy.params").read_text()


def test_two_outputs_on_one_path_are_refused(tmp_path, genomes, capsys):
    out = tmp_path / "same.png"
    assert run("dist", *genomes, "-o", out, "--plot", out) == 2
    assert "given for two outputs" in one_error_line(capsys)
    assert not out.exists()


def test_two_outputs_on_one_file_by_two_names_are_refused(tmp_path, genomes, capsys):
    """A hard link, or a descriptor open on the other output: one file either way."""
    (tmp_path / "out").mkdir()
    table, image = tmp_path / "out" / "table.tsv", tmp_path / "out" / "image.png"
    table.write_text("kept\n")
    os.link(table, image)
    assert run("dist", *genomes, "-o", table, "--plot", image) == 2
    assert "given for two outputs" in one_error_line(capsys)
    assert table.read_text() == "kept\n" and os.path.samefile(table, image)
    alone = tmp_path / "out" / "alone.png"
    alone.write_text("kept\n")
    descriptor = os.open(alone, os.O_WRONLY | os.O_APPEND)
    try:
        assert run("dist", *genomes, "-o", f"/dev/fd/{descriptor}", "--plot", alone) == 2
        assert "given for two outputs" in one_error_line(capsys)
    finally:
        os.close(descriptor)
    assert alone.read_text() == "kept\n"
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["alone.png", "image.png",
                                                                     "table.tsv"]


# -- one-line errors -------------------------------------------------------------------------

def test_missing_xrt_with_a_missing_binary_names_the_binary(tmp_path, genomes, capsys):
    out = tmp_path / "s.sketch"
    assert run("sketch", genomes[0], "--backend", "xrt", "--xclbin", "/nonexistent.xclbin",
               "-o", out) == 2
    assert one_error_line(capsys).startswith("error: /nonexistent.xclbin: no such file")
    assert run("sketch", genomes[0], "--backend", "auto", "--xclbin", "/nonexistent.xclbin",
               "-o", out) == 2  # an explicit binary that is missing is no reason to fall back
    assert one_error_line(capsys).startswith("error: /nonexistent.xclbin: no such file")
    assert not out.exists()
    binary = tmp_path / "k.xclbin"
    binary.write_bytes(b"xclbin2\0")
    status = run("sketch", genomes[0], "--backend", "xrt", "--xclbin", binary, "-o", out)
    import ctypes.util
    if ctypes.util.find_library("xrt_coreutil") is None:   # no XRT: the error says what to install
        assert status == 2 and "needs XRT (libxrt_coreutil.so.2 not found" in \
            one_error_line(capsys)
    else:  # XRT's library (Debian's libxrt1 in CI) but no card: the error names the device
        assert status == 2 and one_error_line(capsys).startswith("error: no XRT device 0: ")


def test_cut_sketch_file(tmp_path, genomes, capsys):
    whole = tmp_path / "s.sketch"
    assert run("sketch", *genomes, "-o", whole) == 0
    data = whole.read_bytes()
    for length in (3, 10, 100, len(data) // 2, len(data) - 30, len(data) - 1):
        cut = tmp_path / f"cut{length}.sketch"
        cut.write_bytes(data[:length])
        assert run("info", cut) == 2
        err = one_error_line(capsys)
        assert f"error: {cut}: " in err and ("damaged" in err or "not a sketch file" in err)
        assert run("dist", cut, "-o", tmp_path / "d.tsv") == 2
        assert str(cut) in one_error_line(capsys)
    assert not (tmp_path / "d.tsv").exists()


@pytest.mark.parametrize("command", ["info", "merge"])
@pytest.mark.parametrize("content", [b">g\nACGT\n", b"@r\nACGT\n+\nIIII\n", b"\x1f\x8b\x08\x00"])
def test_sequence_file_given_to_info_or_merge(tmp_path, capsys, command, content):
    path = tmp_path / "g1.fa"
    path.write_bytes(content)
    arguments = [command, path] + (["-o", tmp_path / "m.sketch"] if command == "merge" else [])
    assert run(*arguments) == 2
    err = one_error_line(capsys)
    assert f"error: {path}: a FASTA/FASTQ file, not a sketch file" in err
    assert "pickle" not in err and not (tmp_path / "m.sketch").exists()


def test_duplicate_genome_names_are_refused_naming_both_sources(tmp_path, genomes, capsys):
    refs = tmp_path / "refs.sketch"
    assert run("sketch", *genomes, "-o", refs) == 0
    out = tmp_path / "d.tsv"
    assert run("dist", refs, refs, "-o", out) == 2
    assert f"error: {refs}: genome 'g0.fa' occurs twice" in one_error_line(capsys)
    assert run("dist", refs, genomes[1], "-o", out) == 2
    assert f"error: {genomes[1]}: genome 'g1.fa' is also in {refs}" in one_error_line(capsys)
    other = tmp_path / "other.sketch"
    assert run("sketch", genomes[2], "-o", other) == 0
    assert run("merge", refs, other, "-o", out) == 2
    assert f"error: {other}: genome 'g2.fa' is also in {refs}" in one_error_line(capsys)
    assert run("sketch", genomes[0], genomes[0], "-o", out) == 2
    assert "given twice" in one_error_line(capsys)
    assert not out.exists()
    # equal file names in different directories are made unique by their paths
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "g0.fa").write_bytes(genomes[1].read_bytes())
    assert run("sketch", genomes[0], elsewhere / "g0.fa", "-o", out) == 0
    assert read_sketches(out).names == [str(genomes[0]), str(elsewhere / "g0.fa")]


def test_sequence_files_take_the_parameters_of_the_sketch_files(tmp_path, genomes, capsys):
    k21 = tmp_path / "k21.sketch"
    assert run("sketch", genomes[0], "--k", 21, "--index-bits", 10, "-o", k21) == 0
    mixed, direct = tmp_path / "mixed.tsv", tmp_path / "direct.tsv"
    assert run("dist", k21, genomes[1], "-o", mixed) == 0
    assert run("dist", genomes[0], genomes[1], "--k", 21, "--index-bits", 10, "-o", direct) == 0
    assert mixed.read_text() == direct.read_text()
    assert run("dist", k21, genomes[1], "--k", 31, "-o", tmp_path / "x.tsv") == 2
    err = one_error_line(capsys)
    assert f"error: {k21}: sketched with k=21, but k=31 was given" in err
    assert "the sequence files: sketched" not in err


def test_inputs_without_kmers_get_one_warning_naming_them(tmp_path, genomes, capsys):
    empty, all_n = tmp_path / "empty.fa", tmp_path / "n.fa"
    empty.write_bytes(b"")
    all_n.write_bytes(b">n\n" + b"N" * 500 + b"\n")
    out = tmp_path / "s.sketch"
    assert run("sketch", genomes[0], empty, all_n, "-o", out) == 0
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("warning: 2 inputs have no k-mers")
    assert f"{empty}: empty file" in err and f"{all_n}: no k-mer of length 31" in err
    assert run("sketch", "--kind", "pqa", genomes[0], empty, "-o", out) == 0
    assert capsys.readouterr().err == f"warning: {empty}: empty file, no k-mers\n"
    assert run("sketch", genomes[0], "-o", out) == 0
    assert capsys.readouterr().err == ""


def test_debug_shows_the_traceback(tmp_path, capsys):
    missing = tmp_path / "missing.sketch"
    assert run("info", missing) == 2
    assert one_error_line(capsys) == f"error: {missing}: no such file\n"
    with pytest.raises(Exception, match="no such file"):
        run("info", missing, "--debug")


def test_usage_mistakes_are_one_line(capsys):
    with pytest.raises(SystemExit) as exit_info:
        run("sketch", "x.fa", "-o", "y", "--k", "40")
    assert exit_info.value.code == 2
    assert "--k: must be from 1 to 32, not 40" in one_error_line(capsys)


def test_simulator_output_goes_to_a_log_the_error_names(tmp_path, genomes, capfd, monkeypatch):
    import sim.runner

    def noisy_failing_run(*args, **kwargs):
        os.write(1, b"%Warning-WIDTH: noise on standard output\n")
        os.write(2, b"%Warning-UNUSED: noise on standard error\n")
        print("python-level noise", file=sys.stderr)
        raise sim.runner.CocotbFailure("sim.tb_device on sketch (verilator): 1 of 1 cocotb "
                                       "tests failed; log: /tmp/x.txt\nmore lines")
    monkeypatch.setattr(sim.runner, "run_cocotb", noisy_failing_run)
    out = tmp_path / "s.sketch"
    assert run("sketch", genomes[0], "--backend", "sim", "-o", out) == 2
    captured = capfd.readouterr()
    assert captured.out == "" and captured.err.count("\n") == 1, captured
    assert captured.err.startswith("error: --backend sim: the simulation failed")
    log = Path(captured.err.rsplit("simulator output in ", 1)[1].strip())
    assert "%Warning-WIDTH" in log.read_text() and "python-level noise" in log.read_text()
    log.unlink()
    assert not out.exists()


# -- --help ----------------------------------------------------------------------------------

def test_every_option_is_documented_with_its_default():
    parser = build_parser()
    commands = next(a for a in parser._actions if a.dest == "command").choices
    for name, command in [("", parser), *commands.items()]:
        for action in command._actions:
            if action.dest in ("help", "version", "command"):
                continue
            where = f"{name} {action.option_strings or action.dest}"
            assert action.help, where
            needs_default = action.option_strings and not action.required
            assert not needs_default or "default" in action.help, where
