"""Golden minimum-count prefilter (SPEC 7): never drops a k-mer seen m times, exact without
collisions, conservative-update false passes by hand, saturation, m = 1 untouched."""

from collections import Counter

import pytest

from kmerspec.golden.countmin import CountMin, murmur3_row_indices
from kmerspec.golden.hll import Hll, HllParams
from kmerspec.golden.mincount import MinCountParams, min_count_counter, passing_kmers
from kmerspec.golden.parse import kmers


def first_passes(stream, params):
    """The k-mers that entered, in order, and the occurrence at which each first entered
    (one k-mer at a time through passing_kmers with one shared counter)."""
    counter, seen, out, first = min_count_counter(params), Counter(), [], {}
    for kmer in stream:
        seen[kmer] += 1
        if list(passing_kmers([kmer], params, counter)) == [kmer]:
            out.append(kmer)
            first.setdefault(kmer, seen[kmer])
    return out, first


def test_m1_is_every_kmer_and_no_counter():
    stream = [5, 7, 5, 9]
    assert list(passing_kmers(stream, MinCountParams())) == stream
    assert not MinCountParams().active and MinCountParams().record() == {}


@pytest.mark.parametrize("m", [2, 3, 5])
def test_exact_without_collisions(rng, m):
    keys = [rng.getrandbits(62) for _ in range(60)]
    params = MinCountParams(min_count=m, mc_depth=3, mc_width_bits=16)
    indexer = murmur3_row_indices(3, 16)
    assert all(len({indexer(key)[row] for key in keys}) == len(keys) for row in range(3))
    stream = [rng.choice(keys) for _ in range(600)]
    out, first = first_passes(stream, params)
    counts = Counter(stream)
    assert set(out) == {key for key, count in counts.items() if count >= m}
    assert all(occurrence == m for occurrence in first.values())
    # every occurrence from the m-th on enters
    assert len(out) == sum(count - m + 1 for count in counts.values() if count >= m)


@pytest.mark.parametrize("m", [2, 3])
def test_never_drops_a_kmer_seen_m_times(rng, m):
    """A tiny Count-Min (many collisions): false passes happen, false drops never."""
    params = MinCountParams(min_count=m, mc_depth=2, mc_width_bits=4)
    stream = [rng.getrandbits(62) for _ in range(300)]
    stream += [rng.choice(stream) for _ in range(300)]
    rng.shuffle(stream)
    counter = min_count_counter(params)
    out = set(passing_kmers(stream, params, counter))
    counts = Counter(stream)
    assert {key for key, count in counts.items() if count >= m} <= out
    assert any(counts[key] < m for key in out), "the premise: collisions make false passes"
    # the state a hardware test compares: every counter is one of the Count-Min's, never above
    # the number of insertions it saw
    assert all(value <= len(stream) for row in counter.counters for value in row)


def test_conservative_update_by_hand():
    """Rows indexed by a table: key 4 shares row 0 with 3 and row 1 with 2."""
    table = {2: [0, 1], 3: [1, 0], 4: [1, 1]}
    counter = CountMin(2, 1, 8, lambda word: table[word], "cu")
    params = MinCountParams(min_count=2, mc_depth=2, mc_width_bits=1)
    # 2: v=(1,1) -> C=[[1,0],[0,1]]; 3: v=(1,1) -> C=[[1,1],[1,1]];
    # 4: v=(2,2), e=2: seen once, yet it passes (a false pass), C=[[1,2],[1,2]]
    assert list(passing_kmers([2, 3, 4], params, counter)) == [4]
    assert counter.counters == [[1, 2], [1, 2]]
    # 2 again reads (1, 2): only row 0 holds the minimum and only row 0 is written
    assert list(passing_kmers([2], params, counter)) == [2]
    assert counter.counters == [[2, 2], [1, 2]]


def test_saturation():
    params = MinCountParams(min_count=3, mc_depth=2, mc_width_bits=4, mc_counter_bits=2)
    counter = min_count_counter(params)
    out = list(passing_kmers([42] * 10, params, counter))
    assert out == [42] * 8
    assert sorted(value for row in counter.counters for value in row if value) == [3, 3]


def test_seed_shifts_the_rows():
    word = 0x06C6C6C6C6C6C6C6
    assert murmur3_row_indices(3, 14, seed=2)(word) == murmur3_row_indices(5, 14)(word)[2:]


def test_params_errors_and_record():
    with pytest.raises(ValueError, match=r"^min_count must be at most 2\^mc_counter_bits - 1 "
                                         r"= 3, not 4$"):
        MinCountParams(min_count=4, mc_counter_bits=2)
    with pytest.raises(ValueError, match=r"^mc_depth must be an integer from 1 to 16, not 0$"):
        MinCountParams(min_count=2, mc_depth=0)
    params = MinCountParams(min_count=2, mc_width_bits=12, mc_seed=7)
    assert MinCountParams.from_record(params.record()) == params


def test_reads_hll_keeps_solid_kmers(rng):
    """Reads of a genome with one erroneous read: m = 2 keeps the genome's k-mers and drops
    the error's, so the HLL equals that of the error-free k-mers seen twice."""
    genome = "".join(rng.choice("ACGT") for _ in range(300))
    reads = [genome[i:i + 60] for i in range(0, 241, 20)]
    bad = list(reads[3])
    bad[30] = "A" if bad[30] != "A" else "C"
    data = "".join(f"@r{i}\n{read}\n+\n{'I' * len(read)}\n"
                   for i, read in enumerate(reads + ["".join(bad)])).encode()
    k = 21
    params = MinCountParams(min_count=2)
    hll = Hll(HllParams(p=10)).update(passing_kmers(kmers(data, k), params))
    counts = Counter(kmers(data, k))
    expected = Hll(HllParams(p=10)).update(key for key, count in counts.items() if count >= 2)
    assert hll.registers == expected.registers
