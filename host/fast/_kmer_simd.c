/*
 * The k-mer pipeline of host/fast/_kmer_stream.c over runs of bases, several k-mers at once in
 * SIMD lanes: AVX2 (4 lanes of 64 bits, two vectors a step) or AVX-512 (8 lanes; its HLL kernel
 * makes the reverse-complement words from the forward ones where the CPU has GFNI, level
 * avx512-gfni), chosen at run time from what the CPU has; KmerStream keeps its scalar loop for
 * other CPUs, for k < 8, and as the reference the tests hold these kernels to (bit for bit, on
 * every level this CPU has).
 *
 * A run is a stretch of bases without a break (SPEC 1: N, a header, a FASTQ line end), held
 * as one code (0..3 for A C G T) a byte. Three passes over a run of up to KMER_RUN_CHUNK bases,
 * each over arrays that stay in L1:
 *
 *   scan   the bytes of a sequence line, 32 or 64 at a time: how many leading bytes are
 *          ACGTacgt, and their codes ((b >> 1 ^ b >> 2) & 3 maps A/a C/c G/g T/t to 0 1 2 3);
 *   words  the forward and reverse-complement word of every position, eight positions a step:
 *          with G[p] the 8 codes ending at p packed (c[p] lowest) and H[p] their complements
 *          reversed, fwd[p] = (fwd[p-8] << 16 | G[p]) & mask and
 *          rev[p] = rev[p-8] >> 16 | H[p] << (2k - 16), so lane l carries positions l, l+8,
 *          l+16... with no dependency between lanes (hence k >= 8); canonical = min(fwd, rev);
 *   hll    (fused with words at AVX-512, which hashes each step's words in the registers
 *          that made them) fmix64 of every word, and whether its rank (leading zeros of the low 64-p bits,
 *          + 1, at most max_rank) exceeds the floor, a value no register is below: only such
 *          a hash can raise its register (top p bits), and the update is scalar (lanes may hit
 *          one register). Once a genome has a few k-mers a register, the floor is a few
 *          ranks up and nearly every hash stops in SIMD (a rank above r has odds 2^-r); at
 *          AVX-512 the rank and index are then worked out for the kept hashes only.
 */
#include "_native.h"
#include <string.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define HAVE_X86_DISPATCH 1
#include <immintrin.h>
#endif

static const uint64_t FMIX_C1 = 0xFF51AFD7ED558CCDULL, FMIX_C2 = 0xC4CEB9FE1A85EC53ULL;

static inline uint64_t fmix64(uint64_t x)
{
    x ^= x >> 33;
    x *= FMIX_C1;
    x ^= x >> 33;
    x *= FMIX_C2;
    x ^= x >> 33;
    return x;
}

/* The register update of one hash whose rank may exceed the floor (scalar: lanes of one
 * vector may hit the same register). The bit below the low bits bounds the rank at 65 - p,
 * the rank of an all-zero low part (SPEC 3), without a branch. */
static inline void update_register(uint8_t *registers, uint64_t h, unsigned p, unsigned max_rank)
{
    unsigned rank = (unsigned)__builtin_clzll((h << p) | (1ull << (p - 1))) + 1;
    rank = rank < max_rank ? rank : max_rank;
    uint8_t *reg = &registers[h >> (64 - p)];
    *reg = *reg > rank ? *reg : (uint8_t)rank;
}

#ifdef HAVE_X86_DISPATCH

/* -- AVX2 ------------------------------------------------------------------------------------ */

