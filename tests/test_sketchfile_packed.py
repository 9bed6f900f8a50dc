"""Sketch files of format version 2 (issue 52 item 2): HLL registers packed two a byte at w = 4,
as the pair loops read them, one a byte at w = 5..8; format 1 files (one byte a register) still
read, to the same sketches and the same distances.

tests/data/format1_p10_w{4,6}.sketch were written by the format 1 writer (commit acb12a9):
``python -m host sketch examples/genomes/vdv1.fa.gz examples/genomes/vdv1dwv5.fa.gz
examples/genomes/dwv.fa.gz --index-bits 10 --register-bits W -o ...``, from the repository root.
"""

import io
import zipfile
from pathlib import Path

import numpy as np
import pytest

from host.io import InputError
from host.similarity import PackedSketches, pack_registers
from host.sketchfile import FORMAT_VERSION, SketchSet, read_sketches, write_sketches
from kmerspec.golden.hll import HllParams
from tests.cli_helpers import ROOT, run

DATA = Path(__file__).resolve().parent / "data"
GENOMES = [f"examples/genomes/{name}.fa.gz" for name in ("vdv1", "vdv1dwv5", "dwv")]


def members(path) -> dict:
    """Each member's array as stored in the archive."""
    with zipfile.ZipFile(path) as archive:
        return {name: np.load(io.BytesIO(archive.read(name))) for name in archive.namelist()}


def sketch_now(tmp_path, w: int, monkeypatch) -> Path:
    monkeypatch.chdir(ROOT)
    out = tmp_path / f"now_w{w}.sketch"
    assert run("sketch", *GENOMES, "--index-bits", 10, "--register-bits", w, "-o", out) == 0
    return out


@pytest.mark.parametrize("w", [4, 6])
def test_format_1_files_read_as_the_same_sketches_and_distances(tmp_path, w, monkeypatch, capsys):
    old = DATA / f"format1_p10_w{w}.sketch"
    assert members(old)["registers.npy"].shape == (3, 1024)        # one byte a register
    now = sketch_now(tmp_path, w, monkeypatch)
    older, newer = read_sketches(old), read_sketches(now)
    assert older.names == newer.names and older.params == newer.params
    assert np.array_equal(older.registers(), newer.registers())
    assert np.array_equal(older.registers(), members(old)["registers.npy"])
    capsys.readouterr()
    outputs = []
    for path in (old, now):
        assert run("dist", path) == 0
        outputs.append(capsys.readouterr().out)
    assert outputs[0] == outputs[1] and "0.224" in outputs[0]


@pytest.mark.parametrize("w, width", [(4, 512), (5, 1024), (6, 1024), (8, 1024)])
def test_format_2_stores_w4_registers_two_a_byte(tmp_path, w, width, monkeypatch):
    now = sketch_now(tmp_path, w, monkeypatch)
    stored = members(now)["registers.npy"]
    assert stored.dtype == np.uint8 and stored.shape == (3, width)
    registers = read_sketches(now).registers()
    assert registers.shape == (3, 1024) and registers.max() <= (1 << w) - 1
    if w == 4:   # register 2i in the low nibble of byte i, 2i + 1 in the high one
        assert np.array_equal(stored & 0x0F, registers[:, 0::2])
        assert np.array_equal(stored >> 4, registers[:, 1::2])
    else:
        assert np.array_equal(stored, registers)
    assert b'"format_version": 2' in members(now)["header.npy"].tobytes()


def test_a_collection_is_held_packed_and_written_as_held(tmp_path):
    rng = np.random.default_rng(52)
    registers = rng.integers(0, 16, (5, 256), dtype=np.uint8)
    params = {"k": 21, "p": 8, "w": 4, "canonical": True, "hash": "fmix64"}
    names = [f"g{i}" for i in range(5)]
    sketches = SketchSet(kind="hll", params=params, names=names, files=[[n] for n in names],
                         arrays={"registers": registers})
    held = sketches.packed_registers()
    assert held.shape == (5, 128) and np.array_equal(sketches.registers(), registers)
    assert np.array_equal(sketches.registers([1, 3]), registers[[1, 3]])
    assert sketches.packed_sketches().packed is held       # the pair loops read it, no copy
    write_sketches(tmp_path / "x.sketch", sketches)
    assert np.array_equal(members(tmp_path / "x.sketch")["registers.npy"], held)
    again = read_sketches(tmp_path / "x.sketch")
    assert np.array_equal(again.registers(), registers)


