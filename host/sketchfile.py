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
``registers``  uint8 [N, 2^(p-1)] (w = 4)  kind ``hll``: the registers of each genome, at
               uint8 [N, 2^p] (w = 5..8)  w = 4 two a byte (register 2i in the low nibble of
                                          byte i), wider ones a byte each (format version 2;
                                          version 1 held every width a byte a register)
``tags``       uint32 [N, 2^R, n]         kind ``pqa``: entry tags, queue by queue
``values``     uint32 [N, 2^R, n]         kind ``pqa``: entry values (0 = empty)
=============  =========================  ==================================================

Two sketch sets can be compared or merged only when kind and params are equal; the error names
the parameter and both files. The minimum-count filter is per genome and need not agree (reads
sketched with m = 2 against a reference sketched with m = 1). A genome name may occur once in a merged set; the error names both
sources. Reading checks everything a later step relies on (parameters, array types and shapes),
so a damaged or foreign file is refused with one line naming it, never half-used: the archive
is read by host.sketch_archive, which accepts only what ``numpy.savez`` writes and checks every
size against the file and the header's own parameters before it allocates anything, so any
damage is ``FILE: damaged sketch file (CAUSE)``. :func:`write_sketches` writes what
``numpy.savez`` writes, byte for byte, with zipfile and the .npy header format alone, so that
the sketch command imports no numpy (tests/test_sketchfile_writer.py). How a format version
stores its arrays is its :class:`FormatLayout` in :data:`_LAYOUTS`; a file of a newer version
is named as such.
"""

from __future__ import annotations  # numpy's types named below, imported where used

import json
import math
import os
import re
import struct
import zipfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from . import __version__
from .io import (ZIP_MAGIC, InputError, compressed_sketch_problem, compression_of,
                 decompressed_head, looks_like_damaged_sketch, open_input, read_input,
                 stream_input)
from .outputs import atomic_output
from .registers import PackedRows
from kmerspec.golden.hll import HllParams
from kmerspec.golden.mincount import MinCountParams

__all__ = ["FORMAT", "FORMAT_VERSION", "SketchSet", "read_sketches", "write_sketches",
           "is_sketch_file", "merge", "engine_params"]

FORMAT = "kmer-sketch-accel"
FORMAT_VERSION = 2
_ARRAYS_OF_KIND = {"hll": ("registers",), "pqa": ("tags", "values")}
_HASH_OF_KIND = {"hll": "fmix64", "pqa": "murmur3_32"}
_SEQUENCE_STARTS = (b">", b"@", b"\x1f\x8b")  # FASTA, FASTQ, gzip


class SketchArrays(Mapping):
    """A sketch set's arrays by member name, numpy arrays to every caller. Registers the sketch
    command made are held as host.registers.PackedRows and become a numpy array (over the same
    bytes) when first asked for; :meth:`held` gives them as held, so that the sketch command
    checks and writes them without importing numpy."""

    def __init__(self, arrays: Mapping):
        self._held = dict(arrays.items() if not isinstance(arrays, SketchArrays)
                          else arrays._held.items())

    def held(self, name: str):
        """The array ``name`` as held: a numpy array or a host.registers.PackedRows."""
        return self._held[name]

    def __getitem__(self, name: str):
        array = self._held[name]
        if isinstance(array, PackedRows):
            array = self._held[name] = array.numpy()
        return array

    def __contains__(self, name) -> bool:
        return name in self._held

    def __iter__(self):
        return iter(self._held)

    def __len__(self) -> int:
        return len(self._held)


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
    arrays: SketchArrays = field(default_factory=dict)  # a dict given becomes a SketchArrays
    origin: str = "<memory>"
    from_sequences: bool = False
    #: per genome, the MinCountParams.record() of its minimum-count filter ({} for m = 1);
    #: an empty list means m = 1 for every genome
    min_counts: list[dict] = field(default_factory=list)

    def __post_init__(self) -> None:
        # HLL registers are held in the pair loops' layout (two 4-bit registers a byte at w = 4,
        # host.similarity.pack_registers), as sketch files of format version 2 store them;
        # registers given one a byte are packed here, once.
        self.arrays = SketchArrays(self.arrays)
        registers = self.arrays.held("registers") if self.kind == "hll" and \
            "registers" in self.arrays else None
        if registers is not None and not isinstance(registers, PackedRows) and \
                registers.ndim == 2 and self.params.get("w") == 4 and \
                registers.shape[1] == 1 << self.params["p"]:
            from .registers import pack_registers
            self.arrays = SketchArrays({**self.arrays,
                                        "registers": pack_registers(registers, self.hll())})

    def __len__(self) -> int:
        return len(self.names)

    def hll(self) -> HllParams:
        """The HllParams of an HLL set."""
        return HllParams(self.params["p"], self.params["w"])

    def packed_registers(self) -> np.ndarray:
        """An HLL set's registers as held: n rows in host.similarity.pack_registers' layout."""
        return self.arrays["registers"]

    def held_registers(self):
        """An HLL set's registers as held: a numpy array or host.registers.PackedRows, n rows
        in host.registers.pack_registers' layout, each row a buffer."""
        return self.arrays.held("registers")

    def registers(self, rows=slice(None)) -> np.ndarray:
        """An HLL set's registers one a byte (n x 2^p), of ``rows`` (all by default): a new
        array at w = 4, so take the rows needed, not the whole collection, where it is large."""
        from .registers import unpack_registers
        return unpack_registers(self.arrays["registers"][rows], self.hll())

    def packed_sketches(self):
        """host.similarity.PackedSketches over the registers as held (not copied)."""
        from .similarity import PackedSketches
        return PackedSketches(self.arrays["registers"], self.hll(), packed=True)

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
        arrays={key: (sets[0].arrays.held(key) if len(sets) == 1 else _concatenated(sets, key))
                for key in _ARRAYS_OF_KIND[first.kind]},
        origin=first.origin, from_sequences=all(s.from_sequences for s in sets),
        min_counts=([s.min_count(index) for s in sets for index in range(len(s))]
                    if any(s.min_counts for s in sets) else []))


