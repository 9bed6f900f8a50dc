"""Writing a command's outputs safely: each is held back until the whole command succeeds.

Outputs follow what users of Unix tools expect: ``-`` is standard output, a path naming a file
descriptor (``/dev/stdout``, ``/dev/fd/N``) is written through that descriptor, a FIFO, character
device or socket is written in place, a symlink is followed, and a regular file is written to a
temporary file beside it and renamed onto it (:class:`_PendingOutput`). An output that is the
same file as an input of the command (by device and inode, whatever path or descriptor names it),
an existing file that could not be opened for writing, a directory or another special file is
refused, and binary content is not written to a terminal. :class:`Outputs` commits every output
of a command at its end, or none (side files included); each refusal is an
:class:`host.io.InputError` naming the path.

A temporary file is ``.NAME.<12 hex digits>.partial``, locked (``flock``) by the run that writes it
from before it has that name until it is renamed or removed; a run killed by SIGKILL leaves it
unlocked, and a later run writing NAME removes it (:func:`_remove_stale_partials`).
"""

import contextlib
import errno
import fcntl
import io
import os
import re
import secrets
import shutil
import stat
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

from .io import InputError, descriptor_of

__all__ = ["STDOUT", "Outputs", "writes_in_place", "output_transaction", "atomic_output",
           "input_identities", "ReaderGone", "open_closed_standard_streams",
           "closed_at_start", "descriptor_of", "refuse_unwritable", "move_off_input"]

STDOUT = "-"

#: the standard descriptors (0, 1, 2) that were closed when the command started and now stand
#: on /dev/null (:func:`open_closed_standard_streams`): writing to them or reading them is an
#: error, not an empty input or a lost output
_CLOSED_AT_START: set[int] = set()


def open_closed_standard_streams() -> set[int]:
    """Open /dev/null on each of the descriptors 0, 1 and 2 that is closed, and give Python a
    stream for it; returns every standard descriptor found closed so far in this process.

    A closed descriptor would be taken by the next file the process opens, so a message printed
    to standard error could land in an output (``2>&-``), and Python, which sets ``sys.stderr``
    to None for a closed descriptor 2, prints such messages to standard output. The descriptors
    found closed are remembered (:func:`closed_at_start`): ``-`` for a closed standard input or
    output is refused, not read as an empty file or written to /dev/null."""
    for descriptor in (0, 1, 2):
        try:
            os.fstat(descriptor)
            continue
        except OSError:
            pass
        null = os.open(os.devnull, os.O_RDWR)
        if null != descriptor:
            os.dup2(null, descriptor)
            os.close(null)
        _CLOSED_AT_START.add(descriptor)
        name = ("stdin", "stdout", "stderr")[descriptor]
        stream = open(descriptor, "r" if descriptor == 0 else "w", closefd=False,
                      encoding="utf-8", errors="surrogateescape")
        setattr(sys, name, stream)
    return set(_CLOSED_AT_START)


def closed_at_start(descriptor: int) -> bool:
    """True for a standard descriptor that was closed when the command started."""
    return descriptor in _CLOSED_AT_START


#: standard descriptors that were open on an input file and now stand on /dev/null
#: (host.cli: messages must not be written into an input through ``2>> input``): descriptor ->
#: the input; an output naming such a descriptor is refused as one open on the input would be
_MOVED_OFF_INPUTS: dict[int, str] = {}


def move_off_input(descriptor: int, input_path: str) -> None:
    """Point ``descriptor`` at /dev/null because it is open on the input ``input_path``."""
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, descriptor)
    os.close(null)
    _MOVED_OFF_INPUTS[descriptor] = input_path


def _current_umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _strerror(error: OSError) -> str:
    return error.strerror or str(error)


