"""Expected sketch records from the golden model, and genome sets for the sketch tests."""

import dataclasses
import random

from kmerspec.golden.hll import Hll, HllParams
from kmerspec.golden.mincount import MinCountParams, passing_kmers
from kmerspec.golden.parse import genome_kmers
from kmerspec.kernels.jacc_sketch import Params, SketchRecord

from .streams import SAMPLE_FILES, random_genome_file

__all__ = ["expected_record", "regression_genomes", "compare_records"]


def expected_record(tag: int, files, k: int, geometry: Params, min_count: int = 1) -> SketchRecord:
    """The record of one genome; with ``min_count`` m > 1 through the geometry's prefilter
    (SPEC 7)."""
    prefilter = (dataclasses.replace(geometry.prefilter, min_count=min_count)
                 if min_count > 1 else MinCountParams())
    sketch = Hll(HllParams(geometry.p, geometry.w)).update(
        passing_kmers(genome_kmers(files, k), prefilter))
    z, nz = sketch.features()
    return SketchRecord(tag=tag, registers=sketch.registers, z=z, nz=nz)


def regression_genomes(seed: int, count: int = 8, scale: int = 300) -> list[list[bytes]]:
    """Genomes of different lengths: samples of every format feature, multi-file genomes, an
    empty genome and an empty file, random FASTA/FASTQ with N runs, lowercase and CRLF."""
    rng = random.Random(seed)
    genomes = [
        [SAMPLE_FILES["fasta"], SAMPLE_FILES["crlf"]],
        [SAMPLE_FILES["fastq"]],
        [],
        [SAMPLE_FILES["edge"], b"", random_genome_file(rng, scale)],
    ]
    while len(genomes) < count:
        genomes.append([random_genome_file(rng, rng.randint(1, 4 * scale))
                        for _ in range(rng.randint(1, 2))])
    return genomes


def compare_records(got: list[SketchRecord], expected: list[SketchRecord]) -> None:
    assert len(got) == len(expected)
    for record, reference in zip(got, expected):
        assert record is not None, f"no record for genome {reference.tag}"
        assert record.tag == reference.tag
        bad = [j for j, (a, b) in enumerate(zip(record.registers, reference.registers)) if a != b]
        assert not bad, (f"genome {reference.tag}: {len(bad)} registers differ, first "
                         f"{bad[0]}: {record.registers[bad[0]]} != {reference.registers[bad[0]]}")
        assert (record.z, record.nz) == (reference.z, reference.nz), f"genome {reference.tag}"
