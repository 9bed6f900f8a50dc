"""Writing a command's outputs safely: each is held back until the whole command succeeds.

Outputs follow what users of Unix tools expect: ``-`` is standard output, a path naming a file
descriptor (``/dev/stdout``, ``/dev/fd/N``) is written through that descriptor, a FIFO, character
device or socket is written in place, a symlink is followed, and a regular file is written to a
temporary file beside it and renamed onto it (:class:`_PendingOutput`). An output that is also an
input of the command, a directory or another special file is refused, and binary content is not
written to a terminal. :class:`Outputs` commits every output of a command at its end, or none
(side files included); each refusal is an :class:`host.io.InputError` naming the path.
"""

import contextlib
import io
import os
import re
import shutil
import stat
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

from .io import InputError

__all__ = ["STDOUT", "Outputs", "writes_in_place", "output_transaction", "atomic_output",
           "input_identities", "ReaderGone"]

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