class _PendingOutput:
    """One output path of a command, its content held back until the command succeeds.

    * ``-``: standard output, written at commit (binary refused on a terminal);
    * a path naming a file descriptor (``/dev/stdout``, ``/dev/fd/N``, ``/proc/self/fd/N``, or a
      symlink to one): written through that descriptor at commit, in its mode (``>> f``
      appends), whatever it is (file, pipe, socket, terminal), unless it is open on an input
      file of the command (``>> input``, ``3<> input``) or was closed when the command started;
    * an existing FIFO, character device or socket: opened and written in place at commit;
    * a symlink: followed, so its target is written and the link stays;
    * anything else: a regular file, written to a temporary file beside its target and renamed
      onto it at commit. One that is an input of the command (the same inode, through a
      symlink or a hard link too), or that could not be opened for writing
      (:func:`refuse_unwritable`), is refused.

    Content for the streams goes to an anonymous temporary file (in the system temp dir) until
    then, so a failed command writes nothing anywhere.
    """

    def __init__(self, shown: str, binary: bool, inputs: dict | None = None):
        self.shown = shown
        self.binary = binary
        self.descriptor: int | None = None
        self._temporary: Path | None = None
        self.identity: tuple[int, int] | None = None   # (st_dev, st_ino) of a regular file
        if shown == "":
            raise InputError("'': an empty output file name (give -o FILE, or -o - for "
                             "standard output)")
        if shown.endswith("/") or os.path.basename(shown) in (".", ".."):
            # as coreutils: ``cp x keep.txt/`` is "Not a directory", never keep.txt replaced
            # (Python's path functions would drop the slash)
            if os.path.isdir(shown):
                raise InputError(f"{shown}: is a directory, expected an output file name")
            raise InputError(f"{shown}: not a directory, and an output file name cannot end in "
                             f"'/', '.' or '..'")
        descriptor = 1 if shown == STDOUT else descriptor_of(shown)
        if descriptor is not None:
            self.kind, self.target, self.descriptor = "stdout", None, descriptor
            try:
                terminal = os.isatty(descriptor)
            except OSError:
                terminal = False
            what = "standard output" if descriptor == 1 else f"file descriptor {descriptor}"
            if not _descriptor_open(descriptor) or closed_at_start(descriptor):
                raise InputError(f"{shown}: {what} is closed; nowhere to write")
            same = _input_behind(descriptor, inputs or {}) or _MOVED_OFF_INPUTS.get(descriptor)
            if same is not None:
                raise InputError(f"{shown}: {what} is also an input ({same}); refusing to "
                                 f"write into it (send the output elsewhere)")
            if binary and terminal:
                raise InputError(f"{shown}: this output is binary; refusing to write it to a "
                                 f"terminal (redirect standard output, or give -o FILE)")
            status = os.fstat(descriptor)
            if stat.S_ISREG(status.st_mode):
                self.identity = (status.st_dev, status.st_ino)
            self._raw = tempfile.TemporaryFile()
        else:
            self.target = Path(os.path.realpath(shown))
            self._raw = self._open_beside_target(inputs or {})
        self.file = _Attributed(self._raw if binary else
                                io.TextIOWrapper(self._raw, encoding="utf-8",
                                                 errors="surrogateescape", newline="\n"),
                                shown)

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
            refuse_unwritable(target, shown)
            self.identity = (status.st_dev, status.st_ino)
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
        limit = _name_max(directory)
        length = len(os.fsencode(target.name))
        if length > limit:
            raise InputError(f"{shown}: file name too long ({length} bytes; the file system "
                             f"allows {limit})")
        prefix = _partial_prefix(target.name, limit)
        _remove_stale_partials(directory, prefix)
        try:
            handle, self._temporary = _create_partial(directory, prefix)
        except OSError as error:
            raise InputError(f"{shown}: cannot create a file in {directory} "
                             f"({_strerror(error)})") from None
        _LIVE_PARTIALS.add(self._temporary)
        return os.fdopen(handle, "w+b")

    def commit(self) -> list[str]:
        """Write the output where it goes; returns what the user should know of it (a
        replaced file's attributes that could not be kept)."""
        self.file.flush()
        notes: list[str] = []
        if self.kind == "file":
            try:
                notes = self._keep_attributes()
                # renamed while still open, so its lock holds until it is no .partial file
                os.replace(self._temporary, self.target)
            except OSError as error:
                raise InputError(f"{self.shown}: cannot write ({_strerror(error)})") from None
            finally:
                self.file.close()
            _LIVE_PARTIALS.discard(self._temporary)
            self._temporary = None
            return notes
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
        return notes

    def _keep_attributes(self) -> list[str]:
        """The new file gets the replaced one's mode, owner, group and ACL (as ``sed -i`` keeps
        them); what cannot be kept, and the replaced file's other hard links, which keep its
        old content, are said."""
        handle = self._raw.fileno()
        try:
            old = os.stat(self.target)
        except FileNotFoundError:
            old = None
        notes = []
        if old is not None and (old.st_dev, old.st_ino) == self.identity:
            new = os.fstat(handle)
            if (old.st_uid, old.st_gid) != (new.st_uid, new.st_gid):
                try:
                    os.fchown(handle, old.st_uid, old.st_gid)
                except PermissionError:
                    notes.append(f"{self.shown}: replaced by a new file of owner "
                                 f"{new.st_uid}:{new.st_gid}; it was {old.st_uid}:{old.st_gid}, "
                                 f"which only root can give")
            os.fchmod(handle, self._mode)
            acl = _acl_of(self.target)
            if acl is not None:
                try:
                    os.setxattr(handle, _ACL, acl)
                except OSError as error:
                    notes.append(f"{self.shown}: replaced by a new file without its ACL "
                                 f"({_strerror(error)})")
            if old.st_nlink > 1:
                others = old.st_nlink - 1
                notes.append(f"{self.shown}: replaced by a new file; its {others} other hard "
                             f"link{'s' if others > 1 else ''} keep{'' if others > 1 else 's'} "
                             f"the old content")
        else:
            os.fchmod(handle, self._mode)   # it was made private (0600)
        return notes

    def discard(self) -> None:
        if self._temporary is not None:  # removed before it is closed, so while still locked
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self._temporary)
            _LIVE_PARTIALS.discard(self._temporary)
            self._temporary = None
        with contextlib.suppress(OSError, ValueError):
            self.file.close()