__attribute__((target("avx2")))
static size_t scan_bases_avx2(const uint8_t *data, size_t n, uint8_t *codes)
{
    const __m256i fold = _mm256_set1_epi8((char)0xDF), three = _mm256_set1_epi8(3);
    const __m256i a = _mm256_set1_epi8('A'), c = _mm256_set1_epi8('C');
    const __m256i g = _mm256_set1_epi8('G'), t = _mm256_set1_epi8('T');
    uint8_t tail[32];
    for (size_t i = 0;; i += 32) {
        const uint8_t *from = data + i;
        if (n - i < 32) {  /* the last bytes, through a zeroed copy (0 is no base) */
            memset(tail, 0, sizeof tail);
            memcpy(tail, from, n - i);
            from = tail;
        }
        __m256i bytes = _mm256_loadu_si256((const __m256i *)from);
        __m256i upper = _mm256_and_si256(bytes, fold);
        __m256i bases = _mm256_or_si256(
            _mm256_or_si256(_mm256_cmpeq_epi8(upper, a), _mm256_cmpeq_epi8(upper, c)),
            _mm256_or_si256(_mm256_cmpeq_epi8(upper, g), _mm256_cmpeq_epi8(upper, t)));
        __m256i code = _mm256_and_si256(_mm256_xor_si256(_mm256_srli_epi16(bytes, 1),
                                                         _mm256_srli_epi16(bytes, 2)), three);
        _mm256_storeu_si256((__m256i *)(codes + i), code);
        uint32_t others = ~(uint32_t)_mm256_movemask_epi8(bases);
        if (others)
            return i + (size_t)__builtin_ctz(others);
        if (i + 32 == n)
            return n;
    }
}

/* G and H (above) of positions [0, n) of codes, 16 a vector; codes[-7..-1] are read. */
__attribute__((target("avx2")))
static void packed_codes_avx2(const uint8_t *codes, size_t n, uint16_t *forward,
                              uint16_t *reverse)
{
    for (size_t p = 0; p < n; p += 16) {
        __m256i f = _mm256_setzero_si256(), r = _mm256_setzero_si256();
        for (int t = 0; t < 8; t++) {
            __m256i c = _mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *)(codes + p - t)));
            f = _mm256_or_si256(f, _mm256_slli_epi16(c, 2 * t));
            r = _mm256_or_si256(r, _mm256_slli_epi16(c, 14 - 2 * t));
        }
        _mm256_storeu_si256((__m256i *)(forward + p), f);
        _mm256_storeu_si256((__m256i *)(reverse + p),
                            _mm256_xor_si256(r, _mm256_set1_epi16(-1)));
    }
}

/* min(x, y) of unsigned 64-bit lanes. */
__attribute__((target("avx2")))
static inline __m256i min_epu64_avx2(__m256i x, __m256i y)
{
    const __m256i sign = _mm256_set1_epi64x((long long)0x8000000000000000ULL);
    __m256i x_greater = _mm256_cmpgt_epi64(_mm256_xor_si256(x, sign), _mm256_xor_si256(y, sign));
    return _mm256_blendv_epi8(x, y, x_greater);
}

__attribute__((target("avx2")))
static void kmer_words_avx2(const uint8_t *codes, size_t n, unsigned k, int canonical,
                            uint64_t *out)
{
    uint16_t forward_codes[KMER_RUN_WORDS], reverse_codes[KMER_RUN_WORDS];
    packed_codes_avx2(codes, n, forward_codes, reverse_codes);
    const __m256i mask = _mm256_set1_epi64x((long long)(k == 32 ? ~0ull : (1ull << 2 * k) - 1));
    const __m128i reverse_shift = _mm_cvtsi32_si128((int)(2 * k - 16));
    __m256i forward[2] = {_mm256_setzero_si256(), _mm256_setzero_si256()};
    __m256i reverse[2] = {_mm256_setzero_si256(), _mm256_setzero_si256()};
    for (size_t p = 0; p < n; p += 8) {
        for (int half = 0; half < 2; half++) {
            size_t q = p + 4 * (size_t)half;
            __m256i f = _mm256_cvtepu16_epi64(_mm_loadl_epi64((const __m128i *)(forward_codes + q)));
            __m256i r = _mm256_cvtepu16_epi64(_mm_loadl_epi64((const __m128i *)(reverse_codes + q)));
            forward[half] = _mm256_and_si256(
                _mm256_or_si256(_mm256_slli_epi64(forward[half], 16), f), mask);
            reverse[half] = _mm256_or_si256(_mm256_srli_epi64(reverse[half], 16),
                                            _mm256_sll_epi64(r, reverse_shift));
            __m256i word = canonical ? min_epu64_avx2(forward[half], reverse[half])
                                     : forward[half];
            _mm256_storeu_si256((__m256i *)(out + q), word);
        }
    }
}

