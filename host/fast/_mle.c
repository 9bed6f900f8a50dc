/*
 * Ertl's joint maximum-likelihood estimator of two HyperLogLog sketches (SPEC 3 "Estimators",
 * the "mle" estimator) for the pair loops of host.similarity, equal to kmerspec.golden.hll_joint
 * within the tolerance SPEC 3 states (1e-6 |X u Y| on each cardinality).
 *
 * A pair costs two things: the register-pair statistic (one pass over the two sketches) and
 * the maximisation (projected Newton steps on three unknowns). Both are arranged so that
 * nothing is done twice and little is done per register:
 *
 * - Statistic. The likelihood needs, for each value k, the registers with K_X = k < K_Y
 *   (x_below), K_Y = k < K_X (y_below) and K_X = K_Y = k (equal); the other two histograms
 *   follow from each sketch's own histogram (x_above = hist_X - x_below - equal, ...). All
 *   three are differences of G(i, j) = #{K_X >= i, K_Y >= j} on the diagonal and beside it:
 *   equal[k] = G(k,k) - G(k+1,k) - G(k,k+1) + G(k+1,k+1), x_below[k] = G(k,k+1) - G(k+1,k+1),
 *   y_below[k] = G(k+1,k) - G(k+1,k+1). Each sketch is kept as w bit planes (bit b of every
 *   register, 64 registers a word); the plane "K >= k" of a sketch is w word operations away,
 *   and G(i, j) is the popcount of the AND of two such planes: 256 registers per AVX2
 *   instruction. Levels where a sketch's plane is all ones (below its smallest register) or
 *   empty (above its largest) are not counted: G follows from the other sketch's histogram.
 *   The columns are taken COLUMN_CHUNK at a time: a column's planes are made once per chunk,
 *   a row's once per chunk it meets. The sparse top levels of a sketch (few registers at or
 *   above them) are counted from a list of those registers instead ("The sparse top tail").
 * - Null fit. Under "nothing shared" (x = 0) the likelihood separates into one term per
 *   sketch, L_X(a) + L_Y(b) (the equal terms become phi(aB) + phi(bB)): its maximum, which the
 *   likelihood ratio needs, is the sum of two one-sketch maxima, computed once per sketch
 *   (mle_prepare) instead of once per pair.
 * - Maximisation. The projected Newton steps with an active set of SPEC 3, step for step as
 *   the golden model takes them (the same start, binding rates, damping, halving and KKT
 *   stop: where the likelihood is flat along a direction the end point depends on the path,
 *   so the path is the golden model's). An evaluation sums the terms of the values k present in the pair (about 10 to
 *   15), four values at a time in AVX2 with exp, expm1 and log written here with fused
 *   multiply-adds (within 2 ulp of the C library's, checked by the tests; the likelihood's
 *   value eight at a time at AVX-512, the same bits), or one at a time with the C library's
 *   where AVX2 and FMA are missing. It is split in two: the value (the
 *   exps and logs, most of the work) at every trial point, keeping what the derivatives are
 *   made of; the gradient and Hessian (no exp, no log) only at a point the step is taken to
 *   (they decide whether the maximum is reached). What does not change with the point (n B, n B^2 of
 *   each count, which four-value blocks have a nonzero count and need their logs) is made
 *   once per pair.
 *
 * Output per pair: |X only|, |Y only|, |X n Y| (m times the rates) and the likelihood ratio
 * LR of "shared = 0" (0 when the shared rate is 0), as kmerspec.golden.hll_joint.joint_mle.
 */
#include "_native.h"
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define HAVE_X86_DISPATCH 1
#endif

#define MAX_VALUES 64          /* register values 0..63 (w <= 6 at p >= 2; R <= 57 in range) */
#define HIST_SLOTS MAX_VALUES  /* per-sketch histogram row of mle_prepare */

/* The constants of SPEC 3's maximisation (kmerspec.golden.hll_joint). */
#define MAX_ITERATIONS 200
#define GAIN_TOLERANCE 1e-12
#define SUFFICIENT_RISE 1e-4
#define DAMPING 1e-9
#define START_FLOOR 1e-3
static const double SMALLEST_STEP = 9.094947017729282e-13; /* 2^-40 */

/* ---------------------------------------------------------------------------------------- */
/* Per-sketch data: bit planes, histogram, one-sketch maximum (mle_prepare).               */

typedef struct {
    const uint64_t *planes;    /* n x w x words: bit b of register 64 q + t at word q, bit t */
    const uint32_t *hist;      /* n x HIST_SLOTS */
    const double *null_value;  /* n: max over a of L_X(a) */
    const uint8_t *packed;     /* the packed registers (w = 4: two a byte), row_bytes a row */
    size_t row_bytes;
    size_t words;              /* m / 64 */
    unsigned p, w, r;          /* r: the top value R */
    double m;
    double linear[MAX_VALUES], log_coefficient[MAX_VALUES];  /* A_k, B_k */
} Prepared;

/* A_k, B_k of SPEC 3 for k = 0..r. */
static void coefficients(unsigned r, double *linear, double *log_coefficient)
{
    for (unsigned k = 0; k <= r; k++) {
        linear[k] = k == r ? 0.0 : ldexp(1.0, -(int)k);
        log_coefficient[k] = k == r ? ldexp(1.0, -(int)(k - 1)) : ldexp(1.0, -(int)k);
    }
}

/* One sketch's log-likelihood L(a) = -a S + sum_k h_k phi(a B_k) and its two derivatives. */
static double one_sketch_likelihood(const uint32_t *hist, unsigned r, const double *linear,
                                    const double *log_coefficient, double a, double *first,
                                    double *second)
{
    double sum_linear = 0.0;
    for (unsigned k = 0; k <= r; k++)
        sum_linear += hist[k] * linear[k];
    double value = -a * sum_linear, d1 = -sum_linear, d2 = 0.0;
    for (unsigned k = 1; k <= r; k++) {
        if (!hist[k])
            continue;
        double s = a * log_coefficient[k];
        if (!(s > 0)) {
            value = -INFINITY;
            continue;
        }
        double e = exp(-s), one = -expm1(-s);
        value += hist[k] * log(one);
        d1 += hist[k] * log_coefficient[k] * (e / one);
        d2 -= hist[k] * log_coefficient[k] * log_coefficient[k] * (e / (one * one));
    }
    *first = d1;
    *second = d2;
    return value;
}

/* max over a >= 0 of one sketch's L(a): the concave one-dimensional Newton iteration,
 * halved until L does not decrease, to the end of float64's precision. */
static double one_sketch_maximum(const uint32_t *hist, unsigned r, double m, double start)
{
    double linear[MAX_VALUES], log_coefficient[MAX_VALUES];
    coefficients(r, linear, log_coefficient);
    uint64_t above = 0;
    for (unsigned k = 1; k <= r; k++)
        above += hist[k];
    if (above == 0)
        return 0.0;  /* an empty sketch: L(a) = -a m, largest at a = 0 */
    double a = start > START_FLOOR ? start : START_FLOOR, d1, d2;
    double value = one_sketch_likelihood(hist, r, linear, log_coefficient, a, &d1, &d2);
    for (int iteration = 0; iteration < MAX_ITERATIONS; iteration++) {
        double step = d2 < 0 ? -d1 / d2 : d1;
        if (a == 0 && step <= 0)
            break;
        double t = 1.0, trial = a, trial_value = value, t1, t2;
        for (; t >= SMALLEST_STEP; t *= 0.5) {
            trial = a + t * step;
            trial = trial > 0 ? trial : 0.0;
            trial_value = one_sketch_likelihood(hist, r, linear, log_coefficient, trial, &t1,
                                                &t2);
            if (trial_value >= value)
                break;
        }
        if (t < SMALLEST_STEP)
            break;
        double moved = fabs(trial - a);
        a = trial;
        value = trial_value;
        d1 = t1;
        d2 = t2;
        if (moved <= 1e-15 * (1.0 + a) || !isfinite(a))
            break;
    }
    return value;
}

/* Unpack sketch x's registers (w = 4: two a byte). */
static void unpack(const Sketches *s, Py_ssize_t x, uint8_t *registers)
{
    const uint8_t *row = s->packed + (size_t)x * s->row_bytes;
    if (s->w == 4) {
        for (size_t i = 0; i < s->row_bytes; i++) {
            registers[2 * i] = row[i] & 15;
            registers[2 * i + 1] = row[i] >> 4;
        }
    } else {
        memcpy(registers, row, s->row_bytes);
    }
}

/* mle_prepare(packed, w, p, cards f64[n], planes u64[n * w * m/64], hist u32[n * 64],
 *             null f64[n]): each sketch's bit planes, register histogram and one-sketch
 * maximum of the log-likelihood (started at its "hll" estimate cards[i] / m). */
static PyObject *mle_prepare(PyObject *self, PyObject *args)
{
    PyObject *objects[5];
    int w, p;
    Array a[5];
    memset(a, 0, sizeof a);
    Sketches sketches;
    if (!PyArg_ParseTuple(args, "OiiOOOO", &objects[0], &w, &p, &objects[1], &objects[2],
                          &objects[3], &objects[4]))
        return NULL;
    if (get_typed_array(objects[1], &a[1], 8, KIND_FLOAT, 0, "cards") < 0 ||
        get_typed_array(objects[2], &a[2], 8, KIND_UNSIGNED, 1, "planes") < 0 ||
        get_typed_array(objects[3], &a[3], 4, KIND_UNSIGNED, 1, "hist") < 0 ||
        get_typed_array(objects[4], &a[4], 8, KIND_FLOAT, 1, "null") < 0 ||
        get_sketches(objects[0], &a[0], w, p, a[1].count, &sketches) < 0)
        goto fail;
    Py_ssize_t n = a[1].count;
    size_t m = (size_t)1 << p, words = m / 64;
    if (hll_top_rank((unsigned)p, (unsigned)w) >= MAX_VALUES) {
        PyErr_Format(PyExc_ValueError, "mle: the top register value %u exceeds %d",
                     hll_top_rank((unsigned)p, (unsigned)w), MAX_VALUES - 1);
        goto fail;
    }
    if ((size_t)a[2].count != (size_t)n * w * words || a[3].count != n * HIST_SLOTS ||
        a[4].count != n) {
        PyErr_SetString(PyExc_ValueError, "mle_prepare: inconsistent array sizes");
        goto fail;
    }
    const double *cards = a[1].view.buf;
    uint64_t *planes = a[2].view.buf;
    uint32_t *hist = a[3].view.buf;
    double *null = a[4].view.buf;
    uint8_t *registers = malloc(m);
    if (registers == NULL) {
        PyErr_NoMemory();
        goto fail;
    }
    unsigned r = hll_top_rank((unsigned)p, (unsigned)w);
    int bad = 0;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t x = 0; x < n && !bad; x++) {
        unpack(&sketches, x, registers);
        uint64_t *own = planes + (size_t)x * w * words;
        uint32_t *h = hist + (size_t)x * HIST_SLOTS;
        memset(own, 0, w * words * sizeof *own);
        memset(h, 0, HIST_SLOTS * sizeof *h);
        for (size_t i = 0; i < m; i++) {
            unsigned v = registers[i];
            if (v > r) {
                bad = 1;
                break;
            }
            h[v]++;
            for (int b = 0; b < w; b++)
                own[b * words + i / 64] |= (uint64_t)((v >> b) & 1) << (i % 64);
        }
        null[x] = one_sketch_maximum(h, r, (double)m, cards[x] / (double)m);
    }
    Py_END_ALLOW_THREADS
    free(registers);
    if (bad) {
        PyErr_Format(PyExc_ValueError, "a register exceeds the largest rank %u of p=%d, w=%d", r,
                     p, w);
        goto fail;
    }
    return release_and_return(a, 5, 0);
fail:
    return release_and_return(a, 5, 1);
}

/* ---------------------------------------------------------------------------------------- */
/* The register-pair statistic from bit planes.                                             */

/* The planes "register >= k" for k = first..last of a sketch's w bit planes, plane k at
 * levels + k * words. The comparison goes bit by bit from the lowest: ge holds "the bits so
 * far are >= k's", and a bit of k set asks for the register's bit too. */
typedef void (*ThresholdPlanes)(const uint64_t *planes, size_t words, unsigned w,
                                unsigned first, unsigned last, uint64_t *levels);

static void threshold_planes_scalar(const uint64_t *planes, size_t words, unsigned w,
                                    unsigned first, unsigned last, uint64_t *levels)
{
    for (size_t q = 0; q < words; q++) {
        uint64_t bits[8];
        for (unsigned b = 0; b < w; b++)
            bits[b] = planes[b * words + q];
        for (unsigned k = first; k <= last; k++) {
            uint64_t ge = ~(uint64_t)0;
            for (unsigned b = 0; b < w; b++)
                ge = (k >> b) & 1 ? bits[b] & ge : bits[b] | ge;
            levels[k * words + q] = ge;
        }
    }
}

#ifdef HAVE_X86_DISPATCH
/* w = 4: the fifteen planes from shared terms, t_k = "low three bits >= k": K >= k is
 * b3 | t_k for k < 8, b3 for 8 and b3 & t_(k-8) above. */
