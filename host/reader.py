"""Genome input: whole files read ahead in threads, or files streamed block by block.

Reading and gzip decompression release the GIL, so a small thread pool keeps the consumer (the
sketching backend or the kernel packer) fed while it works on the previous genome. At most
``prefetch`` genomes are held in memory ahead of the consumer (double buffering by default).

A backend that can consume a file block by block (the ``sw`` backend) gets
:class:`SequenceFile` handles instead, and holds one block per file it is working on, whatever
the genome's size. gzip is decompressed by ISA-L (python-isal, about three times zlib's speed)
where it is installed, else by zlib; bzip2 and xz by Python's bz2 and lzma.
"""

import contextlib
import os
import stat
import sys
import time
from collections import deque
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, fields

from kmerspec.golden.mincount import MinCountParams

from .io import _SNIFF_BYTES, InputError, decompressed_blocks, read_sequence_file

__all__ = ["Progress", "read_genomes", "SequenceFile", "sequence_blocks", "BLOCK_BYTES",
           "ReadsMinCount", "read_file_groups", "is_read_file"]

BLOCK_BYTES = 1 << 22  # at least the 64 KiB the format check looks at


def sequence_blocks(path: str | os.PathLike, block_bytes: int = BLOCK_BYTES) -> Iterator[bytes]:
    """The decompressed content of a FASTA/FASTQ file (plain, gzip, bzip2, xz) in blocks of
    ``block_bytes``; their concatenation is ``host.io.read_sequence_file(path)``, and a bad
    file raises the same one-line InputError (when the block that shows the problem is read).
    The file is opened by host.io.open_input (a pipe on standard input is read through
    descriptor 0, a stream host.streams opened is taken from there)."""
    return decompressed_blocks(path, block_bytes)


class SequenceFile:
    """A FASTA/FASTQ file to be read later: :meth:`blocks` streams it, :meth:`read` loads it.

    ``bases`` is set by the consumer that streamed it through a native k-mer stream: the bytes
    on its sequence lines (host.progress.count_bases of its content), None before.
    """

    #: a native k-mer stream fed from here applies the host's input check (SPEC 1.1)
    check_input = True

    def __init__(self, path: str | os.PathLike):
        self.path = path
        self.bases: int | None = None

    def input_error(self, error: Exception) -> InputError:
        """The InputError of a problem the input check found in this file."""
        return InputError(f"{self.path}: {error}")

    def blocks(self, block_bytes: int = BLOCK_BYTES) -> Iterator[bytes]:
        return sequence_blocks(self.path, block_bytes)

    def blocks_into(self, buffer) -> Iterator[memoryview]:
        """The content as :meth:`blocks` gives it, read into ``buffer`` (a bytearray of at
        least 64 KiB): each block a view of it, valid until the next is taken."""
        return decompressed_blocks(self.path, len(buffer), into=buffer)

    def read(self) -> bytes:
        return read_sequence_file(self.path)

    def __repr__(self) -> str:
        return f"SequenceFile({str(self.path)!r})"


class Progress:
    """A one-line progress report (genomes and bytes) on a terminal; silent in pipes and files."""

    def __init__(self, total_genomes: int, label: str, stream=None, enabled: bool | None = None):
        self._stream = stream if stream is not None else sys.stderr
        self._enabled = self._stream.isatty() if enabled is None else enabled
        self._total = total_genomes
        self._label = label
        self._genomes = 0
        self._bytes = 0
        self._start = time.monotonic()
        self._last_draw = 0.0

    def advance(self, nbytes: int) -> None:
        self._genomes += 1
        self._bytes += nbytes
        now = time.monotonic()
        if self._enabled and (now - self._last_draw > 0.1 or self._genomes == self._total):
            self._last_draw = now
            rate = self._bytes / max(now - self._start, 1e-9) / 1e6
            self._stream.write(f"\r{self._label}: {self._genomes}/{self._total} genomes, "
                               f"{self._bytes / 1e6:.1f} MB, {rate:.1f} MB/s")
            self._stream.flush()

    def close(self) -> None:
        if self._enabled and self._genomes:
            self._stream.write("\n")
            self._stream.flush()


def _streamed_genomes(paths: Sequence[str], progress: Progress | None
                      ) -> Iterator[tuple[str, SequenceFile]]:
    for path in paths:
        if progress is not None:
            try:
                progress.advance(os.stat(path).st_size)
            except OSError:
                progress.advance(0)  # the consumer reports the problem when it opens the file
        yield path, SequenceFile(path)
    if progress is not None:
        progress.close()