/* x * constant, modulo 2^64, from three 32 x 32 -> 64-bit products. */
__attribute__((target("avx2")))
static inline __m256i mul_u64_avx2(__m256i x, uint64_t constant)
{
    const __m256i low = _mm256_set1_epi64x((long long)(constant & 0xFFFFFFFFu));
    const __m256i high = _mm256_set1_epi64x((long long)(constant >> 32));
    __m256i cross = _mm256_add_epi64(_mm256_mul_epu32(_mm256_srli_epi64(x, 32), low),
                                     _mm256_mul_epu32(x, high));
    return _mm256_add_epi64(_mm256_mul_epu32(x, low), _mm256_slli_epi64(cross, 32));
}

__attribute__((target("avx2")))
static inline __m256i fmix64_avx2(__m256i x)
{
    x = _mm256_xor_si256(x, _mm256_srli_epi64(x, 33));
    x = mul_u64_avx2(x, FMIX_C1);
    x = _mm256_xor_si256(x, _mm256_srli_epi64(x, 33));
    x = mul_u64_avx2(x, FMIX_C2);
    return _mm256_xor_si256(x, _mm256_srli_epi64(x, 33));
}

/* The lanes whose rank exceeds floor: their low part (h << p, the bit below it set) has at
 * least floor leading zeros, i.e. nothing left after a shift by 64 - floor (a shift by 64, at
 * floor 0, leaves nothing too). */
__attribute__((target("avx2")))
static void hll_words_avx2(const uint64_t *words, size_t n, uint8_t *registers, unsigned p,
                           unsigned max_rank, unsigned floor)
{
    const __m128i low_shift = _mm_cvtsi32_si128((int)p);
    const __m128i floor_shift = _mm_cvtsi32_si128((int)(64 - floor));
    const __m256i below = _mm256_set1_epi64x((long long)(1ull << (p - 1)));
    uint64_t hashes[4], kept[KMER_RUN_WORDS];
    size_t j = 0, count = 0;
    for (; j + 4 <= n; j += 4) {
        __m256i h = fmix64_avx2(_mm256_loadu_si256((const __m256i *)(words + j)));
        __m256i low = _mm256_or_si256(_mm256_sll_epi64(h, low_shift), below);
        __m256i rest = _mm256_srl_epi64(low, floor_shift);
        unsigned above = (unsigned)_mm256_movemask_pd(_mm256_castsi256_pd(
            _mm256_cmpeq_epi64(rest, _mm256_setzero_si256())));
        /* the kept hashes appended without a branch: which lanes pass is random */
        _mm256_storeu_si256((__m256i *)hashes, h);
        for (int lane = 0; lane < 4; lane++) {
            kept[count] = hashes[lane];
            count += (above >> lane) & 1;
        }
    }
    for (; j < n; j++)
        kept[count++] = fmix64(words[j]);
    for (size_t i = 0; i < count; i++)
        update_register(registers, kept[i], p, max_rank);
}

/* The k-mers of a run into the registers: its words, then their hashes. */
__attribute__((target("avx2")))
static void hll_codes_avx2(const uint8_t *codes, size_t n, unsigned k, int canonical,
                           uint8_t *registers, unsigned p, unsigned max_rank, unsigned floor)
{
    uint64_t words[KMER_RUN_WORDS];
    kmer_words_avx2(codes, n, k, canonical, words);
    hll_words_avx2(words + k - 1, n - k + 1, registers, p, max_rank, floor);
}

/* The lowest byte of a vector of 16. */
__attribute__((target("avx2")))
static inline unsigned lowest_byte(__m128i x)
{
    x = _mm_min_epu8(x, _mm_srli_si128(x, 8));
    x = _mm_min_epu8(x, _mm_srli_si128(x, 4));
    x = _mm_min_epu8(x, _mm_srli_si128(x, 2));
    x = _mm_min_epu8(x, _mm_srli_si128(x, 1));
    return (unsigned)_mm_cvtsi128_si32(x) & 0xFF;
}

__attribute__((target("avx2")))
static unsigned register_floor_avx2(const uint8_t *registers, size_t m)
{
    __m256i low = _mm256_loadu_si256((const __m256i *)registers);
    for (size_t j = 32; j < m; j += 32)
        low = _mm256_min_epu8(low, _mm256_loadu_si256((const __m256i *)(registers + j)));
    return lowest_byte(_mm_min_epu8(_mm256_castsi256_si128(low),
                                    _mm256_extracti128_si256(low, 1)));
}

