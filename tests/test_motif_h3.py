# amaranth: UnusedElaboratable=no
"""The H3 hash unit of the motif engine against the golden model (its Count-Min unit:
tests/test_countmin.py)."""

import random

import pytest

from kmerspec.golden.hashes import h3, h3_seed_words
from hw.motif.h3 import H3Hash
from tests.simulation import simulate



@pytest.mark.parametrize("key_bits,out_bits", [(20, 14), (40, 6), (64, 14), (2, 3)])
def test_h3_matches_golden(key_bits, out_bits):
    matrices = [h3_seed_words(key_bits, out_bits, row) for row in range(3)]
    dut = H3Hash(key_bits, out_bits, matrices)
    rng = random.Random(key_bits)
    keys = [0, (1 << key_bits) - 1] + [rng.getrandbits(key_bits) for _ in range(300)]

    async def testbench(ctx):
        for key in keys:
            ctx.set(dut.key, key)
            await ctx.tick()
            assert [ctx.get(dut.hashes[row]) for row in range(3)] == \
                [h3(key, matrix) for matrix in matrices], hex(key)

    simulate(dut, testbench)


def test_h3_rejects_bad_seed_matrix():
    with pytest.raises(ValueError, match="seed_matrices"):
        H3Hash(4, 2, [[0, 1, 2, 4]])
    with pytest.raises(ValueError, match="key_bits"):
        H3Hash(0, 2, [[]])
