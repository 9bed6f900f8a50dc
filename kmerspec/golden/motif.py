"""Reference emerging-motif engine (SPEC section 5).

For every k in [kmin, kmax], independently (the hardware runs one sketch per k in parallel):

Pass 1, over the test files in order: each k-mer word x (strand-specific unless ``canonical``)
is inserted into that k's Count-Min with conservative update (d rows x 2^cw saturating
``counter_bits``-bit counters, row r indexed by H3 with seed matrix ``h3_seed_words(2k, cw, r,
h3_seed)``). If the estimate e of the insertion is >= T_k, (x, e) is recorded in that k's
heavy-hitter store:

* set = H3 of x with seed matrix ``h3_seed_words(2k, log2(sets), STORE_H3_ROW, h3_seed)``;
* hit (a valid way holds x, full 2k-bit compare): that way's value becomes e;
* miss with a free way: x goes into the lowest-numbered free way, value e, control count 0;
* miss in a full set: x replaces the way at the set's round-robin pointer, and the pointer
  advances by one (mod ways). Pointers start at 0 and move only on such evictions. Ways are
  never freed, so within a set this is first-in first-out replacement.

Pass 2, over the control files: every window whose k-mer is in the store adds 1 to that way's
control count c (32-bit, saturating).

A stored k-mer is emerging iff e >= T_k and e >= g * c. The growth g is a runtime Q8.8
register (a multiple of 1/256, default 2); the test is exact in integers: 256 e >= g_q8 * c.

``find_motifs`` returns one :class:`MotifRow` (k, k-mer string, test estimate e, control
count c) per emerging k-mer, sorted by k ascending, then e descending, then the k-mer string.
"""

from collections.abc import Iterable
from dataclasses import dataclass, field
from fractions import Fraction
from typing import NamedTuple

from .. import params
from .countmin import CountMin, h3_row_indices
from .hashes import H3_DEFAULT_SEED, h3, h3_seed_words
from .parse import genome_kmers

__all__ = ["MotifParams", "MotifRow", "HeavyHitterStore", "MotifSketch", "STORE_H3_ROW",
           "CONTROL_COUNT_BITS", "kmer_string", "new_sketch", "run_test_pass",
           "run_control_pass", "emerging_rows", "find_motifs", "run_engine"]

STORE_H3_ROW = 255  # the row number of the store's set-index H3 matrix (CM rows are 0..d-1)
CONTROL_COUNT_BITS = 32
GROWTH_FRACTION_BITS = 8

#: The build parameters of SPEC 5 (thresholds and growth are runtime registers).
FIELDS = (params.MOTIF_KMIN, params.MOTIF_KMAX, params.MOTIF_DEPTH, params.CM_WIDTH_BITS,
          params.CM_COUNTER_BITS, params.H3_SEED, params.STORE_SETS, params.STORE_WAYS)


def check_geometry(p) -> None:
    """Check the build parameters of SPEC 5 on ``p`` (a MotifParams or the motif kernel's
    Params): each field's range, kmin <= kmax, and a power-of-two number of store sets."""
    params.check_fields(p, FIELDS)
    if p.kmin > p.kmax:
        raise ValueError(f"kmin must not exceed kmax, not kmin={p.kmin} kmax={p.kmax}")
    if p.store_sets & (p.store_sets - 1):
        raise ValueError(f"store_sets must be a power of two, not {p.store_sets!r}")


