"""Writing a command's outputs safely: each is held back until the whole command succeeds.

Outputs follow what users of Unix tools expect: ``-`` is standard output, a path naming a file
descriptor (``/dev/stdout``, ``/dev/fd/N``) is written through that descriptor, a FIFO, character
device or socket is written in place, a symlink is followed, and a regular file is written to a
temporary file beside it and renamed onto it. An output that is the same file as an input of the
command (by device and inode, whatever path or descriptor names it), an existing file that could
not be opened for writing, a directory or another special file is refused, and binary content is
not written to a terminal. :class:`Outputs` commits every output of a command at its end, or
none (side files included); each refusal is an :class:`host.io.InputError` naming the path.

One concern a module: this one gathers a command's outputs; host.pending holds one output back
(host.pending.PendingOutput); host.partials names, locks and cleans up the temporary files
(``.NAME.<12 hex digits>.partial``, removed by a later run once provably stale); and
host.descriptors keeps the standard descriptors found closed at the start or moved off an input.
"""

import contextlib
import os
import stat
from collections.abc import Iterator

from .descriptors import closed_at_start, move_off_input, open_closed_standard_streams
from .io import InputError, descriptor_of
from .pending import STDOUT, PendingOutput, ReaderGone, refuse_unwritable

__all__ = ["STDOUT", "Outputs", "writes_in_place", "output_transaction", "atomic_output",
           "input_identities", "ReaderGone", "open_closed_standard_streams",
           "closed_at_start", "descriptor_of", "refuse_unwritable", "move_off_input"]


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
        self._pending: list[PendingOutput] = []
        self._opened: list[str] = []
        #: what the user should know of the outputs written (host.cli prints them as warnings)
        self.notes: list[str] = []
        self._inputs = input_identities(inputs)

    def open(self, path: str | os.PathLike, binary: bool = False):
        shown = os.fspath(path)
        pending = PendingOutput(shown, binary, self._inputs)
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
    """One output (see :class:`PendingOutput`), written only if the block succeeds."""
    with output_transaction() as outputs:
        yield outputs.open(path, binary="b" in mode)
