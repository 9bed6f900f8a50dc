"""Reading genomes: sequence files decompressed and checked, and the names they are reported by.

Sequence files are plain, gzip, bzip2 or xz (told by their first bytes; zstd and lz4 are named
and refused), and pass the host's input check (SPEC 1.1, :func:`check_sequence`) before any
backend sees them; docs/input.md tells what is refused and why.

Every failure is an ``InputError`` whose message names the file and the problem in one line; the
CLI prints it and exits with status 2 (host.outputs, which writes the results, raises it too).
"""

import bz2
import functools
import gzip
import io
import lzma
import os
import re
import stat
import zlib
from pathlib import Path

from kmerspec.golden.parse import remove_trailing_whitespace

__all__ = ["InputError", "read_input", "read_sequence_file", "check_sequence", "compression_of",
           "looks_like_damaged_sketch", "gzip_problem", "genome_name", "name_problem",
           "phylip_name", "decompressed_head", "compressed_sketch_problem", "few_kmers_cause",
           "ZIP_MAGIC", "descriptor_of", "open_input", "is_stream", "StreamInput",
           "stream_input", "stream_key", "STREAMS", "with_head", "bounded_lines",
           "LINE_LIMIT", "decompressed_blocks"]

_GZIP_MAGIC = b"\x1f\x8b"
_SNIFF_BYTES = 1 << 16
# (magic, name, how to undo it) of the compressions that are named rather than read as text;
# gzip, bzip2 and xz are decompressed (Python's zlib/ISA-L, bz2, lzma), the others refused
_COMPRESSIONS = [
    (_GZIP_MAGIC, "gzip", None),
    (b"BZh", "bzip2", None),
    (b"\xfd7zXZ\x00", "xz", None),
    (b"\x28\xb5\x2f\xfd", "zstd", "zstd -d"),
    (b"\x04\x22\x4d\x18", "lz4", "lz4 -d"),
]
# what a sketch file (a .npz zip archive) holds near its start, whatever its first bytes
_SKETCH_MEMBER = b"header.npy"
# a zip archive's first bytes: a sketch file is one (.npz)
ZIP_MAGIC = b"PK\x03\x04"


class InputError(Exception):
    """A problem with a user-supplied file; the message names the file."""


def compression_of(head: bytes) -> str | None:
    """The name of the compression whose magic ``head`` starts with, else None."""
    for magic, name, _ in _COMPRESSIONS:
        if head.startswith(magic):
            return name
    return None


def _refuse_compression(path: Path, head: bytes) -> None:
    for magic, name, undo in _COMPRESSIONS:
        if undo is not None and head.startswith(magic):
            raise InputError(f"{path}: {name}-compressed, which is not read here; decompress it "
                             f"first ({undo} {path}), or compress it with gzip")


def looks_like_damaged_sketch(head: bytes) -> bool:
    """A zip archive holding a sketch header whose first bytes are not a zip magic."""
    return _SKETCH_MEMBER in head[:128]


#: how to undo each compression that is read, for a compressed sketch file
_DECOMPRESS = {"gzip": "gzip -d", "bzip2": "bzip2 -d", "xz": "xz -d"}


def compressed_sketch_problem(path, compression: str) -> str:
    """The message for a sketch file compressed with ``compression``: sketch files are read
    uncompressed (a zip archive is read by seeking)."""
    article = "an" if compression == "xz" else "a"
    return (f"{path}: {article} {compression}-compressed sketch file; sketch files are read "
            f"uncompressed: decompress it first ({_DECOMPRESS[compression]})")


def decompressed_head(head: bytes, size: int = 256) -> bytes:
    """The first ``size`` bytes (at most) that the compressed ``head`` decompresses to (b"" if
    it is not compressed, or not readable so far): for naming what a compressed file holds."""
    name = compression_of(head)
    try:
        if name == "gzip":
            return zlib.decompressobj(31).decompress(head, size)
        if name == "bzip2":
            return bz2.BZ2Decompressor().decompress(head, size)
        if name == "xz":
            return lzma.LZMADecompressor().decompress(head, size)
    except (zlib.error, OSError, EOFError, lzma.LZMAError, ValueError):
        pass
    return b""