__attribute__((target("avx2")))
static void threshold_planes4_avx2(const uint64_t *planes, size_t words, unsigned first,
                                   unsigned last, uint64_t *levels)
{
    for (size_t q = 0; q + 4 <= words; q += 4) {
        __m256i b0 = _mm256_loadu_si256((const __m256i *)(planes + q));
        __m256i b1 = _mm256_loadu_si256((const __m256i *)(planes + words + q));
        __m256i b2 = _mm256_loadu_si256((const __m256i *)(planes + 2 * words + q));
        __m256i b3 = _mm256_loadu_si256((const __m256i *)(planes + 3 * words + q));
        __m256i either = _mm256_or_si256(b1, b0), both = _mm256_and_si256(b1, b0);
        __m256i t[8];
        t[1] = _mm256_or_si256(b2, either);
        t[2] = _mm256_or_si256(b2, b1);
        t[3] = _mm256_or_si256(b2, both);
        t[4] = b2;
        t[5] = _mm256_and_si256(b2, either);
        t[6] = _mm256_and_si256(b2, b1);
        t[7] = _mm256_and_si256(b2, both);
        for (unsigned k = first; k <= last; k++) {
            __m256i ge = k < 8 ? _mm256_or_si256(b3, t[k])
                         : k == 8 ? b3 : _mm256_and_si256(b3, t[k - 8]);
            _mm256_storeu_si256((__m256i *)(levels + k * words + q), ge);
        }
    }
}

__attribute__((target("avx2")))
static void threshold_planes_avx2(const uint64_t *planes, size_t words, unsigned w,
                                  unsigned first, unsigned last, uint64_t *levels)
{
    if (w == 4 && words % 4 == 0) {
        threshold_planes4_avx2(planes, words, first, last, levels);
        return;
    }
    size_t q = 0;
    for (; q + 4 <= words; q += 4) {
        __m256i bits[8];
        for (unsigned b = 0; b < w; b++)
            bits[b] = _mm256_loadu_si256((const __m256i *)(planes + b * words + q));
        for (unsigned k = first; k <= last; k++) {
            __m256i ge = _mm256_set1_epi64x(-1);
            for (unsigned b = 0; b < w; b++)
                ge = (k >> b) & 1 ? _mm256_and_si256(bits[b], ge) : _mm256_or_si256(bits[b], ge);
            _mm256_storeu_si256((__m256i *)(levels + k * words + q), ge);
        }
    }
    if (q < words) {
        /* the tail words, as the scalar loop does them */
        for (; q < words; q++)
            for (unsigned k = first; k <= last; k++) {
                uint64_t ge = ~(uint64_t)0;
                for (unsigned b = 0; b < w; b++) {
                    uint64_t bit = planes[b * words + q];
                    ge = (k >> b) & 1 ? bit & ge : bit | ge;
                }
                levels[k * words + q] = ge;
            }
    }
}

/* threshold_planes4_avx2 eight words at a time (w = 4, words a multiple of 8; else the AVX2
 * loops). */
__attribute__((target("avx512f")))
static void threshold_planes_avx512(const uint64_t *planes, size_t words, unsigned w,
                                    unsigned first, unsigned last, uint64_t *levels)
{
    if (w != 4 || words % 8) {
        threshold_planes_avx2(planes, words, w, first, last, levels);
        return;
    }
    for (size_t q = 0; q < words; q += 8) {
        __m512i b0 = _mm512_loadu_si512(planes + q);
        __m512i b1 = _mm512_loadu_si512(planes + words + q);
        __m512i b2 = _mm512_loadu_si512(planes + 2 * words + q);
        __m512i b3 = _mm512_loadu_si512(planes + 3 * words + q);
        __m512i either = _mm512_or_si512(b1, b0), both = _mm512_and_si512(b1, b0);
        __m512i t[8];
        t[1] = _mm512_or_si512(b2, either);
        t[2] = _mm512_or_si512(b2, b1);
        t[3] = _mm512_or_si512(b2, both);
        t[4] = b2;
        t[5] = _mm512_and_si512(b2, either);
        t[6] = _mm512_and_si512(b2, b1);
        t[7] = _mm512_and_si512(b2, both);
        for (unsigned k = first; k <= last; k++) {
            __m512i ge = k < 8 ? _mm512_or_si512(b3, t[k])
                         : k == 8 ? b3 : _mm512_and_si512(b3, t[k - 8]);
            _mm512_storeu_si512(levels + k * words + q, ge);
        }
    }
}
#endif

static ThresholdPlanes threshold_planes = threshold_planes_scalar;

/* popcount(a & b) over `words` words: G(i, j) of two planes. */
typedef uint64_t (*CountAnd)(const uint64_t *a, const uint64_t *b, size_t words);

static uint64_t count_and_scalar(const uint64_t *a, const uint64_t *b, size_t words)
{
    uint64_t count = 0;
    for (size_t q = 0; q < words; q++)
        count += (uint64_t)__builtin_popcountll(a[q] & b[q]);
    return count;
}

#ifdef HAVE_X86_DISPATCH
__attribute__((target("popcnt")))
static uint64_t count_and_popcnt(const uint64_t *a, const uint64_t *b, size_t words)
{
    uint64_t count = 0;
    for (size_t q = 0; q < words; q++)
        count += (uint64_t)__builtin_popcountll(a[q] & b[q]);
    return count;
}

/* The popcount of each byte, by nibble lookups (Mula's method). */
__attribute__((target("avx2")))
static inline __m256i popcount_bytes(__m256i v, __m256i table, __m256i nibble)
{
    __m256i low = _mm256_and_si256(v, nibble);
    __m256i high = _mm256_and_si256(_mm256_srli_epi16(v, 4), nibble);
    return _mm256_add_epi8(_mm256_shuffle_epi8(table, low), _mm256_shuffle_epi8(table, high));
}

/* Harley and Seal's carry-save adders: 32 words (8 vectors) of a & b folded into bit-sliced
 * counters of ones, twos, fours and eights; only the eights' popcount each round. */
#define CARRY_SAVE(high, low, a, b, c)                                                  \
    do {                                                                                \
        __m256i u_ = _mm256_xor_si256(a, b);                                            \
        high = _mm256_or_si256(_mm256_and_si256(a, b), _mm256_and_si256(u_, c));        \
        low = _mm256_xor_si256(u_, c);                                                  \
    } while (0)

__attribute__((target("avx2")))
static uint64_t count_and_avx2(const uint64_t *a, const uint64_t *b, size_t words)
{
    const __m256i table = _mm256_setr_epi8(0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2, 3, 3, 4,
                                           0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2, 3, 3, 4);
    const __m256i nibble = _mm256_set1_epi8(15), none = _mm256_setzero_si256();
    __m256i ones = none, twos = none, fours = none, total = none;
    size_t q = 0;
    for (; q + 32 <= words; q += 32) {
        __m256i v[8];
        for (int i = 0; i < 8; i++)
            v[i] = _mm256_and_si256(_mm256_loadu_si256((const __m256i *)(a + q + 4 * i)),
                                    _mm256_loadu_si256((const __m256i *)(b + q + 4 * i)));
        __m256i twos_a, twos_b, fours_a, fours_b, eights;
        CARRY_SAVE(twos_a, ones, ones, v[0], v[1]);
        CARRY_SAVE(twos_b, ones, ones, v[2], v[3]);
        CARRY_SAVE(fours_a, twos, twos, twos_a, twos_b);
        CARRY_SAVE(twos_a, ones, ones, v[4], v[5]);
        CARRY_SAVE(twos_b, ones, ones, v[6], v[7]);
        CARRY_SAVE(fours_b, twos, twos, twos_a, twos_b);
        CARRY_SAVE(eights, fours, fours, fours_a, fours_b);
        total = _mm256_add_epi64(total, _mm256_sad_epu8(popcount_bytes(eights, table, nibble),
                                                        none));
    }
    total = _mm256_slli_epi64(total, 3);
    total = _mm256_add_epi64(total, _mm256_slli_epi64(
        _mm256_sad_epu8(popcount_bytes(fours, table, nibble), none), 2));
    total = _mm256_add_epi64(total, _mm256_slli_epi64(
        _mm256_sad_epu8(popcount_bytes(twos, table, nibble), none), 1));
    total = _mm256_add_epi64(total, _mm256_sad_epu8(popcount_bytes(ones, table, nibble), none));
    uint64_t lanes[4];
    _mm256_storeu_si256((__m256i *)lanes, total);
    uint64_t count = lanes[0] + lanes[1] + lanes[2] + lanes[3];
    for (; q < words; q++)
        count += (uint64_t)__builtin_popcountll(a[q] & b[q]);
    return count;
}

/* AVX-512 VPOPCNTDQ: a popcount instruction per 512 bits, no carry-save folding needed (about
 * a third of count_and_avx2's instructions, the largest part of a pair's cost; issue 52). */
__attribute__((target("avx512f,avx512vpopcntdq")))
static uint64_t count_and_avx512(const uint64_t *a, const uint64_t *b, size_t words)
{
    __m512i total = _mm512_setzero_si512(), other = _mm512_setzero_si512();
    size_t q = 0;
    for (; q + 16 <= words; q += 16) {   /* two accumulators: the adds do not wait in line */
        total = _mm512_add_epi64(total, _mm512_popcnt_epi64(_mm512_and_si512(
            _mm512_loadu_si512(a + q), _mm512_loadu_si512(b + q))));
        other = _mm512_add_epi64(other, _mm512_popcnt_epi64(_mm512_and_si512(
            _mm512_loadu_si512(a + q + 8), _mm512_loadu_si512(b + q + 8))));
    }
    uint64_t count = (uint64_t)_mm512_reduce_add_epi64(_mm512_add_epi64(total, other));
    for (; q < words; q++)
        count += (uint64_t)__builtin_popcountll(a[q] & b[q]);
    return count;
}
#endif

/* What the statistic and the likelihood of one sketch need: its planes, histogram, the
 * levels where its plane "K >= k" is neither all ones nor empty (low < k <= high), and
 * above[k] = #{K >= k}. */
typedef struct {
    const uint64_t *planes;
    const uint32_t *hist;
    const uint8_t *row;        /* its packed registers */
    unsigned low, high;
    uint32_t above[MAX_VALUES + 1];
    /* the top tail: the registers >= tail_level (tail_level > high: none), position << 8 |
     * K - tail_level each, listed by make_tail */
    unsigned tail_level;
    uint32_t tail_count;
    uint32_t *tail;
    double linear_sum;         /* sum_k hist[k] A_k: S_X of the likelihood, per sketch */
} SketchView;

/*
 * The sparse top tail. Above a level where a sketch has few registers (the higher levels of
 * a small sketch: at p = 14 a sketch of 1e5 k-mers has about 190 registers >= 10 and 6 at
 * 15, yet each level costs three popcounts of all m registers), G(i, j) for i at or above
 * that level is counted from the list of those registers instead, reading the other sketch's
 * register at each: about 13 instructions a register against about 2.2 a word of the
 * bit-plane count. The level is the one that minimises the estimated cost of both
 * (TALLY_COST per listed register, three counts per level below it; 20, not 13: the best of
 * 9 .. 32 measured by callgrind on the bench's sketches, as a tail is also tallied for a pair
 * where it saves only a few counts); the counts are the same integers either way. (The same
 * for the bottom levels, "K >= i" nearly all ones, was tried: what it saved in counts the
 * pair loop's extra branches cost back, 31.4k -> 31.6k instructions a pair.)
 */
#define TAIL_LIMIT 512             /* registers listed at most */
#define TALLY_COST 20.0            /* see above */
#define COUNT_COST(words) (2.2 * (double)(words) + 30.0)  /* per count_and call */

/* The largest tail listed (TAIL_LIMIT; 0: none), and the tails tallied so far: set and read
 * by the tests through mle_tails. */
static int tail_limit = TAIL_LIMIT;
static uint64_t tails_tallied = 0;

static void view_of(const Prepared *prepared, Py_ssize_t x, SketchView *view)
{
    view->planes = prepared->planes + (size_t)x * prepared->w * prepared->words;
    view->hist = prepared->hist + (size_t)x * HIST_SLOTS;
    view->row = prepared->packed + (size_t)x * prepared->row_bytes;
    unsigned r = prepared->r, low = 0, high = 0;
    while (low < r && view->hist[low] == 0)
        low++;
    for (unsigned k = 0; k <= r; k++)
        if (view->hist[k])
            high = k;
    view->low = low;
    view->high = high;
    view->linear_sum = 0.0;
    for (unsigned k = 0; k <= r; k++)
        view->linear_sum += view->hist[k] * prepared->linear[k];
    view->above[r + 1] = 0;
    for (int k = (int)r; k >= 0; k--)
        view->above[k] = view->above[k + 1] + view->hist[k];
    /* no tail: the levels low + 1 .. high counted by planes, three counts each */
    double level_cost = 3.0 * COUNT_COST(prepared->words), best = level_cost * (high - low);
    view->tail_level = high + 1;
    view->tail_count = 0;
    for (unsigned t = high; t > low; t--) {
        if (view->above[t] > (uint32_t)tail_limit)
            break;
        double cost = TALLY_COST * view->above[t] + level_cost * (t - low - 1);
        if (cost < best) {
            best = cost;
            view->tail_level = t;
        }
    }
}

static inline unsigned register_value(const uint8_t *row, unsigned w, uint32_t i)
{
    return w == 4 ? (row[i >> 1] >> ((i & 1) << 2)) & 15 : row[i];
}

/* List a view's tail from its plane "K >= tail_level" (made by threshold_planes) into
 * buffer (TAIL_LIMIT entries): each register's position << 8 | K - tail_level. */
