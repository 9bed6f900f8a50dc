"""Compressed inputs named as such (bzip2 and xz read, zstd and lz4 refused by name), gzip
with trailing garbage told from a truncated one, and a sketch file with a damaged magic named
as a sketch file; whole-file reads (golden, sim, xrt) and streamed ones (sw) alike."""

import bz2
import gzip
import lzma
from pathlib import Path

import pytest

from host.cli import main
from host.io import InputError, read_sequence_file
from host.reader import SequenceFile, sequence_blocks
from host.sketchfile import read_sketches

LAMBDA = Path(__file__).resolve().parents[1] / "examples" / "lambda_virus.fa.gz"
TEXT = gzip.decompress(LAMBDA.read_bytes())


def blocks_into(path) -> bytes:
    """The file streamed into one buffer (SequenceFile.blocks_into, the sketch path)."""
    return b"".join(bytes(block) for block in SequenceFile(path).blocks_into(bytearray(1 << 16)))


def both_reads(path):
    """The whole-file read and the streamed ones, which must agree."""
    whole = read_sequence_file(path)
    assert b"".join(sequence_blocks(path, block_bytes=4096)) == whole
    assert blocks_into(path) == whole
    return whole


def both_errors(path) -> str:
    messages = []
    for read in (read_sequence_file, lambda p: list(sequence_blocks(p, block_bytes=4096)),
                 blocks_into):
        with pytest.raises(InputError) as error:
            read(path)
        messages.append(str(error.value))
    assert messages[0] == messages[1] == messages[2]
    return messages[0]


@pytest.mark.parametrize("suffix, compress", [(".bz2", bz2.compress), (".xz", lzma.compress)])
def test_bzip2_and_xz_are_read(tmp_path, suffix, compress):
    path = tmp_path / f"lambda.fa{suffix}"
    path.write_bytes(compress(TEXT))
    assert both_reads(path) == TEXT
    plain = tmp_path / "lambda.fa"
    plain.write_bytes(TEXT)
    registers = []
    for source, backend in ((plain, "sw"), (path, "sw"), (path, "golden")):
        out = tmp_path / f"{backend}.sketch"
        assert main(["sketch", str(source), "--index-bits", "10", "-o", str(out),
                     "--backend", backend]) == 0
        registers.append(read_sketches(out).registers().tolist())
    assert registers[1] == registers[2] == registers[0]


@pytest.mark.parametrize("suffix, compress, message", [
    (".bz2", bz2.compress, "truncated bzip2 file"),
    (".xz", lzma.compress, "truncated xz file"),
])
def test_truncated_bzip2_and_xz_are_named(tmp_path, suffix, compress, message):
    path = tmp_path / f"cut.fa{suffix}"
    path.write_bytes(compress(TEXT)[:5000])
    assert both_errors(path) == f"{path}: {message} (ends before the end of the compressed stream)"


@pytest.mark.parametrize("name, magic, tool", [
    ("zstd", b"\x28\xb5\x2f\xfd", "zstd -d"),
    ("lz4", b"\x04\x22\x4d\x18", "lz4 -d"),
])
def test_zstd_and_lz4_are_refused_by_name(tmp_path, capsys, name, magic, tool):
    path = tmp_path / f"genome.fa.{name}"
    path.write_bytes(magic + b"\x00\x01compressed bytes")
    assert both_errors(path) == (f"{path}: {name}-compressed, which is not read here; "
                                 f"decompress it first ({tool} {path}), or compress it with gzip")
    for backend in ("sw", "golden"):
        assert main(["sketch", str(path), "-o", str(tmp_path / "x.sketch"),
                     "--backend", backend]) == 2
        assert f"{name}-compressed" in capsys.readouterr().err


COMPRESSED = gzip.compress(TEXT, mtime=0)


