"""The container of a sketch file, read by a reader that validates before it allocates.

A sketch file is the zip archive ``numpy.savez`` writes (host.sketchfile): one stored member
``NAME.npy`` per array, each an ``.npy`` file (a ``\\x93NUMPY`` header, then the array's bytes).
This module reads exactly that and nothing more general, so that a damaged or crafted file is
refused before it can cost memory or time:

* only the zip features the writer uses are accepted: members stored (method 0), general purpose
  flags 0 (no encryption, no data descriptor, no patch data), version needed at most 4.5
  (zip64), no archive comment, one disk, a few members (:data:`MAX_MEMBERS`) with short ASCII
  names; zip64 sizes and offsets are read as the writer puts them (the local headers always
  carry them, the central directory and end record past 4 GiB);
* every offset and size lies inside the file, members neither overlap nor reach into the
  central directory, a local header agrees with its central directory entry;
* an ``.npy`` header is parsed by one regular expression of what numpy writes (no Python
  literal evaluation: no tokenizer, no recursion), at most :data:`NPY_HEADER_LIMIT` bytes; its
  dtype and shape are compared with those the caller expects (from the sketch header's own
  parameters) and its array's size with the member's size before any array is allocated;
* every member's CRC-32 is checked as it is read, so a flipped byte in a register is damage,
  not a different sketch.

Each problem raises :class:`Damaged` with the cause; host.sketchfile turns it into the one line
``FILE: damaged sketch file (CAUSE)``. Files are binary file objects open for reading (a
regular file, or the anonymous temporary file a pipe is spooled into: host.streams).
"""

import re
import struct
import zlib
from dataclasses import dataclass

import numpy as np

__all__ = ["Damaged", "Member", "read_directory", "read_local_header", "parse_npy_header",
           "NpyHeader", "check_member", "read_member", "member_bound", "ARCHIVE_TAIL_BOUND", "MAX_MEMBERS",
           "NPY_HEADER_LIMIT"]

_LOCAL = struct.Struct("<4s2B4HL2L2H")           # 30 bytes: the local file header
_CENTRAL = struct.Struct("<4s4B4HL2L5H2L")       # 46 bytes: a central directory entry
_END = struct.Struct("<4s4H2LH")                 # 22 bytes: end of central directory
_LOCATOR64 = struct.Struct("<4sLQL")             # 20 bytes: zip64 end record locator
_END64 = struct.Struct("<4sQ2H2L4Q")             # 56 bytes: zip64 end of central directory
_LOCAL_MAGIC, _CENTRAL_MAGIC = b"PK\x03\x04", b"PK\x01\x02"
_END_MAGIC, _LOCATOR64_MAGIC, _END64_MAGIC = b"PK\x05\x06", b"PK\x06\x07", b"PK\x06\x06"
_ZIP64_EXTRA = 0x0001
_ZIP64_MARK = 0xFFFF_FFFF
#: the newest feature the writer needs: zip64 (APPNOTE 4.4.3: version 4.5)
_MAX_VERSION_NEEDED = 45
#: a sketch file holds a header and at most a few arrays
MAX_MEMBERS = 8
_MAX_NAME, _MAX_EXTRA = 64, 64
#: an .npy header of one of these arrays is about 120 bytes
NPY_HEADER_LIMIT = 4096
#: what follows the last member at most: the central directory of MAX_MEMBERS entries and the
#: end records (for a stream's spooling bound, host.streams)
ARCHIVE_TAIL_BOUND = (MAX_MEMBERS * (_CENTRAL.size + _MAX_NAME + _MAX_EXTRA)
                      + _END64.size + _LOCATOR64.size + _END.size)
_NPY_MAGIC = b"\x93NUMPY"
_NPY_DICT = re.compile(r"\{'descr': '([<>|=][a-zA-Z][0-9]*)', 'fortran_order': (True|False), "
                       r"'shape': \(((?:[0-9]+, )*[0-9]+,?|)\), \} *\n")
_CHUNK = 1 << 24


class Damaged(Exception):
    """The archive is not what the writer writes; the message says where."""


@dataclass(frozen=True)
class Member:
    """A stored member: its data's place in the file, its size and CRC-32."""

    name: str
    offset: int
    size: int
    crc: int