static void make_tail(SketchView *view, const uint64_t *levels, size_t words, unsigned w,
                      unsigned r, uint32_t *buffer)
{
    view->tail = buffer;
    view->tail_count = 0;
    if (view->tail_level > view->high)
        return;
    const uint64_t *plane = levels + view->tail_level * words;
    uint32_t count = 0;
    for (size_t q = 0; q < words; q++)
        for (uint64_t bits = plane[q]; bits; bits &= bits - 1) {
            uint32_t i = (uint32_t)(q * 64 + __builtin_ctzll(bits));
            buffer[count++] = i << 8 | (register_value(view->row, w, i) - view->tail_level);
        }
    view->tail_count = count;
}

/* From own's tail: suffix[d + 1][i] = #{K_own >= i, K_other >= i + d}, d = -1, 0, 1, for
 * i >= own->tail_level (G(i, i + d) when own is X, G(i + d, i) when own is Y). The listed
 * registers are tallied by (K_own, K_other), a load and an increment each, then summed. */
static void tail_counts(const SketchView *own, const SketchView *other, unsigned w,
                        unsigned r, uint32_t suffix[3][MAX_VALUES + 2])
{
    unsigned t = own->tail_level, width = r + 1, cells = (r - t + 1) * width;
    /* two tallies, even and odd entries: most registers of a tail fall in a few cells, and
     * consecutive increments of one cell wait for each other through memory */
    uint32_t tally[2 * MAX_VALUES * MAX_VALUES];
    uint32_t *odd = tally + cells;
    memset(tally, 0, 2 * cells * sizeof *tally);
    const uint8_t *row = other->row;
    const uint32_t *entries = own->tail;
    uint32_t e = 0, count = own->tail_count;
    if (w == 4) {
        for (; e + 2 <= count; e += 2) {
            uint32_t a = entries[e] >> 8, b = entries[e + 1] >> 8;
            tally[(entries[e] & 0xFF) * width + ((row[a >> 1] >> ((a & 1) << 2)) & 15)]++;
            odd[(entries[e + 1] & 0xFF) * width + ((row[b >> 1] >> ((b & 1) << 2)) & 15)]++;
        }
        if (e < count) {
            uint32_t a = entries[e] >> 8;
            tally[(entries[e] & 0xFF) * width + ((row[a >> 1] >> ((a & 1) << 2)) & 15)]++;
        }
    } else {
        for (; e + 2 <= count; e += 2) {
            tally[(entries[e] & 0xFF) * width + row[entries[e] >> 8]]++;
            odd[(entries[e + 1] & 0xFF) * width + row[entries[e + 1] >> 8]]++;
        }
        if (e < count)
            tally[(entries[e] & 0xFF) * width + row[entries[e] >> 8]]++;
    }
    /* sum[j] = #{K_own >= i, K_other >= j} for the rows i = r down to t */
    uint32_t sum[MAX_VALUES + 2];
    for (unsigned j = t - 1; j <= r + 1; j++)
        sum[j] = 0;
    for (int i = (int)r; i >= (int)t; i--) {
        const uint32_t *counts = tally + (i - t) * width, *odd_counts = counts + cells;
        uint32_t at_least = 0;
        for (int j = (int)r; j >= (int)t - 1; j--) {
            at_least += counts[j] + odd_counts[j];
            sum[j] += at_least;
        }
        suffix[0][i] = sum[i - 1];
        suffix[1][i] = sum[i];
        suffix[2][i] = sum[i + 1];
    }
}

typedef void (*TailCounts)(const SketchView *own, const SketchView *other, unsigned w,
                           unsigned r, uint32_t suffix[3][MAX_VALUES + 2]);

#ifdef HAVE_X86_DISPATCH
/* The same counts (w = 4) sixteen registers at a time, no tally: the other sketch's register
 * at each listed position by a gather of the packed row's 32-bit words; a register counts
 * in suffix[d + 1][i] for the levels t <= i <= min(K_own, K_other - d), so with the key
 * min(K_own, K_other - d) - t + 1 (0 for none) of each d in one byte, the counts of a level
 * are a byte compare and a masked byte increment per sixteen registers (the three keys of
 * sixteen registers in one vector), added up at the end. TAIL_LIMIT / 16 = 32 increments a
 * byte at most: no overflow. Measured on Intel (Sapphire Rapids class, 1.02x pairs per
 * CPU-s); on AMD Zen 4, whose gathers are microcoded, not measured (an earlier gather
 * variant there: 0.98x): if it loses there, set tail_counts_of back to tail_counts for
 * AMD in mle_use_simd_level. */
__attribute__((target("avx512f,avx512bw")))
static void tail_counts_avx512(const SketchView *own, const SketchView *other, unsigned w,
                               unsigned r, uint32_t suffix[3][MAX_VALUES + 2])
{
    if (w != 4) {
        tail_counts(own, other, w, r, suffix);
        return;
    }
    /* the levels t..high of own (above, the counts are 0: no key reaches them) */
    unsigned t = own->tail_level, levels = own->high - t + 1;
    for (unsigned i = own->high + 1; i <= r; i++)
        suffix[0][i] = suffix[1][i] = suffix[2][i] = 0;
    __m512i counts[MAX_VALUES];
    for (unsigned l = 0; l < levels; l++)
        counts[l] = _mm512_setzero_si512();
    const uint32_t *entries = own->tail;
    const __m512i low_byte = _mm512_set1_epi32(0xFF), seven = _mm512_set1_epi32(7),
                  fifteen = _mm512_set1_epi32(15), one = _mm512_set1_epi32(1),
                  zero = _mm512_setzero_si512(), base = _mm512_set1_epi32(1 - (int)t),
                  minus_one = _mm512_set1_epi8(-1);
    for (uint32_t e = 0; e < own->tail_count; e += 16) {
        uint32_t left = own->tail_count - e;
        __mmask16 lanes = left >= 16 ? 0xFFFF : (__mmask16)((1u << left) - 1);
        __m512i entry = _mm512_maskz_loadu_epi32(lanes, entries + e);
        __m512i position = _mm512_srli_epi32(entry, 8);
        __m512i own_key = _mm512_add_epi32(_mm512_and_si512(entry, low_byte), one);
        __m512i word = _mm512_mask_i32gather_epi32(zero, lanes, _mm512_srli_epi32(position, 3),
                                                   other->row, 4);
        __m512i value = _mm512_and_si512(_mm512_srlv_epi32(word, _mm512_slli_epi32(
            _mm512_and_si512(position, seven), 2)), fifteen);
        __m512i other_key = _mm512_add_epi32(value, base);  /* K_other - t + 1 */
        /* d = -1, 0, 1: min(own, max(other - d, 0)), 0 in the lanes past the list */
        __m512i below = _mm512_maskz_min_epi32(lanes, own_key, _mm512_max_epi32(
            _mm512_add_epi32(other_key, one), zero));
        __m512i same = _mm512_maskz_min_epi32(lanes, own_key, _mm512_max_epi32(other_key, zero));
        __m512i above = _mm512_maskz_min_epi32(lanes, own_key, _mm512_max_epi32(
            _mm512_sub_epi32(other_key, one), zero));
        __m512i keys = _mm512_inserti32x4(_mm512_inserti32x4(_mm512_castsi128_si512(
            _mm512_cvtepi32_epi8(below)), _mm512_cvtepi32_epi8(same), 1),
            _mm512_cvtepi32_epi8(above), 2);
        for (unsigned l = 0; l < levels; l++) {
            __mmask64 counted = _mm512_cmpge_epu8_mask(keys, _mm512_set1_epi8((char)(l + 1)));
            counts[l] = _mm512_mask_sub_epi8(counts[l], counted, counts[l], minus_one);
        }
    }
    for (unsigned l = 0; l < levels; l++) {
        uint64_t sums[8];
        _mm512_storeu_si512(sums, _mm512_sad_epu8(counts[l], zero));
        suffix[0][t + l] = (uint32_t)(sums[0] + sums[1]);
        suffix[1][t + l] = (uint32_t)(sums[2] + sums[3]);
        suffix[2][t + l] = (uint32_t)(sums[4] + sums[5]);
    }
}
#endif

static TailCounts tail_counts_of = tail_counts;

/* The pair statistic of SPEC 3 in the form the likelihood sums it. */
typedef struct {
    uint32_t x_below[MAX_VALUES + 1], y_below[MAX_VALUES + 1], equal[MAX_VALUES + 1];
} PairCounts;

/* The most memory a call keeps its rows' tail lists in (TAIL_LIMIT entries a row). */
#define ROW_TAILS_BYTES ((size_t)8 << 20)

/* Columns whose planes "K >= k" are kept while the rows of a call meet them. */
#define COLUMN_CHUNK 16

/* Work space of one call: the planes "K >= k" (levels 0..r + 1, plane k at k * words) of the
 * row sketch and of a chunk of column sketches (made for the levels neither all ones nor
 * empty). */
typedef struct {
    uint64_t *row_levels, *column_levels;
    uint32_t *row_tail, *column_tails;  /* TAIL_LIMIT entries each */
    size_t words, level_words;
    uint64_t tallies;                   /* tail_counts calls */
} Workspace;

static CountAnd count_and = count_and_scalar;

/* G(i, j) = #{K_X >= i, K_Y >= j} for |i - j| <= 1, then the three histograms. */
static void pair_counts(const Prepared *prepared, const SketchView *x, const SketchView *y,
                        const uint64_t *x_levels, const uint64_t *y_levels,
                        Workspace *space, PairCounts *out)
{
    unsigned r = prepared->r;
    size_t words = space->words;
    /* g[k][0] = G(k, k), g[k][1] = G(k, k + 1), g[k][2] = G(k + 1, k) */
    uint64_t g[MAX_VALUES + 2][3];
    /* the tails' counts, tallied when first asked for */
    uint32_t x_tail[3][MAX_VALUES + 2], y_tail[3][MAX_VALUES + 2];
    int x_tallied = 0, y_tallied = 0;
    /* k = 1 .. r: the three histograms need no other (high <= r: a count beyond it is 0) */
    for (unsigned k = 1; k <= r; k++) {
        for (unsigned c = 0; c < 3; c++) {
            unsigned i = k + (c == 2), j = k + (c == 1);
            if (i > x->high || j > y->high)
                g[k][c] = 0;
            else if (i <= x->low)  /* X's plane is all ones */
                g[k][c] = y->above[j];
            else if (j <= y->low)
                g[k][c] = x->above[i];
            else if (i >= x->tail_level) {
                if (!x_tallied) {
                    tail_counts_of(x, y, prepared->w, r, x_tail);
                    x_tallied = 1;
                    space->tallies++;
                }
                g[k][c] = x_tail[(int)j - (int)i + 1][i];
            } else if (j >= y->tail_level) {
                if (!y_tallied) {
                    tail_counts_of(y, x, prepared->w, r, y_tail);
                    y_tallied = 1;
                    space->tallies++;
                }
                g[k][c] = y_tail[(int)i - (int)j + 1][j];
            } else
                g[k][c] = count_and(x_levels + i * words, y_levels + j * words, words);
        }
    }
    for (unsigned k = 1; k <= r; k++) {
        uint64_t next = k + 1 <= r ? g[k + 1][0] : 0;  /* G(k + 1, k + 1) */
        out->equal[k] = (uint32_t)(g[k][0] - g[k][2] - g[k][1] + next);
        out->x_below[k] = (uint32_t)(g[k][1] - next);
        out->y_below[k] = (uint32_t)(g[k][2] - next);
    }
}

/* ---------------------------------------------------------------------------------------- */
/* The log-likelihood of SPEC 3 with its gradient and Hessian.                             */

/* The terms of the values k present in a pair, in the order k = 1..R (padded with zero
 * counts to a multiple of 4), with what every evaluation of the likelihood at another point
 * would otherwise recompute. */
#define MAX_TERMS (MAX_VALUES + 4)
#define MAX_VECTORS (MAX_TERMS / 4)

/* The five histograms of a pair, in this order in Terms.counts. */
enum { X_BELOW, Y_BELOW, X_ABOVE, Y_ABOVE, EQUAL, HISTOGRAMS };

typedef struct {
    int count;
    double linear[3];  /* S_X, S_Y, S_shared */
    double b[MAX_TERMS];
    double counts[HISTOGRAMS][MAX_TERMS];
    /* n B and n B^2 (the derivatives' factors), and all bits set where n is nonzero */
    double count_b[HISTOGRAMS][MAX_TERMS], count_bb[HISTOGRAMS][MAX_TERMS];
    uint64_t used[HISTOGRAMS][MAX_TERMS];
    uint8_t used8[HISTOGRAMS][MAX_TERMS / 8 + 1];  /* the same, a bit a term, eight a byte */
    /* the four-term blocks h * MAX_TERMS + 4 i of the histograms with a nonzero count: only
     * their logs are taken (about a third of the (h, k) are empty) */
    int logs, log_block[HISTOGRAMS * MAX_VECTORS];
} Terms;

/* Terms of `count` values (B_k, and the five counts filled in, count a multiple of 4). */
static void finish_terms_scalar(Terms *terms)
{
    terms->logs = 0;
    for (int h = 0; h < HISTOGRAMS; h++)
        for (int t = 0; t < terms->count; t++) {
            double n = terms->counts[h][t], b = terms->b[t];
            terms->count_b[h][t] = n * b;
            terms->count_bb[h][t] = n * b * b;
            terms->used[h][t] = n != 0 ? ~(uint64_t)0 : 0;
            if (t % 8 == 0)
                terms->used8[h][t / 8] = 0;
            terms->used8[h][t / 8] |= (uint8_t)((n != 0) << (t % 8));
            if (t % 4 == 0 && (n != 0 || terms->counts[h][t + 1] != 0 ||
                               terms->counts[h][t + 2] != 0 || terms->counts[h][t + 3] != 0))
                terms->log_block[terms->logs++] = h * MAX_TERMS + t;
        }
}

