// LSE's decode matvecs over block-format weights, f32 activations (x86-64-v3:
// AVX2, FMA, F16C; v4 where the CPU has AVX-512). Called from IREE dispatches
// (see cpu_kernels.py):
//   y[r, n] = sum_k x[r, k] * w[n, k],   w[n, Bb + l] = d[n, b] * q[n, b, l] (+ m[n, b])
// 8-bit formats (one int8 a value, rows one after another, as lse-import
// writes them: tools/gguf_weights.py) and the 4-bit ones in lse-compile's
// layout of 16 rows interleaved (compiler/kernel_layout.py, described at the
// 4-bit kernel below); d (and m) f16, or f32 for the K-quants, per block of
// B = 32 values (16 for q6_k). Each format is an export with its Fmt a
// constant (at the end). x is never quantised: every product is an f32
// product of a weight's integer (or, for several rows of 8-bit x, of its
// dequantised value) and an activation, so results equal numpy on the
// dequantised weights up to summation order (offsets, and q4_0's -8, come in
// through x's block sums or the dequantised weights).
// Bare-metal: no libc, no globals; one call per workgroup, which computes the
// rows n in [wg * tile, min(N, (wg + 1) * tile)) for all R rows of x.
//
// Where the time goes (Zen 3, measured with tools/kernel_study-style loops):
// int->float conversions, variable shifts and FMAs share the two FMA pipes,
// so the 4-bit unpack avoids both conversions and shifts: a byte widened to
// its own 32-bit lane and masked to one nibble is, read as an f32, the
// denormal q * 2^-149 (low nibble) or 16 q * 2^-149 (high nibble), exactly.
// The activations are scaled by a power of two 2^S chosen from their largest
// magnitude (the odd ones by 2^S / 16), the sums by 2^(149 - S): power-of-two
// scalings are exact, so each product rounds as q * x would. Products and
// sums stay normal floats; only the weights' lanes are denormal, so the
// kernel clears MXCSR's denormals-are-zero bit (IREE's workers set it) for
// its duration and restores it.
// 8-bit values go to the top byte of their lane by a byte shuffle: the lane
// is q * 2^24 as an int32, converted exactly, and d carries 2^-24.
#include <immintrin.h>
#include <stddef.h>
#include <stdint.h>

#include "lse_blocks.h"

#define MAX_R 8
#ifdef __AVX512VL__
#define ACC2_ROWS MAX_R /* rows of x with two accumulators each in i8_rn */
#else
#define ACC2_ROWS 4
#endif
#define INLINE static inline __attribute__((always_inline))

// One instance of F per row count 1..MAX_R (R <= MAX_R): with R a constant,
// each row's accumulator stays in a register (with R a variable they went
// through memory, 14-23% slower at 2-8 rows).
#define BY_ROWS(F, R, ...)                                                               \
  switch (R) {                                                                           \
    case 1: F(1, __VA_ARGS__); break;                                                    \
    case 2: F(2, __VA_ARGS__); break;                                                    \
    case 3: F(3, __VA_ARGS__); break;                                                    \
    case 4: F(4, __VA_ARGS__); break;                                                    \
    case 5: F(5, __VA_ARGS__); break;                                                    \
    case 6: F(6, __VA_ARGS__); break;                                                    \
    case 7: F(7, __VA_ARGS__); break;                                                    \
    default: F(MAX_R, __VA_ARGS__); break;                                               \
  }
#define MAX_NB 128  /* K <= 4096: the emitter checks */
#define DAZ 0x40u

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
static inline uint32_t ld32(const uint8_t *p) { uint32_t v; __builtin_memcpy(&v, p, 4); return v; }
static inline int exponent_of(float a) {  // e with 2^(e-1) <= a < 2^e for normal a > 0
  union { float f; uint32_t u; } v = {a};
  return (int)((v.u >> 23) & 0xff) - 126;
}

// sum over 32 values of a block: a[i] * x[i], four vectors of 8.
static inline __m256 dot32(const float *x, __m256 a0, __m256 a1, __m256 a2, __m256 a3) {
  __m256 t = _mm256_mul_ps(a0, _mm256_loadu_ps(x));
  __m256 u = _mm256_mul_ps(a1, _mm256_loadu_ps(x + 8));
  t = _mm256_fmadd_ps(a2, _mm256_loadu_ps(x + 16), t);
  u = _mm256_fmadd_ps(a3, _mm256_loadu_ps(x + 24), u);
  return _mm256_add_ps(t, u);
}

