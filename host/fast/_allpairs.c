/*
 * All-pairs HyperLogLog Jaccard (SPEC section 3), value for value equal to host.similarity's
 * formula on kmerspec.golden.hll.estimate_from_features: the union of two sketches, its exact
 * features (Z, nz), the "hll" estimator and J, with no Python per pair.
 *
 * Sketches come packed: w = 4 registers two to a byte (register 2i in the low nibble of byte
 * i), wider ones a byte each. For w = 4 the union and features run 64 registers per step with
 * AVX-512 VNNI or AVX2 (32 with SSSE3) where the CPU has it, chosen at run time, else a
 * portable scalar loop; Z < 2^33 is then an exact integer. Wider registers go through a register histogram, and Z
 * (up to 2^273) through multi-word integers, rounded to float64 exactly as Python's int / int.
 */
#include "_native.h"
#include <math.h>
#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define HAVE_X86_DISPATCH 1
#endif

typedef struct {
    uint64_t z;    /* w = 4 only: Z = sum 2^(15 - r) */
    uint32_t nz;
    uint32_t top;  /* registers at 15: saturated (SPEC 3 "Saturated registers") */
} Features4;

/* The union of sketches a and b, each packed or split as the loop reads it (prepared_sketch):
 * its features. */
typedef Features4 (*UnionFeatures4)(const uint8_t *a, const uint8_t *b, size_t bytes);

static const uint32_t weight4[16] = {32768, 16384, 8192, 4096, 2048, 1024, 512, 256,
                                     128, 64, 32, 16, 8, 4, 2, 1};

static Features4 union_features4_scalar(const uint8_t *a, const uint8_t *b, size_t bytes)
{
    uint64_t z = 0;
    uint32_t nz = 0, top = 0;
    for (size_t i = 0; i < bytes; i++) {
        unsigned low_a = a[i] & 15, low_b = b[i] & 15, high_a = a[i] >> 4, high_b = b[i] >> 4;
        unsigned low = low_a > low_b ? low_a : low_b, high = high_a > high_b ? high_a : high_b;
        z += weight4[low] + weight4[high];
        nz += (low == 0) + (high == 0);
        top += (low == 15) + (high == 15);
    }
    return (Features4){z, nz, top};
}

/* A sketch as a vector loop reads it, split once for all its pairs: each 32 bytes of packed
 * registers become 32 bytes of their low nibbles and 32 of their high nibbles, in place
 * (r << 4: the AVX2 loop's rows, split_row) or shifted down (r: the AVX-512 loop's rows and
 * columns, split_row_shifted_avx2). `split` holds 2 * bytes; bytes is a multiple of 32 (p >= 8). */
#define SPLIT_BLOCK 32
/* bytes after a split sketch's saturation_bits: their counts (saturation_bits) */
#define BITS_COUNTS 64

static void split_row(const uint8_t *packed, size_t bytes, uint8_t *split)
{
    for (size_t i = 0; i < bytes; i += SPLIT_BLOCK)
        for (size_t j = 0; j < SPLIT_BLOCK; j++) {
            split[2 * i + j] = packed[i + j] & 15;
            split[2 * i + SPLIT_BLOCK + j] = packed[i + j] & 0xf0;
        }
}

#ifdef HAVE_X86_DISPATCH
/*
 * The vector loops count the registers at 0 and at 15 in a byte tally, a lookup (pshufb) of
 * 1 for 0 and 16 for 15, summed a byte at a time for 7 steps (at most 14 of each per byte: the
 * two counts stay in their nibbles), then split and widened (psadbw). 2^(15 - r) of the other
 * values comes from byte lookups too: Z = 32768 zeros + sum_(r = 1..14) 2^(15 - r) + saturated.
 */
#define ZERO_TOP_TABLE 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 16
#define STEPS_PER_TALLY 7

/*
 * AVX2 (and SSSE3): 2^(15 - r) = 256 upper[r] + 2 lower[r], upper = 2^(7 - r) for r = 1..7,
 * lower = 2^(14 - r) for r = 8..14, both at most 64. psadbw(127 - t(low), 128 + t(high)) sums
 * 1 + t(low) + t(high) a byte, t at most 64 keeping the difference positive: one psadbw adds
 * up both nibbles' lookups, and the 1 a byte is taken off at the end.
 */
#define UPPER_LOW 127, 63, 95, 111, 119, 123, 125, 126, 127, 127, 127, 127, 127, 127, 127, 127
#define UPPER_HIGH 128, 192, 160, 144, 136, 132, 130, 129, 128, 128, 128, 128, 128, 128, 128, 128
#define LOWER_LOW 127, 127, 127, 127, 127, 127, 127, 127, 63, 95, 111, 119, 123, 125, 126, 127
#define LOWER_HIGH 128, 128, 128, 128, 128, 128, 128, 128, 192, 160, 144, 136, 132, 130, 129, 128

static Features4 features_of_sums(uint64_t zeros, uint64_t top, uint64_t upper, uint64_t lower,
                                  size_t bytes)
{
    return (Features4){32768 * zeros + 256 * (upper - bytes) + 2 * (lower - bytes) + top,
                       (uint32_t)zeros, (uint32_t)top};
}

/* What both 256-bit loops hold: nibble masks, zero, the tally's lookup. */
#define AVX2_CONSTANTS                                                                         \
    const __m256i nibble = _mm256_set1_epi8(15), highs = _mm256_set1_epi8((char)0xf0);        \
    const __m256i none = _mm256_setzero_si256();                                               \
    const __m256i zero_top = _mm256_setr_epi8(ZERO_TOP_TABLE, ZERO_TOP_TABLE)

