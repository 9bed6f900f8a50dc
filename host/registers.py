"""HLL registers in the layout the native pair loops read and sketch files store (SPEC
section 8): at w = 4 two registers a byte (register 2i in the low nibble of byte i), wider ones
a byte each; one C-contiguous row per sketch. Packing and counting are host/fast/_native.c's
(pack_nibbles, count_registers), so that the sketch command packs without importing numpy or the
pair loops (tests/test_cli_startup.py); numpy is imported by the functions of numpy arrays.
"""

from kmerspec.golden.hll import HllParams
from .fast.native import native

__all__ = ["pack_registers", "pack_row", "pack_sketches", "unpack_registers", "packed_width",
           "saturated_counts", "PackedRows"]


def pack_row(registers, params: HllParams, packed) -> None:
    """Pack the 2^p registers of one sketch (a buffer of bytes, one a register) into the
    writable buffer ``packed`` of :func:`packed_width` bytes, in the layout of
    :func:`pack_registers`."""
    if not isinstance(registers, (bytes, bytearray, memoryview)):
        import numpy as np  # a backend's array (the software backend's are bytearrays)
        registers = np.ascontiguousarray(registers, dtype=np.uint8)
    if params.w == 4:
        native.pack_nibbles(registers, packed)
    else:
        memoryview(packed)[:] = memoryview(registers).cast("B")


def pack_registers(registers, params: HllParams):
    """The layout of the native pair loop: w = 4 registers two to a byte (register 2i in the
    low nibble of byte i), wider ones a byte each; one C-contiguous row per sketch."""
    import numpy as np  # here: the sketch command packs with pack_row
    registers = np.ascontiguousarray(registers, dtype=np.uint8)
    if registers.ndim != 2 or registers.shape[1] != params.m:
        raise ValueError(f"registers must be an n x {params.m} array, not shape "
                         f"{registers.shape}")
    if params.w != 4:
        return registers
    packed = np.empty((registers.shape[0], packed_width(params)), dtype=np.uint8)
    pack_row(registers, params, packed)  # rows follow rows: the whole collection at once
    return packed


def pack_sketches(sketches: list, params: HllParams):
    """The collection of ``sketches`` (each 2^p registers, one a byte) in :func:`pack_registers`'
    layout, n rows (0 rows for none)."""
    import numpy as np
    stacked = np.stack(sketches) if sketches else np.zeros((0, params.m), dtype=np.uint8)
    return pack_registers(stacked, params)


def packed_width(params: HllParams) -> int:
    """Bytes a sketch in :func:`pack_registers`' layout takes: 2^(p-1) at w = 4, else 2^p."""
    return params.m // 2 if params.w == 4 else params.m


def unpack_registers(packed, params: HllParams):
    """The registers (one byte each, n x 2^p) of sketches in :func:`pack_registers`' layout."""
    import numpy as np
    packed = np.asarray(packed, dtype=np.uint8)
    if params.w != 4:
        return packed
    registers = np.empty((packed.shape[0], params.m), dtype=np.uint8)
    np.bitwise_and(packed, 0x0F, out=registers[:, 0::2])
    np.right_shift(packed, 4, out=registers[:, 1::2])
    return registers


def saturated_counts(packed, params: HllParams) -> list[int]:
    """C_R (SPEC 3 "Saturated registers") of each sketch (row) of ``packed``, a 2-D numpy array
    or :class:`PackedRows` in :func:`pack_registers`' layout."""
    from kmerspec.golden.hll import top_rank
    top = top_rank(params)
    return [native.count_registers(row, params.w, top) for row in packed]


class PackedRows:
    """n sketches' registers in :func:`pack_registers`' layout, held in a bytearray: what the
    sketch command makes, writes and checks without numpy. Rows are memoryviews (iteration,
    :meth:`row`); :meth:`numpy` is the n x width uint8 array over the same bytes."""

    def __init__(self, rows: int, params: HllParams):
        self.width = packed_width(params)
        self.shape = (rows, self.width)
        self.data = bytearray(rows * self.width)

    def row(self, index: int) -> memoryview:
        return memoryview(self.data)[index * self.width:(index + 1) * self.width]

    def __len__(self) -> int:
        return self.shape[0]

    def __iter__(self):
        return (self.row(index) for index in range(len(self)))

    def numpy(self):
        import numpy as np
        return np.frombuffer(self.data, dtype=np.uint8).reshape(self.shape)
