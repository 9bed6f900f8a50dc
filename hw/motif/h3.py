"""H3 hash unit: several H3 hashes of one key, one key per cycle (SPEC section 2).

H3 of a key with seed matrix ``q`` is the XOR of the seed words ``q[i]`` selected by the set bits
``i`` of the key (:func:`kmerspec.golden.hashes.h3`). The seed words are elaboration-time constants,
so output bit ``j`` is the XOR of the fixed subset of key bits whose seed word has bit ``j`` set:
no AND stage and no seed registers, only a parity tree per output bit (about ``key_bits / 2``
inputs, two LUT6 levels for 40-bit keys), followed by one register.
"""

from amaranth.hdl import Const, Module
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from kmerspec.params import check_int

__all__ = ["H3Hash", "check_seed_matrices"]


def check_seed_matrices(name: str, key_bits: int, out_bits: int, matrices) -> list[list[int]]:
    """Validate a list of H3 seed matrices (``key_bits`` words of ``out_bits`` bits each)."""
    matrices = [list(matrix) for matrix in matrices]
    if not matrices:
        raise ValueError(f"{name} must hold at least one seed matrix, not {matrices!r}")
    for matrix in matrices:
        if len(matrix) != key_bits or any(
                not isinstance(word, int) or not 0 <= word < 1 << out_bits for word in matrix):
            raise ValueError(f"{name} must be matrices of {key_bits} words of {out_bits} bits, "
                             f"not {matrix!r}")
    return matrices


class H3Hash(wiring.Component):
    """``len(seed_matrices)`` H3 hashes of a ``key_bits``-bit key, each ``out_bits`` wide.

    Parameters
    ----------
    key_bits : int
        Width of the key (2k for a k-mer).
    out_bits : int
        Width of every hash.
    seed_matrices : list of list of int
        One matrix per hash: ``key_bits`` seed words of ``out_bits`` bits (word i is selected by
        key bit i), as :func:`kmerspec.golden.hashes.h3_seed_words` returns.

    Members
    -------
    key : In(key_bits)
    hashes : Out(ArrayLayout(out_bits, len(seed_matrices)))
        The hashes of the key presented :attr:`latency` cycles earlier.

    Latency 1 cycle, one key per cycle, no handshake (the caller delays its own valid and payload
    by :attr:`latency`).
    """

    latency = 1

    def __init__(self, key_bits: int, out_bits: int, seed_matrices):
        check_int("key_bits", key_bits, 1, 64)
        check_int("out_bits", out_bits, 1, 64)
        self._key_bits = key_bits
        self._out_bits = out_bits
        self._matrices = check_seed_matrices("seed_matrices", key_bits, out_bits, seed_matrices)
        super().__init__({
            "key": In(key_bits),
            "hashes": Out(data.ArrayLayout(out_bits, len(self._matrices))),
        })

    def elaborate(self, platform):
        m = Module()
        for index, matrix in enumerate(self._matrices):
            for bit in range(self._out_bits):
                parity = Const(0, 1)
                for key_bit, word in enumerate(matrix):
                    if (word >> bit) & 1:
                        parity = parity ^ self.key[key_bit]
                m.d.sync += self.hashes[index][bit].eq(parity)
        return m