def _concatenated(sets: list[SketchSet], key: str):
    import numpy as np  # here: a sketch of one set of files needs no merge
    return np.concatenate([s.arrays[key] for s in sets])


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
    import numpy as np  # here: a sketch of one set of files needs no reordering
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
    encoded = json.dumps(header, sort_keys=True).encode()
    # as numpy.savez writes them (so numpy reads them, and host.sketch_archive): an uncompressed
    # zip archive, a .npy member per array, each in zip64 form, the header first
    with zipfile.ZipFile(target, mode="w", compression=zipfile.ZIP_STORED,
                         allowZip64=True) as archive:
        _write_npy(archive, "header", "|u1", (len(encoded),), encoded)
        for name in sketches.arrays:
            _write_npy(archive, name, *_npy_content(sketches.arrays.held(name)))


def _npy_content(array) -> tuple[str, tuple, memoryview]:
    """(dtype descriptor, shape, bytes in C order) of a numpy array or PackedRows."""
    if isinstance(array, PackedRows):
        return "|u1", array.shape, memoryview(array.data)
    import numpy as np  # only a numpy array gets here, so numpy is loaded already
    array = np.ascontiguousarray(array)
    return array.dtype.str, array.shape, memoryview(array.reshape(-1))


#: the .npy format (numpy.lib.format, version 1.0): magic, version, header length, header
_NPY_MAGIC = b"\x93NUMPY\x01\x00"
_NPY_ALIGN = 64
_NPY_GROWTH_DIGITS = 21  # numpy leaves room for the first axis to grow to 21 digits


def npy_header(descr: str, shape: tuple) -> bytes:
    """The header numpy.lib.format.write_array writes for a C-ordered array: the dict's
    repr padded with spaces to a multiple of 64 bytes, ending in a newline."""
    text = f"{{'descr': {descr!r}, 'fortran_order': False, 'shape': {tuple(shape)!r}, }}"
    text += " " * (_NPY_GROWTH_DIGITS - len(repr(shape[0])) if shape else 0)
    length = len(text) + 1
    length += _NPY_ALIGN - (len(_NPY_MAGIC) + 2 + length) % _NPY_ALIGN
    return _NPY_MAGIC + struct.pack("<H", length) + text.encode("latin1").ljust(
        length - 1) + b"\n"


def _write_npy(archive: zipfile.ZipFile, name: str, descr: str, shape: tuple, data) -> None:
    with archive.open(f"{name}.npy", "w", force_zip64=True) as member:
        member.write(npy_header(descr, shape))
        member.write(data)


def _first_bytes(path) -> bytes:
    return read_input(path, "a sketch file", 4)


