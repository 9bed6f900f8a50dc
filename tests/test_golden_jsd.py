"""Golden JSD engine: parameters, sampler, exact PQA contents without collisions, JSD sanity."""

from collections import Counter

import pytest

from kmerspec.golden.hashes import murmur3_32
from kmerspec.golden.jsd import (JsdParams, build_pqa, build_pqa_files, build_state, jsd_between,
                             jsd_between_fixed, sampled)
from kmerspec.golden.parse import genome_kmers
from tests.genomes import random_genome_bytes, random_sequence


def test_defaults():
    params = JsdParams()
    assert (params.k, params.s, params.sample_seed, params.d, params.cw, params.R, params.n,
            params.update, params.canonical) == (31, 10, 0x5A4D5053, 5, 14, 12, 8, "cu", True)


@pytest.mark.parametrize("name, value", [("k", 0), ("k", 33), ("s", -1), ("s", 33), ("d", 0),
                                         ("cw", 25), ("R", 25), ("n", 0), ("sample_seed", -1),
                                         ("update", "max"), ("k", 3.0), ("k", True)])
def test_bad_parameters(name, value):
    with pytest.raises(ValueError, match=name):
        JsdParams(**{name: value})


def test_canonical_must_be_bool():
    with pytest.raises(TypeError, match="canonical"):
        JsdParams(canonical=1)


def test_sampler(rng):
    words = [rng.getrandbits(62) for _ in range(40000)]
    assert all(sampled(word, JsdParams(s=0)) for word in words[:100])
    kept = [word for word in words if sampled(word, JsdParams(s=4))]
    assert abs(len(kept) - 2500) < 5 * 50  # binomial(40000, 1/16): sd ~ 48
    assert all(murmur3_32(word, 0x5A4D5053) & 15 == 0 for word in kept)
    other_seed = [word for word in words if sampled(word, JsdParams(s=4, sample_seed=1))]
    assert set(kept) != set(other_seed)


def test_exact_counts_without_collisions(rng):
    """No CM collision and no queue overflow: the PQA holds the exact count of every k-mer."""
    params = JsdParams(k=21, s=0, cw=18, R=12, n=8)
    genome = b">g\n" + random_sequence(rng, 100) * 3 + b"\n"
    words = list(genome_kmers([genome], params.k))
    counts = Counter(words)
    for row in range(params.d):  # the premises of the test
        assert len({murmur3_32(w, row) & 0x3FFFF for w in counts}) == len(counts)
    assert max(Counter(murmur3_32(w, 0) & 0xFFF for w in counts).values()) <= params.n
    state = build_state(words, params)
    expected = Counter()
    for word, count in counts.items():
        expected[murmur3_32(word, 0) & 0xFFF, murmur3_32(word, 0) >> 12] = count
    found = Counter({(queue, tag): value for queue, entries in enumerate(state.pqa.queues)
                     for tag, value in entries if value})
    assert found == expected
    assert sum(state.countmin.counters[0]) == len(words)


def test_files_equal_kmers(rng):
    params = JsdParams(k=15, s=2)
    files = [random_genome_bytes(rng, records=4, length=400),
             random_genome_bytes(rng, fastq=True)]
    assert build_pqa_files(files, params) == build_pqa(genome_kmers(files, 15), params)
    strand = JsdParams(k=15, s=2, canonical=False)
    assert build_pqa_files(files, strand) == build_pqa(
        genome_kmers(files, 15, canonical_form=False), strand)


def test_jsd_of_genomes(rng):
    params = JsdParams(k=21, s=3)
    base = random_sequence(rng, 20000)
    half = base[:10000] + random_sequence(rng, 10000)
    pqa_a = build_pqa_files([b">a\n" + base], params)
    pqa_b = build_pqa_files([b">b\n" + half], params)
    pqa_c = build_pqa_files([b">c\n" + random_sequence(rng, 20000)], params)
    assert jsd_between(pqa_a, pqa_a) == 0.0
    assert 0 <= jsd_between_fixed(pqa_a, pqa_a) <= 6.2e-6 * 2**24  # mantissas of 2 M p_i vs p_i
    assert 0.3 < jsd_between(pqa_a, pqa_b) < 0.7
    assert jsd_between(pqa_a, pqa_c) > 0.95
    assert abs(jsd_between_fixed(pqa_a, pqa_b) / 2**24 - jsd_between(pqa_a, pqa_b)) < 1e-5
    assert abs(jsd_between(pqa_a, pqa_b, "counts") - jsd_between(pqa_a, pqa_b)) < 0.05
    empty = build_pqa_files([b">e\nNNNN\n"], params)
    assert empty.values() == [] and jsd_between(pqa_a, empty) == 1.0