#ifdef HAVE_X86_DISPATCH
/* The same, four terms an instruction (the same products, (n B) B, in the same order): it
 * is made once per pair, and done a term at a time it cost as much as a fifth of the
 * likelihood's evaluations. */
__attribute__((target("avx2")))
static void finish_terms_avx2(Terms *terms)
{
    const __m256d zero = _mm256_setzero_pd();
    terms->logs = 0;
    for (int h = 0; h < HISTOGRAMS; h++)
        for (int t = 0; t < terms->count; t += 4) {
            __m256d n = _mm256_loadu_pd(terms->counts[h] + t);
            __m256d nb = _mm256_mul_pd(n, _mm256_loadu_pd(terms->b + t));
            _mm256_storeu_pd(terms->count_b[h] + t, nb);
            _mm256_storeu_pd(terms->count_bb[h] + t,
                             _mm256_mul_pd(nb, _mm256_loadu_pd(terms->b + t)));
            __m256d used = _mm256_cmp_pd(n, zero, _CMP_NEQ_UQ);
            _mm256_storeu_pd((double *)terms->used[h] + t, used);
            if (t % 8 == 0)
                terms->used8[h][t / 8] = 0;
            terms->used8[h][t / 8] |= (uint8_t)(_mm256_movemask_pd(used) << (t % 8));
            if (_mm256_movemask_pd(used))
                terms->log_block[terms->logs++] = h * MAX_TERMS + t;
        }
}
#endif

typedef void (*FinishTerms)(Terms *terms);
static FinishTerms finish_terms = finish_terms_scalar;

/* Pad the terms with zero counts to a multiple of 4, then finish_terms. */
static void pad_terms(Terms *terms)
{
    while (terms->count % 4) {
        int t = terms->count++;
        terms->b[t] = 1.0;
        for (int h = 0; h < HISTOGRAMS; h++)
            terms->counts[h][t] = 0.0;
    }
    finish_terms(terms);
}

typedef struct {
    double value, grad[3], hess[3][3];
} Evaluation;

/* A point the likelihood was evaluated at: its value and what its derivatives are made of
 * (e^-aB, e^-bB, e^-xB and their complements, and the five log arguments per value k), so
 * that a trial point's derivatives are computed only if the step is taken. */
typedef struct {
    double value;
    double rates[3];
    double u[MAX_TERMS], v[MAX_TERMS], y[MAX_TERMS];
    double one_u[MAX_TERMS], one_v[MAX_TERMS], one_y[MAX_TERMS];
    double q[HISTOGRAMS][MAX_TERMS];
    Evaluation scalar;  /* the C library's level computes the derivatives with the value */
} Point;

typedef double (*EvaluateValue)(const Terms *terms, const double rates[3], Point *point);
typedef void (*EvaluateDerivatives)(const Terms *terms, const Point *point, Evaluation *out);

/* phi(s) = log(1 - e^-s) with e = e^-s, one = 1 - e given: n phi, n phi' = n e / one and
 * n phi'' = -n e / one^2, nothing for n = 0. */
static inline void add_single(double n, double bk, double e, double one, double *value,
                              double *first, double *second)
{
    if (n == 0)
        return;
    *value += n * log(one);
    double ratio = e / one;
    *first += n * bk * ratio;
    *second -= n * bk * bk * (ratio / one);
}

static double evaluate_value_scalar(const Terms *terms, const double rates[3], Point *point)
{
    double a = rates[0], b = rates[1], x = rates[2];
    double value = -(a * terms->linear[0] + b * terms->linear[1] + x * terms->linear[2]);
    double grad[3] = {-terms->linear[0], -terms->linear[1], -terms->linear[2]};
    double hess[3][3] = {{0}};
    for (int t = 0; t < terms->count; t++) {
        double bk = terms->b[t];
        double u = exp(-a * bk), v = exp(-b * bk), y = exp(-x * bk);
        double one_u = -expm1(-a * bk), one_v = -expm1(-b * bk), one_y = -expm1(-x * bk);
        double f1, f2;
        /* (a + x) B: X below Y */
        f1 = f2 = 0.0;
        add_single(terms->counts[X_BELOW][t], bk, u * y, one_u + u * one_y, &value, &f1, &f2);
        grad[0] += f1, grad[2] += f1;
        hess[0][0] += f2, hess[0][2] += f2, hess[2][2] += f2;
        /* (b + x) B: Y below X */
        f1 = f2 = 0.0;
        add_single(terms->counts[Y_BELOW][t], bk, v * y, one_v + v * one_y, &value, &f1, &f2);
        grad[1] += f1, grad[2] += f1;
        hess[1][1] += f2, hess[1][2] += f2, hess[2][2] += f2;
        f1 = f2 = 0.0;
        add_single(terms->counts[X_ABOVE][t], bk, u, one_u, &value, &f1, &f2);
        grad[0] += f1, hess[0][0] += f2;
        f1 = f2 = 0.0;
        add_single(terms->counts[Y_ABOVE][t], bk, v, one_v, &value, &f1, &f2);
        grad[1] += f1, hess[1][1] += f2;
        double n = terms->counts[EQUAL][t];
        if (n == 0)
            continue;
        double h = 1.0 - one_u * one_v, g = one_y + y * one_u * one_v;
        value += n * log(g);
        double d[3] = {bk * y * u * one_v / g, bk * y * v * one_u / g, bk * y * h / g};
        double b2y = bk * bk * y / g;
        double second[3][3] = {{-b2y * u * one_v, b2y * u * v, -b2y * u * one_v},
                               {b2y * u * v, -b2y * v * one_u, -b2y * v * one_u},
                               {-b2y * u * one_v, -b2y * v * one_u, -b2y * h}};
        for (int i = 0; i < 3; i++) {
            grad[i] += n * d[i];
            for (int j = i; j < 3; j++)
                hess[i][j] += n * (second[i][j] - d[i] * d[j]);
        }
    }
    Evaluation *out = &point->scalar;
    out->value = value;
    for (int i = 0; i < 3; i++) {
        out->grad[i] = grad[i];
        for (int j = 0; j < 3; j++)
            out->hess[i][j] = i <= j ? hess[i][j] : hess[j][i];
    }
    point->value = value;
    return value;
}

static void evaluate_derivatives_scalar(const Terms *terms, const Point *point, Evaluation *out)
{
    *out = point->scalar;
}

#ifdef HAVE_X86_DISPATCH
/*
 * exp, expm1 and log of four doubles. Cody and Waite's reduction x = n ln 2 + r, |r| <= ln 2 / 2,
 * then Taylor polynomials of degree 13 (|r|^14 / 14! < 2^-60 relative); log by the exponent and
 * 2 atanh(r / (2 + r)) for the mantissa 1 + r in [sqrt(1/2), sqrt(2)) (log_positive). Only
 * what the likelihood needs: exp of x <= 0 (0 below -708, where the terms are below 1e-307),
 * log of normal positive numbers and 0 (-inf). exp within 2 ulp of the C library's, log
 * within 1 on (0, 1] (tests/test_estimators.py).
 */
#define LN2_HI 6.93147180369123816490e-01
#define LN2_LO 1.90821492927058770002e-10
#define INV_LN2 1.44269504088896338700e+00

/* 1/i!, the Taylor coefficients of e^r - 1 = r (1/1! + r (1/2! + r (... + r / 13!))) */
static const double inverse_factorial[14] = {
    1.0, 1.0, 1.0 / 2, 1.0 / 6, 1.0 / 24, 1.0 / 120, 1.0 / 720, 1.0 / 5040, 1.0 / 40320,
    1.0 / 362880, 1.0 / 3628800, 1.0 / 39916800, 1.0 / 479001600, 1.0 / 6227020800.0};

/* The arithmetic of exp_negative and log_positive, written once for four lanes (W = _mm256,
 * V, VI = __m256d, __m256i, SI = si256, I64 = _mm256_set1_epi64x) and for eight (_mm512,
 * __m512d, __m512i, si512, _mm512_set1_epi64): every lane the same operations in the same
 * order, so both widths give the same bits. The comparisons and blends, whose masks differ by
 * width, are each function's own. */

/* x = n ln 2 + r, |r| <= ln 2 / 2 (n LN2_HI is exact: LN2_HI has 32 bits, |n| < 2^11);
 * em1 = e^r - 1, each step of the polynomial one fused multiply-add; scale = 2^n by the
 * exponent bits, n clamped at -1022 (x >= -708 there). */
#define EXP_PARTS(W, V, SI, I64, ROUND, x, n, em1, scale)                                   \
    do {                                                                                  \
        n = ROUND(W##_mul_pd(x, W##_set1_pd(INV_LN2)));                                    \
        V r_ = W##_fnmadd_pd(n, W##_set1_pd(LN2_LO),                                       \
                             W##_fnmadd_pd(n, W##_set1_pd(LN2_HI), x));                    \
        V p_ = W##_set1_pd(inverse_factorial[13]);                                         \
        for (int i_ = 12; i_ >= 1; i_--)                                                   \
            p_ = W##_fmadd_pd(r_, p_, W##_set1_pd(inverse_factorial[i_]));                  \
        em1 = W##_mul_pd(r_, p_);                                                          \
        scale = W##_cast##SI##_pd(W##_slli_epi64(W##_add_epi64(W##_cvtepi32_epi64(       \
            W##_cvtpd_epi32(W##_max_pd(n, W##_set1_pd(-1022.0)))), I64(1023)), 52));       \
    } while (0)

/* log x for x = 2^k (1 + r), 1 + r in [sqrt(1/2), sqrt(2)): k and 1 + r from the bits by
 * integer operations (adding 1 - sqrt(1/2) in the bits' order carries into the exponent
 * exactly where the mantissa is at least sqrt(2)'s), r exact. log(1 + r) = 2 atanh(s),
 * s = r / (2 + r), |s| <= 0.1716, and 2 s = r - r^2/2 + s r^2/2, so that
 * log(1 + r) = r - (r^2/2 - s (r^2/2 + R)), R = 2 s^2/3 + 2 s^4/5 + ... + 2 s^20/21 (the
 * series' rest below 2^-60 relative): the exact r first, the rounded terms small beside it;
 * k ln 2 in two parts (fdlibm's arrangement). */
#define LOG_PARTS(W, V, VI, SI, I64, x, result)                                             \
    do {                                                                                  \
        VI shifted_ = W##_add_epi64(W##_castpd_##SI(x),                                    \
                                    I64(0x3FF0000000000000ll - 0x3FE6A09E667F3BCDll));     \
        /* k as a double: the biased exponent under 2^52's bits, minus 2^52 + 1023 */      \
        V k_ = W##_sub_pd(W##_cast##SI##_pd(W##_or_##SI(W##_srli_epi64(shifted_, 52),      \
                                                         I64(0x4330000000000000ll))),       \
                          W##_set1_pd(4503599627370496.0 + 1023.0));                       \
        V r_ = W##_sub_pd(W##_cast##SI##_pd(W##_add_epi64(                                \
            W##_and_##SI(shifted_, I64(0x000FFFFFFFFFFFFFll)), I64(0x3FE6A09E667F3BCDll))),  \
            W##_set1_pd(1.0));                                                             \
        V s_ = W##_div_pd(r_, W##_add_pd(r_, W##_set1_pd(2.0)));                           \
        V z_ = W##_mul_pd(s_, s_);                                                         \
        V p_ = W##_set1_pd(2.0 / 21);                                                      \
        for (int i_ = 19; i_ >= 3; i_ -= 2)                                                \
            p_ = W##_fmadd_pd(z_, p_, W##_set1_pd(2.0 / i_));                              \
        V half_square_ = W##_mul_pd(W##_mul_pd(W##_set1_pd(0.5), r_), r_);                 \
        /* k ln2_hi - ((r^2/2 - (s (r^2/2 + R) + k ln2_lo)) - r) */                         \
        V small_ = W##_fmadd_pd(s_, W##_add_pd(half_square_, W##_mul_pd(z_, p_)),          \
                                W##_mul_pd(k_, W##_set1_pd(LN2_LO)));                      \
        result = W##_fmsub_pd(k_, W##_set1_pd(LN2_HI),                                     \
                              W##_sub_pd(W##_sub_pd(half_square_, small_), r_));           \
    } while (0)

#define ROUND_NEAREST4(v) _mm256_round_pd(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)

/* e^x for x <= 0 (0 below -708); expm1 (as -(1 - e^x)) in *one_minus: 1 - e^x without
 * cancellation. */
__attribute__((target("avx2,fma")))
static inline __m256d exp_negative(__m256d x, __m256d *one_minus)
{
    __m256d n, em1, scale;
    EXP_PARTS(_mm256, __m256d, si256, _mm256_set1_epi64x, ROUND_NEAREST4, x, n, em1, scale);
    __m256d low = _mm256_cmp_pd(x, _mm256_set1_pd(-708.0), _CMP_LT_OQ);
    __m256d e = _mm256_andnot_pd(low, _mm256_fmadd_pd(em1, scale, scale)); /* 2^n e^r */
    /* 1 - e^x: -(e^r - 1) where n = 0, else 1 - 2^n e^r (e^x <= 0.71: no cancellation) */
    __m256d at_zero = _mm256_cmp_pd(n, _mm256_setzero_pd(), _CMP_EQ_OQ);
    *one_minus = _mm256_blendv_pd(_mm256_sub_pd(_mm256_set1_pd(1.0), e),
                                  _mm256_sub_pd(_mm256_setzero_pd(), em1), at_zero);
    return e;
}

