"""Damaged and crafted sketch files (issue 51, item 5): the reader (host.sketchfile with
host.sketch_archive) validates before it allocates, and any damage is the one line
``FILE: damaged sketch file (CAUSE)``, exit status 2, never an internal error.

* every byte of a small sketch file flipped two ways (xor 0x01 and 0xff), and the file cut at
  every length: each read either gives the original sketch back (a flip in a field the
  reader does not use: a time stamp, the "made by" version, the file attributes) or is refused
  as damaged. On the reader before issue 51 (numpy's np.load), 14 of these 2,562 flips of the
  1,281-byte file ended in internal errors (12 NotImplementedError "zip file version 21.0", 2
  RuntimeError "File 'header.npy' is encrypted"), 291 read back (a flipped register within
  range among them: a different sketch), and the flipped magic was "not a sketch file";
* crafted files, each a whole zip archive with correct CRCs, so that the check that refuses it
  is the one named: a JSON header nested 200,000 deep (RecursionError before), a deflated
  header that would expand to 256 MiB (read in full before), an .npy header claiming 2^40
  registers (MemoryError, "out of memory", before), an .npy header numpy's parser chokes on
  (TokenError before), a zip member "encrypted", a newer format version ("unsupported"
  before), a genome named '' (accepted before);
* through the command line, the same damage is one line and exit status 2.
"""

import io
import json
import zipfile
import zlib

import numpy as np
import pytest

from host.io import InputError
from host.sketchfile import FORMAT, FORMAT_VERSION, SketchSet, read_sketches, write_sketches
from tests.cli_helpers import run


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    """A sketch file of two genomes at p = 9 (1.3 kB, the registers packed two a byte): a flip
    lands in every structure."""
    rng = np.random.default_rng(5)
    sketches = SketchSet(kind="hll", params={"k": 21, "p": 9, "w": 4, "canonical": True,
                                             "hash": "fmix64"},
                         names=["a.fa", "b.fa"], files=[["a.fa"], ["b.fa"]],
                         arrays={"registers": rng.integers(0, 16, (2, 512), dtype=np.uint8)})
    path = tmp_path_factory.mktemp("damage") / "small.sketch"
    write_sketches(path, sketches)
    return path


def outcome(path) -> str:
    """"ok", or the cause of the one-line refusal; an internal error fails the test."""
    try:
        read_sketches(path)
    except InputError as error:
        message = str(error)
        assert message.startswith(f"{path}: damaged sketch file ("), message
        assert "\n" not in message
        return message
    return "ok"


def test_every_byte_flipped_and_every_cut_is_refused_as_damage(small, tmp_path):
    original = small.read_bytes()
    expected = read_sketches(small)
    target = tmp_path / "flipped.sketch"
    refused = read_back = 0
    for offset in range(len(original)):
        for mask in (0x01, 0xFF):
            data = bytearray(original)
            data[offset] ^= mask
            target.write_bytes(data)
            if outcome(target) == "ok":
                again = read_sketches(target)   # a harmless flip: the very same sketch
                assert again.names == expected.names and again.params == expected.params
                assert np.array_equal(again.registers(), expected.registers())
                read_back += 1
            else:
                refused += 1
    for length in range(len(original)):
        target.write_bytes(original[:length])
        if length:
            assert outcome(target) != "ok"
    # the CRC and the structure checks refuse nearly all of them; what reads back is metadata
    assert refused > 0.95 * (refused + read_back)