/* The union's registers of the 32 bytes at i (split row a, packed b), low and high nibbles
 * as 0..15 a byte. */
#define AVX2_UNION(i, low, high)                                                               \
    __m256i y = _mm256_loadu_si256((const __m256i *)(b + (i)));                                \
    __m256i low = _mm256_max_epu8(_mm256_loadu_si256((const __m256i *)(a + 2 * (i))),          \
                                  _mm256_and_si256(y, nibble));                                \
    __m256i high = _mm256_srli_epi16(_mm256_max_epu8(                                          \
        _mm256_loadu_si256((const __m256i *)(a + 2 * (i) + 32)), _mm256_and_si256(y, highs)), 4)

/* The step's zero and saturated registers into the byte tally. */
#define AVX2_TALLY(tally, low, high)                                                           \
    tally = _mm256_add_epi8(tally, _mm256_add_epi8(_mm256_shuffle_epi8(zero_top, low),         \
                                                   _mm256_shuffle_epi8(zero_top, high)))

/* The tally of 7 steps into the zero and saturated counts (64-bit lanes). */
#define AVX2_ADD_TALLY(tally, sum_zero, sum_top)                                               \
    do {                                                                                       \
        sum_zero = _mm256_add_epi64(sum_zero, _mm256_sad_epu8(                                 \
            _mm256_and_si256(tally, nibble), none));                                           \
        sum_top = _mm256_add_epi64(sum_top, _mm256_sad_epu8(                                   \
            _mm256_and_si256(_mm256_srli_epi16(tally, 4), nibble), none));                     \
    } while (0)

__attribute__((target("avx2")))
static uint64_t sum_lanes_avx2(__m256i v)
{
    uint64_t lanes[4];
    _mm256_storeu_si256((__m256i *)lanes, v);
    return lanes[0] + lanes[1] + lanes[2] + lanes[3];
}

/* a: split by split_row. */
__attribute__((target("avx2")))
static Features4 union_features4_avx2(const uint8_t *a, const uint8_t *b, size_t bytes)
{
    AVX2_CONSTANTS;
    const __m256i upper_low = _mm256_setr_epi8(UPPER_LOW, UPPER_LOW);
    const __m256i upper_high = _mm256_setr_epi8(UPPER_HIGH, UPPER_HIGH);
    const __m256i lower_low = _mm256_setr_epi8(LOWER_LOW, LOWER_LOW);
    const __m256i lower_high = _mm256_setr_epi8(LOWER_HIGH, LOWER_HIGH);
    __m256i sum_upper = none, sum_lower = none, sum_zero = none, sum_top = none;
    for (size_t i = 0; i < bytes;) {
        __m256i tally = none;
        for (int step = 0; step < STEPS_PER_TALLY && i < bytes; step++, i += 32) {
            AVX2_UNION(i, low, high);
            sum_upper = _mm256_add_epi64(sum_upper, _mm256_sad_epu8(
                _mm256_shuffle_epi8(upper_low, low), _mm256_shuffle_epi8(upper_high, high)));
            sum_lower = _mm256_add_epi64(sum_lower, _mm256_sad_epu8(
                _mm256_shuffle_epi8(lower_low, low), _mm256_shuffle_epi8(lower_high, high)));
            AVX2_TALLY(tally, low, high);
        }
        AVX2_ADD_TALLY(tally, sum_zero, sum_top);
    }
    return features_of_sums(sum_lanes_avx2(sum_zero), sum_lanes_avx2(sum_top),
                            sum_lanes_avx2(sum_upper), sum_lanes_avx2(sum_lower), bytes);
}

/*
 * AVX-512: 2^(14 - r) = scale[r] * mantissa[r] for r = 1..14, scale 64 or 1, mantissa at most
 * 128, multiplied and summed four bytes at a time into 32-bit lanes (VNNI's vpdpbusd, on
 * 256-bit vectors: Zen 4 runs 512-bit ones at half rate, and on an Intel Xeon they measured
 * no faster) in eight accumulators; a lane gains at most 4 * 8192 a step, so 2^17 bytes of
 * registers (p = 18) stay below 2^31. The registers at 0 and at 15 are not tallied a step at
 * a time: each sketch's are bitmaps (saturation_bits), made once for a row or a tile's
 * column, and the union's are popcount(zeros_a & zeros_b) and popcount(tops_a | tops_b).
 */
#define MANTISSA 0, 128, 64, 32, 16, 8, 4, 2, 64, 32, 16, 8, 4, 2, 1, 0
#define SCALE 0, 64, 64, 64, 64, 64, 64, 64, 1, 1, 1, 1, 1, 1, 1, 0

/* The bitmaps of a packed sketch's registers at 0, then of those at 15 (bytes / 2 bytes), then
 * their counts (BITS_COUNTS: two 32-bit words): a union has no register at 0 if either sketch
 * has none, and its registers at 15 are the other's if one has none, so most pairs need one
 * of the two popcounts over the bitmaps or neither. */
__attribute__((target("avx512f,avx512bw")))
static void saturation_bits(const uint8_t *packed, size_t bytes, uint8_t *bits)
{
    const __m512i nibble = _mm512_set1_epi8(15), highs = _mm512_set1_epi8((char)0xf0);
    uint64_t *zeros = (uint64_t *)bits, *tops = zeros + bytes / 32;
    uint32_t zero_count = 0, top_count = 0;
    for (size_t i = 0; i < bytes; i += 64, zeros += 2, tops += 2) {
        __m512i x = _mm512_loadu_si512((const void *)(packed + i));
        zeros[0] = _mm512_testn_epi8_mask(x, nibble);
        zeros[1] = _mm512_testn_epi8_mask(x, highs);
        tops[0] = _mm512_cmpeq_epi8_mask(_mm512_and_si512(x, nibble), nibble);
        tops[1] = _mm512_cmpeq_epi8_mask(_mm512_and_si512(x, highs), highs);
        zero_count += (uint32_t)(__builtin_popcountll(zeros[0]) + __builtin_popcountll(zeros[1]));
        top_count += (uint32_t)(__builtin_popcountll(tops[0]) + __builtin_popcountll(tops[1]));
    }
    uint32_t *counts = (uint32_t *)(bits + bytes / 2);
    counts[0] = zero_count;
    counts[1] = top_count;
}