// acc + the 32 dequantised weights w0..w3 times one row's block of x (xb),
// one FMA chain: several rows' blocks, one accumulator a row.
INLINE __m256 block_fma(const float *xb, __m256 w0, __m256 w1, __m256 w2, __m256 w3, __m256 acc) {
  acc = _mm256_fmadd_ps(w0, _mm256_loadu_ps(xb), acc);
  acc = _mm256_fmadd_ps(w1, _mm256_loadu_ps(xb + 8), acc);
  acc = _mm256_fmadd_ps(w2, _mm256_loadu_ps(xb + 16), acc);
  return _mm256_fmadd_ps(w3, _mm256_loadu_ps(xb + 24), acc);
}

// The same into two accumulators (w0, w2 into acc; w1, w3 into acc2): two
// chains of 2 FMAs where there are registers for them (ACC2_ROWS).
INLINE void block_fma2(const float *xb, __m256 w0, __m256 w1, __m256 w2, __m256 w3, __m256 *acc, __m256 *acc2) {
  *acc = _mm256_fmadd_ps(w0, _mm256_loadu_ps(xb), *acc);
  *acc2 = _mm256_fmadd_ps(w1, _mm256_loadu_ps(xb + 8), *acc2);
  *acc = _mm256_fmadd_ps(w2, _mm256_loadu_ps(xb + 16), *acc);
  *acc2 = _mm256_fmadd_ps(w3, _mm256_loadu_ps(xb + 24), *acc2);
}

// One block's 32 values (a0..a3) against block b of every row of x (x points
// at row 0's block), scaled by the block's dv, into each row's accumulator.
INLINE void rows_fma(const float *x, size_t R, size_t K, __m256 a0, __m256 a1, __m256 a2, __m256 a3,
                            __m256 dvb, __m256 *acc) {
  for (size_t r = 0; r < R; ++r) {
    const float *xb = x + r * K;
    __m256 t = _mm256_mul_ps(a0, _mm256_loadu_ps(xb));
    t = _mm256_fmadd_ps(a1, _mm256_loadu_ps(xb + 8), t);
    t = _mm256_fmadd_ps(a2, _mm256_loadu_ps(xb + 16), t);
    t = _mm256_fmadd_ps(a3, _mm256_loadu_ps(xb + 24), t);
    acc[r] = _mm256_fmadd_ps(dvb, t, acc[r]);
  }
}

// ---- activations ----------------------------------------------------------------
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

// x's block sums, row r at xs + r * nbp (nbp: nb rounded up to 8), zero past nb.
static void block_sums(const float *x, size_t R, size_t K, float *xs) {
  const size_t nb = K / 32, nbp = (nb + 7) & ~(size_t)7;
  for (size_t r = 0; r < R; ++r) {
    for (size_t b = 0; b < nb; ++b) {
      const float *p = x + r * K + b * 32;
      xs[r * nbp + b] = hsum(_mm256_add_ps(_mm256_add_ps(_mm256_loadu_ps(p), _mm256_loadu_ps(p + 8)),
                                           _mm256_add_ps(_mm256_loadu_ps(p + 16), _mm256_loadu_ps(p + 24))));
    }
    for (size_t b = nb; b < nbp; ++b) xs[r * nbp + b] = 0.f;
  }
}

// n scales from element i0 of p (f16 or f32), times `scale`, into dv.
INLINE void row_scales(const Fmt *f, const void *p, size_t i0, size_t n, float scale, float *dv) {
  const __m256 sc = _mm256_set1_ps(scale);
  size_t b = 0;
  if (f->f32) {
    const float *s = (const float *)p + i0;
    for (; b + 8 <= n; b += 8) _mm256_store_ps(dv + b, _mm256_mul_ps(sc, _mm256_loadu_ps(s + b)));
    for (; b < n; ++b) dv[b] = scale * s[b];
    return;
  }
  const uint16_t *h = (const uint16_t *)p + i0;
  for (; b + 8 <= n; b += 8)
    _mm256_store_ps(dv + b, _mm256_mul_ps(sc, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(h + b)))));
  for (; b < n; ++b) dv[b] = scale * _cvtsh_ss(h[b]);
}

