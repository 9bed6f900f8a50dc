"""k-mer extraction in one native pass per file, identical to kmerspec.golden.parse.

The parser, the 2-bit packing and the rolling canonical word are the compiled
:class:`KmerStream` (host/fast/_kmer_stream.c). A file is fed to it in blocks of
``BLOCK_BYTES``; the stream keeps the line state and the partial k-mer across blocks, so the
blocks may be cut anywhere. A *file* here is its bytes, or anything with a ``blocks()`` method
that yields them in pieces (host.reader.SequenceFile streams a file from disk that way).

A file read from disk that way has not been through the host's input check (SPEC 1.1,
host.io.check_sequence) as bytes have: its stream (:func:`file_stream`) checks it in the same
pass, and :func:`naming_file` turns a problem into the file's own error.
"""

from __future__ import annotations  # numpy's types named below, imported where used

import contextlib
import math
import os
from collections.abc import Iterable, Iterator

from kmerspec.params import K

from .native import native

__all__ = ["BLOCK_BYTES", "genome_bytes", "file_blocks", "file_stream", "naming_file",
           "record_bases", "kmer_blocks", "kmer_array", "genome_kmer_array",
           "sampled_kmer_array"]

# 256 KiB: at least the 64 KiB the reader's format check looks at (host.io._SNIFF_BYTES), and
# little enough to stay in L2 between the read (or ISA-L's inflate) that writes a block and the
# stream that parses it. A file read from disk is read into one buffer of this size a genome
# (file_blocks), never a new object a block: with 4 MiB blocks of their own, each block was
# fresh pages (13,000 page faults and 0.03 s of system time on the 20 genomes of
# bench/peers.py). 256 KiB against 64 KiB blocks of their own: inflating the 20 gzip genomes
# 68 -> 64 ms, their FASTQ copies 89 -> 82 ms (CPU, best of 9).
BLOCK_BYTES = 1 << 18


def _check_k(k: int) -> None:
    K.check(k)


def record_bases(file, stream) -> None:
    """Tell a streamed file (host.reader.SequenceFile) how many sequence bytes it held."""
    if hasattr(file, "bases"):
        file.bases = stream.sequence_bytes


def genome_bytes(files: list) -> float:
    """The bytes of a genome's files as stored (a gzip file counts compressed; a stream of
    unknown length counts 0): the cost by which host.fast.threads.map_largest_first orders
    genomes. A file on disk that cannot be looked at counts as infinite, so that it is opened
    first and its error is ready when its turn comes."""
    total = 0
    for file in files:
        if hasattr(file, "path"):
            try:
                total += os.stat(file.path).st_size
            except (OSError, TypeError, ValueError):
                return math.inf
        elif hasattr(file, "__len__"):
            total += len(file)
    return total


def file_stream(file, k: int, canonical: bool = True):
    """A native k-mer stream for one file, with the input check when the file asks for it
    (``check_input``: host.reader.SequenceFile; bytes were checked when they were read)."""
    return native.KmerStream(k, canonical, check=getattr(file, "check_input", False))


@contextlib.contextmanager
def naming_file(file, stream):
    """Around feeding ``file`` to ``stream``: checks the file's end when the block ends
    normally, and raises an input check's problem as the file's error (``input_error``)."""
    try:
        yield
        stream.finish()
    except native.InputFormatError as error:
        if hasattr(file, "input_error"):
            raise file.input_error(error) from None
        raise


def file_blocks(file, block_bytes: int = BLOCK_BYTES, buffer: bytearray | None = None
                ) -> Iterable:
    """The content of one file in blocks of at most ``block_bytes`` (views, never copies), each
    to be used before the next is taken: a file read from disk (``blocks_into``:
    host.reader.SequenceFile) is read into ``buffer`` (made here if None; a caller reading
    several files passes one), ``block_bytes`` of it a block."""
    if hasattr(file, "blocks_into"):
        if buffer is None:
            buffer = bytearray(block_bytes)
        return file.blocks_into(memoryview(buffer)[:block_bytes])
    if hasattr(file, "blocks"):
        return file.blocks(block_bytes)
    view = memoryview(file)
    return (view[start:start + block_bytes] for start in range(0, len(view), block_bytes))


def kmer_blocks(file, k: int, canonical: bool = True, block_bytes: int = BLOCK_BYTES,
                copy: bool = True) -> Iterator[np.ndarray]:
    """The k-mers of one file in stream order, one uint64 array per block (without ``copy``,
    views of one buffer, each valid until the next is taken)."""
    import numpy as np  # here: sketching a file needs no k-mer array
    _check_k(k)
    stream = file_stream(file, k, canonical)
    out = np.empty(0, dtype=np.uint64)
    with naming_file(file, stream):
        for block in file_blocks(file, block_bytes):
            if out.size < len(block):
                out = np.empty(len(block), dtype=np.uint64)
            count = stream.kmers(block, out)
            yield out[:count].copy() if copy else out[:count]


def kmer_array(data, k: int, canonical: bool = True) -> np.ndarray:
    """The k-mers of one file in stream order, as uint64 words (== kmerspec.golden.parse.kmers)."""
    import numpy as np
    parts = list(kmer_blocks(data, k, canonical))
    return np.concatenate(parts) if parts else np.empty(0, dtype=np.uint64)


def genome_kmer_array(files: list, k: int, canonical: bool = True) -> np.ndarray:
    """The k-mers of a genome made of several files, file after file."""
    import numpy as np
    parts = [kmer_array(data, k, canonical) for data in files]
    return np.concatenate(parts) if parts else np.empty(0, dtype=np.uint64)


def sampled_kmer_array(files: list, k: int, canonical: bool, s: int, seed: int,
                       block_bytes: int = BLOCK_BYTES) -> np.ndarray:
    """The k-mers of a genome, file after file, whose murmur3_32(word, seed) has its low ``s``
    bits zero; only the kept words are ever held (a 1/2^s share of the genome)."""
    import numpy as np
    _check_k(k)
    parts = []
    out = np.empty(0, dtype=np.uint64)
    for file in files:
        stream = file_stream(file, k, canonical)
        with naming_file(file, stream):
            for block in file_blocks(file, block_bytes):
                if out.size < len(block):
                    out = np.empty(len(block), dtype=np.uint64)
                count = stream.sample(block, out, s, seed)
                parts.append(out[:count].copy())
        record_bases(file, stream)
    return np.concatenate(parts) if parts else np.empty(0, dtype=np.uint64)