def _check_format(path: Path, data: bytes, compression: str | None = None) -> None:
    """Refuse content that is not FASTA/FASTQ text, before it silently yields no k-mers;
    ``data`` is decompressed from ``compression`` (None: not compressed)."""
    if not data:
        return
    head = data[:_SNIFF_BYTES]
    first = head.lstrip(b" \t\r\n")[:1]  # lines of spaces only are empty lines (SPEC 1.1)
    if not first:
        return
    if first not in (b">", b"@") and looks_like_damaged_sketch(head):
        if compression in _DECOMPRESS:
            raise InputError(compressed_sketch_problem(path, compression))
        if head.startswith(ZIP_MAGIC):  # a whole sketch file under another name (x.fa)
            raise InputError(f"{path}: a sketch file, not a FASTA/FASTQ file (sketch reads "
                             f"sequence files; dist, search and jsd read sketch files too)")
        raise InputError(f"{path}: not a sketch file (bad magic {head[:4]!r}, expected "
                         f"{ZIP_MAGIC!r}), nor a FASTA/FASTQ file: a damaged sketch file?")
    nul = head.find(b"\x00")
    if nul >= 0:
        raise InputError(f"{path}: not a FASTA/FASTQ file (binary content: NUL byte at offset "
                         f"{nul})")
    if first not in (b">", b"@"):
        raise InputError(f"{path}: not a FASTA/FASTQ file (first character is {first!r}, "
                         f"expected '>' or '@')")


_FD_PATH = re.compile(r"/(?:dev/fd|proc/self/fd|proc/thread-self/fd)/(\d+)")
_STANDARD_STREAMS = {"/dev/stdin": 0, "/dev/stdout": 1, "/dev/stderr": 2}


def descriptor_of(path: str) -> int | None:
    """The file descriptor ``path`` names, through any symlinks: ``/dev/stdout``,
    ``/dev/fd/N``, ``/proc/self/fd/N``, ``/proc/<this process>/fd/N``; None for other paths.

    Such a path is read or written through the descriptor itself: its open mode holds (``>> f``
    appends), what it leads to (a pipe, a socket, a file) is never replaced, and a pipe that
    another user made, or a socket, which could not be opened again by name, is read."""
    own = re.compile(rf"/proc/{os.getpid()}/fd/(\d+)")
    current = os.path.abspath(path)
    for _ in range(40):  # the kernel's own limit on a chain of symlinks
        if current in _STANDARD_STREAMS:
            return _STANDARD_STREAMS[current]
        match = _FD_PATH.fullmatch(current) or own.fullmatch(current)
        if match:
            return int(match.group(1))
        if not os.path.islink(current):
            return None
        current = os.path.normpath(os.path.join(os.path.dirname(current),
                                                os.readlink(current)))
    return None


def is_stream(path) -> bool:
    """A pipe, FIFO, character device or socket (``<(cat x.fa)``, ``/dev/stdin`` on a pipe):
    content that can be read once only."""
    try:
        descriptor = descriptor_of(os.fspath(path))
        mode = (os.fstat(descriptor) if descriptor is not None else os.stat(path)).st_mode
    except (OSError, ValueError):
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISCHR(mode) or stat.S_ISSOCK(mode)


class StreamInput:
    """An input that can be read once (host.streams opens it for a command): its first bytes
    (``head``), its kind (``"sketch"`` or ``"sequence"``) and, for a sketch file, the anonymous
    temporary file it was spooled into; a sequence stream is read as it arrives by the one
    reader that takes it (:meth:`take`)."""

    def __init__(self, shown: str, kind: str, head: bytes, file, ended: bool = False):
        self.shown, self.kind, self.head, self.file = shown, kind, head, file
        #: the stream ended within ``head``: it is all there is
        self.ended = ended
        self.taken = False

    def take(self):
        """The open stream, from its first byte: a sequence stream once, a spooled sketch file
        as a new handle each time."""
        if self.kind == "sketch":
            return os.fdopen(os.dup(self.file.fileno()), "rb")
        if self.taken:
            raise RuntimeError(f"{self.shown}: a stream read twice (it can be read once)")
        self.taken = True
        return self.file

    def close(self) -> None:
        self.file.close()


#: the inputs host.streams has opened for the running command, by the path as given
STREAMS: dict[str, StreamInput] = {}


def stream_input(path) -> StreamInput | None:
    """The opened stream ``path`` names in this command, if host.streams opened it."""
    try:
        return STREAMS.get(stream_key(path))
    except TypeError:
        return None


def stream_key(path) -> str:
    """The key of ``path`` among STREAMS: the path as pathlib writes it (``./x`` is ``x``)."""
    return os.fspath(Path(path))