def _read_at(file, offset: int, size: int, what: str) -> bytes:
    file.seek(offset)
    data = file.read(size)
    if len(data) != size:
        raise Damaged(f"{what} cut short at byte {offset + len(data)}")
    return data


def _zip64_values(extra: bytes, count: int, what: str) -> list[int]:
    """The first ``count`` 8-byte values of the zip64 extra field in ``extra``."""
    position = 0
    while position + 4 <= len(extra):
        tag, size = struct.unpack_from("<2H", extra, position)
        body = extra[position + 4:position + 4 + size]
        if len(body) != size:
            break
        if tag == _ZIP64_EXTRA:
            if size < 8 * count:
                raise Damaged(f"{what}: zip64 field of {size} bytes, {8 * count} needed")
            return list(struct.unpack_from(f"<{count}Q", body))
        position += 4 + size
    raise Damaged(f"{what}: sizes marked as zip64 but no zip64 field")


def _end_records(file, size: int) -> tuple[int, int, int]:
    """(entries, central directory offset, its size) from the end records."""
    if size < _END.size:
        raise Damaged(f"{size} bytes, too short for a zip archive")
    end_at = size - _END.size
    (magic, disk, directory_disk, disk_entries, entries, directory_size, directory_offset,
     comment) = _END.unpack(_read_at(file, end_at, _END.size, "end record"))
    if magic != _END_MAGIC or comment:
        raise Damaged("no end of central directory record at the end of the file (cut short, "
                      "or bytes appended)")
    if disk or directory_disk or disk_entries != entries:
        raise Damaged("a multi-disk zip archive")
    directory_end = end_at
    locator_at = end_at - _LOCATOR64.size
    locator = (_read_at(file, locator_at, _LOCATOR64.size, "zip64 locator")
               if locator_at >= 0 else b"")
    # zipfile writes the zip64 records once an offset, a size or the count passes its limit,
    # and marks the end record's fields only where they do not fit there
    if locator.startswith(_LOCATOR64_MAGIC):
        magic, disk, end64_at, disks = _LOCATOR64.unpack(locator)
        if disk or disks != 1:
            raise Damaged("zip64 end record locator damaged")
        if end64_at != locator_at - _END64.size:
            raise Damaged(f"zip64 end record at byte {end64_at}, expected "
                          f"{locator_at - _END64.size}")
        (magic, record_size, _, needed, disk, directory_disk, disk_entries, entries,
         directory_size, directory_offset) = _END64.unpack(
            _read_at(file, end64_at, _END64.size, "zip64 end record"))
        if magic != _END64_MAGIC or record_size != _END64.size - 12:
            raise Damaged("zip64 end record damaged")
        if disk or directory_disk or disk_entries != entries or needed > _MAX_VERSION_NEEDED:
            raise Damaged("zip64 end record damaged")
        directory_end = end64_at
    elif _ZIP64_MARK in (directory_size, directory_offset) or entries == 0xFFFF:
        raise Damaged("zip64 end record locator missing")
    if not 1 <= entries <= MAX_MEMBERS:
        raise Damaged(f"{entries} members, a sketch file has 1 to {MAX_MEMBERS}")
    if directory_offset + directory_size != directory_end:
        raise Damaged(f"central directory at bytes {directory_offset}..."
                      f"{directory_offset + directory_size}, expected to end at {directory_end}")
    if directory_size > entries * (_CENTRAL.size + _MAX_NAME + _MAX_EXTRA):
        raise Damaged(f"central directory of {directory_size} bytes for {entries} members")
    return entries, directory_offset, directory_size


def _name(raw: bytes, what: str) -> str:
    if not 1 <= len(raw) <= _MAX_NAME or not re.fullmatch(rb"[A-Za-z0-9_.]+", raw):
        raise Damaged(f"{what}: member name {raw[:_MAX_NAME]!r}")
    return raw.decode("ascii")


def _check_features(version: int, flags: int, method: int, what: str) -> None:
    if version > _MAX_VERSION_NEEDED:
        raise Damaged(f"{what}: needs zip version {version // 10}.{version % 10}, the writer's "
                      f"is at most 4.5")
    if flags:
        feature = ("encrypted" if flags & 0x41 else "with a data descriptor" if flags & 0x08
                   else f"flags {flags:#06x}")
        raise Damaged(f"{what}: {feature}; the writer stores members plainly")
    if method:
        raise Damaged(f"{what}: compression method {method}; the writer stores members "
                      f"uncompressed")


