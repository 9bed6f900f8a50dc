"""host.sketchfile.write_sketches writes a sketch file with zipfile and the .npy header format
alone (the sketch command imports no numpy): byte for byte what ``numpy.savez`` writes of the same
arrays, at every shape the format holds, to a file and to a pipe, from numpy arrays and from the
sketch command's host.registers.PackedRows."""

import io
import json
import zipfile

import numpy as np
import pytest

from host.registers import PackedRows, pack_registers, pack_row, saturated_counts
from host.sketchfile import SketchSet, npy_header, read_sketches, write_sketches
from kmerspec.golden.hll import HllParams, top_rank


class _Pipe(io.RawIOBase):
    """A write-only stream that cannot seek or tell, as standard output into a pipe."""

    def __init__(self):
        self.data = bytearray()

    def writable(self):
        return True

    def write(self, data):
        self.data += data
        return len(data)


@pytest.fixture(autouse=True)
def _one_clock(monkeypatch):
    """zip members carry the time they were written: one clock for both writers."""
    monkeypatch.setattr("time.time", lambda: 1_700_000_000.0)


def _written(sketches: SketchSet, target) -> bytes:
    write_sketches(target, sketches)
    return bytes(target.data) if isinstance(target, _Pipe) else target.getvalue()


def _numpy_savez(written: bytes, sketches: SketchSet, target) -> bytes:
    """What numpy.savez writes of the written file's header and the set's arrays."""
    with np.load(io.BytesIO(written)) as archive:  # numpy reads the file too
        header = archive["header"]
        assert list(archive.files) == ["header", *sketches.arrays]
        for name in sketches.arrays:
            assert np.array_equal(archive[name], sketches.arrays[name])
    np.savez(target, header=header, **{name: sketches.arrays[name] for name in sketches.arrays})
    return bytes(target.data) if isinstance(target, _Pipe) else target.getvalue()


def _hll_set(genomes: int, p: int, w: int, seed: int = 0) -> SketchSet:
    rng = np.random.default_rng(seed + 100 * p + w)
    registers = rng.integers(0, 1 << w, (genomes, 1 << p), dtype=np.uint8)
    return SketchSet(kind="hll", params={"k": 21, "p": p, "w": w, "canonical": True,
                                         "hash": "fmix64"},
                     names=[f"genome {i} é" for i in range(genomes)],
                     files=[[f"/data/g{i}.fa"] for i in range(genomes)],
                     arrays={"registers": registers})


@pytest.mark.parametrize("target", [io.BytesIO, _Pipe], ids=["file", "pipe"])
@pytest.mark.parametrize("p, w", [(8, 4), (10, 5), (12, 6), (14, 4), (16, 7), (18, 8)])
@pytest.mark.parametrize("genomes", [0, 1, 7])
def test_hll_files_are_what_numpy_savez_writes(p, w, genomes, target):
    sketches = _hll_set(genomes, p, w)
    written = _written(sketches, target())
    assert written == _numpy_savez(written, sketches, target())


@pytest.mark.parametrize("target", [io.BytesIO, _Pipe], ids=["file", "pipe"])
@pytest.mark.parametrize("p, w", [(8, 4), (14, 4), (11, 6)])
def test_packed_rows_are_written_as_their_numpy_array(p, w, target):
    """The sketch command's registers (PackedRows, filled a row at a time by pack_row) are
    written as numpy.savez writes the same registers packed by pack_registers."""
    params = HllParams(p, w)
    arrays = _hll_set(5, p, w, seed=1)
    one_a_byte = arrays.registers()
    rows = PackedRows(5, params)
    for index, genome in enumerate(one_a_byte):
        pack_row(bytearray(genome.tobytes()), params, rows.row(index))
    nibbles = one_a_byte[:, 0::2] | (one_a_byte[:, 1::2] << 4) if w == 4 else one_a_byte
    assert bytes(rows.data) == pack_registers(one_a_byte, params).tobytes() == nibbles.tobytes()
    sketches = SketchSet(kind="hll", params=arrays.params, names=arrays.names,
                         files=arrays.files, arrays={"registers": rows})
    assert saturated_counts(sketches.held_registers(), params) == \
        [int((genome == top_rank(params)).sum()) for genome in one_a_byte]
    written = _written(sketches, target())
    assert written == _numpy_savez(written, arrays, target())


@pytest.mark.parametrize("genomes", [0, 1, 3])
def test_pqa_files_are_what_numpy_savez_writes(genomes):
    rng = np.random.default_rng(genomes)
    shape = (genomes, 1 << 4, 8)
    sketches = SketchSet(kind="pqa", params={"k": 21, "R": 4, "n": 8, "s": 0, "seed": 7,
                                             "canonical": True, "hash": "murmur3_32"},
                         names=[f"g{i}" for i in range(genomes)],
                         files=[[f"g{i}.fa"] for i in range(genomes)],
                         arrays={"tags": rng.integers(0, 1 << 32, shape, dtype=np.uint32),
                                 "values": rng.integers(0, 1 << 32, shape, dtype=np.uint32)})
    written = _written(sketches, io.BytesIO())
    assert written == _numpy_savez(written, sketches, io.BytesIO())


@pytest.mark.parametrize("descr, shape", [("|u1", (0,)), ("|u1", (63,)), ("|u1", (1, 8192)),
                                          ("<u4", (12345678901, 16, 8)), ("|u1", (10 ** 20, 2)),
                                          ("<u4", ())])
def test_npy_header_is_numpys(descr, shape):
    """numpy's header, and every length of header text across two 64-byte boundaries (the
    first axis's digits, which numpy pads to 21, and the other axes', which it does not)."""
    shapes = [shape] + [(10 ** first - 1, 10 ** other - 1) for first in (1, 5, 21)
                        for other in range(1, 80)]
    for shape in shapes:
        expected = io.BytesIO()
        np.lib.format.write_array_header_1_0(expected, {"descr": descr, "fortran_order": False,
                                                        "shape": shape})
        assert npy_header(descr, shape) == expected.getvalue(), shape


def test_a_written_set_reads_back(tmp_path):
    sketches = _hll_set(3, 10, 4)
    write_sketches(tmp_path / "s.sketch", sketches)
    back = read_sketches(tmp_path / "s.sketch")
    assert back.names == sketches.names and back.params == sketches.params
    assert np.array_equal(back.registers(), sketches.registers())
    with zipfile.ZipFile(tmp_path / "s.sketch") as archive:
        assert [info.compress_type for info in archive.infolist()] == [zipfile.ZIP_STORED] * 2
        header = json.loads(np.load(io.BytesIO(archive.read("header.npy"))).tobytes())
    assert header["format_version"] == 2
