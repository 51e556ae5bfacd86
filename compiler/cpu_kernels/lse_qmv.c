// LSE's decode matvecs over block-format weights, f32 activations (x86-64-v3:
// AVX2, FMA, F16C; v4 where the CPU has AVX-512). Called from IREE dispatches
// (see cpu_kernel_build.py):
//   y[r, n] = sum_k x[r, k] * w[n, k],   w[n, Bb + l] = d[n, b] * q[n, b, l] (+ m[n, b])
// over every block format (lse_blocks.h) in lse-compile's layout of 16 rows
// interleaved (compiler/kernel_layout.py): per group of IL = 16 weight rows
// and block b, a run of 16 bytes for each byte of a row's block (4-bit: 16
// runs, values 2j and 2j + 1, low nibble first; 8-bit: B runs, value l),
// holding that byte of the 16 rows (q6_k: 3 runs of 64 bytes, one for each
// 32-bit word of a row's block, below); then the group's 16 d (and m) of block
// b side by side; rows past N zero. d (and m) f16 per block of B = 32
// values (16 for q6_k); the K-quants' int8 sub-block and f16 super-block
// scales, multiplied out per block in registers (lse_blocks.h). One vector holds one value of 16
// rows and x's value is a broadcast: each row's block sum is scaled by d
// once, its offset term m (q4_0: -8 d) comes through x's block sums, and the
// 16 rows' results leave as one vector: no sum across lanes, no per-row tail,
// and several rows of x share each unpacked value. On FMAs x is never
// quantised: every product is an f32 product of a weight's integer and an
// activation, so results equal numpy on the dequantised weights up to
// summation order. Where the CPU has VNNI and VBMI every format takes
// integer dot products instead, x split per block into three 7-bit parts
// (lse_qmv_dots.h), whose error is below f32's own summation's.
// Bare-metal: no libc, no globals; one call per workgroup, which computes the
// rows n in [wg * tile, min(N, (wg + 1) * tile)) for all R rows of x (whole
// groups; only its own rows are stored).
//
// The 4-bit unpack avoids int->float conversions (they share the FMA pipes):
// a byte widened to its own 32-bit lane and masked to one nibble is, read as
// an f32, the denormal q * 2^-149 (low nibble) or 16 q * 2^-149 (high
// nibble), exactly. The activations are scaled by a power of two 2^S chosen
// from their largest magnitude (the odd ones by 2^S / 16), the sums by
// 2^(149 - S): power-of-two scalings are exact, so each product rounds as
// q * x would. On x86-64-v3 the high nibble is not masked out: the whole
// byte (lo + 16 hi) stands for it and x's even values carry x_e - x_o / 16,
// rounded once, so the low nibble's extra share cancels (v_nibbles; half the
// unpack ops). Products and sums stay normal floats; only the weights' lanes
// are denormal, so the kernel clears MXCSR's denormals-are-zero bit (IREE's
// workers set it) for its duration and restores it. 8-bit values are
// converted exactly and take x as it is. (The layout's figures against
// row-major kernels: docs/kernels.md.)
#include <immintrin.h>
#include <stddef.h>
#include <stdint.h>

#include "lse_blocks.h"

#define MAX_R 8
#define INLINE static inline __attribute__((always_inline))
// x's block sums (formats with an offset term): rows of x * blocks a row <= XS_FLOATS,
// so a call takes fewer rows of x at once past 256 blocks a row (matvec_rows);
// K / B <= XS_FLOATS (the emitter checks: cpu_kernels.MAX_BLOCKS).
#define XS_FLOATS 2048
#define DAZ 0x40u
// A lane's integer bits as the value it stands for: the denormal I * 2^-149
// (a reinterpretation, no conversion), or, built with LSE_CONVERT_LANES for a
// CPU whose FMAs take a microcode assist on a denormal operand (most Intel
// cores: cpu_kernel_build.slow_denormals measures it), I itself, converted.
// The two give the same sums: the denormal path scales x by 2^S and the sums
// back by 2^(149 - S) (il_scale_x), powers of two that round nothing, where
// the converted path scales neither.
// Every format on integer dot products where the build asks for them
// (LSE_INT_DOTS: AVX-512 with VNNI and VBMI; lse_qmv_dots.h), else on FMAs.
#ifdef LSE_INT_DOTS
#define INT4(f) ((f)->bits == 4)
#define INT6(f) ((f)->bits == 6)
#define INT8(f) ((f)->bits == 8)
#else
#define INT4(f) 0
#define INT6(f) 0
#define INT8(f) 0
#endif
#define INTS(f) (INT4(f) || INT6(f) || INT8(f))
#ifdef LSE_CONVERT_LANES
#define LANE512(i) _mm512_cvtepi32_ps(i)
#define LANE256(i) _mm256_cvtepi32_ps(i)
#define SCALED(f) 0
#else
#define LANE512(i) _mm512_castsi512_ps(i)
#define LANE256(i) _mm256_castsi256_ps(i)
#define SCALED(f) ((f)->bits != 8 && !INT4(f) && !INT6(f)) /* 4- and 6-bit lanes are denormals: x scaled by 2^S */
#endif
#define IL 16
// How far ahead il_tile prefetches each group's run and scales: about
// IL_AHEAD_BYTES of the run, at least 2 blocks (docs/kernels.md, "Figures").
#define IL_AHEAD_BYTES 2048
#define XP_FLOATS 8192 /* 4-bit: x's rows over one stretch of blocks, scaled: 32 KiB */

