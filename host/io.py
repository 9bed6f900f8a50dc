"""Reading genomes and writing results safely.

Every failure is an ``InputError`` whose message names the file and the problem in one line; the
CLI prints it and exits non-zero. Outputs are written to a temporary file beside the target and
renamed into place only when complete, so a failed run never leaves a half-written output.
"""

import contextlib
import gzip
import os
import tempfile
import zlib
from collections.abc import Iterator
from pathlib import Path

__all__ = ["InputError", "read_sequence_file", "genome_name", "atomic_output"]

_GZIP_MAGIC = b"\x1f\x8b"
_SNIFF_BYTES = 1 << 16


class InputError(Exception):
    """A problem with a user-supplied file; the message names the file."""


def _check_format(path: Path, data: bytes) -> None:
    """Refuse content that is not FASTA/FASTQ text, before it silently yields no k-mers."""
    if not data:
        return
    head = data[:_SNIFF_BYTES]
    first = head.lstrip(b"\r\n")[:1]
    if not first:
        return
    nul = head.find(b"\x00")
    if nul >= 0:
        raise InputError(f"{path}: not a FASTA/FASTQ file (binary content: NUL byte at offset "
                         f"{nul})")
    if first not in (b">", b"@"):
        raise InputError(f"{path}: not a FASTA/FASTQ file (first character is {first!r}, "
                         f"expected '>' or '@')")


def read_sequence_file(path: str | os.PathLike) -> bytes:
    """The decompressed bytes of a FASTA/FASTQ file, plain or gzip (detected by its magic)."""
    path = Path(path)
    try:
        with open(path, "rb") as file:
            raw = file.read()
    except FileNotFoundError:
        raise InputError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise InputError(f"{path}: is a directory, expected a FASTA/FASTQ file") from None
    except PermissionError:
        raise InputError(f"{path}: permission denied") from None
    except OSError as error:
        raise InputError(f"{path}: cannot read ({error.strerror or error})") from None
    if raw.startswith(_GZIP_MAGIC):
        try:
            raw = gzip.decompress(raw)
        except EOFError:
            raise InputError(f"{path}: truncated gzip file (ends before the end of the "
                             f"compressed stream)") from None
        except (gzip.BadGzipFile, zlib.error) as error:
            raise InputError(f"{path}: corrupt gzip file ({error})") from None
    _check_format(path, raw)
    return raw


def genome_name(path: str | os.PathLike) -> str:
    """The name a genome is reported by: its file name without directories."""
    return Path(path).name


def _current_umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


@contextlib.contextmanager
def atomic_output(path: str | os.PathLike, mode: str = "w") -> Iterator:
    """Open a temporary file beside ``path``; rename it onto ``path`` only if the block succeeds."""
    path = Path(path)
    directory = path.parent if str(path.parent) else Path(".")
    if not directory.is_dir():
        raise InputError(f"{path}: output directory {directory} does not exist")
    if path.is_dir():
        raise InputError(f"{path}: output path is a directory")
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".partial",
                                         dir=directory)
    try:
        with os.fdopen(handle, mode) as file:
            yield file
        os.chmod(temporary, 0o666 & ~_current_umask())  # mkstemp made it private (0600)
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
        raise