@dataclass(frozen=True)
class MotifParams:
    """Parameters of the emerging-motif engine.

    ``thresholds``: one T for every k, or a tuple of T_k for k = kmin..kmax (runtime registers).
    The default, 10 for every k, reports k-mers estimated at least 10 times in the test set;
    the thesis' per-dataset values (about 0.7 % to 1.7 % of the number of test sequences,
    depending on k) can be given as a tuple.
    ``growth``: g, an int, float or Fraction that is a multiple of 1/256 (runtime register).
    """

    kmin: int = params.MOTIF_KMIN.default
    kmax: int = params.MOTIF_KMAX.default
    d: int = params.MOTIF_DEPTH.default
    cw: int = params.CM_WIDTH_BITS.default
    counter_bits: int = params.CM_COUNTER_BITS.default
    h3_seed: int = H3_DEFAULT_SEED
    thresholds: int | tuple[int, ...] = 10
    growth: int | float | Fraction = 2
    store_sets: int = params.STORE_SETS.default
    store_ways: int = params.STORE_WAYS.default
    canonical: bool = False

    def __post_init__(self):
        check_geometry(self)
        thresholds = self.thresholds
        if isinstance(thresholds, int) and not isinstance(thresholds, bool):
            thresholds = (thresholds,) * len(self.ks)
        elif not isinstance(thresholds, tuple) or len(thresholds) != len(self.ks):
            raise ValueError(f"thresholds must be an integer or a tuple of {len(self.ks)} "
                             f"integers (k = {self.kmin}..{self.kmax}), not {self.thresholds!r}")
        max_count = (1 << self.counter_bits) - 1
        for threshold in thresholds:
            if not isinstance(threshold, int) or not 1 <= threshold <= max_count:
                raise ValueError(f"thresholds must be integers from 1 to {max_count}, "
                                 f"not {self.thresholds!r}")
        object.__setattr__(self, "thresholds", thresholds)
        if isinstance(self.growth, bool) or not isinstance(self.growth, (int, float, Fraction)):
            raise TypeError(f"growth must be a number, not {self.growth!r}")
        scaled = Fraction(self.growth) * (1 << GROWTH_FRACTION_BITS)
        if scaled.denominator != 1 or not 1 <= scaled < 1 << 16:
            raise ValueError(f"growth must be a multiple of 1/256 from 1/256 to 65535/256, "
                             f"not {self.growth!r}")
        if not isinstance(self.canonical, bool):
            raise TypeError(f"canonical must be a bool, not {self.canonical!r}")

    @property
    def ks(self) -> range:
        return range(self.kmin, self.kmax + 1)

    def threshold(self, k: int) -> int:
        return self.thresholds[k - self.kmin]

    @property
    def growth_q8(self) -> int:
        """g as the unsigned Q8.8 register value."""
        return int(Fraction(self.growth) * (1 << GROWTH_FRACTION_BITS))

    @property
    def set_bits(self) -> int:
        return self.store_sets.bit_length() - 1

    def countmin_seed_words(self, k: int) -> list[list[int]]:
        """The H3 matrices of k's Count-Min rows: 2k words of cw bits per row."""
        return [h3_seed_words(2 * k, self.cw, row, self.h3_seed) for row in range(self.d)]

    def store_seed_words(self, k: int) -> list[int]:
        """The H3 matrix of k's store set index: 2k words of log2(store_sets) bits."""
        return h3_seed_words(2 * k, self.set_bits, STORE_H3_ROW, self.h3_seed)

    def is_emerging(self, k: int, estimate: int, control_count: int) -> bool:
        return (estimate >= self.threshold(k)
                and estimate << GROWTH_FRACTION_BITS >= self.growth_q8 * control_count)


class MotifRow(NamedTuple):
    k: int
    kmer: str
    test_estimate: int
    control_count: int


