"""Inputs that can be read once: pipes, FIFOs, character devices and sockets (``-``,
``/dev/stdin``, ``<(zcat x.fa.gz)``).

The commands that take sketch files and sequence files mixed (``dist``, ``search``, ``screen``,
``jsd``, ``cluster``) and those that read sketch files (``info``, ``merge``, ``search --db``,
``screen REFS``) tell an input's kind from its first bytes, which a stream gives once.
:func:`opened_streams` opens each stream among a command's inputs once (through its descriptor
for ``/dev/stdin`` and ``/dev/fd/N``: host.io.open_input), reads its first bytes and registers
it (host.io.STREAMS) for the block, so that every reader of host.io and host.reader finds it:

* a sequence stream is read as it arrives, block by block, by the one reader that takes it:
  nothing is copied, and one that is not FASTA/FASTQ (``/dev/zero``) is refused at its first
  block, as ``sketch`` refuses it;
* a sketch file, a zip archive read by seeking, is spooled into an anonymous temporary file in
  TMPDIR (unlinked as it is made, so nothing is left there however the command ends, SIGKILL
  included) within the size its own header states (host.sketchfile.spool_sketch): a stream
  that goes on past it is refused as a damaged sketch file at that byte, one whose first bytes
  are no sketch file's is refused at once.

No stream is held in memory beyond one block (a sketch file's header: at most
host.sketchfile.PIPE_HEADER_LIMIT).
"""

import contextlib
import errno
import os
from collections.abc import Iterator, Sequence

from .io import STREAMS, ZIP_MAGIC, InputError, StreamInput, is_stream, open_input, stream_key
from .io import with_head

__all__ = ["opened_streams", "refuse_streams_for_workers"]


def _open(path: str) -> StreamInput:
    source = open_input(path, "a sketch or sequence file")
    try:
        head, reader = with_head(source, len(ZIP_MAGIC))
    except OSError as error:
        source.close()
        raise InputError(f"{path}: cannot read ({error.strerror or error})") from None
    if head != ZIP_MAGIC:
        return StreamInput(path, "sequence", head, reader, ended=len(head) < len(ZIP_MAGIC))
    import tempfile
    from .sketchfile import spool_sketch  # here: a sequence stream needs no sketch reader
    spool = tempfile.TemporaryFile()
    try:
        with reader:
            spool_sketch(reader, path, spool)
    except OSError as error:
        spool.close()
        if error.errno in _DISK_FULL:
            raise InputError(f"{path}: a sketch file from a pipe is held in TMPDIR "
                             f"({tempfile.gettempdir()}), which has no room: "
                             f"{error.strerror} (set TMPDIR to a file system with room, or "
                             f"give the sketch file by name)") from None
        raise InputError(f"{path}: cannot read ({error.strerror or error})") from None
    except BaseException:
        spool.close()
        raise
    spool.seek(0)
    return StreamInput(path, "sketch", head, spool)


#: errno values of a full file system
_DISK_FULL = {errno.ENOSPC, errno.EDQUOT, errno.EFBIG}


@contextlib.contextmanager
def opened_streams(paths: Sequence[str]) -> Iterator[None]:
    """Each stream among ``paths`` opened, classified and registered for the block (see the
    module docstring); closed and forgotten when the block ends, however it ends."""
    opened = []
    try:
        for path in paths:
            key = stream_key(path)
            if key in STREAMS or not is_stream(path):
                continue
            STREAMS[key] = _open(os.fspath(path))
            opened.append(key)
        yield
    finally:
        for key in opened:
            STREAMS.pop(key).close()


def refuse_streams_for_workers(paths: Sequence[str]) -> None:
    """Dask workers (``--workers``, ``--scheduler``) open the files themselves, in processes of
    their own: a stream, or a path naming a descriptor of this process, is refused."""
    from .io import descriptor_of
    for path in paths:
        if is_stream(path) or descriptor_of(os.fspath(path)) is not None:
            raise InputError(f"{path}: a pipe or descriptor, which only this process can read "
                             f"(--workers and --scheduler workers open the files themselves); "
                             f"save it to a file first")
