"""HLL registers in the layout the native pair loops read and sketch files store (SPEC
section 8): at w = 4 two registers a byte (register 2i in the low nibble of byte i), wider ones
a byte each; one C-contiguous row per sketch. numpy only, so that the sketch path packs without
importing the pair loops (tests/test_cli_startup.py).
"""

import numpy as np

from kmerspec.golden.hll import HllParams

__all__ = ["pack_registers", "pack_sketches", "unpack_registers", "packed_width",
           "saturated_counts"]


def pack_registers(registers: np.ndarray, params: HllParams) -> np.ndarray:
    """The layout of the native pair loop: w = 4 registers two to a byte (register 2i in the
    low nibble of byte i), wider ones a byte each; one C-contiguous row per sketch."""
    registers = np.asarray(registers, dtype=np.uint8)
    if registers.ndim != 2 or registers.shape[1] != params.m:
        raise ValueError(f"registers must be an n x {params.m} array, not shape "
                         f"{registers.shape}")
    if params.w != 4:
        return np.ascontiguousarray(registers)
    return np.ascontiguousarray(registers[:, 0::2] | (registers[:, 1::2] << 4))


def pack_sketches(sketches: list, params: HllParams) -> np.ndarray:
    """The collection of ``sketches`` (each 2^p registers, one a byte) in :func:`pack_registers`'
    layout, n rows (0 rows for none)."""
    stacked = np.stack(sketches) if sketches else np.zeros((0, params.m), dtype=np.uint8)
    return pack_registers(stacked, params)


def packed_width(params: HllParams) -> int:
    """Bytes a sketch in :func:`pack_registers`' layout takes: 2^(p-1) at w = 4, else 2^p."""
    return params.m // 2 if params.w == 4 else params.m


def unpack_registers(packed: np.ndarray, params: HllParams) -> np.ndarray:
    """The registers (one byte each, n x 2^p) of sketches in :func:`pack_registers`' layout."""
    packed = np.asarray(packed, dtype=np.uint8)
    if params.w != 4:
        return packed
    registers = np.empty((packed.shape[0], params.m), dtype=np.uint8)
    np.bitwise_and(packed, 0x0F, out=registers[:, 0::2])
    np.right_shift(packed, 4, out=registers[:, 1::2])
    return registers


def saturated_counts(packed: np.ndarray, params: HllParams) -> np.ndarray:
    """C_R (SPEC 3 "Saturated registers") of each sketch in :func:`pack_registers`' layout."""
    from kmerspec.golden.hll import top_rank
    top = top_rank(params)
    counts = np.zeros(packed.shape[0], dtype=np.int64)
    for lo in range(0, packed.shape[0], 1024):  # a bounded temporary, never the collection's
        rows = packed[lo:lo + 1024]
        if params.w == 4:
            counts[lo:lo + 1024] = (((rows & 0x0F) == top).sum(axis=1)
                                    + ((rows >> 4) == top).sum(axis=1))
        else:
            counts[lo:lo + 1024] = (rows == top).sum(axis=1)
    return counts