class _Attributed:
    """An output's file, whose failed writes name the output: a full file system's ENOSPC
    carries no file name, and a command writing several outputs (a table and its ``--plot``)
    must name the one that failed. It has no ``fileno``, so that writers which would write to
    the descriptor themselves (PIL, for a PNG plot) write through it."""

    def __init__(self, file, shown: str):
        self._file = file
        self._shown = shown

    def _named(self, action, *args):
        try:
            return action(*args)
        except OSError as error:
            if not error.filename:
                error.filename = self._shown
            raise

    def write(self, data):
        return self._named(self._file.write, data)

    def writelines(self, lines):
        return self._named(self._file.writelines, lines)

    def flush(self):
        return self._named(self._file.flush)

    def close(self):
        return self._named(self._file.close)

    def fileno(self):
        raise io.UnsupportedOperation("fileno")

    def __getattr__(self, name):
        return getattr(self._file, name)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


#: the extended attribute of a file's POSIX ACL
_ACL = "system.posix_acl_access"


def _acl_of(path) -> bytes | None:
    try:
        return os.getxattr(path, _ACL)
    except OSError:     # none, or no ACLs on this file system
        return None


def _input_behind(descriptor: int, inputs: dict) -> str | None:
    """The input file that ``descriptor`` is open on (``>> input``, ``3<> input``), else None."""
    try:
        status = os.fstat(descriptor)
    except OSError:
        return None
    if not stat.S_ISREG(status.st_mode):
        return None
    return inputs.get((status.st_dev, status.st_ino))