def read_directory(file, size: int) -> dict[str, Member]:
    """The members of the archive ``file`` of ``size`` bytes, every structure checked."""
    entries, directory_offset, directory_size = _end_records(file, size)
    directory = _read_at(file, directory_offset, directory_size, "central directory")
    members: dict[str, Member] = {}
    starts = []
    position = 0
    for index in range(entries):
        what = f"member {index + 1}"
        if position + _CENTRAL.size > len(directory):
            raise Damaged(f"{what}: central directory cut short")
        (magic, _, _, needed, _, flags, method, _, _, crc, compressed, size_field, name_length,
         extra_length, comment_length, disk, _, _, header_offset) = _CENTRAL.unpack_from(
            directory, position)
        if magic != _CENTRAL_MAGIC:
            raise Damaged(f"{what}: central directory entry damaged")
        _check_features(needed, flags, method, what)
        if comment_length or disk or extra_length > _MAX_EXTRA:
            raise Damaged(f"{what}: central directory entry damaged")
        body = position + _CENTRAL.size
        name = _name(directory[body:body + name_length], what)
        extra = directory[body + name_length:body + name_length + extra_length]
        position = body + name_length + extra_length
        if position > len(directory):
            raise Damaged(f"{what}: central directory cut short")
        marked = [value == _ZIP64_MARK for value in (size_field, compressed, header_offset)]
        if any(marked):
            values = iter(_zip64_values(extra, sum(marked), what))
            size_field, compressed, header_offset = (next(values) if mark else value for mark, value
                                                     in zip(marked, (size_field, compressed,
                                                                     header_offset)))
        if compressed != size_field:
            raise Damaged(f"{name}: stored with {compressed} bytes for {size_field}")
        if name in members:
            raise Damaged(f"{name}: twice in the archive")
        room = directory_offset - header_offset
        if room < _LOCAL.size:
            raise Damaged(f"{name}: local header at byte {header_offset}, outside the members")
        local = read_local_header(_read_at(file, header_offset,
                                           min(room, _LOCAL.size + _MAX_NAME + _MAX_EXTRA),
                                           f"{name}: local header"))
        if local is None or local.name != name:
            raise Damaged(f"{name}: local header damaged")
        if (local.size is not None and local.size != size_field) or local.crc not in (0, crc):
            raise Damaged(f"{name}: local header disagrees with the central directory")
        start = header_offset + local.data_offset
        if start + size_field > directory_offset:
            raise Damaged(f"{name}: {size_field} bytes from byte {start} run past the central "
                          f"directory at byte {directory_offset}")
        members[name] = Member(name, start, size_field, crc)
        starts.append((header_offset, start + size_field, name))
    if position != len(directory):
        raise Damaged("central directory longer than its entries")
    starts.sort()
    for (_, end, name), (next_start, _, next_name) in zip(starts, starts[1:]):
        if end > next_start:
            raise Damaged(f"{name} overlaps {next_name}")
    return members


@dataclass(frozen=True)
class LocalHeader:
    name: str
    data_offset: int        # from the header's first byte
    size: int | None        # None: given by the central directory (not in the header)
    crc: int


def read_local_header(data: bytes) -> LocalHeader | None:
    """The local header at the start of ``data`` (which holds the header, its name and extra
    field), or None if ``data`` is too short to hold it; :class:`Damaged` if it is not one the
    writer writes."""
    if len(data) < _LOCAL.size:
        return None
    (magic, needed, _, flags, method, _, _, crc, compressed, size_field, name_length,
     extra_length) = _LOCAL.unpack_from(data)
    if magic != _LOCAL_MAGIC:
        raise Damaged("local header damaged")
    _check_features(needed, flags, method, "local header")
    if extra_length > _MAX_EXTRA:
        raise Damaged("local header damaged")
    end = _LOCAL.size + name_length + extra_length
    if len(data) < end:
        return None
    name = _name(data[_LOCAL.size:_LOCAL.size + name_length], "local header")
    extra = data[_LOCAL.size + name_length:end]
    if _ZIP64_MARK in (size_field, compressed):
        size_field, compressed = _zip64_values(extra, 2, name)
    if compressed != size_field:
        raise Damaged(f"{name}: stored with {compressed} bytes for {size_field}")
    return LocalHeader(name, end, size_field, crc)