/* split_row with the high nibbles shifted down, 32 bytes an instruction (the columns are
 * split once per row tile: a scalar loop took an eighth of the pair loop's time). */
__attribute__((target("avx2")))
static void split_row_shifted_avx2(const uint8_t *packed, size_t bytes, uint8_t *split)
{
    const __m256i nibble = _mm256_set1_epi8(15);
    for (size_t i = 0; i < bytes; i += SPLIT_BLOCK) {
        __m256i x = _mm256_loadu_si256((const __m256i *)(packed + i));
        _mm256_storeu_si256((__m256i *)(split + 2 * i), _mm256_and_si256(x, nibble));
        _mm256_storeu_si256((__m256i *)(split + 2 * i + SPLIT_BLOCK),
                            _mm256_and_si256(_mm256_srli_epi16(x, 4), nibble));
    }
}

/* One step of 32 bytes at offset i of the packed registers: the union's low and high nibbles
 * (a and b split, high nibbles shifted down), their sums into sum_low and sum_high. */
#define AVX512_STEP(i, sum_low, sum_high)                                                      \
    do {                                                                                       \
        __m256i low = _mm256_max_epu8(_mm256_loadu_si256((const __m256i *)(a + 2 * (i))),      \
                                      _mm256_loadu_si256((const __m256i *)(b + 2 * (i))));     \
        __m256i high = _mm256_max_epu8(                                                        \
            _mm256_loadu_si256((const __m256i *)(a + 2 * (i) + 32)),                           \
            _mm256_loadu_si256((const __m256i *)(b + 2 * (i) + 32)));                          \
        sum_low = _mm256_dpbusd_epi32(sum_low, _mm256_shuffle_epi8(mantissa, low),             \
                                      _mm256_shuffle_epi8(scale, low));                        \
        sum_high = _mm256_dpbusd_epi32(sum_high, _mm256_shuffle_epi8(mantissa, high),          \
                                       _mm256_shuffle_epi8(scale, high));                      \
    } while (0)

/* The set bits of a & b (or a | b) over `bytes` bytes of bitmaps (a multiple of 32). */
__attribute__((target("avx2,avx512f,avx512vl,avx512vpopcntdq")))
static uint64_t count_bits(const uint8_t *a, const uint8_t *b, size_t bytes, int either)
{
    __m256i count = _mm256_setzero_si256();
    for (size_t i = 0; i < bytes; i += 32) {
        __m256i x = _mm256_loadu_si256((const __m256i *)(a + i));
        __m256i y = _mm256_loadu_si256((const __m256i *)(b + i));
        count = _mm256_add_epi64(count, _mm256_popcnt_epi64(either ? _mm256_or_si256(x, y)
                                                                    : _mm256_and_si256(x, y)));
    }
    return sum_lanes_avx2(count);
}

/* a and b: split by split_row_shifted_avx2, each with its saturation_bits after; bytes: a
 * multiple of 128. Eight accumulators: four steps an iteration, none waits
 * for the last one's sum (measured on an Intel Xeon with AVX-512: 1.06x four of them, and
 * reading b split 1.13x splitting it a step; issue 52). */
__attribute__((target("avx2,avx512f,avx512vl,avx512bw,avx512vnni,avx512vpopcntdq")))
static Features4 union_features4_avx512(const uint8_t *a, const uint8_t *b, size_t bytes)
{
    const __m256i none = _mm256_setzero_si256();
    const __m256i mantissa = _mm256_setr_epi8(MANTISSA, MANTISSA);
    const __m256i scale = _mm256_setr_epi8(SCALE, SCALE);
    __m256i sum0 = none, sum1 = none, sum2 = none, sum3 = none;
    __m256i sum4 = none, sum5 = none, sum6 = none, sum7 = none;
    for (size_t i = 0; i < bytes; i += 128) {
        AVX512_STEP(i, sum0, sum1);
        AVX512_STEP(i + 32, sum2, sum3);
        AVX512_STEP(i + 64, sum4, sum5);
        AVX512_STEP(i + 96, sum6, sum7);
    }
    const uint8_t *a_bits = a + 2 * bytes, *b_bits = b + 2 * bytes;
    const uint32_t *a_counts = (const uint32_t *)(a_bits + bytes / 2);
    const uint32_t *b_counts = (const uint32_t *)(b_bits + bytes / 2);
    uint64_t zero = a_counts[0] && b_counts[0] ? count_bits(a_bits, b_bits, bytes / 4, 0) : 0;
    uint64_t top = !a_counts[1] ? b_counts[1] : !b_counts[1] ? a_counts[1]
                 : count_bits(a_bits + bytes / 4, b_bits + bytes / 4, bytes / 4, 1);
    __m256i sum = _mm256_add_epi32(
        _mm256_add_epi32(_mm256_add_epi32(sum0, sum1), _mm256_add_epi32(sum2, sum3)),
        _mm256_add_epi32(_mm256_add_epi32(sum4, sum5), _mm256_add_epi32(sum6, sum7)));
    uint32_t lanes[8];
    _mm256_storeu_si256((__m256i *)lanes, sum);
    uint64_t halves = 0;  /* sum of 2^(14 - r), r = 1..14 */
    for (int lane = 0; lane < 8; lane++)
        halves += lanes[lane];
    return (Features4){32768 * zero + 2 * halves + top, (uint32_t)zero, (uint32_t)top};
}

