"""Temporary files of outputs: ``.NAME.<12 hex digits>.partial`` beside the output NAME, locked
(``flock``) by the run that writes it from before it has that name until it is renamed onto NAME
or removed. A run killed by SIGKILL leaves it unlocked, and a later run writing NAME removes it
(:func:`remove_stale_partials`).
"""

import contextlib
import fcntl
import os
import re
import stat
from pathlib import Path

__all__ = ["name_max", "partial_prefix", "create_partial", "forget_partial",
           "remove_stale_partials"]

#: random hex digits in a temporary file's name (``tempfile.mkstemp`` names have 8 characters
#: of [a-z0-9_], so a .partial file of an earlier version, which held no lock, never matches)
_PARTIAL_DIGITS = 12
_PARTIAL_SUFFIX = ".partial"
#: the name a temporary file has from its creation until it is locked
_UNLOCKED_SUFFIX = ".new"
#: the temporary files this process writes (a file system whose flock is emulated by POSIX
#: locks, as NFS, would let this process lock its own files again)
_LIVE_PARTIALS: set[Path] = set()


def name_max(directory: Path) -> int:
    try:
        return os.pathconf(directory, "PC_NAME_MAX")
    except (OSError, ValueError):
        return 255


def partial_prefix(name: str, limit: int) -> str:
    """``.NAME.``, NAME cut (at a character) so that the temporary file's name fits in
    ``limit`` bytes: a valid NAME of up to ``limit`` bytes can be written."""
    room = limit - len(f"..{'0' * _PARTIAL_DIGITS}{_PARTIAL_SUFFIX}")
    while len(os.fsencode(name)) > room:
        name = name[:-1]
    return f".{name}."


def create_partial(directory: Path, prefix: str) -> tuple[int, Path]:
    """A new private file ``PREFIX<hex>.partial`` in ``directory``, open for reading and writing
    and locked. It is made under another name and renamed once locked, so no file of that name
    is ever unlocked while its run lives (:func:`remove_stale_partials` relies on this). On a
    file system without ``flock`` it stays unlocked, and a later run, which cannot lock it
    either, leaves it alone."""
    while True:
        digits = os.urandom(_PARTIAL_DIGITS // 2).hex()  # as secrets.token_hex, without hashlib
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
            _LIVE_PARTIALS.add(partial)
            return handle, partial
        os.unlink(unlocked)
        os.close(handle)


def remove_stale_partials(directory: Path, prefix: str) -> None:
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


def forget_partial(path: Path) -> None:
    """``path``, made by :func:`create_partial`, is renamed or removed: no longer this run's."""
    _LIVE_PARTIALS.discard(path)