@pytest.mark.parametrize("version, w, width", [(1, 4, 256), (2, 6, 256)])
def test_a_register_above_its_width_is_damage(tmp_path, version, w, width):
    """Format 1 at w = 4 holds a byte a register: 16 would be cut to a nibble when packed."""
    from tests.test_sketch_damage import header_bytes, npy, sketch_of
    registers = np.zeros((1, width), dtype=np.uint8)
    registers[0, 7] = 1 << w
    path = tmp_path / "big.sketch"
    path.write_bytes(sketch_of(header_bytes(format_version=version, params={
        "k": 21, "p": 8, "w": w, "canonical": True, "hash": "fmix64"}), npy(registers)))
    with pytest.raises(InputError, match=r"damaged sketch file \(a register exceeds 2\^w - 1\)"):
        read_sketches(path)


def test_the_pair_loops_read_packed_registers_as_they_read_unpacked_ones():
    """PackedSketches over a sketch file's packed rows (no copy) gives every pair loop's values
    bit for bit as over the registers one a byte."""
    params = HllParams(10, 4)
    rng = np.random.default_rng(7)
    # sparse, dense, related (register-wise maxima of one base), empty and saturated sketches
    base = rng.geometric(0.5, (4, params.m)).clip(0, 15) * (rng.random((4, params.m)) < 0.6)
    extra = rng.geometric(0.5, (4, params.m)).clip(0, 15) * (rng.random((4, params.m)) < 0.1)
    registers = np.concatenate([base, np.maximum(base[:1], extra), np.zeros((1, params.m)),
                                np.full((1, params.m), 15)]).astype(np.uint8)
    whole = PackedSketches(registers, params)
    packed = pack_registers(registers, params)
    direct = PackedSketches(packed, params, packed=True)
    assert direct.packed is packed
    n = whole.n
    rows, starts, stops, order = np.arange(n), np.zeros(n, np.int64), np.full(n, n), np.arange(n)
    for method in ("jaccard", "unions"):
        assert getattr(direct, method)(rows, starts, stops, order, 1).tobytes() == \
            getattr(whole, method)(rows, starts, stops, order, 1).tobytes()
    a = direct.joint_estimates(rows, starts, stops, order, 1)
    b = whole.joint_estimates(rows, starts, stops, order, 1)
    assert a.shared.tobytes() == b.shared.tobytes()
    assert a.likelihood_ratio.tobytes() == b.likelihood_ratio.tobytes()
    with pytest.raises(ValueError, match="packed registers must be an n x 512 uint8 array"):
        PackedSketches(registers, params, packed=True)


def test_format_version_is_2():
    assert FORMAT_VERSION == 2


def test_sketching_holds_the_collection_once_packed(tmp_path):
    """sketch fills each genome's packed row as the genome is done: the registers of the whole
    collection are never held one a byte (a list of them and their stack were 3x the packed
    collection before; tracemalloc sees numpy's buffers)."""
    import tracemalloc
    from host.api.run import Run
    from host.api.sketching import sketch_files
    rng = np.random.default_rng(3)
    paths = []
    for index in range(300):
        path = tmp_path / f"g{index}.fa"
        path.write_bytes(b">g\n" + np.frombuffer(b"ACGT", np.uint8)[
            rng.integers(0, 4, 200)].tobytes() + b"\n")
        paths.append(str(path))
    params = {"k": 21, "p": 14, "w": 4, "canonical": True, "hash": "fmix64"}
    packed_bytes = 300 << 13                      # 2^13 bytes a genome at p = 14, w = 4
    tracemalloc.start()
    sketches = sketch_files(paths, params, Run(threads=1))
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert sketches.packed_registers().shape == (300, 1 << 13)
    assert sketches.registers()[0].any()
    assert peak < 1.5 * packed_bytes, (peak, packed_bytes)
