/*
 * The AVX-512 HLL kernel of host/fast/_kmer_simd.c, included there once for each way of making
 * the reverse-complement words (the rest is the same), with
 *   HLL_TARGET                the instruction sets (a target attribute),
 *   HLL_CODES, HLL_STEPS,     the names of the kernel, of its steps and of their roll of
 *   HLL_ROLL                  the words,
 *   HLL_REVERSE_FROM_FORWARD  0: rolled from the packed reverse codes (H), as the forward words
 *                             are from G; 1: made from each step's forward word (GFNI).
 * Each inclusion undefines them.
 */

/* The words of positions at..at+7 from those of at-8..at-1: the forward ones rolled from the
 * packed codes G, the reverse ones from H (not with HLL_REVERSE_FROM_FORWARD: the steps make
 * them from the forward words). */
__attribute__((target(HLL_TARGET)))
static inline __attribute__((always_inline)) void
HLL_ROLL(const uint16_t *forward_codes, const uint16_t *reverse_codes, size_t at, __m512i mask,
         __m128i reverse_shift, __m512i *forward, __m512i *reverse)
{
    __m512i f = _mm512_cvtepu16_epi64(_mm_loadu_si128((const __m128i *)(forward_codes + at)));
    *forward = _mm512_and_si512(_mm512_or_si512(_mm512_slli_epi64(*forward, 16), f), mask);
#if HLL_REVERSE_FROM_FORWARD
    (void)reverse_codes;
    (void)reverse_shift;
    (void)reverse;
#else
    __m512i r = _mm512_cvtepu16_epi64(_mm_loadu_si128((const __m128i *)(reverse_codes + at)));
    *reverse = _mm512_or_si512(_mm512_srli_epi64(*reverse, 16), _mm512_sll_epi64(r, reverse_shift));
#endif
}

/* The steps of HLL_CODES from position `at` on (all eight lanes at least k - 1 into the run
 * but for the first), the kept hashes appended to kept; their count. With `late_finish`,
 * fmix64's last xor-shift, which changes bits 0 to 30 only, is left to the kept hashes: the
 * caller sets it when neither the floor bits nor the index bits are among those. */
__attribute__((target(HLL_TARGET)))
static inline __attribute__((always_inline)) size_t
HLL_STEPS(const uint16_t *forward_codes, const uint16_t *reverse_codes, size_t at, size_t n,
          unsigned k, int canonical, __m512i forward, __m512i reverse, uint64_t floor_bits,
          int late_finish, uint64_t *kept)
{
    const __m512i mask = _mm512_set1_epi64((long long)(k == 32 ? ~0ull : (1ull << 2 * k) - 1));
#if HLL_REVERSE_FROM_FORWARD
    /* the bytes of each word in reverse order; the four pairs of a byte in reverse order and
     * complemented (output bit i is input bit 6 - 2 (i / 2) + i % 2, then 0xFF added); the
     * 32 - k pairs above the k-mer, complemented zeros, then shifted out */
    const __m512i byte_reverse = _mm512_set4_epi32(0x08090a0b, 0x0c0d0e0f, 0x00010203,
                                                   0x04050607);
    const __m512i pair_reverse = _mm512_set1_epi64(0x4080102004080102LL);
    const __m128i above_kmer = _mm_cvtsi32_si128((int)(64 - 2 * k));
#endif
    const __m128i reverse_shift = _mm_cvtsi32_si128((int)(2 * k - 16));
    const __m512i c1 = _mm512_set1_epi64((long long)FMIX_C1);
    const __m512i c2 = _mm512_set1_epi64((long long)FMIX_C2);
    const __m512i floor_mask = _mm512_set1_epi64((long long)floor_bits);
    const __m512i lane = _mm512_set_epi64(7, 6, 5, 4, 3, 2, 1, 0);
    const __m512i first = _mm512_set1_epi64(k - 1), end = _mm512_set1_epi64((long long)n);
    size_t count = 0;
    for (; at < n; at += 8) {
        HLL_ROLL(forward_codes, reverse_codes, at, mask, reverse_shift, &forward, &reverse);
#if HLL_REVERSE_FROM_FORWARD
        reverse = _mm512_srl_epi64(_mm512_gf2p8affine_epi64_epi8(
            _mm512_shuffle_epi8(forward, byte_reverse), pair_reverse, 0xFF), above_kmer);
#endif
        /* the positions with k bases of the run, inside it: all eight but at the ends */
        __mmask8 live = 0xFF;
        if (at < k - 1 || at + 8 > n) {
            __m512i position = _mm512_add_epi64(_mm512_set1_epi64((long long)at), lane);
            live = _mm512_cmpge_epu64_mask(position, first)
                 & _mm512_cmplt_epu64_mask(position, end);
        }
        __m512i x = canonical ? _mm512_min_epu64(forward, reverse) : forward;
        x = _mm512_xor_si512(x, _mm512_srli_epi64(x, 33));
        x = _mm512_mullo_epi64(x, c1);
        x = _mm512_xor_si512(x, _mm512_srli_epi64(x, 33));
        x = _mm512_mullo_epi64(x, c2);
        if (!late_finish)
            x = _mm512_xor_si512(x, _mm512_srli_epi64(x, 33));
        __mmask8 above = _mm512_mask_testn_epi64_mask(live, x, floor_mask);
        /* the kept ones appended without a branch: which lanes pass is random */
        _mm512_storeu_si512(kept + count, _mm512_maskz_compress_epi64(above, x));
        count += (size_t)__builtin_popcount(above);
    }
    return count;
}