static inline float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}
static inline float pow2(int e) {  // 2^e for -126 <= e <= 127
  union { uint32_t u; float f; } v = {(uint32_t)(e + 127) << 23};
  return v.f;
}
static inline int exponent_of(float a) {  // e with 2^(e-1) <= a < 2^e for normal a > 0
  union { float f; uint32_t u; } v = {a};
  return (int)((v.u >> 23) & 0xff) - 126;
}

// The scale S for rows of x: their largest magnitude lands below 2^100, far
// from f32's overflow, and the smallest products that matter stay normal.
static int x_scale(const float *x, size_t n) {
  __m256 mx = _mm256_setzero_ps();
  const __m256 abs = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
  for (size_t i = 0; i + 8 <= n; i += 8) mx = _mm256_max_ps(mx, _mm256_and_ps(abs, _mm256_loadu_ps(x + i)));
  __m128 s = _mm_max_ps(_mm256_castps256_ps128(mx), _mm256_extractf128_ps(mx, 1));
  s = _mm_max_ps(s, _mm_movehl_ps(s, s));
  s = _mm_max_ss(s, _mm_movehdup_ps(s));
  int e = exponent_of(_mm_cvtss_f32(s)), sc = 100 - (e > 60 ? 60 : e);
  return sc > 126 ? 126 : sc;
}

// q6_k's values (kernel_layout.pack_q6): per row's block of 16, three 32-bit
// words A, B, C of u = q + 32, interleaved over the group's 16 rows as one
// 64-byte run each (row i's word in lane i). Their fields, value: bits:
//   A: 0: 0-5, 1: 6-11, 2: 12-17, 12: 18-23, 15's bits 0-1: 24-25, 3: 26-31
//   B: 4: 0-5, 5: 6-11, 6: 12-17, 13: 18-23, 15's bits 2-3: 24-25, 7: 26-31
//   C: 8: 0-5, 9: 6-11, 10: 12-17, 14: 18-23, 11: 24-29, 15's bits 4-5: 30-31
// A value's lane is its field alone at bit Q6_POS (0, 6 or 12; all of it
// below bit 23, so the lane is the denormal u * 2^(pos - 149)), and its x
// carries 2^-pos (il_stretch_x): the product is u * x * 2^(S - 149), as
// for the 4-bit formats. A field at 0, 6 or 12 is one and; one at the top
// one shift; 11-14 a shift and an and; 15 three shifts and two selects:
// 24 integer ops a 16-row block of 16 values, and the loads need no widening.
#define Q6_POS(v) ((0x2aa42424u >> (2 * (v)) & 3) * 6) /* value v's position / 6 in bits 2v, 2v + 1 */

