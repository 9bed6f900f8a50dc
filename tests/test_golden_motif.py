"""Golden emerging-motif engine: parameters, store replacement, exact counting on small inputs,
saturation, strands and sequences of any length."""

from collections import Counter
from fractions import Fraction

import pytest

from kmerspec.golden.hashes import h3
from kmerspec.golden.motif import (HeavyHitterStore, MotifParams, MotifRow, find_motifs, kmer_string,
                               run_engine)
from kmerspec.golden.parse import genome_kmers, reverse_complement
from tests.genomes import random_sequence


def fasta(*sequences: bytes) -> bytes:
    return b"".join(b">s%d\n%s\n" % (i, s) for i, s in enumerate(sequences))


def test_defaults():
    params = MotifParams()
    assert (params.kmin, params.kmax, params.d, params.cw) == (10, 20, 4, 14)
    assert params.counter_bits == 16
    assert params.thresholds == (10,) * 11 and params.growth_q8 == 512
    assert (params.store_sets, params.store_ways, params.canonical) == (64, 4, False)


@pytest.mark.parametrize("kwargs, name", [
    (dict(kmin=0), "kmin"), (dict(kmax=33), "kmax"), (dict(kmin=12, kmax=11), "kmin"),
    (dict(d=0), "d"), (dict(cw=0), "cw"), (dict(store_sets=48), "store_sets"),
    (dict(store_ways=0), "store_ways"), (dict(thresholds=0), "thresholds"),
    (dict(thresholds=(5, 6)), "thresholds"), (dict(thresholds=1 << 16), "thresholds"),
    (dict(growth=1.3), "growth"), (dict(growth=0), "growth"),
    (dict(counter_bits=0), "counter_bits"),
])
def test_bad_parameters(kwargs, name):
    with pytest.raises(ValueError, match=name):
        MotifParams(**kwargs)


def test_growth_and_thresholds_per_k():
    params = MotifParams(kmin=3, kmax=5, thresholds=(7, 8, 9), growth=1.5)
    assert params.growth_q8 == 384 and params.threshold(4) == 8
    assert params.is_emerging(4, 9, 6) and not params.is_emerging(4, 8, 6)
    assert not params.is_emerging(4, 7, 0)  # below T_4
    assert MotifParams(growth=Fraction(5, 256)).growth_q8 == 5
    with pytest.raises(TypeError, match="growth"):
        MotifParams(growth="2")


def test_kmer_string():
    assert kmer_string(0b00011011, 4) == "ACGT"
    assert kmer_string(0, 3) == "AAA"


def test_store_round_robin_replacement():
    store = HeavyHitterStore(1, 2, [0] * 8)  # one set: every key maps to it
    for word, value in [(1, 5), (2, 6), (3, 7)]:
        store.record(word, value)
    assert store.kmers == [[3, 2]] and store.values == [[7, 6]] and store.next_victim == [1]
    store.record(1, 8)
    assert store.kmers == [[3, 1]] and store.next_victim == [0]
    store.record(3, 9)  # hit: value only
    assert store.kmers == [[3, 1]] and store.values == [[9, 8]] and store.next_victim == [0]
    store.count_control(3)
    store.count_control(4)
    assert store.control_counts == [[1, 0]]
    store.record(5, 10)  # evicts way 0 and clears its control count
    assert store.entries() == [(5, 10, 0), (1, 8, 0)]


def test_store_set_index_is_h3():
    seed_words = [0b01, 0b10, 0b11, 0b00]
    store = HeavyHitterStore(4, 1, seed_words)
    for word in range(16):
        store.record(word, word + 1)
        assert store.find(word) == (h3(word, seed_words), 0)


def exact_rows(test: bytes, control: bytes, params: MotifParams) -> list[MotifRow]:
    rows = []
    for k in params.ks:
        test_counts = Counter(genome_kmers([test], k, canonical_form=params.canonical))
        control_counts = Counter(genome_kmers([control], k, canonical_form=params.canonical))
        rows += [MotifRow(k, kmer_string(word, k), count, control_counts[word])
                 for word, count in test_counts.items()
                 if params.is_emerging(k, count, control_counts[word])]
    return sorted(rows, key=lambda row: (row.k, -row.test_estimate, row.kmer))


@pytest.mark.parametrize("canonical", [False, True])
def test_exact_on_small_inputs(rng, canonical):
    """No counter shared and no set full: the engine is exact counting plus the rule."""
    motif, weak = b"ACGTTGCAAGTCA", b"GGATCCTTAG"
    flanks = [random_sequence(rng, 12) for _ in range(3)]
    tests = [flanks[i % 3] + (motif if i % 2 else weak) + flanks[i % 2] for i in range(12)]
    controls = [flanks[0] + random_sequence(rng, 10) + (weak if i < 3 else b"") for i in range(6)]
    params = MotifParams(kmin=10, kmax=12, cw=18, thresholds=(3, 3, 2), store_sets=64,
                         store_ways=32, canonical=canonical)
    test, control = fasta(*tests), fasta(*controls)
    sketches = run_engine([test], [control], params)
    for sketch in sketches:  # the premises: no shared counter, no eviction
        words = set(genome_kmers([test], sketch.k, canonical_form=canonical))
        for row in range(params.d):
            assert len({sketch.countmin.row_indices(w)[row] for w in words}) == len(words)
        assert all(False in valid for valid in sketch.store.valid)
        assert sketch.store.next_victim == [0] * 64
    rows = find_motifs([test], [control], params)
    assert rows == exact_rows(test, control, params)
    assert MotifRow(10, "ACGTTGCAAG", 6, 0) in rows or canonical
    assert any(row.control_count > 0 for row in rows)
    assert all(row.control_count * 2 <= row.test_estimate for row in rows)


def test_canonical_counts_both_strands():
    word = b"AACCGGTTAC"
    reverse = kmer_string(reverse_complement(next(genome_kmers([word], 10, canonical_form=False)),
                                             10), 10)
    test = fasta(word, reverse.encode(), word)
    strand = find_motifs([test], [b""], MotifParams(kmin=10, kmax=10, thresholds=2))
    both = find_motifs([test], [b""], MotifParams(kmin=10, kmax=10, thresholds=3, canonical=True))
    assert strand == [MotifRow(10, "AACCGGTTAC", 2, 0)]
    assert both == [MotifRow(10, min("AACCGGTTAC", reverse), 3, 0)]


def test_sequences_of_any_length_and_records():
    long_record = b">long\n" + b"\n".join([b"ACGTAC" * 10] * 50) + b"\n"
    short_records = b">a\nACG\n>b\nACGTA\n>c\n\n"
    rows = find_motifs([long_record + short_records], [], MotifParams(kmin=4, kmax=5, thresholds=3))
    counts = Counter(genome_kmers([long_record + short_records], 4, canonical_form=False))
    assert {row.kmer: row.test_estimate for row in rows if row.k == 4} == \
        {kmer_string(w, 4): c for w, c in counts.items()}


def test_saturation_of_16_bit_counters():
    test = b">poly\n" + b"A" * 65545 + b"\n"
    [sketch] = run_engine([test], [test], MotifParams(kmin=10, kmax=10, thresholds=65530))
    assert [row[index] for row, index in zip(sketch.countmin.counters,
                                              sketch.countmin.row_indices(0))] == [65535] * 4
    assert sketch.store.entries() == [(0, 65535, 65536)]  # control counts are 32-bit
    assert find_motifs([test], [], MotifParams(kmin=10, kmax=10, thresholds=65535)) == \
        [MotifRow(10, "A" * 10, 65535, 0)]
