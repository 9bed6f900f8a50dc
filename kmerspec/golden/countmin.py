"""Reference Count-Min sketch with saturating counters (SPEC sections 4 and 5).

One class serves both engines; only the row hash and the counter width differ:

* JSD engine (SPEC 4): ``d`` rows x 2^cw 32-bit counters, row r indexed by the low cw bits of
  ``murmur3_32(x, seed=r)`` (:func:`murmur3_row_indices`).
* Emerging-motif engine (SPEC 5): ``d`` rows x 2^cw 16-bit counters, row r indexed by an H3 hash
  of the 2k-bit k-mer word with its own seed matrix (:func:`h3_row_indices`).

Insertion of x, sequential semantics that the hardware must reproduce exactly:
``v_r = min(C[r][i_r] + 1, 2^counter_bits - 1)`` (saturating), ``e = min_r v_r``;
update "cu" (conservative) writes ``v_r`` only where ``v_r == e``; update "cm" writes every v_r.
The estimate of the insertion is e. Once every row of x is saturated nothing changes.
"""

from collections.abc import Callable, Iterable

from ..params import CM_COUNTER_BITS, CM_WIDTH_BITS, check_positive
from .hashes import h3, murmur3_32

__all__ = ["UPDATES", "CountMin", "murmur3_row_indices", "h3_row_indices"]

UPDATES = ("cu", "cm")

RowIndexer = Callable[[int], list[int]]


def murmur3_row_indices(depth: int, width_bits: int, seed: int = 0) -> RowIndexer:
    """Row r index = low ``width_bits`` bits of murmur3_32(x, seed=seed + r mod 2^32) (the JSD
    engine with seed 0, the minimum-count prefilter with its ``mc_seed``)."""
    mask = (1 << width_bits) - 1
    return lambda word: [murmur3_32(word, (seed + row) & 0xFFFFFFFF) & mask
                         for row in range(depth)]


def h3_row_indices(seed_words_per_row: list[list[int]]) -> RowIndexer:
    """Row r index = H3 of the word with row r's seed matrix (the motif engine)."""
    return lambda word: [h3(word, seed_words) for seed_words in seed_words_per_row]


class CountMin:
    """``depth`` rows x 2^``width_bits`` saturating counters of ``counter_bits`` bits.

    ``row_indices(x)`` returns the counter index of x in each row.
    ``counters[r][i]`` is the state the RTL tests compare against.
    """

    def __init__(self, depth: int, width_bits: int, counter_bits: int, row_indices: RowIndexer,
                 update: str = "cu"):
        check_positive("depth", depth)
        CM_WIDTH_BITS.check(width_bits, "width_bits")
        CM_COUNTER_BITS.check(counter_bits, "counter_bits")
        if update not in UPDATES:
            raise ValueError(f"update must be one of {UPDATES}, not {update!r}")
        self.depth = depth
        self.width_bits = width_bits
        self.counter_bits = counter_bits
        self.max_count = (1 << counter_bits) - 1
        self.update = update
        self.row_indices = row_indices
        self.counters = [[0] * (1 << width_bits) for _ in range(depth)]

    def insert(self, word: int) -> int:
        """Insert one key; return the estimate e of this insertion."""
        indices = self.row_indices(word)
        incremented = [min(self.counters[row][index] + 1, self.max_count)
                       for row, index in enumerate(indices)]
        estimate = min(incremented)
        for row, (index, value) in enumerate(zip(indices, incremented)):
            if self.update == "cm" or value == estimate:
                self.counters[row][index] = value
        return estimate

    def insert_all(self, words: Iterable[int]) -> list[int]:
        return [self.insert(word) for word in words]

    def query(self, word: int) -> int:
        """The current estimate of a key, without inserting it."""
        return min(self.counters[row][index] for row, index in enumerate(self.row_indices(word)))