@dataclass(frozen=True)
class NpyHeader:
    descr: str
    shape: tuple[int, ...]
    length: int             # of the whole .npy header: where the array's bytes start

    def data_bytes(self, itemsize: int) -> int:
        count = 1
        for extent in self.shape:
            count *= extent
        return count * itemsize


def parse_npy_header(data: bytes, name: str) -> NpyHeader:
    """The .npy header at the start of ``data`` (at least its first 12 bytes, and all of it for
    a result): magic, version, and the dictionary numpy writes, C order only."""
    if len(data) < 12 or not data.startswith(_NPY_MAGIC):
        raise Damaged(f"{name}: not an .npy array")
    major, minor = data[6], data[7]
    if major not in (1, 2, 3) or minor:
        raise Damaged(f"{name}: .npy version {major}.{minor}")
    start = 10 if major == 1 else 12
    length = int.from_bytes(data[8:start], "little")
    if length > NPY_HEADER_LIMIT:
        raise Damaged(f"{name}: .npy header of {length} bytes")
    text = data[start:start + length]
    if len(text) != length:
        raise Damaged(f"{name}: .npy header cut short")
    match = _NPY_DICT.fullmatch(text.decode("latin-1"))
    if match is None:
        raise Damaged(f"{name}: .npy header {text[:80]!r}")
    descr, fortran, shape = match.groups()
    if fortran == "True":
        raise Damaged(f"{name}: Fortran order")
    return NpyHeader(descr, tuple(int(extent) for extent in shape.split(",") if extent.strip()),
                     start + length)


def _npy_header_of(file, member: Member) -> NpyHeader:
    head = _read_at(file, member.offset, min(member.size, 12 + NPY_HEADER_LIMIT), member.name)
    return parse_npy_header(head, member.name)


def member_bound(name: str, data_bytes: int) -> int:
    """At most the bytes a member of ``data_bytes`` array bytes takes in the archive (local
    header, .npy header, data)."""
    return _LOCAL.size + len(name) + 20 + 12 + NPY_HEADER_LIMIT + data_bytes


def check_member(file, member: Member, dtype: np.dtype | None = None,
                 shape: tuple[int, ...] | None = None) -> NpyHeader:
    """The .npy header of ``member`` once it says ``dtype`` (a byte type when None) and
    ``shape`` (any 1-D shape when None) and its array fills the member exactly: nothing is
    allocated but the header's few bytes."""
    header = _npy_header_of(file, member)
    if dtype is None:
        if header.descr not in ("|u1", "|i1") or len(header.shape) != 1:
            raise Damaged(f"{member.name}: {header.descr} {list(header.shape)}, expected bytes")
        dtype = np.dtype(header.descr)
    elif header.descr != np.dtype(dtype).str or header.shape != tuple(shape):
        raise Damaged(f"{member.name}: {header.descr} {list(header.shape)}, expected "
                      f"{np.dtype(dtype).str} {list(shape)}")
    needed = header.data_bytes(np.dtype(dtype).itemsize)
    if header.length + needed != member.size:
        raise Damaged(f"{member.name}: holds {member.size - header.length} array bytes, its "
                      f"shape {list(header.shape)} needs {needed}")
    return header


def read_member(file, member: Member, header: NpyHeader) -> np.ndarray:
    """The array of ``member``, whose header :func:`check_member` returned: allocated (its size
    is the member's, inside the file), read and its CRC-32 checked."""
    array = np.empty(header.shape, dtype=np.dtype(header.descr))
    view = memoryview(array.reshape(-1).view(np.uint8))
    crc = zlib.crc32(_read_at(file, member.offset, header.length, member.name))
    position = 0
    while position < len(view):
        got = file.readinto(view[position:position + _CHUNK])
        if not got:
            raise Damaged(f"{member.name}: cut short at byte "
                          f"{member.offset + header.length + position}")
        crc = zlib.crc32(view[position:position + got], crc)
        position += got
    if crc != member.crc:
        raise Damaged(f"{member.name}: CRC-32 {crc:08x}, the archive records {member.crc:08x}")
    return array
