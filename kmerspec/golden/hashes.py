"""Reference hash functions (SPEC section 2): fmix64, murmur3_32 over a k-mer word, H3."""

from ..params import H3_SEED

__all__ = ["MASK32", "MASK64", "FMIX32", "FMIX64", "rotl32", "fmix32", "fmix64",
           "murmur3_mixed_blocks", "murmur3_32", "H3_DEFAULT_SEED", "h3_seed_words", "h3"]

MASK32 = (1 << 32) - 1
MASK64 = (1 << 64) - 1


#: MurmurHash3's finalizers, fmix32 and fmix64: x ^= x >> s1; x *= m1; x ^= x >> s2; x *= m2;
#: x ^= x >> s3 in words of 32 or 64 bits, as ((s1, s2, s3), (m1, m2))
FMIX32 = ((16, 13, 16), (0x85EBCA6B, 0xC2B2AE35))
FMIX64 = ((33, 33, 33), (0xFF51AFD7ED558CCD, 0xC4CEB9FE1A85EC53))


def _fmix(x: int, constants: tuple, mask: int) -> int:
    (s1, s2, s3), (m1, m2) = constants
    x ^= x >> s1
    x = (x * m1) & mask
    x ^= x >> s2
    x = (x * m2) & mask
    return x ^ (x >> s3)


def fmix32(x: int) -> int:
    """MurmurHash3's 32-bit finalizer (the end of murmur3_32)."""
    return _fmix(x & MASK32, FMIX32, MASK32)


def fmix64(x: int) -> int:
    """MurmurHash3's 64-bit finalizer, without seed."""
    return _fmix(x & MASK64, FMIX64, MASK64)


def rotl32(x: int, r: int) -> int:
    """``x`` rotated left by ``r`` bits (0 <= r < 32) as a 32-bit word."""
    return ((x << r) | (x >> (32 - r))) & MASK32


def murmur3_mixed_blocks(word: int) -> int:
    """The seed-independent part of ``murmur3_32(word, seed)``: its two body blocks after
    ``k = rotl(k * c1, 15) * c2``, packed as ``k1 | k2 << 32`` (what the RTL carries from the JSD
    sampler to the Count-Min hashes)."""
    mixed = 0
    for index in range(2):
        block = (((word >> (32 * index)) & MASK32) * 0xCC9E2D51) & MASK32
        mixed |= ((rotl32(block, 15) * 0x1B873593) & MASK32) << (32 * index)
    return mixed


def murmur3_32(word: int, seed: int) -> int:
    """MurmurHash3_x86_32 of the 8 little-endian bytes of a 64-bit k-mer word."""
    c1, c2 = 0xCC9E2D51, 0x1B873593
    h = seed & MASK32
    for block in (word & MASK32, (word >> 32) & MASK32):
        block = (block * c1) & MASK32
        block = rotl32(block, 15)
        block = (block * c2) & MASK32
        h ^= block
        h = rotl32(h, 13)
        h = (h * 5 + 0xE6546B64) & MASK32
    return fmix32(h ^ 8)  # 8: the length in bytes


H3_DEFAULT_SEED = H3_SEED.default


def h3_seed_words(key_bits: int, out_bits: int, row: int, seed: int = H3_DEFAULT_SEED) -> list[int]:
    """The H3 matrix of one row: ``key_bits`` words of ``out_bits`` bits.

    Reproducible anywhere: Python's Mersenne Twister seeded with (seed, row, key_bits, out_bits).
    """
    import random  # here: the sketch command, which imports this module, has no H3 row to make
    rng = random.Random(f"h3/{seed:#x}/{row}/{key_bits}/{out_bits}")
    return [rng.getrandbits(out_bits) for _ in range(key_bits)]


def h3(word: int, seed_words: list[int]) -> int:
    """XOR of the seed words selected by the set bits of ``word`` (bit i selects word i)."""
    result = 0
    for bit, seed_word in enumerate(seed_words):
        if (word >> bit) & 1:
            result ^= seed_word
    return result