// ---- vectors of 16 lanes: one zmm (AVX-512), or two ymm halves (v3) --------------
#ifdef __AVX512F__
#define G_MAX 4  /* groups at once, so one row of x keeps 4 FMA chains in flight */
#define RP_MAX 8 /* rows of x at once: 8 sums and 8 results in registers */
typedef __m512 V;
INLINE V v_zero(void) { return _mm512_setzero_ps(); }
INLINE V v_fma(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
INLINE V v_fma1(V a, float s, V c) { return _mm512_fmadd_ps(a, _mm512_set1_ps(s), c); }
INLINE V v_mul1(V a, float s) { return _mm512_mul_ps(a, _mm512_set1_ps(s)); }
// 16 bytes (one run) as two vectors of denormals: low nibbles, high nibbles times 16
INLINE void v_nibbles(const uint8_t *p, __m128i flip, V *lo, V *hi) {
  const __m512i v = _mm512_cvtepu8_epi32(_mm_xor_si128(_mm_loadu_si128((const __m128i *)p), flip));
  *lo = LANE512(_mm512_and_si512(v, _mm512_set1_epi32(0x0f)));
  *hi = LANE512(_mm512_and_si512(v, _mm512_set1_epi32(0xf0)));
}
// 16 int8 values (one run) as floats, exactly
INLINE V v_int8(const uint8_t *p) {
  return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)p)));
}
// q6_k: values 4t .. 4t + 3 of a group's block p (words A, B, C above), each
// lane the denormal u * 2^(Q6_POS - 149)
INLINE void v_q6(const uint8_t *p, size_t t, V *u) {
  const __m512i f0 = _mm512_set1_epi32(0x3f), f6 = _mm512_set1_epi32(0x3f << 6), f12 = _mm512_set1_epi32(0x3f << 12);
#define AND(a, m) LANE512(_mm512_and_si512(a, m))
  if (t < 3) {  /* values 4t .. 4t + 2 at 0, 6, 12 of word t; 4t + 3 at its top (C: 11 at 24-29) */
    const __m512i w = _mm512_loadu_si512((const void *)(p + 64 * t));
    u[0] = AND(w, f0);
    u[1] = AND(w, f6);
    u[2] = AND(w, f12);
    u[3] = t < 2 ? LANE512(_mm512_srli_epi32(w, 26)) : AND(_mm512_srli_epi32(w, 12), f12);
  } else {  /* 12-14 at 18-23 of A, B, C; 15 from the three words' top pairs */
    const __m512i a = _mm512_loadu_si512((const void *)p), b = _mm512_loadu_si512((const void *)(p + 64)),
                  c = _mm512_loadu_si512((const void *)(p + 128));
    u[0] = AND(_mm512_srli_epi32(a, 6), f12);
    u[1] = AND(_mm512_srli_epi32(b, 6), f12);
    u[2] = AND(_mm512_srli_epi32(c, 6), f12);
    /* bits 0-1 from A's 24-25, 2-3 from B's 24-25, then C >> 26: 4-5 its 30-31, zero above */
    const __m512i ab = _mm512_ternarylogic_epi32(_mm512_srli_epi32(a, 24), _mm512_srli_epi32(b, 22),
                                                 _mm512_set1_epi32(3), 0xe4); /* 3 ? a : b, bitwise */
    u[3] = LANE512(_mm512_ternarylogic_epi32(ab, _mm512_srli_epi32(c, 26), _mm512_set1_epi32(15), 0xe4));
  }
#undef AND
}
INLINE V v_scales(const void *p, size_t i) {  // 16 f16 scales
  return _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)((const uint16_t *)p + i)));
}
INLINE V v_join(__m256 a, __m256 b) { return _mm512_insertf32x8(_mm512_castps256_ps512(a), b, 1); }
// lanes [i0, i1) of v into y (y[i] for lane i), added to what y holds where `add`
INLINE void v_store(float *y, V v, size_t i0, size_t i1, int add) {
  const __mmask16 k = (__mmask16)(((1u << i1) - 1) & ~((1u << i0) - 1));
  if (add) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(k, y));
  _mm512_mask_storeu_ps(y, k, v);
}
#else
// 16 registers: 4 rows of x at once (8 sums, each taking 2 FMAs a value:
// their latency and the pipes' throughput meet), or 4 groups of one row; the
// block results stay in memory, touched once a block: faster than 2 rows
// with sums and results in registers (docs/kernels.md).
#define G_MAX 4
#define RP_MAX 4
#define YQ_IN_MEMORY 1
typedef struct { __m256 a, b; } V;
INLINE V v_zero(void) { return (V){_mm256_setzero_ps(), _mm256_setzero_ps()}; }
INLINE V v_fma(V a, V b, V c) { return (V){_mm256_fmadd_ps(a.a, b.a, c.a), _mm256_fmadd_ps(a.b, b.b, c.b)}; }
INLINE V v_fma1(V a, float s, V c) {
  const __m256 b = _mm256_set1_ps(s);
  return (V){_mm256_fmadd_ps(a.a, b, c.a), _mm256_fmadd_ps(a.b, b, c.b)};
}
INLINE V v_mul1(V a, float s) { const __m256 b = _mm256_set1_ps(s); return (V){_mm256_mul_ps(a.a, b), _mm256_mul_ps(a.b, b)}; }
// 16 bytes (one run) as the low nibbles and the whole bytes (lo + 16 hi): the
// byte stands for the high nibble, x's even values carrying x_e - x_o / 16
// (il_stretch_x), so a run costs two widenings and two ands, not eight ops.
#define BYTE_HI 1
INLINE void v_nibbles(const uint8_t *p, __m128i flip, V *lo, V *hi) {
  __m256i v0, v1;
  if (_mm_cvtsi128_si32(flip) == 0) {  /* a constant per format: the branch folds away */
    v0 = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)p));
    v1 = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(p + 8)));
  } else {
    const __m128i u = _mm_xor_si128(_mm_loadu_si128((const __m128i *)p), flip);
    v0 = _mm256_cvtepu8_epi32(u);
    v1 = _mm256_cvtepu8_epi32(_mm_srli_si128(u, 8));
  }
  const __m256i l = _mm256_set1_epi32(0x0f);
  *lo = (V){LANE256(_mm256_and_si256(v0, l)), LANE256(_mm256_and_si256(v1, l))};
  *hi = (V){LANE256(v0), LANE256(v1)};
}
// each half widened from memory: no shift between them
INLINE V v_int8(const uint8_t *p) {
  return (V){_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)p))),
             _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)(p + 8))))};
}
// q6_k: values 4t .. 4t + 3 of 8 rows (v4's v_q6 on 32 bytes of each run)
INLINE void v_q6_half(const uint8_t *p, size_t t, __m256 *u) {
  const __m256i f0 = _mm256_set1_epi32(0x3f), f6 = _mm256_set1_epi32(0x3f << 6), f12 = _mm256_set1_epi32(0x3f << 12);
#define AND(a, m) LANE256(_mm256_and_si256(a, m))
  if (t < 3) {
    const __m256i w = _mm256_loadu_si256((const __m256i *)(p + 64 * t));
    u[0] = AND(w, f0);
    u[1] = AND(w, f6);
    u[2] = AND(w, f12);
    u[3] = t < 2 ? LANE256(_mm256_srli_epi32(w, 26)) : AND(_mm256_srli_epi32(w, 12), f12);
  } else {
    const __m256i a = _mm256_loadu_si256((const __m256i *)p), b = _mm256_loadu_si256((const __m256i *)(p + 64)),
                  c = _mm256_loadu_si256((const __m256i *)(p + 128));
    u[0] = AND(_mm256_srli_epi32(a, 6), f12);
    u[1] = AND(_mm256_srli_epi32(b, 6), f12);
    u[2] = AND(_mm256_srli_epi32(c, 6), f12);
    const __m256i lo = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi32(a, 24), _mm256_set1_epi32(3)),
                                       _mm256_and_si256(_mm256_srli_epi32(b, 22), _mm256_set1_epi32(12)));
    u[3] = LANE256(_mm256_or_si256(lo, _mm256_andnot_si256(_mm256_set1_epi32(15), _mm256_srli_epi32(c, 26))));
  }
