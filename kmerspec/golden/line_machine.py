"""The line machine of the FASTA/FASTQ parser (SPEC section 1) as a byte-at-a-time model.

The rules are exactly those of :mod:`kmerspec.golden.parse` (its docstring): eleven states
(:class:`LineState`) between bytes, and per byte a role (:class:`ByteRole`). The lane parser in
``hw/sketch/parser.py`` evaluates this machine speculatively, one table lookup per
{state, byte class}; the motif layout uses :func:`line_step` to close a file's last line.
"""

import enum as _py_enum

__all__ = ["LineState", "ByteRole", "ByteClass", "BASE_CODES", "step_class", "classify",
           "line_step"]


class LineState(_py_enum.IntEnum):
    """Parser state between two bytes (``LS_*``: at a line start, ``IN_*``: inside a line)."""

    LS_RECORD = 0       # at a record start (file start, after a header or a FASTQ quality line)
    LS_SEQUENCE = 1     # at a line start after a FASTA sequence line
    LS_FASTQ_SEQ = 2    # the next line is a FASTQ sequence line
    LS_FASTQ_SEP = 3
    LS_FASTQ_QUAL = 4
    IN_SEQUENCE = 5
    IN_HEADER = 6
    IN_FASTQ_HEADER = 7
    IN_FASTQ_SEQ = 8
    IN_FASTQ_SEP = 9
    IN_FASTQ_QUAL = 10


class ByteRole(_py_enum.IntEnum):
    SKIP = 0
    BASE = 1
    BREAK = 2


class ByteClass(_py_enum.IntEnum):
    CR = 0
    LF = 1
    GT = 2
    AT = 3
    BASE = 4
    OTHER = 5
    INVALID = 6   # padding byte of the chunk: not part of the stream at all


BASE_CODES = {ord("A"): 0, ord("C"): 1, ord("G"): 2, ord("T"): 3,
               ord("a"): 0, ord("c"): 1, ord("g"): 2, ord("t"): 3}

LINE_END = {
    LineState.LS_RECORD: (LineState.LS_RECORD, ByteRole.SKIP),
    LineState.LS_SEQUENCE: (LineState.LS_SEQUENCE, ByteRole.SKIP),
    LineState.LS_FASTQ_SEQ: (LineState.LS_FASTQ_SEP, ByteRole.BREAK),
    LineState.LS_FASTQ_SEP: (LineState.LS_FASTQ_QUAL, ByteRole.BREAK),
    LineState.LS_FASTQ_QUAL: (LineState.LS_RECORD, ByteRole.BREAK),
    LineState.IN_SEQUENCE: (LineState.LS_SEQUENCE, ByteRole.SKIP),
    LineState.IN_HEADER: (LineState.LS_RECORD, ByteRole.BREAK),
    LineState.IN_FASTQ_HEADER: (LineState.LS_FASTQ_SEQ, ByteRole.BREAK),
    LineState.IN_FASTQ_SEQ: (LineState.LS_FASTQ_SEP, ByteRole.BREAK),
    LineState.IN_FASTQ_SEP: (LineState.LS_FASTQ_QUAL, ByteRole.BREAK),
    LineState.IN_FASTQ_QUAL: (LineState.LS_RECORD, ByteRole.BREAK),
}


def step_class(state: LineState, byte_class: ByteClass) -> tuple[LineState, ByteRole]:
    if byte_class in (ByteClass.CR, ByteClass.INVALID):
        return state, ByteRole.SKIP
    if byte_class == ByteClass.LF:
        return LINE_END[state]
    is_base = byte_class == ByteClass.BASE
    base_role = ByteRole.BASE if is_base else ByteRole.BREAK
    if state in (LineState.LS_RECORD, LineState.LS_SEQUENCE):
        if byte_class == ByteClass.GT:
            return LineState.IN_HEADER, ByteRole.BREAK
        if byte_class == ByteClass.AT and state == LineState.LS_RECORD:
            return LineState.IN_FASTQ_HEADER, ByteRole.BREAK
        return LineState.IN_SEQUENCE, base_role
    if state in (LineState.LS_FASTQ_SEQ, LineState.IN_FASTQ_SEQ):
        return LineState.IN_FASTQ_SEQ, base_role
    if state == LineState.IN_SEQUENCE:
        return LineState.IN_SEQUENCE, base_role
    if state == LineState.LS_FASTQ_SEP:
        return LineState.IN_FASTQ_SEP, ByteRole.BREAK
    if state == LineState.LS_FASTQ_QUAL:
        return LineState.IN_FASTQ_QUAL, ByteRole.BREAK
    return state, ByteRole.BREAK   # inside a header, separator or quality line


def classify(byte: int) -> ByteClass:
    if byte == 0x0D:
        return ByteClass.CR
    if byte == 0x0A:
        return ByteClass.LF
    if byte == ord(">"):
        return ByteClass.GT
    if byte == ord("@"):
        return ByteClass.AT
    if byte in BASE_CODES:
        return ByteClass.BASE
    return ByteClass.OTHER


def line_step(state: LineState, byte: int) -> tuple[LineState, ByteRole]:
    """Software model of one parser step: (next state, role of ``byte``)."""
    return step_class(state, classify(byte))