def is_sketch_file(path) -> bool:
    """True if ``path`` starts like a sketch file (a zip archive), so it is not sequence."""
    registered = stream_input(path)
    if registered is not None:
        return registered.kind == "sketch"
    try:
        return _first_bytes(Path(path)) == ZIP_MAGIC
    except InputError:
        return False


def _is_list_of(value, kind) -> bool:
    return isinstance(value, list) and all(isinstance(item, kind) for item in value)


# -- reading: every size bounded before it is allocated -------------------------------------

@dataclass(frozen=True)
class FormatLayout:
    """How one format version stores a kind's arrays: ``members`` gives each array's member
    name and its dtype and shape as stored, from the header's own parameters and genome count
    (the reader compares them with the archive before allocating); ``decode`` turns the stored
    arrays into the SketchSet's (version 1's registers are packed as version 2 stores them). A
    new version adds its entry to :data:`_LAYOUTS`; the versions before it keep reading."""

    version: int
    members: Callable[[str, dict, int], dict[str, tuple[np.dtype, tuple[int, ...]]]]
    decode: Callable[[str, dict, dict[str, np.ndarray]], dict[str, np.ndarray]]


def _members_v1(kind: str, params: dict, genomes: int) -> dict:
    import numpy as np
    if kind == "hll":
        return {"registers": (np.dtype(np.uint8), (genomes, 1 << params["p"]))}
    queues = (genomes, 1 << params["R"], params["n"])
    return {"tags": (np.dtype(np.uint32), queues), "values": (np.dtype(np.uint32), queues)}


def _members_v2(kind: str, params: dict, genomes: int) -> dict:
    import numpy as np
    if kind == "hll":  # w = 4: two registers a byte (register 2i in the low nibble of byte i)
        width = 1 << (params["p"] - 1 if params["w"] == 4 else params["p"])
        return {"registers": (np.dtype(np.uint8), (genomes, width))}
    return _members_v1(kind, params, genomes)


class _RegisterTooLarge(ValueError):
    pass


def _checked_registers(registers: np.ndarray, params: dict) -> np.ndarray:
    """``registers`` (one a byte), refused if one exceeds 2^w - 1, checked a block at a time."""
    top = HllParams(params["p"], params["w"]).max_rank
    for lo in range(0, registers.shape[0], 1024):
        if registers[lo:lo + 1024].size and int(registers[lo:lo + 1024].max()) > top:
            raise _RegisterTooLarge("a register exceeds 2^w - 1")
    return registers


def _decode_v1(kind: str, params: dict, arrays: dict) -> dict:
    """Version 1 held HLL registers one a byte: checked here; SketchSet packs them at w = 4."""
    if kind == "hll":
        _checked_registers(arrays["registers"], params)
    return arrays


def _decode_v2(kind: str, params: dict, arrays: dict) -> dict:
    if kind == "hll" and params["w"] != 4:  # at w = 4 every nibble is a register value
        _checked_registers(arrays["registers"], params)
    return arrays


_LAYOUTS: dict[int, FormatLayout] = {
    1: FormatLayout(1, _members_v1, _decode_v1),
    2: FormatLayout(2, _members_v2, _decode_v2),
}

#: a sketch header is an object of lists of objects (genomes, their files, min_count): 4
#: levels; a header nested deeper is refused before the JSON parser recurses into it
_HEADER_DEPTH = 8
#: the largest header a pipe may bring before its arrays (host.streams spools a pipe within
#: the size its header states); about 4 million genomes' names and paths
PIPE_HEADER_LIMIT = 1 << 30
_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"')


def _damaged(path, cause: str) -> InputError:
    return InputError(f"{path}: damaged sketch file ({cause})")


def _json_depth(data: bytes) -> int:
    """How deep the arrays and objects of the JSON text ``data`` nest (strings skipped)."""
    import numpy as np  # here: writing a sketch file needs no reader
    nesting = np.zeros(256, dtype=np.int8)
    nesting[[ord("["), ord("{")]] = 1
    nesting[[ord("]"), ord("}")]] = -1
    steps = nesting[np.frombuffer(_STRING.sub(b'""', data), dtype=np.uint8)]
    return int(np.cumsum(steps, dtype=np.int64).max()) if steps.size else 0


def parse_header(path, data: bytes) -> dict:
    """The header object of the bytes of ``header.npy``'s array (UTF-8 JSON)."""
    depth = _json_depth(data)
    if depth > _HEADER_DEPTH:
        raise _damaged(path, f"header: JSON nested {depth} deep; a sketch header nests 4")
    try:
        return json.loads(data.decode())
    except (ValueError, UnicodeDecodeError, RecursionError) as error:
        raise _damaged(path, f"header: {_one_line(error)}") from None


