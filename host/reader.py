"""Producer/consumer genome input: files read and decompressed in parallel, consumed in order.

Reading and gzip decompression release the GIL, so a small thread pool keeps the consumer (the
sketching backend or the kernel packer) fed while it works on the previous genome. At most
``prefetch`` genomes are held in memory ahead of the consumer (double buffering by default).
"""

import os
import sys
import time
from collections import deque
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor

from .io import read_sequence_file

__all__ = ["Progress", "read_genomes"]


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


def read_genomes(paths: Sequence[str], threads: int | None = None, prefetch: int = 2,
                 progress: Progress | None = None) -> Iterator[tuple[str, bytes]]:
    """Yield (path, decompressed bytes) in the order of ``paths``, reading ahead in threads.

    An unreadable file raises its InputError when the consumer reaches it, so the genomes before
    it are processed first, and no output has been written yet by the callers in host.cli.
    """
    threads = threads or min(4, os.cpu_count() or 1)
    with ThreadPoolExecutor(max_workers=threads, thread_name_prefix="reader") as pool:
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