__attribute__((target("avx2,fma")))
static inline __m256d log_positive(__m256d x)
{
    __m256d result;
    LOG_PARTS(_mm256, __m256d, __m256i, si256, _mm256_set1_epi64x, x, result);
    __m256d zero = _mm256_cmp_pd(x, _mm256_setzero_pd(), _CMP_EQ_OQ);
    return _mm256_blendv_pd(result, _mm256_set1_pd(-INFINITY), zero);
}

__attribute__((target("avx2,fma")))
static inline double horizontal_sum(__m256d v)
{
    double lanes[4];
    _mm256_storeu_pd(lanes, v);
    return (lanes[0] + lanes[1]) + (lanes[2] + lanes[3]);
}

/* The value from the two sums of n log q over the log blocks before block j: block j, the
 * last of an odd number, added to the even sum, then the linear terms. */
__attribute__((target("avx2,fma")))
static double finish_value(const Terms *terms, const double rates[3], Point *point, int j,
                           __m256d even, __m256d odd)
{
    if (j < terms->logs)
        even = _mm256_fmadd_pd(_mm256_loadu_pd(terms->counts[0] + terms->log_block[j]),
                               log_positive(_mm256_loadu_pd(point->q[0] + terms->log_block[j])),
                               even);
    double value = horizontal_sum(_mm256_add_pd(even, odd)) -
                   (rates[0] * terms->linear[0] + rates[1] * terms->linear[1] +
                    rates[2] * terms->linear[2]);
    point->value = value;
    return value;
}

/* The value at `rates`, four values k at a time: e^-aB, e^-bB, e^-xB and their complements
 * for every vector of values first (the long dependency chains of different vectors
 * overlap), then the five log arguments per k, 1 - e^-(a+x)B (X below Y), 1 - e^-(b+x)B,
 * 1 - e^-aB (X above), 1 - e^-bB and psi's g (equal), 1 where the count is 0 (q may be 0
 * there), then n log q over the blocks with a nonzero count. */
__attribute__((target("avx2,fma")))
static double evaluate_value_avx2(const Terms *terms, const double rates[3], Point *point)
{
    const __m256d one = _mm256_set1_pd(1.0), zero = _mm256_setzero_pd();
    double *powers[3] = {point->u, point->v, point->y};
    double *complements[3] = {point->one_u, point->one_v, point->one_y};
    for (int i = 0; i < 3; i++) {
        /* a rate at 0 (a boundary the maximisation often rests on): e^0 = 1, 1 - e^0 = 0, as
         * exp_negative gives them */
        if (rates[i] == 0) {
            for (int t = 0; t < terms->count; t += 4) {
                _mm256_storeu_pd(powers[i] + t, one);
                _mm256_storeu_pd(complements[i] + t, zero);
            }
            continue;
        }
        const __m256d minus_rate = _mm256_set1_pd(-rates[i]);
        for (int t = 0; t < terms->count; t += 4) {
            __m256d complement;
            _mm256_storeu_pd(powers[i] + t, exp_negative(
                _mm256_mul_pd(minus_rate, _mm256_loadu_pd(terms->b + t)), &complement));
            _mm256_storeu_pd(complements[i] + t, complement);
        }
    }
    for (int t = 0; t < terms->count; t += 4) {
        __m256d u = _mm256_loadu_pd(point->u + t), v = _mm256_loadu_pd(point->v + t),
                y = _mm256_loadu_pd(point->y + t), one_u = _mm256_loadu_pd(point->one_u + t),
                one_v = _mm256_loadu_pd(point->one_v + t),
                one_y = _mm256_loadu_pd(point->one_y + t);
        __m256d q[HISTOGRAMS] = {_mm256_fmadd_pd(u, one_y, one_u), _mm256_fmadd_pd(v, one_y, one_v),
                                 one_u, one_v,
                                 _mm256_fmadd_pd(y, _mm256_mul_pd(one_u, one_v), one_y)};
        for (int h = 0; h < HISTOGRAMS; h++) {
            __m256d used = _mm256_loadu_pd((const double *)terms->used[h] + t);
            _mm256_storeu_pd(point->q[h] + t, _mm256_blendv_pd(one, q[h], used));
        }
    }
    /* two sums, so that the additions of consecutive logs do not wait for each other */
    __m256d even = zero, odd = zero;
    const double *q = point->q[0], *counts = terms->counts[0];
    const int *block = terms->log_block;
    int j = 0;
    for (; j + 1 < terms->logs; j += 2) {
        even = _mm256_fmadd_pd(_mm256_loadu_pd(counts + block[j]),
                               log_positive(_mm256_loadu_pd(q + block[j])), even);
        odd = _mm256_fmadd_pd(_mm256_loadu_pd(counts + block[j + 1]),
                              log_positive(_mm256_loadu_pd(q + block[j + 1])), odd);
    }
    return finish_value(terms, rates, point, j, even, odd);
}

/* Gradient and Hessian at an evaluated point. phi' = e / q and phi'' = -e / q^2 for the four
 * one-rate histograms (e = e^-s, q = 1 - e^-s); for the equal terms, with w = e^-xB / g,
 * D = (w e^-aB (1 - e^-bB), w e^-bB (1 - e^-aB), w (1 - (1 - e^-aB)(1 - e^-bB))), psi's
 * gradient is B D and its Hessian B^2 (-D_0 (1 + D_0), w e^-aB e^-bB - D_0 D_1,
 * -D_0 (1 + D_2); -D_1 (1 + D_1), -D_1 (1 + D_2); -D_2 (1 + D_2)). */
__attribute__((target("avx2,fma")))
static void evaluate_derivatives_avx2(const Terms *terms, const Point *point, Evaluation *out)
{
    const __m256d zero = _mm256_setzero_pd(), one = _mm256_set1_pd(1.0);
    __m256d g0 = zero, g1 = zero, g2 = zero;
    __m256d h00 = zero, h01 = zero, h02 = zero, h11 = zero, h12 = zero, h22 = zero;
    for (int t = 0; t < terms->count; t += 4) {
        __m256d u = _mm256_loadu_pd(point->u + t), v = _mm256_loadu_pd(point->v + t),
                y = _mm256_loadu_pd(point->y + t), one_u = _mm256_loadu_pd(point->one_u + t),
                one_v = _mm256_loadu_pd(point->one_v + t);
        __m256d e[4] = {_mm256_mul_pd(u, y), _mm256_mul_pd(v, y), u, v};
        __m256d first[4], second[4];
        for (int h = 0; h < 4; h++) {
            __m256d inverse = _mm256_div_pd(one, _mm256_loadu_pd(point->q[h] + t));
            __m256d ratio = _mm256_mul_pd(e[h], inverse);
            first[h] = _mm256_mul_pd(_mm256_loadu_pd(terms->count_b[h] + t), ratio);
            second[h] = _mm256_mul_pd(_mm256_loadu_pd(terms->count_bb[h] + t),
                                      _mm256_mul_pd(ratio, inverse));
        }
        g0 = _mm256_add_pd(g0, _mm256_add_pd(first[X_BELOW], first[X_ABOVE]));
        g1 = _mm256_add_pd(g1, _mm256_add_pd(first[Y_BELOW], first[Y_ABOVE]));
        g2 = _mm256_add_pd(g2, _mm256_add_pd(first[X_BELOW], first[Y_BELOW]));
        h00 = _mm256_sub_pd(h00, _mm256_add_pd(second[X_BELOW], second[X_ABOVE]));
        h02 = _mm256_sub_pd(h02, second[X_BELOW]);
        h11 = _mm256_sub_pd(h11, _mm256_add_pd(second[Y_BELOW], second[Y_ABOVE]));
        h12 = _mm256_sub_pd(h12, second[Y_BELOW]);
        h22 = _mm256_sub_pd(h22, _mm256_add_pd(second[X_BELOW], second[Y_BELOW]));
        /* equal: psi */
        __m256d nb = _mm256_loadu_pd(terms->count_b[EQUAL] + t);
        __m256d nbb = _mm256_loadu_pd(terms->count_bb[EQUAL] + t);
        __m256d w = _mm256_div_pd(y, _mm256_loadu_pd(point->q[EQUAL] + t));
        __m256d d0 = _mm256_mul_pd(w, _mm256_mul_pd(u, one_v));
        __m256d d1 = _mm256_mul_pd(w, _mm256_mul_pd(v, one_u));
        __m256d d2 = _mm256_mul_pd(w, _mm256_fnmadd_pd(one_u, one_v, one));
        __m256d cross = _mm256_fmsub_pd(w, _mm256_mul_pd(u, v), _mm256_mul_pd(d0, d1));
        g0 = _mm256_fmadd_pd(nb, d0, g0);
        g1 = _mm256_fmadd_pd(nb, d1, g1);
        g2 = _mm256_fmadd_pd(nb, d2, g2);
        h00 = _mm256_fnmadd_pd(nbb, _mm256_fmadd_pd(d0, d0, d0), h00);
        h01 = _mm256_fmadd_pd(nbb, cross, h01);
        h02 = _mm256_fnmadd_pd(nbb, _mm256_fmadd_pd(d0, d2, d0), h02);
        h11 = _mm256_fnmadd_pd(nbb, _mm256_fmadd_pd(d1, d1, d1), h11);
        h12 = _mm256_fnmadd_pd(nbb, _mm256_fmadd_pd(d1, d2, d1), h12);
        h22 = _mm256_fnmadd_pd(nbb, _mm256_fmadd_pd(d2, d2, d2), h22);
    }
    out->value = point->value;
    out->grad[0] = horizontal_sum(g0) - terms->linear[0];
    out->grad[1] = horizontal_sum(g1) - terms->linear[1];
    out->grad[2] = horizontal_sum(g2) - terms->linear[2];
    out->hess[0][0] = horizontal_sum(h00);
    out->hess[1][1] = horizontal_sum(h11);
    out->hess[2][2] = horizontal_sum(h22);
    out->hess[0][1] = out->hess[1][0] = horizontal_sum(h01);
    out->hess[0][2] = out->hess[2][0] = horizontal_sum(h02);
    out->hess[1][2] = out->hess[2][1] = horizontal_sum(h12);
}

/*
 * The value at AVX-512: exp_negative and log_positive on eight doubles (EXP_PARTS and
 * LOG_PARTS: every lane the operations of the four-lane versions, so the same bits), and the
 * same sums: the logs of two four-term blocks in one vector, their products added to the
 * low half (the even sum) and the high half (the odd sum) as evaluate_value_avx2 adds them.
 * Half the instructions of the four-lane loop, whose exp and log chains waited on each other.
 */
#define AVX512_TARGET "avx512f,avx512dq,avx2,fma"

#define ROUND_NEAREST8(v) _mm512_roundscale_pd(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)

/* 2^n e^r as (1 + (e^r - 1)) 2^n by VSCALEFPD: the fused multiply-add 2^n (e^r - 1) + 2^n of
 * EXP_PARTS rounds once, and scaling by a power of two commutes with the rounding wherever
 * the result is normal (x >= -708: n >= -1021 and e^x > 2^-1022; below, e is 0 either way),
 * so the same bits in two instructions instead of the exponent's six. */
__attribute__((target(AVX512_TARGET)))
static inline __m512d exp_negative8(__m512d x, __m512d *one_minus)
{
    __m512d n = ROUND_NEAREST8(_mm512_mul_pd(x, _mm512_set1_pd(INV_LN2)));
    __m512d r = _mm512_fnmadd_pd(n, _mm512_set1_pd(LN2_LO),
                                 _mm512_fnmadd_pd(n, _mm512_set1_pd(LN2_HI), x));
    __m512d p = _mm512_set1_pd(inverse_factorial[13]);
    for (int i = 12; i >= 1; i--)
        p = _mm512_fmadd_pd(r, p, _mm512_set1_pd(inverse_factorial[i]));
    __m512d em1 = _mm512_mul_pd(r, p);
    __mmask8 low = _mm512_cmp_pd_mask(x, _mm512_set1_pd(-708.0), _CMP_LT_OQ);
    __m512d e = _mm512_maskz_scalef_pd((__mmask8)~low,
                                       _mm512_add_pd(em1, _mm512_set1_pd(1.0)), n);
    __mmask8 at_zero = _mm512_cmp_pd_mask(n, _mm512_setzero_pd(), _CMP_EQ_OQ);
    *one_minus = _mm512_mask_blend_pd(at_zero, _mm512_sub_pd(_mm512_set1_pd(1.0), e),
                                      _mm512_sub_pd(_mm512_setzero_pd(), em1));
    return e;
}

/* LOG_PARTS with k by VGETEXPPD: the shifted bits' exponent (their sign bit is clear), as a
 * double, is LOG_PARTS' k wherever that exponent field is nonzero; where it is zero (x
 * below 2^-1022), LOG_PARTS' -1023, which the max gives (getexp of a subnormal is below
 * it, of 0 -inf). Two instructions instead of three. */
