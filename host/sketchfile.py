"""Sketch files: many genomes' sketches with every parameter that made them.

A sketch file is a numpy ``.npz`` archive (uncompressed) holding:

=============  =========================  ==================================================
member         type                       content
=============  =========================  ==================================================
``header``     uint8 (UTF-8 JSON)         ``format``, ``format_version``, ``tool_version``,
                                          ``kind`` (``hll`` or ``pqa``), ``params`` (every
                                          parameter that changes a sketch), ``genomes``: a
                                          list of ``{name, files}``, plus ``min_count`` for
                                          an HLL genome sketched with m > 1 (SPEC 7: m and
                                          the Count-Min's mc_depth, mc_width_bits,
                                          mc_counter_bits, mc_seed)
``registers``  uint8 [N, 2^p]             kind ``hll``: the registers of each genome
``tags``       uint32 [N, 2^R, n]         kind ``pqa``: entry tags, queue by queue
``values``     uint32 [N, 2^R, n]         kind ``pqa``: entry values (0 = empty)
=============  =========================  ==================================================

Two sketch sets can be compared or merged only when kind and params are equal; the error names
the parameter and both files. The minimum-count filter is per genome and need not agree (reads
sketched with m = 2 against a reference sketched with m = 1). A genome name may occur once in a merged set; the error names both
sources. Reading checks everything a later step relies on (parameters, array types and shapes),
so a damaged or foreign file is refused with one line naming it, never half-used.
"""

import json
import os
import zipfile
import zlib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from . import __version__
from .io import (ZIP_MAGIC, InputError, compressed_sketch_problem, compression_of,
                 decompressed_head, looks_like_damaged_sketch, read_input)
from .outputs import atomic_output
from kmerspec.golden.hll import HllParams
from kmerspec.golden.mincount import MinCountParams

__all__ = ["FORMAT", "FORMAT_VERSION", "SketchSet", "read_sketches", "write_sketches",
           "is_sketch_file", "merge", "engine_params"]

FORMAT = "kmer-sketch-accel"
FORMAT_VERSION = 1
_ARRAYS_OF_KIND = {"hll": ("registers",), "pqa": ("tags", "values")}
_HASH_OF_KIND = {"hll": "fmix64", "pqa": "murmur3_32"}
_SEQUENCE_STARTS = (b">", b"@", b"\x1f\x8b")  # FASTA, FASTQ, gzip


@dataclass
class SketchSet:
    """Sketches of N genomes of one kind, made with one set of parameters.

    ``origin`` names where the set came from in messages: the sketch file, or the sequence files
    (``from_sequences``), whose genomes are then each named by their own file.
    """

    kind: str
    params: dict
    names: list[str] = field(default_factory=list)
    files: list[list[str]] = field(default_factory=list)
    arrays: dict[str, np.ndarray] = field(default_factory=dict)
    origin: str = "<memory>"
    from_sequences: bool = False
    #: per genome, the MinCountParams.record() of its minimum-count filter ({} for m = 1);
    #: an empty list means m = 1 for every genome
    min_counts: list[dict] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.names)

    def min_count(self, index: int) -> dict:
        """The minimum-count record of genome ``index`` ({} when sketched with m = 1)."""
        return self.min_counts[index] if self.min_counts else {}

    def source(self, index: int) -> str:
        """Where genome ``index`` came from: its sequence file, or the sketch file."""
        if self.from_sequences and self.files[index]:
            return self.files[index][0]
        return self.origin

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


def engine_params(kind: str, params: dict):
    """The HllParams or JsdParams a set's params describe (ValueError/TypeError if invalid)."""
    if kind == "hll":
        k = params["k"]
        if not isinstance(k, int) or isinstance(k, bool) or not 1 <= k <= 32:
            raise ValueError(f"k must be an integer from 1 to 32, not {k!r}")
        if not isinstance(params["canonical"], bool):
            raise ValueError(f"canonical must be true or false, not {params['canonical']!r}")
        return HllParams(params["p"], params["w"])
    from kmerspec.golden.jsd import JsdParams  # here: the HLL path never needs the JSD model
    return JsdParams(**{key: value for key, value in params.items() if key != "hash"})