// Row n's weights (its q, d and m; the row-major 8-bit formats) toward L1,
// a few rows before they are read. In a token-shaped C loop, paired rounds: the Q8_0 lm_head 0.81-0.87
// of the time without at one row of x and 0.90 at eight, Q4_1 0.93 at eight
// and within noise at one (the hardware prefetchers keep up there).
#define AHEAD_1 4  /* rows ahead for one row of x */
#define AHEAD_N 2  /* for several (each row takes R times as long) */
INLINE void prefetch_row(const Fmt *f, const uint8_t *q, const void *d, const void *m, size_t n, size_t K,
                         size_t b0, size_t b1) {  // blocks b0 .. b1 - 1 of row n
  const size_t sb = f->f32 ? 4 : 2, per = 32 / f->B, nb = K / 32;
  const char *p = (const char *)(q + n * K), *end = p + b1 * 32;
  for (p += b0 * 32; p < end; p += 64) _mm_prefetch(p, _MM_HINT_T0);
  _mm_prefetch(end - 1, _MM_HINT_T0);
  for (int i = 0; i < 1 + f->has_m; ++i) {
    const char *s = (const char *)(i ? m : d) + (n * nb + b0) * per * sb;
    _mm_prefetch(s, _MM_HINT_T0);
    _mm_prefetch(s + (b1 - b0) * per * sb - 1, _MM_HINT_T0);
  }
}

// Past 4 rows, x's rows are taken in stretches of blocks [b0, b1) that fit
// L1 beside the weights (with x 8 x 1536 floats, 48 KiB, every weight row
// streamed all of x from L2 again): each stretch runs over all the
// workgroup's weight rows, whose sums add up in y. Default model, 8 rows,
// IREE's profile, two paired runs: the o and down projections' dispatches
// took 0.88 and 0.81 of gate/up's time, 0.72 and 0.73 in stretches.
#define X_STRETCH_BYTES 24576
static inline size_t stretch_blocks(size_t R, size_t K) {
  const size_t nb = K / 32, parts = R > 4 ? (R * K * 4 + X_STRETCH_BYTES - 1) / X_STRETCH_BYTES : 1;
  return (nb + parts - 1) / parts;
}

// sum_b s[b] * xs[b] over n scales from element i0 of p, xs the block sums of x.
INLINE float scale_dot(const Fmt *f, const void *p, size_t i0, size_t n, const float *xs) {
  __m256 acc = _mm256_setzero_ps();
  float tail = 0.f;
  size_t b = 0;
  if (f->f32) {
    const float *s = (const float *)p + i0;
    for (; b + 8 <= n; b += 8) acc = _mm256_fmadd_ps(_mm256_loadu_ps(s + b), _mm256_loadu_ps(xs + b), acc);
    for (; b < n; ++b) tail += s[b] * xs[b];
  } else {
    const uint16_t *h = (const uint16_t *)p + i0;
    for (; b + 8 <= n; b += 8)
      acc = _mm256_fmadd_ps(_mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(h + b))), _mm256_loadu_ps(xs + b), acc);
    for (; b < n; ++b) tail += _cvtsh_ss(h[b]) * xs[b];
  }
  return hsum(acc) + tail;
}

// Row n's constant term for one row of x: sum_b m[n, b] xs[b], added after
// the blocks (for one row, 5-17% faster than offsets() below, in vector
// form, in a token-shaped loop).
INLINE float offset_term(const Fmt *f, const void *m, size_t n, size_t nb, const float *xs) {
  return f->has_m ? scale_dot(f, m, n * nb, nb, xs) : 0.f;
}

// Row n's offset terms for R rows of x, added lane-wise into acc[r]: sum_b
// m[n, b] xs[r, b] (the 8-bit formats with m: q5_1, q5_k; xs: x's block sums,
// rows nbp apart, zero-padded). Each m is converted once for all rows:
// offset_term per row took a fifth of a 4- or 8-row matvec.
INLINE void offsets(const Fmt *f, const void *m, size_t n, size_t nb, const float *xs, size_t R, __m256 *acc) {
  if (!f->has_m) return;
  const size_t nbp = (nb + 7) & ~(size_t)7;
  float sv[MAX_NB] __attribute__((aligned(32)));
  row_scales(f, m, n * nb, nb, 1.f, sv);
  for (size_t b = nb; b < nbp; ++b) sv[b] = 0.f;
  for (size_t b = 0; b < nbp; b += 8) {
    const __m256 s8 = _mm256_load_ps(sv + b);
    for (size_t r = 0; r < R; ++r) acc[r] = _mm256_fmadd_ps(s8, _mm256_loadu_ps(xs + r * nbp + b), acc[r]);
  }
}