#undef AND
}
INLINE void v_q6(const uint8_t *p, size_t t, V *u) {
  __m256 a[4], b[4];
  v_q6_half(p, t, a);
  v_q6_half(p + 32, t, b);
  for (int i = 0; i < 4; ++i) u[i] = (V){a[i], b[i]};
}
INLINE V v_join(__m256 a, __m256 b) { return (V){a, b}; }
INLINE V v_scales(const void *p, size_t i) {  // 16 f16 scales
  const uint16_t *h = (const uint16_t *)p + i;
  return (V){_mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)h)), _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(h + 8)))};
}
INLINE void v_store(float *y, V v, size_t i0, size_t i1, int add) {
  float t[IL] __attribute__((aligned(32)));
  _mm256_store_ps(t, v.a);
  _mm256_store_ps(t + 8, v.b);
  for (size_t i = i0; i < i1; ++i) y[i] = add ? y[i] + t[i] : t[i];
}
#endif

// Formats whose sums take an offset term through x's block sums (q4_0's -8,
// q6_k's -32, m).
#define OFFS(f) ((f)->has_m || (f)->sign4 || (f)->bits == 6)
/* x goes through xp: split into integer parts (lse_qmv_dots.h), or its values scaled per position (il_stretch_x) */
#define IN_XP(f) ((f)->bits != 8 || INT8(f))

// Block b of group g's 16 scales D and offsets M (q4_0: -8 d; q6_k: none, its
// -32 is in x's block sums): f16 ones as stored, a K-quant's formed from its
// native-width parts.
INLINE void v_block_scales(const Fmt *f, const void *d, const void *m, size_t g, size_t nb, size_t b, V *D, V *M) {
#ifdef __AVX512F__
  if (f->ks == 1) {  /* q6_k: lse_k_scales' products as one 16-lane multiply */
    const size_t per = 256 / f->B;
    const __m128i sub = _mm_loadu_si128((const __m128i *)((const int8_t *)d + (g * nb + b) * 16));
    const __m256i sup = _mm256_loadu_si256((const __m256i *)((const uint16_t *)m + (g * (nb / per) + b / per) * 16));
    *D = _mm512_mul_ps(_mm512_cvtph_ps(sup), _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(sub)));
    *M = *D;
    return;
  }
