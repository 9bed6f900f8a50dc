"""The reference parser against an independent string implementation and against jellyfish."""

import random
import shutil
import subprocess
from collections import Counter

import pytest

from kmerspec.golden.parse import canonical, kmers, reverse_complement
from tests.genomes import ADVERSARIAL_TEXTS, random_genome_bytes, random_text

COMPLEMENT = str.maketrans("ACGT", "TGCA")


def brute_force_kmers(text: bytes, k: int, canonical_form: bool = True) -> list[str]:
    """Same rules, written with strings: lines, records, then every substring of length k."""
    lines = text.decode("latin-1").replace("\r", "").split("\n")
    sequences, current = [], ""
    record_start, fastq_left = True, 0
    for line in lines:
        if fastq_left:
            if fastq_left == 3:
                sequences.append(line)
            fastq_left -= 1
            record_start = fastq_left == 0
            continue
        if line == "":
            continue
        if line.startswith(">") or (line.startswith("@") and record_start):
            sequences.append(current)
            current = ""
            record_start = True
            fastq_left = 3 if line.startswith("@") else 0
            continue
        current += line
        record_start = False
    sequences.append(current)
    found = []
    for sequence in sequences:
        for piece in "".join(c if c in "ACGTacgt" else " " for c in sequence).upper().split():
            for i in range(len(piece) - k + 1):
                forward = piece[i:i + k]
                reverse = forward.translate(COMPLEMENT)[::-1]
                found.append(min(forward, reverse) if canonical_form else forward)
    return found


def as_strings(words, k):
    return ["".join("ACGT"[(w >> (2 * (k - 1 - i))) & 3] for i in range(k)) for w in words]


def test_reverse_complement_and_canonical():
    # ACGTT -> AACGT
    word = int("0123 3".replace(" ", ""), 4)
    assert reverse_complement(word, 5) == int("00123", 4)
    assert canonical(word, 5) == int("00123", 4)
    assert reverse_complement(0, 32) == (1 << 64) - 1


@pytest.mark.parametrize("text", ADVERSARIAL_TEXTS)
@pytest.mark.parametrize("k", [1, 3, 5, 11, 31, 32])
def test_adversarial_texts_match_brute_force(text, k):
    for canonical_form in (True, False):
        got = as_strings(kmers(text, k, canonical_form=canonical_form), k)
        assert Counter(got) == Counter(brute_force_kmers(text, k, canonical_form))


def test_random_texts_match_brute_force():
    rng = random.Random(1)
    for _ in range(1500):
        text = random_text(rng, rng.randint(0, 120))
        k = rng.randint(1, 9)
        assert Counter(as_strings(kmers(text, k), k)) == Counter(brute_force_kmers(text, k))


def test_invalid_k_is_refused():
    with pytest.raises(ValueError, match="k must be an integer from 1 to 32, not 33"):
        list(kmers(b">a\nACGT\n", 33))


JELLYFISH = shutil.which("jellyfish")


def jellyfish_counts(path, k) -> Counter:
    assert JELLYFISH, "jellyfish is not on PATH: install it with 'apt-get install jellyfish'"
    database = path.with_suffix(".jf")
    subprocess.run([JELLYFISH, "count", "-m", str(k), "-C", "-s", "1M", "-o", str(database),
                    str(path)], check=True)
    dump = subprocess.run([JELLYFISH, "dump", "-c", str(database)], check=True,
                          capture_output=True, text=True).stdout
    return Counter({kmer: int(count) for kmer, count in (line.split() for line in dump.splitlines())})


@pytest.mark.parametrize("fastq", [False, True])
@pytest.mark.parametrize("k", [5, 21, 31])
def test_canonical_multiset_equals_jellyfish(tmp_path, fastq, k):
    rng = random.Random(k * 2 + fastq)
    text = random_genome_bytes(rng, records=20, length=400, fastq=fastq)
    if not fastq:
        text += b">crlf record\r\nACGTACGTTTGACCAGTAGGACAGATTACA\r\nAGGCTTACCGATTTACGGGAC\r\n"
    path = tmp_path / ("genome.fq" if fastq else "genome.fa")
    path.write_bytes(text)
    ours = Counter(as_strings(kmers(text, k), k))
    assert ours == jellyfish_counts(path, k)
    assert sum(ours.values()) > 100
