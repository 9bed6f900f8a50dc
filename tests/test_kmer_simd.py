"""The SIMD k-mer kernels of host/fast/_kmer_simd.c (AVX2, AVX-512) against KmerStream's scalar
loop, bit for bit, on every level this CPU has: HLL registers (also with the minimum-count
prefilter), k-mer words, murmur3 samples and the sequence byte count, on real genomes and on
random FASTA/FASTQ with N runs, lowercase bases, CRLF, runs longer than a kernel chunk, and
blocks cut anywhere; and how a level is chosen (best by default, KSA_KMER_SIMD to force one).

The scalar loop is itself held to the golden model by tests/test_native_stream.py."""

import gzip
import os
import random
import subprocess
import sys

import numpy as np
import pytest

from host.fast.native import available_levels, native
from tests.genomes import random_genome_bytes, random_sequence, random_text

LEVELS = ("scalar", "avx2", "avx512", "avx512-gfni")
KS = (8, 9, 15, 16, 17, 21, 31, 32)
RAGOUT = "/usr/share/doc/ragout/examples"


def kmer_levels() -> list[str]:
    return available_levels(native.set_kmer_simd_level, LEVELS)


SIMD_LEVELS = [level for level in kmer_levels() if level != "scalar"]
needs_simd = pytest.mark.skipif(not SIMD_LEVELS, reason="this CPU has neither AVX2 nor AVX-512")


def stream_outputs(level, text, k, canonical=True, check=False, cuts=(), p=8, w=4, start=0):
    """Everything a stream makes of ``text`` fed in the pieces cut at ``cuts``, at ``level``
    (the registers at ``start`` before)."""
    native.set_kmer_simd_level(level)
    try:
        pieces = [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)])]
        registers = np.full(1 << p, start, dtype=np.uint8)
        filtered = np.full(1 << p, start, dtype=np.uint8)
        counters = np.zeros((2, 1 << 10), dtype=np.uint32)
        out = np.empty(len(text) + 1, dtype=np.uint64)
        words, samples = [], []
        hll = native.KmerStream(k, canonical, check=check)
        prefiltered = native.KmerStream(k, canonical, check=check)
        kmers = native.KmerStream(k, canonical)
        sample = native.KmerStream(k, canonical)
        for piece in pieces:
            hll.hll(piece, registers, p, w)
            prefiltered.hll(piece, filtered, p, w, counters, 10, 7, 255, 2)
            words.append(out[:kmers.kmers(piece, out)].copy())
            samples.append(out[:sample.sample(piece, out, 2, 11)].copy())
        return {"registers": registers, "prefiltered": filtered, "counters": counters,
                "words": np.concatenate(words), "samples": np.concatenate(samples),
                "bases": (hll.sequence_bytes, kmers.sequence_bytes)}
    finally:
        native.set_kmer_simd_level("best")


def assert_levels_equal(text, k, **options):
    expected = stream_outputs("scalar", text, k, **options)
    for level in SIMD_LEVELS:
        got = stream_outputs(level, text, k, **options)
        for key, value in expected.items():
            assert np.array_equal(np.asarray(got[key]), np.asarray(value)), \
                f"{level} differs from scalar in {key} (k={k}, {options})"


def random_texts(seed: int) -> list[bytes]:
    rng = random.Random(seed)
    texts = [random_genome_bytes(rng, records=rng.randint(1, 6), length=rng.randint(50, 3000),
                                 line=rng.choice([1, 7, 31, 60, 80, 4000]),
                                 fastq=rng.random() < 0.4) for _ in range(6)]
    texts.append(random_text(rng, 3000))  # breaks everywhere
    # one long run across several kernel chunks (2048 bases), lowercase and N inside
    run = bytearray(random_sequence(rng, 9000, b"ACGTacgt"))
    run[5000] = ord("N")
    texts.append(b">long\n" + bytes(run) + b"\n")
    texts.append(b">crlf\r\n" + b"\r\n".join(random_sequence(rng, 70, b"ACGTacgtN")
                                              for _ in range(40)) + b"\r\n")
    return texts


@needs_simd
@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("k", KS)
def test_random_sequences_equal_scalar(seed, k):
    """Random FASTA/FASTQ with N and lowercase, whole and cut at three random places; both
    strands and the forward strand alone; p = 8, so the registers' floor rises within a text
    and the kernels' filter on it is exercised."""
    rng = random.Random(seed * 100 + k)
    for text in random_texts(seed):
        cuts = sorted(rng.randrange(len(text) + 1) for _ in range(3))
        assert_levels_equal(text, k, canonical=bool(seed % 2), cuts=cuts)
        assert_levels_equal(text, k, cuts=() if seed % 2 else cuts)


