// The block formats on integer dot products (lse_qmv.c includes
// this where cpu_kernel_build builds with LSE_INT_DOTS: AVX-512 with VNNI and
// VBMI). docs/kernels.md, "What a core's loop costs, and a cheaper one",
// measures it.
//
// x is split per block of 32 values into s = max|x| / 127 and three signed
// parts, x / s ~ a + b / 128 + c / 16384 (each rounded to nearest: |a| <= 127,
// |b|, |c| <= 64), so a block's sum over a row is three integer dot products,
// exact in any order, combined and scaled in f32 the same way for every row
// count (a verification's rows get decode's bits). A value's error is at most
// 2^-15 s / 2, below 2.5e-7 of the block's largest |x|; summed, it is less
// than f32's own rounding of the sums (the study: 1.5e-7 against 3e-7 of
// sum |w x|). One vpermb turns four of the layout's runs (run j: byte j of
// the 16 rows) into each row's 4 bytes, so vpdpbusd takes 16 rows x 4
// values at once against a word of x's parts.

// x's record of a block (32 words, where the f32 path stretches the block's
// 32 values): word (p * 2 + h) * 4 + c is part p's values 8c + 2t + h,
// t = 0..3, as 4 int8 (h = 0: the low nibbles' values, 1: the high ones'),
// word 24 is s.
#define DOTS_S 24

// 16 values of x / s (t) as their three parts a, b, c: 16 int8 each, in order.
INLINE void split3(__m512 t, __m128i parts[3]) {
  const __m512 k128 = _mm512_set1_ps(128.f);
  const __m512 a = _mm512_roundscale_ps(t, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  const __m512 r1 = _mm512_mul_ps(_mm512_sub_ps(t, a), k128);
  const __m512 b = _mm512_roundscale_ps(r1, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  const __m512 c = _mm512_roundscale_ps(_mm512_mul_ps(_mm512_sub_ps(r1, b), k128),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  parts[0] = _mm512_cvtepi32_epi8(_mm512_cvtps_epi32(a));
  parts[1] = _mm512_cvtepi32_epi8(_mm512_cvtps_epi32(b));
  parts[2] = _mm512_cvtepi32_epi8(_mm512_cvtps_epi32(c));
}

// The three parts' integer sums of a block (16 lanes) as one f32 sum, times the block's s.
INLINE __m512 combine3(__m512i s0, __m512i s1, __m512i s2, float s) {
  const __m512 sum = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s2), _mm512_set1_ps(1.f / 16384.f),
                                     _mm512_fmadd_ps(_mm512_cvtepi32_ps(s1), _mm512_set1_ps(1.f / 128.f),
                                                     _mm512_cvtepi32_ps(s0)));
  return _mm512_mul_ps(sum, _mm512_set1_ps(s));
}

// A block of 32 values of x (p) as its three parts, values 16h .. 16h + 15
// in parts[h]; returns the block's s.
INLINE float split_block32(const float *p, __m128i parts[2][3]) {
  const __m512 in[2] = {_mm512_loadu_ps(p), _mm512_loadu_ps(p + 16)};
  const float mx = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_abs_ps(in[0]), _mm512_abs_ps(in[1])));
  const __m512 inv = _mm512_set1_ps(mx > 0.f ? 127.f / mx : 0.f);
  for (int h = 0; h < 2; ++h) split3(_mm512_mul_ps(in[h], inv), parts[h]);
  return mx > 0.f ? mx / 127.f : 1.f;
}

// Blocks [b0, b1) of x's R rows into xp (row r at r * (b1 - b0) * 32 floats).
static void il_split_x(const float *x, size_t R, size_t K, size_t b0, size_t b1, float *xp) {
  const __m256i shuf = _mm256_setr_epi8(0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15,
                                        0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15);
  const __m256i order = _mm256_setr_epi32(0, 1, 4, 5, 2, 3, 6, 7);
  const size_t w = (b1 - b0) * 32;
  for (size_t r = 0; r < R; ++r)
    for (size_t b = b0; b < b1; ++b) {
      float *rec = xp + r * w + (b - b0) * 32;
      __m128i parts[2][3];
      rec[DOTS_S] = split_block32(x + r * K + b * 32, parts);
      for (int k = 0; k < 3; ++k) {  // even values' words of chunks 0-3, then odd values'
        const __m256i v = _mm256_shuffle_epi8(_mm256_set_m128i(parts[1][k], parts[0][k]), shuf);
        _mm256_storeu_si256((__m256i *)(rec + 8 * k), _mm256_permutevar8x32_epi32(v, order));
      }
    }
}

