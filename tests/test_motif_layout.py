"""kmerspec/kernels/motif.py: file packing keeps the k-mers of every file apart, the thresholds record,
and result decoding with its error checks."""

import struct

import pytest
from hypothesis import given, settings, strategies as st

from kmerspec.golden.motif import MotifParams
from kmerspec.golden.parse import genome_kmers
from kmerspec.kernels.motif import (ENTRY_BYTES, SUMMARY_MAGIC, Params, emerging_rows_from,
                                    pack_files, pack_thresholds, result_bytes, unpack_result)

LINES = st.sampled_from([b">h", b"@q", b"+", b"ACGT", b"acgtN", b"GG", b"", b"IIII", b"\r"])
FILES = st.lists(st.lists(LINES, max_size=8).map(b"\n".join), min_size=1, max_size=4)


@settings(max_examples=300, deadline=None)
@given(FILES, st.sampled_from([1, 2, 3, 5]), st.booleans())
def test_pack_files_keeps_kmers_of_every_file(files, k, final_newline):
    files = [data + b"\n" if final_newline else data for data in files]
    assert list(genome_kmers([pack_files(files)], k, canonical_form=False)) == \
        list(genome_kmers(files, k, canonical_form=False))


def test_pack_files_rejects_text():
    with pytest.raises(TypeError, match="bytes"):
        pack_files(["ACGT"])


def test_thresholds_record():
    params = MotifParams(kmin=3, kmax=5, thresholds=(7, 8, 9))
    record = pack_thresholds(params)
    assert len(record) == 64
    assert struct.unpack("<32H", record)[:6] == (0, 0, 7, 8, 9, 0)
    with pytest.raises(ValueError, match="counter_bits"):
        pack_thresholds(MotifParams(counter_bits=20))


def _result(params, entries):
    """A result buffer with ``entries`` {(lane, set, way): (word, e, flags, pointer, c)}."""
    size = result_bytes(params)
    buffer = bytearray(size)
    for (lane, set_index, way), fields in entries.items():
        offset = ((lane * params.store_sets + set_index) * params.store_ways + way) * ENTRY_BYTES
        struct.pack_into("<QHBBI", buffer, offset, *fields)
    struct.pack_into("<IBBBB6Q", buffer, size - 64, SUMMARY_MAGIC, params.kmin, params.kmax,
                     params.store_ways, params.set_bits, 1, 2, 3, 4, 5, 6)
    return bytes(buffer)


def test_unpack_result():
    params = Params(kmin=3, kmax=4, store_sets=2, store_ways=3)
    assert result_bytes(params) == 192 + 64
    buffer = _result(params, {(1, 1, 2): (0b00011011, 9, 3, 1, 4),
                              (0, 0, 0): (0b000110, 5, 1, 0, 7)})
    result = unpack_result(buffer, params)
    assert (result.test_bases, result.test_cycles, result.control_bases, result.control_cycles,
            result.test_bytes, result.control_bytes) == (1, 2, 3, 4, 5, 6)
    entry = result.entries[-1]
    assert (entry.k, entry.set_index, entry.way, entry.valid, entry.emerging, entry.next_victim,
            entry.estimate, entry.control_count) == (4, 1, 2, True, True, 1, 9, 4)
    # only valid and emerging entries are rows
    assert [tuple(row) for row in emerging_rows_from(result)] == [(4, "ACGT", 9, 4)]


def test_unpack_result_errors():
    params = Params(kmin=3, kmax=4, store_sets=2, store_ways=3)
    buffer = _result(params, {})
    with pytest.raises(ValueError, match="expected 256"):
        unpack_result(buffer[:100], params)
    with pytest.raises(ValueError, match="magic"):
        unpack_result(bytes(len(buffer)), params)
    with pytest.raises(ValueError, match="built for"):
        unpack_result(buffer, Params(kmin=4, kmax=5, store_sets=2, store_ways=3))
