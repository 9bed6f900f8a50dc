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

:func:`check_input` is the host's input check that comes before this parser (SPEC section
1.1): it refuses what is not a nucleotide FASTA/FASTQ file, naming the record and line, and
removes trailing spaces and tabs, which the parser would take as window breaks.
"""

import re
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
    "InputFormatError",
    "NUCLEOTIDE_CODES",
    "check_input",
    "remove_trailing_whitespace",
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


# -- the host's input check (SPEC section 1.1) ----------------------------------------------

#: Bytes a sequence line may hold: ACGT, the other IUPAC nucleotide codes (U included), X (hard
#: masking), '-' and '.' (gaps). All but ACGT/acgt break the window.
NUCLEOTIDE_CODES = frozenset(b"ACGTURYSWKMBDHVNXacgturyswkmbdhvnx-.")
#: Bytes that occur in protein sequences only: amino-acid letters that are no nucleotide code,
#: and '*' (a stop codon).
PROTEIN_ONLY = frozenset(b"EFIJLOPQZefijlopqz*")
_TRAILING_WHITESPACE = re.compile(rb"[ \t][ \t\r]*(?=\n|\Z)")
_FASTQ_SHAPE = "FASTQ records are 4 lines: '@' header, sequence, '+', quality"


class InputFormatError(ValueError):
    """Input the host refuses: ``str(error)`` is one line, ``record R, line L: problem``,
    without the file name (the caller knows it). ``record`` counts headers from 1 (0 before the
    first); ``line`` counts lines from 1 (0 when the problem is the file's end)."""

    def __init__(self, record: int, line: int, problem: str):
        place = f"record {record}" if record else ""
        if line:
            place = f"{place}, line {line}" if place else f"line {line}"
        super().__init__(f"{place}: {problem}" if place else problem)
        self.record, self.line, self.problem = record, line, problem


def _shown_byte(byte: int) -> str:
    return f"'{chr(byte)}'" if 0x21 <= byte <= 0x7E else f"byte 0x{byte:02x}"


def _check_sequence_line(raw: bytes, record: int, number: int) -> None:
    """Nucleotide codes only, with CR anywhere (ignored) and spaces or tabs at the end only."""
    pending = None  # (column, byte) of the first space or tab of a run not yet ended
    for column, byte in enumerate(raw, 1):
        if byte == 0x0D:
            continue
        if byte in (0x20, 0x09):
            if pending is None:
                pending = (column, byte)
            continue
        if byte not in NUCLEOTIDE_CODES:
            hint = ("this looks like a protein sequence; only nucleotide sequences can be "
                    "sketched" if byte in PROTEIN_ONLY else "not a nucleotide code")
            raise InputFormatError(record, number, f"{_shown_byte(byte)} in a sequence line "
                                                   f"(column {column}): {hint}")
        if pending is not None:
            space = "a space" if pending[1] == 0x20 else "a tab"
            raise InputFormatError(record, number, f"{space} inside a sequence line (column "
                                                   f"{pending[0]}); only trailing spaces and "
                                                   f"tabs are allowed")


def check_input(data: bytes) -> bytes:
    """The host's input check (SPEC 1.1) of one decompressed file: ``data`` with the spaces and
    tabs at every line end removed, or InputFormatError naming the first problem.

    * A sequence line holds :data:`NUCLEOTIDE_CODES` only (CR ignored, trailing spaces and
      tabs removed); a protein sequence is named as such.
    * A file's records are all FASTA ('>') or all FASTQ ('@'), as its first record.
    * A FASTQ record is exactly 4 lines: header, sequence, a line starting with '+', and a
      quality line as long as the sequence (both without CR and trailing spaces or tabs);
      the file may not end inside one.

    Line and record numbers count from 1. Parsing the result (:func:`kmers`) gives the k-mers
    of the file as a user means them: a trailing space no longer breaks a k-mer.
    """
    lines = data.split(b"\n")
    if lines[-1] == b"":
        lines.pop()  # the end of the last line, not a line
    fastq_line = _FASTQ_NONE
    at_record_start = True
    kind = None  # b">" or b"@": the file's records, from its first
    record = 0
    sequence_length = 0
    for number, raw in enumerate(lines, 1):
        line = raw.replace(b"\r", b"").rstrip(b" \t")
        if fastq_line == _FASTQ_SEQUENCE:
            _check_sequence_line(raw, record, number)
            sequence_length = len(line)
            fastq_line = _FASTQ_SEPARATOR
        elif fastq_line == _FASTQ_SEPARATOR:
            if not line.startswith(b"+"):
                raise InputFormatError(record, number, f"expected the '+' line of a FASTQ "
                                                       f"record ({_FASTQ_SHAPE})")
            fastq_line = _FASTQ_QUALITY
        elif fastq_line == _FASTQ_QUALITY:
            if len(line) != sequence_length:
                raise InputFormatError(record, number, f"the quality line has {len(line)} "
                                                       f"characters, the sequence "
                                                       f"{sequence_length}")
            fastq_line = _FASTQ_NONE
            at_record_start = True
        elif not line:
            continue
        elif line[:1] == b">" or (line[:1] == b"@" and at_record_start):
            record += 1
            if kind is not None and kind != line[:1]:
                raise InputFormatError(record, number, "a FASTA header ('>') in a FASTQ file"
                                       if kind == b"@" else
                                       "a FASTQ header ('@') in a FASTA file")
            kind = line[:1]
            at_record_start = True
            if kind == b"@":
                fastq_line = _FASTQ_SEQUENCE
        elif kind == b"@":
            raise InputFormatError(record, number, f"expected a FASTQ header ('@') after the "
                                                   f"quality line ({_FASTQ_SHAPE})")
        else:
            _check_sequence_line(raw, record, number)
            at_record_start = False
    if fastq_line != _FASTQ_NONE:
        raise InputFormatError(record, 0, f"the file ends inside a FASTQ record "
                                          f"({_FASTQ_SHAPE})")
    return remove_trailing_whitespace(data)


def remove_trailing_whitespace(data: bytes) -> bytes:
    """``data`` without the spaces and tabs (and CR among them) that end its lines."""
    return _TRAILING_WHITESPACE.sub(b"", data)
