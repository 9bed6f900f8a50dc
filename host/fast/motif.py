"""Fast emerging-motif engine, state-identical to kmerspec.golden.motif.

Per k: the k-mers of each file come block by block from the native parser
(host/fast/_kmer_stream.c); the test pass (H3 row and set hashes through byte tables, the
conservative updates and the heavy-hitter store, all order-dependent) is one compiled loop of
host/fast/_native.c; the control pass is a vectorised exact count of the stored k-mers. The values of k are independent engines and run in parallel threads.
"""

from collections.abc import Iterable

import numpy as np

from kmerspec.golden.countmin import CountMin, h3_row_indices
from kmerspec.golden.motif import (CONTROL_COUNT_BITS, HeavyHitterStore, MotifParams, MotifRow,
                            MotifSketch, emerging_rows)
from .hashing import H3Tables
from .kmers import kmer_blocks
from .native import native
from .threads import map_in_threads

__all__ = ["run_engine_fast", "find_motifs_fast"]



class _SketchArrays:
    """One k's Count-Min and store as numpy arrays (the layout of the compiled loops)."""

    def __init__(self, k: int, params: MotifParams):
        self.k = k
        self.params = params
        self.hashes = H3Tables(params.countmin_seed_words(k) + [params.store_seed_words(k)],
                               [params.cw] * params.d + [params.set_bits])
        # The byte tables of every H3 group as one (groups, key bytes, 256) array, and where
        # each output (rows, then the store set) sits in its group's packed word.
        self.h3_tables = np.ascontiguousarray(np.stack([np.stack(tables) for _, tables
                                                        in self.hashes.groups]))
        fields = sorted((position, group, offset, width)
                        for group, (members, _) in enumerate(self.hashes.groups)
                        for position, offset, width in members)
        self.h3_fields = np.array([field[1:] for field in fields], dtype=np.int64)
        self.counters = np.zeros((params.d, 1 << params.cw), dtype=np.uint32)
        slots = (params.store_sets, params.store_ways)
        self.kmers = np.zeros(slots, dtype=np.uint64)
        self.values = np.zeros(slots, dtype=np.uint32)
        self.valid = np.zeros(slots, dtype=np.uint8)
        self.control = np.zeros(slots, dtype=np.uint32)
        self.next_victim = np.zeros(params.store_sets, dtype=np.uint32)

    def test_pass(self, words: np.ndarray) -> None:
        """The Count-Min updates and store updates of ``words``, in order, in native code."""
        params = self.params
        native.motif_test_pass(words, self.h3_tables,
                               self.h3_fields, self.counters, 1 << params.cw,
                               (1 << params.counter_bits) - 1, params.threshold(self.k),
                               self.kmers, self.values, self.valid, self.control,
                               self.next_victim, params.store_ways)

    def control_pass(self, word_arrays: Iterable[np.ndarray]) -> None:
        """Exact occurrence counts of the stored k-mers (stored words are distinct)."""
        stored = self.valid.astype(bool)
        keys = np.sort(self.kmers[stored])
        counts = np.zeros(keys.size, dtype=np.uint64)
        if keys.size:
            for words in word_arrays:
                native.count_matches(words, keys, counts)
        saturated = np.minimum(counts, np.uint64((1 << CONTROL_COUNT_BITS) - 1))
        self.control[stored] = saturated[np.searchsorted(keys, self.kmers[stored])]

    def to_golden(self) -> MotifSketch:
        params = self.params
        countmin = CountMin(params.d, params.cw, params.counter_bits,
                            h3_row_indices(params.countmin_seed_words(self.k)), "cu")
        countmin.counters = self.counters.tolist()
        store = HeavyHitterStore(params.store_sets, params.store_ways,
                                 params.store_seed_words(self.k))
        store.valid = self.valid.astype(bool).tolist()
        store.kmers = self.kmers.tolist()
        store.values = self.values.tolist()
        store.control_counts = self.control.tolist()
        store.next_victim = self.next_victim.tolist()
        return MotifSketch(self.k, countmin, store)


def _run_one_k(k: int, test_files: list, control_files: list, params: MotifParams
               ) -> MotifSketch:
    arrays = _SketchArrays(k, params)
    for file in test_files:
        for words in kmer_blocks(file, k, params.canonical, copy=False):
            arrays.test_pass(words)
    arrays.control_pass(words for file in control_files
                        for words in kmer_blocks(file, k, params.canonical, copy=False))
    return arrays.to_golden()


def run_engine_fast(test_files: list, control_files: list, params: MotifParams = MotifParams(),
                    threads: int | None = None) -> list[MotifSketch]:
    """Both passes for every k (``threads`` values of k at a time); equal, state for state, to
    kmerspec.golden.motif.run_engine. Files are bytes or streamable host.reader.SequenceFile."""
    return list(map_in_threads(lambda k: _run_one_k(k, test_files, control_files, params),
                               params.ks, threads))


def find_motifs_fast(test_files: list, control_files: list,
                     params: MotifParams = MotifParams(), threads: int | None = None
                     ) -> list[MotifRow]:
    """Emerging k-mers of the test files against the control files (bytes of FASTA/FASTQ).

    Returns MotifRow(k, k-mer string, test estimate, control count) per emerging k-mer, sorted
    by k ascending, test estimate descending, then k-mer string; == kmerspec.golden.motif.find_motifs.
    """
    return emerging_rows(run_engine_fast(test_files, control_files, params, threads), params)