INLINE __m512i dots_word(const float *p) {  // an int32 stored among floats
  int32_t v;
  __builtin_memcpy(&v, p, 4);
  return _mm512_set1_epi32(v);
}

// vpermb's index that turns four runs of 16 rows' bytes into each row's 4
// bytes: byte 4i + t of the result is byte 16t + i (run t's row i).
INLINE __m512i runs_to_rows(void) {
  return _mm512_set_epi8(63, 47, 31, 15, 62, 46, 30, 14, 61, 45, 29, 13, 60, 44, 28, 12, 59, 43, 27, 11, 58, 42, 26,
                         10, 57, 41, 25, 9, 56, 40, 24, 8, 55, 39, 23, 7, 54, 38, 22, 6, 53, 37, 21, 5, 52, 36, 20, 4,
                         51, 35, 19, 3, 50, 34, 18, 2, 49, 33, 17, 1, 48, 32, 16, 0);
}

// Block b of groups g0 .. g0 + G - 1 against RP rows of x (xb: the block's
// record of row 0, row r at r * w): acc[g][r] = the 16 rows' sums of q x,
// for il_tile to scale by d as the f32 path's.
INLINE void dots4(size_t G, size_t RP, const Fmt *f, const float *xb, size_t w, const uint8_t *q, size_t g0,
                  size_t nb, size_t b, size_t run, V acc[G_MAX][RP_MAX]) {
  const __m512i nib = _mm512_set1_epi8(15), flip = _mm512_set1_epi8(f->sign4 ? (char)0x88 : 0), rows = runs_to_rows();
  __m512i s0[G_MAX][RP_MAX], s1[G_MAX][RP_MAX], s2[G_MAX][RP_MAX];
  for (size_t g = 0; g < G; ++g)
    for (size_t r = 0; r < RP; ++r) s0[g][r] = s1[g][r] = s2[g][r] = _mm512_setzero_si512();
  for (size_t c = 0; c < 4; ++c) {  // runs 4c .. 4c + 3: values 8c .. 8c + 7
    for (size_t g = 0; g < G; ++g) {
      const __m512i raw = _mm512_loadu_si512((const void *)(q + ((g0 + g) * nb + b) * run + c * 64));
      const __m512i v = _mm512_permutexvar_epi8(rows, _mm512_xor_si512(raw, flip));
      const __m512i lo = _mm512_and_si512(v, nib), hi = _mm512_and_si512(_mm512_srli_epi32(v, 4), nib);
      for (size_t r = 0; r < RP; ++r) {
        const float *xw = xb + r * w;
        s0[g][r] = _mm512_dpbusd_epi32(s0[g][r], lo, dots_word(xw + c));
        s1[g][r] = _mm512_dpbusd_epi32(s1[g][r], lo, dots_word(xw + 8 + c));
        s2[g][r] = _mm512_dpbusd_epi32(s2[g][r], lo, dots_word(xw + 16 + c));
        s0[g][r] = _mm512_dpbusd_epi32(s0[g][r], hi, dots_word(xw + 4 + c));
        s1[g][r] = _mm512_dpbusd_epi32(s1[g][r], hi, dots_word(xw + 12 + c));
        s2[g][r] = _mm512_dpbusd_epi32(s2[g][r], hi, dots_word(xw + 20 + c));
      }
    }
  }
  for (size_t g = 0; g < G; ++g)
    for (size_t r = 0; r < RP; ++r) acc[g][r] = combine3(s0[g][r], s1[g][r], s2[g][r], xb[r * w + DOTS_S]);
}

