"""Vectorised k-mer extraction, identical to kmerspec.golden.parse but at numpy speed.

The byte stream is classified in three vectorised steps and one loop over *lines* (never over
bases or k-mers): the line loop carries the FASTA/FASTQ record state, which is sequential by
nature but touches each line once. Bases then become 2-bit codes, breaks a sentinel, and the
k-mer words ending at each base are cut out of the stream packed 32 bases to a 64-bit word.
"""

import numpy as np

from kmerspec.params import K

__all__ = ["kmer_array", "kmers_from_codes", "genome_kmer_array", "base_code_stream", "BREAK"]

BREAK = 4  # code of a byte that breaks the run of bases

_CODE_OF_BYTE = np.full(256, BREAK, dtype=np.uint8)
for _letters, _code in (("Aa", 0), ("Cc", 1), ("Gg", 2), ("Tt", 3)):
    for _letter in _letters:
        _CODE_OF_BYTE[ord(_letter)] = _code

_NEWLINE, _CR = ord("\n"), ord("\r")

# A file is cut into blocks of about this many bytes so that the working arrays stay in cache.
_BLOCK_BYTES = 1 << 20


def _classify_lines(first_bytes: list[int]) -> tuple[list[bool], list[bool]]:
    """For each line (given its first non-CR byte, or -1 if empty): is it a sequence line, and
    is it a FASTQ sequence line (whose end ends the run)?

    The record state machine of kmerspec.golden.parse.base_runs, one step per line.
    """
    header_fasta, header_fastq = ord(">"), ord("@")
    is_sequence = [False] * len(first_bytes)
    is_fastq_sequence = [False] * len(first_bytes)
    at_record_start = True
    fastq_line = 0  # 0 outside FASTQ; 1 sequence, 2 separator, 3 quality line next
    for line, first in enumerate(first_bytes):
        if fastq_line:
            is_sequence[line] = is_fastq_sequence[line] = fastq_line == 1
            fastq_line = (fastq_line + 1) % 4
            at_record_start = fastq_line == 0
        elif first < 0:
            continue
        elif first == header_fasta:
            at_record_start = True
        elif first == header_fastq and at_record_start:
            fastq_line = 1
        else:
            is_sequence[line] = True
            at_record_start = False
    return is_sequence, is_fastq_sequence


def base_code_stream(data: bytes) -> np.ndarray:
    """2-bit base codes of one file with BREAK between runs; line ends and CRs removed.

    Every header/separator/quality line and every non-base byte becomes at least one BREAK; the
    FASTQ sequence line is followed by a BREAK even when its record's later lines are empty.
    """
    raw = np.frombuffer(data, dtype=np.uint8)
    if raw.size == 0:
        return np.empty(0, dtype=np.uint8)
    newline_positions = np.flatnonzero(raw == _NEWLINE)
    line_starts = np.concatenate(([0], newline_positions + 1))
    line_ends = np.concatenate((newline_positions, [raw.size]))  # exclusive, before the '\n'

    first_bytes = np.full(line_starts.size, -1, dtype=np.int64)
    non_empty = line_starts < line_ends
    first_bytes[non_empty] = raw[line_starts[non_empty]]
    # Lines starting with CR: the first byte that counts is the first non-CR one (rare; per line).
    for line in np.flatnonzero(first_bytes == _CR):
        rest = raw[line_starts[line]:line_ends[line]]
        content = np.flatnonzero(rest != _CR)
        first_bytes[line] = rest[content[0]] if content.size else -1

    is_sequence, is_fastq_sequence = (np.array(mask, dtype=bool)
                                      for mask in _classify_lines(first_bytes.tolist()))
    line_lengths = line_ends - line_starts + 1  # with the '\n' (the last line has none)
    line_lengths[-1] -= 1
    sequence_byte = np.repeat(is_sequence, line_lengths)

    codes = _CODE_OF_BYTE[raw]
    codes[~sequence_byte] = BREAK
    # A FASTQ sequence line ends its run: keep its '\n' (coded BREAK) when it has one.
    keep = (raw != _NEWLINE) & (raw != _CR)
    ends_run = np.flatnonzero(is_fastq_sequence[:-1])
    keep[line_ends[ends_run]] = True
    return codes[keep]