// ---- 4-bit: 16 weight rows interleaved -------------------------------------------
// The 4-bit formats reach the kernels in lse-compile's interleaved layout
// (compiler/kernel_layout.py): per group of IL = 16 weight rows and block b,
// 16 runs of 16 bytes, run j holding byte j of each row's block (values 2j
// and 2j + 1, low nibble first), then the group's 16 d (and m) of block b
// side by side. One vector then holds one value of 16 rows, and x's value is
// a broadcast: each byte widens to its own 32-bit lane, a mask keeps one
// nibble, and the lane's bits, read as an f32, are the denormal q 2^-149 (low)
// or 16 q 2^-149 (high), exactly; x is scaled by 2^S (the odd values by 2^S /
// 16), so each product rounds as q x would. Each row's block sum is scaled by
// d once, its offset term m (q4_0: -8 d) comes through x's block sums, and the
// 16 rows' results leave as one vector: no sum across lanes, no per-row tail.
// Token-shaped C loop, one thread, Zen 4, against the row-major kernels
// before it: 1.2-1.7x at one row of x from DRAM, 1.6-2.1x at eight.
#define IL 16
// Blocks ahead that il_tile prefetches each group's run and scales: one
// thread from DRAM, against none, 0.92 of the time at one row and 0.95 at
// eight (token shapes, K 576 and 1536); 4 ahead measured the same.
#define IL_AHEAD 2
#define XP_FLOATS 8192 /* x's rows over one stretch of blocks, scaled: 32 KiB */
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
  *lo = _mm512_castsi512_ps(_mm512_and_si512(v, _mm512_set1_epi32(0x0f)));
  *hi = _mm512_castsi512_ps(_mm512_and_si512(v, _mm512_set1_epi32(0xf0)));
}
// 16 int8 values (one run) as floats, exactly
INLINE V v_int8(const uint8_t *p) {
  return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)p)));
}
INLINE V v_scales(const Fmt *f, const void *p, size_t i) {
  return f->f32 ? _mm512_loadu_ps((const float *)p + i)
                : _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)((const uint16_t *)p + i)));
}
// lanes [i0, i1) of v into y (y[i] for lane i), added to what y holds where `add`
INLINE void v_store(float *y, V v, size_t i0, size_t i1, int add) {
  const __mmask16 k = (__mmask16)(((1u << i1) - 1) & ~((1u << i0) - 1));
  if (add) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(k, y));
  _mm512_mask_storeu_ps(y, k, v);
}
#else
#define G_MAX 2
#define RP_MAX 2 /* 16 registers: 2 rows' sums and results, two halves each */
typedef struct { __m256 a, b; } V;
INLINE V v_zero(void) { return (V){_mm256_setzero_ps(), _mm256_setzero_ps()}; }
INLINE V v_fma(V a, V b, V c) { return (V){_mm256_fmadd_ps(a.a, b.a, c.a), _mm256_fmadd_ps(a.b, b.b, c.b)}; }
INLINE V v_fma1(V a, float s, V c) {
  const __m256 b = _mm256_set1_ps(s);
  return (V){_mm256_fmadd_ps(a.a, b, c.a), _mm256_fmadd_ps(a.b, b, c.b)};
}
INLINE V v_mul1(V a, float s) { const __m256 b = _mm256_set1_ps(s); return (V){_mm256_mul_ps(a.a, b), _mm256_mul_ps(a.b, b)}; }
INLINE void v_nibbles(const uint8_t *p, __m128i flip, V *lo, V *hi) {
  const __m128i u = _mm_xor_si128(_mm_loadu_si128((const __m128i *)p), flip);
  const __m256i v0 = _mm256_cvtepu8_epi32(u), v1 = _mm256_cvtepu8_epi32(_mm_srli_si128(u, 8));
  const __m256i l = _mm256_set1_epi32(0x0f), h = _mm256_set1_epi32(0xf0);
  *lo = (V){_mm256_castsi256_ps(_mm256_and_si256(v0, l)), _mm256_castsi256_ps(_mm256_and_si256(v1, l))};
  *hi = (V){_mm256_castsi256_ps(_mm256_and_si256(v0, h)), _mm256_castsi256_ps(_mm256_and_si256(v1, h))};
}
INLINE V v_int8(const uint8_t *p) {
  const __m128i u = _mm_loadu_si128((const __m128i *)p);
  return (V){_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(u)), _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(u, 8)))};
}
INLINE V v_scales(const Fmt *f, const void *p, size_t i) {
  if (f->f32) return (V){_mm256_loadu_ps((const float *)p + i), _mm256_loadu_ps((const float *)p + i + 8)};
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

// Scaled x for one call: each row's power of two S (x_scale), its block sums
// times 2^(S - 149) (so its offset terms land in the scaled sums exactly) and
// post = 2^(149 - S), which takes the sums back.
typedef struct {
  float xs[MAX_R * MAX_NB], post[MAX_R], pre[MAX_R];
} XScale;

static void il_scale_x(const float *x, size_t R, size_t K, XScale *s) {
  const size_t nb = K / 32;
  for (size_t r = 0; r < R; ++r) {
    const int e = x_scale(x + r * K, K);
    s->pre[r] = pow2(e);
    s->post[r] = pow2(149 - e);
    const float back = pow2(e - 149);
    for (size_t b = 0; b < nb; ++b) {
      const float *p = x + r * K + b * 32;
      s->xs[r * MAX_NB + b] = back * hsum(_mm256_add_ps(_mm256_add_ps(_mm256_loadu_ps(p), _mm256_loadu_ps(p + 8)),
                                                        _mm256_add_ps(_mm256_loadu_ps(p + 16), _mm256_loadu_ps(p + 24))));
    }
  }
}

// Blocks [b0, b1) of x's rows into xp (row r at r * (b1 - b0) * 32): times
// 2^S, the odd values times 2^S / 16 (the high nibble's lane carries 16 q).
static void il_stretch_x(const float *x, size_t R, size_t K, size_t b0, size_t b1, const XScale *s, float *xp) {
  const size_t w = (b1 - b0) * 32;
  for (size_t r = 0; r < R; ++r) {
    const __m256 e = _mm256_set1_ps(s->pre[r]), o = _mm256_set1_ps(s->pre[r] * 0.0625f);
    const __m256 sc = _mm256_blend_ps(e, o, 0xaa);
    for (size_t i = 0; i < w; i += 8) _mm256_storeu_ps(xp + r * w + i, _mm256_mul_ps(sc, _mm256_loadu_ps(x + r * K + b0 * 32 + i)));
  }
}

// Groups g0 .. g0 + G - 1 (all 16 rows each) against RP rows of x over
// blocks [b0, b1): y[r, n] for n in [lo, hi) (the workgroup's rows) gets the
// sums, added to what it holds where `add` (a later stretch).
INLINE void il_tile(size_t G, size_t RP, const Fmt *f, const float *xp, size_t w, const XScale *s, size_t r0,
                     const uint8_t *q, const void *d, const void *m, size_t nb, size_t g0, size_t b0, size_t b1,
                     float *y, size_t N, size_t lo, size_t hi, int add) {
  const __m128i flip = _mm_set1_epi8(f->sign4 ? (char)0x88 : 0);
  const int offs = f->has_m || f->sign4;
  V acc[G_MAX][RP_MAX], yq[G_MAX][RP_MAX];
  for (size_t g = 0; g < G; ++g)
    for (size_t r = 0; r < RP; ++r) yq[g][r] = v_zero();
  for (size_t b = b0; b < b1; ++b) {
    for (size_t g = 0; g < G; ++g)
      for (size_t r = 0; r < RP; ++r) acc[g][r] = v_zero();
    const float *xb = xp + (b - b0) * 32;
    const size_t run = IL * (f->bits == 4 ? 16 : 32);  // a group's bytes a block
    for (size_t g = 0; g < G; ++g) {  // each group's run two blocks ahead toward L1
      const size_t ahead = (g0 + g) * nb + b + IL_AHEAD;
      const char *pq = (const char *)q + ahead * run;
      for (size_t i = 0; i < run; i += 64) _mm_prefetch(pq + i, _MM_HINT_T0);
      _mm_prefetch((const char *)d + ahead * IL * (f->f32 ? 4 : 2), _MM_HINT_T0);
      if (f->has_m) _mm_prefetch((const char *)m + ahead * IL * (f->f32 ? 4 : 2), _MM_HINT_T0);
    }
    if (f->bits == 4) {
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
    } else {
      for (size_t l = 0; l < 32; ++l) {
        for (size_t g = 0; g < G; ++g) {
          const V a = v_int8(q + ((g0 + g) * nb + b) * run + l * IL);
          for (size_t r = 0; r < RP; ++r) acc[g][r] = v_fma1(a, xb[r * w + l], acc[g][r]);
        }
      }
    }
    for (size_t g = 0; g < G; ++g) {
      const size_t si = ((g0 + g) * nb + b) * IL;
      const V D = v_scales(f, d, si), M = f->has_m ? v_scales(f, m, si) : v_mul1(D, -8.f);
      for (size_t r = 0; r < RP; ++r) {
        yq[g][r] = v_fma(D, acc[g][r], yq[g][r]);
        if (offs) yq[g][r] = v_fma1(M, s->xs[(r0 + r) * MAX_NB + b], yq[g][r]);
      }
    }
  }
  for (size_t g = 0; g < G; ++g) {
    const size_t n = (g0 + g) * IL, i0 = lo > n ? lo - n : 0, i1 = hi - n < IL ? hi - n : IL;
    for (size_t r = 0; r < RP; ++r) v_store(y + (r0 + r) * N + n, v_mul1(yq[g][r], s->post[r0 + r]), i0, i1, add);
  }
}

// Rows [n0, n1) for R <= MAX_R rows of x: one row takes G_MAX groups at once
// (FMA chains enough to fill the pipes), two rows 2 (AVX-512), more rows one
// group at a time, RP_MAX rows of x at once; x in stretches of blocks that
// fit xp. G and RP are constants in each instance, so the sums stay in registers.
INLINE void il_rows(const Fmt *f, const float *x, const uint8_t *q, const void *d, const void *m, float *y, size_t R,
                    size_t N, size_t K, size_t n0, size_t n1) {
  const int four = f->bits == 4;  // 8-bit values are converted, so x goes in as it is
  const unsigned csr = _mm_getcsr();
  if (four && (csr & DAZ)) _mm_setcsr(csr & ~DAZ);
  XScale s;
  float xp[XP_FLOATS] __attribute__((aligned(32)));
  const size_t nb = K / 32, sb = four && XP_FLOATS / (32 * R) < nb ? XP_FLOATS / (32 * R) : nb;
  const size_t ga = n0 / IL, gz = (n1 + IL - 1) / IL, G = R == 1 ? G_MAX : R == 2 && G_MAX > 2 ? 2 : 1;
  if (four) {
    il_scale_x(x, R, K, &s);
  } else {
    for (size_t r = 0; r < R; ++r) s.pre[r] = s.post[r] = 1.f;
  }
  for (size_t b0 = 0; b0 < nb; b0 += sb) {
    const size_t b1 = b0 + sb < nb ? b0 + sb : nb, w = four ? (b1 - b0) * 32 : K;
    if (four) il_stretch_x(x, R, K, b0, b1, &s, xp);
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
#if RP_MAX > 2
          case 3: TILE(1, 3); break;
          case 4: TILE(1, 4); break;
          case 5: TILE(1, 5); break;
          case 6: TILE(1, 6); break;
          case 7: TILE(1, 7); break;
          default: TILE(1, RP_MAX); break;
#endif
        }
#undef TILE
      }
      g += gn;
    }
  }
  if (four && (csr & DAZ)) _mm_setcsr(csr);
}

