"""One output of a command, held back until the command succeeds (:class:`PendingOutput`), the
file a command writes into (its failed writes name it), and the refusal of a file its owner
protected (:func:`refuse_unwritable`). host.outputs gathers a command's outputs.
"""

import contextlib
import errno
import io
import os
import shutil
import stat
import sys
from pathlib import Path

from .descriptors import (closed_at_start, descriptor_open, input_behind, moved_off_input,
                          silence_stdout)
from .io import InputError, descriptor_of
from .partials import (create_partial, forget_partial, name_max, partial_prefix,
                       remove_stale_partials)

__all__ = ["STDOUT", "PendingOutput", "ReaderGone", "refuse_unwritable"]

STDOUT = "-"


def _current_umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _strerror(error: OSError) -> str:
    return error.strerror or str(error)


class PendingOutput:
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
            if not descriptor_open(descriptor) or closed_at_start(descriptor):
                raise InputError(f"{shown}: {what} is closed; nowhere to write")
            same = input_behind(descriptor, inputs or {}) or moved_off_input(descriptor)
            if same is not None:
                raise InputError(f"{shown}: {what} is also an input ({same}); refusing to "
                                 f"write into it (send the output elsewhere)")
            if binary and terminal:
                raise InputError(f"{shown}: this output is binary; refusing to write it to a "
                                 f"terminal (redirect standard output, or give -o FILE)")
            status = os.fstat(descriptor)
            if stat.S_ISREG(status.st_mode):
                self.identity = (status.st_dev, status.st_ino)
            import tempfile  # here: the command line's start-up does without it
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
            import tempfile
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
        limit = name_max(directory)
        length = len(os.fsencode(target.name))
        if length > limit:
            raise InputError(f"{shown}: file name too long ({length} bytes; the file system "
                             f"allows {limit})")
        prefix = partial_prefix(target.name, limit)
        remove_stale_partials(directory, prefix)
        try:
            handle, self._temporary = create_partial(directory, prefix)
        except OSError as error:
            raise InputError(f"{shown}: cannot create a file in {directory} "
                             f"({_strerror(error)})") from None
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
            forget_partial(self._temporary)
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
                silence_stdout()  # the reader has gone: no second error when Python exits
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
            forget_partial(self._temporary)
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


class ReaderGone(Exception):
    """The reader of a pipe output closed it (``| head``): as other Unix tools, the command
    stops quietly."""