/* a: packed, as the scalar loop reads it. */
__attribute__((target("ssse3")))
static Features4 union_features4_ssse3(const uint8_t *a, const uint8_t *b, size_t bytes)
{
    const __m128i nibble = _mm_set1_epi8(15), none = _mm_setzero_si128();
    const __m128i upper_low = _mm_setr_epi8(UPPER_LOW), upper_high = _mm_setr_epi8(UPPER_HIGH);
    const __m128i lower_low = _mm_setr_epi8(LOWER_LOW), lower_high = _mm_setr_epi8(LOWER_HIGH);
    const __m128i zero_top = _mm_setr_epi8(ZERO_TOP_TABLE);
    __m128i sum_upper = none, sum_lower = none, sum_zero = none, sum_top = none;
    size_t i = 0;
    while (i + 16 <= bytes) {
        __m128i tally = none;
        for (int step = 0; step < STEPS_PER_TALLY && i + 16 <= bytes; step++, i += 16) {
            __m128i x = _mm_loadu_si128((const __m128i *)(a + i));
            __m128i y = _mm_loadu_si128((const __m128i *)(b + i));
            __m128i low = _mm_max_epu8(_mm_and_si128(x, nibble), _mm_and_si128(y, nibble));
            __m128i high = _mm_max_epu8(_mm_and_si128(_mm_srli_epi16(x, 4), nibble),
                                        _mm_and_si128(_mm_srli_epi16(y, 4), nibble));
            sum_upper = _mm_add_epi64(sum_upper, _mm_sad_epu8(
                _mm_shuffle_epi8(upper_low, low), _mm_shuffle_epi8(upper_high, high)));
            sum_lower = _mm_add_epi64(sum_lower, _mm_sad_epu8(
                _mm_shuffle_epi8(lower_low, low), _mm_shuffle_epi8(lower_high, high)));
            tally = _mm_add_epi8(tally, _mm_add_epi8(_mm_shuffle_epi8(zero_top, low),
                                                     _mm_shuffle_epi8(zero_top, high)));
        }
        sum_zero = _mm_add_epi64(sum_zero, _mm_sad_epu8(_mm_and_si128(tally, nibble), none));
        sum_top = _mm_add_epi64(sum_top, _mm_sad_epu8(
            _mm_and_si128(_mm_srli_epi16(tally, 4), nibble), none));
    }
    uint64_t u[2], l[2], n[2], t[2];
    _mm_storeu_si128((__m128i *)u, sum_upper);
    _mm_storeu_si128((__m128i *)l, sum_lower);
    _mm_storeu_si128((__m128i *)n, sum_zero);
    _mm_storeu_si128((__m128i *)t, sum_top);
    Features4 vector = features_of_sums(n[0] + n[1], t[0] + t[1], u[0] + u[1], l[0] + l[1], i);
    Features4 tail = union_features4_scalar(a + i, b + i, bytes - i);
    return (Features4){vector.z + tail.z, vector.nz + tail.nz, vector.top + tail.top};
}
#endif

/* The form of the sketches a w = 4 union loop reads: both packed; the first split by
 * split_row, the second packed; both split by split_row_shifted_avx2, each followed by its
 * saturation_bits. */
typedef enum { BOTH_PACKED, ROW_SPLIT, BOTH_SPLIT_WITH_BITS } SketchForm;

/* The w = 4 union loop of one instruction set. */
typedef struct {
    UnionFeatures4 union4;
    SketchForm form;
    const char *name;
} UnionLoops4;

static UnionLoops4 loops4 = {union_features4_scalar, BOTH_PACKED, "scalar"};

/* Use the loops of `level` ("best": the widest this CPU has); 0, or -1 if not available.
 * "avx512" without VNNI and VPOPCNTDQ is AVX2 here (the MLE's popcount asks less, _mle.c). */
static int use_simd_level(const char *level)
{
    int best = strcmp(level, "best") == 0, avx512 = strcmp(level, "avx512") == 0;
    if (best || strcmp(level, "scalar") == 0)
        loops4 = (UnionLoops4){union_features4_scalar, BOTH_PACKED, "scalar"};
#ifdef HAVE_X86_DISPATCH
    __builtin_cpu_init();
    if ((best || avx512) && __builtin_cpu_supports("avx2") &&
            __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512bw") &&
            __builtin_cpu_supports("avx512vnni") && __builtin_cpu_supports("avx512vpopcntdq")) {
        loops4 = (UnionLoops4){union_features4_avx512, BOTH_SPLIT_WITH_BITS, "avx512"};
        return 0;
    }
    if ((best || avx512 || strcmp(level, "avx2") == 0) && __builtin_cpu_supports("avx2")) {
        loops4 = (UnionLoops4){union_features4_avx2, ROW_SPLIT, "avx2"};
        return 0;
    }
    if ((best || strcmp(level, "ssse3") == 0) && __builtin_cpu_supports("ssse3")) {
        loops4 = (UnionLoops4){union_features4_ssse3, BOTH_PACKED, "ssse3"};
        return 0;
    }
#endif
    return best || strcmp(level, "scalar") == 0 ? 0 : -1;
}

const char *native_simd_level(void)
{
    return loops4.name;
}