/* The k-mers of a run into the registers in one pass: each step's eight words (as
 * kmer_words_avx512 makes them) are hashed where they are, and those whose rank exceeds the
 * floor are appended, compressed, for the scalar register update. The rank of a hash exceeds
 * the floor iff the floor bits below its top p (index) bits are all zero (its low part, shifted
 * up, has at least floor leading zeros; the bit set below it lies further down, as floor <
 * max_rank <= 65 - p): one test a step. The steps before position k - 1 only roll the words. */
__attribute__((target(HLL_TARGET)))
static void HLL_CODES(const uint8_t *codes, size_t n, unsigned k, int canonical,
                      uint8_t *registers, unsigned p, unsigned max_rank, unsigned floor)
{
    uint16_t forward_codes[KMER_RUN_WORDS];
    uint64_t kept[KMER_RUN_WORDS + 8];
    const __m512i mask = _mm512_set1_epi64((long long)(k == 32 ? ~0ull : (1ull << 2 * k) - 1));
    __m512i forward = _mm512_setzero_si512(), reverse = _mm512_setzero_si512();
#if HLL_REVERSE_FROM_FORWARD
    uint16_t *reverse_codes = NULL;
#else
    uint16_t reverse_codes[KMER_RUN_WORDS];
#endif
    const __m128i reverse_shift = _mm_cvtsi32_si128((int)(2 * k - 16));
    packed_codes_avx512(codes, n, forward_codes, reverse_codes);
    size_t at = 0;
    for (; at + 8 <= k - 1 && at < n; at += 8)
        HLL_ROLL(forward_codes, reverse_codes, at, mask, reverse_shift, &forward, &reverse);
    const uint64_t floor_bits = floor == 0 ? 0 : (~0ull >> (64 - floor)) << (64 - p - floor);
    const int late_finish = 64 - p - floor >= 31;
    size_t count = late_finish
        ? HLL_STEPS(forward_codes, reverse_codes, at, n, k, canonical, forward, reverse,
                    floor_bits, 1, kept)
        : HLL_STEPS(forward_codes, reverse_codes, at, n, k, canonical, forward, reverse,
                    floor_bits, 0, kept);
    update_kept_avx512(kept, count, late_finish, registers, p, max_rank);
}

#undef HLL_TARGET
#undef HLL_CODES
#undef HLL_STEPS
#undef HLL_ROLL
#undef HLL_REVERSE_FROM_FORWARD