_LEFT_SHIFTS = np.arange(0, 64, 2, dtype=np.uint64)
_RIGHT_SHIFTS = np.uint64(64) - _LEFT_SHIFTS  # numpy defines a shift by 64 as giving 0


def _packed_windows(bases: np.ndarray) -> np.ndarray:
    """The 32 bases starting at each position, as a 64-bit word (first base most significant).

    Bases are packed 32 to a word; the window at position 32q + r joins word q shifted left by
    2r with word q+1 shifted right by 64 - 2r. Positions near the end see zero padding.
    """
    padded = np.zeros(-(-bases.size // 32) * 32 + 32, dtype=np.uint8)
    padded[:bases.size] = bases
    quads = padded.reshape(-1, 4)
    packed_bytes = (quads[:, 0] << 6) | (quads[:, 1] << 4) | (quads[:, 2] << 2) | quads[:, 3]
    words = packed_bytes.view(">u8").astype(np.uint64)
    windows = (words[:-1, None] << _LEFT_SHIFTS) | (words[1:, None] >> _RIGHT_SHIFTS)
    return windows.reshape(-1)[:bases.size]


def _window_words(codes: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Forward and reverse-complement words of the k bases ending at each position >= k-1."""
    bases = codes & 3
    length = bases.size - k + 1
    drop = np.uint64(64 - 2 * k)
    forward = _packed_windows(bases)[:length] >> drop
    # The reverse complement of the window starting at s is the window of the reversed,
    # complemented stream starting at n - s - k.
    reverse = (_packed_windows(3 - bases[::-1])[:length] >> drop)[::-1]
    return forward, reverse


def _kmers_of_codes(codes: np.ndarray, k: int, canonical: bool) -> np.ndarray:
    length = codes.size - k + 1
    if length <= 0:
        return np.empty(0, dtype=np.uint64)
    forward, reverse = _window_words(codes, k)
    words = np.minimum(forward, reverse) if canonical else forward
    breaks = np.flatnonzero(codes == BREAK)
    if breaks.size == 0:
        return words
    # A BREAK at b spoils the windows starting at b-k+1 .. b: count spoilers by prefix sums.
    spoilers = np.zeros(codes.size + 1, dtype=np.int32)
    np.add.at(spoilers, np.maximum(breaks - (k - 1), 0), 1)
    np.add.at(spoilers, breaks + 1, -1)
    return words[np.cumsum(spoilers[:length]) == 0]


def kmers_from_codes(codes: np.ndarray, k: int, canonical: bool = True) -> np.ndarray:
    """The k-mers of a code stream from :func:`base_code_stream`, in stream order.

    Parse once with base_code_stream, then call this for every k that is needed.
    """
    K.check(k)
    pieces = []
    # Blocks overlap by k-1 codes so that no window is lost or counted twice at a seam.
    for start in range(0, max(codes.size - k + 1, 1), _BLOCK_BYTES):
        pieces.append(_kmers_of_codes(codes[start:start + _BLOCK_BYTES + k - 1], k, canonical))
    return np.concatenate(pieces) if pieces else np.empty(0, dtype=np.uint64)


def kmer_array(data: bytes, k: int, canonical: bool = True) -> np.ndarray:
    """The k-mers of one file in stream order, as uint64 words (== kmerspec.golden.parse.kmers)."""
    K.check(k)
    return kmers_from_codes(base_code_stream(data), k, canonical)


def genome_kmer_array(files: list[bytes], k: int, canonical: bool = True) -> np.ndarray:
    """The k-mers of a genome made of several files, file after file."""
    parts = [kmer_array(data, k, canonical) for data in files]
    return np.concatenate(parts) if parts else np.empty(0, dtype=np.uint64)
