"""The README's commands, read from the README itself: the software set-up is one pip line, the
Use lines run as written on the bundled examples with only what that line installs, and the
hardware set-up line works as root without sudo and as a user with sudo."""

import glob
import re
import shlex
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from host.cli import main as host_main

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()


def shell_blocks(section: str) -> list[str]:
    """The ```sh blocks of the README section titled ``section``."""
    match = re.search(rf"^## {section}\n(.*?)(?=^## |\Z)", README, re.S | re.M)
    assert match, f"README has no section {section!r}"
    return re.findall(r"```sh\n(.*?)```", match.group(1), re.S)


def setup_commands() -> list[str]:
    blocks = shell_blocks("Hardware set-up")
    assert len(blocks) == 2 and all(block.count("\n") == 1 for block in blocks), blocks
    return [block.strip() for block in blocks]


def use_lines() -> list[str]:
    (block,) = shell_blocks("Use")
    return [line.split("#", 1)[0].strip() for line in block.splitlines()
            if line.split("#", 1)[0].strip()]


#: what the extras install (pyproject.toml): the software set-up installs none of them
EXTRAS_PACKAGES = ("scipy", "matplotlib", "dask", "distributed", "pytest", "cocotb")


def test_software_setup_is_one_pip_line_before_use():
    (block,) = shell_blocks("Software set-up")
    assert block.strip() == "python3 -m venv .venv && .venv/bin/pip install -e ."
    assert README.index("## Software set-up") < README.index("## Use") \
        < README.index("## Hardware set-up")


def test_use_lines_run_as_written_on_the_examples(tmp_path, monkeypatch, capsys):
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    monkeypatch.chdir(tmp_path)
    for package in EXTRAS_PACKAGES:  # an import of one of them now fails, as after that line
        monkeypatch.setitem(sys.modules, package, None)
    lines = use_lines()
    assert lines[0] == ". .venv/bin/activate"
    ran = []
    for line in lines[1:]:
        words = shlex.split(line)
        assert words[:2] == ["python", "-m"], line
        # the shell would expand the globs; each must match bundled files
        argv = []
        for word in words[3:]:
            matches = sorted(glob.glob(word)) if "*" in word else [word]
            assert matches, f"{word!r} matches no file: {line}"
            argv += matches
        if words[2] == "host":
            assert host_main(argv) == 0, line
            captured = capsys.readouterr()
            assert captured.err == "", (line, captured.err)
            output = argv[argv.index("-o") + 1] if "-o" in argv else None
            if output in ("-", None) or words[3] == "info":
                assert captured.out.strip(), line
            else:
                assert Path(output).stat().st_size > 0, line
            ran.append(words[3])
        else:
            assert words[2] == "hw.build", line
            from hw.build import main as build_main
            # the generation itself is the set-up command's (and tests/test_build.py's) job:
            # here the options must be accepted and the board known
            assert build_main(argv + ["--list"]) == 0, line
            assert "-o" in argv or "--out" in argv or "build/hw" in line, line
            capsys.readouterr()
    assert {"sketch", "dist", "search", "screen", "merge", "info", "jsd", "motifs"} <= set(ran)
    matrix = [row.split("\t") for row in Path("matrix.tsv").read_text().splitlines()[2:]]
    similarity = {(row[0], name): float(value) for row in matrix
                  for name, value in zip(["dwv.fa.gz", "vdv1.fa.gz", "vdv1dwv5.fa.gz",
                                          "vdv1dwv9.fa.gz"], row[1:])}
    # the recombinants share more with each other, and with each parent, than the parents do
    assert similarity["vdv1dwv5.fa.gz", "vdv1dwv9.fa.gz"] > similarity["dwv.fa.gz", "vdv1.fa.gz"]
    assert similarity["dwv.fa.gz", "vdv1dwv5.fa.gz"] > similarity["dwv.fa.gz", "vdv1.fa.gz"]
    assert Path("matrix.phylip.params").exists()


def test_setup_has_two_commands_and_ci_runs_the_test_command():
    install, tests = setup_commands()
    assert "python -m hw.build --board f1" in install
    assert tests == ".venv/bin/python -m pytest -q"
    ci = (ROOT / ".ci" / "run").read_text()
    assert tests in ci.splitlines()

    def packages(text):
        (line,) = [line for line in text.splitlines() if "apt-get install" in line]
        return {word for word in line.split("apt-get install", 1)[1].split("&&")[0].split()
                if not word.startswith("-") and not word.startswith(">")}
    assert packages(install) == packages(ci)


@pytest.mark.parametrize("who", ["root without sudo", "user with sudo"])
def test_setup_command_works_as_root_and_as_a_user(tmp_path, who):
    """The set-up line with every program it calls replaced by a stub that logs its call."""
    install, _ = setup_commands()
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    log = tmp_path / "calls.log"

    def stub(directory, name, body=""):
        path = directory / name
        path.write_text(f"#!{shutil.which('bash')}\necho \"{name} $*\" >> {log}\n{body}\n")
        path.chmod(path.stat().st_mode | stat.S_IEXEC)

    stub(bin_dir, "id", f"echo {0 if who.startswith('root') else 1000}")
    stub(bin_dir, "apt-get")
    if who == "user with sudo":
        stub(bin_dir, "sudo", 'exec "$@"')
    venv_tools = tmp_path / "venv-tools"  # what python3 -m venv puts in .venv/bin
    venv_tools.mkdir()
    stub(venv_tools, "pip")
    stub(venv_tools, "python")
    stub(bin_dir, "python3", f"mkdir -p .venv/bin && cp {venv_tools}/* .venv/bin/")
    stub(bin_dir, "mkdir", f'exec {shutil.which("mkdir")} "$@"')
    stub(bin_dir, "cp", f'exec {shutil.which("cp")} "$@"')
    work = tmp_path / "repo"
    work.mkdir()
    result = subprocess.run([shutil.which("bash"), "-c", install], cwd=work,
                            env={"PATH": str(bin_dir), "HOME": str(tmp_path)},
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    calls = [call for call in log.read_text().splitlines()
             if not call.startswith(("mkdir", "cp"))]
    apt = [call for call in calls if call.startswith(("apt-get", "sudo"))]
    if who == "user with sudo":  # each apt-get through sudo (which logs, then runs it)
        assert apt[:2] == ["sudo apt-get update", "apt-get update"] and len(apt) == 4
        assert apt[2].startswith("sudo apt-get install -y") and apt[3] == apt[2][5:]
    else:
        assert apt[0] == "apt-get update" and apt[1].startswith("apt-get install -y")
        assert not any(call.startswith("sudo") for call in calls)
    assert calls[-1] == "python -m hw.build --board f1"