class _PositionalReader(io.RawIOBase):
    """A regular file read through a descriptor by position (pread): the descriptor's own
    offset, which the shell's other commands share, is left where it is."""

    def __init__(self, descriptor: int):
        self._descriptor = descriptor
        self._position = 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        data = os.pread(self._descriptor, len(buffer), self._position)
        buffer[:len(data)] = data
        self._position += len(data)
        return len(data)

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._position,
                io.SEEK_END: os.fstat(self._descriptor).st_size}[whence]
        self._position = max(0, base + offset)
        return self._position

    def tell(self) -> int:
        return self._position

    def fileno(self) -> int:
        return self._descriptor

    def close(self) -> None:
        if not self.closed:
            os.close(self._descriptor)
        super().close()


class _Prefixed(io.RawIOBase):
    """Bytes already read from a stream (``head``), then the rest of it."""

    def __init__(self, head: bytes, rest, close_rest: bool = True):
        self._head = memoryview(head)
        self._rest = rest
        self._close_rest = close_rest

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        if self._head:
            count = min(len(buffer), len(self._head))
            buffer[:count] = self._head[:count]
            self._head = self._head[count:]
            return count
        return self._rest.readinto(buffer)

    def close(self) -> None:
        if not self.closed and self._close_rest:
            self._rest.close()
        super().close()


def with_head(file, size: int, close_file: bool = True):
    """(the first ``size`` bytes of the binary ``file``, fewer only at its end; a file that
    reads from its first byte again, closing ``file`` when it is closed unless not
    ``close_file``): a pipe may deliver its first bytes in pieces, which ``peek`` would not wait
    for."""
    head = b""
    while len(head) < size:
        more = file.read(size - len(head))
        if not more:
            break
        head += more
    return head, io.BufferedReader(_Prefixed(head, file, close_file), 1 << 16)


def _open_error(path, expected: str, error: OSError) -> InputError:
    if isinstance(error, FileNotFoundError):
        return InputError(f"{path}: no such file")
    if isinstance(error, IsADirectoryError):
        return InputError(f"{path}: is a directory, expected {expected}")
    if isinstance(error, PermissionError):
        return InputError(f"{path}: permission denied")
    return InputError(f"{path}: cannot read ({error.strerror or error})")


def open_input(path: str | os.PathLike, expected: str):
    """``path`` open for reading in binary, failures as one-line InputErrors naming it
    (``expected`` says what the file should have been, for a directory). A stream host.streams
    opened for the command is that stream (:meth:`StreamInput.take`). A path naming a
    descriptor (``-`` is ``/dev/stdin``, ``/dev/fd/N``) whose file is a pipe, socket or device
    is read through the descriptor itself, not opened again by name: Linux refuses to open a
    pipe of another user again (EACCES) and any socket (ENXIO) by its /proc path; a regular
    file there is opened again by name, so that its offset is its own, or read by position
    through the descriptor when its permissions refuse that."""
    registered = stream_input(path)
    if registered is not None:
        return registered.take()
    try:
        descriptor = descriptor_of(os.fspath(path))
    except ValueError:  # a NUL byte in the path
        raise InputError(f"{path}: no such file") from None
    try:
        if descriptor is not None:
            status = os.fstat(descriptor)
            if not stat.S_ISREG(status.st_mode):
                return os.fdopen(os.dup(descriptor), "rb")
            try:
                return open(path, "rb")
            except PermissionError:
                return io.BufferedReader(_PositionalReader(os.dup(descriptor)))
        return open(path, "rb")
    except OSError as error:
        raise _open_error(path, expected, error) from None


def read_input(path: str | os.PathLike, expected: str, size: int = -1) -> bytes:
    """The first ``size`` bytes of an input file (all by default); failures name the file.
    A stream opened for the command gives its first bytes without losing them, when they were
    read to tell its kind."""
    registered = stream_input(path)
    if registered is not None and 0 <= size and (size <= len(registered.head)
                                                 or registered.ended):
        return registered.head[:size]
    with open_input(path, expected) as file:
        try:
            return file.read(size)
        except OSError as error:
            raise _open_error(path, expected, error) from None


#: the longest line a list of paths or of genome names may hold (Linux's PATH_MAX is 4,096)
LINE_LIMIT = 1 << 16


