"""Hash functions against independent implementations."""

import random

import mmh3
import numpy as np

from host.fast.hll import fmix64_array
from kmerspec.golden.hashes import MASK64, fmix64, h3, h3_seed_words, murmur3_32


def test_murmur3_32_equals_mmh3():
    rng = random.Random(3)
    words = [0, 1, MASK64, 1 << 63] + [rng.getrandbits(64) for _ in range(3000)]
    for word in words:
        seed = rng.getrandbits(32)
        assert murmur3_32(word, seed) == mmh3.hash(word.to_bytes(8, "little"), seed, signed=False)


def test_fmix64_equals_the_finalizer_inside_mmh3_x64_128():
    # MurmurHash3_x64_128 of an empty key with seed s: h1 = 2s and h2 = 3s go through fmix64,
    # then h1 = f1 + f2 and h2 = f1 + 2 f2 (mod 2^64). Recover f1 and f2 from mmh3's output.
    rng = random.Random(4)
    for seed in [0, 1, 0xFFFFFFFF] + [rng.getrandbits(32) for _ in range(500)]:
        h1, h2 = mmh3.hash64(b"", seed, signed=False)
        f2 = (h2 - h1) & MASK64
        f1 = (h1 - f2) & MASK64
        assert fmix64(2 * seed) == f1
        assert fmix64(3 * seed) == f2


def test_fmix64_vectorised_equals_reference():
    rng = random.Random(5)
    words = [0, MASK64] + [rng.getrandbits(64) for _ in range(5000)]
    got = fmix64_array(np.array(words, dtype=np.uint64)).tolist()
    assert got == [fmix64(w) for w in words]


def test_h3_is_linear_and_reproducible():
    seeds = h3_seed_words(40, 14, row=2)
    assert seeds == h3_seed_words(40, 14, row=2)
    assert seeds != h3_seed_words(40, 14, row=3)
    assert all(0 <= s < 1 << 14 for s in seeds)
    rng = random.Random(6)
    for _ in range(200):
        a, b = rng.getrandbits(40), rng.getrandbits(40)
        assert h3(a ^ b, seeds) == h3(a, seeds) ^ h3(b, seeds)
    assert h3(0, seeds) == 0
    assert h3(1 << 5, seeds) == seeds[5]
