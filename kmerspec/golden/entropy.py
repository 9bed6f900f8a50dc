"""Entropy of a PQA and Jensen-Shannon divergence of two PQAs (SPEC section 4), in bits.

Two arithmetics, same definitions:

* ``entropy`` / ``jsd_between`` (in kmerspec.golden.jsd): float64, the reference.
* ``entropy_fixed`` / ``jsd_fixed``: the bit-exact model of the hardware entropy and JSD units,
  built on the LZC + LUT log2 and the Newton-Raphson reciprocal of kmerspec.golden.fixedpoint.

Definitions. For non-negative integer counts m_i with M = sum m_i > 0:
``H = log2 M - (1/M) sum m_i log2 m_i`` (empty entries contribute 0; H = 0 when M = 0).
JSD = H(mix) - (H(P) + H(Q)) / 2 over the PQA union (kmerspec.golden.pqa.union), where

* mode "textbook" (default): mix_i = p_i * M_Q + q_i * M_P, exact integers; this is the
  equal-weight mixture p_i/M_P + q_i/M_Q scaled by M_P * M_Q, so JSD is in [0, 1]. If exactly
  one PQA is empty the JSD is 1 (nothing shared), if both are empty it is 0.
* mode "counts": mix_i = p_i + q_i, the thesis' pooled raw counts. Not a true JSD: the
  difference can be negative when M_P and M_Q differ much.

The float JSD is never below 0 (a negative difference, from rounding or from the counts mode,
is 0) and is exactly 0 for two PQAs holding the same entries; the fixed-point JSD below is the
hardware's and stays as it computes it: the host clamps it the same way where it turns it into a
float (host.jsdmatrix.fixed_jsd_to_float).

Fixed-point entropy unit (all integers; Q.24 means an integer scaled by 2^24):

=================  ===========================================================================
quantity           format and operation
=================  ===========================================================================
m_i                unsigned: 32 bits (PQA value), 33 bits (pooled counts), 81 bits (mixture)
M = sum m_i        unsigned, exact (48 bits for a PQA, 49 pooled, 97 mixture)
log2 m_i, log2 M   unsigned Q7.24 from ``log2_fixed``
S = sum m_i log2   unsigned Q.24, exact products and sum: 76 bits for a PQA (2^15 x 32-bit x
                   Q5.24), 79 pooled (2^16 x 33-bit x Q6.24), 128 mixture (2^16 x 81 x Q7.24)
S / M              Q.24 = floor(S * x / 2^(32 + e)), (x, e) = ``reciprocal_fixed(M)``
H                  unsigned Q5.24 in a 32-bit word: max(0, log2 M - S / M)
JSD                signed Q5.24 in a 32-bit word: H_mix - ((H_P + H_Q) >> 1) (arithmetic
                   shift); textbook mode clamps to [0, 2^24]
=================  ===========================================================================

Error against float64. Each log2 is off by -2.87e-6 .. +3.0e-8 (kmerspec.golden.fixedpoint), the
reciprocal by < 1e-9 relative and each truncation by < 2^-24, so |H error| <= 2.87e-6 + 3e-8 +
1e-7 (S/M <= 97) + 6e-8 < 3.1e-6 bits (log2 M against the weighted mean of the log2 m_i),
and |JSD error| <= |H_mix error| + (|H_P error| + |H_Q error|) / 2 + 2^-25 < 6.2e-6 bits:
both far below the SPEC 4 bound of 1e-4. Measured by ``tests/test_golden_entropy.py`` over
random and adversarial inputs (one huge count, all counts 1, 2^12 * 8 and 2^12 * 16 entries,
counts up to 2^32 - 1, sums up to 2^47, mixtures up to 2^80, the worst interpolation points):
entropy 2.80e-6 bits (all counts 1, 32831 entries), JSD 1.7e-6 bits (textbook and counts).
"""

import math
from collections.abc import Sequence

from .fixedpoint import LOG2_FRAC_BITS, divide_fixed, log2_fixed
from .pqa import Pqa, union

__all__ = [
    "JSD_MODES", "FIXED_ONE", "entropy", "entropy_fixed", "pqa_entropy", "pqa_entropy_fixed",
    "mixture_counts", "same_entries", "jsd_difference", "jsd_from_pqas", "jsd_fixed",
    "fixed_to_float",
]

