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

__all__ = ["EXAMPLES", "SIBELIA", "genome_names", "fasta_fragment", "fastq_fragment",
           "genome_fragments", "bacterial_fragments"]

EXAMPLES = pathlib.Path(__file__).resolve().parent.parent / "examples"
READS = EXAMPLES / "reads" / "SRR059298_2000.fq.gz"
#: Debian's sibelia-examples (installed by .ci/run and the README): 6 S. aureus and 2 H. pylori
#: genomes of 1.6-2.9 Mbases, for runs longer than the example genomes.
SIBELIA = pathlib.Path("/usr/share/doc/sibelia/examples")


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


def _bacterial_genomes() -> list[bytes]:
    """The 8 sibelia-examples genomes as FASTA texts: a file of one strain's contigs is one
    genome, a file of several strains' complete genomes one genome per record."""
    paths = sorted(SIBELIA.rglob("*.fasta.gz"))
    if not paths:
        raise FileNotFoundError(f"{SIBELIA}: no *.fasta.gz; install Debian's sibelia-examples")
    genomes = []
    for path in paths:
        text = gzip.decompress(path.read_bytes())
        if path.name in ("Staphylococcus.fasta.gz", "Helicobacter_pylori.fasta.gz"):
            genomes += [b">" + r.lstrip(b">").rstrip(b"\n") + b"\n"
                        for r in text.split(b"\n>") if r.strip(b">\n")]
        else:
            genomes.append(text)
    return genomes


def bacterial_fragments(count: int, max_bytes: int, min_bytes: int | None = None
                        ) -> list[list[bytes]]:
    """``count`` genomes (one FASTA file each) of at most ``max_bytes`` bytes, whole lines of the
    sibelia-examples bacteria in turn (headers of contigs included); round r starts r x
    ``max_bytes`` bytes into its genome, behind a header of its own, so fragments of one genome do
    not overlap while it is long enough. With ``min_bytes`` the sizes spread evenly from
    ``min_bytes`` to ``max_bytes`` in a scrambled order, as a collection's genomes differ."""
    genomes = _bacterial_genomes()
    fragments = []
    for index in range(count):
        text = genomes[index % len(genomes)]
        start = (index // len(genomes)) * max_bytes
        size = max_bytes if min_bytes is None or count == 1 else \
            min_bytes + (max_bytes - min_bytes) * (index * 5 % count) // (count - 1)
        lines = text[start:].splitlines(keepends=True)[1:] if start else \
            text.splitlines(keepends=True)
        out = bytearray(b"" if start and lines and lines[0].startswith(b">")
                        else b">fragment%d\n" % index if start else b"")
        for line in lines:
            if len(out) + len(line) > size:
                break
            out += line
        fragments.append([bytes(out)])
    return fragments
