"""Vectorised murmur3_32 and H3 over uint64 k-mer words, identical to kmerspec.golden.hashes."""

import numpy as np

from kmerspec.golden.hashes import FMIX32

__all__ = ["fmix_array", "murmur3_32_array", "H3Tables"]

_U32 = np.uint32


def fmix_array(x: np.ndarray, constants: tuple) -> np.ndarray:
    """MurmurHash3's finalizer of ``constants`` (kmerspec.golden.hashes.FMIX32 or FMIX64) of
    every word of ``x`` (uint32 or uint64, whose arithmetic wraps as the finalizer's), in
    place."""
    word = x.dtype.type
    (s1, s2, s3), (m1, m2) = constants
    x ^= x >> word(s1)
    x *= word(m1)
    x ^= x >> word(s2)
    x *= word(m2)
    x ^= x >> word(s3)
    return x


def _rotl32(x: np.ndarray, r: int) -> np.ndarray:
    return (x << _U32(r)) | (x >> _U32(32 - r))


def murmur3_32_array(words: np.ndarray, seed: int) -> np.ndarray:
    """MurmurHash3_x86_32 of the 8 little-endian bytes of each word (uint32 arithmetic wraps)."""
    words = np.asarray(words, dtype=np.uint64)
    h = np.full(words.shape, seed & 0xFFFFFFFF, dtype=np.uint32)
    for block in ((words & np.uint64(0xFFFFFFFF)).astype(np.uint32),
                  (words >> np.uint64(32)).astype(np.uint32)):
        block = block * _U32(0xCC9E2D51)
        block = _rotl32(block, 15) * _U32(0x1B873593)
        h ^= block
        h = _rotl32(h, 13) * _U32(5) + _U32(0xE6546B64)
    h ^= _U32(8)                       # the length in bytes
    return fmix_array(h, FMIX32)


class H3Tables:
    """Several H3 hashes of the same key evaluated together, a byte of the key at a time.

    H3 is linear over GF(2): h(x) = XOR over the key's bytes b of h(b << 8i). The outputs of
    the matrices are packed side by side into uint64 groups (as many as fit in 64 bits), so one
    256-entry table per key byte and group gives all of them with ceil(key_bits / 8) gathers.
    """

    def __init__(self, matrices: list[list[int]], widths: list[int]):
        if any(not 0 <= width <= 32 for width in widths):
            raise ValueError(f"H3 output widths must be 0 to 32 bits, not {widths}")
        self.groups = []  # (list of (matrix position, offset, width), byte tables)
        members, used = [], 0
        for position, width in enumerate(widths):
            if used + width > 64:
                self.groups.append(self._group(matrices, members))
                members, used = [], 0
            members.append((position, used, width))
            used += width
        self.groups.append(self._group(matrices, members))
        self.count = len(widths)

    @staticmethod
    def _group(matrices, members):
        key_bits = len(matrices[0])
        packed_rows = [sum(matrices[position][bit] << offset for position, offset, _ in members)
                       for bit in range(key_bits)]
        byte_values = np.arange(256)
        tables = []
        for first_bit in range(0, key_bits, 8):
            table = np.zeros(256, dtype=np.uint64)
            for bit in range(first_bit, min(first_bit + 8, key_bits)):
                selected = ((byte_values >> (bit - first_bit)) & 1).astype(bool)
                table[selected] ^= np.uint64(packed_rows[bit])
            tables.append(table)
        return members, tables

    def hashes(self, words: np.ndarray) -> list[np.ndarray]:
        """One uint32 array per matrix: the H3 hash of every word."""
        words = np.asarray(words, dtype=np.uint64)
        result = [None] * self.count
        for members, tables in self.groups:
            packed = np.zeros(words.shape, dtype=np.uint64)
            for byte, table in enumerate(tables):
                packed ^= table[((words >> np.uint64(8 * byte)) & np.uint64(0xFF)).astype(np.intp)]
            for position, offset, width in members:
                field = (packed >> np.uint64(offset)) & np.uint64((1 << width) - 1)
                result[position] = field.astype(np.uint32)
        return result
