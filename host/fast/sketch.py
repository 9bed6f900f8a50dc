"""HLL sketches of files in one native pass (parse, canonical k-mer, fmix64, register update;
host/fast/_kmer_stream.c), block by block, registers held in a bytearray: the sketch command's
path, which imports no numpy (tests/test_cli_startup.py); host.fast.hll gives them as arrays.
"""

from collections.abc import Iterable, Iterator

from kmerspec.golden.hll import HllParams
from kmerspec.golden.mincount import MinCountParams
from .kmers import BLOCK_BYTES, file_blocks, file_stream, genome_bytes, naming_file, record_bases
from .threads import map_largest_first

__all__ = ["file_registers", "genome_registers"]


def file_registers(files: list, k: int, params: HllParams, canonical: bool = True,
                   block_bytes: int = BLOCK_BYTES,
                   min_count: MinCountParams = MinCountParams()) -> bytearray:
    """The 2^p registers of one genome made of several files, one a byte.

    Each file is bytes or a streamable host.reader.SequenceFile; memory is one block, plus the
    ``mc_depth x 2^mc_width_bits`` uint32 counters of the minimum-count prefilter when
    ``min_count.min_count`` > 1 (SPEC 7; shared by the genome's files).
    """
    if not isinstance(k, int) or not 1 <= k <= 32:
        raise ValueError(f"k must be an integer from 1 to 32, not {k!r}")
    registers = bytearray(params.m)
    prefilter = ()
    if min_count.active:
        counters = memoryview(bytearray(4 << min_count.mc_width_bits) * min_count.mc_depth)
        prefilter = (counters.cast("I"), min_count.mc_width_bits, min_count.mc_seed,
                     min_count.max_count, min_count.min_count)
    buffer = bytearray(block_bytes)  # the blocks of the files read from disk
    for file in files:
        stream = file_stream(file, k, canonical)
        with naming_file(file, stream):
            for block in file_blocks(file, block_bytes, buffer):
                stream.hll(block, registers, params.p, params.w, *prefilter)
        record_bases(file, stream)
    return registers


def genome_registers(genomes: Iterable[list], k: int, params: HllParams, canonical: bool = True,
                     threads: int | None = None,
                     min_count: MinCountParams = MinCountParams()) -> Iterator[bytearray]:
    """The registers of each genome (:func:`file_registers`), in order, genomes sketched
    ``threads`` at a time.

    With more than one thread, every genome is taken at once (file handles, or bytes already in
    memory) and the largest are sketched first (host.fast.threads.map_largest_first).
    """
    return map_largest_first(lambda files: file_registers(files, k, params, canonical,
                                                          min_count=min_count),
                             genomes, genome_bytes, threads)
