"""Golden Count-Min: exact counts without collisions, hand-built CU/CM cases, saturation."""

from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kmerspec.golden.countmin import CountMin, h3_row_indices, murmur3_row_indices
from kmerspec.golden.hashes import h3_seed_words


def table_indices(table: dict[int, list[int]]):
    return lambda word: table[word]


def test_thesis_row_indices():
    # Buckets of the canonical 31-mer (ACGT)x7+ACG under murmur3 seeds 0..4, from the reference.
    assert murmur3_row_indices(5, 14)(0x06C6C6C6C6C6C6C6) == [15371, 9138, 15541, 4433, 7603]
    assert murmur3_row_indices(5, 14)(0) == [11004, 9341, 10446, 5247, 12605]


@pytest.mark.parametrize("update", ["cu", "cm"])
def test_exact_without_collisions(rng, update):
    keys = [rng.getrandbits(62) for _ in range(40)]
    indexer = murmur3_row_indices(4, 14)
    for row in range(4):  # the premise: no two keys share a counter in any row
        assert len({indexer(key)[row] for key in keys}) == len(keys)
    stream = [rng.choice(keys) for _ in range(2000)]
    sketch = CountMin(4, 14, 32, indexer, update)
    seen = Counter()
    for key in stream:
        seen[key] += 1
        assert sketch.insert(key) == seen[key]
    for key in keys:
        assert sketch.query(key) == seen[key]
        assert [sketch.counters[row][index] for row, index in enumerate(indexer(key))] == \
            [seen[key]] * 4
    assert sum(sketch.counters[0]) == len(stream)


def test_conservative_and_plain_update_by_hand():
    table = {1: [0, 0], 2: [0, 1], 3: [1, 1]}
    cu = CountMin(2, 1, 32, table_indices(table), "cu")
    cm = CountMin(2, 1, 32, table_indices(table), "cm")
    assert [cu.insert(key) for key in (1, 2)] == [1, 1]
    assert cu.counters == [[1, 0], [1, 1]]  # row 0 held 2 after +1 > e = 1: not written
    assert [cm.insert(key) for key in (1, 2)] == [1, 1]
    assert cm.counters == [[2, 0], [1, 1]]


def test_conservative_update_writes_only_the_minimum():
    table = {1: [0, 0], 2: [0, 1], 3: [1, 1]}
    cu = CountMin(2, 1, 32, table_indices(table), "cu")
    for key in (1, 2):
        cu.insert(key)
    # state [[1, 0], [1, 1]]; key 3 reads C0[1] = 0, C1[1] = 1: v = [1, 2], e = 1
    assert cu.insert(3) == 1
    assert cu.counters == [[1, 1], [1, 1]]
    # key 1 reads [1, 1]: v = [2, 2], both written
    assert cu.insert(1) == 2
    assert cu.counters == [[2, 1], [2, 1]]


@pytest.mark.parametrize("update", ["cu", "cm"])
def test_saturation(update):
    sketch = CountMin(3, 2, 2, table_indices({7: [0, 1, 2], 8: [0, 0, 0]}), update)
    assert [sketch.insert(7) for _ in range(5)] == [1, 2, 3, 3, 3]
    assert [row[i] for row, i in zip(sketch.counters, [0, 1, 2])] == [3, 3, 3]
    assert sketch.insert(8) == 1  # v = [3 (saturated), 1, 1]
    assert [row[0] for row in sketch.counters] == [3, 1, 1]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(0, 63), max_size=200), st.integers(1, 4), st.integers(1, 3),
       st.integers(2, 6))
def test_cu_below_cm_and_never_under(stream, depth, width_bits, counter_bits):
    matrices = [h3_seed_words(6, width_bits, row) for row in range(depth)]
    cu = CountMin(depth, width_bits, counter_bits, h3_row_indices(matrices), "cu")
    cm = CountMin(depth, width_bits, counter_bits, h3_row_indices(matrices), "cm")
    seen = Counter()
    limit = (1 << counter_bits) - 1
    for key in stream:
        seen[key] += 1
        estimate_cu, estimate_cm = cu.insert(key), cm.insert(key)
        assert min(seen[key], limit) <= estimate_cu <= estimate_cm <= limit
    for row_cu, row_cm in zip(cu.counters, cm.counters):
        assert all(a <= b for a, b in zip(row_cu, row_cm))


@pytest.mark.parametrize("kwargs", [dict(depth=0), dict(width_bits=0), dict(width_bits=25),
                                    dict(counter_bits=33), dict(update="max")])
def test_bad_parameters(kwargs):
    args = dict(depth=2, width_bits=4, counter_bits=16, update="cu") | kwargs
    name = next(iter(kwargs))
    with pytest.raises(ValueError, match=name):
        CountMin(args["depth"], args["width_bits"], args["counter_bits"],
                 murmur3_row_indices(2, 4), args["update"])