def bounded_lines(file, shown: str, what: str, limit: int = LINE_LIMIT):
    """(line number, line without its end) of the binary ``file``, read a line at a time: a
    line longer than ``limit`` bytes (``/dev/zero`` has no line end at all) or one holding a NUL
    byte is refused at that point, as not ``what``, so that neither memory nor time goes into
    a file that is no text list."""
    number = offset = 0
    while True:
        line = file.readline(limit + 1)
        if not line:
            return
        number += 1
        nul = line.find(b"\x00")
        if nul >= 0:
            raise InputError(f"{shown}: binary content (NUL byte at offset {offset + nul}), "
                             f"not {what}")
        if len(line) > limit:
            raise InputError(f"{shown}: line {number}: longer than {limit:,} bytes, not {what}")
        offset += len(line)
        yield number, line.rstrip(b"\n")


def gzip_problem(path: Path, file) -> str:
    """Why the gzip file open as binary ``file`` does not decompress: walks its members with
    zlib, 1 MiB at a time (called once a decompressor has failed, so its cost does not
    matter, but its memory must stay bounded whatever the file's size)."""
    size = file.seek(0, os.SEEK_END)
    file.seek(0)
    position = 0  # where the member being looked at starts
    pending = b""
    while True:
        while len(pending) < len(_GZIP_MAGIC):
            more = file.read(_DIAGNOSIS_CHUNK)
            if not more:
                break
            pending += more
        if not pending:
            return f"{path}: corrupt gzip file"  # every member whole: the decompressor's fault
        if not pending.startswith(_GZIP_MAGIC):
            if position and _only_zeros(pending, file):
                return f"{path}: corrupt gzip file"  # zero padding, which gzip ignores too
            return f"{path}: trailing garbage after the gzip stream at byte {position} (of {size})"
        decompressor = zlib.decompressobj(31)
        given = len(pending)  # bytes handed to this member's decompressor, each counted once
        try:
            while not decompressor.eof:
                if not pending:
                    pending = file.read(_DIAGNOSIS_CHUNK)
                    given += len(pending)
                    if not pending:
                        where = f" of the member at byte {position}" if position else ""
                        return (f"{path}: truncated gzip file (ends before the end of the "
                                f"compressed stream{where})")
                decompressor.decompress(pending, _DIAGNOSIS_CHUNK)
                pending = decompressor.unconsumed_tail
        except zlib.error as error:
            where = f" (the member at byte {position})" if position else ""
            return f"{path}: corrupt gzip file ({error}){where}"
        pending = decompressor.unused_data  # what follows the member, of what was handed
        position += given - len(pending)


_DIAGNOSIS_CHUNK = 1 << 20


def _only_zeros(pending: bytes, file) -> bool:
    if pending.strip(b"\x00"):
        return False
    while chunk := file.read(_DIAGNOSIS_CHUNK):
        if chunk.strip(b"\x00"):
            return False
    return True


#: what Python's bz2 and lzma raise on a corrupt stream (EOFError: a truncated one)
BZIP2_XZ_ERRORS = (OSError, ValueError, lzma.LZMAError)


def bzip2_xz_problem(path: Path, name: str, error: Exception) -> str:
    if isinstance(error, EOFError):
        return f"{path}: truncated {name} file (ends before the end of the compressed stream)"
    return f"{path}: corrupt {name} file ({error})"


@functools.cache
def _gzip_reader() -> tuple[type, tuple]:
    """(GzipFile class, the exceptions of a corrupt stream): ISA-L's where installed, else
    zlib's. Imported with the first gzip file, so that a run over plain files does without."""
    try:
        from isal.igzip import GzipFile
        from isal.isal_zlib import error
        return GzipFile, (gzip.BadGzipFile, zlib.error, error)
    except ImportError:  # no wheel for this platform: zlib
        return gzip.GzipFile, (gzip.BadGzipFile, zlib.error)


