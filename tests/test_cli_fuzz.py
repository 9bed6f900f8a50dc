"""Fuzzing the command line (issue 18): hypothesis-made inputs and output targets through every
subcommand. Each run must exit 0 or 2 with at most one line on standard error, and must change
no file but the output it was asked for (and that only when it succeeds).

Inputs: random bytes, FASTA, FASTQ, both mixed, gzip (whole, truncated, concatenated members,
trailing garbage), huge lines, NUL bytes, empty files, and sketch files (whole, cut, with a
flipped byte). Output targets: a new file, an existing file, a symlink (dangling or not), ``-``,
/dev/null, a directory, a path in a missing directory. The CLI runs in-process (``main``), and
the number of examples is bounded so that this stays a few tens of seconds in CI.
"""

import contextlib
import gzip
import io
import os
import sys
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from host.cli import main

SMALL_HLL = ["--k", "5", "--index-bits", "8"]
SMALL_PQA = ["--k", "5", "--s", "1", "--R", "3", "--n", "2", "--cw", "6", "--d", "2"]
SMALL_MOTIFS = ["--kmin", "4", "--kmax", "5", "--cw", "8", "--threshold", "2",
                "--store-sets", "4", "--store-ways", "2"]


def _reference_sketches() -> dict[str, bytes]:
    """A valid HLL and a valid PQA sketch file, made once, to be cut and flipped."""
    with tempfile.TemporaryDirectory() as directory:
        directory = Path(directory)
        genome = directory / "g.fa"
        genome.write_bytes(b">g\n" + b"ACGTTGCAAGGCTTAC" * 40 + b"\n")
        sketches = {}
        for kind, options in (("hll", SMALL_HLL), ("pqa", SMALL_PQA)):
            path = directory / f"{kind}.sketch"
            with contextlib.redirect_stderr(io.StringIO()):
                assert main(["sketch", "--kind", kind, str(genome), "-o", str(path),
                             *options]) == 0
            sketches[kind] = path.read_bytes()
        return sketches


SKETCHES = _reference_sketches()

bases = st.text(alphabet="ACGTNacgtn", max_size=300).map(str.encode)
names = st.text(alphabet="abc xyz_.-|", max_size=12).map(str.encode)


@st.composite
def fasta(draw):
    records = draw(st.lists(st.tuples(names, bases, st.sampled_from([b"\n", b"\r\n"])),
                            max_size=4))
    return b"".join(b">" + name + end + seq + end for name, seq, end in records)


@st.composite
def fastq(draw):
    records = draw(st.lists(st.tuples(names, bases), max_size=4))
    return b"".join(b"@" + name + b"\n" + seq + b"\n+\n" + b"I" * len(seq) + b"\n"
                    for name, seq in records)


@st.composite
def with_nul_bytes(draw, texts):
    text = bytearray(draw(texts))
    for _ in range(draw(st.integers(1, 3))):
        text.insert(draw(st.integers(0, len(text))), 0)
    return bytes(text)


@st.composite
def gzipped(draw, texts):
    members = [gzip.compress(draw(texts), mtime=0) for _ in range(draw(st.integers(1, 3)))]
    data = b"".join(members)  # several members: concatenated gzip
    how = draw(st.sampled_from(["whole", "truncated", "trailing garbage"]))
    if how == "truncated":
        return data[:draw(st.integers(0, max(len(data) - 1, 0)))]
    if how == "trailing garbage":
        return data + draw(st.binary(min_size=1, max_size=40))
    return data


@st.composite
def damaged_sketch(draw):
    data = bytearray(SKETCHES[draw(st.sampled_from(sorted(SKETCHES)))])
    how = draw(st.sampled_from(["whole", "cut", "flipped"]))
    if how == "cut":
        return bytes(data[:draw(st.integers(0, len(data) - 1))])
    if how == "flipped":
        position = draw(st.integers(0, len(data) - 1))
        data[position] ^= 1 << draw(st.integers(0, 7))
    return bytes(data)


sequence_text = st.one_of(fasta(), fastq(), st.tuples(fasta(), fastq()).map(b"".join))
file_contents = st.one_of(
    sequence_text,
    st.binary(max_size=300),
    with_nul_bytes(sequence_text),
    gzipped(st.one_of(sequence_text, st.binary(max_size=100))),
    st.builds(lambda n, letter: b">long\n" + letter * n, st.integers(50_000, 400_000),
              st.sampled_from([b"A", b"ACGT", b"N"])),           # a huge line, no newline
    st.just(b""),
    damaged_sketch(),
)

