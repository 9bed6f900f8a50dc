"""Golden PQA: the hand-built tie cases, a sort-based reference, dictionaries, union."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kmerspec.golden.pqa import EMPTY, Pqa, queue_insert, union

THESIS_QUEUE = [(11, 9), (22, 7), (33, 7), (44, 5), (55, 3), (66, 2), (77, 2), (88, 1)]


@pytest.mark.parametrize("tag, value, expected", [
    (99, 6, [(11, 9), (22, 7), (33, 7), (99, 6), (44, 5), (55, 3), (66, 2), (77, 2)]),
    (99, 1, THESIS_QUEUE),                                             # not above the minimum
    (99, 2, [(11, 9), (22, 7), (33, 7), (44, 5), (55, 3), (66, 2), (77, 2), (99, 2)]),
    (66, 8, [(11, 9), (66, 8), (22, 7), (33, 7), (44, 5), (55, 3), (77, 2), (88, 1)]),
    (33, 8, [(11, 9), (33, 8), (22, 7), (44, 5), (55, 3), (66, 2), (77, 2), (88, 1)]),
    (66, 3, [(11, 9), (22, 7), (33, 7), (44, 5), (55, 3), (66, 3), (77, 2), (88, 1)]),
    (22, 7, [(11, 9), (33, 7), (22, 7), (44, 5), (55, 3), (66, 2), (77, 2), (88, 1)]),
    (22, 4, [(11, 9), (33, 7), (44, 5), (22, 4), (55, 3), (66, 2), (77, 2), (88, 1)]),  # lowered
    (11, 1, [(22, 7), (33, 7), (44, 5), (55, 3), (66, 2), (77, 2), (88, 1), (11, 1)]),
    (99, 9, [(11, 9), (99, 9), (22, 7), (33, 7), (44, 5), (55, 3), (66, 2), (77, 2)]),
])
def test_thesis_insertions(tag, value, expected):
    queue = list(THESIS_QUEUE)
    queue_insert(queue, tag, value)
    assert queue == expected


def test_eviction_takes_the_newest_of_equal_minimums():
    queue = [(1, 5), (2, 3), (3, 3), (4, 3)]
    queue_insert(queue, 9, 4)
    assert queue == [(1, 5), (9, 4), (2, 3), (3, 3)]
    queue_insert(queue, 8, 4)
    assert queue == [(1, 5), (9, 4), (8, 4), (2, 3)]


def test_empty_entries_never_match_and_fill_first():
    queue = [EMPTY] * 3
    queue_insert(queue, 0, 1)      # tag 0 is a real tag; the empty entries do not hold it
    assert queue == [(0, 1), EMPTY, EMPTY]
    queue_insert(queue, 0, 2)
    assert queue == [(0, 2), EMPTY, EMPTY]
    queue_insert(queue, 5, 2)
    queue_insert(queue, 6, 7)
    assert queue == [(6, 7), (0, 2), (5, 2)]


@pytest.mark.parametrize("value", [0, -1, 1 << 32])
def test_bad_values(value):
    with pytest.raises(ValueError, match="value"):
        queue_insert([EMPTY] * 2, 1, value)


def sorted_reference(operations, n):
    """An independent formulation: entries carry their placement time; sort by (-value, time)."""
    queue = []  # (tag, value, time)
    for time, (tag, value) in enumerate(operations):
        hit = [i for i, entry in enumerate(queue) if entry[0] == tag]
        if hit:
            queue[hit[0]] = (tag, value, time)
        elif len(queue) < n:
            queue.append((tag, value, time))
        else:
            smallest = max(range(n), key=lambda i: (-queue[i][1], queue[i][2]))
            if value <= queue[smallest][1]:
                continue
            queue[smallest] = (tag, value, time)
        queue.sort(key=lambda entry: (-entry[1], entry[2]))
    return [(tag, value) for tag, value, _ in queue] + [EMPTY] * (n - len(queue))


@settings(max_examples=1000, deadline=None)
@given(st.integers(1, 6), st.lists(st.tuples(st.integers(0, 9), st.integers(1, 6)), max_size=60))
def test_against_sort_reference(n, operations):
    queue = [EMPTY] * n
    for tag, value in operations:
        queue_insert(queue, tag, value)
    assert queue == sorted_reference(operations, n)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.integers(0, 3), st.integers(1, 50)), max_size=80))
def test_no_overflow_holds_the_last_value_of_every_tag(operations):
    """With at most n tags per queue nothing is discarded: a dictionary of last values."""
    pqa = Pqa(2, 4)
    last = {}
    for queue, tag, value in operations:
        pqa.insert(queue, tag, value)
        last[queue, tag] = value
    for queue in range(4):
        entries = [entry for entry in pqa.queues[queue] if entry[1]]
        assert sorted(entries) == sorted((tag, v) for (q, tag), v in last.items() if q == queue)
        assert [v for _, v in pqa.queues[queue]] == sorted((v for _, v in pqa.queues[queue]),
                                                           reverse=True)
    assert sorted(pqa.values()) == sorted(last.values())


def test_insert_hash_splits_queue_and_tag():
    pqa = Pqa(12, 8)
    pqa.insert_hash(0x46CB3C0B, 5)  # murmur3 seed 0 of (ACGT)x7+ACG: queue 3083, tag 0x46cb3
    assert pqa.queues[3083][0] == (0x46CB3, 5)
    assert pqa.values() == [5]


def test_union_adds_equal_tags_and_keeps_the_rest():
    p, q = Pqa(1, 3), Pqa(1, 3)
    for queue, tag, value in [(0, 1, 5), (0, 2, 3), (1, 7, 2)]:
        p.insert(queue, tag, value)
    for queue, tag, value in [(0, 2, 4), (0, 3, 1), (1, 8, 6), (1, 7, 1)]:
        q.insert(queue, tag, value)
    assert union(p, q) == [[(1, 5, 0), (2, 3, 4), (3, 0, 1)], [(7, 2, 1), (8, 0, 6)]]
    with pytest.raises(ValueError, match="shape"):
        union(p, Pqa(2, 3))


def test_shape_checks():
    with pytest.raises(ValueError, match="R"):
        Pqa(25, 8)
    with pytest.raises(ValueError, match="n"):
        Pqa(4, 0)
    with pytest.raises(ValueError, match="queues"):
        Pqa(1, 2, [[EMPTY, EMPTY]])