__attribute__((target("avx2")))
static size_t printable_avx2(const uint8_t *data, size_t n)
{
    const __m256i space = _mm256_set1_epi8(' ');
    uint8_t tail[32];
    for (size_t i = 0; i < n; i += 32) {
        const uint8_t *from = data + i;
        if (n - i < 32) {  /* the last bytes, through a copy padded with 0xFF (printable) */
            memset(tail, 0xFF, sizeof tail);
            memcpy(tail, from, n - i);
            from = tail;
        }
        __m256i bytes = _mm256_loadu_si256((const __m256i *)from);
        /* b <= ' ' (unsigned): min(b, ' ') == b */
        uint32_t stops = (uint32_t)_mm256_movemask_epi8(
            _mm256_cmpeq_epi8(_mm256_min_epu8(bytes, space), bytes));
        if (stops)
            return i + (size_t)__builtin_ctz(stops);
    }
    return n;
}

/* -- AVX-512 (F, BW, DQ, CD, VL) ------------------------------------------------------------ */

#define AVX512 "avx512f,avx512bw,avx512dq,avx512cd,avx512vl,popcnt"

__attribute__((target(AVX512)))
static size_t scan_bases_avx512(const uint8_t *data, size_t n, uint8_t *codes)
{
    const __m512i fold = _mm512_set1_epi8((char)0xDF), three = _mm512_set1_epi8(3);
    const __m512i a = _mm512_set1_epi8('A'), c = _mm512_set1_epi8('C');
    const __m512i g = _mm512_set1_epi8('G'), t = _mm512_set1_epi8('T');
    for (size_t i = 0;; i += 64) {
        size_t left = n - i;
        /* past the end nothing is loaded (a masked load does not fault) and 0 is no base */
        __mmask64 live = left >= 64 ? ~0ull : (1ull << left) - 1;
        __m512i bytes = _mm512_maskz_loadu_epi8(live, data + i);
        __m512i upper = _mm512_and_si512(bytes, fold);
        __mmask64 bases = _mm512_cmpeq_epi8_mask(upper, a) | _mm512_cmpeq_epi8_mask(upper, c)
                        | _mm512_cmpeq_epi8_mask(upper, g) | _mm512_cmpeq_epi8_mask(upper, t);
        __m512i code = _mm512_and_si512(_mm512_xor_si512(_mm512_srli_epi16(bytes, 1),
                                                         _mm512_srli_epi16(bytes, 2)), three);
        _mm512_storeu_si512(codes + i, code);
        if (~bases)
            return i + (size_t)__builtin_ctzll(~bases);
        if (i + 64 == n)
            return n;
    }
}

/* G and H (above; H not when reverse is NULL) of positions [0, n) of codes, 64 a step,
 * codes[-7..-1] read: the codes of positions p..p-3 and p-4..p-7 are packed in one byte
 * each, two codes at a time (16-bit shifts move no bit across a byte, as every code is below
 * 4), and the two bytes of a position are then put side by side (unpack, whose 128-bit lanes
 * the permutes put back in order). */