#endif
  if (f->ks) {
    __m256 d0, d1, m0 = _mm256_setzero_ps(), m1 = m0;
    lse_k_scales(f, d, m, g, nb, b, &d0, &d1, &m0, &m1);
    *D = v_join(d0, d1);
    *M = v_join(m0, m1);
    return;
  }
  const size_t si = (g * nb + b) * IL;
  *D = v_scales(d, si);
  *M = f->has_m ? v_scales(m, si) : v_zero();
}
// The factor of x's block sums: m, q4_0's -8 d; q6_k's d (its sums carry the -32).
INLINE V v_offset(const Fmt *f, V D, V M) { return f->has_m ? M : f->bits == 6 ? D : v_mul1(D, -8.f); }

// x for one call: each row's power of two 2^S (pre; 4-bit only, else 1),
// its block sums (B values each) times 2^(S - 149) (so its offset terms land
// in the scaled sums exactly; 8-bit: as they are; q6_k: times -32 too, so
// d * xs is the product (-32 d) * xs was) and post = 2^(149 - S),
// which takes the sums back.
typedef struct {
  float xs[XS_FLOATS], post[MAX_R], pre[MAX_R];
} XScale;

static void il_scale_x(const Fmt *f, const float *x, size_t R, size_t K, XScale *s) {
  const size_t nb = K / f->B;
  for (size_t r = 0; r < R; ++r) {
    const int e = SCALED(f) ? x_scale(x + r * K, K) : 0;
    s->pre[r] = SCALED(f) ? pow2(e) : 1.f;
    s->post[r] = SCALED(f) ? pow2(149 - e) : 1.f;
    const float back = SCALED(f) ? pow2(e - 149) : 1.f;
    if (!OFFS(f)) continue;  // no offset terms
    for (size_t b = 0; b < nb; ++b) {
      const float *p = x + r * K + b * f->B;
      __m256 t = _mm256_add_ps(_mm256_loadu_ps(p), _mm256_loadu_ps(p + 8));
      if (f->B == 32) t = _mm256_add_ps(t, _mm256_add_ps(_mm256_loadu_ps(p + 16), _mm256_loadu_ps(p + 24)));
      s->xs[r * nb + b] = (f->bits == 6 ? -32.f : 1.f) * (back * hsum(t));  // q6_k: -32 x's sum, exactly
    }
  }
}

// Denormal lanes: blocks [b0, b1) of x's rows into xp (row r at r * (b1 -
// b0) * B): times 2^S; 4-bit: the odd values times 2^S / 16 (the high
// nibble's lane carries 16 q); q6_k's value v times 2^S / 2^Q6_POS(v).
static void il_stretch_x(const Fmt *f, const float *x, size_t R, size_t K, size_t b0, size_t b1, const XScale *s,
                         float *xp) {
  const size_t w = (b1 - b0) * f->B;
  for (size_t r = 0; r < R; ++r) {
    const __m256 e = _mm256_set1_ps(s->pre[r]), o = _mm256_set1_ps(s->pre[r] * (f->bits == 4 ? 0.0625f : 1.f));
    __m256 sc[2] = {_mm256_blend_ps(e, o, 0xaa), _mm256_blend_ps(e, o, 0xaa)};
    if (f->bits == 6) {  // value v's lane is u * 2^Q6_POS(v): its x times 2^-Q6_POS(v)
      float p6[16] __attribute__((aligned(32)));
      for (int v = 0; v < 16; ++v) p6[v] = s->pre[r] * (Q6_POS(v) == 0 ? 1.f : Q6_POS(v) == 6 ? 0x1p-6f : 0x1p-12f);
      sc[0] = _mm256_load_ps(p6);
      sc[1] = _mm256_load_ps(p6 + 8);
    }
    for (size_t i = 0; i < w; i += 8) {
      __m256 t = _mm256_mul_ps(sc[(i / 8) & 1], _mm256_loadu_ps(x + r * K + b0 * f->B + i));
#ifdef BYTE_HI
      if (f->bits == 4) t = _mm256_sub_ps(t, _mm256_blend_ps(_mm256_movehdup_ps(t), _mm256_setzero_ps(), 0xaa));
#endif
      _mm256_storeu_ps(xp + r * w + i, t);
    }
  }
}

#ifdef LSE_INT_DOTS
#include "lse_qmv_dots.h"
#endif