// ---- 8-bit ----------------------------------------------------------------------
#define I8_CONSTANTS                                                                                       \
  const __m256i top_lo = _mm256_setr_epi8(-1, -1, -1, 0, -1, -1, -1, 1, -1, -1, -1, 2, -1, -1, -1, 3,     \
                                          -1, -1, -1, 4, -1, -1, -1, 5, -1, -1, -1, 6, -1, -1, -1, 7);    \
  const __m256i top_hi = _mm256_setr_epi8(-1, -1, -1, 8, -1, -1, -1, 9, -1, -1, -1, 10, -1, -1, -1, 11,   \
                                          -1, -1, -1, 12, -1, -1, -1, 13, -1, -1, -1, 14, -1, -1, -1, 15);

// 32 int8 values as four vectors of q * 2^24, in order.
#define I8_LANES(p, a0, a1, a2, a3)                                                                  \
  __m256i u_ = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)(p)));                  \
  __m256i v_ = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)((p) + 16)));           \
  __m256 a0 = _mm256_cvtepi32_ps(_mm256_shuffle_epi8(u_, top_lo));                                  \
  __m256 a1 = _mm256_cvtepi32_ps(_mm256_shuffle_epi8(u_, top_hi));                                  \
  __m256 a2 = _mm256_cvtepi32_ps(_mm256_shuffle_epi8(v_, top_lo));                                  \
  __m256 a3 = _mm256_cvtepi32_ps(_mm256_shuffle_epi8(v_, top_hi));

