"""Fast emerging-motif backend == golden: H3 tables, store loop, whole engine state (hypothesis)."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from host.fast.hashing import H3Tables
from host.fast.motif import find_motifs_fast, run_engine_fast
from host.fast.native import native
from kmerspec.golden.hashes import h3, h3_seed_words
from kmerspec.golden.motif import HeavyHitterStore, MotifParams, find_motifs, run_engine
from tests.test_fast_jsd import GENOME_BYTES


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 64), st.lists(st.integers(0, 32), min_size=1, max_size=6),
       st.lists(st.integers(0, (1 << 64) - 1), max_size=30), st.integers(0, 99))
def test_h3_tables(key_bits, widths, words, seed):
    matrices = [h3_seed_words(key_bits, width, row, seed) for row, width in enumerate(widths)]
    words = [word & ((1 << key_bits) - 1) for word in words]
    hashes = H3Tables(matrices, widths).hashes(np.array(words, dtype=np.uint64))
    assert [h.tolist() for h in hashes] == [[h3(w, m) for w in words] for m in matrices]


@settings(max_examples=1000, deadline=None)
@given(st.integers(0, 3), st.integers(1, 4),
       st.lists(st.tuples(st.integers(0, 12), st.integers(1, 65535)), max_size=60))
def test_store_loop(set_bits, ways, operations):
    seed_words = h3_seed_words(4, set_bits, 255)
    golden = HeavyHitterStore(1 << set_bits, ways, seed_words)
    for word, estimate in operations:
        golden.record(word, estimate)
    shape = (1 << set_bits, ways)
    kmers, values = np.zeros(shape, np.uint64), np.zeros(shape, np.uint32)
    valid, control = np.zeros(shape, np.uint8), np.zeros(shape, np.uint32)
    next_victim = np.zeros(1 << set_bits, np.uint32)
    words = np.array([word for word, _ in operations], dtype=np.uint64)
    sets = np.array([golden.set_index(word) for word, _ in operations], dtype=np.uint32)
    estimates = np.array([estimate for _, estimate in operations], dtype=np.uint32)
    native.store_record(kmers, values, valid, control, next_victim, ways, sets, words, estimates)
    assert valid.astype(bool).tolist() == golden.valid
    assert kmers.tolist() == golden.kmers and values.tolist() == golden.values
    assert next_victim.tolist() == golden.next_victim


def check_engine(test_files, control_files, params):
    golden = run_engine(test_files, control_files, params)
    fast = run_engine_fast(test_files, control_files, params)
    for sketch_golden, sketch_fast in zip(golden, fast, strict=True):
        assert sketch_fast.k == sketch_golden.k
        assert sketch_fast.countmin.counters == sketch_golden.countmin.counters
        assert vars(sketch_fast.store) == vars(sketch_golden.store)
    assert find_motifs_fast(test_files, control_files, params) == \
        find_motifs(test_files, control_files, params)


@st.composite
def motif_params(draw):
    kmin = draw(st.integers(1, 12))
    kmax = draw(st.integers(kmin, min(kmin + 2, 32)))
    counter_bits = draw(st.integers(2, 16))
    thresholds = tuple(draw(st.integers(1, min(6, (1 << counter_bits) - 1)))
                       for _ in range(kmax - kmin + 1))
    return MotifParams(kmin=kmin, kmax=kmax, d=draw(st.integers(1, 4)), cw=draw(st.integers(1, 8)),
                       counter_bits=counter_bits, thresholds=thresholds,
                       growth=draw(st.sampled_from([1, 1.5, 2, 3])),
                       store_sets=1 << draw(st.integers(0, 3)), store_ways=draw(st.integers(1, 4)),
                       canonical=draw(st.booleans()), h3_seed=draw(st.integers(0, 3)))


@settings(max_examples=300, deadline=None)
@given(st.lists(GENOME_BYTES, min_size=1, max_size=2), st.lists(GENOME_BYTES, max_size=2),
       motif_params())
def test_engine_random(test_files, control_files, params):
    check_engine(test_files, control_files, params)


def test_engine_adversarial(rng):
    repeated = b">r\n" + b"A" * 2000 + b"\n"
    check_engine([repeated], [repeated], MotifParams(kmin=8, kmax=9, thresholds=1))
    check_engine([repeated, b">x\nACGTTGCA" * 50], [b">c\nACGTTGCA\n"],
                 MotifParams(kmin=3, kmax=5, thresholds=2, store_sets=1, store_ways=2))
    random_test = b">t\n" + bytes(rng.choice(b"ACGT") for _ in range(5000))
    check_engine([random_test], [random_test[:2000]],
                 MotifParams(kmin=6, kmax=7, cw=6, thresholds=3, counter_bits=4))


def test_engine_saturates_16_bit_counters():
    test = b">poly\n" + b"A" * 65545 + b"\nACGTACGTACGT\n"
    check_engine([test], [test], MotifParams(kmin=10, kmax=10, thresholds=65530))


def test_engine_default_parameters_with_evictions(rng):
    test = b"".join(b">t%d\n%s\n" % (i, bytes(rng.choice(b"ACGT") for _ in range(200)))
                    for i in range(25))
    control = test[:len(test) // 3]
    params = MotifParams(thresholds=1)
    sketches = run_engine_fast([test], [control], params)
    assert all(any(sketch.store.next_victim) for sketch in sketches)  # every store evicted
    check_engine([test], [control], params)