// q6_k: x is split as above per block of 16 values (the format's sub-block),
// its record 16 words: word 4p + t is part p's values 4t .. 4t + 3, word 12
// is s. The block's u = q + 32 are taken from the layout's words A, B, C
// (lse_qmv.c's q6_k comment) with vpmultishiftqb, which gives each byte the
// 8 bits at any offset of its qword (two rows' words): A, B and C each hold
// 4 values whole (0-3, 4-7, 8-11: one shift and one and), and 12-15 are
// three shifts and three bitwise ops from all three. The -32 is in x's
// block sums, as for the FMA loop.
#define DOTS6_S 12

static void il_split_x16(const float *x, size_t R, size_t K, size_t b0, size_t b1, float *xp) {
  const size_t w = (b1 - b0) * 16;
  for (size_t r = 0; r < R; ++r)
    for (size_t b = b0; b < b1; ++b) {
      const __m512 in = _mm512_loadu_ps(x + r * K + b * 16);
      float *rec = xp + r * w + (b - b0) * 16;
      const float mx = _mm512_reduce_max_ps(_mm512_abs_ps(in));
      __m128i parts[3];
      split3(_mm512_mul_ps(in, _mm512_set1_ps(mx > 0.f ? 127.f / mx : 0.f)), parts);
      for (int k = 0; k < 3; ++k) _mm_storeu_si128((__m128i *)(rec + 4 * k), parts[k]);
      rec[DOTS6_S] = mx > 0.f ? mx / 127.f : 1.f;
    }
}

// A block's 16 rows' u as four words of 4 bytes each (values 4t .. 4t + 3 in word t).
INLINE void q6_words(const uint8_t *p, __m512i u[4]) {
  // bit offsets of each byte within its qword (row 2i's word at 0, row 2i + 1's at 32)
  const __m512i at_ab = _mm512_set1_epi64(0x3A2C26201A0C0600),  /* 0, 6, 12, 26 */
                at_c = _mm512_set1_epi64(0x382C2620180C0600),   /* 0, 6, 12, 24 */
                hi_a = _mm512_set1_epi64(0x3832323218121212),   /* 12 at 18; 15's bits 0-1 at 24 */
                hi_b = _mm512_set1_epi64(0x3632323216121212),   /* 13 at 18; 15's bits 2-3 at 24, as bits 2-3 */
                hi_c = _mm512_set1_epi64(0x3A3232321A121212);   /* 14 at 18; 15's bits 4-5 at 30, as bits 4-5 */
  const __m512i six = _mm512_set1_epi8(0x3f), mb = _mm512_set1_epi32(0x0C003F00), ma = _mm512_set1_epi32(0x0300003F),
                mc = _mm512_set1_epi32(0x303F0000);
  const __m512i a = _mm512_loadu_si512((const void *)p), b = _mm512_loadu_si512((const void *)(p + 64)),
                c = _mm512_loadu_si512((const void *)(p + 128));
  u[0] = _mm512_and_si512(_mm512_multishift_epi64_epi8(at_ab, a), six);
  u[1] = _mm512_and_si512(_mm512_multishift_epi64_epi8(at_ab, b), six);
  u[2] = _mm512_and_si512(_mm512_multishift_epi64_epi8(at_c, c), six);
  const __m512i fb = _mm512_and_si512(_mm512_multishift_epi64_epi8(hi_b, b), mb);
  // (ma & A's) | (~ma & fb), then | (mc & C's)
  const __m512i fab = _mm512_ternarylogic_epi32(ma, _mm512_multishift_epi64_epi8(hi_a, a), fb, 0xCA);
  u[3] = _mm512_ternarylogic_epi32(fab, _mm512_multishift_epi64_epi8(hi_c, c), mc, 0xF8);
}