def refuse_unwritable(target: Path, shown: str) -> None:
    """Refuse an existing regular file that this process could not open for writing (a read-only
    file, for a user without the right to override permissions; a read-only file system; an
    immutable file): ``mash -o``, ``sort -o`` and the shell's ``>`` fail on it, and replacing it
    by a rename, which needs only the directory's permission, would overwrite what its owner
    protected. Opening it (without truncating, and closing it at once) asks the kernel itself,
    so root, who may write any file, replaces a 0444 file as its shell's ``>`` would."""
    try:
        descriptor = os.open(target, os.O_WRONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except FileNotFoundError:
        return  # gone since it was looked at: a new file
    except OSError as error:
        hint = ("chmod u+w it, or give another output file" if error.errno == errno.EACCES
                else "give another output file")
        raise InputError(f"{shown}: not writable ({_strerror(error)}); refusing to replace it "
                         f"({hint})") from None
    os.close(descriptor)


# -- temporary files ----------------------------------------------------------------------------

#: random hex digits in a temporary file's name (``tempfile.mkstemp`` names have 8 characters
#: of [a-z0-9_], so a .partial file of an earlier version, which held no lock, never matches)
_PARTIAL_DIGITS = 12
_PARTIAL_SUFFIX = ".partial"
#: the name a temporary file has from its creation until it is locked
_UNLOCKED_SUFFIX = ".new"
#: the temporary files this process writes (a file system whose flock is emulated by POSIX
#: locks, as NFS, would let this process lock its own files again)
_LIVE_PARTIALS: set[Path] = set()


def _name_max(directory: Path) -> int:
    try:
        return os.pathconf(directory, "PC_NAME_MAX")
    except (OSError, ValueError):
        return 255


def _partial_prefix(name: str, limit: int) -> str:
    """``.NAME.``, NAME cut (at a character) so that the temporary file's name fits in
    ``limit`` bytes: a valid NAME of up to ``limit`` bytes can be written."""
    room = limit - len(f"..{'0' * _PARTIAL_DIGITS}{_PARTIAL_SUFFIX}")
    while len(os.fsencode(name)) > room:
        name = name[:-1]
    return f".{name}."


def _create_partial(directory: Path, prefix: str) -> tuple[int, Path]:
    """A new private file ``PREFIX<hex>.partial`` in ``directory``, open for reading and writing
    and locked. It is made under another name and renamed once locked, so no file of that name
    is ever unlocked while its run lives (:func:`_remove_stale_partials` relies on this). On a
    file system without ``flock`` it stays unlocked, and a later run, which cannot lock it
    either, leaves it alone."""
    while True:
        digits = secrets.token_hex(_PARTIAL_DIGITS // 2)
        unlocked = directory / f"{prefix}{digits}{_UNLOCKED_SUFFIX}"
        partial = directory / f"{prefix}{digits}{_PARTIAL_SUFFIX}"
        try:
            handle = os.open(unlocked, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
        except FileExistsError:
            continue
        try:
            with contextlib.suppress(OSError):
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            taken = os.path.lexists(partial)  # rename would replace it: draw again
            if not taken:
                os.rename(unlocked, partial)
        except OSError:
            with contextlib.suppress(OSError):
                os.unlink(unlocked)
            os.close(handle)
            raise
        if not taken:
            return handle, partial
        os.unlink(unlocked)
        os.close(handle)


def _remove_stale_partials(directory: Path, prefix: str) -> None:
    """Remove the temporary files of runs that died writing this output (SIGKILL, a crash, a
    power cut): files named ``PREFIX<12 hex digits>.partial``, regular, owned by this user, and
    unlocked. A live run holds the lock on its file under that name from before it has the name
    until the file is renamed onto its target or removed, and the kernel drops the lock when
    the run dies, however it dies; so an unlocked one is provably stale. The lock is taken here
    before the file is removed, so two runs cleaning up at once do not race."""
    pattern = re.compile(re.escape(prefix) + f"[0-9a-f]{{{_PARTIAL_DIGITS}}}"
                         + re.escape(_PARTIAL_SUFFIX))
    try:
        entries = [entry.name for entry in os.scandir(directory) if pattern.fullmatch(entry.name)]
    except OSError:
        return
    for name in entries:
        path = directory / name
        if path in _LIVE_PARTIALS:
            continue
        try:
            handle = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
        except OSError:
            continue
        try:
            status = os.fstat(handle)
            if not stat.S_ISREG(status.st_mode) or status.st_uid != os.geteuid():
                continue
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                continue  # held: a live run's
            now = os.lstat(path)
            if (now.st_dev, now.st_ino) == (status.st_dev, status.st_ino):
                os.unlink(path)
        except OSError:
            continue
        finally:
            os.close(handle)


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
    if path == STDOUT or (path and descriptor_of(path) is not None):
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
            shown = os.fspath(path)
            identities.setdefault((status.st_dev, status.st_ino),
                                  "standard input" if shown == "/dev/stdin" else shown)
    return identities


class Outputs:
    """Every output of one command, written only when the whole command succeeds.

    ``open(path)`` checks the path at once (so a bad ``-o`` fails before any work) and returns a
    file to write into; :func:`output_transaction` commits all of them at the end, or none.
    """

    def __init__(self, inputs=()):
        self._pending: list[_PendingOutput] = []
        self._opened: list[str] = []
        #: what the user should know of the outputs written (host.cli prints them as warnings)
        self.notes: list[str] = []
        self._inputs = input_identities(inputs)

    def open(self, path: str | os.PathLike, binary: bool = False):
        shown = os.fspath(path)
        pending = _PendingOutput(shown, binary, self._inputs)
        for other in self._pending:
            # one file by two names (a hard link, a descriptor open on it): the rename of one
            # would throw the other's content away
            same = ((pending.kind == other.kind == "stdout"
                     and pending.descriptor == other.descriptor)
                    or (pending.target is not None and pending.target == other.target)
                    or (pending.identity is not None and pending.identity == other.identity))
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
                self.notes += output.commit()
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