/* Register histogram of the union of two byte-per-register sketches (w >= 5). */
static uint32_t union_histogram(const uint8_t *a, const uint8_t *b, size_t m, uint32_t *hist,
                                unsigned max_rank)
{
    uint32_t partial[4][256];
    memset(partial, 0, sizeof partial);
    size_t i = 0;
    for (; i + 4 <= m; i += 4)
        for (int lane = 0; lane < 4; lane++) {
            uint8_t x = a[i + lane], y = b[i + lane];
            partial[lane][x > y ? x : y]++;
        }
    for (; i < m; i++)
        partial[0][a[i] > b[i] ? a[i] : b[i]]++;
    for (unsigned r = 0; r <= max_rank; r++)
        hist[r] = partial[0][r] + partial[1][r] + partial[2][r] + partial[3][r];
    return hist[0];
}

/* Z / 2^W as float64, correctly rounded (as Python's int / int), Z = sum hist[r] 2^(W - r). */
static double harmonic_sum(const uint32_t *hist, unsigned max_rank)
{
    if (max_rank <= 31) {  /* Z < 2^(31 + 19) is exact in a double */
        uint64_t z = 0;
        for (unsigned r = 0; r <= max_rank; r++)
            z += (uint64_t)hist[r] << (max_rank - r);
        return ldexp((double)z, -(int)max_rank);
    }
    uint64_t limbs[5] = {0};  /* Z < 2^(255 + 19) */
    for (unsigned r = 0; r <= max_rank; r++) {
        if (hist[r] == 0)
            continue;
        unsigned shift = max_rank - r, word = shift / 64, bit = shift % 64;
        uint64_t parts[2] = {(uint64_t)hist[r] << bit, bit ? (uint64_t)hist[r] >> (64 - bit) : 0};
        uint64_t carry = 0;
        for (unsigned j = word; j < 5; j++) {
            uint64_t add = (j - word < 2 ? parts[j - word] : 0);
            uint64_t sum = limbs[j] + add;
            uint64_t carry_out = sum < add;
            sum += carry;
            carry_out |= sum < carry;
            limbs[j] = sum;
            carry = carry_out;
            if (j - word >= 1 && carry == 0)
                break;
        }
    }
    int top = 4;
    while (top > 0 && limbs[top] == 0)
        top--;
    if (top == 0)
        return ldexp((double)limbs[0], -(int)max_rank);
    /* The top 64 bits, with every lower set bit folded into the last one ("sticky"): 64 bits
     * keep the round bit well above the sticky bit, so the conversion rounds as the full
     * value would. */
    unsigned length = 64 * (unsigned)top + 64 - (unsigned)__builtin_clzll(limbs[top]);
    unsigned low = length - 64, word = low / 64, bit = low % 64;
    uint64_t mantissa = bit ? (limbs[word] >> bit) | (limbs[word + 1] << (64 - bit)) : limbs[word];
    int sticky = bit ? (limbs[word] & ((1ull << bit) - 1)) != 0 : 0;
    for (unsigned j = 0; j < word; j++)
        sticky |= limbs[j] != 0;
    return ldexp((double)(mantissa | (uint64_t)sticky), (int)low - (int)max_rank);
}

/* kmerspec.golden.hll.tau, operation for operation. */
static double tau(double x)
{
    if (x == 0.0 || x == 1.0)
        return 0.0;
    double y = 1.0, z = 1.0 - x;
    for (;;) {
        x = sqrt(x);
        double previous = z;
        y *= 0.5;
        z -= (1.0 - x) * (1.0 - x) * y;
        if (z == previous)
            return z / 3.0;
    }
}

/* m tau(1 - C / m) for C = 0..m, per p: almost every sketch of 4-bit registers has saturated
 * registers (about one per k-mer per register and 2^14 k-mers), so the pair loops look it up
 * rather than summing tau's series for every pair. Made with the GIL held (ensure_tau_table),
 * read by the loops without it. */
static double *tau_tables[19];