@needs_simd
@pytest.mark.parametrize("p", [8, 14])
def test_registers_already_raised_equal_scalar(p):
    """Registers that start high (a genome's second file): the kernels skip the hashes whose
    rank cannot exceed the lowest register, and exactly those; at the top value nothing moves."""
    text = random_genome_bytes(random.Random(p), records=4, length=5000)
    for start in (1, 2, 3, 6, 14, 15):
        assert_levels_equal(text, 31, p=p, start=start)


@needs_simd
def test_a_floor_among_the_hash_low_bits_equals_scalar():
    """A floor so high (p = 18, floor 16 and 17) that the bits it tests include bit 30, which
    fmix64's last xor-shift changes: the AVX-512 kernel then finishes the hash in its lanes
    (below that floor it leaves the last step to the few hashes it keeps). Some registers must
    still rise, or the comparison would prove nothing."""
    rng = random.Random(9)
    sequence = random_sequence(rng, 1_500_000, b"ACGTacgt")
    text = b">high\n" + b"\n".join(sequence[i:i + 80] for i in range(0, len(sequence), 80))
    for start in (16, 17):
        assert_levels_equal(text, 31, p=18, w=5, start=start)
        raised = stream_outputs("scalar", text, 31, p=18, w=5, start=start)["registers"]
        assert (raised > start).any()


@needs_simd
def test_checked_streams_equal_scalar():
    """The input check (check=True) in the same pass: trailing spaces skipped, FASTQ quality
    lengths counted (CR and trailing spaces left out), the same k-mers."""
    rng = random.Random(5)
    text = b"".join(b">r%d\n%s  \t\n%s\n" % (i, random_sequence(rng, 90, b"ACGTacgtN"),
                                            random_sequence(rng, 60, b"ACGT")) for i in range(50))
    reads = b"".join(b"@q%d\n%s\n+\n%s%s\n" % (i, sequence, b"I" * len(sequence),
                                                  b" \r" if i % 3 else b"")
                     for i, sequence in enumerate(random_sequence(rng, rng.randint(0, 200),
                                                                  b"ACGTacgtN")
                                                  for _ in range(60)))
    for k in (8, 31):
        assert_levels_equal(text, k, check=True, cuts=(777,))
        assert_levels_equal(reads, k, check=True, cuts=(1000, 1001, 5003))


def checked_outcome(level, text, cuts):
    """What a checked stream at ``level`` makes of ``text`` cut at ``cuts``: its registers,
    bases and trimmed lines, or the message it refuses the text with."""
    native.set_kmer_simd_level(level)
    try:
        stream = native.KmerStream(9, check=True)
        registers = np.zeros(1 << 8, dtype=np.uint8)
        for a, b in zip([0, *cuts], [*cuts, len(text)]):
            stream.hll(text[a:b], registers, 8, 4)
        stream.finish()
        return registers.tobytes(), stream.sequence_bytes, stream.trimmed_lines
    except native.InputFormatError as error:
        return str(error)
    finally:
        native.set_kmer_simd_level("best")


def assert_checked_levels_equal(rng, texts) -> None:
    """Each text, cut at two random places, the same at every level as at the scalar one; both
    accepted and refused texts among them, or the comparison proves less than it says."""
    outcomes = set()
    for text in texts:
        cuts = sorted(rng.randrange(len(text) + 1) for _ in range(2))
        expected = checked_outcome("scalar", text, cuts)
        outcomes.add(type(expected))
        for level in SIMD_LEVELS:
            assert checked_outcome(level, text, cuts) == expected, (level, text, cuts)
    assert outcomes == {str, tuple}


