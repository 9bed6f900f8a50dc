"""The native k-mer stream (host/fast/_kmer_stream.c) against the golden model, wherever the
blocks are cut; files streamed from disk (plain, gzip) with bounded memory; and results that do
not depend on the number of threads."""

import gzip
import random
import tracemalloc

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from host.fast.hll import sketch_files, sketch_genomes
from host.fast.jsd import build_pqas, sample_kmers
from host.fast.kmers import kmer_blocks, sampled_kmer_array
from host.fast.motif import run_engine_fast
from host.io import InputError, read_sequence_file
from host.reader import SequenceFile, sequence_blocks
from kmerspec.golden.hll import Hll, HllParams
from kmerspec.golden.jsd import JsdParams, build_pqa_files
from kmerspec.golden.motif import MotifParams
from kmerspec.golden.parse import kmers
from tests.genomes import ADVERSARIAL_TEXTS, random_genome_bytes, random_text


class Blocks:
    """A file given as the pieces of ``text`` cut at ``cuts`` (what a streamed file looks like)."""

    def __init__(self, text: bytes, cuts):
        self.pieces = [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)])]

    def blocks(self, block_bytes=None):
        return iter(self.pieces)


def golden_registers(texts, k, params, canonical=True):
    sketch = Hll(params)
    for text in texts:
        sketch.update(kmers(text, k, canonical_form=canonical))
    return sketch.registers


# Texts whose every byte position is a seam worth cutting at: CRLF pairs, FASTQ records and
# k-mers running across lines.
SEAM_TEXTS = [text for text in ADVERSARIAL_TEXTS if text] + [
    b">crlf\r\nACGTACGTAC\r\nGTACGTTTGA\r\n\r\n>x\r\nGGGGCCCCAAAA\r\n",
    b"@r1\r\nACGTACGTGGACCA\r\n+\r\nIIIIIIIIIIIIII\r\n@r2\r\nTTGACCA\r\n+\r\n@@@@@@@\r\n",
]


@pytest.mark.parametrize("text", SEAM_TEXTS)
def test_every_single_cut_equals_golden(text):
    """Two blocks, cut at every position: inside a k-mer, between CR and LF, inside a FASTQ
    record, right after a header's first byte."""
    params = HllParams(8, 5)
    for k in (1, 3, 7):
        for canonical in (True, False):
            expected_kmers = list(kmers(text, k, canonical_form=canonical))
            expected = golden_registers([text], k, params, canonical)
            for cut in range(1, len(text)):
                file = Blocks(text, [cut])
                words = np.concatenate(list(kmer_blocks(file, k, canonical)))
                assert words.tolist() == expected_kmers, (cut, k)
                assert sketch_files([file], k, params, canonical).tolist() == expected, (cut, k)


@settings(max_examples=200, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), k=st.integers(1, 32), w=st.integers(4, 8),
       canonical=st.booleans(), fastq=st.booleans(), unstructured=st.booleans())
def test_random_cuts_equal_golden(seed, k, w, canonical, fastq, unstructured):
    rng = random.Random(seed)
    if unstructured:
        text = random_text(rng, rng.randint(0, 600))
    else:
        text = random_genome_bytes(rng, records=rng.randint(1, 5), length=300, fastq=fastq)
    cuts = sorted(rng.sample(range(1, len(text)), max(0, min(len(text) - 1, rng.randint(0, 40)))))
    params = HllParams(8, w)
    file = Blocks(text, cuts)
    assert (np.concatenate(list(kmer_blocks(file, k, canonical))).tolist()
            == list(kmers(text, k, canonical_form=canonical)))
    assert sketch_files([file], k, params, canonical).tolist() == \
        golden_registers([text], k, params, canonical)
    # JSD sampling in the same pass equals sampling the golden k-mers
    everything = np.array(list(kmers(text, k, canonical_form=canonical)), dtype=np.uint64)
    jsd = JsdParams(k=k, s=2, canonical=canonical)
    assert sampled_kmer_array([file], k, canonical, 2, jsd.sample_seed).tolist() == \
        sample_kmers(everything, jsd).tolist()


def test_a_stream_refuses_bad_arguments():
    from host.fast.native import native
    with pytest.raises(ValueError, match="k must be an integer from 1 to 32, not 33"):
        native.KmerStream(33)
    stream = native.KmerStream(5)
    with pytest.raises(ValueError, match="out holds 2 words; a block of 9 bytes needs as many"):
        stream.kmers(b">a\nACGTA\n", np.empty(2, dtype=np.uint64))
    with pytest.raises(ValueError, match=r"need 8 <= p <= 18, 4 <= w <= 8 and 2\^p registers"):
        stream.hll(b"ACGT", np.zeros(100, dtype=np.uint8), 8, 4)


def _write_genome(path, text, compress):
    path.write_bytes(gzip.compress(text) if compress else text)


def blocks_into(path, block_bytes: int) -> list[bytes]:
    """The blocks of a file read into one buffer (SequenceFile.blocks_into, the sketch path),
    each copied as it comes (the next overwrites it)."""
    return [bytes(block) for block in SequenceFile(path).blocks_into(bytearray(block_bytes))]