int ensure_tau_table(unsigned p)
{
    if (p > 18 || tau_tables[p] != NULL)
        return 0;
    size_t m = (size_t)1 << p;
    double *table = malloc((m + 1) * sizeof *table);
    if (table == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    for (size_t c = 0; c <= m; c++)
        table[c] = (double)m * tau(1.0 - (double)c / (double)m);
    tau_tables[p] = table;
    return 0;
}

/* kmerspec.golden.hll.harmonic_sum with C_R = saturated > 0 registers at the top value r
 * censored: `below` is (Z - C_R 2^(W - r)) / 2^W, correctly rounded. */
static double censored_harmonic(double below, uint32_t saturated, unsigned p, unsigned r)
{
    double m = (double)(1u << p);
    double scaled_tau = p <= 18 && tau_tables[p] != NULL ? tau_tables[p][saturated]
                                                          : m * tau(1.0 - (double)saturated / m);
    return below + scaled_tau * ldexp(1.0, -(int)(r - 1));
}

unsigned hll_top_rank(unsigned p, unsigned w)
{
    unsigned saturated = (1u << w) - 1;
    return saturated < 65 - p ? saturated : 65 - p;
}

/* kmerspec.golden.hll.estimate_from_features, operation for operation. */
static double estimate(double harmonic, uint32_t nz, unsigned p)
{
    double m = (double)(1u << p);
    double alpha = 0.7213 / (1 + 1.079 / m);
    double e = alpha * m * m / harmonic;
    if (e <= 2.5 * m && nz > 0)
        e = m * log(m / (double)nz);
    return e;
}

double hll_estimate_of_histogram(const uint32_t *hist, unsigned p, unsigned w)
{
    unsigned max_rank = (1u << w) - 1, r = hll_top_rank(p, w);
    uint32_t saturated = hist[r];
    if (saturated == 0 || saturated == 1u << p)
        return estimate(harmonic_sum(hist, max_rank), hist[0], p);
    uint32_t below[256];
    memcpy(below, hist, (max_rank + 1) * sizeof *hist);
    below[r] = 0;
    return estimate(censored_harmonic(harmonic_sum(below, max_rank), saturated, p, r), hist[0],
                    p);
}

/* host.similarity's Jaccard: (|X| + |Y| - |X u Y|) / |X u Y| clamped to [0, 1]; 0 if empty. */
static double jaccard(double card_x, double card_y, double card_union)
{
    if (!(card_union > 0))
        return 0.0;
    double j = (card_x + card_y - card_union) / card_union;
    return j < 0 ? 0.0 : j > 1 ? 1.0 : j;
}

/* Bytes of a sketch of `bytes` packed bytes as the loops read it split (with its
 * saturation_bits after). */
#define SPLIT_BYTES(bytes) (2 * (bytes) + (bytes) / 2 + BITS_COUNTS)

/* Sketch x as `loops` read it, first (`row`) or second in a pair: split in `scratch`
 * (SPLIT_BYTES) once for all its pairs where they read it so, else where it is. */
static const uint8_t *prepared_sketch(const Sketches *s, const UnionLoops4 *loops,
                                      Py_ssize_t x, int row, uint8_t *scratch)
{
    const uint8_t *packed = s->packed + (size_t)x * s->row_bytes;
    if (s->w != 4 || loops->form == BOTH_PACKED || (loops->form == ROW_SPLIT && !row))
        return packed;
#ifdef HAVE_X86_DISPATCH
    if (loops->form == BOTH_SPLIT_WITH_BITS) {
        split_row_shifted_avx2(packed, s->row_bytes, scratch);
        saturation_bits(packed, s->row_bytes, scratch + 2 * s->row_bytes);
        return scratch;
    }
#endif
    split_row(packed, s->row_bytes, scratch);
    return scratch;
}

/* |X u Y| of sketches a and b as prepared_sketch made them. */
static double union_estimate(const Sketches *s, const UnionLoops4 *loops, const uint8_t *a,
                             const uint8_t *b)
{
    if (s->w == 4) {
        Features4 f = loops->union4(a, b, s->row_bytes);
        if (f.top == 0 || f.top == 1u << s->p)
            return estimate((double)f.z / 32768.0, f.nz, s->p);
        return estimate(censored_harmonic((double)(f.z - f.top) / 32768.0, f.top, s->p, 15),
                        f.nz, s->p);
    }
    uint32_t hist[256];
    union_histogram(a, b, s->row_bytes, hist, (1u << s->w) - 1);
    return hll_estimate_of_histogram(hist, s->p, s->w);
}

/* Parse and check (packed, w, p): n sketches of 2^p registers, packed for w. */
int get_sketches(PyObject *object, Array *array, int w, int p, Py_ssize_t n,
                        Sketches *sketches)
{
    if (get_array(object, array, 1, 0, "packed") < 0)
        return -1;
    if (p < 8 || p > 18 || w < 4 || w > 8) {
        PyErr_Format(PyExc_ValueError, "need 8 <= p <= 18 and 4 <= w <= 8, not p=%d, w=%d", p, w);
        return -1;
    }
    size_t row_bytes = w == 4 ? (size_t)1 << (p - 1) : (size_t)1 << p;
    if ((size_t)array->count != (size_t)n * row_bytes) {
        PyErr_Format(PyExc_ValueError, "packed holds %zd bytes, not %zd sketches of %zu bytes",
                     array->count, n, row_bytes);
        return -1;
    }
    *sketches = (Sketches){array->view.buf, row_bytes, (unsigned)p, (unsigned)w};
    return ensure_tau_table((unsigned)p);
}

/* Registers of sketch x at the top value r. */
static uint32_t saturated_registers(const Sketches *s, Py_ssize_t x)
{
    const uint8_t *a = s->packed + (size_t)x * s->row_bytes;
    unsigned r = hll_top_rank(s->p, s->w);
    uint32_t count = 0;
    if (s->w == 4) {
        for (size_t i = 0; i < s->row_bytes; i++)
            count += ((a[i] & 15) == r) + ((a[i] >> 4) == r);
    } else {
        for (size_t i = 0; i < s->row_bytes; i++)
            count += a[i] == r;
    }
    return count;
}

/* cardinalities(packed, w, p, out f64[n], saturated u32[n]): the estimate of every sketch,
 * and its registers at the top value (C_R). */
static PyObject *cardinalities(PyObject *self, PyObject *args)
{
    PyObject *objects[3];
    int w, p;
    Array a[3];
    memset(a, 0, sizeof a);
    Sketches sketches;
    if (!PyArg_ParseTuple(args, "OiiOO", &objects[0], &w, &p, &objects[1], &objects[2]))
        return NULL;
    if (get_typed_array(objects[1], &a[1], 8, KIND_FLOAT, 1, "out") < 0 ||
        get_typed_array(objects[2], &a[2], 4, KIND_UNSIGNED, 1, "saturated") < 0 ||
        get_sketches(objects[0], &a[0], w, p, a[1].count, &sketches) < 0)
        goto fail;
    if (a[2].count != a[1].count) {
        PyErr_SetString(PyExc_ValueError, "cardinalities: one saturated count per sketch");
        goto fail;
    }
    double *out = a[1].view.buf;
    uint32_t *saturated = a[2].view.buf;
    Py_ssize_t n = a[1].count;
    UnionLoops4 loops = loops4;
    size_t bytes = sketches.row_bytes;
    uint8_t *scratch = malloc(2 * SPLIT_BYTES(bytes));
    if (scratch == NULL) {
        PyErr_NoMemory();
        goto fail;
    }
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < n; i++) {
        saturated[i] = saturated_registers(&sketches, i);
        out[i] = union_estimate(&sketches, &loops,
                                prepared_sketch(&sketches, &loops, i, 1, scratch),
                                prepared_sketch(&sketches, &loops, i, 0,
                                                scratch + SPLIT_BYTES(bytes)));
    }
    Py_END_ALLOW_THREADS
    free(scratch);
    return release_and_return(a, 3, 0);
fail:
    return release_and_return(a, 3, 1);
}

