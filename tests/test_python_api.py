"""host.api beyond the session of docs/python.md (tests/test_docs_examples.py): nothing written
unless asked, mistakes raised as InputError with the command line's words, warnings as
SketchWarning, sequences in memory equal to the same sequences in files."""

import random
import warnings

import numpy as np
import pytest

import host.api as ksa
from tests.genomes import random_sequence


@pytest.fixture
def scratch(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_sequences_in_memory_sketch_as_the_same_files(scratch):
    rng = random.Random(9)
    texts = {"a": random_sequence(rng, 4000).decode(), "b": random_sequence(rng, 3000)}
    (scratch / "a").write_text(f">a\n{texts['a']}\n")
    (scratch / "b").write_bytes(b">b\n" + texts["b"] + b"\n")
    before = sorted(scratch.iterdir())
    from_files = ksa.sketch(["a", "b"], index_bits=10)
    in_memory = ksa.sketch_texts(texts, index_bits=10)
    assert sorted(scratch.iterdir()) == before            # nothing written
    assert in_memory.names == from_files.names == ["a", "b"]
    assert in_memory.params == from_files.params and in_memory.params["p"] == 10
    assert np.array_equal(in_memory.registers, from_files.registers)
    assert np.array_equal(ksa.dist(in_memory), ksa.dist(from_files))


def test_records_are_sketched_one_by_one(scratch):
    rng = random.Random(4)
    parts = [random_sequence(rng, 2000) for _ in range(3)]
    (scratch / "m.fa").write_bytes(b"".join(b">r%d x\n%s\n" % (i, p) for i, p in
                                            enumerate(parts)))
    records = ksa.sketch("m.fa", individual=True)
    assert records.names == ["r0", "r1", "r2"]
    whole = ksa.sketch("m.fa")
    assert np.array_equal(records.registers.max(axis=0), whole.registers[0])


@pytest.mark.parametrize("call, message", [
    (lambda: ksa.sketch(["missing.fa"]), "missing.fa: no such file"),
    (lambda: ksa.sketch_texts({"a\tb": "ACGT"}), "contains the control character '\\t'"),
    (lambda: ksa.sketch_texts({"x": "ACGT", "y": "AC GT"}),
     "y: record 1, line 2: a space inside a sequence line (column 3)"),
    (lambda: ksa.sketch_texts([("x", "ACGT"), ("x", "ACGT")]), "x: given twice"),
    (lambda: ksa.sketch_texts({"x": "ACGT"}, index_bits=30),
     "hll sketches: p must be an integer from 8 to 18, not 30"),
    (lambda: ksa.sketch("m.fa", individual=True, min_count=2),
     "min_count=: counts k-mers over a read set, but with individual= each record"),
    (lambda: ksa.dist(ksa.sketch_texts({"x": "ACGTTGCA" * 8}), metric="cosine"), "metric='cosine'"),
    (lambda: ksa.cluster(ksa.sketch_texts({"x": "ACGTTGCA" * 8}), ani=101), "ani=101"),
    (lambda: ksa.edges(ksa.sketch_texts({"x": "ACGTTGCA" * 8}), metric="ani", threshold=101),
     "threshold=101"),
    (lambda: ksa.edges(ksa.sketch_texts({"x": "ACGTTGCA" * 8}), top=0), "top=0"),
])
def test_mistakes_raise_input_error_with_the_command_line_s_words(scratch, call, message):
    (scratch / "m.fa").write_text(">a\nACGT\n")
    with pytest.raises(ksa.InputError) as raised:
        call()
    assert message in str(raised.value)


def test_a_genome_without_k_mers_is_a_sketch_warning(scratch):
    (scratch / "short.fa").write_text(">s\nACGT\n")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        genomes = ksa.sketch(["short.fa"])
    assert len(genomes) == 1
    assert [str(w.message) for w in caught if w.category is ksa.SketchWarning] == [
        "short.fa: no k-mer of length 31"]