def merge(sets: list[SketchSet]) -> SketchSet:
    """One set holding every genome of ``sets`` in order; all must be compatible, and no genome
    name may occur twice."""
    if not sets:
        raise ValueError("merge needs at least one sketch set")
    first = sets[0]
    for other in sets[1:]:
        first.check_compatible(other)
    seen: dict[str, str] = {}
    for sketches in sets:
        for index, name in enumerate(sketches.names):
            source = sketches.source(index)
            if name in seen:
                where = ("occurs twice (is the file given twice?)" if seen[name] == source
                         else f"is also in {seen[name]}")
                raise InputError(f"{source}: genome {name!r} {where}; give each genome once "
                                 f"(genomes are named by file name, by path where file names "
                                 f"collide)")
            seen[name] = source
    return SketchSet(
        kind=first.kind, params=dict(first.params),
        names=[name for s in sets for name in s.names],
        files=[f for s in sets for f in s.files],
        # one set: its arrays as they are (a collection's registers are not copied again)
        arrays={key: (sets[0].arrays[key] if len(sets) == 1
                      else np.concatenate([s.arrays[key] for s in sets]))
                for key in _ARRAYS_OF_KIND[first.kind]},
        origin=first.origin, from_sequences=all(s.from_sequences for s in sets),
        min_counts=([s.min_count(index) for s in sets for index in range(len(s))]
                    if any(s.min_counts for s in sets) else []))


def in_input_order(parts: list[tuple[list[int], SketchSet]], names: list[str],
                   origin: str) -> SketchSet:
    """One set of the genomes of ``parts``, the genomes of each part going to the input
    positions listed with it (together, every position once), named ``names``."""
    order = [index for indices, _ in parts for index in indices]
    if sorted(order) != list(range(len(names))):
        raise ValueError("in_input_order: the parts do not cover the inputs once each")
    joined = merge([SketchSet(kind=s.kind, params=s.params, names=[str(i) for i in indices],
                              files=s.files, arrays=s.arrays, origin=s.origin,
                              from_sequences=s.from_sequences, min_counts=s.min_counts)
                    for indices, s in parts])
    place = np.argsort(np.array(order))  # the joined genome that goes to each position
    return SketchSet(kind=joined.kind, params=joined.params, names=list(names),
                     files=[joined.files[i] for i in place],
                     arrays={key: array[place] for key, array in joined.arrays.items()},
                     origin=origin, from_sequences=joined.from_sequences,
                     min_counts=([joined.min_count(i) for i in place] if joined.min_counts
                                 else []))


def _genome_entry(sketches: SketchSet, index: int) -> dict:
    """A genome of the header; ``min_count`` only for m > 1, so m = 1 files stay as they were."""
    entry = {"name": sketches.names[index], "files": sketches.files[index]}
    if sketches.min_count(index):
        entry["min_count"] = sketches.min_count(index)
    return entry


def write_sketches(target, sketches: SketchSet) -> None:
    """Write to ``target``: an open binary file (from host.outputs.Outputs) or a path."""
    if not hasattr(target, "write"):
        with atomic_output(target, "wb") as file:
            write_sketches(file, sketches)
        return
    header = {
        "format": FORMAT, "format_version": FORMAT_VERSION, "tool_version": __version__,
        "kind": sketches.kind, "params": sketches.params,
        "genomes": [_genome_entry(sketches, index) for index in range(len(sketches))],
    }
    encoded = np.frombuffer(json.dumps(header, sort_keys=True).encode(), dtype=np.uint8)
    np.savez(target, header=encoded, **sketches.arrays)


def _first_bytes(path) -> bytes:
    return read_input(path, "a sketch file", 4)


def is_sketch_file(path) -> bool:
    """True if ``path`` starts like a sketch file (a zip archive), so it is not sequence."""
    try:
        return _first_bytes(Path(path)) == ZIP_MAGIC
    except InputError:
        return False


def _is_list_of(value, kind) -> bool:
    return isinstance(value, list) and all(isinstance(item, kind) for item in value)


def _min_count_record(path: Path, genome: dict) -> dict:
    record = genome.get("min_count", {})
    try:
        if not isinstance(record, dict) or record != MinCountParams.from_record(record).record():
            raise ValueError(f"not a filter record: {record!r}")
    except (KeyError, TypeError, ValueError) as error:
        raise InputError(f"{path}: damaged sketch header (min_count of genome "
                         f"{genome['name']!r}: {_one_line(error)})") from None
    return record