int get_pair_plan(PyObject *const objects[7], int w, int p, Py_ssize_t values_per_pair,
                  PairPlan *plan)
{
    memset(plan, 0, sizeof *plan);
    Array *a = plan->arrays;
    static const char *names[6] = {"cards", "rows", "starts", "stops", "order", "out"};
    for (int i = 0; i < 6; i++)
        if (get_typed_array(objects[i + 1], &a[i], 8, i == 0 || i == 5 ? KIND_FLOAT : KIND_SIGNED,
                            i == 5, names[i]) < 0)
            return -1;
    Py_ssize_t n = a[0].count, count = a[1].count, columns = a[4].count;
    if (get_sketches(objects[0], &a[6], w, p, n, &plan->sketches) < 0)
        return -1;
    plan->cards = a[0].view.buf;
    plan->rows = a[1].view.buf;
    plan->starts = a[2].view.buf;
    plan->stops = a[3].view.buf;
    plan->order = a[4].view.buf;
    plan->out = a[5].view.buf;
    plan->count = count;
    if (a[2].count != count || a[3].count != count) {
        PyErr_SetString(PyExc_ValueError, "pair rows: inconsistent array sizes");
        return -1;
    }
    Py_ssize_t total = 0;
    for (Py_ssize_t t = 0; t < count; t++) {
        if (plan->rows[t] < 0 || plan->rows[t] >= n || plan->starts[t] < 0 ||
            plan->stops[t] < plan->starts[t] || plan->stops[t] > columns) {
            PyErr_Format(PyExc_ValueError, "pair rows: row %zd out of range", t);
            return -1;
        }
        total += plan->stops[t] - plan->starts[t];
    }
    for (Py_ssize_t u = 0; u < columns; u++)
        if (plan->order[u] < 0 || plan->order[u] >= n) {
            PyErr_SetString(PyExc_ValueError, "pair rows: order out of range");
            return -1;
        }
    if (a[5].count != total * values_per_pair) {
        PyErr_Format(PyExc_ValueError, "out holds %zd values, not %zd", a[5].count,
                     total * values_per_pair);
        return -1;
    }
    return 0;
}

/* Pairs are taken in tiles of ROW_TILE rows (fewer if their prepared sketches would pass
 * TILE_BYTES) by COLUMN_TILE columns: the row sketches are prepared (prepared_sketch) once for
 * all their pairs and the columns once for the tile's rows; a tile's column sketches are read
 * from memory once for its rows and stay in the second-level cache, and each row stays near
 * the first for its columns. */
#define ROW_TILE 48
#define COLUMN_TILE 16
#define TILE_BYTES (1024 * 1024)

/* jaccard_rows / union_rows(packed, w, p, cards f64[n], rows i64[R], starts i64[R],
 *                           stops i64[R], order i64[M], out f64[sum(stops - starts)]):
 * for each t, J(rows[t], order[u]) (or the union's estimate |X u Y|) for u in
 * [starts[t], stops[t]), appended to out; order lists sketch indices (M of them: every
 * sketch, or the columns of a block). */
static PyObject *pair_rows(PyObject *args, int unions)
{
    PyObject *objects[7];
    int w, p;
    PairPlan plan;
    if (!PyArg_ParseTuple(args, "OiiOOOOOO", &objects[0], &w, &p, &objects[1], &objects[2],
                          &objects[3], &objects[4], &objects[5], &objects[6]))
        return NULL;
    if (get_pair_plan(objects, w, p, 1, &plan) < 0)
        return release_and_return(plan.arrays, PAIR_PLAN_ARRAYS, 1);
    const Sketches *s = &plan.sketches;
    UnionLoops4 loops = loops4;
    size_t row_bytes = SPLIT_BYTES(s->row_bytes);
    Py_ssize_t tile = (Py_ssize_t)(TILE_BYTES / row_bytes);
    tile = tile < 1 ? 1 : tile > ROW_TILE ? ROW_TILE : tile;
    uint8_t *scratch = malloc((size_t)(tile + COLUMN_TILE) * row_bytes);
    uint8_t *columns = scratch + (size_t)tile * row_bytes;  /* a column tile's, prepared */
    if (scratch == NULL) {
        PyErr_NoMemory();
        return release_and_return(plan.arrays, PAIR_PLAN_ARRAYS, 1);
    }
    Py_BEGIN_ALLOW_THREADS
    double *out = plan.out;  /* the first value of row t0 */
    for (Py_ssize_t t0 = 0; t0 < plan.count; t0 += tile) {
        Py_ssize_t rows = plan.count - t0 < tile ? plan.count - t0 : tile;
        const uint8_t *sketch[ROW_TILE];
        double *row_out[ROW_TILE];  /* row_out[k][u - starts[t]]: the pair with order[u] */
        Py_ssize_t first = PY_SSIZE_T_MAX, last = 0;
        for (Py_ssize_t k = 0; k < rows; k++) {
            Py_ssize_t t = t0 + k;
            sketch[k] = prepared_sketch(s, &loops, plan.rows[t], 1,
                                        scratch + (size_t)k * row_bytes);
            row_out[k] = out;
            out += plan.stops[t] - plan.starts[t];
            if (plan.starts[t] < plan.stops[t]) {
                first = plan.starts[t] < first ? plan.starts[t] : first;
                last = plan.stops[t] > last ? plan.stops[t] : last;
            }
        }
        for (Py_ssize_t u0 = first; u0 < last; u0 += COLUMN_TILE) {
            const uint8_t *column[COLUMN_TILE];
            for (Py_ssize_t u = u0; u < last && u < u0 + COLUMN_TILE; u++)
                column[u - u0] = prepared_sketch(s, &loops, plan.order[u], 0,
                                                 columns + (size_t)(u - u0) * row_bytes);
            for (Py_ssize_t k = 0; k < rows; k++) {
                Py_ssize_t t = t0 + k, x = plan.rows[t];
                Py_ssize_t start = plan.starts[t] > u0 ? plan.starts[t] : u0;
                Py_ssize_t stop = plan.stops[t] < u0 + COLUMN_TILE ? plan.stops[t]
                                                                  : u0 + COLUMN_TILE;
                for (Py_ssize_t u = start; u < stop; u++) {
                    Py_ssize_t y = plan.order[u];
                    double card_union = union_estimate(s, &loops, sketch[k], column[u - u0]);
                    row_out[k][u - plan.starts[t]] =
                        unions ? card_union : jaccard(plan.cards[x], plan.cards[y], card_union);
                }
            }
        }
    }
    Py_END_ALLOW_THREADS
    free(scratch);
    return release_and_return(plan.arrays, PAIR_PLAN_ARRAYS, 0);
}

