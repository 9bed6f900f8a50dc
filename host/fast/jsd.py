"""Fast JSD engine: the PQA (and Count-Min) of a genome, identical to kmerspec.golden.jsd.

Parsing and sampling are one native pass per file (host/fast/_kmer_stream.c), holding only the
sampled k-mers; their Count-Min row hashes are vectorised, and the Count-Min and PQA insertions,
which depend on the order of the sampled k-mers, run in the compiled loops of
host/fast/_native.c.
"""

import numpy as np

from kmerspec.golden.countmin import CountMin
from kmerspec.golden.jsd import COUNTER_BITS, JsdParams, JsdState, new_countmin
from kmerspec.golden.pqa import Pqa
from .hashing import murmur3_32_array
from .kmers import sampled_kmer_array
from .native import native
from .threads import map_in_threads

__all__ = ["sample_kmers", "build_state_from_kmers", "build_state_fast", "build_pqa_fast",
           "build_pqas", "pqa_from_arrays", "pqa_to_arrays"]


def sample_kmers(words: np.ndarray, params: JsdParams) -> np.ndarray:
    """The words whose murmur3_32(word, sample_seed) has its low s bits zero, in order."""
    if params.s == 0:
        return words
    mask = np.uint32((1 << params.s) - 1)
    return words[(murmur3_32_array(words, params.sample_seed) & mask) == 0]


def pqa_from_arrays(tags: np.ndarray, values: np.ndarray) -> Pqa:
    """A golden Pqa from uint32 arrays of shape (2^R, n)."""
    queues = [list(zip(queue_tags, queue_values))
              for queue_tags, queue_values in zip(tags.tolist(), values.tolist())]
    return Pqa(tags.shape[0].bit_length() - 1, tags.shape[1], queues)


def pqa_to_arrays(pqa: Pqa) -> tuple[np.ndarray, np.ndarray]:
    """(tags, values), uint32 arrays of shape (2^R, n)."""
    entries = np.array(pqa.queues, dtype=np.uint32).reshape(1 << pqa.R, pqa.n, 2)
    return np.ascontiguousarray(entries[:, :, 0]), np.ascontiguousarray(entries[:, :, 1])


def build_state_from_kmers(sampled: np.ndarray, params: JsdParams) -> JsdState:
    """Count-Min and PQA after inserting already sampled k-mer words in order."""
    sampled = np.ascontiguousarray(sampled, dtype=np.uint64)
    row_hashes = [murmur3_32_array(sampled, row) for row in range(params.d)]
    indices = np.stack(row_hashes, axis=1) & np.uint32((1 << params.cw) - 1)
    counters = np.zeros((params.d, 1 << params.cw), dtype=np.uint32)
    estimates = np.empty(sampled.size, dtype=np.uint32)
    native.cm_insert(counters, 1 << params.cw, np.ascontiguousarray(indices), estimates,
                     (1 << COUNTER_BITS) - 1, params.update == "cu")

    h0 = row_hashes[0]  # the PQA hash is Count-Min row 0 (seed 0)
    tags = np.zeros((1 << params.R, params.n), dtype=np.uint32)
    values = np.zeros_like(tags)
    queue_index = h0 & np.uint32((1 << params.R) - 1)
    native.pqa_insert(tags, values, params.n, queue_index, h0 >> np.uint32(params.R), estimates)

    countmin: CountMin = new_countmin(params)
    countmin.counters = counters.tolist()
    return JsdState(countmin, pqa_from_arrays(tags, values))


def build_state_fast(files: list, params: JsdParams = JsdParams()) -> JsdState:
    """Count-Min and PQA of one genome given as its FASTA/FASTQ files (bytes, or streamable
    host.reader.SequenceFile)."""
    sampled = sampled_kmer_array(files, params.k, params.canonical, params.s, params.sample_seed)
    return build_state_from_kmers(sampled, params)


def build_pqa_fast(files: list[bytes], params: JsdParams = JsdParams()) -> Pqa:
    """The PQA of one genome (a kmerspec.golden.pqa.Pqa equal to kmerspec.golden.jsd.build_pqa_files).

    ``pqa.queues[q][j]`` is the (tag, value) of entry j of queue q, sorted by value descending,
    (0, 0) when empty; compare genomes with kmerspec.golden.jsd.jsd_between(pqa_p, pqa_q, mode).
    """
    return build_state_fast(files, params).pqa


def build_pqas(genomes, params: JsdParams = JsdParams(), threads: int | None = None):
    """The PQA of each genome (a list of files), in order, ``threads`` genomes at a time."""
    return map_in_threads(lambda files: build_pqa_fast(files, params), genomes, threads)
