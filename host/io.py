"""Reading genomes and writing results safely.

Sequence files are plain, gzip, bzip2 or xz (told by their first bytes; zstd and lz4 are named
and refused), and pass the host's input check (SPEC 1.1, :func:`check_sequence`) before any
backend sees them; docs/input.md tells what is refused and why.

Every failure is an ``InputError`` whose message names the file and the problem in one line; the
CLI prints it and exits with status 2. Outputs follow what users of Unix tools expect (``-`` is
standard output, a FIFO or device is written in place, a symlink is followed) and are written only
when the whole command succeeds, side files included (:class:`Outputs`).
"""

import bz2
import contextlib
import gzip
import io
import lzma
import os
import re
import shutil
import stat
import sys
import tempfile
import zlib
from collections.abc import Iterator
from pathlib import Path

from kmerspec.golden.parse import remove_trailing_whitespace

__all__ = ["InputError", "read_input", "read_sequence_file", "check_sequence", "compression_of",
           "looks_like_damaged_sketch", "gzip_problem", "genome_name", "name_problem", "STDOUT",
           "Outputs", "writes_in_place", "output_transaction", "atomic_output",
           "input_identities", "ReaderGone"]

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


def _check_format(path: Path, data: bytes) -> None:
    """Refuse content that is not FASTA/FASTQ text, before it silently yields no k-mers."""
    if not data:
        return
    head = data[:_SNIFF_BYTES]
    first = head.lstrip(b" \t\r\n")[:1]  # lines of spaces only are empty lines (SPEC 1.1)
    if not first:
        return
    if first not in (b">", b"@") and looks_like_damaged_sketch(head):
        raise InputError(f"{path}: not a sketch file (bad magic {head[:4]!r}, expected "
                         f"b'PK\\x03\\x04'), nor a FASTA/FASTQ file: a damaged sketch file?")
    nul = head.find(b"\x00")
    if nul >= 0:
        raise InputError(f"{path}: not a FASTA/FASTQ file (binary content: NUL byte at offset "
                         f"{nul})")
    if first not in (b">", b"@"):
        raise InputError(f"{path}: not a FASTA/FASTQ file (first character is {first!r}, "
                         f"expected '>' or '@')")


def read_input(path: str | os.PathLike, expected: str, size: int = -1) -> bytes:
    """The first ``size`` bytes of an input file (all by default); failures name the file."""
    try:
        with open(path, "rb") as file:
            return file.read(size)
    except FileNotFoundError:
        raise InputError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise InputError(f"{path}: is a directory, expected {expected}") from None
    except PermissionError:
        raise InputError(f"{path}: permission denied") from None
    except OSError as error:
        raise InputError(f"{path}: cannot read ({error.strerror or error})") from None


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


def _decompress(path: Path, raw: bytes) -> bytes:
    _refuse_compression(path, raw[:8])
    name = compression_of(raw[:8])
    if name == "gzip":
        try:
            return gzip.decompress(raw)
        except (EOFError, gzip.BadGzipFile, zlib.error):
            raise InputError(gzip_problem(path, io.BytesIO(raw))) from None
    if name is not None:
        try:
            with (bz2.BZ2File if name == "bzip2" else lzma.LZMAFile)(io.BytesIO(raw)) as file:
                return file.read()
        except (EOFError, *BZIP2_XZ_ERRORS) as error:
            raise InputError(bzip2_xz_problem(path, name, error)) from None
    return raw


#: what Python's bz2 and lzma raise on a corrupt stream (EOFError: a truncated one)
BZIP2_XZ_ERRORS = (OSError, ValueError, lzma.LZMAError)


def bzip2_xz_problem(path: Path, name: str, error: Exception) -> str:
    if isinstance(error, EOFError):
        return f"{path}: truncated {name} file (ends before the end of the compressed stream)"
    return f"{path}: corrupt {name} file ({error})"


def read_sequence_file(path: str | os.PathLike) -> bytes:
    """The decompressed bytes of a FASTA/FASTQ file, plain, gzip, bzip2 or xz (detected by its
    magic), checked and with trailing whitespace removed by :func:`check_sequence`."""
    path = Path(path)
    raw = _decompress(path, read_input(path, "a FASTA/FASTQ file"))
    _check_format(path, raw)
    return check_sequence(path, raw)



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


# -- outputs --------------------------------------------------------------------------------

STDOUT = "-"


def _current_umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _strerror(error: OSError) -> str:
    return error.strerror or str(error)


_FD_PATH = re.compile(r"/(?:dev/fd|proc/self/fd|proc/thread-self/fd)/(\d+)")
_STANDARD_STREAMS = {"/dev/stdin": 0, "/dev/stdout": 1, "/dev/stderr": 2}