// 32 values of one row: sum a[i] x[i] scaled by the block's d (dv[0]), or,
// with 16-value blocks (q6_k), each half by its own (dv[0], dv[1]).
INLINE __m256 i8_block(const Fmt *f, const float *x, __m256 a0, __m256 a1, __m256 a2, __m256 a3, const float *dv,
                       __m256 acc) {
  if (f->B == 16) {
    __m256 t = _mm256_fmadd_ps(a1, _mm256_loadu_ps(x + 8), _mm256_mul_ps(a0, _mm256_loadu_ps(x)));
    __m256 u = _mm256_fmadd_ps(a3, _mm256_loadu_ps(x + 24), _mm256_mul_ps(a2, _mm256_loadu_ps(x + 16)));
    return _mm256_fmadd_ps(_mm256_broadcast_ss(dv + 1), u, _mm256_fmadd_ps(_mm256_broadcast_ss(dv), t, acc));
  }
  return _mm256_fmadd_ps(_mm256_broadcast_ss(dv), dot32(x, a0, a1, a2, a3), acc);
}

INLINE void i8_r1(const Fmt *f, const float *x, const int8_t *q, const void *d, const void *m, float *y, size_t K,
                  size_t n0, size_t n1, const float *xs) {
  I8_CONSTANTS
  const size_t nb = K / 32, per = 32 / f->B;  // scales per 32 values
  float dv[2 * MAX_NB] __attribute__((aligned(32)));
  for (size_t n = n0; n < n1; ++n) {
    if (n + AHEAD_1 < n1) prefetch_row(f, (const uint8_t *)q, d, m, n + AHEAD_1, K, 0, nb);
    row_scales(f, d, n * nb * per, nb * per, 1.f / 16777216.f, dv);
    const int8_t *qn = q + n * K;
    __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
    size_t b = 0;
    for (; b + 2 <= nb; b += 2) {
      {
        I8_LANES(qn + b * 32, a0, a1, a2, a3)
        acc0 = i8_block(f, x + b * 32, a0, a1, a2, a3, dv + b * per, acc0);
      }
      {
        I8_LANES(qn + b * 32 + 32, a0, a1, a2, a3)
        acc1 = i8_block(f, x + b * 32 + 32, a0, a1, a2, a3, dv + (b + 1) * per, acc1);
      }
    }
    if (b < nb) {
      I8_LANES(qn + b * 32, a0, a1, a2, a3)
      acc0 = i8_block(f, x + b * 32, a0, a1, a2, a3, dv + b * per, acc0);
    }
    y[n] = hsum(_mm256_add_ps(acc0, acc1)) + offset_term(f, m, n, nb, xs);
  }
}