def archive(members: dict, method=zipfile.ZIP_STORED) -> bytes:
    """A zip archive of ``members`` (name -> bytes), as numpy would write their .npy files."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=method) as archive_file:
        for name, data in members.items():
            archive_file.writestr(name, data)
    return buffer.getvalue()


def npy(array: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, array)
    return buffer.getvalue()


def header_bytes(**changes) -> bytes:
    header = {"format": FORMAT, "format_version": FORMAT_VERSION, "tool_version": "0.1.0",
              "kind": "hll", "params": {"k": 21, "p": 8, "w": 4, "canonical": True,
                                        "hash": "fmix64"},
              "genomes": [{"name": "a.fa", "files": ["a.fa"]}]}
    header.update(changes)
    return json.dumps(header).encode()


def sketch_of(header: bytes, registers: bytes | None = None, method=zipfile.ZIP_STORED):
    # format version 2: p = 8, w = 4 is 128 bytes of registers packed two a byte
    registers = npy(np.zeros((1, 128), dtype=np.uint8)) if registers is None else registers
    return archive({"header.npy": npy(np.frombuffer(header, dtype=np.uint8)),
                    "registers.npy": registers}, method)


def test_a_well_formed_crafted_file_reads(tmp_path):
    """The crafting itself makes readable files: each crafted case below fails for its cause."""
    path = tmp_path / "fine.sketch"
    path.write_bytes(sketch_of(header_bytes()))
    assert read_sketches(path).names == ["a.fa"]


def crafted_npy_header(text: str) -> bytes:
    body = text.encode("latin-1")
    body += b" " * (-(10 + len(body) + 1) % 64) + b"\n"
    return b"\x93NUMPY\x01\x00" + len(body).to_bytes(2, "little") + body


@pytest.mark.parametrize("name, data, cause", [
    ("nested JSON", lambda: sketch_of(b"[" * 200_000 + b"]" * 200_000),
     "header: JSON nested 200000 deep"),
    ("deflated bomb", lambda: sketch_of(header_bytes(), npy(np.zeros((1, 1 << 28), np.uint8)),
                                        zipfile.ZIP_DEFLATED),
     "compression method 8"),
    ("2^40 registers", lambda: sketch_of(header_bytes(), crafted_npy_header(
        "{'descr': '|u1', 'fortran_order': False, 'shape': (65536, 16777216), }")),
     "registers.npy: |u1 [65536, 16777216], expected |u1 [1, 128]"),
    ("npy tokens", lambda: sketch_of(header_bytes(), crafted_npy_header(
        "{'descr': '|u1', 'fortran_order': False, 'shape': (1, 128), '''}")),
     "registers.npy: .npy header"),
    ("npy nested", lambda: sketch_of(header_bytes(), crafted_npy_header(
        "{'descr': '|u1', 'fortran_order': False, 'shape': " + "(" * 3000 + ")" * 3000 + "}")),
     "registers.npy: .npy header of"),
    ("empty name", lambda: sketch_of(header_bytes(genomes=[{"name": "", "files": ["x"]}])),
     "header: genome 1 has an empty name"),
    ("no format", lambda: sketch_of(header_bytes(format="other")),
     "header: format 'other'"),
])
def test_crafted_files_are_damaged_sketch_files(tmp_path, name, data, cause):
    path = tmp_path / "crafted.sketch"
    path.write_bytes(data())
    message = outcome(path)
    assert cause in message, message


def test_zip_features_the_writer_does_not_use_are_damage(small, tmp_path):
    original = small.read_bytes()
    central = original.index(b"PK\x01\x02")
    for field, value, cause in ((6, 0x01, "encrypted"), (4, 210, "needs zip version 21.0"),
                                (8, 8, "compression method 8")):
        data = bytearray(original)
        for header in (0, central + 2):       # the local header and its directory entry
            data[header + field] = value
        path = tmp_path / "feature.sketch"
        path.write_bytes(data)
        assert cause in outcome(path)


def test_a_newer_format_version_says_so(tmp_path, capsys):
    path = tmp_path / "newer.sketch"
    path.write_bytes(sketch_of(header_bytes(format_version=99, tool_version="9.0")))
    assert run("info", path) == 2
    assert capsys.readouterr().err == (
        f"error: {path}: made by a newer version of kmer-sketch-accel 9.0 (sketch format version "
        f"99; this version, 0.1.0, reads versions 1 to 2): upgrade kmer-sketch-accel to read "
        f"it\n")


@pytest.mark.parametrize("command", ["info", "merge", "dist", "search"])
def test_damage_is_one_line_exit_2_through_the_command_line(small, tmp_path, capsys, command):
    data = bytearray(small.read_bytes())
    data[len(data) // 2] ^= 0xFF        # a register: only the CRC tells
    path = tmp_path / "d.sketch"
    path.write_bytes(data)
    arguments = {"info": [path], "merge": [path, "-o", tmp_path / "m.sketch"],
                 "dist": [path], "search": [path, "--db", small]}[command]
    assert run(command, *arguments) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {path}: damaged sketch file (registers.npy: CRC-32 ")
    assert err.count("\n") == 1
    assert not (tmp_path / "m.sketch").exists()


def test_the_reader_allocates_no_more_than_the_file_holds(tmp_path):
    """A 256 MiB deflated member and a 2^40-register claim are refused before the reader
    allocates anything of their size (tracemalloc's peak stays under 1 MiB)."""
    import tracemalloc
    for data in (sketch_of(header_bytes(), npy(np.zeros((1, 1 << 28), np.uint8)),
                           zipfile.ZIP_DEFLATED),
                 sketch_of(header_bytes(), crafted_npy_header(
                     "{'descr': '|u1', 'fortran_order': False, 'shape': (65536, 16777216), }"))):
        path = tmp_path / "big.sketch"
        path.write_bytes(data)
        tracemalloc.start()
        with pytest.raises(InputError, match="damaged sketch file"):
            read_sketches(path)
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        assert peak < 1 << 20, peak


def test_crc_is_what_the_archive_records(small):
    """The reader's CRC is zip's (zlib.crc32 of the member), so an intact file passes."""
    with zipfile.ZipFile(small) as archive_file:
        for info in archive_file.infolist():
            assert zlib.crc32(archive_file.read(info.filename)) == info.CRC
    assert read_sketches(small).names == ["a.fa", "b.fa"]


def test_zip64_structures_are_read_as_numpy_writes_them(small, tmp_path, monkeypatch):
    """A sketch file past 4 GiB has zip64 sizes and offsets in its central directory and a zip64
    end record; zipfile writes them for any file once its limit is lowered, so the reader's
    zip64 path is checked on a small file."""
    import zipfile as zipfile_module
    sketches = read_sketches(small)
    monkeypatch.setattr(zipfile_module, "ZIP64_LIMIT", 64)
    monkeypatch.setattr(zipfile_module, "ZIP_FILECOUNT_LIMIT", 1)
    big = tmp_path / "zip64.sketch"
    write_sketches(big, sketches)
    monkeypatch.undo()
    data = big.read_bytes()
    assert b"PK\x06\x06" in data and b"PK\x06\x07" in data      # zip64 end record, locator
    again = read_sketches(big)
    assert again.names == sketches.names
    assert np.array_equal(again.registers(), sketches.registers())