@pytest.mark.parametrize("tail", [b"garbage\n", b"x", b"\x1f", b"<html>"])
def test_gzip_with_trailing_garbage_says_where(tmp_path, tail):
    """Not "truncated": the stream is whole, and what follows it is named with its offset (ISA-L
    reports a one-byte tail as a truncation; the diagnosis walks the members itself)."""
    path = tmp_path / "g.fa.gz"
    path.write_bytes(COMPRESSED + tail)
    assert both_errors(path) == (f"{path}: trailing garbage after the gzip stream at byte "
                                 f"{len(COMPRESSED)} (of {len(COMPRESSED) + len(tail)})")


def test_gzip_members_zero_padding_and_truncation(tmp_path):
    path = tmp_path / "g.fa.gz"
    path.write_bytes(COMPRESSED + COMPRESSED + b"\x00" * 512)  # gzip ignores zero padding too
    assert both_reads(path) == TEXT + TEXT
    path.write_bytes(COMPRESSED[:-30])
    assert both_errors(path) == (f"{path}: truncated gzip file (ends before the end of the "
                                 f"compressed stream)")
    path.write_bytes(COMPRESSED + COMPRESSED[:100])
    assert both_errors(path) == (f"{path}: truncated gzip file (ends before the end of the "
                                 f"compressed stream of the member at byte {len(COMPRESSED)})")
    path.write_bytes(COMPRESSED[:10] + b"\xff" * 50)
    assert both_errors(path).startswith(f"{path}: corrupt gzip file (")


def test_a_sketch_with_a_damaged_magic_is_named_a_sketch(tmp_path, capsys):
    genome = tmp_path / "lambda.fa"
    genome.write_bytes(TEXT)
    sketch = tmp_path / "r.sketch"
    assert main(["sketch", str(genome), "--index-bits", "10", "-o", str(sketch)]) == 0
    damaged = bytearray(sketch.read_bytes())
    damaged[0] ^= 0x20
    sketch.write_bytes(bytes(damaged))
    capsys.readouterr()
    # dist, given a file named .sketch, reads it as a sketch file (host.api.sketching); a zip
    # archive holding a sketch header whose magic is flipped is a damaged sketch file (issue 51)
    as_sketch = (f"error: {sketch}: damaged sketch file (bad magic b'pK\\x03\\x04', expected "
                 f"b'PK\\x03\\x04')")
    for command, expected in ((["dist", str(sketch), "-o", str(tmp_path / "d.tsv")], as_sketch),
                              (["dist", str(sketch), str(genome), "-o",
                                str(tmp_path / "d.tsv")], as_sketch),
                              (["info", str(sketch)], as_sketch),
                              (["merge", str(sketch), "-o", str(tmp_path / "m.sketch")],
                               as_sketch)):
        assert main(command) == 2
        assert capsys.readouterr().err.strip().splitlines() == [expected]
    # under another name it may be a sequence file too: the message says it is neither
    renamed = tmp_path / "r.dat"
    renamed.write_bytes(bytes(damaged))
    assert main(["dist", str(renamed), str(genome), "-o", str(tmp_path / "d.tsv")]) == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        f"error: {renamed}: not a sketch file (bad magic b'pK\\x03\\x04', expected "
        f"b'PK\\x03\\x04'), nor a FASTA/FASTQ file: a damaged sketch file?"]


def test_gzip_diagnosis_across_its_read_chunks(tmp_path):
    """Members larger than the 1 MiB the diagnosis reads at a time: the offsets stay exact."""
    import random
    rng = random.Random(2)
    text = b">r\n" + bytes(rng.choice(b"ACGT") for _ in range(6_000_000)) + b"\n"
    member = gzip.compress(text, compresslevel=1, mtime=0)
    assert len(member) > 1_500_000
    path = tmp_path / "big.fa.gz"
    path.write_bytes(member + member + b"junk")
    assert both_errors(path) == (f"{path}: trailing garbage after the gzip stream at byte "
                                 f"{2 * len(member)} (of {2 * len(member) + 4})")
    path.write_bytes(member + member[:-1000])
    assert both_errors(path) == (f"{path}: truncated gzip file (ends before the end of the "
                                 f"compressed stream of the member at byte {len(member)})")