INLINE void i8_rn(size_t R, const Fmt *f, const float *x, const int8_t *q, const void *d, const void *m, float *y,
                  size_t N, size_t K, size_t n0, size_t n1, const float *xs) {
  I8_CONSTANTS
  const size_t nb = K / 32, per = 32 / f->B, sb = stretch_blocks(R, K);
  float dv[2 * MAX_NB] __attribute__((aligned(32)));
  for (size_t b0 = 0; b0 < nb; b0 += sb) {
    const size_t b1 = b0 + sb < nb ? b0 + sb : nb;
    for (size_t n = n0; n < n1; ++n) {
      if (n + AHEAD_N < n1) prefetch_row(f, (const uint8_t *)q, d, m, n + AHEAD_N, K, b0, b1);
      __m256 acc[MAX_R], acc2[MAX_R];
      row_scales(f, d, (n * nb + b0) * per, (b1 - b0) * per, 1.f / 16777216.f, dv);
      for (size_t r = 0; r < R; ++r) acc[r] = acc2[r] = _mm256_setzero_ps();
      if (b0 == 0) offsets(f, m, n, nb, xs, R, acc);
      for (size_t b = b0; b < b1; ++b) {
        const float *dvb = dv + (b - b0) * per;
        I8_LANES(q + n * K + b * 32, a0, a1, a2, a3)
        if (R > 4) {
          // Past 4 rows, the weights first (w = 2^24 q times d 2^-24 = q d, as the
          // reference dequantises them), then 4 FMAs a row: 4 + 4R
          // operations a block rather than 5R; 9% faster at 8 rows, slower at 2 or 4.
          const __m256 D0 = _mm256_broadcast_ss(dvb), D1 = _mm256_broadcast_ss(dvb + per - 1);
          const __m256 w0 = _mm256_mul_ps(a0, D0), w1 = _mm256_mul_ps(a1, D0), w2 = _mm256_mul_ps(a2, D1),
                       w3 = _mm256_mul_ps(a3, D1);
          for (size_t r = 0; r < R; ++r) {
            const float *xb = x + r * K + b * 32;
            if (R <= ACC2_ROWS) block_fma2(xb, w0, w1, w2, w3, acc + r, acc2 + r);
            else acc[r] = block_fma(xb, w0, w1, w2, w3, acc[r]);
          }
        } else if (f->B == 16) {
          for (size_t r = 0; r < R; ++r) acc[r] = i8_block(f, x + r * K + b * 32, a0, a1, a2, a3, dvb, acc[r]);
        } else {
          rows_fma(x + b * 32, R, K, a0, a1, a2, a3, _mm256_broadcast_ss(dvb), acc);
        }
      }
      for (size_t r = 0; r < R; ++r) {
        const float s = hsum(R > 4 && R <= ACC2_ROWS ? _mm256_add_ps(acc[r], acc2[r]) : acc[r]);
        y[r * N + n] = b0 ? y[r * N + n] + s : s;
      }
    }
  }
}