def decompressed_blocks(path: str | os.PathLike, block_bytes: int = 1 << 22, into=None):
    """The decompressed content of the FASTA/FASTQ file ``path`` (opened by
    :func:`open_input`) in blocks of ``block_bytes`` (at least the 64 KiB the format check
    looks at), its format checked on the first block; each problem one InputError naming the
    file when the block that shows it is read. host.reader.sequence_blocks is this.

    With ``into``, a writable buffer of at least 64 KiB, the blocks are read (decompressed) into
    it and are memoryviews of it, each valid until the next is taken: no bytes object a block,
    and a block as large as the buffer."""
    path = Path(path)
    file = open_input(path, "a FASTA/FASTQ file")
    try:
        if file.seekable():
            head = file.peek(8)[:8]
        else:  # a pipe may give its first bytes in pieces
            head, file = with_head(file, 8)
    except OSError as error:
        file.close()
        raise InputError(f"{path}: cannot read ({error.strerror or error})") from None
    with file:
        _refuse_compression(path, head)
        compression = compression_of(head)
        if compression == "gzip":
            gzip_file, corrupt = _gzip_reader()
            stream = gzip_file(fileobj=file)
        elif compression is not None:
            stream = (bz2.BZ2File if compression == "bzip2" else lzma.LZMAFile)(file)
            corrupt = BZIP2_XZ_ERRORS
        else:
            stream, corrupt = file, ()
        yield from _blocks(path, file, stream, compression, corrupt, block_bytes, into)


def _reader_into(stream, into):
    """A function reading the next block of ``stream`` into the buffer ``into`` (its view up to
    the bytes read), through the reader that fills a buffer without a copy: the buffered reader
    inside a GzipFile (gzip's and ISA-L's), BZ2File or LZMAFile, whose readinto decompresses
    into it (theirs would read a bytes object and copy it)."""
    inner = getattr(stream, "_buffer", None)
    readinto = (inner if isinstance(inner, io.BufferedReader) else stream).readinto
    view = memoryview(into).cast("B")
    return lambda: view[:readinto(view)]


def _blocks(path: Path, file, stream, compression: str | None, corrupt: tuple,
            block_bytes: int, into=None):
    with stream:
        first = True
        read = _reader_into(stream, into) if into is not None else \
            (lambda: stream.read(block_bytes))
        while True:
            try:
                block = read()
            except (EOFError, *corrupt) as error:
                if compression == "gzip" and file.seekable():
                    # name the problem as read_sequence_file does
                    raise InputError(gzip_problem(path, file)) from None
                if compression == "gzip":  # a pipe cannot be walked again for the cause
                    cause = ("truncated gzip stream (ends before the end of the compressed "
                             "stream)" if isinstance(error, EOFError)
                             else f"corrupt gzip stream ({error})")
                    raise InputError(f"{path}: {cause}") from None
                raise InputError(bzip2_xz_problem(path, compression, error)) from None
            except OSError as error:
                raise InputError(f"{path}: cannot read ({error.strerror or error})") from None
            if first:
                _check_format(path, bytes(block[:_SNIFF_BYTES]), compression)
                first = False
            if not block:
                return
            yield block


#: the most decompressed bytes of one FASTA/FASTQ file that :func:`read_sequence_file` holds
#: whole for the backends that take whole genomes (golden, sim, xrt, f2; the sw backend streams
#: files of any size): a human genome (3.1 GB) fits, an endless pipe is refused when it passes
WHOLE_FILE_LIMIT = 4 << 30


def _too_big(path: Path) -> InputError:
    unit, scale = ("GiB", 1 << 30) if WHOLE_FILE_LIMIT >= 1 << 30 else ("KiB", 1 << 10)
    return InputError(f"{path}: more than {WHOLE_FILE_LIMIT / scale:g} {unit} of sequence in one "
                      f"file, which this backend holds whole (the sw backend, the default, reads "
                      f"files of any size as they come)")


def read_sequence_file(path: str | os.PathLike) -> bytes:
    """The decompressed bytes of a FASTA/FASTQ file, plain, gzip, bzip2 or xz (detected by its
    magic), checked and with trailing whitespace removed by :func:`check_sequence`, at most
    :data:`WHOLE_FILE_LIMIT` of them (InputError past it). A plain regular file is read whole;
    a compressed one or a stream (a pipe, a device) block by block, its format checked on the
    first block, so that /dev/zero or a binary stream is refused at once."""
    path = Path(path)
    if stream_input(path) is None and not is_stream(path):
        head = read_input(path, "a FASTA/FASTQ file", 8)
        if compression_of(head) is None:
            if _file_size(path) > WHOLE_FILE_LIMIT:
                raise _too_big(path)
            raw = read_input(path, "a FASTA/FASTQ file")
            _refuse_compression(path, raw[:8])
            _check_format(path, raw, None)
            return check_sequence(path, raw)
    blocks, held = [], 0
    for block in decompressed_blocks(path):
        held += len(block)
        if held > WHOLE_FILE_LIMIT:
            raise _too_big(path)
        blocks.append(block)
    return check_sequence(path, b"".join(blocks))