def _check_format_version(path, header) -> FormatLayout:
    if not isinstance(header, dict):
        raise _damaged(path, "header: not a JSON object")
    if header.get("format") != FORMAT:
        raise _damaged(path, f"header: format {header.get('format')!r}, not {FORMAT!r}")
    version = header.get("format_version")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise _damaged(path, f"header: format version {version!r}")
    if version not in _LAYOUTS:
        made_by = header.get("tool_version")
        by = f" {made_by}" if isinstance(made_by, str) and len(made_by) < 40 else ""
        raise InputError(f"{path}: made by a newer version of kmer-sketch-accel{by} (sketch "
                         f"format version {version}; this version, {__version__}, reads "
                         f"versions 1 to {max(_LAYOUTS)}): upgrade kmer-sketch-accel to read it")
    return _LAYOUTS[version]


def _min_count_record(path: Path, genome: dict) -> dict:
    record = genome.get("min_count", {})
    try:
        if not isinstance(record, dict) or record != MinCountParams.from_record(record).record():
            raise ValueError(f"not a filter record: {record!r}")
    except (KeyError, TypeError, ValueError) as error:
        raise _damaged(path, f"header: min_count of genome {genome['name']!r}: "
                             f"{_one_line(error)}") from None
    return record


def check_header(path, header) -> tuple:
    """(layout, kind, params, names, files, min_counts) of a header object, every field
    checked; :class:`host.io.InputError` naming ``path`` otherwise."""
    layout = _check_format_version(path, header)
    kind, params, genomes = header.get("kind"), header.get("params"), header.get("genomes")
    if kind not in _ARRAYS_OF_KIND:
        raise _damaged(path, f"header: unknown sketch kind {kind!r}")
    if not isinstance(params, dict) or params.get("hash") != _HASH_OF_KIND[kind]:
        raise _damaged(path, f"header: parameters {params!r}")
    try:
        engine_params(kind, params)
    except (KeyError, TypeError, ValueError) as error:
        raise _damaged(path, f"header: parameters: {_one_line(error)}") from None
    if not (isinstance(genomes, list) and all(
            isinstance(g, dict) and isinstance(g.get("name"), str)
            and _is_list_of(g.get("files"), str) for g in genomes)):
        raise _damaged(path, "header: genome list")
    for index, genome in enumerate(genomes):
        if not genome["name"]:
            raise _damaged(path, f"header: genome {index + 1} has an empty name")
    min_counts = [_min_count_record(path, g) for g in genomes]
    return (layout, kind, params, [g["name"] for g in genomes], [g["files"] for g in genomes],
            min_counts if any(min_counts) else [])


def archive_bound(path, header_end: int, header: dict) -> int:
    """At most the bytes a sketch file whose header member ends at ``header_end`` and holds
    ``header`` (checked) can have: its arrays as the header's parameters size them, their
    headers, and the central directory (host.streams spools a pipe within this)."""
    from . import sketch_archive as archive
    layout, kind, params, names, *_ = check_header(path, header)
    arrays = layout.members(kind, params, len(names))
    return header_end + archive.ARCHIVE_TAIL_BOUND + sum(
        archive.member_bound(f"{name}.npy", dtype.itemsize * math.prod(shape))
        for name, (dtype, shape) in arrays.items())


def _refuse_what_is_no_sketch(path: Path, start: bytes) -> None:
    """The one-line message of a file that does not start as a sketch file does."""
    if not start:
        raise InputError(f"{path}: empty file, not a sketch file")
    if ZIP_MAGIC.startswith(start):
        raise _damaged(path, f"cut short at byte {len(start)}")
    head = read_input(path, "a sketch file", 1 << 20)  # bzip2 needs a whole block
    compression = compression_of(head[:8])
    if compression is not None:
        inner = decompressed_head(head)
        if inner.startswith(ZIP_MAGIC) or looks_like_damaged_sketch(inner):
            raise InputError(compressed_sketch_problem(path, compression))
    if start.startswith(_SEQUENCE_STARTS):
        raise InputError(f"{path}: a FASTA/FASTQ file, not a sketch file (make one with "
                         f"python -m host sketch)")
    if looks_like_damaged_sketch(head[:128]):
        raise _damaged(path, f"bad magic {start!r}, expected {ZIP_MAGIC!r}")
    raise InputError(f"{path}: not a sketch file (it does not start like one)")