static PyObject *jaccard_rows(PyObject *self, PyObject *args)
{
    return pair_rows(args, 0);
}

static PyObject *union_rows(PyObject *self, PyObject *args)
{
    return pair_rows(args, 1);
}

/* union_features4(packed, p, x, y): (Z, zeros, saturated) of the union of packed w = 4
 * sketches x and y, by the loop of the current level (the tests hold every level to the
 * scalar one and to numpy on adversarial registers). */
static PyObject *union_features4(PyObject *self, PyObject *args)
{
    PyObject *object;
    int p;
    Py_ssize_t x, y;
    Array array;
    memset(&array, 0, sizeof array);
    Sketches sketches;
    if (!PyArg_ParseTuple(args, "Oinn", &object, &p, &x, &y))
        return NULL;
    Py_ssize_t length = PyObject_Length(object);  /* an array's: its first dimension */
    if (length < 0)
        return NULL;
    Py_ssize_t n = p >= 8 && p <= 18 ? length / ((Py_ssize_t)1 << (p - 1)) : 0;
    if (get_sketches(object, &array, 4, p, n, &sketches) < 0 || x < 0 || y < 0 || x >= n ||
            y >= n) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_ValueError, "union_features4: sketch out of range");
        return release_and_return(&array, 1, 1);
    }
    UnionLoops4 loops = loops4;
    size_t bytes = sketches.row_bytes;
    uint8_t *scratch = malloc(2 * SPLIT_BYTES(bytes));
    if (scratch == NULL) {
        PyErr_NoMemory();
        return release_and_return(&array, 1, 1);
    }
    const uint8_t *b = prepared_sketch(&sketches, &loops, y, 0, scratch + SPLIT_BYTES(bytes));
    Features4 f = loops.union4(prepared_sketch(&sketches, &loops, x, 1, scratch), b, bytes);
    free(scratch);
    release(&array, 1);
    return Py_BuildValue("KII", (unsigned long long)f.z, (unsigned)f.nz, (unsigned)f.top);
}

static PyObject *simd_level(PyObject *self, PyObject *unused)
{
    return PyUnicode_FromString(loops4.name);
}

/* The level of both pair loops (the union loop here, the MLE's in _mle.c). */
static int use_pair_simd_level(const char *level)
{
    return use_simd_level(level) < 0 || mle_use_simd_level(level) < 0 ? -1 : 0;
}

static PyObject *set_simd_level(PyObject *self, PyObject *args)
{
    return set_level_from(args, use_pair_simd_level, "scalar, ssse3, avx2, avx512");
}

void init_allpairs(void)
{
    use_simd_level("best");
    mle_use_simd_level("best");
}

PyMethodDef allpairs_methods[] = {
    {"cardinalities", cardinalities, METH_VARARGS,
     "cardinalities(packed, w, p, out, saturated): the HLL estimate of every packed sketch "
     "and its registers at the top value."},
    {"jaccard_rows", jaccard_rows, METH_VARARGS,
     "jaccard_rows(packed, w, p, cards, rows, starts, stops, order, out): Jaccard of each row "
     "sketch with the sketches order[starts[t]:stops[t]], into out."},
    {"union_rows", union_rows, METH_VARARGS,
     "union_rows(packed, w, p, cards, rows, starts, stops, order, out): as jaccard_rows, but "
     "jaccard_rows, but the estimate of each union |X u Y| (the other metrics derive from "
     "it)."},
    {"union_features4", union_features4, METH_VARARGS,
     "union_features4(packed, p, x, y): (Z, zeros, saturated) of the union of packed w = 4 "
     "sketches x and y, by the loop of the current SIMD level (tests)."},
    {"simd_level", simd_level, METH_NOARGS,
     "The instruction set of the w = 4 union loop: avx512, avx2, ssse3 or scalar."},
    {"set_simd_level", set_simd_level, METH_VARARGS,
     "set_simd_level(level): force scalar, ssse3, avx2 or avx512 (tests), or 'best'."},
    {NULL, NULL, 0, NULL},
};
