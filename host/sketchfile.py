"""Sketch files: many genomes' sketches with every parameter that made them.

A sketch file is a numpy ``.npz`` archive (uncompressed) holding:

=============  =========================  ==================================================
member         type                       content
=============  =========================  ==================================================
``header``     uint8 (UTF-8 JSON)         ``format``, ``format_version``, ``tool_version``,
                                          ``kind`` (``hll`` or ``pqa``), ``params`` (every
                                          parameter that changes a sketch), ``genomes``: a
                                          list of ``{name, files}``
``registers``  uint8 [N, 2^p]             kind ``hll``: the registers of each genome
``tags``       uint32 [N, 2^R, n]         kind ``pqa``: entry tags, queue by queue
``values``     uint32 [N, 2^R, n]         kind ``pqa``: entry values (0 = empty)
=============  =========================  ==================================================

Two sketch sets can be compared or merged only when kind and params are equal; the error names
the parameter and both files.
"""

import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from . import __version__
from .io import InputError, atomic_output

__all__ = ["FORMAT", "FORMAT_VERSION", "SketchSet", "read_sketches", "write_sketches",
           "is_sketch_file", "merge"]

FORMAT = "kmer-sketch-accel"
FORMAT_VERSION = 1
_ARRAYS_OF_KIND = {"hll": ("registers",), "pqa": ("tags", "values")}
_ZIP_MAGIC = b"PK\x03\x04"


@dataclass
class SketchSet:
    """Sketches of N genomes of one kind, made with one set of parameters."""

    kind: str
    params: dict
    names: list[str] = field(default_factory=list)
    files: list[list[str]] = field(default_factory=list)
    arrays: dict[str, np.ndarray] = field(default_factory=dict)
    origin: str = "<memory>"

    def __len__(self) -> int:
        return len(self.names)

    def check_compatible(self, other: "SketchSet") -> None:
        if self.kind != other.kind:
            raise InputError(f"{other.origin}: holds {other.kind} sketches, {self.origin} holds "
                             f"{self.kind} sketches; they cannot be compared")
        for key in sorted(set(self.params) | set(other.params)):
            mine, theirs = self.params.get(key), other.params.get(key)
            if mine != theirs:
                raise InputError(f"{other.origin}: sketched with {key}={theirs!r}, but "
                                 f"{self.origin} with {key}={mine!r}; re-sketch with equal "
                                 f"parameters")


def merge(sets: list[SketchSet]) -> SketchSet:
    """One set holding every genome of ``sets`` in order; all must be compatible."""
    if not sets:
        raise ValueError("merge needs at least one sketch set")
    first = sets[0]
    for other in sets[1:]:
        first.check_compatible(other)
    return SketchSet(
        kind=first.kind, params=dict(first.params),
        names=[name for s in sets for name in s.names],
        files=[f for s in sets for f in s.files],
        arrays={key: np.concatenate([s.arrays[key] for s in sets])
                for key in _ARRAYS_OF_KIND[first.kind]},
        origin=first.origin)


def write_sketches(path, sketches: SketchSet) -> None:
    header = {
        "format": FORMAT, "format_version": FORMAT_VERSION, "tool_version": __version__,
        "kind": sketches.kind, "params": sketches.params,
        "genomes": [{"name": n, "files": f} for n, f in zip(sketches.names, sketches.files)],
    }
    encoded = np.frombuffer(json.dumps(header, sort_keys=True).encode(), dtype=np.uint8)
    with atomic_output(path, "wb") as file:
        np.savez(file, header=encoded, **sketches.arrays)


def is_sketch_file(path) -> bool:
    """True if ``path`` starts like a sketch file (a zip archive), so it is not sequence."""
    try:
        with open(path, "rb") as file:
            return file.read(4) == _ZIP_MAGIC
    except OSError:
        return False


def read_sketches(path) -> SketchSet:
    path = Path(path)
    try:
        archive = np.load(path, allow_pickle=False)
    except FileNotFoundError:
        raise InputError(f"{path}: no such file") from None
    except (OSError, ValueError) as error:
        raise InputError(f"{path}: not a sketch file ({error})") from None
    with archive:
        if "header" not in archive.files:
            raise InputError(f"{path}: not a sketch file (no header)")
        try:
            header = json.loads(archive["header"].tobytes().decode())
            kind = header["kind"]
            genomes = header["genomes"]
            params = header["params"]
        except (ValueError, KeyError, UnicodeDecodeError) as error:
            raise InputError(f"{path}: damaged sketch header ({error})") from None
        if header.get("format") != FORMAT or header.get("format_version") != FORMAT_VERSION:
            raise InputError(f"{path}: unsupported sketch format {header.get('format')!r} "
                             f"version {header.get('format_version')!r}")
        if kind not in _ARRAYS_OF_KIND:
            raise InputError(f"{path}: unknown sketch kind {kind!r}")
        arrays = {}
        for key in _ARRAYS_OF_KIND[kind]:
            if key not in archive.files:
                raise InputError(f"{path}: damaged sketch file (no {key!r} array)")
            arrays[key] = archive[key]
            if arrays[key].shape[0] != len(genomes):
                raise InputError(f"{path}: damaged sketch file ({key!r} holds "
                                 f"{arrays[key].shape[0]} sketches for {len(genomes)} genomes)")
    return SketchSet(kind=kind, params=params, names=[g["name"] for g in genomes],
                     files=[g["files"] for g in genomes],
                     arrays=arrays, origin=str(path))