def _file_size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError as error:
        raise _open_error(path, "a FASTA/FASTQ file", error) from None


def check_sequence(path: str | os.PathLike, data: bytes) -> bytes:
    """The host's input check (SPEC 1.1, kmerspec.golden.parse.check_input) of one file's
    decompressed bytes, in one native pass: ``data`` with the spaces and tabs at line ends
    removed (the same object when no sequence line had any), or InputError naming the file,
    record and line. Every backend that is handed bytes gets them from here; the sw backend, which reads
    files itself, runs the same check in its k-mer stream (host/fast/_kmer_stream.c)."""
    from .fast.native import native  # here: start-up without a sequence file does without it
    stream = native.KmerStream(1, check=True)
    try:
        stream.check(data)
        stream.finish()
    except native.InputFormatError as error:
        raise InputError(f"{path}: {error}") from None
    # only trailing spaces of sequence lines and lines of spaces only change what a parser
    # makes of the bytes (headers and quality lines are skipped whatever they end with)
    return remove_trailing_whitespace(data) if stream.trimmed_lines else data


def few_kmers_cause(path: str | os.PathLike) -> str | None:
    """Why the regular FASTA/FASTQ file ``path``, which passed the input check, yields no or
    almost no k-mers, for the causes a user can mend, else None; told from its first 64 KiB
    (decompressed). The parser is SPEC 1's and stays so; this only names its effect:

    * lines ending in CR alone (classic Mac OS): CR is ignored, lines end at LF, so the whole
      file is one header line;
    * RNA: U (more U than T in the sequence lines) is a nucleotide code, accepted, but no k-mer
      base, so it breaks the k-mer window as N does, at every fourth base or so.

    A pipe or device is not read again (its content has gone to the sketch)."""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return None
        raw = read_input(path, "a FASTA/FASTQ file", 1 << 20)  # bzip2 needs a whole block
    except (OSError, InputError):
        return None
    data = decompressed_head(raw, _SNIFF_BYTES) if compression_of(raw[:8]) else raw
    data = data[:_SNIFF_BYTES].lstrip(b" \t\r\n")
    if b"\r" in data and b"\n" not in data:
        return ("its lines end in CR alone (classic Mac OS), so the whole file is one header "
                "line (lines end at LF, CR is ignored: SPEC 1); convert first: tr '\\r' '\\n'")
    fastq = data[:1] == b"@"
    lines = data.split(b"\n")
    sequence = b"".join(lines[1::4] if fastq else
                        [line for line in lines if not line.startswith(b">")]).upper()
    if sequence.count(b"U") > sequence.count(b"T"):
        convert = "sed '2~4y/Uu/Tt/'" if fastq else "sed '/^>/!y/Uu/Tt/'"
        return (f"it is RNA: U is no k-mer base (it breaks the k-mer window as N does: SPEC 1); "
                f"convert to DNA first: {convert}")
    return None


def genome_name(path: str | os.PathLike) -> str:
    """The name a genome is reported by: its file name without directories."""
    return Path(path).name


def name_problem(name: str) -> str | None:
    """Why ``name`` cannot name a genome in a table (TSV, edges, PHYLIP lines), or None: a tab,
    newline or other control character would split its row or add columns, and a leading '#'
    would make its row a comment line to TSV readers."""
    if not name:
        return "is empty"
    for char in name:
        if ord(char) < 0x20 or ord(char) == 0x7F:
            return f"contains the control character {char!r}, which would break table output"
    if name.startswith("#"):
        return "starts with '#', which table readers take for a comment line"
    return None


#: the characters a PHYLIP name is written without: whitespace ends a name in the relaxed
#: (whitespace-separated) PHYLIP that tree programs read, these delimit Newick trees, which
#: take the names over, and '%' starts an escape
_PHYLIP_RESERVED = frozenset("%(),:;[]'")


def phylip_name(name: str) -> str:
    """``name`` for a PHYLIP matrix line: whitespace and ``%(),:;[]'`` percent-encoded, each
    byte of the character's UTF-8 as ``%XX`` (``an other.fa`` -> ``an%20other.fa``), every other
    character as is. ``urllib.parse.unquote`` gives the name back, whatever it is; a name
    without these characters is written unchanged."""
    return "".join("".join(f"%{byte:02X}" for byte in char.encode("utf-8", "surrogateescape"))
                   if char.isspace() or char in _PHYLIP_RESERVED else char for char in name)