output_targets = st.sampled_from(["new", "existing", "symlink", "dangling symlink", "-",
                                  "/dev/null", "directory", "missing directory"])

commands = st.sampled_from(["sketch hll", "sketch pqa", "dist", "dist phylip", "jsd", "merge",
                            "info", "motifs"])


def snapshot(directory: Path) -> dict:
    """Every entry below ``directory``: kind and content (or link target)."""
    state = {}
    for path in sorted(directory.rglob("*")):
        if path.is_symlink():
            state[str(path)] = ("link", os.readlink(path))
        elif path.is_dir():
            state[str(path)] = ("dir",)
        else:
            state[str(path)] = ("file", path.read_bytes())
    return state


def prepare_output(work: Path, target: str) -> str:
    if target in ("-", "/dev/null"):
        return target
    if target == "existing":
        (work / "out.txt").write_bytes(b"previous content\n")
    elif target == "symlink":
        (work / "real.txt").write_bytes(b"previous content\n")
        (work / "out.txt").symlink_to(work / "real.txt")
    elif target == "dangling symlink":
        (work / "out.txt").symlink_to(work / "created-by-the-run.txt")
    elif target == "directory":
        (work / "out.txt").mkdir()
    elif target == "missing directory":
        return str(work / "missing" / "out.txt")
    return str(work / "out.txt")


def arguments(command: str, inputs: list[str], output: str) -> list[str]:
    name, _, variant = command.partition(" ")
    if name == "sketch":
        return ["sketch", "--kind", variant, *inputs, "-o", output,
                *(SMALL_PQA if variant == "pqa" else SMALL_HLL)]
    if name == "dist":
        return ["dist", *inputs, "-o", output, *SMALL_HLL,
                *(["--format", "phylip"] if variant else [])]
    if name == "jsd":
        return ["jsd", *inputs, "-o", output, *SMALL_PQA]
    if name == "merge":
        return ["merge", *inputs, "-o", output]
    if name == "info":
        return ["info", *inputs]
    half = max(1, len(inputs) // 2)
    return ["motifs", "--test", *inputs[:half], "--control", *(inputs[half:] or inputs),
            "-o", output, *SMALL_MOTIFS]


def run_in_process(argv: list[str]) -> tuple[int, str]:
    stdout = io.TextIOWrapper(io.BytesIO(), encoding="utf-8")
    stderr = io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        try:
            status = main(argv)
        except SystemExit as exit_:  # usage errors, from argparse
            status = exit_.code
    return status, stderr.getvalue()


# CI runs a fixed bounded sample; KSA_FUZZ_EXAMPLES=5000 KSA_FUZZ_RANDOM=1 hunts further.
@settings(max_examples=int(os.environ.get("KSA_FUZZ_EXAMPLES", "120")), deadline=None,
          derandomize=not os.environ.get("KSA_FUZZ_RANDOM"), database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(contents=st.lists(file_contents, min_size=1, max_size=3), command=commands,
       target=output_targets)
def test_every_command_exits_0_or_2_with_one_line_and_touches_only_its_output(
        contents, command, target):
    with tempfile.TemporaryDirectory(prefix="ksa-fuzz-") as directory:
        work = Path(directory)
        inputs = []
        for index, content in enumerate(contents):
            path = work / f"input{index}.dat"
            path.write_bytes(content)
            inputs.append(str(path))
        output = prepare_output(work, target)
        before = snapshot(work)
        status, err = run_in_process(arguments(command, inputs, output))
        after = snapshot(work)

        assert status in (0, 2), (status, err)
        assert err.count("\n") <= 1 and "Traceback" not in err, err
        if status == 2:
            assert err.startswith("error: "), err
        changed = {path for path in set(before) | set(after) if before.get(path) != after.get(path)}
        allowed = set()
        if status == 0 and output not in ("-", "/dev/null"):
            allowed = {os.path.realpath(output)}
            if command == "dist phylip":  # the side file goes beside the name given
                allowed.add(os.path.realpath(output + ".params"))
        assert changed <= allowed, (changed, status, err)
        assert not any(".partial" in path for path in after), after
    sys.stdout.flush()