__attribute__((target(AVX512)))
static inline __attribute__((always_inline)) void
packed_codes_avx512(const uint8_t *codes, size_t n, uint16_t *forward, uint16_t *reverse)
{
    const __m512i first_half = _mm512_set_epi64(11, 10, 3, 2, 9, 8, 1, 0);
    const __m512i second_half = _mm512_set_epi64(15, 14, 7, 6, 13, 12, 5, 4);
    for (size_t p = 0; p < n; p += 64) {
        __m512i f[2], r[2];  /* [0]: the codes of p..p-3, [1]: of p-4..p-7 */
        for (int half = 0; half < 2; half++) {
            const uint8_t *at = codes + p - 4 * half;
            __m512i c0 = _mm512_loadu_si512(at), c1 = _mm512_loadu_si512(at - 1);
            __m512i c2 = _mm512_loadu_si512(at - 2), c3 = _mm512_loadu_si512(at - 3);
            /* forward: c[p - t] at bits 2t (of its byte) */
            __m512i f01 = _mm512_or_si512(c0, _mm512_slli_epi16(c1, 2));
            __m512i f23 = _mm512_or_si512(c2, _mm512_slli_epi16(c3, 2));
            f[half] = _mm512_or_si512(f01, _mm512_slli_epi16(f23, 4));
            /* reverse: the complement of c[p - t] at bits 6 - 2t: ~(c0 << 6 | ... | c3) */
            __m512i r01 = _mm512_or_si512(_mm512_slli_epi16(c0, 2), c1);
            __m512i r23 = _mm512_or_si512(_mm512_slli_epi16(c2, 2), c3);
            r[half] = _mm512_ternarylogic_epi64(_mm512_slli_epi16(r01, 4), r23, r23, 0x03);
        }
        __m512i g_low = _mm512_unpacklo_epi8(f[0], f[1]), g_high = _mm512_unpackhi_epi8(f[0], f[1]);
        _mm512_storeu_si512(forward + p, _mm512_permutex2var_epi64(g_low, first_half, g_high));
        _mm512_storeu_si512(forward + p + 32,
                            _mm512_permutex2var_epi64(g_low, second_half, g_high));
        if (reverse == NULL)
            continue;
        __m512i h_low = _mm512_unpacklo_epi8(r[1], r[0]), h_high = _mm512_unpackhi_epi8(r[1], r[0]);
        _mm512_storeu_si512(reverse + p, _mm512_permutex2var_epi64(h_low, first_half, h_high));
        _mm512_storeu_si512(reverse + p + 32,
                            _mm512_permutex2var_epi64(h_low, second_half, h_high));
    }
}

__attribute__((target(AVX512)))
static void kmer_words_avx512(const uint8_t *codes, size_t n, unsigned k, int canonical,
                              uint64_t *out)
{
    uint16_t forward_codes[KMER_RUN_WORDS], reverse_codes[KMER_RUN_WORDS];
    packed_codes_avx512(codes, n, forward_codes, reverse_codes);
    const __m512i mask = _mm512_set1_epi64((long long)(k == 32 ? ~0ull : (1ull << 2 * k) - 1));
    const __m128i reverse_shift = _mm_cvtsi32_si128((int)(2 * k - 16));
    __m512i forward = _mm512_setzero_si512(), reverse = _mm512_setzero_si512();
    for (size_t p = 0; p < n; p += 8) {
        __m512i f = _mm512_cvtepu16_epi64(_mm_loadu_si128((const __m128i *)(forward_codes + p)));
        __m512i r = _mm512_cvtepu16_epi64(_mm_loadu_si128((const __m128i *)(reverse_codes + p)));
        forward = _mm512_and_si512(_mm512_or_si512(_mm512_slli_epi64(forward, 16), f), mask);
        reverse = _mm512_or_si512(_mm512_srli_epi64(reverse, 16), _mm512_sll_epi64(r, reverse_shift));
        _mm512_storeu_si512(out + p, canonical ? _mm512_min_epu64(forward, reverse) : forward);
    }
}

/* The kept hashes of a run (see the template) into the registers: their (index << 8 | rank),
 * eight at a time, then the scalar update (lanes may hit one register). */
__attribute__((target(AVX512)))
static inline __attribute__((always_inline)) void
update_kept_avx512(const uint64_t *kept, size_t count, int late_finish, uint8_t *registers,
                   unsigned p, unsigned max_rank)
{
    uint32_t index_rank[KMER_RUN_WORDS + 8];
    const __m512i below = _mm512_set1_epi64((long long)(1ull << (p - 1)));
    const __m512i one = _mm512_set1_epi64(1), top = _mm512_set1_epi64(max_rank);
    const __m128i low_shift = _mm_cvtsi32_si128((int)p);
    const __m128i index_shift = _mm_cvtsi32_si128((int)(64 - p));
    for (size_t i = 0; i < count; i += 8) {
        __m512i x = _mm512_loadu_si512(kept + i);
        if (late_finish)
            x = _mm512_xor_si512(x, _mm512_srli_epi64(x, 33));
        __m512i low = _mm512_or_si512(_mm512_sll_epi64(x, low_shift), below);
        __m512i rank = _mm512_min_epu64(_mm512_add_epi64(_mm512_lzcnt_epi64(low), one), top);
        _mm256_storeu_si256((__m256i *)(index_rank + i), _mm512_cvtepi64_epi32(
            _mm512_or_si512(_mm512_slli_epi64(_mm512_srl_epi64(x, index_shift), 8), rank)));
    }
    for (size_t i = 0; i < count; i++) {
        uint8_t *reg = &registers[index_rank[i] >> 8];
        uint8_t rank = (uint8_t)index_rank[i];
        *reg = *reg > rank ? *reg : rank;
    }
}

