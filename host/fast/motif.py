"""Fast emerging-motif engine, state-identical to kmerspec.golden.motif.

Per k: the k-mers of each file come block by block from the native parser
(host/fast/_kmer_stream.c); the test pass (H3 row and set hashes through byte tables, the
conservative updates and the heavy-hitter store, all order-dependent) is one compiled loop of
host/fast/_native.c; the control pass is a vectorised exact count of the stored k-mers.

Each file is read once, whatever the number of values of k: every block goes to the engine of
each k (a k-mer stream of its own per k), the engines working on it in parallel threads, so a
pipe is read as it arrives and memory is bounded by the block, not by the file: at most
:data:`MOTIF_BLOCK_BYTES` of text and, per k, its k-mer words (8 bytes a base: 11 values of k
at 1 MiB hold 88 MiB), besides the engines' Count-Min and store: :func:`memory_budget`
(docs/cli.md, "Memory of motifs", measures it on a 200 MB FASTA).
"""

import contextlib
from collections.abc import Callable

import numpy as np

from kmerspec.golden.countmin import CountMin, h3_row_indices
from kmerspec.golden.motif import (CONTROL_COUNT_BITS, HeavyHitterStore, MotifParams, MotifRow,
                            MotifSketch, emerging_rows)
from .hashing import H3Tables
from .kmers import file_blocks, file_stream, naming_file, record_bases
from .native import native
from .threads import thread_count

__all__ = ["run_engine_fast", "find_motifs_fast", "memory_budget", "MOTIF_BLOCK_BYTES"]



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

    def start_control(self) -> None:
        """Before the control pass: the stored k-mers, sorted, and their counts, zero."""
        self._stored = self.valid.astype(bool)
        self._keys = np.sort(self.kmers[self._stored])
        self._counts = np.zeros(self._keys.size, dtype=np.uint64)

    def control_pass(self, words: np.ndarray) -> None:
        """Exact occurrence counts of the stored k-mers (stored words are distinct) in
        ``words``."""
        if self._keys.size:
            native.count_matches(words, self._keys, self._counts)

    def finish_control(self) -> None:
        saturated = np.minimum(self._counts, np.uint64((1 << CONTROL_COUNT_BITS) - 1))
        self.control[self._stored] = saturated[np.searchsorted(self._keys,
                                                               self.kmers[self._stored])]

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


#: the text each file is read in, per step of every engine
MOTIF_BLOCK_BYTES = 1 << 20
#: the interpreter, numpy and the native module, as ``python -m host motifs`` holds them
#: (48 MB measured on a 20 kB input)
MOTIF_BASE_BYTES = 64 << 20


def memory_budget(params: MotifParams) -> int:
    """The most memory ``motifs`` on the sw backend takes, whatever its inputs' size: the base,
    and per value of k one block's k-mer words (8 bytes a base), its Count-Min (d x 2^cw 32-bit
    counters) and its store (k-mer, value, valid, control count a way). With the defaults (11
    values of k, d = 4, cw = 14, 64 x 4 store): 64 MiB + 11 x 8.3 MiB = 155 MiB; measured
    127 MiB (130,164 KB) on a 202.5 MB FASTA (docs/cli.md, "Memory of motifs")."""
    per_k = (8 * MOTIF_BLOCK_BYTES + params.d * (4 << params.cw)
             + params.store_sets * params.store_ways * 17)
    return MOTIF_BASE_BYTES + len(params.ks) * per_k


def _feed(file, engines: list[_SketchArrays], step: Callable, pool) -> int:
    """Every block of ``file`` to every engine (``step(engine, words)``), in order per engine,
    the engines of a block in parallel; returns the k-mers of the first engine (its smallest
    k). A file that asks for the input check (host.reader.SequenceFile) has it in every
    engine's stream: the check also drops the spaces at line ends (SPEC 1.1), which each
    stream's parse needs."""
    canonical = engines[0].params.canonical
    streams = [file_stream(file, engine.k, canonical) for engine in engines]
    outputs = [np.empty(0, dtype=np.uint64) for _ in engines]
    first_kmers = 0

    def one(index: int, block) -> int:
        if outputs[index].size < len(block):
            outputs[index] = np.empty(len(block), dtype=np.uint64)
        count = streams[index].kmers(block, outputs[index])
        step(engines[index], outputs[index][:count])
        return count

    with contextlib.ExitStack() as finishing:
        for stream in streams:
            finishing.enter_context(naming_file(file, stream))
        for block in file_blocks(file, MOTIF_BLOCK_BYTES):
            counts = (list(pool.map(one, range(len(engines)), [block] * len(engines)))
                      if pool is not None else [one(index, block) for index in range(len(engines))])
            first_kmers += counts[0]
    record_bases(file, streams[0])
    return first_kmers


def run_engine_fast(test_files: list, control_files: list, params: MotifParams = MotifParams(),
                    threads: int | None = None, kmers_of_files: list | None = None
                    ) -> list[MotifSketch]:
    """Both passes for every k (``threads`` values of k at a time); equal, state for state, to
    kmerspec.golden.motif.run_engine. Files are bytes or streamable host.reader.SequenceFile,
    each read once. ``kmers_of_files``, a list, gets the number of k-mers of length kmin of
    each test file, then of each control file."""
    engines = [_SketchArrays(k, params) for k in params.ks]
    threads = min(thread_count(threads), len(engines))
    pool = None
    if threads > 1:
        from concurrent.futures import ThreadPoolExecutor  # here: one thread does without it
        pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="motif")
    try:
        found = [_feed(file, engines, _SketchArrays.test_pass, pool) for file in test_files]
        for engine in engines:
            engine.start_control()
        found += [_feed(file, engines, _SketchArrays.control_pass, pool)
                  for file in control_files]
    finally:
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)
    for engine in engines:
        engine.finish_control()
    if kmers_of_files is not None:
        kmers_of_files.extend(found)
    return [engine.to_golden() for engine in engines]


def find_motifs_fast(test_files: list, control_files: list,
                     params: MotifParams = MotifParams(), threads: int | None = None,
                     kmers_of_files: list | None = None) -> list[MotifRow]:
    """Emerging k-mers of the test files against the control files (bytes of FASTA/FASTQ, or
    host.reader.SequenceFile handles, each read once).

    Returns MotifRow(k, k-mer string, test estimate, control count) per emerging k-mer, sorted
    by k ascending, test estimate descending, then k-mer string; == kmerspec.golden.motif.find_motifs.
    ``kmers_of_files``: see :func:`run_engine_fast`.
    """
    return emerging_rows(run_engine_fast(test_files, control_files, params, threads,
                                         kmers_of_files), params)
