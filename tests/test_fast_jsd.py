"""Fast JSD backend == golden: hashes, Count-Min and PQA loops, whole engine (hypothesis)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from host.fast.hashing import murmur3_32_array
from host.fast.jsd import build_pqa_fast, build_state_fast, pqa_from_arrays, pqa_to_arrays
from host.fast.native import native
from kmerspec.golden.countmin import CountMin
from kmerspec.golden.hashes import murmur3_32
from kmerspec.golden.jsd import JsdParams, build_pqa_files, build_state
from kmerspec.golden.parse import genome_kmers
from kmerspec.golden.pqa import Pqa

MAX32 = (1 << 32) - 1
# Mostly bases, with every byte class the parser cares about now and then.
_ALPHABET = b"ACGT" * 12 + b"acgt" * 2 + b"N\n>@+\r\n\n"
GENOME_BYTES = (st.integers(0, 600)
                .flatmap(lambda size: st.binary(min_size=size, max_size=size))
                .map(lambda raw: bytes(_ALPHABET[byte % 64] for byte in raw)))
SMALL_K = st.one_of(st.integers(1, 8), st.integers(1, 32))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, (1 << 64) - 1), max_size=50), st.integers(0, MAX32))
def test_murmur3(words, seed):
    hashes = murmur3_32_array(np.array(words, dtype=np.uint64), seed)
    assert hashes.tolist() == [murmur3_32(word, seed) for word in words]


@settings(max_examples=1000, deadline=None)
@given(st.data(), st.integers(1, 5), st.integers(0, 3), st.sampled_from([2, 16, 32]),
       st.booleans())
def test_countmin_loop(data, depth, width_bits, counter_bits, conservative):
    width, limit = 1 << width_bits, (1 << counter_bits) - 1
    preload = data.draw(st.lists(st.sampled_from([0, 1, limit - 2, limit - 1, limit]),
                                 min_size=depth * width, max_size=depth * width))
    stream = data.draw(st.lists(st.lists(st.integers(0, width - 1), min_size=depth,
                                         max_size=depth), max_size=40))
    golden = CountMin(depth, max(width_bits, 1), counter_bits, lambda i: stream[i],
                      "cu" if conservative else "cm")
    golden.counters = [preload[r * width:(r + 1) * width] for r in range(depth)]
    expected = [golden.insert(i) for i in range(len(stream))]

    counters = np.array(preload, dtype=np.uint32).reshape(depth, width)
    indices = np.array(stream, dtype=np.uint32).reshape(len(stream), depth)
    estimates = np.empty(len(stream), dtype=np.uint32)
    native.cm_insert(counters, width, indices, estimates, limit, conservative)
    assert estimates.tolist() == expected
    assert counters.tolist() == golden.counters


@settings(max_examples=1000, deadline=None)
@given(st.integers(0, 2), st.integers(1, 8),
       st.lists(st.tuples(st.integers(0, 3), st.integers(0, 5),
                          st.one_of(st.integers(1, 6), st.integers(1, MAX32))), max_size=80))
def test_pqa_loop(R, n, operations):
    operations = [(queue % (1 << R), tag, value) for queue, tag, value in operations]
    golden = Pqa(R, n)
    for queue, tag, value in operations:
        golden.insert(queue, tag, value)
    tags, values = pqa_to_arrays(Pqa(R, n))
    columns = [np.array(column, dtype=np.uint32) for column in zip(*operations)] or \
        [np.empty(0, dtype=np.uint32)] * 3
    native.pqa_insert(tags, values, n, *columns)
    assert pqa_from_arrays(tags, values) == golden


def check_engine(files, params):
    golden = build_state(genome_kmers(files, params.k, canonical_form=params.canonical), params)
    fast = build_state_fast(files, params)
    assert fast.countmin.counters == golden.countmin.counters
    assert fast.pqa == golden.pqa


PARAMS = st.builds(JsdParams, k=SMALL_K, s=st.integers(0, 3), d=st.integers(1, 5),
                   cw=st.integers(1, 6), R=st.integers(0, 4), n=st.integers(1, 8),
                   update=st.sampled_from(["cu", "cm"]), canonical=st.booleans(),
                   sample_seed=st.integers(0, MAX32))


@settings(max_examples=400, deadline=None)
@given(st.lists(GENOME_BYTES, min_size=1, max_size=3), PARAMS)
def test_engine_random(files, params):
    check_engine(files, params)


def test_engine_adversarial(rng):
    repeated = b">r\n" + b"A" * 3000 + b"\n"
    few = b">f\n" + b"ACGTTGCA" * 400 + b"\n"
    check_engine([repeated], JsdParams(k=11, s=0))                      # one k-mer, 2990 times
    check_engine([repeated, few], JsdParams(k=5, s=0, R=0, n=3))         # all in one queue
    check_engine([few], JsdParams(k=4, s=0, d=1, cw=1, R=0, n=1, update="cm"))
    default = [b">g\n" + bytes(rng.choice(b"ACGT") for _ in range(30000))]
    check_engine(default, JsdParams(s=4))
    assert build_pqa_fast(default) == build_pqa_files(default)
    assert build_pqa_fast([]) == Pqa(12, 8)


def test_native_checks_its_arrays():
    counters = np.zeros((2, 4), dtype=np.uint32)
    estimates = np.empty(1, dtype=np.uint32)
    with pytest.raises(TypeError, match="indices"):
        native.cm_insert(counters, 4, np.zeros((1, 2), dtype=np.int64), estimates, MAX32, True)
    with pytest.raises(ValueError, match="depth"):
        native.cm_insert(counters, 4, np.zeros((1, 3), dtype=np.uint32), estimates, MAX32, True)
    with pytest.raises(ValueError, match="contiguous"):
        native.cm_insert(counters.T, 4, np.zeros((1, 2), dtype=np.uint32), estimates, MAX32, True)
    tags = np.zeros((2, 2), dtype=np.uint32)
    with pytest.raises(ValueError, match="sizes"):
        native.pqa_insert(tags, tags.copy(), 2, np.zeros(2, np.uint32), np.zeros(1, np.uint32),
                          np.ones(2, np.uint32))