__attribute__((target(AVX512_TARGET)))
static inline __m512d log_positive8(__m512d x)
{
    __m512i shifted = _mm512_add_epi64(_mm512_castpd_si512(x),
                                       _mm512_set1_epi64(0x3FF0000000000000ll - 0x3FE6A09E667F3BCDll));
    __m512d k = _mm512_max_pd(_mm512_getexp_pd(_mm512_castsi512_pd(shifted)),
                              _mm512_set1_pd(-1023.0));
    __m512d r = _mm512_sub_pd(_mm512_castsi512_pd(_mm512_add_epi64(
        _mm512_and_si512(shifted, _mm512_set1_epi64(0x000FFFFFFFFFFFFFll)),
        _mm512_set1_epi64(0x3FE6A09E667F3BCDll))), _mm512_set1_pd(1.0));
    __m512d s = _mm512_div_pd(r, _mm512_add_pd(r, _mm512_set1_pd(2.0)));
    __m512d z = _mm512_mul_pd(s, s);
    __m512d p = _mm512_set1_pd(2.0 / 21);
    for (int i = 19; i >= 3; i -= 2)
        p = _mm512_fmadd_pd(z, p, _mm512_set1_pd(2.0 / i));
    __m512d half_square = _mm512_mul_pd(_mm512_mul_pd(_mm512_set1_pd(0.5), r), r);
    __m512d small = _mm512_fmadd_pd(s, _mm512_add_pd(half_square, _mm512_mul_pd(z, p)),
                                    _mm512_mul_pd(k, _mm512_set1_pd(LN2_LO)));
    __m512d result = _mm512_fmsub_pd(k, _mm512_set1_pd(LN2_HI),
                                     _mm512_sub_pd(_mm512_sub_pd(half_square, small), r));
    __mmask8 zero = _mm512_cmp_pd_mask(x, _mm512_setzero_pd(), _CMP_EQ_OQ);
    return _mm512_mask_blend_pd(zero, result, _mm512_set1_pd(-INFINITY));
}

/* Two four-term blocks in one vector. */
__attribute__((target(AVX512_TARGET)))
static inline __m512d load_blocks(const double *low, const double *high)
{
    return _mm512_insertf64x4(_mm512_castpd256_pd512(_mm256_loadu_pd(low)),
                              _mm256_loadu_pd(high), 1);
}

__attribute__((target(AVX512_TARGET)))
static double evaluate_value_avx512(const Terms *terms, const double rates[3], Point *point)
{
    const __m512d one = _mm512_set1_pd(1.0);
    double *powers[3] = {point->u, point->v, point->y};
    double *complements[3] = {point->one_u, point->one_v, point->one_y};
    const __m512d minus_rates[3] = {_mm512_set1_pd(-rates[0]), _mm512_set1_pd(-rates[1]),
                                    _mm512_set1_pd(-rates[2])};
    /* eight terms at a time, the last four of an odd number of blocks in a masked vector:
     * the three rates' exps side by side (their chains overlap), then the log arguments */
    for (int t = 0; t < terms->count; t += 8) {
        __mmask8 lanes = t + 8 <= terms->count ? 0xFF : 0x0F;
        __m512d b = _mm512_maskz_loadu_pd(lanes, terms->b + t), e[3], c[3];
        for (int i = 0; i < 3; i++) {
            /* a rate at 0 (a boundary the maximisation often rests on): e^0 = 1, 1 - e^0 = 0 */
            if (rates[i] == 0) {
                e[i] = one;
                c[i] = _mm512_setzero_pd();
            } else
                e[i] = exp_negative8(_mm512_mul_pd(minus_rates[i], b), &c[i]);
            _mm512_mask_storeu_pd(powers[i] + t, lanes, e[i]);
            _mm512_mask_storeu_pd(complements[i] + t, lanes, c[i]);
        }
        __m512d q[HISTOGRAMS] = {_mm512_fmadd_pd(e[0], c[2], c[0]), _mm512_fmadd_pd(e[1], c[2], c[1]),
                                 c[0], c[1], _mm512_fmadd_pd(e[2], _mm512_mul_pd(c[0], c[1]), c[2])};
        for (int h = 0; h < HISTOGRAMS; h++)  /* the used lanes' mask loaded as it is */
            _mm512_mask_storeu_pd(point->q[h] + t, lanes, _mm512_mask_blend_pd(
                _load_mask8((__mmask8 *)&terms->used8[h][t / 8]), one, q[h]));
    }
    /* the even sum in the low half, the odd in the high */
    __m512d sums = _mm512_setzero_pd();
    const double *q = point->q[0], *counts = terms->counts[0];
    const int *block = terms->log_block;
    int j = 0;
    for (; j + 1 < terms->logs; j += 2) {
        /* two consecutive blocks (the usual case): one load each, no insert */
        __m512d n, x;
        if (block[j + 1] == block[j] + 4) {
            n = _mm512_loadu_pd(counts + block[j]);
            x = _mm512_loadu_pd(q + block[j]);
        } else {
            n = load_blocks(counts + block[j], counts + block[j + 1]);
            x = load_blocks(q + block[j], q + block[j + 1]);
        }
        sums = _mm512_fmadd_pd(n, log_positive8(x), sums);
    }
    __m256d even = _mm512_castpd512_pd256(sums), odd = _mm512_extractf64x4_pd(sums, 1);
    return finish_value(terms, rates, point, j, even, odd);
}

__attribute__((target(AVX512_TARGET)))
static void mle_math_avx512(int kind, const double *x, double *out)
{
    __m512d v = _mm512_loadu_pd(x), one_minus, e = exp_negative8(v, &one_minus);
    _mm512_storeu_pd(out, kind == 0 ? e : kind == 1 ? one_minus : log_positive8(v));
}

__attribute__((target("avx2,fma")))
static void mle_math_avx2(int kind, const double *x, double *out)
{
    __m256d v = _mm256_loadu_pd(x), result, ignored;
    if (kind == 0)
        result = exp_negative(v, &ignored);
    else if (kind == 1)
        exp_negative(v, &result);
    else
        result = log_positive(v);
    _mm256_storeu_pd(out, result);
}
#endif

static EvaluateValue evaluate_value = evaluate_value_scalar;
static EvaluateDerivatives evaluate_derivatives = evaluate_derivatives_scalar;

/* ---------------------------------------------------------------------------------------- */
/* The maximisation: kmerspec.golden.hll_joint.maximise, step for step.                     */

/* matrix^-1 vector by Gaussian elimination with partial pivoting (golden _solve), rows the
 * n x n matrix with the vector beside it in column n (made there by the caller, not copied:
 * the copy cost a third of the solve); 0 if singular. */
static int solve(int n, double rows[3][4], double *out)
{
    for (int c = 0; c < n; c++) {
        int pivot = c;
        for (int i = c + 1; i < n; i++)
            if (fabs(rows[i][c]) > fabs(rows[pivot][c]))
                pivot = i;
        if (rows[pivot][c] == 0)
            return 0;
        if (pivot != c)
            for (int j = 0; j <= n; j++) {
                double swap = rows[c][j];
                rows[c][j] = rows[pivot][j];
                rows[pivot][j] = swap;
            }
        for (int i = c + 1; i < n; i++) {
            double f = rows[i][c] / rows[c][c];
            for (int j = c; j <= n; j++)
                rows[i][j] -= f * rows[c][j];
        }
    }
    for (int i = n - 1; i >= 0; i--) {
        double sum = 0.0;
        for (int j = i + 1; j < n; j++)
            sum += rows[i][j] * out[j];
        out[i] = (rows[i][n] - sum) / rows[i][i];
    }
    return 1;
}

/* solve for n = 3, the same operations on the same values in the same order: the rows
 * exchanged by pointers instead of copies, the eliminated column left as it is (it is not
 * read again) and the loops written out. */
static int solve3(double rows[3][4], double *out)
{
    double *a = rows[0], *b = rows[1], *c = rows[2], *swap;
    /* column 0: the pivot, the first of the largest magnitude */
    double *pivot = a;
    if (fabs(b[0]) > fabs(pivot[0]))
        pivot = b;
    if (fabs(c[0]) > fabs(pivot[0]))
        pivot = c;
    if (pivot[0] == 0)
        return 0;
    if (pivot == b)
        swap = a, a = b, b = swap;
    else if (pivot == c)
        swap = a, a = c, c = swap;
    double f = b[0] / a[0], g = c[0] / a[0];
    for (int j = 1; j <= 3; j++) {
        b[j] -= f * a[j];
        c[j] -= g * a[j];
    }
    /* column 1 */
    if (fabs(c[1]) > fabs(b[1]))
        swap = b, b = c, c = swap;
    if (b[1] == 0)
        return 0;
    f = c[1] / b[1];
    for (int j = 2; j <= 3; j++)
        c[j] -= f * b[j];
    if (c[2] == 0)
        return 0;
    out[2] = (c[3] - 0.0) / c[2];
    out[1] = (b[3] - (0.0 + b[2] * out[2])) / b[1];
    out[0] = (a[3] - ((0.0 + a[1] * out[1]) + a[2] * out[2])) / a[0];
    return 1;
}

/* The trial point at step length t (golden _step_to): the free rates along `direction`, the
 * binding ones along their own Newton step `toward_zero`, each clipped at 0; returns its
 * first-order gain g . (trial - rates). */
static double step_to(const double rates[3], const double direction[3],
                      const double toward_zero[3], const double grad[3], double t,
                      double trial[3])
{
    double first_order = 0.0;
    for (int i = 0; i < 3; i++) {
        double moved = rates[i] + t * (direction[i] + toward_zero[i]);
        trial[i] = moved > 0.0 ? moved : 0.0;
        first_order += grad[i] * (trial[i] - rates[i]);
    }
    return first_order;
}

/* The free rates' gradient scaled by their curvature (the second direction tried); 1. */
static int scaled_gradient(int count, const int free[3], const double curvature[3],
                           const double grad[3], double out[3])
{
    for (int f = 0; f < count; f++) {
        int i = free[f];
        out[i] = curvature[i] > 0 ? grad[i] / curvature[i] : grad[i];
    }
    return 1;
}

/* Projected Newton ascent with an active set from `rates` (SPEC 3; golden maximise, step
 * for step); returns L at the end point, left in rates. A trial point's value is computed
 * first, its derivatives only once the step is taken. */
static double maximise(const Terms *terms, double rates[3])
{
    Point points[2];
    int current = 0;
    Evaluation at;
    evaluate_value(terms, rates, &points[current]);
    evaluate_derivatives(terms, &points[current], &at);
    for (int iteration = 0; iteration < MAX_ITERATIONS; iteration++) {
        /* binding rates (g_i <= 0 and their own Newton step reaches 0) toward 0; the others
         * free */
        int free[3], count = 0;
        double curvature[3], toward_zero[3] = {0.0, 0.0, 0.0}, bound_gain = 0.0;
        for (int i = 0; i < 3; i++) {
            curvature[i] = -at.hess[i][i];
            if (at.grad[i] <= 0 && rates[i] * curvature[i] <= -at.grad[i]) {
                if (rates[i] > 0) {
                    double newton = curvature[i] > 0 ? at.grad[i] / curvature[i] : -rates[i];
                    toward_zero[i] = newton < -rates[i] ? newton : -rates[i];
                }
                bound_gain += at.grad[i] * toward_zero[i];
            } else
                free[count++] = i;
        }
        /* directions[0] the damped Newton step of the free rates where it is an ascent
         * direction, then the scaled gradient */
        double directions[2][3] = {{0.0, 0.0, 0.0}, {0.0, 0.0, 0.0}};
        /* directions[1], the scaled gradient, is made only when it is tried (its divisions
         * are most of a step's scalar work, and the Newton step is mostly taken) */
        int first = 1, scaled = 0;
        if (count > 0) {
            double damping = curvature[free[0]];
            for (int f = 1; f < count; f++)
                if (curvature[free[f]] > damping)
                    damping = curvature[free[f]];
            damping *= DAMPING;
            double rows[3][4], step[3];
            for (int i = 0; i < count; i++) {
                for (int j = 0; j < count; j++)
                    rows[i][j] = -at.hess[free[i]][free[j]] + (i == j ? damping : 0.0);
                rows[i][count] = at.grad[free[i]];
            }
            if (count == 3 ? solve3(rows, step) : solve(count, rows, step)) {
                double ascent = 0.0;
                for (int f = 0; f < count; f++)
                    ascent += step[f] * at.grad[free[f]];
                if (ascent > 0) {
                    for (int f = 0; f < count; f++)
                        directions[0][free[f]] = step[f];
                    first = 0;
                }
            }
        }
        if (first)
            scaled = scaled_gradient(count, free, curvature, at.grad, directions[1]);
        double gain = bound_gain;
        for (int f = 0; f < count; f++)
            gain += directions[first][free[f]] * at.grad[free[f]];
        if (gain <= GAIN_TOLERANCE)
            break;
        double trial[3];
        int accepted = 0;
        for (int d = first; d < 2 && !accepted; d++) {
            if (d == 1 && !scaled)
                scaled = scaled_gradient(count, free, curvature, at.grad, directions[1]);
            gain = bound_gain;
            for (int f = 0; f < count; f++)
                gain += directions[d][free[f]] * at.grad[free[f]];
            for (double t = 1.0; t >= SMALLEST_STEP && t * gain > GAIN_TOLERANCE; t *= 0.5) {
                double first_order = step_to(rates, directions[d], toward_zero, at.grad, t,
                                             trial);
                if (first_order > 0 &&
                    evaluate_value(terms, trial, &points[1 - current]) - at.value >=
                        SUFFICIENT_RISE * first_order) {
                    accepted = 1;
                    break;
                }
            }
        }
        if (!accepted)
            break;
        for (int i = 0; i < 3; i++)
            rates[i] = trial[i];
        current = 1 - current;
        evaluate_derivatives(terms, &points[current], &at);
    }
    return at.value;
}

/* ---------------------------------------------------------------------------------------- */
/* One pair.                                                                                */

typedef struct {
    double x_only, y_only, shared, likelihood_ratio;
} PairEstimate;