// Groups g0 .. g0 + G - 1 (all 16 rows each) against RP rows of x over
// blocks [b0, b1): y[r, n] for n in [lo, hi) (the workgroup's rows) gets the
// sums, added to what it holds where `add` (a later stretch).
INLINE void il_tile(size_t G, size_t RP, const Fmt *f, const float *xp, size_t w, const XScale *s, size_t r0,
                     const uint8_t *q, const void *d, const void *m, size_t nb, size_t g0, size_t b0, size_t b1,
                     float *y, size_t N, size_t lo, size_t hi, int add) {
  const __m128i flip = _mm_set1_epi8(f->sign4 ? (char)0x88 : 0);
  const int offs = OFFS(f);
  V acc[G_MAX][RP_MAX];
#ifdef YQ_IN_MEMORY
  V yq[G_MAX][RP_MAX] __attribute__((aligned(32)));
  V *volatile yqp = &yq[0][0];  /* kept in memory: 16 ymm hold the sums alone */
#define YQ(g, r) yqp[(g) * RP_MAX + (r)]
#else
  V yq[G_MAX][RP_MAX];
#define YQ(g, r) yq[g][r]
#endif
  for (size_t g = 0; g < G; ++g)
    for (size_t r = 0; r < RP; ++r) YQ(g, r) = v_zero();
  for (size_t b = b0; b < b1; ++b) {
    for (size_t g = 0; g < G; ++g)
      for (size_t r = 0; r < RP; ++r) acc[g][r] = v_zero();
    const float *xb = xp + (b - b0) * f->B;
    const size_t run = IL * f->B * f->bits / 8;  // a group's bytes a block
    const size_t blocks_ahead = 2 * run >= IL_AHEAD_BYTES ? 2 : IL_AHEAD_BYTES / run;
    for (size_t g = 0; g < G; ++g) {  // each group's run some blocks ahead toward L1
      const size_t ahead = (g0 + g) * nb + b + blocks_ahead;
      const char *pq = (const char *)q + ahead * run;
      for (size_t i = 0; i < run; i += 64) _mm_prefetch(pq + i, _MM_HINT_T0);
      _mm_prefetch((const char *)d + ahead * (f->ks ? 16 * f->ks : IL * 2), _MM_HINT_T0);
      if (f->ks) _mm_prefetch((const char *)m + ahead / (256 / f->B) * 32 * f->ks, _MM_HINT_T0);
      else if (f->has_m) _mm_prefetch((const char *)m + ahead * IL * 2, _MM_HINT_T0);
    }
    if (INT4(f)) {
#ifdef LSE_INT_DOTS
      dots4(G, RP, f, xb, w, q, g0, nb, b, run, acc);
#endif
    } else if (INT6(f)) {
#ifdef LSE_INT_DOTS
      dots6(G, RP, xb, w, q, g0, nb, b, run, acc);
#endif
    } else if (INT8(f)) {
#ifdef LSE_INT_DOTS
      dots8(G, RP, xb, w, q, g0, nb, b, run, acc);
#endif
    } else if (f->bits == 4) {
      for (size_t j = 0; j < 16; ++j) {
        for (size_t g = 0; g < G; ++g) {
          V a, c;
          v_nibbles(q + ((g0 + g) * nb + b) * run + j * IL, flip, &a, &c);
          for (size_t r = 0; r < RP; ++r) {
            acc[g][r] = v_fma1(a, xb[r * w + 2 * j], acc[g][r]);
            acc[g][r] = v_fma1(c, xb[r * w + 2 * j + 1], acc[g][r]);
          }
        }
      }
    } else if (f->bits == 6) {  // three runs of 16 rows' 32-bit words; values in order 0..15
      for (size_t t = 0; t < 4; ++t) {
        for (size_t g = 0; g < G; ++g) {
          V u[4];
          v_q6(q + ((g0 + g) * nb + b) * run, t, u);
          for (size_t r = 0; r < RP; ++r)
            for (size_t i = 0; i < 4; ++i) acc[g][r] = v_fma1(u[i], xb[r * w + 4 * t + i], acc[g][r]);
        }
      }
    } else {
      for (size_t l = 0; l < f->B; ++l) {
        for (size_t g = 0; g < G; ++g) {
          const V a = v_int8(q + ((g0 + g) * nb + b) * run + l * IL);
          for (size_t r = 0; r < RP; ++r) acc[g][r] = v_fma1(a, xb[r * w + l], acc[g][r]);
        }
      }
    }
    for (size_t g = 0; g < G; ++g) {
      V D, M;
      v_block_scales(f, d, m, g0 + g, nb, b, &D, &M);
      M = v_offset(f, D, M);
      for (size_t r = 0; r < RP; ++r) {
        YQ(g, r) = v_fma(D, acc[g][r], YQ(g, r));
        if (offs) YQ(g, r) = v_fma1(M, s->xs[(r0 + r) * nb + b], YQ(g, r));
      }
    }
  }
  for (size_t g = 0; g < G; ++g) {
    const size_t n = (g0 + g) * IL, i0 = lo > n ? lo - n : 0, i1 = hi - n < IL ? hi - n : IL;
    for (size_t r = 0; r < RP; ++r) v_store(y + (r0 + r) * N + n, v_mul1(YQ(g, r), s->post[r0 + r]), i0, i1, add);
  }
#undef YQ
}

