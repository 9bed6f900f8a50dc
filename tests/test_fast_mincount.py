"""The minimum-count prefilter (SPEC 7) of the native k-mer stream against the golden model:
reads-like genomes with repeated and erroneous k-mers, a small Count-Min (false passes happen),
any block cuts, several files per genome, any number of threads; m = 1 unchanged."""

import random

import numpy as np
import pytest

from host.backends import GoldenBackend
from host.fast.hll import sketch_files, sketch_genomes
from host.fast.native import native
from kmerspec.golden.hll import Hll, HllParams
from kmerspec.golden.mincount import MinCountParams, min_count_counter, passing_kmers
from kmerspec.golden.parse import genome_kmers
from tests.genomes import random_sequence
from tests.test_native_stream import Blocks


def reads_text(rng: random.Random, genome: bytes, reads: int, length: int, error: float,
               fastq: bool) -> bytes:
    """Reads of both strands of ``genome`` with substitution errors, as FASTQ or FASTA."""
    out = []
    for index in range(reads):
        start = rng.randrange(0, len(genome) - length + 1)
        read = bytearray(genome[start:start + length])
        for position in range(length):
            if rng.random() < error:
                read[position] = rng.choice(b"ACGTN")
        if rng.random() < 0.5:
            read = read[::-1].translate(bytes.maketrans(b"ACGTN", b"TGCAN"))
        if fastq:
            out.append(b"@r%d\n%s\n+\n%s\n" % (index, bytes(read), b"I" * length))
        else:
            out.append(b">r%d\n%s\n" % (index, bytes(read)))
    return b"".join(out)


def golden(files, k, params, min_count, canonical=True):
    kmers = genome_kmers(files, k, canonical_form=canonical)
    return Hll(params).update(passing_kmers(kmers, min_count)).registers


def cut(text: bytes, rng: random.Random) -> Blocks:
    return Blocks(text, sorted(rng.sample(range(1, len(text)), min(30, len(text) - 1))))


@pytest.mark.parametrize("seed", range(6))
def test_reads_equal_golden(seed):
    rng = random.Random(seed)
    genome = random_sequence(rng, 400)
    k = rng.choice([11, 21, 31])
    files = [reads_text(rng, genome, 25, 60, 0.02, fastq=seed % 2 == 0) for _ in range(2)]
    canonical = seed != 3
    params = HllParams(8, rng.choice([4, 5]))
    # 2^6 counters per row against ~800 distinct k-mers: collisions everywhere
    min_count = MinCountParams(min_count=rng.choice([2, 3]), mc_depth=rng.choice([1, 2, 4]),
                               mc_width_bits=6, mc_seed=rng.getrandbits(32))
    expected = golden(files, k, params, min_count, canonical)
    assert expected != golden(files, k, params, MinCountParams(), canonical)
    got = sketch_files([cut(text, rng) for text in files], k, params, canonical,
                       min_count=min_count)
    assert got.tolist() == expected


def test_saturated_counters_equal_golden():
    rng = random.Random(11)
    genome = random_sequence(rng, 200)
    text = reads_text(rng, genome, 40, 50, 0.01, fastq=True)
    params = HllParams(8, 4)
    min_count = MinCountParams(min_count=3, mc_depth=3, mc_width_bits=4, mc_counter_bits=2)
    assert sketch_files([text], 15, params, min_count=min_count).tolist() == \
        golden([text], 15, params, min_count)


def test_counters_equal_golden_counters():
    """The Count-Min state after a genome, compared counter by counter."""
    rng = random.Random(12)
    text = reads_text(rng, random_sequence(rng, 300), 30, 50, 0.02, fastq=True)
    min_count = MinCountParams(min_count=2, mc_depth=3, mc_width_bits=7, mc_seed=99)
    counter = min_count_counter(min_count)
    passed = list(passing_kmers(genome_kmers([text], 21), min_count, counter))
    counters = np.zeros((3, 1 << 7), dtype=np.uint32)
    registers = np.zeros(256, dtype=np.uint8)
    stream = native.KmerStream(21)
    for block in cut(text, rng).blocks():
        stream.hll(block, registers, 8, 4, counters, 7, 99, min_count.max_count, 2)
    assert counters.tolist() == counter.counters
    assert registers.tolist() == Hll(HllParams(8, 4)).update(passed).registers


def test_threads_and_golden_backend_agree():
    rng = random.Random(13)
    genome = random_sequence(rng, 500)
    genomes = [[reads_text(rng, genome, 30, 70, 0.02, fastq=i % 2 == 0)] for i in range(5)]
    params = HllParams(9, 4)
    min_count = MinCountParams(min_count=2, mc_depth=4, mc_width_bits=8)
    expected = [r.tolist() for r in GoldenBackend().sketch_hll(genomes, 21, params, True,
                                                               min_count=min_count)]
    for threads in (1, 2):
        got = sketch_genomes(genomes, 21, params, threads=threads, min_count=min_count)
        assert [r.tolist() for r in got] == expected


def test_min_count_one_is_the_plain_sketch():
    rng = random.Random(14)
    text = reads_text(rng, random_sequence(rng, 300), 20, 50, 0.02, fastq=True)
    params = HllParams(8, 4)
    assert sketch_files([text], 21, params, min_count=MinCountParams()).tolist() == \
        Hll(params).update(genome_kmers([text], 21)).registers


def test_bad_prefilter_arguments():
    stream = native.KmerStream(5)
    registers = np.zeros(256, dtype=np.uint8)
    message = r"^hll: the minimum-count prefilter needs 1..16 rows"
    with pytest.raises(ValueError, match=message):
        stream.hll(b"ACGTAC", registers, 8, 4, np.zeros(20, dtype=np.uint32), 3, 0, 255, 2)
    with pytest.raises(ValueError, match=message):
        stream.hll(b"ACGTAC", registers, 8, 4, np.zeros(16, dtype=np.uint32), 3, 0, 3, 4)
    with pytest.raises(TypeError):
        stream.hll(b"ACGTAC", registers, 8, 4, np.zeros(16, dtype=np.uint8), 3, 0, 255, 2)