def _descriptor_of(path: str) -> int | None:
    """The file descriptor ``path`` names, through any symlinks: ``/dev/stdout``,
    ``/dev/fd/N``, ``/proc/self/fd/N``, ``/proc/<this process>/fd/N``; None for other paths.

    Such a path is written through the descriptor itself, so its open mode holds (``>> f``
    appends) and what it leads to (a pipe, a socket, a file) is never replaced."""
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


class _PendingOutput:
    """One output path of a command, its content held back until the command succeeds.

    * ``-``: standard output, written at commit (binary refused on a terminal);
    * a path naming a file descriptor (``/dev/stdout``, ``/dev/fd/N``, ``/proc/self/fd/N``, or a
      symlink to one): written through that descriptor at commit, in its mode (``>> f``
      appends), whatever it is (file, pipe, socket, terminal);
    * an existing FIFO, character device or socket: opened and written in place at commit;
    * a symlink: followed, so its target is written and the link stays;
    * anything else: a regular file, written to a temporary file beside its target and renamed
      onto it at commit. One that is an input of the command (the same inode, through a
      symlink or a hard link too) is refused.

    Content for the streams goes to an anonymous temporary file (in the system temp dir) until
    then, so a failed command writes nothing anywhere.
    """

    def __init__(self, shown: str, binary: bool, inputs: dict | None = None):
        self.shown = shown
        self.binary = binary
        self.descriptor: int | None = None
        self._temporary: Path | None = None
        if shown == "":
            raise InputError("'': an empty output file name (give -o FILE, or -o - for "
                             "standard output)")
        descriptor = 1 if shown == STDOUT else _descriptor_of(shown)
        if descriptor is not None:
            self.kind, self.target, self.descriptor = "stdout", None, descriptor
            try:
                terminal = os.isatty(descriptor)
            except OSError:
                terminal = False
            if not _descriptor_open(descriptor):
                what = ("standard output is" if descriptor == 1
                        else f"file descriptor {descriptor} is")
                raise InputError(f"{shown}: {what} closed; nowhere to write")
            if binary and terminal:
                raise InputError(f"{shown}: this output is binary; refusing to write it to a "
                                 f"terminal (redirect standard output, or give -o FILE)")
            self._raw = tempfile.TemporaryFile()
        else:
            self.target = Path(os.path.realpath(shown))
            self._raw = self._open_beside_target(inputs or {})
        self.file = (self._raw if binary else
                     io.TextIOWrapper(self._raw, encoding="utf-8", errors="surrogateescape",
                                      newline="\n"))

    def _open_beside_target(self, inputs: dict):
        target, shown = self.target, self.shown
        try:
            status = target.stat()
        except FileNotFoundError:
            status = None
        except OSError as error:
            raise InputError(f"{shown}: cannot use as output ({_strerror(error)})") from None
        if status is not None and stat.S_ISDIR(status.st_mode):
            raise InputError(f"{shown}: is a directory, expected an output file name")
        if status is not None and stat.S_ISREG(status.st_mode):
            same = inputs.get((status.st_dev, status.st_ino))
            if same is not None:
                also = "" if same == shown else f" ({same})"
                raise InputError(f"{shown}: is also an input{also}; refusing to overwrite it "
                                 f"(give another output file)")
        if status is not None and (stat.S_ISFIFO(status.st_mode) or stat.S_ISCHR(status.st_mode)
                                   or stat.S_ISSOCK(status.st_mode)):
            if not os.access(target, os.W_OK):
                raise InputError(f"{shown}: permission denied")
            self.kind = "stream"
            return tempfile.TemporaryFile()
        if status is not None and not stat.S_ISREG(status.st_mode):
            raise InputError(f"{shown}: neither a regular file, a FIFO nor a character device; "
                             f"refusing to replace it")
        self.kind = "file"
        self._mode = (stat.S_IMODE(status.st_mode) if status is not None
                      else 0o666 & ~_current_umask())
        directory = target.parent
        if not directory.is_dir():
            raise InputError(f"{shown}: no such directory {directory}")
        try:
            handle, temporary = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".partial",
                                                 dir=directory)
        except OSError as error:
            raise InputError(f"{shown}: cannot create a file in {directory} "
                             f"({_strerror(error)})") from None
        self._temporary = Path(temporary)
        return os.fdopen(handle, "w+b")

    def commit(self) -> None:
        self.file.flush()
        if self.kind == "file":
            self.file.close()
            try:
                os.chmod(self._temporary, self._mode)  # mkstemp made it private (0600)
                os.replace(self._temporary, self.target)
            except OSError as error:
                raise InputError(f"{self.shown}: cannot write ({_strerror(error)})") from None
            self._temporary = None
            return
        self._raw.seek(0)
        try:
            if self.kind == "stdout" and self.descriptor == 1 and sys.stdout is not None:
                sys.stdout.flush()
                shutil.copyfileobj(self._raw, sys.stdout.buffer)
                sys.stdout.buffer.flush()
            elif self.kind == "stdout":  # the descriptor itself: its mode and offset hold
                with open(os.dup(self.descriptor), "wb") as stream:
                    shutil.copyfileobj(self._raw, stream)
            else:
                with open(self.target, "wb") as stream:
                    if self.binary and stream.isatty():
                        raise InputError(f"{self.shown}: this output is binary; refusing to write "
                                         f"it to a terminal")
                    shutil.copyfileobj(self._raw, stream)
        except BrokenPipeError:
            if self.kind == "stdout" and self.descriptor == 1:
                _silence_stdout()  # the reader has gone: no second error when Python exits
            raise ReaderGone(self.shown) from None
        except OSError as error:
            raise InputError(f"{self.shown}: cannot write ({_strerror(error)})") from None
        finally:
            self.file.close()

    def discard(self) -> None:
        with contextlib.suppress(OSError, ValueError):
            self.file.close()
        if self._temporary is not None:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self._temporary)
            self._temporary = None