@dataclass
class HeavyHitterStore:
    """Set-associative store; ``[set][way]`` lists are the state the RTL tests compare against."""

    sets: int
    ways: int
    seed_words: list[int]
    valid: list[list[bool]] = field(init=False)
    kmers: list[list[int]] = field(init=False)
    values: list[list[int]] = field(init=False)
    control_counts: list[list[int]] = field(init=False)
    next_victim: list[int] = field(init=False)

    def __post_init__(self):
        self.valid = [[False] * self.ways for _ in range(self.sets)]
        self.kmers = [[0] * self.ways for _ in range(self.sets)]
        self.values = [[0] * self.ways for _ in range(self.sets)]
        self.control_counts = [[0] * self.ways for _ in range(self.sets)]
        self.next_victim = [0] * self.sets

    def set_index(self, word: int) -> int:
        return h3(word, self.seed_words)

    def find(self, word: int) -> tuple[int, int | None]:
        """(set, way holding word or None)."""
        index = self.set_index(word)
        for way in range(self.ways):
            if self.valid[index][way] and self.kmers[index][way] == word:
                return index, way
        return index, None

    def record(self, word: int, estimate: int) -> None:
        index, way = self.find(word)
        if way is None:
            if False in self.valid[index]:
                way = self.valid[index].index(False)
            else:
                way = self.next_victim[index]
                self.next_victim[index] = (way + 1) % self.ways
            self.valid[index][way] = True
            self.kmers[index][way] = word
            self.control_counts[index][way] = 0
        self.values[index][way] = estimate

    def count_control(self, word: int) -> None:
        index, way = self.find(word)
        if way is not None:
            count = self.control_counts[index][way] + 1
            self.control_counts[index][way] = min(count, (1 << CONTROL_COUNT_BITS) - 1)

    def entries(self) -> list[tuple[int, int, int]]:
        """(k-mer word, value, control count) of every valid way, by set then way."""
        return [(self.kmers[s][w], self.values[s][w], self.control_counts[s][w])
                for s in range(self.sets) for w in range(self.ways) if self.valid[s][w]]


@dataclass
class MotifSketch:
    """One k's state: its Count-Min and its heavy-hitter store."""

    k: int
    countmin: CountMin
    store: HeavyHitterStore


def kmer_string(word: int, k: int) -> str:
    """The k letters of a k-mer word, first base most significant."""
    return "".join("ACGT"[(word >> (2 * (k - 1 - i))) & 3] for i in range(k))


def new_sketch(k: int, params: MotifParams) -> MotifSketch:
    countmin = CountMin(params.d, params.cw, params.counter_bits,
                        h3_row_indices(params.countmin_seed_words(k)), "cu")
    store = HeavyHitterStore(params.store_sets, params.store_ways, params.store_seed_words(k))
    return MotifSketch(k, countmin, store)


def run_test_pass(sketch: MotifSketch, kmers: Iterable[int], params: MotifParams) -> None:
    threshold = params.threshold(sketch.k)
    for word in kmers:
        estimate = sketch.countmin.insert(word)
        if estimate >= threshold:
            sketch.store.record(word, estimate)


def run_control_pass(sketch: MotifSketch, kmers: Iterable[int]) -> None:
    for word in kmers:
        sketch.store.count_control(word)


def emerging_rows(sketches: Iterable[MotifSketch], params: MotifParams) -> list[MotifRow]:
    rows = [MotifRow(sketch.k, kmer_string(word, sketch.k), value, count)
            for sketch in sketches
            for word, value, count in sketch.store.entries()
            if params.is_emerging(sketch.k, value, count)]
    return sorted(rows, key=lambda row: (row.k, -row.test_estimate, row.kmer))


def run_engine(test_files: list[bytes], control_files: list[bytes],
               params: MotifParams = MotifParams()) -> list[MotifSketch]:
    """Both passes for every k; the returned sketches expose the full internal state."""
    sketches = []
    for k in params.ks:
        sketch = new_sketch(k, params)
        run_test_pass(sketch, genome_kmers(test_files, k, canonical_form=params.canonical), params)
        run_control_pass(sketch, genome_kmers(control_files, k, canonical_form=params.canonical))
        sketches.append(sketch)
    return sketches


def find_motifs(test_files: list[bytes], control_files: list[bytes],
                params: MotifParams = MotifParams()) -> list[MotifRow]:
    """Emerging k-mers of the test files against the control files (bytes of FASTA/FASTQ).

    Returns MotifRow(k, k-mer string, test estimate, control count) per emerging k-mer, sorted
    by k ascending, test estimate descending, then k-mer string.
    """
    return emerging_rows(run_engine(test_files, control_files, params), params)