def _check_header(path: Path, header) -> tuple[str, dict, list[str], list[list[str]], list]:
    if not isinstance(header, dict):
        raise InputError(f"{path}: damaged sketch header (not a JSON object)")
    if header.get("format") != FORMAT or header.get("format_version") != FORMAT_VERSION:
        raise InputError(f"{path}: unsupported sketch format {header.get('format')!r} "
                         f"version {header.get('format_version')!r}")
    kind, params, genomes = header.get("kind"), header.get("params"), header.get("genomes")
    if kind not in _ARRAYS_OF_KIND:
        raise InputError(f"{path}: unknown sketch kind {kind!r}")
    if not isinstance(params, dict) or params.get("hash") != _HASH_OF_KIND[kind]:
        raise InputError(f"{path}: damaged sketch header (parameters {params!r})")
    try:
        engine_params(kind, params)
    except (KeyError, TypeError, ValueError) as error:
        raise InputError(f"{path}: damaged sketch header (parameters: {error})") from None
    if not (isinstance(genomes, list) and all(
            isinstance(g, dict) and isinstance(g.get("name"), str)
            and _is_list_of(g.get("files"), str) for g in genomes)):
        raise InputError(f"{path}: damaged sketch header (genome list)")
    min_counts = [_min_count_record(path, g) for g in genomes]
    return (kind, params, [g["name"] for g in genomes], [g["files"] for g in genomes],
            min_counts if any(min_counts) else [])


def _expected_shape(kind: str, params: dict) -> tuple[tuple[int, ...], np.dtype]:
    if kind == "hll":
        return (1 << params["p"],), np.dtype(np.uint8)
    return (1 << params["R"], params["n"]), np.dtype(np.uint32)


def read_sketches(path) -> SketchSet:
    path = Path(path)
    start = _first_bytes(path)
    if start != ZIP_MAGIC:
        if not start:
            raise InputError(f"{path}: empty file, not a sketch file")
        head = read_input(path, "a sketch file", 1 << 20)  # bzip2 needs a whole block
        compression = compression_of(head[:8])
        if compression is not None:
            inner = decompressed_head(head)
            if inner.startswith(ZIP_MAGIC) or looks_like_damaged_sketch(inner):
                raise InputError(compressed_sketch_problem(path, compression))
        if start.startswith(_SEQUENCE_STARTS):
            raise InputError(f"{path}: a FASTA/FASTQ file, not a sketch file (make one with "
                             f"python -m host sketch)")
        if looks_like_damaged_sketch(read_input(path, "a sketch file", 128)):
            raise InputError(f"{path}: not a sketch file (bad magic {start!r}, expected "
                             f"{ZIP_MAGIC!r}): a damaged sketch file?")
        raise InputError(f"{path}: not a sketch file (it does not start like one)")
    try:
        with np.load(path, allow_pickle=False) as archive:
            if "header" not in archive.files:
                raise InputError(f"{path}: not a sketch file (no header)")
            try:
                header = json.loads(archive["header"].tobytes().decode())
            except (ValueError, UnicodeDecodeError) as error:
                raise InputError(f"{path}: damaged sketch header ({error})") from None
            kind, params, names, files, min_counts = _check_header(path, header)
            shape, dtype = _expected_shape(kind, params)
            arrays = {}
            for key in _ARRAYS_OF_KIND[kind]:
                if key not in archive.files:
                    raise InputError(f"{path}: damaged sketch file (no {key!r} array)")
                array = archive[key]
                if array.dtype != dtype or array.shape != (len(names), *shape):
                    raise InputError(f"{path}: damaged sketch file ({key!r} is {array.dtype} "
                                     f"{list(array.shape)}, expected {dtype} "
                                     f"{[len(names), *shape]})")
                arrays[key] = array
    except (zipfile.BadZipFile, zlib.error, EOFError, ValueError, KeyError, OSError) as error:
        raise InputError(f"{path}: damaged sketch file (cut short or corrupt: "
                         f"{_one_line(error)})") from None
    if kind == "hll" and arrays["registers"].size and \
            int(arrays["registers"].max()) > HllParams(params["p"], params["w"]).max_rank:
        raise InputError(f"{path}: damaged sketch file (a register exceeds 2^w - 1)")
    return SketchSet(kind=kind, params=params, names=names, files=files, arrays=arrays,
                     origin=os.fspath(path), min_counts=min_counts)


def _one_line(error: BaseException) -> str:
    return " ".join(str(error).split()) or type(error).__name__