def _silence_stdout() -> None:
    with contextlib.suppress(OSError, ValueError, AttributeError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)


class ReaderGone(Exception):
    """The reader of a pipe output closed it (``| head``): as other Unix tools, the command
    stops quietly."""


def _descriptor_open(descriptor: int) -> bool:
    try:
        os.fstat(descriptor)
    except OSError:
        return False
    return True


def writes_in_place(path: str | os.PathLike) -> bool:
    """True for ``-``, a path naming a file descriptor, a FIFO, a character device or a socket:
    outputs written as a stream, with no directory of their own for side files."""
    path = os.fspath(path)
    if path == STDOUT or (path and _descriptor_of(path) is not None):
        return True
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISCHR(mode) or stat.S_ISSOCK(mode)


def input_identities(paths) -> dict:
    """(st_dev, st_ino) -> path of each existing regular input file, for refusing an output that
    is one of them (the same file through a symlink or a hard link too)."""
    identities = {}
    for path in paths:
        try:
            status = os.stat(path)
        except (OSError, ValueError):
            continue
        if stat.S_ISREG(status.st_mode):
            identities.setdefault((status.st_dev, status.st_ino), os.fspath(path))
    return identities


class Outputs:
    """Every output of one command, written only when the whole command succeeds.

    ``open(path)`` checks the path at once (so a bad ``-o`` fails before any work) and returns a
    file to write into; :func:`output_transaction` commits all of them at the end, or none.
    """

    def __init__(self, inputs=()):
        self._pending: list[_PendingOutput] = []
        self._opened: list[str] = []
        self._inputs = input_identities(inputs)

    def open(self, path: str | os.PathLike, binary: bool = False):
        shown = os.fspath(path)
        pending = _PendingOutput(shown, binary, self._inputs)
        for other in self._pending:
            same = ((pending.kind == other.kind == "stdout"
                     and pending.descriptor == other.descriptor)
                    or (pending.target is not None and pending.target == other.target))
            if same:
                pending.discard()
                raise InputError(f"{shown}: given for two outputs ({other.shown} is the other)")
        self._pending.append(pending)
        self._opened.append(shown)
        return pending.file

    def names(self) -> list[str]:
        """Every output opened, as given, for messages (kept after a discard)."""
        return list(self._opened)

    def commit(self) -> None:
        # streams first: they are the ones that can still fail (a full device, a closed pipe)
        pending = sorted(self._pending, key=lambda p: p.kind == "file")
        try:
            for output in pending:
                output.commit()
        finally:
            self.discard()

    def discard(self) -> None:
        for output in self._pending:
            output.discard()
        self._pending = []


@contextlib.contextmanager
def output_transaction(inputs=()) -> Iterator[Outputs]:
    """An :class:`Outputs` committed when the block succeeds and discarded when it raises;
    none of its outputs may be one of ``inputs``."""
    outputs = Outputs(inputs)
    try:
        yield outputs
    except BaseException:
        outputs.discard()
        raise
    outputs.commit()


@contextlib.contextmanager
def atomic_output(path: str | os.PathLike, mode: str = "w") -> Iterator:
    """One output (see :class:`_PendingOutput`), written only if the block succeeds."""
    with output_transaction() as outputs:
        yield outputs.open(path, binary="b" in mode)