@needs_simd
def test_quality_lines_of_any_bytes_equal_scalar():
    """FASTQ quality lines with spaces, tabs, CR and control bytes inside and at their ends,
    of the sequence's length or not, cut anywhere: every level accepts the same files, with the
    same k-mers, and refuses the others with the same message (a SIMD level counts a quality
    line's bytes above ' ' in one pass, the scalar one finds its end by memchr)."""
    rng = random.Random(11)
    odd = b" \t\r\x01\x1f\x7f\xff!~"

    def record(number: int) -> bytes:
        sequence = random_sequence(rng, rng.randint(0, 90), b"ACGTacgtN")
        quality = bytearray(random_sequence(rng, len(sequence), b"I#5"))
        for _ in range(rng.choice([0, 0, 1, 3])):
            quality.insert(rng.randint(0, len(quality)), rng.choice(odd))
        return b"@q%d\n%s\n+\n%s\n" % (number, sequence, bytes(quality))
    assert_checked_levels_equal(rng, [b"".join(record(number) for number in
                                               range(rng.randint(1, 8))) for _ in range(120)])


@needs_simd
def test_fasta_lines_with_odd_bytes_equal_scalar():
    """Multi-line FASTA records (a SIMD level scans each line's bases, and goes on to the next
    line without the line machine's round trip) with spaces, tabs, CR, N, protein letters and
    digits put in their lines: every level accepts the same files, with the same k-mers, and
    refuses the others with the same message, its line and column the same."""
    rng = random.Random(12)
    odd = b" \t\rNnE1>"

    def record(number: int) -> bytes:
        sequence = random_sequence(rng, rng.randint(0, 400), b"ACGTacgt")
        width = rng.choice([1, 2, 7, 60, 63, 64, 65, 80])
        lines = [bytearray(sequence[i:i + width]) for i in range(0, len(sequence), width)]
        for _ in range(rng.choice([0, 0, 1, 2]) if lines else 0):
            line = rng.choice(lines)
            line.insert(rng.randint(0, len(line)), rng.choice(odd))
        return b">r%d\n%s\n" % (number, b"\n".join(bytes(line) for line in lines))
    assert_checked_levels_equal(rng, [b"".join(record(number) for number in
                                               range(rng.randint(1, 4))) for _ in range(150)])


@needs_simd
def test_every_cut_of_a_short_text_equals_scalar():
    """A run broken by N, a line end and a record, cut at every byte."""
    text = b">a\nACGTTGCAAC\nGTacgtTTGA\nCCNAGGTTACCAGTAGATTTACG\n>b\nTTGACCAGTTAGAC\n"
    for cut in range(len(text) + 1):
        assert_levels_equal(text, 9, cuts=(cut,))


@needs_simd
@pytest.mark.skipif(not os.path.isdir(RAGOUT), reason="the genomes are missing: "
                    "apt-get install ragout-examples")
@pytest.mark.parametrize("genome", ["E.Coli/references/MG1655-K12.fasta.gz",
                                    "H.Pylori/references/G27.fasta.gz"])
def test_real_genomes_equal_scalar(genome):
    """A real genome at the README's geometry (k = 31, p = 14) and at k = 21, in the blocks a
    file is streamed in."""
    text = gzip.decompress(open(f"{RAGOUT}/{genome}", "rb").read())
    cuts = range(1 << 20, len(text), 1 << 20)
    assert_levels_equal(text, 31, p=14, cuts=cuts)
    assert_levels_equal(text, 21, p=14)


def test_best_is_the_widest_level_and_short_k_stays_scalar():
    """The default is the widest level this CPU has; k < 8 (the lanes step 8 bases) keeps the
    scalar loop at every level, with the same k-mers."""
    native.set_kmer_simd_level("best")
    assert native.kmer_simd_level() == kmer_levels()[-1]
    text = random_genome_bytes(random.Random(3), records=3, length=500)
    for level in SIMD_LEVELS:
        for k in (1, 5, 7):
            assert np.array_equal(stream_outputs(level, text, k)["words"],
                                  stream_outputs("scalar", text, k)["words"])
    with pytest.raises(ValueError, match="not available"):
        native.set_kmer_simd_level("sse9")


def level_in_a_process(value: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, KSA_KMER_SIMD=value)
    return subprocess.run([sys.executable, "-c", "from host.fast.native import native; "
                           "print(native.kmer_simd_level())"],
                          env=env, capture_output=True, text=True)


def test_the_environment_forces_a_level():
    """KSA_KMER_SIMD=level forces a level for a whole process (benches, the command line); a
    level this CPU lacks is refused at import, naming the variable."""
    for level in kmer_levels():
        result = level_in_a_process(level)
        assert result.returncode == 0 and result.stdout.strip() == level, result.stderr
    result = level_in_a_process("sse9")
    assert result.returncode != 0 and "KSA_KMER_SIMD=sse9" in result.stderr
