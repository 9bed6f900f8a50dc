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

import numpy as np
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


# -- docs/python.md: the Python session runs, and its numbers are the command line's ----------

PYTHON_DOC = ROOT / "docs" / "python.md"
GENOMES = ["examples/genomes/dwv.fa.gz", "examples/genomes/vdv1.fa.gz",
           "examples/genomes/vdv1dwv5.fa.gz", "examples/genomes/vdv1dwv9.fa.gz"]


def in_scratch(tmp_path, monkeypatch) -> Path:
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_the_python_session_prints_what_the_docs_show(tmp_path, monkeypatch):
    import doctest
    in_scratch(tmp_path, monkeypatch)
    blocks = re.findall(r"^```pycon\n(.*?)^```$", PYTHON_DOC.read_text(), re.M | re.S)
    assert blocks
    for number, block in enumerate(blocks, 1):
        test = doctest.DocTestParser().get_doctest(block, {}, f"python.md-{number}",
                                                   str(PYTHON_DOC), 0)
        runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE)
        runner.run(test)
        assert runner.summarize(verbose=False).failed == 0, f"python.md, block {number}"
    assert (tmp_path / "genomes.sketch").exists()   # save() wrote what it was asked to only
    assert sorted(p.name for p in tmp_path.iterdir()) == ["examples", "genomes.sketch"]


def cli_table(*args) -> list[list[str]]:
    found = subprocess.run([sys.executable, "-m", "host", *args], capture_output=True,
                           text=True, check=True, timeout=300,
                           env={**os.environ, "PYTHONPATH": str(ROOT)})
    return [line.split("\t") for line in found.stdout.splitlines() if not line.startswith("#")]


def test_the_python_api_gives_the_command_line_s_numbers(tmp_path, monkeypatch):
    """The session's calls against the commands on the same files, value for value as the
    commands print them (6 significant digits): the same estimators and defaults."""
    import host.api as ksa
    from host.sketchfile import read_sketches
    in_scratch(tmp_path, monkeypatch)
    genomes = ksa.sketch(GENOMES)
    for options, metric in [((), "jaccard"), (("--metric", "ani"), "ani"),
                            (("--estimator", "hll"), "jaccard"),
                            (("--metric", "containment"), "containment")]:
        rows = cli_table("dist", *GENOMES, *options)  # the defaults against the defaults
        ours = ksa.dist(genomes, metric=metric,
                        **({"estimator": "hll"} if "hll" in options else {}))
        assert [[f"{v:.6g}" for v in row] for row in ours] == [row[1:] for row in rows], options
    for options, keywords in [(("--format", "edges", "--threshold", "0.2"), {"threshold": 0.2}),
                              (("--format", "edges", "--metric", "ani", "--threshold", "96"),
                               {"metric": "ani", "threshold": 96.0}),
                              (("--format", "edges", "--metric", "mash", "--threshold", "0.04"),
                               {"metric": "mash", "threshold": 0.04}),
                              (("--top", "1", "--metric", "containment"),
                               {"top": 1, "metric": "containment"}),
                              (("--format", "edges", "--estimator", "hll"),
                               {"estimator": "hll"})]:
        kept = ksa.edges(genomes, **keywords)
        names = genomes.names
        assert cli_table("dist", *GENOMES, *options) == [
            [names[a], names[b], f"{value:.6g}"] for a, b, value in kept.tolist()], options
    assert cli_table("cluster", *GENOMES) == [
        [name, str(number), rep, f"{value:.6g}", f"{fraction:.4f}"]
        for name, number, rep, value, fraction in ksa.cluster(genomes).rows()]
    assert cli_table("cluster", *GENOMES, "--jaccard", "0.2", "--method", "single") == [
        [name, str(number), rep, f"{value:.6g}"] for name, number, rep, value in
        ksa.cluster(genomes, jaccard=0.2, method="single").rows()]
    references = ksa.sketch(["examples/lambda_virus.fa.gz", GENOMES[0]])
    references.save("refs.sketch")
    found = ksa.search(genomes, references, metric="containment")
    lines = cli_table("search", *GENOMES, "--db", "refs.sketch", "--metric", "containment")
    assert sorted(lines) == sorted(
        [query, reference, f"{found[q, r]:.6g}"] for q, query in enumerate(genomes.names)
        for r, reference in enumerate(references.names))
    cli_table("sketch", *GENOMES, "-o", "cli.sketch")
    assert np.array_equal(read_sketches("cli.sketch").registers(), genomes.registers)


def test_each_public_function_s_help_says_what_it_returns():
    import host.api as ksa
    for name in ksa.__all__:
        thing = getattr(ksa, name)
        if callable(thing) and not isinstance(thing, type):
            assert "Returns" in (thing.__doc__ or ""), name
    for method in (ksa.Collection.save, ksa.Clusters.rows, ksa.Clusters.representatives):
        assert "Returns" in method.__doc__, method


def test_every_command_of_the_readme_s_table_for_mash_sourmash_and_drep_users_runs(tmp_path):
    """README's "Coming from Mash, sourmash, dRep or galah": each ``python -m host`` command of
    its last column runs, in order, from a scratch directory beside the examples."""
    text = (ROOT / "README.md").read_text()
    section = text.split("### Coming from Mash, sourmash, dRep or galah", 1)[1].split("\n\n`", 1)[0]
    rows = [line.split(" | ")[-1] for line in section.splitlines() if line.startswith("| ")
            and not line.startswith("| task") and not line.startswith("|---")]
    commands = [command for row in rows for command in re.findall(r"`(python -m host [^`]*)`",
                                                                   row)]
    assert len(commands) >= 10 and "import host.api" in section
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    environment = {**os.environ, "PYTHONPATH": str(ROOT), "MPLBACKEND": "Agg"}
    for command in commands:
        run = subprocess.run([sys.executable, "-m", "host", *command.split()[3:]], cwd=tmp_path,
                             env=environment, capture_output=True, text=True, timeout=600)
        assert run.returncode == 0 and "error" not in run.stderr, f"$ {command}\n{run.stderr}"
    for written in ("refs.sketch", "records.sketch", "all.sketch", "reps.txt", "matrix.png"):
        assert (tmp_path / written).stat().st_size > 0, written