def read_genomes(paths: Sequence[str], threads: int | None = None, prefetch: int = 2,
                 progress: Progress | None = None, stream: bool = False
                 ) -> Iterator[tuple[str, bytes | SequenceFile]]:
    """Yield (path, decompressed bytes) in the order of ``paths``, reading ahead in threads.

    An unreadable file raises its InputError when the consumer reaches it, so the genomes before
    it are processed first, and no output has been written yet by the callers in host.cli.
    With ``stream``, yield (path, :class:`SequenceFile`) at once instead, for a consumer that
    reads the files itself (progress then counts file sizes as the consumer takes them).
    """
    if stream:
        yield from _streamed_genomes(paths, progress)
        return
    from concurrent.futures import ThreadPoolExecutor
    threads = threads or min(4, os.cpu_count() or 1)
    pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="reader")
    try:
        pending: deque = deque()
        upcoming = iter(paths)
        for path in upcoming:
            pending.append((path, pool.submit(read_sequence_file, path)))
            if len(pending) > prefetch:
                break
        while pending:
            path, future = pending.popleft()
            data = future.result()
            next_path = next(upcoming, None)
            if next_path is not None:
                pending.append((next_path, pool.submit(read_sequence_file, next_path)))
            if progress is not None:
                progress.advance(len(data))
            yield path, data
        if progress is not None:
            progress.close()
    except KeyboardInterrupt:
        # a signal ends the command (host.interrupts): a read under way is not waited for
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    except BaseException:
        pool.shutdown(wait=True, cancel_futures=True)
        raise
    pool.shutdown(wait=True)


# -- which files --min-count filters ---------------------------------------------------------

def is_read_file(path: str | os.PathLike) -> bool:
    """True for a FASTQ file (sequencing reads): its first record is '@', after
    decompression. A file that cannot be read is not one (its error comes when it is read).
    A pipe or device cannot be looked at without taking its data from the reader: it counts
    as reads, filtered by --min-count as every file was before the filter told them apart."""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return True
    except OSError:
        return False
    try:
        with contextlib.closing(sequence_blocks(path, _SNIFF_BYTES)) as blocks:
            first = next(blocks, b"")
    except InputError:
        return False
    return first.lstrip(b"\r\n")[:1] == b"@"


@dataclass(frozen=True)
class ReadsMinCount(MinCountParams):
    """The minimum-count filter of a command (``--min-count``), for its read files: FASTQ files
    only, or every sequence file with ``fasta`` (``--min-count-fasta``).

    A FASTA genome's k-mers occur about once each, so filtering it like reads would keep a
    sliver of it (issue 37: 22,677 of a 230 kb reference's ~189,000 k-mers, Jaccard 0.118
    against its reads where exact counting gives 0.991).
    """

    fasta: bool = False

    def plain(self) -> MinCountParams:
        """The filter itself, as the backends and sketch files know it."""
        return MinCountParams(**{f.name: getattr(self, f.name)
                                 for f in fields(MinCountParams)})


def read_file_groups(paths: Sequence[str], min_count: MinCountParams
                     ) -> tuple[list[tuple[list[int], MinCountParams]], str | None]:
    """The files' positions grouped by the filter each is sketched with, and the note that says
    so once (None when every file gets ``min_count``): FASTQ files (host.io.is_read_file) get
    the filter, other files none, unless ``min_count`` is a ReadsMinCount with ``fasta``, or is
    no ReadsMinCount at all (a caller that asked for the filter on everything)."""
    if not isinstance(min_count, ReadsMinCount):
        return [(list(range(len(paths))), min_count)], None
    if not min_count.active or min_count.fasta:
        return [(list(range(len(paths))), min_count.plain())], None
    reads = [index for index, path in enumerate(paths) if is_read_file(path)]
    read_set = set(reads)
    others = [index for index in range(len(paths)) if index not in read_set]
    if not others:
        return [(reads, min_count.plain())], None

    def files(count: int, kind: str) -> str:
        return f"{count} {kind} file{'' if count == 1 else 's'}"
    to = (f"applies to the {files(len(reads), 'FASTQ read')}" if reads
          else "applies to FASTQ read files and none was given")
    note = (f"--min-count {min_count.min_count} {to}; {files(len(others), 'FASTA')} sketched "
            f"in full (--min-count-fasta filters them too)")
    groups = [(reads, min_count.plain()), (others, MinCountParams())]
    return [(indices, params) for indices, params in groups if indices], note