/* hll_codes_avx512: the reverse-complement words rolled from their own packed codes. */
#define HLL_TARGET AVX512
#define HLL_CODES hll_codes_avx512
#define HLL_STEPS hll_steps_avx512
#define HLL_ROLL hll_roll_avx512
#define HLL_REVERSE_FROM_FORWARD 0
#include "_kmer_hll_avx512.h"

/* hll_codes_avx512_gfni: each reverse-complement word made from its forward word, its 32 base
 * pairs reversed (bytes by a shuffle, the pairs of a byte and their complement by one GF(2)
 * affine map), so that no reverse codes are packed nor rolled. */
#define HLL_TARGET AVX512 ",gfni"
#define HLL_CODES hll_codes_avx512_gfni
#define HLL_STEPS hll_steps_avx512_gfni
#define HLL_ROLL hll_roll_avx512_gfni
#define HLL_REVERSE_FROM_FORWARD 1
#include "_kmer_hll_avx512.h"

__attribute__((target(AVX512)))
static unsigned register_floor_avx512(const uint8_t *registers, size_t m)
{
    __m512i low = _mm512_loadu_si512(registers);
    for (size_t j = 64; j < m; j += 64)
        low = _mm512_min_epu8(low, _mm512_loadu_si512(registers + j));
    __m256i half = _mm256_min_epu8(_mm512_castsi512_si256(low), _mm512_extracti64x4_epi64(low, 1));
    return lowest_byte(_mm_min_epu8(_mm256_castsi256_si128(half),
                                    _mm256_extracti128_si256(half, 1)));
}

__attribute__((target(AVX512)))
static size_t printable_avx512(const uint8_t *data, size_t n)
{
    const __m512i space = _mm512_set1_epi8(' ');
    for (size_t i = 0; i < n; i += 64) {
        size_t left = n - i;
        /* past the end nothing is loaded (a masked load does not fault) nor compared */
        __mmask64 live = left >= 64 ? ~0ull : (1ull << left) - 1;
        __m512i bytes = _mm512_maskz_loadu_epi8(live, data + i);
        __mmask64 stops = _mm512_mask_cmple_epu8_mask(live, bytes, space);
        if (stops)
            return i + (size_t)__builtin_ctzll(stops);
    }
    return n;
}

#endif  /* HAVE_X86_DISPATCH */

/* -- choosing the level ----------------------------------------------------------------------- */

KmerKernels kmer_kernels = {"scalar", NULL, NULL, NULL, NULL, NULL};

int kmer_use_simd_level(const char *level)
{
    int best = strcmp(level, "best") == 0;
    if (best || strcmp(level, "scalar") == 0)
        kmer_kernels = (KmerKernels){"scalar", NULL, NULL, NULL, NULL, NULL};
#ifdef HAVE_X86_DISPATCH
    __builtin_cpu_init();
    int avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw")
              && __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512cd")
              && __builtin_cpu_supports("avx512vl");
    if ((best || strcmp(level, "avx512-gfni") == 0) && avx512
            && __builtin_cpu_supports("gfni")) {
        kmer_kernels = (KmerKernels){"avx512-gfni", scan_bases_avx512, kmer_words_avx512,
                                     hll_codes_avx512_gfni, register_floor_avx512,
                                     printable_avx512};
        return 0;
    }
    if ((best || strcmp(level, "avx512") == 0) && avx512) {
        kmer_kernels = (KmerKernels){"avx512", scan_bases_avx512, kmer_words_avx512,
                                     hll_codes_avx512, register_floor_avx512,
                                     printable_avx512};
        return 0;
    }
    if ((best || strcmp(level, "avx2") == 0) && __builtin_cpu_supports("avx2")) {
        kmer_kernels = (KmerKernels){"avx2", scan_bases_avx2, kmer_words_avx2, hll_codes_avx2,
                                     register_floor_avx2, printable_avx2};
        return 0;
    }
#endif
    return best || strcmp(level, "scalar") == 0 ? 0 : -1;
}
