"""The ```console examples of the docs are the commands' real output: each ``$ command`` line of
a ```console block of docs/usage.md and docs/cli.md runs (bash, from a scratch directory where
``examples`` is the repository's, ``python`` this interpreter and ``python -m host`` this
checkout), and what it prints, standard output and error together, is the lines after it up to
the next ``$`` line, byte for byte. (Issue 53 found dist and search examples whose header still
said ``estimator=hll`` a release after the default became the joint MLE.) Blocks of other
languages (```sh, bare ```) are not run: they show commands without output, or output of files
that are not in the repository."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "docs" / "usage.md", ROOT / "docs" / "cli.md"]


def console_blocks(path: Path) -> list[list[tuple[str, str]]]:
    """Each ```console block of ``path`` as [(command, expected output)]."""
    blocks = []
    for block in re.findall(r"^```console\n(.*?)^```$", path.read_text(), re.M | re.S):
        steps: list[tuple[str, list[str]]] = []
        for line in block.splitlines():
            if line.startswith("$ "):
                steps.append((line[2:], []))
            else:
                assert steps, f"{path.name}: output before any command in a console block"
                steps[-1][1].append(line)
        blocks.append([(command, "".join(f"{line}\n" for line in output))
                       for command, output in steps])
    return blocks


EXAMPLES = [(path.name, number, block) for path in DOCS
            for number, block in enumerate(console_blocks(path), 1)]


def test_the_docs_have_console_examples():
    assert {name for name, _, _ in EXAMPLES} >= {"usage.md"} and len(EXAMPLES) >= 2


@pytest.mark.parametrize("name, number, block", EXAMPLES,
                         ids=[f"{name}-{number}" for name, number, _ in EXAMPLES])
def test_console_example_prints_what_the_docs_show(tmp_path, name, number, block):
    for command, _ in block:  # Debian's example genomes (ragout-examples), where installed
        for path in re.findall(r"/usr/share/doc/\S+", command):
            if not Path(path.split("*")[0]).parent.exists():
                pytest.skip(f"{path}: not installed (apt-get install ragout-examples)")
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    bin_dir = tmp_path / ".bin"
    bin_dir.mkdir()
    (bin_dir / "python").symlink_to(sys.executable)
    environment = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
                   "PYTHONPATH": str(ROOT), "LC_ALL": "C", "COLUMNS": "80"}
    for command, expected in block:
        run = subprocess.run(["bash", "-c", command], cwd=tmp_path, env=environment,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                             timeout=600)
        assert run.stdout == expected, f"{name}, block {number}: $ {command}"