def read_sketches(path) -> SketchSet:
    """The sketch file ``path`` (a stream host.streams spooled for the command too): every
    structure, size and parameter checked before its arrays are allocated (host.sketch_archive);
    any damage is the one line ``PATH: damaged sketch file (CAUSE)``."""
    from . import sketch_archive as archive  # here: writing a sketch file needs no reader
    path = Path(path)
    start = _first_bytes(path)
    if start != ZIP_MAGIC:
        _refuse_what_is_no_sketch(path, start)
    with open_input(path, "a sketch file") as file:
        try:
            size = file.seek(0, os.SEEK_END)
            members = archive.read_directory(file, size)
            if "header.npy" not in members:
                raise InputError(f"{path}: not a sketch file (a zip archive without a sketch "
                                 f"header)")
            header_member = members["header.npy"]
            header = parse_header(path, archive.read_member(
                file, header_member, archive.check_member(file, header_member)).tobytes())
            layout, kind, params, names, files, min_counts = check_header(path, header)
            expected = layout.members(kind, params, len(names))
            stored = {f"{name}.npy" for name in expected} | {"header.npy"}
            if set(members) != stored:
                raise archive.Damaged(f"members {sorted(members)}, expected {sorted(stored)}")
            checked = {name: archive.check_member(file, members[f"{name}.npy"], dtype, shape)
                       for name, (dtype, shape) in expected.items()}
            arrays = layout.decode(kind, params, {
                name: archive.read_member(file, members[f"{name}.npy"], npy_header)
                for name, npy_header in checked.items()})
        except (archive.Damaged, _RegisterTooLarge) as error:
            raise _damaged(path, str(error)) from None
        except OSError as error:
            raise InputError(f"{path}: cannot read ({error.strerror or error})") from None
    return SketchSet(kind=kind, params=params, names=names, files=files, arrays=arrays,
                     origin=os.fspath(path), min_counts=min_counts)


def spool_sketch(source, path, spool) -> None:
    """Copy the sketch file arriving on the stream ``source`` (read from its first byte) into
    the seekable ``spool``, within the size its own header states (:func:`archive_bound`):
    the first member must be the header (the writer writes it first), of at most
    :data:`PIPE_HEADER_LIMIT` bytes; a stream that goes on past the bound is damaged, and so is
    anything the header's checks refuse. Nothing more than the header is held in memory."""
    from . import sketch_archive as archive
    prefix = b""
    local = None
    while local is None:
        more = source.read(4096)
        if not more:
            raise _damaged(path, f"cut short at byte {len(prefix)}")
        prefix += more
        try:
            local = archive.read_local_header(prefix)
        except archive.Damaged as error:
            raise _damaged(path, str(error)) from None
    if local.name != "header.npy" or local.size is None:
        raise _damaged(path, f"first member {local.name!r}, expected the header")
    header_end = local.data_offset + local.size
    if header_end > PIPE_HEADER_LIMIT:
        raise InputError(f"{path}: a sketch header of {local.size:,} bytes through a pipe, "
                         f"more than the {PIPE_HEADER_LIMIT:,} read from one; give the sketch "
                         f"file by name")
    while len(prefix) < header_end:
        more = source.read(min(1 << 20, header_end - len(prefix)))
        if not more:
            raise _damaged(path, f"cut short at byte {len(prefix)}")
        prefix += more
    try:
        npy = archive.parse_npy_header(prefix[local.data_offset:header_end], "header.npy")
        if npy.descr != "|u1" or len(npy.shape) != 1 or \
                npy.length + npy.shape[0] != local.size:
            raise archive.Damaged(f"header.npy: {npy.descr} {list(npy.shape)}")
    except archive.Damaged as error:
        raise _damaged(path, str(error)) from None
    bound = archive_bound(path, header_end, parse_header(
        path, prefix[local.data_offset + npy.length:header_end]))
    spool.write(prefix)
    written = len(prefix)
    while chunk := source.read(1 << 20):
        written += len(chunk)
        if written > bound:
            raise _damaged(path, f"goes on past the {bound:,} bytes its header allows")
        spool.write(chunk)
    spool.flush()


def _one_line(error: BaseException) -> str:
    return " ".join(str(error).split()) or type(error).__name__
