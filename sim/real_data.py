"""Fragments of the real public sequence data in examples/ for the default-geometry regressions
and bench/default_geometry.py: the viral genomes of examples/genomes (DWV, VDV-1 and two
recombinants, ~10 kb each), the lambda phage genome (48.5 kb) and Illumina reads of
SRR059298 (examples/reads, 2,000 FASTQ records). See examples/README.md for their sources.

A fragment keeps the file's format: a FASTA fragment is the header and the first lines of a
record, a FASTQ fragment the first whole records, so the parsers see real headers, line
lengths, N runs and quality strings.
"""

from __future__ import annotations

import gzip
import pathlib

__all__ = ["EXAMPLES", "genome_names", "fasta_fragment", "fastq_fragment", "genome_fragments"]

EXAMPLES = pathlib.Path(__file__).resolve().parent.parent / "examples"
READS = EXAMPLES / "reads" / "SRR059298_2000.fq.gz"


def genome_names() -> list[str]:
    """The example genomes, by file stem: examples/genomes/*.fa.gz and lambda_virus."""
    return sorted(p.name[:-len(".fa.gz")] for p in (EXAMPLES / "genomes").glob("*.fa.gz")) \
        + ["lambda_virus"]


def _genome_path(name: str) -> pathlib.Path:
    path = EXAMPLES / "genomes" / f"{name}.fa.gz"
    return path if path.exists() else EXAMPLES / f"{name}.fa.gz"


def fasta_fragment(name: str, max_bytes: int, skip_lines: int = 0) -> bytes:
    """The header of genome ``name`` and whole sequence lines (after the first ``skip_lines``)
    up to ``max_bytes`` bytes in all."""
    lines = gzip.decompress(_genome_path(name).read_bytes()).splitlines(keepends=True)
    header, body = lines[0], lines[1 + skip_lines:]
    out = bytearray(header)
    for line in body:
        if len(out) + len(line) > max_bytes:
            break
        out += line
    return bytes(out)


def fastq_fragment(max_bytes: int, first_record: int = 0) -> bytes:
    """Whole FASTQ records of SRR059298 from ``first_record``, up to ``max_bytes`` bytes."""
    lines = gzip.decompress(READS.read_bytes()).splitlines(keepends=True)
    out = bytearray()
    for start in range(4 * first_record, len(lines) - 3, 4):
        record = b"".join(lines[start:start + 4])
        if len(out) + len(record) > max_bytes:
            break
        out += record
    return bytes(out)


def genome_fragments(count: int, max_bytes: int) -> list[list[bytes]]:
    """``count`` genomes (each a list of files) for a kernel regression: fragments of every
    example genome in turn (later rounds start further into the genome), every fourth genome a
    FASTQ fragment, and one genome of two files (a FASTA and a FASTQ fragment)."""
    names = genome_names()
    genomes = []
    for index in range(count):
        if index % 4 == 3:
            genomes.append([fastq_fragment(max_bytes, first_record=25 * index)])
        else:
            name = names[index % len(names)]
            genomes.append([fasta_fragment(name, max_bytes, skip_lines=7 * (index // len(names)))])
    if count >= 3:
        genomes[2] = [fasta_fragment(names[-1], max_bytes // 2, skip_lines=40),
                      fastq_fragment(max_bytes // 2, first_record=500)]
    return genomes
