"""Start-up of ``python -m host sketch``: a serial cost of every run, so the sketch path imports
only what it uses (checked on the real entry point with ``python -X importtime``)."""

import gzip
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPOSITORY = Path(__file__).resolve().parents[1]

# What the other commands need (all-pairs, JSD, motifs, the kernels' contracts, simulation,
# plotting, a cluster), and what a run over plain FASTA does without (threads included); the
# pair loops and clustering, the sketch file reader, logging (the API's), tempfile (standard
# output and pipes) and secrets (hashlib and OpenSSL, for eight random hex digits): with the
# collector off while the modules load (host.__main__), 17 % of a small run's instructions.
# numpy, 310 M of the 510 M instructions of a small run (callgrind): the sketch command holds
# its registers in a bytearray and writes the file with zipfile (host.sketchfile).
NOT_ON_THE_SKETCH_PATH = (
    "host.similarity", "host.neighbours", "host.fast.jsd", "host.fast.motif", "host.drivers",
    "host.device", "kmerspec.golden.jsd", "kmerspec.golden.entropy",
    "kmerspec.golden.fixedpoint", "kmerspec.golden.motif", "kmerspec.kernels", "hw", "sim",
    "amaranth", "dask", "scipy", "matplotlib", "isal", "concurrent.futures", "subprocess",
    "host.api.pairs", "host.api.clustering", "host.estimators", "host.detection", "host.screen",
    "host.leftover", "host.sketch_archive", "logging", "tempfile", "secrets", "hashlib",
    "numpy", "kmerspec.golden.hll_joint", "random", "typing",
    # the other commands' modules: the parser is built for the command named alone
    "host.commands.dist", "host.commands.search", "host.commands.screen",
    "host.commands.cluster", "host.commands.jsd", "host.commands.motifs", "host.commands.merge",
    "host.commands.info",
)


def _imported_modules(*arguments: str) -> set[str]:
    done = subprocess.run([sys.executable, "-X", "importtime", "-m", "host", *arguments],
                          cwd=REPOSITORY, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(REPOSITORY)})
    assert done.returncode == 0, done.stderr
    return {line.split("|")[-1].strip() for line in done.stderr.splitlines()
            if line.startswith("import time:") and "cumulative" not in line}


@pytest.mark.parametrize("name, content, needs", [
    ("g.fa", b">g\n" + b"ACGTTGCAAGCT" * 10 + b"\n", ()),
    ("r.fq.gz", gzip.compress(b"@r\n" + b"ACGTTGCAAGCT" * 10 + b"\n+\n" + b"I" * 120 + b"\n"),
     ("isal", "typing"))], ids=["fasta", "fastq.gz"])  # isal: host.io's gzip decompression
def test_sketch_imports_only_what_it_uses(tmp_path, name, content, needs):
    genome = tmp_path / name
    genome.write_bytes(content)
    modules = _imported_modules("sketch", str(genome), "-o", str(tmp_path / "g.ksk"),
                                "--threads", "2")
    assert "host.fast.kmers" in modules and "zipfile" in modules  # the parse is right
    heavy = sorted(m for m in modules
                   if any(m == name or m.startswith(name + ".")
                          for name in set(NOT_ON_THE_SKETCH_PATH) - set(needs)))
    assert heavy == []
    assert (tmp_path / "g.ksk").stat().st_size > 0


@pytest.mark.parametrize("command", ["sketch", "dist", "search", "screen", "cluster", "jsd",
                                     "motifs", "merge", "info"])
def test_a_command_parsed_alone_reads_as_in_the_whole_parser(command, capsys):
    """build_parser(only=command), what a run of that command builds, gives the command the
    same help, defaults and usage errors as the parser of every command."""
    from host.cli import build_parser, named_command
    whole, alone = build_parser(), build_parser(command)
    assert named_command([command, "x"]) == named_command(["--debug", command]) == command

    def subparser(parser):
        return parser._subparsers._group_actions[0].choices[command]

    assert subparser(alone).format_help() == subparser(whole).format_help()
    assert ([(a.dest, a.default, a.nargs, a.required) for a in subparser(alone)._actions]
            == [(a.dest, a.default, a.nargs, a.required) for a in subparser(whole)._actions])
    for argv in ([command, "--no-such-option"], [command, "--threads", "many"]):
        errors = []
        for parser in (whole, alone):
            with pytest.raises(SystemExit):
                parser.parse_args(argv)
            errors.append(capsys.readouterr().err)
        assert errors[0] == errors[1] != ""


@pytest.mark.parametrize("argv", [[], ["--help"], ["-h", "sketch"], ["sketc"], ["--version"],
                                  ["--deb", "sketch"], ["--", "sketch"]])
def test_no_command_named_first_needs_the_whole_parser(argv):
    from host.cli import named_command
    assert named_command(argv) is None