// ---- one workgroup --------------------------------------------------------------
// Rows [n0, n1) of one N-row matrix, for all R rows of x (y is R x N).
INLINE void matvec_rows(const Fmt *f, const float *x, const uint8_t *q, const void *d, const void *m, float *y,
                        size_t R, size_t N, size_t K, size_t n0, size_t n1) {
  const int sums = f->has_m;  // the row-major 8-bit offset terms need x's block sums
  float xs[MAX_R * MAX_NB];
  for (size_t r0 = 0; r0 < R; r0 += MAX_R) {
    const size_t rr = R - r0 < MAX_R ? R - r0 : MAX_R;
    if (f->il) {
      il_rows(f, x + r0 * K, q, d, m, y + r0 * N, rr, N, K, n0, n1);
    } else if (rr == 1) {
      if (sums) block_sums(x + r0 * K, 1, K, xs);
      i8_r1(f, x + r0 * K, (const int8_t *)q, d, m, y + r0 * N, K, n0, n1, xs);
    } else {
      if (sums) block_sums(x + r0 * K, rr, K, xs);
      BY_ROWS(i8_rn, rr, f, x + r0 * K, (const int8_t *)q, d, m, y + r0 * N, N, K, n0, n1, xs)
    }
  }
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
#define F32_OF(bits, sign4, f32, ...) f32
#define SCALE_BYTES(...) (F32_OF(__VA_ARGS__) ? 4 : 2) /* bytes per d (and m) */
#define QD_ARGS(i) const uint8_t *q##i, size_t q##i##_off, const void *d##i, size_t d##i##_off
#define PART_ARGS_M(i) QD_ARGS(i), const void *m##i, size_t m##i##_off
#define PART_ARGS_D(i) QD_ARGS(i)
#define PART_M(i)                                                                                                  \
  {q##i + q##i##_off, (const char *)d##i + d##i##_off * e, (const char *)m##i + m##i##_off * e, y##i + y##i##_off, N##i}
#define PART_D(i) {q##i + q##i##_off, (const char *)d##i + d##i##_off * e, 0, y##i + y##i##_off, N##i}
#define MATVEC_EXPORTS(stem, kind, mode, ...)                                                                       \
  void lse_##stem##_matvec(const float *x, size_t x_off, PART_ARGS_##mode(1), float *y1, size_t y1_off, size_t R,    \
                           size_t N1, size_t K, size_t tile, size_t wg) {                                          \
    const size_t e = SCALE_BYTES(__VA_ARGS__);                                                                      \
    const Part p[1] = {PART_##mode(1)};                                                                             \
    parts_rows(rows_##stem, x + x_off, p, 1, R, K, tile, wg);                                                       \
  }                                                                                                                 \
  void lse_##stem##_matvec2(const float *x, size_t x_off, PART_ARGS_##mode(1), PART_ARGS_##mode(2), float *y1,       \
                            size_t y1_off, float *y2, size_t y2_off, size_t R, size_t N1, size_t N2, size_t K,       \
                            size_t tile, size_t wg) {                                                               \
    const size_t e = SCALE_BYTES(__VA_ARGS__);                                                                      \
    const Part p[2] = {PART_##mode(1), PART_##mode(2)};                                                             \
    parts_rows(rows_##stem, x + x_off, p, 2, R, K, tile, wg);                                                       \
  }                                                                                                                 \
  void lse_##stem##_matvec3(const float *x, size_t x_off, PART_ARGS_##mode(1), PART_ARGS_##mode(2),                  \
                            PART_ARGS_##mode(3), float *y1, size_t y1_off, float *y2, size_t y2_off, float *y3,      \
                            size_t y3_off, size_t R, size_t N1, size_t N2, size_t N3, size_t K, size_t tile,         \
                            size_t wg) {                                                                            \
    const size_t e = SCALE_BYTES(__VA_ARGS__);                                                                      \
    const Part p[3] = {PART_##mode(1), PART_##mode(2), PART_##mode(3)};                                             \
    parts_rows(rows_##stem, x + x_off, p, 3, R, K, tile, wg);                                                       \
  }
LSE_BLOCK_FORMATS(ROWS_FN, matvec)
LSE_BLOCK_FORMATS(MATVEC_EXPORTS, matvec)