@pytest.mark.parametrize("compress", [False, True])
def test_files_stream_from_disk_as_they_read_whole(tmp_path, compress):
    rng = random.Random(3)
    text = random_genome_bytes(rng, records=20, length=3000)
    path = tmp_path / ("g.fa.gz" if compress else "g.fa")
    _write_genome(path, text, compress)
    blocks = list(sequence_blocks(path, block_bytes=1000))
    assert len(blocks) > 10 and b"".join(blocks) == read_sequence_file(path) == text
    assert blocks_into(path, 1000) == blocks
    params = HllParams(10, 4)
    assert sketch_files([SequenceFile(path)], 21, params).tolist() == \
        golden_registers([text], 21, params)


def test_multi_member_gzip_streams(tmp_path):
    first, second = b">a\nACGTACGTTGCA\n", b">b\nTTTTGGGGCCCCAAAA\n"
    path = tmp_path / "two.fa.gz"
    path.write_bytes(gzip.compress(first) + gzip.compress(second))
    assert b"".join(sequence_blocks(path, block_bytes=5)) == first + second
    assert b"".join(blocks_into(path, 5)) == first + second


@pytest.mark.parametrize("content, message", [
    (gzip.compress(b">a\nACGT\n" * 1000, mtime=0)[:-20], "truncated gzip file"),
    (gzip.compress(b">a\nACGT\n" * 1000, mtime=0)[:10] + b"\xff" * 50, "corrupt gzip file"),
    (b"ACGT\n", "not a FASTA/FASTQ file (first character is b'A'"),
    (b">a\nAC\x00GT\n", "not a FASTA/FASTQ file (binary content: NUL byte at offset 5)"),
])
def test_streamed_errors_match_whole_file_errors(tmp_path, content, message):
    path = tmp_path / "bad.fa"
    path.write_bytes(content)
    with pytest.raises(InputError) as whole:
        read_sequence_file(path)
    with pytest.raises(InputError) as streamed:
        list(sequence_blocks(path, block_bytes=1 << 16))
    with pytest.raises(InputError) as read_into:
        blocks_into(path, 1 << 16)
    assert str(read_into.value) == str(streamed.value)
    assert message in str(whole.value) and message in str(streamed.value)
    # the same words up to the decompressor's own detail (zlib's or ISA-L's)
    assert str(streamed.value).split("(")[0] == str(whole.value).split("(")[0]


def test_missing_and_directory_inputs(tmp_path):
    with pytest.raises(InputError, match="missing.fa: no such file"):
        list(sequence_blocks(tmp_path / "missing.fa"))
    with pytest.raises(InputError, match="is a directory, expected a FASTA/FASTQ file"):
        list(sequence_blocks(tmp_path))


def test_memory_does_not_grow_with_the_genome(tmp_path):
    """A 48 MiB gzip genome is sketched holding a few blocks of 1 MiB (traced allocations)."""
    rng = np.random.default_rng(5)
    line = np.frombuffer(b"ACGT", np.uint8)[rng.integers(0, 4, (1 << 16, 80))]
    chunk = b"\n".join(bytes(row) for row in line) + b"\n"   # 5.3 MB of 80-column sequence
    path = tmp_path / "big.fa.gz"
    with gzip.open(path, "wb", compresslevel=1) as out:
        out.write(b">big\n")
        for _ in range(9):
            out.write(chunk)
    size = 9 * len(chunk)
    tracemalloc.start()
    try:
        registers = sketch_files([SequenceFile(path)], 31, HllParams(), block_bytes=1 << 20)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert registers.any()
    assert size > 40 << 20
    assert peak < 6 << 20, f"peak {peak / 2**20:.1f} MiB for a {size / 2**20:.0f} MiB genome"


def test_thread_count_does_not_change_sketches_or_pqas():
    rng = random.Random(8)
    genomes = [[random_genome_bytes(rng, records=3, length=2000, fastq=i % 3 == 0)]
               for i in range(7)]
    params = HllParams(10, 4)
    one = [r.tolist() for r in sketch_genomes(genomes, 21, params, threads=1)]
    assert one == [golden_registers(files, 21, params) for files in genomes]
    for threads in (2, 3, None):
        assert [r.tolist() for r in sketch_genomes(genomes, 21, params, threads=threads)] == one
    jsd = JsdParams(k=11, s=1, R=4, n=4, cw=8)
    expected = [build_pqa_files(files, jsd).queues for files in genomes]
    for threads in (1, 3):
        assert [p.queues for p in build_pqas(genomes, jsd, threads=threads)] == expected


def test_thread_count_does_not_change_motifs():
    rng = random.Random(9)
    test = [random_genome_bytes(rng, records=4, length=3000)]
    control = [random_genome_bytes(rng, records=4, length=3000)]
    params = MotifParams(kmin=4, kmax=9, cw=8, thresholds=3)
    one = run_engine_fast(test, control, params, threads=1)
    for threads in (2, 4):
        other = run_engine_fast(test, control, params, threads=threads)
        assert [(s.k, s.countmin.counters, s.store.kmers, s.store.values, s.store.control_counts)
                for s in other] == \
            [(s.k, s.countmin.counters, s.store.kmers, s.store.values, s.store.control_counts)
             for s in one]


def test_the_in_place_rebuild_has_the_setuptools_the_build_needs():
    """host/fast/native.py runs setup.py in the installed environment when a C source is newer
    than the module (a pull): that environment must have the build system's setuptools (a
    Debian venv has 66, which refuses pyproject.toml's SPDX licence)."""
    import tomllib
    from pathlib import Path
    project = tomllib.loads((Path(__file__).parents[1] / "pyproject.toml").read_text())
    build = [r for r in project["build-system"]["requires"] if r.startswith("setuptools")]
    assert build and set(build) <= set(project["project"]["dependencies"])
