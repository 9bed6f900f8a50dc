"""Progress of long host commands: one line on a terminal, silent in pipes and files.

The line counts work *done* (genomes sketched, bases in them, matrix rows written), and the rate
is bases over the time spent computing: time the consumer waits for input files (reading,
decompressing) is measured with :meth:`Progress.waiting` and left out.
"""

from __future__ import annotations  # numpy's types named below, imported where used

import contextlib
import sys
import time

__all__ = ["Progress", "BaseCounter", "count_bases"]

_NEWLINE, _CR = ord("\n"), ord("\r")
_FASTA_HEADER, _FASTQ_HEADER = ord(">"), ord("@")


class BaseCounter:
    """Bases of a FASTA/FASTQ text fed block by block (a streamed file): the bytes on its
    sequence lines, line ends and CRs excluded, whatever the block boundaries.

    Line kinds follow the record rules of kmerspec.golden.parse: ``>`` starts a FASTA header;
    ``@`` at a record start a four-line FASTQ record whose second line is the sequence. The
    state between blocks is the unfinished last line and the record state.
    """

    def __init__(self):
        self.bases = 0
        self._unfinished = b""
        self._at_record_start = True
        self._fastq_line = 0  # 0 outside FASTQ; 1 sequence, 2 separator, 3 quality line next

    def feed(self, block: bytes) -> int:
        """Count the lines ``block`` completes; returns the bases they add."""
        data = self._unfinished + block if self._unfinished else block
        complete = data.rfind(b"\n") + 1
        self._unfinished = bytes(data[complete:])
        return self._count(data[:complete])

    def finish(self) -> int:
        """Count the last line (a file need not end with a newline)."""
        last, self._unfinished = self._unfinished, b""
        return self._count(last)

    def _count(self, data: bytes) -> int:
        import numpy as np  # here: the sketch command's native backend counts bases itself
        raw = np.frombuffer(data, dtype=np.uint8)
        if raw.size == 0:
            return 0
        newlines = np.flatnonzero(raw == _NEWLINE)
        starts = np.concatenate(([0], newlines + 1))
        ends = np.concatenate((newlines, [raw.size]))
        if starts[-1] == raw.size:  # data ends with a newline: no line after it
            starts, ends = starts[:-1], ends[:-1]
        first = np.full(starts.size, -1, dtype=np.int64)
        non_empty = ends > starts
        first[non_empty] = raw[starts[non_empty]]
        for line in np.flatnonzero(first == _CR):  # a line's kind is set by its first non-CR byte
            content = raw[starts[line]:ends[line]]
            content = content[content != _CR]
            first[line] = content[0] if content.size else -1
        if self._fastq_line == 0 and not (first == _FASTQ_HEADER).any():
            sequence = (first != _FASTA_HEADER) & (first >= 0)
            kinds = first[first >= 0]
            if kinds.size:
                self._at_record_start = bool(kinds[-1] == _FASTA_HEADER)
        else:
            sequence = self._step_lines(first.tolist())
        bases = int((ends - starts)[sequence].sum())
        if b"\r" in data:  # CRs are skipped wherever they are (CRLF files)
            line_of_cr = np.searchsorted(starts, np.flatnonzero(raw == _CR), side="right") - 1
            bases -= int(np.count_nonzero(sequence[line_of_cr]))
        self.bases += bases
        return bases

    def _step_lines(self, first_bytes: list[int]) -> np.ndarray:
        """The record state machine, one step per line (for text with FASTQ records)."""
        import numpy as np
        sequence = np.zeros(len(first_bytes), dtype=bool)
        at_record_start, fastq_line = self._at_record_start, self._fastq_line
        for line, byte in enumerate(first_bytes):
            if fastq_line:
                sequence[line] = fastq_line == 1
                fastq_line = (fastq_line + 1) % 4
                at_record_start = fastq_line == 0
            elif byte < 0:
                continue
            elif byte == _FASTA_HEADER:
                at_record_start = True
            elif byte == _FASTQ_HEADER and at_record_start:
                fastq_line = 1
            else:
                sequence[line] = True
                at_record_start = False
        self._at_record_start, self._fastq_line = at_record_start, fastq_line
        return sequence


def count_bases(data: bytes) -> int:
    """Bases of a whole FASTA/FASTQ text (see :class:`BaseCounter`)."""
    counter = BaseCounter()
    counter.feed(data)
    counter.finish()
    return counter.bases


class Progress:
    """``label: 3/20 genomes, 15.2 Mbases, 28.1 Mbases/s`` redrawn in place on a terminal.

    ``stream`` defaults to standard error; ``enabled`` to whether it is a terminal. Nothing is
    written when disabled, so a piped run's standard error holds only warnings and errors.
    """

    def __init__(self, label: str, total: int, unit: str = "genomes", stream=None,
                 enabled: bool | None = None):
        self._stream = stream if stream is not None else sys.stderr
        if enabled is None:
            try:
                enabled = self._stream.isatty()
            except (AttributeError, ValueError):
                enabled = False
        self._enabled = enabled
        self._label, self._total, self._unit = label, total, unit
        self._done = 0
        self._bases = 0
        self._start = time.monotonic()
        self._waited = 0.0
        self._last_draw = 0.0
        self._drawn = False

    @contextlib.contextmanager
    def waiting(self):
        """Time in this block (waiting for input) is not computing time."""
        start = time.monotonic()
        try:
            yield
        finally:
            self._waited += time.monotonic() - start

    @property
    def elapsed_seconds(self) -> float:
        return time.monotonic() - self._start

    @property
    def computing_seconds(self) -> float:
        return max(self.elapsed_seconds - self._waited, 0.0)

    @property
    def bases(self) -> int:
        return self._bases

    def line(self, show_rate: bool = True) -> str:
        text = f"{self._label}: {self._done}/{self._total} {self._unit}"
        if self._bases:
            text += f", {self._bases / 1e6:.2f} Mbases"
            if show_rate:
                rate = self._bases / max(self.computing_seconds, 1e-9) / 1e6
                text += f", {rate:.1f} Mbases/s"
        return text

    def advance(self, done: int = 1, bases: int = 0, show_rate: bool = True) -> None:
        """``done`` more genomes (rows, files) holding ``bases`` more bases are finished."""
        self._done += done
        self._bases += bases
        now = time.monotonic()
        if self._enabled and (now - self._last_draw > 0.2 or self._done == self._total):
            self._last_draw = now
            self._draw(self.line(show_rate))

    def status(self, text: str) -> None:
        """Replace the line with ``text`` (a step without a count, e.g. one long call)."""
        if self._enabled:
            self._draw(text)

    def _draw(self, text: str) -> None:
        self._stream.write("\r" + text + "\x1b[K")
        self._stream.flush()
        self._drawn = True

    def close(self) -> None:
        if self._enabled and self._drawn:
            self._stream.write("\n")
            self._stream.flush()
            self._drawn = False
