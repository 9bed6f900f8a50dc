"""The host's input check (SPEC 1.1): trailing whitespace removed, other junk in sequence lines
refused, FASTQ records validated; the golden check (kmerspec.golden.parse.check_input) against
the native one in the sw backend's k-mer stream, and every backend on the same files."""

import contextlib
import gzip
import io
import random
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from host.cli import main
from host.fast.hll import sketch_files
from host.fast.native import native
from host.io import InputError, check_sequence, read_sequence_file
from host.reader import SequenceFile
from host.sketchfile import read_sketches
from kmerspec.golden.hll import HllParams
from kmerspec.golden.parse import InputFormatError, check_input, kmers
from sim.runner import available_simulators
from tests.genomes import random_genome_bytes

LAMBDA = Path(__file__).resolve().parents[1] / "examples" / "lambda_virus.fa.gz"

# bytes the parser and the check care about, junk included
ALPHABET = [b"A", b"C", b"G", b"T", b"N", b"\n", b"\n", b"\r", b" ", b"\t", b">", b"@", b"+",
            b"I", b"*", b"E", b"7", b"-", b"\x00", b"\xc3"]


def native_result(text: bytes, k: int, cuts) -> tuple:
    """("OK", k-mers) or ("ERR", message) of a check=True stream fed the pieces of ``text``."""
    stream = native.KmerStream(k, True, check=True)
    out = np.empty(len(text) + 1, dtype=np.uint64)
    words = []
    try:
        for start, end in zip([0, *cuts], [*cuts, len(text)]):
            count = stream.kmers(text[start:end], out)
            words += out[:count].tolist()
        stream.finish()
    except native.InputFormatError as error:
        return "ERR", str(error)
    return "OK", words


def golden_result(text: bytes, k: int) -> tuple:
    try:
        checked = check_input(text)
    except InputFormatError as error:
        return "ERR", str(error)
    return "OK", list(kmers(checked, k))


def structured_text(rng: random.Random) -> bytes:
    """A FASTA or FASTQ text, now and then with a wrong quality length or a record of the other
    kind, then a few bytes of ALPHABET inserted anywhere."""
    fastq = rng.random() < 0.5
    parts = []
    for _ in range(rng.randint(0, 4)):
        seq = bytes(rng.choice(b"ACGTN") for _ in range(rng.randint(0, 14)))
        if fastq:
            quality = b"I" * max(0, len(seq) + (rng.randint(-1, 1) if rng.random() < 0.2 else 0))
            parts.append(b"@r\n%s\n+\n%s\n" % (seq, quality))
        else:
            parts.append(b">r\n%s\n%s\n" % (seq[:6], seq[6:]))
    if rng.random() < 0.1:  # a record of the other kind
        parts.append(b">x\nACGT\n" if fastq else b"@x\nACGT\n+\nIIII\n")
    text = bytearray(b"".join(parts))
    for _ in range(rng.randint(0, 3)):
        position = rng.randrange(len(text) + 1)
        text[position:position] = rng.choice(ALPHABET) * rng.randint(1, 2)
    return bytes(text)


@pytest.mark.parametrize("seed", range(4))
def test_native_check_equals_golden_check(seed):
    """Same verdict, same message and, when accepted, the same k-mers, wherever the blocks are
    cut, and the same k-mers from the bytes host.io.check_sequence returns; both verdicts
    occur, and so does each kind of problem."""
    rng = random.Random(seed)
    verdicts = set()
    for _ in range(6000):
        if rng.random() < 0.5:
            text = structured_text(rng)
        else:
            text = b"".join(rng.choice(ALPHABET) for _ in range(rng.randint(0, 30)))
        k = rng.randint(1, 5)
        cuts = sorted(rng.sample(range(len(text) + 1), min(len(text) + 1, rng.randint(0, 4))))
        expected = golden_result(text, k)
        assert native_result(text, k, cuts) == expected, (text, cuts)
        if expected[0] == "OK":  # what the bytes path hands golden, sim and xrt
            assert list(kmers(check_sequence("x", text), k)) == expected[1], text
        verdicts.add("OK" if expected[0] == "OK" else
                     next((kind for kind in PROBLEMS if kind in expected[1]), expected[1]))
    assert verdicts == {"OK", *PROBLEMS}