JSD_MODES = ("textbook", "counts")
FIXED_ONE = 1 << LOG2_FRAC_BITS


def fixed_to_float(value: int) -> float:
    return value / FIXED_ONE


def entropy(counts: Sequence[int]) -> float:
    """float64 entropy in bits of a list of non-negative integer counts."""
    total = sum(counts)
    if total == 0:
        return 0.0
    weighted = math.fsum(m * math.log2(m) for m in counts if m)
    return math.log2(total) - weighted / total


def entropy_fixed(counts: Sequence[int]) -> int:
    """Bit-exact hardware entropy in unsigned Q5.24 (see the format table)."""
    total = sum(counts)
    if total == 0:
        return 0
    weighted = sum(m * log2_fixed(m) for m in counts)
    return max(0, log2_fixed(total) - divide_fixed(weighted, total))


def pqa_entropy(pqa: Pqa) -> float:
    return entropy(pqa.values())


def pqa_entropy_fixed(pqa: Pqa) -> int:
    return entropy_fixed(pqa.values())


def _check_mode(mode: str) -> None:
    if mode not in JSD_MODES:
        raise ValueError(f"JSD mode must be one of {JSD_MODES}, not {mode!r}")


def mixture_counts(p: Pqa, q: Pqa, mode: str = "textbook") -> list[int]:
    """The integer counts of the mixture over the union of two PQAs (module docstring)."""
    _check_mode(mode)
    total_p, total_q = p.total(), q.total()
    entries = [entry for queue in union(p, q) for entry in queue]
    if mode == "counts":
        return [value_p + value_q for _, value_p, value_q in entries]
    return [value_p * total_q + value_q * total_p for _, value_p, value_q in entries]


def _one_side_empty(p: Pqa, q: Pqa, mode: str) -> float | None:
    """The textbook JSD when a PQA is empty (the mixture is undefined), else None."""
    empty_p, empty_q = not p.values(), not q.values()
    if mode == "textbook" and (empty_p or empty_q):
        return 0.0 if empty_p and empty_q else 1.0
    return None


def same_entries(p: Pqa, q: Pqa) -> bool:
    """P and Q hold the same (tag, value) entries in every queue (their order aside): their JSD
    is 0 by definition, whatever the rounding of the entropies."""
    return (p.R, p.n) == (q.R, q.n) and all(
        sorted(e for e in queue_p if e[1]) == sorted(e for e in queue_q if e[1])
        for queue_p, queue_q in zip(p.queues, q.queues))


def jsd_difference(p: Pqa, q: Pqa, mode: str = "textbook") -> float:
    """H(mix) - (H(P) + H(Q)) / 2 in float64 as computed, rounding and sign included: what
    the fixed-point unit approximates (its error is measured against this)."""
    _check_mode(mode)
    special = _one_side_empty(p, q, mode)
    if special is not None:
        return special
    mix = entropy(mixture_counts(p, q, mode))
    return mix - (pqa_entropy(p) + pqa_entropy(q)) / 2


def jsd_from_pqas(p: Pqa, q: Pqa, mode: str = "textbook") -> float:
    """float64 JSD in bits (module docstring): 0 for the same entries, never below 0."""
    _check_mode(mode)
    if _one_side_empty(p, q, mode) is None and same_entries(p, q):
        return 0.0
    return max(0.0, jsd_difference(p, q, mode))


def jsd_fixed(p: Pqa, q: Pqa, mode: str = "textbook",
              entropy_p: int | None = None, entropy_q: int | None = None) -> int:
    """Bit-exact hardware JSD in signed Q5.24.

    ``entropy_p``/``entropy_q`` are the Q5.24 entropies stored with each PQA at build time
    (computed here when not given).
    """
    _check_mode(mode)
    special = _one_side_empty(p, q, mode)
    if special is not None:
        return int(special) * FIXED_ONE
    if entropy_p is None:
        entropy_p = pqa_entropy_fixed(p)
    if entropy_q is None:
        entropy_q = pqa_entropy_fixed(q)
    result = entropy_fixed(mixture_counts(p, q, mode)) - ((entropy_p + entropy_q) >> 1)
    if mode == "textbook":
        result = min(max(result, 0), FIXED_ONE)
    return result
