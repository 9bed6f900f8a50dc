"""host.fast.threads.map_largest_first: results in input order whatever the order of work, the
biggest items started first, errors raised at their place in the input; and the sketches of
files of very different sizes equal for every thread count."""

import random
import threading

import pytest

from host.fast.hll import sketch_genomes
from host.fast.kmers import genome_bytes
from host.fast.threads import map_largest_first
from host.reader import SequenceFile
from kmerspec.golden.hll import HllParams
from tests.genomes import random_genome_bytes


def test_results_in_input_order_work_largest_first():
    items = [3, 9, 1, 7, 5, 8, 2, 6, 4, 0]
    started: list = []
    lock = threading.Lock()
    in_step = threading.Barrier(2, timeout=30)

    def work(item):
        with lock:
            started.append(item)
        in_step.wait()  # the two threads hold one item each before either takes another
        return item * 10
    assert list(map_largest_first(work, items, cost=lambda item: item, threads=2)) == \
        [item * 10 for item in items]
    # two at a time, in decreasing cost: {9, 8}, then {7, 6}, ...
    assert [set(started[i:i + 2]) for i in range(0, 10, 2)] == \
        [{9, 8}, {7, 6}, {5, 4}, {3, 2}, {1, 0}]


def test_one_thread_keeps_input_order_and_laziness():
    taken: list = []

    def items():
        for item in (2, 5, 1):
            taken.append(item)
            yield item
    results = map_largest_first(lambda item: item + 1, items(), cost=lambda item: item,
                                threads=1)
    assert next(results) == 3 and taken == [2]
    assert list(results) == [6, 2]


def test_error_raised_at_its_place_in_the_input():
    def work(item):
        if item == "bad":
            raise ValueError(item)
        return item
    results = map_largest_first(work, ["a", "bb", "bad", "cccc"], cost=len, threads=3)
    assert next(results) == "a" and next(results) == "bb"
    with pytest.raises(ValueError, match="bad"):
        next(results)


def test_genome_bytes_counts_stored_bytes_and_puts_missing_files_first(tmp_path):
    small, big = tmp_path / "small.fa", tmp_path / "big.fa"
    small.write_bytes(b">a\nACGT\n")
    big.write_bytes(b">b\n" + b"ACGT" * 100 + b"\n")
    assert genome_bytes([SequenceFile(small)]) == 8
    assert genome_bytes([SequenceFile(small), SequenceFile(big), b"ACGTA"]) == 8 + 404 + 5
    assert genome_bytes([SequenceFile(tmp_path / "missing.fa")]) == float("inf")


def test_sketches_of_uneven_files_equal_for_every_thread_count(tmp_path):
    rng = random.Random(21)
    genomes = []
    for i, length in enumerate([300, 9000, 1200, 30000, 600, 4000, 15000]):
        path = tmp_path / f"g{i}.fa"
        path.write_bytes(random_genome_bytes(rng, records=2, length=length))
        genomes.append([SequenceFile(path)])
    params = HllParams(10, 4)
    one = [r.tolist() for r in sketch_genomes(genomes, 21, params, threads=1)]
    for threads in (2, 3):
        assert [r.tolist() for r in sketch_genomes(genomes, 21, params, threads=threads)] == one
    assert len({tuple(r) for r in one}) == len(one)