// q6_k's block b of groups g0 .. g0 + G - 1 against RP rows of x (xb: the
// block's record of row 0, row r at r * w): acc[g][r] = the 16 rows' sums of u x.
INLINE void dots6(size_t G, size_t RP, const float *xb, size_t w, const uint8_t *q, size_t g0, size_t nb, size_t b,
                  size_t run, V acc[G_MAX][RP_MAX]) {
  for (size_t g = 0; g < G; ++g) {
    __m512i u[4];
    q6_words(q + ((g0 + g) * nb + b) * run, u);
    for (size_t r = 0; r < RP; ++r) {
      const float *xw = xb + r * w;
      __m512i s[3];
      for (int k = 0; k < 3; ++k) {
        s[k] = _mm512_dpbusd_epi32(_mm512_setzero_si512(), u[0], dots_word(xw + 4 * k));
        for (int t = 1; t < 4; ++t) s[k] = _mm512_dpbusd_epi32(s[k], u[t], dots_word(xw + 4 * k + t));
      }
      acc[g][r] = combine3(s[0], s[1], s[2], xw[DOTS6_S]);
    }
  }
}

// The 8-bit formats (q8_0, and q5_0, q5_1, q5_k kept as int8): x is split per
// block of 32 values as for the 4-bit ones, its record part p's values in
// order (word 8p + c: values 4c .. 4c + 3), word 24 s, words 25-27 -128 times
// each part's sum. vpdpbusd takes unsigned bytes, so a value q is read as
// q ^ 0x80 = q + 128 and each part's sums start from -128 times the part's
// sum: sum (q + 128) p - 128 sum p = sum q p, exact in int32. One vpermb
// turns four runs (values 4c .. 4c + 3 of the 16 rows) into each row's word.
#define DOTS8_S 24
#define DOTS8_OFF 25

static void il_split_x8(const float *x, size_t R, size_t K, size_t b0, size_t b1, float *xp) {
  const size_t w = (b1 - b0) * 32;
  for (size_t r = 0; r < R; ++r)
    for (size_t b = b0; b < b1; ++b) {
      float *rec = xp + r * w + (b - b0) * 32;
      __m128i parts[2][3];
      rec[DOTS8_S] = split_block32(x + r * K + b * 32, parts);
      for (int k = 0; k < 3; ++k) {
        _mm_storeu_si128((__m128i *)(rec + 8 * k), parts[0][k]);
        _mm_storeu_si128((__m128i *)(rec + 8 * k + 4), parts[1][k]);
        const int32_t off = -128 * _mm512_reduce_add_epi32(_mm512_add_epi32(_mm512_cvtepi8_epi32(parts[0][k]),
                                                                              _mm512_cvtepi8_epi32(parts[1][k])));
        __builtin_memcpy(rec + DOTS8_OFF + k, &off, 4);
      }
    }
}

// The 8-bit block b of groups g0 .. g0 + G - 1 against RP rows of x (xb: the
// block's record of row 0, row r at r * w): acc[g][r] = the 16 rows' sums of q x.
INLINE void dots8(size_t G, size_t RP, const float *xb, size_t w, const uint8_t *q, size_t g0, size_t nb, size_t b,
                  size_t run, V acc[G_MAX][RP_MAX]) {
  const __m512i flip = _mm512_set1_epi8((char)0x80), rows = runs_to_rows();
  __m512i s[3][G_MAX][RP_MAX];
  for (size_t g = 0; g < G; ++g)
    for (size_t r = 0; r < RP; ++r)
      for (int k = 0; k < 3; ++k) s[k][g][r] = dots_word(xb + r * w + DOTS8_OFF + k);
  for (size_t c = 0; c < 8; ++c)
    for (size_t g = 0; g < G; ++g) {
      const __m512i raw = _mm512_loadu_si512((const void *)(q + ((g0 + g) * nb + b) * run + c * 64));
      const __m512i v = _mm512_permutexvar_epi8(rows, _mm512_xor_si512(raw, flip));
      for (size_t r = 0; r < RP; ++r)
        for (int k = 0; k < 3; ++k) s[k][g][r] = _mm512_dpbusd_epi32(s[k][g][r], v, dots_word(xb + r * w + 8 * k + c));
    }
  for (size_t g = 0; g < G; ++g)
    for (size_t r = 0; r < RP; ++r) acc[g][r] = combine3(s[0][g][r], s[1][g][r], s[2][g][r], xb[r * w + DOTS8_S]);
}