// Rows [n0, n1) for R <= MAX_R rows of x: one row takes G_MAX groups at once
// on FMAs (chains enough to fill the pipes) and one on integer dot products
// (three sums a group are chains enough, and a thread's one weight stream
// reads DRAM faster than four: docs/kernels.md), two rows 2 (AVX-512), more
// rows one group at a time, RP_MAX rows of x at once; 4-bit x in stretches
// of blocks that fit xp. G and RP are constants in each instance, so the
// sums stay in registers (at 3 and 4 rows, two groups at once are slower
// than one).
INLINE void il_rows(const Fmt *f, const float *x, const uint8_t *q, const void *d, const void *m, float *y, size_t R,
                    size_t N, size_t K, size_t n0, size_t n1) {
  const int four = IN_XP(f);  // on FMAs 8-bit values are converted, so x goes in as it is
  const unsigned csr = _mm_getcsr();
  if (SCALED(f) && (csr & DAZ)) _mm_setcsr(csr & ~DAZ);
  XScale s;
  float xp[XP_FLOATS] __attribute__((aligned(32)));
  const size_t nb = K / f->B, sb = four && XP_FLOATS / (f->B * R) < nb ? XP_FLOATS / (f->B * R) : nb;
  const size_t ga = n0 / IL, gz = (n1 + IL - 1) / IL;
  const size_t G = R == 1 ? (INTS(f) ? 1 : G_MAX) : R == 2 && RP_MAX > 4 ? 2 : 1;
  il_scale_x(f, x, R, K, &s);
  for (size_t b0 = 0; b0 < nb; b0 += sb) {
    const size_t b1 = b0 + sb < nb ? b0 + sb : nb, w = four ? (b1 - b0) * f->B : K;
    if (INT4(f)) il_split_x(x, R, K, b0, b1, xp);
    else if (INT6(f)) il_split_x16(x, R, K, b0, b1, xp);
    else if (INT8(f)) il_split_x8(x, R, K, b0, b1, xp);
    else if (four) il_stretch_x(f, x, R, K, b0, b1, &s, xp);
    const float *xin = four ? xp : x;
    for (size_t g = ga; g < gz;) {
      const size_t gn = gz - g >= G ? G : 1;
      for (size_t r0 = 0; r0 < R; r0 += RP_MAX) {
        const size_t rp = R - r0 < RP_MAX ? R - r0 : RP_MAX;
#define TILE(GN, RPN) il_tile(GN, RPN, f, xin + r0 * w, w, &s, r0, q, d, m, nb, g, b0, b1, y, N, n0, n1, b0 > 0)
        if (gn == G_MAX && rp == 1) TILE(G_MAX, 1);
        else if (gn == 2 && rp == 2) TILE(2, 2);
        else switch (rp) {
          case 1: TILE(1, 1); break;
          case 2: TILE(1, 2); break;
          case 3: TILE(1, 3); break;
#if RP_MAX > 4
          case 4: TILE(1, 4); break;
          case 5: TILE(1, 5); break;
          case 6: TILE(1, 6); break;
          case 7: TILE(1, 7); break;
#endif
          default: TILE(1, RP_MAX); break;
        }
#undef TILE
      }
      g += gn;
    }
  }
  if (SCALED(f) && (csr & DAZ)) _mm_setcsr(csr);
}

// ---- one workgroup --------------------------------------------------------------
// Rows [n0, n1) of one N-row matrix, for all R rows of x (y is R x N), MAX_R rows
// of x at a time, or as many as their block sums fit XS_FLOATS.
INLINE void matvec_rows(const Fmt *f, const float *x, const uint8_t *q, const void *d, const void *m, float *y,
                        size_t R, size_t N, size_t K, size_t n0, size_t n1) {
  const size_t fit = OFFS(f) ? XS_FLOATS / (K / f->B) : MAX_R, step = fit < MAX_R ? fit : MAX_R;
  for (size_t r0 = 0; r0 < R; r0 += step)
    il_rows(f, x + r0 * K, q, d, m, y + r0 * N, R - r0 < step ? R - r0 : step, N, K, n0, n1);
}

