"""Reference JSD engine (SPEC section 4): sampling, Count-Min, PQA, and JSD between genomes.

Per genome: every k-mer (canonical by default) in stream order is sampled
(``murmur3_32(x, sample_seed)`` has its low s bits zero), inserted into a d x 2^cw Count-Min
with 32-bit saturating counters (row r hashed by murmur3_32 with seed r), and the estimate e of
that insertion goes into the PQA with h0 = murmur3_32(x, seed=0): queue = low R bits, tag = the
rest. ``jsd_between`` compares two PQAs.
"""

from collections.abc import Iterable
from dataclasses import dataclass

from .. import params
from .countmin import UPDATES, CountMin, murmur3_row_indices
from .entropy import jsd_fixed, jsd_from_pqas
from .hashes import murmur3_32
from .parse import genome_kmers
from .pqa import Pqa

__all__ = ["JsdParams", "JsdState", "sampled", "new_countmin", "build_state", "build_pqa",
           "build_pqa_files", "jsd_between", "jsd_between_fixed", "COUNTER_BITS", "SAMPLE_SEED"]

COUNTER_BITS = 32
SAMPLE_SEED = params.SAMPLE_SEED.default

#: The algorithm parameters of SPEC 4 (``update`` and ``canonical`` are checked by JsdParams).
FIELDS = (params.K, params.SAMPLE_BITS, params.SAMPLE_SEED, params.JSD_DEPTH,
          params.CM_WIDTH_BITS, params.PQA_QUEUE_BITS, params.PQA_SLOTS)


@dataclass(frozen=True)
class JsdParams:
    """Parameters of the JSD engine; all are build-time generics except ``update``."""

    k: int = params.K.default
    s: int = params.SAMPLE_BITS.default
    sample_seed: int = SAMPLE_SEED
    d: int = params.JSD_DEPTH.default
    cw: int = params.CM_WIDTH_BITS.default
    R: int = params.PQA_QUEUE_BITS.default
    n: int = params.PQA_SLOTS.default
    update: str = "cu"
    canonical: bool = True

    def __post_init__(self):
        params.check_fields(self, FIELDS)
        if self.update not in UPDATES:
            raise ValueError(f"update must be one of {UPDATES}, not {self.update!r}")
        if not isinstance(self.canonical, bool):
            raise TypeError(f"canonical must be a bool, not {self.canonical!r}")


@dataclass
class JsdState:
    """The engine state after one genome: the Count-Min (``countmin.counters[r][i]``) and PQA."""

    countmin: CountMin
    pqa: Pqa


def sampled(word: int, params: JsdParams) -> bool:
    """Keep a k-mer iff murmur3_32(word, sample_seed) has its low s bits zero."""
    return murmur3_32(word, params.sample_seed) & ((1 << params.s) - 1) == 0


def new_countmin(params: JsdParams) -> CountMin:
    return CountMin(params.d, params.cw, COUNTER_BITS, murmur3_row_indices(params.d, params.cw),
                    params.update)


def build_state(kmers: Iterable[int], params: JsdParams = JsdParams()) -> JsdState:
    """Run the engine over k-mer words (already canonical if params.canonical) in order."""
    countmin = new_countmin(params)
    pqa = Pqa(params.R, params.n)
    for word in kmers:
        if sampled(word, params):
            pqa.insert_hash(murmur3_32(word, 0), countmin.insert(word))
    return JsdState(countmin, pqa)


def build_pqa(kmers: Iterable[int], params: JsdParams = JsdParams()) -> Pqa:
    """The PQA of one genome given as k-mer words in stream order."""
    return build_state(kmers, params).pqa


def build_pqa_files(files: Iterable[bytes], params: JsdParams = JsdParams()) -> Pqa:
    """The PQA of one genome given as the bytes of its FASTA/FASTQ files."""
    return build_pqa(genome_kmers(files, params.k, canonical_form=params.canonical), params)


def jsd_between(pqa_p: Pqa, pqa_q: Pqa, mode: str = "textbook") -> float:
    """float64 Jensen-Shannon divergence in bits; mode "textbook" (in [0, 1]) or "counts".

    See kmerspec.golden.entropy for the definitions and the empty-PQA conventions.
    """
    return jsd_from_pqas(pqa_p, pqa_q, mode)


def jsd_between_fixed(pqa_p: Pqa, pqa_q: Pqa, mode: str = "textbook") -> int:
    """The hardware JSD unit's result, signed Q5.24 (divide by 2^24 for bits)."""
    return jsd_fixed(pqa_p, pqa_q, mode)