PROBLEMS = ["protein", "in a sequence line", "inside a sequence line", "the quality line has",
            "expected the '+' line", "the file ends inside a FASTQ record",
            "a FASTA header ('>') in a FASTQ file", "a FASTQ header ('@') in a FASTA file",
            "expected a FASTQ header"]


@pytest.mark.parametrize("fastq", [False, True])
def test_every_byte_is_judged_alike(fastq):
    """The native byte tables (codes, protein letters) are golden's, byte for byte, in FASTA
    and FASTQ sequence lines."""
    kinds = set()
    for byte in range(256):
        line = b"AC" + bytes([byte]) + b"GT"
        text = (b"@r\n%s\n+\n%s\n" % (line, b"I" * len(line)) if fastq
                else b">a\n%s\nACGT\n" % line)
        expected = golden_result(text, 3)
        assert native_result(text, 3, [len(text) // 2]) == expected, byte
        kinds.add("OK" if expected[0] == "OK" else
                  next((kind for kind in PROBLEMS if kind in expected[1]), expected[1]))
    # in FASTQ a line feed makes the record 5 lines, and a CR (ignored) the sequence shorter
    assert kinds == {"OK", "protein", "in a sequence line", "inside a sequence line",
                     *(["expected the '+' line", "the quality line has"] if fastq else [])}


CASES = [
    # (text, accepted text or None, message)
    (b">a\nACGT  \nACGT\t\r\n", b">a\nACGT\nACGT\n", None),
    (b">a desc  \n  \nACGT \n", b">a desc\n\nACGT\n", None),
    (b"@r\nACGT \n+ \nIIII  \n", b"@r\nACGT\n+\nIIII\n", None),
    (b">a\nACGT\n>b\nRYKMN-.x\nU\n", b">a\nACGT\n>b\nRYKMN-.x\nU\n", None),
    (b">a\nACGT*\n", None, "record 1, line 2: '*' in a sequence line (column 5): this looks "
                           "like a protein sequence"),
    (b">a\nAC\n>b\nMEFLPQ\n", None, "record 2, line 4: 'E' in a sequence line (column 2): "
                                    "this looks like a protein"),
    (b">a\nACGT7\n", None, "record 1, line 2: '7' in a sequence line (column 5): not a "
                           "nucleotide code"),
    (b">a\nACGT\nAC GT\n", None, "record 1, line 3: a space inside a sequence line (column 3)"),
    (b">a\n\tACGT\n", None, "record 1, line 2: a tab inside a sequence line (column 1)"),
    (b">a\nAC\x01GT\n", None, "record 1, line 2: byte 0x01 in a sequence line (column 3)"),
    (b">a\nAC\xc3\xa9GT\n", None, "record 1, line 2: byte 0xc3 in a sequence line (column 3)"),
    (b"@r\nACGT\n+\nIII\n", None, "record 1, line 4: the quality line has 3 characters, the "
                                  "sequence 4"),
    (b"@r\nACGT\n+\nIIII\n@s\nACGT\nIIII\n", None,
     "record 2, line 7: expected the '+' line of a FASTQ record"),
    (b"@r\nACGT\n+\nIIII\n@s\nACGT\n", None, "record 2: the file ends inside a FASTQ record"),
    (b"@r\nACGT\n+\nIIII\n@s\nACGT\n+\n", None, "record 2: the file ends inside a FASTQ record"),
    (b"@r\nACGT\n+\nIIII\n>s\nACGT\n", None, "record 2, line 5: a FASTA header ('>') in a FASTQ "
                                             "file"),
    (b"@r\nACGT\n+\nIIII\nACGT\n", None, "record 1, line 5: expected a FASTQ header ('@')"),
    (b">a\n>b\n@c\nACGT\n+\nIIII\n", None, "record 3, line 3: a FASTQ header ('@') in a FASTA "
                                           "file"),
]


@pytest.mark.parametrize("text, accepted, message", CASES)
def test_each_rule(tmp_path, text, accepted, message):
    """Golden, the bytes path (host.io.check_sequence) and the sw stream say the same."""
    path = tmp_path / "x.fa"
    path.write_bytes(text)
    if accepted is not None:
        assert check_input(text) == accepted
        assert check_sequence(path, text) == accepted == read_sequence_file(path)
        params = HllParams(8, 4)
        assert sketch_files([SequenceFile(path)], 3, params).tolist() == \
            sketch_files([accepted], 3, params).tolist()
        return
    with pytest.raises(InputFormatError, match=message.replace("(", r"\(").replace(")", r"\)")
                       .replace("*", r"\*").replace("+", r"\+")):
        check_input(text)
    for read in (read_sequence_file, lambda p: sketch_files([SequenceFile(p)], 3,
                                                            HllParams(8, 4))):
        with pytest.raises(InputError) as error:
            read(path)
        assert str(error.value).startswith(f"{path}: {message}")
        assert str(error.value) == f"{path}: {check_input_message(text)}"


def check_input_message(text):
    try:
        check_input(text)
    except InputFormatError as error:
        return str(error)
    raise AssertionError("accepted")


def test_checked_text_checks_again_to_itself():
    rng = random.Random(9)
    for _ in range(2000):
        text = structured_text(rng)
        try:
            checked = check_input(text)
        except InputFormatError:
            continue
        assert check_input(checked) == checked


@pytest.fixture(scope="module")
def lambda_variants(tmp_path_factory):
    """Phage lambda as given, with a space and a tab at every line end (gzip), and with '*' at
    its last sequence line's end."""
    directory = tmp_path_factory.mktemp("lambda")
    text = gzip.decompress(LAMBDA.read_bytes())
    lines = text.split(b"\n")
    spaced = b"\n".join(line + b" \t" if line else line for line in lines)
    starred = text.rstrip(b"\n") + b"*\n"  # its last line is its 694th
    paths = {"clean": directory / "lambda.fa", "spaced": directory / "spaced.fa.gz",
             "starred": directory / "starred.fa"}
    paths["clean"].write_bytes(text)
    paths["spaced"].write_bytes(gzip.compress(spaced))
    paths["starred"].write_bytes(starred)
    return paths, text


@pytest.mark.parametrize("backend", ["sw", "golden"])
def test_lambda_with_trailing_whitespace_sketches_as_lambda(tmp_path, lambda_variants, backend):
    """The issue's figure: trailing spaces split every line's k-mers (about 27k instead of
    about 49k distinct 31-mers). Now the sketch is the clean file's, by the sw backend (which
    streams the file through the native check) and the golden one (bytes via host.io)."""
    paths, _ = lambda_variants
    outputs = {}
    for name in ("clean", "spaced"):
        out = tmp_path / f"{name}.sketch"
        assert main(["sketch", str(paths[name]), "--index-bits", "12", "-o", str(out),
                     "--backend", backend]) == 0
        outputs[name] = read_sketches(out).registers()
    assert np.array_equal(outputs["spaced"], outputs["clean"])
    distinct = len(set(kmers(paths["clean"].read_bytes(), 31)))
    assert 48_000 < distinct < 49_000


@pytest.mark.parametrize("backend", ["sw", "golden"])
def test_lambda_with_a_star_is_refused_with_its_line(tmp_path, lambda_variants, capsys,
                                                     backend):
    paths, text = lambda_variants
    out = tmp_path / "x.sketch"
    assert main(["sketch", str(paths["starred"]), "-o", str(out), "--backend", backend]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    last_line = text.rstrip(b"\n").split(b"\n")
    assert (len(last_line), len(last_line[-1])) == (694, 62)
    assert err == [f"error: {paths['starred']}: record 1, line 694: '*' in a sequence "
                   f"line (column 63): this looks like a protein sequence; only nucleotide "
                   f"sequences can be sketched"]
    assert not out.exists()


@pytest.mark.parametrize("backend", ["sw", "golden"])
@pytest.mark.parametrize("text, message", [
    (b"@r1\nACGTACGT\n+\nIIIIIIII\n@r2\nACGTACGT\n+\nIIIIIII\n",
     "record 2, line 8: the quality line has 7 characters, the sequence 8"),
    (b"@r1\nACGTACGT\n+\nIIIIIIII\n@r2\nACGTACGT\n@r3\nACGT\n+\nIIII\n",
     "record 2, line 7: expected the '+' line of a FASTQ record"),
    (b"@r1\nACGTACGT\n+\nIIIIIIII\n@r2\nACGTACGT\n",
     "record 2: the file ends inside a FASTQ record"),
    (b"@r1\nACGTACGT\n+\nIIIIIIII\n>contig\nACGTACGT\n",
     "record 2, line 5: a FASTA header ('>') in a FASTQ file"),
])
def test_bad_fastq_is_refused_with_its_record(tmp_path, capsys, backend, text, message):
    path = tmp_path / "reads.fq"
    path.write_bytes(text)
    out = tmp_path / "x.sketch"
    assert main(["sketch", str(path), "--k", "5", "-o", str(out), "--backend", backend]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"error: {path}: {message}")
    assert not out.exists()


@pytest.mark.skipif(not available_simulators(), reason="no HDL simulator")
def test_the_kernel_gets_checked_bytes(tmp_path, capsys):
    """`--backend sim` (the jacc_sketch Verilog, whose parser breaks the window at a space)
    sketches a file with trailing whitespace as `sw` sketches the clean file, and refuses what
    the check refuses before any kernel call."""
    rng = random.Random(8)
    clean = random_genome_bytes(rng, records=3, length=400, line=50)
    lines = clean.split(b"\n")
    spaced = b"\n".join(line + b"  " if line and line[:1] != b">" else line for line in lines)
    paths = {"clean": tmp_path / "clean.fa", "spaced": tmp_path / "spaced.fa"}
    paths["clean"].write_bytes(clean)
    paths["spaced"].write_bytes(spaced)
    registers = {}
    for name, backend in (("clean", "sw"), ("spaced", "sim")):
        out = tmp_path / f"{name}.sketch"
        assert main(["sketch", str(paths[name]), "--index-bits", "10", "--k", "21", "-o", str(out),
                     "--backend", backend]) == 0
        registers[name] = read_sketches(out).registers()
    assert registers["spaced"].any()
    assert np.array_equal(registers["spaced"], registers["clean"])
    bad = tmp_path / "bad.fq"
    bad.write_bytes(b"@r\nACGTACGTACGTACGTACGTACGT\n+\nIIII\n")
    capsys.readouterr()
    assert main(["sketch", str(bad), "--index-bits", "10", "--k", "21", "-o", str(tmp_path / "x"),
                 "--backend", "sim"]) == 2
    assert capsys.readouterr().err.strip() == (f"error: {bad}: record 1, line 4: the quality "
                                               f"line has 4 characters, the sequence 24")


@st.composite
def edited_sequence_files(draw):
    """A FASTA or FASTQ text with a few edits where users make them: spaces, tabs and CR at
    line ends, '*', digits, a dropped or extra quality byte, a stray header of the other kind."""
    fastq = draw(st.booleans())
    records = draw(st.lists(st.text(alphabet="ACGTNacgt", max_size=60).map(str.encode),
                            max_size=4))
    if fastq:
        text = b"".join(b"@r\n%s\n+\n%s\n" % (seq, b"I" * len(seq)) for seq in records)
    else:
        text = b"".join(b">r\n%s\n%s\n" % (seq[:30], seq[30:]) for seq in records)
    lines = text.split(b"\n")
    for _ in range(draw(st.integers(0, 3))):
        index = draw(st.integers(0, len(lines) - 1))
        edit = draw(st.sampled_from([b" ", b"\t", b" \r", b"*", b"7", b"-I", b"DROP",
                                     b">x", b"@x"]))
        if edit == b"DROP":
            lines[index] = lines[index][:-1]
        elif edit in (b">x", b"@x"):
            lines.insert(index, edit)
        else:
            lines[index] += edit.replace(b"-", b"")
    return b"\n".join(lines)


@settings(max_examples=60, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(texts=st.lists(edited_sequence_files(), min_size=1, max_size=2))
def test_sw_and_golden_backends_agree_on_edited_files(tmp_path_factory, texts):
    """Same exit status, same stderr and, when accepted, the same sketch, and that of the text
    check_input returns."""
    work = tmp_path_factory.mktemp("edited")
    paths = []
    for index, text in enumerate(texts):
        paths.append(work / f"g{index}.fa")
        paths[-1].write_bytes(text)
    results = {}
    for backend in ("sw", "golden"):
        out = work / f"{backend}.sketch"
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            status = main(["sketch", *map(str, paths), "--k", "5", "--index-bits", "8", "-o", str(out),
                           "--backend", backend])
        results[backend] = (status, err.getvalue(),
                            read_sketches(out).registers().tolist() if status == 0
                            else None)
    assert results["sw"] == results["golden"]
    status, err, registers = results["sw"]
    assert status in (0, 2) and err.count("\n") <= 1
    accepted = []
    for path, text in zip(paths, texts):
        if text.lstrip(b" \t\r\n")[:1] not in (b"", b">", b"@"):  # host.io's format sniff
            assert status == 2 and err.startswith(f"error: {path}: not a FASTA/FASTQ file")
            return
        try:
            accepted.append(check_input(text))
        except InputFormatError as error:
            # the first refused file is the one named; its message is check_input's
            assert status == 2 and err == f"error: {path}: {error}\n"
            return
    assert status == 0
    assert registers == [sketch_files([text], 5, HllParams(8, 4)).tolist() for text in accepted]


@pytest.mark.parametrize("backend", ["sw", "golden"])
def test_jsd_and_motifs_read_checked_files_too(tmp_path, lambda_variants, capsys, backend):
    """The JSD engine's sampling pass (sw: streamed) and the motif engine (bytes) see the file
    without its trailing whitespace, and refuse the starred one."""
    paths, _ = lambda_variants
    pqa = {}
    for name in ("clean", "spaced"):
        out = tmp_path / f"{name}.sketch"
        assert main(["sketch", "--kind", "pqa", str(paths[name]), "--s", "4", "-o", str(out),
                     "--backend", backend]) == 0
        pqa[name] = read_sketches(out).arrays
    assert pqa["spaced"]["values"].any()
    assert all(np.array_equal(pqa["spaced"][key], pqa["clean"][key]) for key in pqa["clean"])
    motifs = {}
    for name in ("clean", "spaced"):
        out = tmp_path / f"{name}.tsv"
        assert main(["motifs", "--test", str(paths[name]), "--control", str(paths["clean"]),
                     "--kmin", "8", "--kmax", "9", "--threshold", "2", "-o", str(out),
                     "--backend", backend]) == 0
        motifs[name] = [line for line in out.read_text().splitlines()
                        if not line.startswith("#")]  # the comment lines name the files
    assert len(motifs["clean"]) > 100 and motifs["spaced"] == motifs["clean"]
    capsys.readouterr()
    assert main(["sketch", "--kind", "pqa", str(paths["starred"]), "-o", str(tmp_path / "x"),
                 "--backend", backend]) == 2
    assert "record 1, line 694: '*' in a sequence line" in capsys.readouterr().err