#ifdef HAVE_X86_DISPATCH
/* pair_terms' loop over the values k = 1..15 and finish_terms (w = 4, r = 15) at AVX-512, the
 * sixteen values in one vector: the present values' counts compressed to the front, then
 * what finish_terms makes of them, by the same operations (n B, (n B) B; the integers are
 * the same). The scalar loop stored the counts a value at a time and finish_terms read
 * them four at a time, a failed store forwarding each. Returns #{min(K_X, K_Y) >= 1};
 * smaller[k] = #{min(K_X, K_Y) = k} and union_hist[1..15] filled. */
__attribute__((target("avx512f,avx512dq,avx512bw")))
static uint32_t terms16(const PairCounts *counts, const SketchView *x, const SketchView *y,
                        const double *log_coefficient, Terms *terms, uint32_t *smaller_of,
                        uint32_t *union_hist)
{
    const __mmask16 valid = 0x7FFF;  /* lanes 0..14: k = 1..15 */
    __m512i equal = _mm512_maskz_loadu_epi32(valid, counts->equal + 1);
    __m512i x_below = _mm512_maskz_loadu_epi32(valid, counts->x_below + 1);
    __m512i y_below = _mm512_maskz_loadu_epi32(valid, counts->y_below + 1);
    __m512i x_hist = _mm512_maskz_loadu_epi32(valid, x->hist + 1);
    __m512i y_hist = _mm512_maskz_loadu_epi32(valid, y->hist + 1);
    __m512i smaller = _mm512_add_epi32(_mm512_add_epi32(equal, x_below), y_below);
    _mm512_mask_storeu_epi32(smaller_of + 1, valid, smaller);
    _mm512_mask_storeu_epi32(union_hist + 1, valid,
                             _mm512_sub_epi32(_mm512_add_epi32(x_hist, y_hist), smaller));
    __m512i n[HISTOGRAMS];
    n[X_BELOW] = x_below;
    n[Y_BELOW] = y_below;
    n[X_ABOVE] = _mm512_sub_epi32(_mm512_sub_epi32(x_hist, x_below), equal);
    n[Y_ABOVE] = _mm512_sub_epi32(_mm512_sub_epi32(y_hist, y_below), equal);
    n[EQUAL] = equal;
    __m512i any = _mm512_or_si512(_mm512_or_si512(_mm512_or_si512(x_below, y_below),
                                                  _mm512_or_si512(n[X_ABOVE], n[Y_ABOVE])),
                                  equal);
    __mmask16 present = _mm512_mask_test_epi32_mask(valid, any, any);
    int count = __builtin_popcount(present), padded = (count + 3) & ~3;
    __mmask8 low = (__mmask8)(count >= 8 ? 0xFF : (1u << count) - 1);
    __mmask8 high = (__mmask8)(count >= 16 ? 0xFF : count > 8 ? (1u << (count - 8)) - 1 : 0);
    /* B_k of the present values, 1 in the padding */
    __m512i k = _mm512_maskz_compress_epi32(present, _mm512_setr_epi32(
        0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15));
    __m512d table_low = _mm512_loadu_pd(log_coefficient + 1);
    __m512d table_high = _mm512_loadu_pd(log_coefficient + 9);
    const __m512d one = _mm512_set1_pd(1.0), zero = _mm512_setzero_pd();
    __m512d b[2] = {
        _mm512_mask_blend_pd(low, one, _mm512_permutex2var_pd(
            table_low, _mm512_cvtepu32_epi64(_mm512_castsi512_si256(k)), table_high)),
        _mm512_mask_blend_pd(high, one, _mm512_permutex2var_pd(
            table_low, _mm512_cvtepu32_epi64(_mm512_extracti64x4_epi64(k, 1)), table_high))};
    _mm512_storeu_pd(terms->b, b[0]);
    _mm512_storeu_pd(terms->b + 8, b[1]);
    terms->logs = 0;
    for (int h = 0; h < HISTOGRAMS; h++) {
        __m512i packed = _mm512_maskz_compress_epi32(present, n[h]);
        __m512d values[2] = {_mm512_cvtepu32_pd(_mm512_castsi512_si256(packed)),
                             _mm512_cvtepu32_pd(_mm512_extracti64x4_epi64(packed, 1))};
        for (int half = 0; half < 2; half++) {
            __m512d nb = _mm512_mul_pd(values[half], b[half]);
            _mm512_storeu_pd(terms->counts[h] + 8 * half, values[half]);
            _mm512_storeu_pd(terms->count_b[h] + 8 * half, nb);
            _mm512_storeu_pd(terms->count_bb[h] + 8 * half, _mm512_mul_pd(nb, b[half]));
            __mmask8 used = _mm512_cmp_pd_mask(values[half], zero, _CMP_NEQ_UQ);
            _mm512_storeu_si512(terms->used[h] + 8 * half,
                                _mm512_maskz_set1_epi64(used, -1));
            terms->used8[h][half] = used;
        }
        uint32_t nonzero = _mm512_test_epi32_mask(packed, packed);
        for (int t = 0; t < padded; t += 4)
            if (nonzero >> t & 15)
                terms->log_block[terms->logs++] = h * MAX_TERMS + t;
    }
    terms->count = padded;
    return (uint32_t)_mm512_reduce_add_epi32(smaller);
}
#endif

static int vector_terms = 0;  /* terms16 for w = 4 (the AVX-512 level) */

/* A pair's terms of the likelihood and the start of its maximisation. */
static void pair_terms(const Prepared *prepared, const SketchView *x, const SketchView *y,
                       const uint64_t *x_levels, const uint64_t *y_levels, double card_x,
                       double card_y, Workspace *space, Terms *terms, double rates[3])
{
    unsigned r = prepared->r;
    double m = prepared->m;
    PairCounts counts;
    pair_counts(prepared, x, y, x_levels, y_levels, space, &counts);
    const double *linear = prepared->linear, *log_coefficient = prepared->log_coefficient;
    /* the union's histogram (the start's |X u Y|) and the linear sums */
    uint32_t union_hist[256];
    memset(union_hist, 0, ((1u << prepared->w)) * sizeof *union_hist);
    uint64_t at_least_one = 0;
    double s_shared = 0.0;
#ifdef HAVE_X86_DISPATCH
    if (vector_terms && prepared->w == 4 && r == 15) {
        uint32_t smaller[16];
        at_least_one = terms16(&counts, x, y, log_coefficient, terms, smaller, union_hist);
        for (unsigned k = 1; k <= r; k++)
            s_shared += smaller[k] * linear[k];
        goto finished;
    }
#endif
    terms->count = 0;
    for (unsigned k = 1; k <= r; k++) {
        uint32_t smaller = counts.equal[k] + counts.x_below[k] + counts.y_below[k];
        at_least_one += smaller;
        union_hist[k] = x->hist[k] + y->hist[k] - smaller;
        s_shared += smaller * linear[k];
        uint32_t x_above = x->hist[k] - counts.x_below[k] - counts.equal[k];
        uint32_t y_above = y->hist[k] - counts.y_below[k] - counts.equal[k];
        if (counts.x_below[k] | counts.y_below[k] | counts.equal[k] | x_above | y_above) {
            int t = terms->count++;
            terms->b[t] = log_coefficient[k];
            terms->counts[X_BELOW][t] = counts.x_below[k];
            terms->counts[Y_BELOW][t] = counts.y_below[k];
            terms->counts[X_ABOVE][t] = x_above;
            terms->counts[Y_ABOVE][t] = y_above;
            terms->counts[EQUAL][t] = counts.equal[k];
        }
    }
    pad_terms(terms);
#ifdef HAVE_X86_DISPATCH
finished:;
#endif
    /* registers where the smaller of the two is 0 */
    uint64_t min_zero = (uint64_t)m - at_least_one;
    s_shared += (double)min_zero * linear[0];
    union_hist[0] = (uint32_t)(x->hist[0] + y->hist[0] - min_zero);
    terms->linear[0] = x->linear_sum;
    terms->linear[1] = y->linear_sum;
    terms->linear[2] = s_shared;
    double card_union = hll_estimate_of_histogram(union_hist, prepared->p, prepared->w);
    rates[0] = (card_union - card_y > 0 ? card_union - card_y : 0.0) / m + START_FLOOR;
    rates[1] = (card_union - card_x > 0 ? card_union - card_x : 0.0) / m + START_FLOOR;
    rates[2] = (card_x + card_y - card_union > 0 ? card_x + card_y - card_union : 0.0) / m +
               START_FLOOR;
}

static void estimate_pair(const Prepared *prepared, const SketchView *x, const SketchView *y,
                          const uint64_t *x_levels, const uint64_t *y_levels,
                          double card_x, double card_y, double null_value,
                          Workspace *space, PairEstimate *out)
{
    Terms terms;
    double rates[3], m = prepared->m;
    pair_terms(prepared, x, y, x_levels, y_levels, card_x, card_y, space, &terms, rates);
    double full = maximise(&terms, rates);
    double ratio = 0.0;
    if (rates[2] > 0) {
        ratio = 2.0 * (full - null_value);
        ratio = ratio > 0 ? ratio : 0.0;
    }
    *out = (PairEstimate){rates[0] * m, rates[1] * m, rates[2] * m, ratio};
}

/* Zeroed memory from a cache-line boundary: the counts' 64-byte loads of the planes "K >= k"
 * then each touch one line, not two. */
static void *zeroed_lines(size_t bytes)
{
    void *memory = NULL;
    if (posix_memalign(&memory, 64, bytes) != 0)
        return NULL;
    return memset(memory, 0, bytes);
}

static int workspace_init(Workspace *space, size_t words, unsigned r)
{
    size_t levels = r + 2;
    space->words = words;
    space->level_words = levels * words;
    space->row_levels = zeroed_lines(levels * words * sizeof(uint64_t));
    space->column_levels = zeroed_lines(COLUMN_CHUNK * levels * words * sizeof(uint64_t));
    space->row_tail = malloc(TAIL_LIMIT * sizeof(uint32_t));
    space->column_tails = malloc(COLUMN_CHUNK * TAIL_LIMIT * sizeof(uint32_t));
    return space->row_levels && space->column_levels && space->row_tail && space->column_tails
               ? 0 : -1;
}

static void workspace_free(Workspace *space)
{
    free(space->row_levels);
    free(space->column_levels);
    free(space->row_tail);
    free(space->column_tails);
}

/* mle_rows(packed, w, p, cards f64[n], rows i64[R], starts i64[R], stops i64[R],
 *          order i64[M], out f64[4 * pairs], planes, hist, null):
 * the joint MLE of (rows[t], order[u]) for u in [starts[t], stops[t]), four values each
 * (|X only|, |Y only|, |X n Y|, LR) appended to out; planes, hist and null from
 * mle_prepare. */
