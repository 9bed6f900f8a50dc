"""Bit-exact models of the fixed-point log2 and reciprocal units of the entropy module (SPEC 4).

Both units normalise their unsigned input with a leading-zero count, so the model does not
depend on the input width: an RTL unit of any width W (33 bits for PQA values and pooled
counts, 81 bits for the textbook mixture) gives these results for every input below 2^W.

=====================  ======================================================================
quantity               format
=====================  ======================================================================
log2 input c           unsigned integer, W bits; log2(0) is defined as 0 (0 * log 0 = 0)
exponent e             msb position of c = W - 1 - lzc(c); ceil(log2 W) bits
mantissa fraction      the L + I = 24 bits below the leading one (truncated; zero-filled)
LUT address            top L = 8 fraction bits
LUT                    257 words, unsigned 25 bits: round(log2(1 + i/256) * 2^24), i = 0..256
                       (LUT[256] = 2^24); read at address and address + 1 (dual-port ROM)
interpolation weight   next I = 16 fraction bits
interpolation          LUT[a] + ((LUT[a+1] - LUT[a]) * weight >> 16): 17 x 16-bit product
log2 output            unsigned Q(ceil(log2 W)).24: (e << 24) + interpolated fraction
reciprocal input M     unsigned integer > 0, W bits; e = msb position
normalised b           the top 33 bits of M from the leading one: Q1.32 in [1, 2) (truncated)
seed LUT               256 words, unsigned 33 bits: round(2^32 / (1 + (i + 0.5)/256)),
                       addressed by the top 8 fraction bits of b
Newton-Raphson         2 iterations x <- x * (2 - b*x), every product truncated to Q1.32
reciprocal output      x in Q1.32 with 1/M ~= x * 2^-(32 + e)
quotient S / M         floor(S * x / 2^(32 + e)); S and the quotient are Q.24
=====================  ======================================================================

Error of the log2 unit against the exact log2: linear interpolation of the concave
log2(1 + f) on a 2^-8 grid lies below the curve by at most 2^-16 / 8 / ln 2 = 2.75e-6; LUT
rounding adds +-3.0e-8, the truncated weight and product -8.6e-8 and -6.0e-8. Measured over
every LUT interval by ``tests/test_golden_entropy.py``: -2.87e-6 .. +3.0e-8.
The reciprocal is below 1/b by at most about 1e-9 relative (2 iterations from an 8-bit seed
converge to the 2^-32 truncation).
"""

from decimal import Decimal, getcontext

__all__ = [
    "LOG2_LUT_BITS", "LOG2_INTERP_BITS", "LOG2_FRAC_BITS", "LOG2_LUT",
    "RECIP_LUT_BITS", "RECIP_FRAC_BITS", "RECIP_ITERATIONS", "RECIP_LUT",
    "log2_fixed", "reciprocal_fixed", "divide_fixed",
]

LOG2_LUT_BITS = 8
LOG2_INTERP_BITS = 16
LOG2_FRAC_BITS = 24
RECIP_LUT_BITS = 8
RECIP_FRAC_BITS = 32
RECIP_ITERATIONS = 2

_MANTISSA_BITS = LOG2_LUT_BITS + LOG2_INTERP_BITS


def _log2_lut() -> list[int]:
    """The LUT from correctly rounded decimal logarithms, so it is the same on every platform."""
    getcontext().prec = 50
    ln2 = Decimal(2).ln()
    size = 1 << LOG2_LUT_BITS
    scale = 1 << LOG2_FRAC_BITS
    return [int(((Decimal(size + i) / size).ln() / ln2 * scale).to_integral_value())
            for i in range(size + 1)]


def _reciprocal_lut() -> list[int]:
    """round(2^32 / (1 + (i + 1/2) / 2^8)) = round(2^(32+9) / (2^9 + 2i + 1)), in integers."""
    numerator = 1 << (RECIP_FRAC_BITS + RECIP_LUT_BITS + 1)
    result = []
    for i in range(1 << RECIP_LUT_BITS):
        denominator = (1 << (RECIP_LUT_BITS + 1)) + 2 * i + 1
        result.append((2 * numerator + denominator) // (2 * denominator))
    return result


LOG2_LUT = _log2_lut()
RECIP_LUT = _reciprocal_lut()


def log2_fixed(c: int) -> int:
    """log2(c) in unsigned Q.24 by LZC + 257-entry LUT + linear interpolation; log2(0) = 0."""
    if c < 0:
        raise ValueError(f"log2 input must be unsigned, not {c}")
    if c == 0:
        return 0
    exponent = c.bit_length() - 1
    fraction = ((c << _MANTISSA_BITS) >> exponent) - (1 << _MANTISSA_BITS)
    address = fraction >> LOG2_INTERP_BITS
    weight = fraction & ((1 << LOG2_INTERP_BITS) - 1)
    low, high = LOG2_LUT[address], LOG2_LUT[address + 1]
    return (exponent << LOG2_FRAC_BITS) + low + (((high - low) * weight) >> LOG2_INTERP_BITS)


def reciprocal_fixed(m: int) -> tuple[int, int]:
    """(x, e) with 1/m ~= x * 2^-(32 + e): seed LUT + 2 Newton-Raphson steps in Q1.32."""
    if m <= 0:
        raise ValueError(f"reciprocal input must be positive, not {m}")
    exponent = m.bit_length() - 1
    normalised = (m << RECIP_FRAC_BITS) >> exponent
    address = (normalised >> (RECIP_FRAC_BITS - RECIP_LUT_BITS)) & ((1 << RECIP_LUT_BITS) - 1)
    x = RECIP_LUT[address]
    two = 2 << RECIP_FRAC_BITS
    for _ in range(RECIP_ITERATIONS):
        product = (normalised * x) >> RECIP_FRAC_BITS
        x = (x * (two - product)) >> RECIP_FRAC_BITS
    return x, exponent


def divide_fixed(numerator: int, m: int) -> int:
    """floor(numerator * reciprocal(m)): numerator / m in the numerator's fixed-point format."""
    x, exponent = reciprocal_fixed(m)
    return (numerator * x) >> (RECIP_FRAC_BITS + exponent)
