"""Reference FASTA/FASTQ byte parser and k-mer extraction (SPEC section 1).

Written to be read, not to be fast: one byte, one line, one k-mer at a time.

Line rules, as the hardware lane parser implements them:

* ``\\r`` bytes are ignored wherever they stand (CRLF files parse like LF files).
* A *record start* is the beginning of a file, the line after a FASTA header and the line after
  a FASTQ quality line. Empty lines at a record start leave it a record start.
* Outside a FASTQ record, a line whose first byte is ``>`` is a FASTA header; a line whose first
  byte is ``@`` at a record start opens a FASTQ record; any other line is sequence.
* A FASTQ record is four lines counted from its header: header, sequence, separator (skipped
  whatever it holds), quality. Empty lines inside a FASTQ record count as lines.
* In sequence lines, ``ACGTacgt`` are bases (A=0, C=1, G=2, T=3); every other byte breaks the
  run of bases. Every header, separator and quality line also breaks it, so k-mers never span
  records. Line ends alone do not break: FASTA sequence continues across lines.
* Files are parsed independently: each starts at a record start with an empty run.
"""

from collections.abc import Iterable, Iterator

from ..params import K

__all__ = [
    "BASE_CODES",
    "base_runs",
    "kmer_words",
    "reverse_complement",
    "canonical",
    "kmers",
    "genome_kmers",
]

BASE_CODES = {ord("A"): 0, ord("C"): 1, ord("G"): 2, ord("T"): 3,
              ord("a"): 0, ord("c"): 1, ord("g"): 2, ord("t"): 3}

_FASTQ_NONE, _FASTQ_SEQUENCE, _FASTQ_SEPARATOR, _FASTQ_QUALITY = range(4)


def base_runs(data: bytes) -> Iterator[list[int]]:
    """Yield each maximal run of unbroken bases of one file, as a list of 2-bit codes."""
    run: list[int] = []
    at_record_start = True
    fastq_line = _FASTQ_NONE
    for raw_line in data.split(b"\n"):
        line = raw_line.replace(b"\r", b"")
        if fastq_line == _FASTQ_SEQUENCE:
            is_sequence = True
            fastq_line = _FASTQ_SEPARATOR
        elif fastq_line == _FASTQ_SEPARATOR:
            is_sequence = False
            fastq_line = _FASTQ_QUALITY
        elif fastq_line == _FASTQ_QUALITY:
            is_sequence = False
            fastq_line = _FASTQ_NONE
            at_record_start = True
        elif not line:
            continue
        elif line[0] == ord(">"):
            is_sequence = False
            at_record_start = True
        elif line[0] == ord("@") and at_record_start:
            is_sequence = False
            fastq_line = _FASTQ_SEQUENCE
        else:
            is_sequence = True
            at_record_start = False

        if not is_sequence:
            if run:
                yield run
            run = []
            continue
        for byte in line:
            if byte in BASE_CODES:
                run.append(BASE_CODES[byte])
            else:
                if run:
                    yield run
                run = []
        if fastq_line == _FASTQ_SEPARATOR and run:
            # the FASTQ sequence line is complete; the separator line would break it anyway
            yield run
            run = []
    if run:
        yield run


def kmer_words(run: list[int], k: int) -> Iterator[int]:
    """Yield the forward k-mer word ending at every base of ``run`` that completes k bases."""
    mask = (1 << (2 * k)) - 1
    word = 0
    for position, code in enumerate(run):
        word = ((word << 2) | code) & mask
        if position + 1 >= k:
            yield word


def reverse_complement(word: int, k: int) -> int:
    """Reverse the k 2-bit groups of ``word`` and complement each (A<->T, C<->G)."""
    result = 0
    for _ in range(k):
        result = (result << 2) | (3 - (word & 3))
        word >>= 2
    return result


def canonical(word: int, k: int) -> int:
    """The smaller of a k-mer word and its reverse complement, as unsigned integers."""
    return min(word, reverse_complement(word, k))


def _check_k(k: int) -> None:
    K.check(k)


def kmers(data: bytes, k: int, *, canonical_form: bool = True) -> Iterator[int]:
    """Yield the k-mers of one file in stream order (canonical words by default)."""
    _check_k(k)
    for run in base_runs(data):
        for word in kmer_words(run, k):
            yield canonical(word, k) if canonical_form else word


def genome_kmers(files: Iterable[bytes], k: int, *, canonical_form: bool = True) -> Iterator[int]:
    """Yield the k-mers of a genome made of several files; k-mers never span files."""
    for data in files:
        yield from kmers(data, k, canonical_form=canonical_form)