static PyObject *mle_rows(PyObject *self, PyObject *args)
{
    PyObject *objects[7], *extra[3];
    int w, p;
    PairPlan plan;
    Array a[3];
    memset(a, 0, sizeof a);
    if (!PyArg_ParseTuple(args, "OiiOOOOOOOOO", &objects[0], &w, &p, &objects[1], &objects[2],
                          &objects[3], &objects[4], &objects[5], &objects[6], &extra[0],
                          &extra[1], &extra[2]))
        return NULL;
    int failed = get_pair_plan(objects, w, p, 4, &plan) < 0 ||
                 get_typed_array(extra[0], &a[0], 8, KIND_UNSIGNED, 0, "planes") < 0 ||
                 get_typed_array(extra[1], &a[1], 4, KIND_UNSIGNED, 0, "hist") < 0 ||
                 get_typed_array(extra[2], &a[2], 8, KIND_FLOAT, 0, "null") < 0;
    Py_ssize_t n = failed ? 0 : plan.arrays[0].count;
    size_t words = ((size_t)1 << p) / 64;
    if (!failed && ((size_t)a[0].count != (size_t)n * w * words ||
                    a[1].count != n * HIST_SLOTS || a[2].count != n)) {
        PyErr_SetString(PyExc_ValueError, "mle_rows: the prepared arrays do not match");
        failed = 1;
    }
    Workspace space = {0};
    if (!failed && workspace_init(&space, words, hll_top_rank((unsigned)p, (unsigned)w)) < 0) {
        PyErr_NoMemory();
        failed = 1;
    }
    if (!failed) {
        Prepared prepared = {a[0].view.buf, a[1].view.buf, a[2].view.buf,
                             plan.sketches.packed, plan.sketches.row_bytes, words, (unsigned)p,
                             (unsigned)w, hll_top_rank((unsigned)p, (unsigned)w),
                             (double)((size_t)1 << p), {0}, {0}};
        coefficients(prepared.r, prepared.linear, prepared.log_coefficient);
        Py_ssize_t columns = plan.arrays[4].count;
        /* each row's first value in out */
        Py_ssize_t *offsets = malloc((plan.count + 1) * sizeof *offsets);
        /* the rows' tails, kept across the chunks (up to ROW_TAILS_BYTES; else remade) */
        uint32_t *row_tails = NULL, *row_tail_counts = NULL;
        if ((size_t)plan.count * TAIL_LIMIT * sizeof(uint32_t) <= ROW_TAILS_BYTES) {
            row_tails = malloc((size_t)plan.count * TAIL_LIMIT * sizeof(uint32_t));
            row_tail_counts = malloc((size_t)plan.count * sizeof(uint32_t));
            if (row_tails == NULL || row_tail_counts == NULL) {
                free(row_tails);
                free(row_tail_counts);
                row_tails = row_tail_counts = NULL;
            } else
                memset(row_tail_counts, 0xFF, (size_t)plan.count * sizeof(uint32_t));
        }
        Py_BEGIN_ALLOW_THREADS
        SketchView x_view, chunk_views[COLUMN_CHUNK];
        if (offsets != NULL) {
            offsets[0] = 0;
            for (Py_ssize_t t = 0; t < plan.count; t++)
                offsets[t + 1] = offsets[t] + plan.stops[t] - plan.starts[t];
            /* the columns a chunk at a time, each column's planes made once per chunk, each
             * row's once per chunk it meets */
            for (Py_ssize_t first = 0; first < columns; first += COLUMN_CHUNK) {
                Py_ssize_t last = first + COLUMN_CHUNK < columns ? first + COLUMN_CHUNK : columns;
                int ready[COLUMN_CHUNK] = {0};
                for (Py_ssize_t t = 0; t < plan.count; t++) {
                    Py_ssize_t lo = plan.starts[t] > first ? plan.starts[t] : first;
                    Py_ssize_t hi = plan.stops[t] < last ? plan.stops[t] : last;
                    if (lo >= hi)
                        continue;
                    Py_ssize_t x = plan.rows[t];
                    view_of(&prepared, x, &x_view);
                    /* the planes the counts read, below the tail (the levels at and above
                     * it are counted from the tail), and the tail's own when it is listed */
                    int listed = row_tails != NULL && row_tail_counts[t] != UINT32_MAX;
                    unsigned top = listed ? x_view.tail_level - 1
                                   : x_view.tail_level <= x_view.high ? x_view.tail_level
                                                                      : x_view.high;
                    if (top > x_view.low)
                        threshold_planes(x_view.planes, words, prepared.w, x_view.low + 1,
                                         top, space.row_levels);
                    if (row_tails != NULL) {
                        /* a row's tail listed at the first chunk it meets, then reused */
                        uint32_t *cached = row_tails + t * TAIL_LIMIT;
                        if (row_tail_counts[t] == UINT32_MAX) {
                            make_tail(&x_view, space.row_levels, words, prepared.w,
                                      prepared.r, cached);
                            row_tail_counts[t] = x_view.tail_count;
                        } else {
                            x_view.tail = cached;
                            x_view.tail_count = row_tail_counts[t];
                        }
                    } else
                        make_tail(&x_view, space.row_levels, words, prepared.w, prepared.r,
                                  space.row_tail);
                    for (Py_ssize_t u = lo; u < hi; u++) {
                        int slot = (int)(u - first);
                        uint64_t *y_levels = space.column_levels + slot * space.level_words;
                        SketchView *y_view = &chunk_views[slot];
                        if (!ready[slot]) {
                            view_of(&prepared, plan.order[u], y_view);
                            unsigned top = y_view->tail_level <= y_view->high
                                               ? y_view->tail_level : y_view->high;
                            if (top > y_view->low)
                                threshold_planes(y_view->planes, words, prepared.w,
                                                 y_view->low + 1, top, y_levels);
                            make_tail(y_view, y_levels, words, prepared.w, prepared.r,
                                      space.column_tails + slot * TAIL_LIMIT);
                            ready[slot] = 1;
                        }
                        Py_ssize_t y = plan.order[u];
                        double null_value = prepared.null_value[x] + prepared.null_value[y];
                        PairEstimate e;
                        /* every pair in one orientation, so that (X, Y) and (Y, X) give the
                         * same estimate bit for bit, seen from either end: the smaller
                         * cardinality first, then the smaller registers */
                        int swap = plan.cards[x] > plan.cards[y] ||
                                   (plan.cards[x] == plan.cards[y] &&
                                    memcmp(plan.sketches.packed + x * plan.sketches.row_bytes,
                                           plan.sketches.packed + y * plan.sketches.row_bytes,
                                           plan.sketches.row_bytes) > 0);
                        if (swap)
                            estimate_pair(&prepared, y_view, &x_view, y_levels, space.row_levels,
                                          plan.cards[y], plan.cards[x], null_value, &space, &e);
                        else
                            estimate_pair(&prepared, &x_view, y_view, space.row_levels, y_levels,
                                          plan.cards[x], plan.cards[y], null_value, &space, &e);
                        double *out = plan.out + 4 * (offsets[t] + u - plan.starts[t]);
                        out[0] = swap ? e.y_only : e.x_only;
                        out[1] = swap ? e.x_only : e.y_only;
                        out[2] = e.shared;
                        out[3] = e.likelihood_ratio;
                    }
                }
            }
        }
        Py_END_ALLOW_THREADS
        if (offsets == NULL) {
            PyErr_NoMemory();
            failed = 1;
        }
        free(offsets);
        free(row_tails);
        free(row_tail_counts);
    }
    __atomic_fetch_add(&tails_tallied, space.tallies, __ATOMIC_RELAXED);
    workspace_free(&space);
    release(a, 3);
    return release_and_return(plan.arrays, PAIR_PLAN_ARRAYS, failed);
}

/* ---------------------------------------------------------------------------------------- */

/* The loops of `level` ("best": the widest this CPU has); 0, or -1 if not available. */
int mle_use_simd_level(const char *level)
{
    int best = strcmp(level, "best") == 0;
    if (best || strcmp(level, "scalar") == 0 || strcmp(level, "ssse3") == 0) {
        evaluate_value = evaluate_value_scalar;
        evaluate_derivatives = evaluate_derivatives_scalar;
        finish_terms = finish_terms_scalar;
        count_and = count_and_scalar;
        tail_counts_of = tail_counts;
        vector_terms = 0;
        threshold_planes = threshold_planes_scalar;
#ifdef HAVE_X86_DISPATCH
        __builtin_cpu_init();
        if (__builtin_cpu_supports("popcnt") && strcmp(level, "scalar") != 0)
            count_and = count_and_popcnt;
#endif
    }
#ifdef HAVE_X86_DISPATCH
    __builtin_cpu_init();
    int avx512 = strcmp(level, "avx512") == 0;
    if ((best || avx512 || strcmp(level, "avx2") == 0) && __builtin_cpu_supports("avx2")) {
        /* the likelihood's vector exp and log are written with fused multiply-adds (every
         * AVX2 CPU but a few VIA ones has them; without, the C library's) */
        if (__builtin_cpu_supports("fma")) {
            evaluate_value = evaluate_value_avx2;
            evaluate_derivatives = evaluate_derivatives_avx2;
        }
        count_and = count_and_avx2;
        tail_counts_of = tail_counts;
        vector_terms = 0;
        threshold_planes = threshold_planes_avx2;
        finish_terms = finish_terms_avx2;
        /* "avx512": AVX2's loops with the AVX-512 popcount of the register-pair counts */
        if ((best || avx512) && __builtin_cpu_supports("avx512f") &&
                __builtin_cpu_supports("avx512vpopcntdq")) {
            count_and = count_and_avx512;
            threshold_planes = threshold_planes_avx512;
            if (__builtin_cpu_supports("avx512bw")) {
                tail_counts_of = tail_counts_avx512;
                vector_terms = __builtin_cpu_supports("avx512dq");
            }
            if (__builtin_cpu_supports("avx512dq") && evaluate_value == evaluate_value_avx2)
                evaluate_value = evaluate_value_avx512;
        } else if (avx512)
            return -1;
        return 0;
    }
#endif
    return best || strcmp(level, "scalar") == 0 || strcmp(level, "ssse3") == 0 ? 0 : -1;
}

/* mle_math(name, x f64[N], out f64[N]): the vector exp ("exp": e^x, x <= 0), 1 - e^x
 * ("one_minus_exp") or log ("log") of the pair loop at the current SIMD level, for tests. */
static PyObject *mle_math(PyObject *self, PyObject *args)
{
    const char *name;
    PyObject *objects[2];
    Array a[2];
    memset(a, 0, sizeof a);
    if (!PyArg_ParseTuple(args, "sOO", &name, &objects[0], &objects[1]))
        return NULL;
    if (get_typed_array(objects[0], &a[0], 8, KIND_FLOAT, 0, "x") < 0 ||
        get_typed_array(objects[1], &a[1], 8, KIND_FLOAT, 1, "out") < 0)
        goto fail;
    if (a[0].count != a[1].count || a[0].count % 4) {
        PyErr_SetString(PyExc_ValueError, "mle_math: x and out of one size, a multiple of 4");
        goto fail;
    }
    const double *x = a[0].view.buf;
    double *out = a[1].view.buf;
    int kind = strcmp(name, "exp") == 0 ? 0 : strcmp(name, "one_minus_exp") == 0 ? 1
               : strcmp(name, "log") == 0 ? 2 : -1;
    if (kind < 0) {
        PyErr_Format(PyExc_ValueError, "mle_math: no function %s", name);
        goto fail;
    }
#ifdef HAVE_X86_DISPATCH
    if (evaluate_value == evaluate_value_avx2 || evaluate_value == evaluate_value_avx512) {
        Py_ssize_t i = 0;
        if (evaluate_value == evaluate_value_avx512)  /* eight at a time, the rest four */
            for (; i + 8 <= a[0].count; i += 8)
                mle_math_avx512(kind, x + i, out + i);
        for (; i < a[0].count; i += 4)
            mle_math_avx2(kind, x + i, out + i);
        return release_and_return(a, 2, 0);
    }
#endif
    for (Py_ssize_t i = 0; i < a[0].count; i++)
        out[i] = kind == 0 ? exp(x[i]) : kind == 1 ? -expm1(x[i]) : log(x[i]);
    return release_and_return(a, 2, 0);
fail:
    return release_and_return(a, 2, 1);
}

/* mle_likelihood(b f64[T], x_below, y_below, x_above, y_above, equal f64[T], linear f64[3],
 *                rates f64[3], out f64[13]): the log-likelihood of SPEC 3 over the terms given
 * (one per value k: its B_k and five counts), its gradient and Hessian (row by row) at the
 * rates, by the evaluation the pair loop uses at the current SIMD level, for tests. */
static PyObject *mle_likelihood(PyObject *self, PyObject *args)
{
    PyObject *objects[9];
    Array a[9];
    memset(a, 0, sizeof a);
    if (!PyArg_ParseTuple(args, "OOOOOOOOO", &objects[0], &objects[1], &objects[2], &objects[3],
                          &objects[4], &objects[5], &objects[6], &objects[7], &objects[8]))
        return NULL;
    for (int i = 0; i < 9; i++)
        if (get_typed_array(objects[i], &a[i], 8, KIND_FLOAT, i == 8, "terms") < 0)
            goto fail;
    Py_ssize_t count = a[0].count;
    int bad = count > MAX_VALUES || a[6].count != 3 || a[7].count != 3 || a[8].count != 13;
    for (int i = 1; i < 6; i++)
        bad |= a[i].count != count;
    if (bad) {
        PyErr_SetString(PyExc_ValueError, "mle_likelihood: inconsistent array sizes");
        goto fail;
    }
    Terms terms;
    terms.count = (int)count;
    memcpy(terms.b, a[0].view.buf, count * sizeof(double));
    for (int h = 0; h < HISTOGRAMS; h++)
        memcpy(terms.counts[h], a[1 + h].view.buf, count * sizeof(double));
    pad_terms(&terms);
    memcpy(terms.linear, a[6].view.buf, 3 * sizeof(double));
    Point point;
    Evaluation at;
    evaluate_value(&terms, a[7].view.buf, &point);
    evaluate_derivatives(&terms, &point, &at);
    double *out = a[8].view.buf;
    out[0] = at.value;
    for (int i = 0; i < 3; i++) {
        out[1 + i] = at.grad[i];
        for (int j = 0; j < 3; j++)
            out[4 + 3 * i + j] = at.hess[i][j];
    }
    return release_and_return(a, 9, 0);
fail:
    return release_and_return(a, 9, 1);
}

/* mle_tails(limit): the largest top tail the pair loop lists from now on (0: none, at most
 * TAIL_LIMIT; -1: unchanged); returns (the tails tallied since the last call, the limit
 * before) (tests). */
static PyObject *mle_tails(PyObject *self, PyObject *args)
{
    int limit;
    if (!PyArg_ParseTuple(args, "i", &limit))
        return NULL;
    if (limit > TAIL_LIMIT) {
        PyErr_Format(PyExc_ValueError, "mle_tails: at most %d", TAIL_LIMIT);
        return NULL;
    }
    int before = tail_limit;
    if (limit >= 0)
        tail_limit = limit;
    return Py_BuildValue("Ki", (unsigned long long)__atomic_exchange_n(&tails_tallied, 0,
                                                                       __ATOMIC_RELAXED),
                         before);
}

PyMethodDef mle_methods[] = {
    {"mle_tails", mle_tails, METH_VARARGS,
     "mle_tails(limit): the largest sparse top tail listed (0: none; -1: unchanged); returns "
     "(tails tallied since the last call, the limit before) (tests)."},
    {"mle_likelihood", mle_likelihood, METH_VARARGS,
     "mle_likelihood(b, x_below, y_below, x_above, y_above, equal, linear, rates, out): the "
     "log-likelihood, gradient and Hessian the pair loop computes (tests)."},
    {"mle_prepare", mle_prepare, METH_VARARGS,
     "mle_prepare(packed, w, p, cards, planes, hist, null): per-sketch data of the joint MLE."},
    {"mle_rows", mle_rows, METH_VARARGS,
     "mle_rows(packed, w, p, cards, rows, starts, stops, order, out, planes, hist, null): "
     "the joint MLE (x only, y only, shared, LR) of each pair, into out."},
    {"mle_math", mle_math, METH_VARARGS,
     "mle_math(name, x, out): the pair loop's exp, one_minus_exp or log (tests)."},
    {NULL, NULL, 0, NULL},
};