// ---- the exports -----------------------------------------------------------------
// Per format: rows_<stem> (its Fmt a constant, compiled once) serves
// lse_<stem>_matvec, one matrix (lse_blocks.h's arguments), and
// lse_<stem>_matvec2 / _matvec3, two or three matrices over the same x in one
// dispatch (a layer's gate and up; its q, k and v): their rows in sequence,
// each workgroup `tile` of them, so a workgroup's run of rows may go on from
// one matrix into the next. A decode
// step then has 120 matvec dispatches rather than 210; on 2 cores each is a
// barrier, and each thread's weight stream restarts per matrix.
typedef struct {
  const uint8_t *q;
  const void *d, *m;
  float *y;
  size_t N;
} Part;

typedef void RowsFn(const float *x, const uint8_t *q, const void *d, const void *m, float *y, size_t R, size_t N,
                    size_t K, size_t n0, size_t n1);

static void parts_rows(RowsFn *rows, const float *x, const Part *p, size_t np, size_t R, size_t K, size_t tile,
                       size_t wg) {
  const size_t a = wg * tile, b = a + tile;
  size_t base = 0;
  for (size_t i = 0; i < np; base += p[i].N, ++i) {
    if (b <= base || a >= base + p[i].N) continue;
    const size_t lo = a > base ? a - base : 0, hi = b - base < p[i].N ? b - base : p[i].N;
    rows(x, p[i].q, p[i].d, p[i].m, p[i].y, R, p[i].N, K, lo, hi);
  }
}

#define ROWS_FN(stem, kind, mode, ...)                                                                               \
  static __attribute__((noinline)) void rows_##stem(const float *x, const uint8_t *q, const void *d, const void *m, \
                                                     float *y, size_t R, size_t N, size_t K, size_t n0, size_t n1) { \
    static const Fmt f = {__VA_ARGS__};                                                                            \
    matvec_rows(&f, x, q, d, m, y, R, N, K, n0, n1);                                                               \
  }
#define SCALE_BYTES(...)                                                                                     \
  static const Fmt fm = {__VA_ARGS__};                                                                      \
  const size_t ed = LSE_D_BYTES(fm), em = LSE_M_BYTES(fm); /* bytes per d, per m */                      \
  (void)em;
#define QD_ARGS(i) const uint8_t *q##i, size_t q##i##_off, const void *d##i, size_t d##i##_off
#define PART_ARGS_M(i) QD_ARGS(i), const void *m##i, size_t m##i##_off
#define PART_ARGS_D(i) QD_ARGS(i)
#define PART_M(i)                                                                                                  \
  {q##i + q##i##_off, (const char *)d##i + d##i##_off * ed, (const char *)m##i + m##i##_off * em, y##i + y##i##_off, N##i}
#define PART_D(i) {q##i + q##i##_off, (const char *)d##i + d##i##_off * ed, 0, y##i + y##i##_off, N##i}
#define MATVEC_EXPORTS(stem, kind, mode, ...)                                                                       \
  void lse_##stem##_matvec(const float *x, size_t x_off, PART_ARGS_##mode(1), float *y1, size_t y1_off, size_t R,    \
                           size_t N1, size_t K, size_t tile, size_t wg) {                                          \
    SCALE_BYTES(__VA_ARGS__)                                                                                        \
    const Part p[1] = {PART_##mode(1)};                                                                             \
    parts_rows(rows_##stem, x + x_off, p, 1, R, K, tile, wg);                                                       \
  }                                                                                                                 \
  void lse_##stem##_matvec2(const float *x, size_t x_off, PART_ARGS_##mode(1), PART_ARGS_##mode(2), float *y1,       \
                            size_t y1_off, float *y2, size_t y2_off, size_t R, size_t N1, size_t N2, size_t K,       \
                            size_t tile, size_t wg) {                                                               \
    SCALE_BYTES(__VA_ARGS__)                                                                                        \
    const Part p[2] = {PART_##mode(1), PART_##mode(2)};                                                             \
    parts_rows(rows_##stem, x + x_off, p, 2, R, K, tile, wg);                                                       \
  }                                                                                                                 \
  void lse_##stem##_matvec3(const float *x, size_t x_off, PART_ARGS_##mode(1), PART_ARGS_##mode(2),                  \
                            PART_ARGS_##mode(3), float *y1, size_t y1_off, float *y2, size_t y2_off, float *y3,      \
                            size_t y3_off, size_t R, size_t N1, size_t N2, size_t N3, size_t K, size_t tile,         \
                            size_t wg) {                                                                            \
    SCALE_BYTES(__VA_ARGS__)                                                                                        \
    const Part p[3] = {PART_##mode(1), PART_##mode(2), PART_##mode(3)};                                             \
    parts_rows(rows_##stem, x + x_off, p, 3, R, K, tile, wg);                                                       \
  }
LSE_BLOCK_FORMATS(ROWS_FN, matvec)
LSE_BLOCK_FORMATS(MATVEC_EXPORTS, matvec)
