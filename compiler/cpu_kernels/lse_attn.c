// LSE's attention over an f16 KV cache, x86-64-v3 (AVX2, FMA, F16C).
// For a few query rows (decode), two IREE dispatches (see cpu_kernel_build.py):
// lse_attend_write_f16 (which first writes the step's K and V rows) with one
// workgroup per (row, group of KV heads, split of the positions), then
// lse_attend_merge per (row, KV head):
//   y[r, h] = sum_t softmax_t(q[r, h] . K[slot_r, t, h / G] / sqrt(d)) V[slot_r, t, h / G]
// over t <= pos[r], for the G query heads h that share KV head j (GQA). The
// cache is the model's (L, 2, P, T, kv, d) tensor, read in place: each K and
// V row is converted to f32 once and used by all G heads, and only the
// positions up to the row's own are read (no mask, no window padding).
// The softmax runs online over chunks of KF / d positions (a running max and
// sum, rescaled when the max grows), so no buffer grows with T. For a
// prompt's many rows, lse_attend_rows_f16 takes a block of rows per
// workgroup, so each widened K and V chunk serves all of their heads, and each
// row stops at its own position (causal, nothing masked). Activations
// and sums stay f32; exp is Cephes' expf polynomial (about 1 ulp).
// Bare-metal: no libc, no globals.
#include <immintrin.h>
#include <stddef.h>
#include <stdint.h>

#define MAX_G 16
#define MAX_D 256
#define KF 8192   /* floats of widened K or V per chunk (32 KiB of the worker's stack) */
#define MAX_CH 128

static inline float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// 8 f16 values as f32, exactly
static inline __m256 f16x8(const uint16_t *p) { return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)p)); }

// exp(x) for x <= 0 (scores minus their running max); below -87.3 it returns
// about 2^-126 rather than 0, which no sum of terms near 1 can see.
static inline __m256 exp_neg(__m256 x) {
  x = _mm256_max_ps(x, _mm256_set1_ps(-87.3365447505531f));
  __m256 fx = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                              _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  x = _mm256_fnmadd_ps(fx, _mm256_set1_ps(0.693359375f), x);
  x = _mm256_fnmadd_ps(fx, _mm256_set1_ps(-2.12194440e-4f), x);
  __m256 y = _mm256_set1_ps(1.9875691500e-4f);
  y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(1.3981999507e-3f));
  y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(8.3334519073e-3f));
  y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(4.1665795894e-2f));
  y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(1.6666665459e-1f));
  y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(5.0000001201e-1f));
  y = _mm256_fmadd_ps(y, _mm256_mul_ps(x, x), _mm256_add_ps(x, _mm256_set1_ps(1.f)));
  __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvttps_epi32(fx), _mm256_set1_epi32(127)), 23);
  return _mm256_mul_ps(y, _mm256_castsi256_ps(e));
}

static inline float exp_neg1(float x) { return _mm256_cvtss_f32(exp_neg(_mm256_set1_ps(x))); }

// n positions of HG heads' rows (HG * d f16 values each, `stride` apart)
// into dst, head by head: head h's rows at dst + h * hs, d floats each. A
// position's heads sit side by side in the cache, so HG = kv reads one run
// of kv * d values a position, where a head alone (HG = 1) reads d of every
// kv * d, which the hardware prefetchers follow poorly, so the loop
// prefetches 16 rows ahead (docs/kernels.md has the figures).
// (Prefetching past the window is harmless.)
#define PF_ROWS 16
static void widen_heads(const uint16_t *src, size_t stride, size_t n, size_t HG, size_t d, float *dst, size_t hs) {
  for (size_t i = 0; i < n; ++i) {
    const char *ahead = (const char *)(src + (i + PF_ROWS) * stride);
    for (size_t b = 0; b < HG * d * 2; b += 64) _mm_prefetch(ahead + b, _MM_HINT_T0);
    for (size_t h = 0; h < HG; ++h)
      for (size_t e = 0; e < d; e += 8)
        _mm256_store_ps(dst + h * hs + i * d + e,
                        f16x8(src + i * stride + h * d + e));
  }
}

// Cache rows that a loop brings toward L2 while it computes: row i's `bytes`
// at p + i * stride, for i < rows. The decode loop widens a chunk of K,
// computes its scores while the chunk's V rows come in, and mixes V while
// the next chunk's K rows come in, so DRAM works beside the FMAs rather than
// between them; it pays where the window is long (docs/kernels.md).
typedef struct {
  const char *p;
  size_t stride, bytes, rows;
} Ahead;
static const Ahead NO_AHEAD = {0, 0, 0, 0};
static inline void ahead_rows(Ahead a, size_t i, size_t n) {
  for (size_t r = i; r < i + n && r < a.rows; ++r)
    for (size_t b = 0; b < a.bytes; b += 64) _mm_prefetch(a.p + r * a.stride + b, _MM_HINT_T1);
}

// sg[i] = scale * q . kf[i] for n rows of kf (d f32 each): four rows share
// each load of q, and their four sums come out of one horizontal-add tree.
// Rows n..n+3 of kf may hold stale values: their scores are never read.
static void scores4(const float *q, const float *kf, size_t n, size_t d, float scale, float *sg, Ahead ah) {
  const __m128 sc = _mm_set1_ps(scale);
  for (size_t i = 0; i < n; i += 4) {
    ahead_rows(ah, i, 4);
    const float *k0 = kf + i * d;
    __m256 p0 = _mm256_setzero_ps(), p1 = _mm256_setzero_ps(), p2 = _mm256_setzero_ps(), p3 = _mm256_setzero_ps();
    for (size_t e = 0; e < d; e += 8) {
      const __m256 qv = _mm256_loadu_ps(q + e);
      p0 = _mm256_fmadd_ps(qv, _mm256_load_ps(k0 + e), p0);
      p1 = _mm256_fmadd_ps(qv, _mm256_load_ps(k0 + d + e), p1);
      p2 = _mm256_fmadd_ps(qv, _mm256_load_ps(k0 + 2 * d + e), p2);
      p3 = _mm256_fmadd_ps(qv, _mm256_load_ps(k0 + 3 * d + e), p3);
    }
    const __m256 h = _mm256_hadd_ps(_mm256_hadd_ps(p0, p1), _mm256_hadd_ps(p2, p3));
    const __m128 four = _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
    _mm_store_ps(sg + i, _mm_mul_ps(sc, four));
  }
}

// acc (d) += sum_i p[i] * vf[i] over n rows of vf: 64 columns at a time in
// eight registers, then 8 at a time.
static void mix(const float *p, const float *vf, size_t n, size_t d, float *acc, Ahead ah) {
  ahead_rows(ah, 0, n);
  size_t e = 0;
  for (; e + 64 <= d; e += 64) {
    __m256 a0 = _mm256_load_ps(acc + e), a1 = _mm256_load_ps(acc + e + 8), a2 = _mm256_load_ps(acc + e + 16),
           a3 = _mm256_load_ps(acc + e + 24), a4 = _mm256_load_ps(acc + e + 32), a5 = _mm256_load_ps(acc + e + 40),
           a6 = _mm256_load_ps(acc + e + 48), a7 = _mm256_load_ps(acc + e + 56);
    for (size_t i = 0; i < n; ++i) {
      const __m256 pb = _mm256_broadcast_ss(p + i);
      const float *v = vf + i * d + e;
      a0 = _mm256_fmadd_ps(pb, _mm256_load_ps(v), a0);
      a1 = _mm256_fmadd_ps(pb, _mm256_load_ps(v + 8), a1);
      a2 = _mm256_fmadd_ps(pb, _mm256_load_ps(v + 16), a2);
      a3 = _mm256_fmadd_ps(pb, _mm256_load_ps(v + 24), a3);
      a4 = _mm256_fmadd_ps(pb, _mm256_load_ps(v + 32), a4);
      a5 = _mm256_fmadd_ps(pb, _mm256_load_ps(v + 40), a5);
      a6 = _mm256_fmadd_ps(pb, _mm256_load_ps(v + 48), a6);
      a7 = _mm256_fmadd_ps(pb, _mm256_load_ps(v + 56), a7);
    }
    _mm256_store_ps(acc + e, a0); _mm256_store_ps(acc + e + 8, a1); _mm256_store_ps(acc + e + 16, a2);
    _mm256_store_ps(acc + e + 24, a3); _mm256_store_ps(acc + e + 32, a4); _mm256_store_ps(acc + e + 40, a5);
    _mm256_store_ps(acc + e + 48, a6); _mm256_store_ps(acc + e + 56, a7);
  }
  for (; e < d; e += 8) {
    __m256 a = _mm256_load_ps(acc + e);
    for (size_t i = 0; i < n; ++i) a = _mm256_fmadd_ps(_mm256_broadcast_ss(p + i), _mm256_load_ps(vf + i * d + e), a);
    _mm256_store_ps(acc + e, a);
  }
}

// scores4 for three query vectors at once (a row's heads sharing a KV head):
// each load of kf serves three FMAs.
static void scores4x3(const float *q, size_t qs, const float *kf, size_t n, size_t d, float scale, float *s,
                      size_t ss, Ahead ah) {
  const __m128 sc = _mm_set1_ps(scale);
  for (size_t i = 0; i < n; i += 4) {
    ahead_rows(ah, i, 4);
    const float *k0 = kf + i * d;
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0, b0 = a0, b1 = a0, b2 = a0, b3 = a0, c0 = a0, c1 = a0,
           c2 = a0, c3 = a0;
    for (size_t e = 0; e < d; e += 8) {
      const __m256 qa = _mm256_loadu_ps(q + e), qb = _mm256_loadu_ps(q + qs + e), qc = _mm256_loadu_ps(q + 2 * qs + e);
      __m256 k = _mm256_load_ps(k0 + e);
      a0 = _mm256_fmadd_ps(qa, k, a0); b0 = _mm256_fmadd_ps(qb, k, b0); c0 = _mm256_fmadd_ps(qc, k, c0);
      k = _mm256_load_ps(k0 + d + e);
      a1 = _mm256_fmadd_ps(qa, k, a1); b1 = _mm256_fmadd_ps(qb, k, b1); c1 = _mm256_fmadd_ps(qc, k, c1);
      k = _mm256_load_ps(k0 + 2 * d + e);
      a2 = _mm256_fmadd_ps(qa, k, a2); b2 = _mm256_fmadd_ps(qb, k, b2); c2 = _mm256_fmadd_ps(qc, k, c2);
      k = _mm256_load_ps(k0 + 3 * d + e);
      a3 = _mm256_fmadd_ps(qa, k, a3); b3 = _mm256_fmadd_ps(qb, k, b3); c3 = _mm256_fmadd_ps(qc, k, c3);
    }
    __m256 h = _mm256_hadd_ps(_mm256_hadd_ps(a0, a1), _mm256_hadd_ps(a2, a3));
    _mm_store_ps(s + i, _mm_mul_ps(sc, _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1))));
    h = _mm256_hadd_ps(_mm256_hadd_ps(b0, b1), _mm256_hadd_ps(b2, b3));
    _mm_store_ps(s + ss + i, _mm_mul_ps(sc, _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1))));
    h = _mm256_hadd_ps(_mm256_hadd_ps(c0, c1), _mm256_hadd_ps(c2, c3));
    _mm_store_ps(s + 2 * ss + i, _mm_mul_ps(sc, _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1))));
  }
}

// mix for three query vectors at once: acc[g] (d, ps apart) += sum_i
// p[g][i] * vf[i] (p rows ps apart), 32 columns at a time in twelve registers,
// so each load of vf serves three FMAs.
static void mix3(const float *p, size_t ps, const float *vf, size_t n, size_t d, float *acc, size_t as, Ahead ah) {
  ahead_rows(ah, 0, n);
  size_t e = 0;
  for (; e + 32 <= d; e += 32) {
    float *x = acc + e, *y = acc + as + e, *z = acc + 2 * as + e;
    __m256 a0 = _mm256_load_ps(x), a1 = _mm256_load_ps(x + 8), a2 = _mm256_load_ps(x + 16), a3 = _mm256_load_ps(x + 24);
    __m256 b0 = _mm256_load_ps(y), b1 = _mm256_load_ps(y + 8), b2 = _mm256_load_ps(y + 16), b3 = _mm256_load_ps(y + 24);
    __m256 c0 = _mm256_load_ps(z), c1 = _mm256_load_ps(z + 8), c2 = _mm256_load_ps(z + 16), c3 = _mm256_load_ps(z + 24);
    for (size_t i = 0; i < n; ++i) {
      const float *v = vf + i * d + e;
      const __m256 pa = _mm256_broadcast_ss(p + i), pb = _mm256_broadcast_ss(p + ps + i),
                   pc = _mm256_broadcast_ss(p + 2 * ps + i);
      __m256 t = _mm256_load_ps(v);
      a0 = _mm256_fmadd_ps(pa, t, a0); b0 = _mm256_fmadd_ps(pb, t, b0); c0 = _mm256_fmadd_ps(pc, t, c0);
      t = _mm256_load_ps(v + 8);
      a1 = _mm256_fmadd_ps(pa, t, a1); b1 = _mm256_fmadd_ps(pb, t, b1); c1 = _mm256_fmadd_ps(pc, t, c1);
      t = _mm256_load_ps(v + 16);
      a2 = _mm256_fmadd_ps(pa, t, a2); b2 = _mm256_fmadd_ps(pb, t, b2); c2 = _mm256_fmadd_ps(pc, t, c2);
      t = _mm256_load_ps(v + 24);
      a3 = _mm256_fmadd_ps(pa, t, a3); b3 = _mm256_fmadd_ps(pb, t, b3); c3 = _mm256_fmadd_ps(pc, t, c3);
    }
    _mm256_store_ps(x, a0); _mm256_store_ps(x + 8, a1); _mm256_store_ps(x + 16, a2); _mm256_store_ps(x + 24, a3);
    _mm256_store_ps(y, b0); _mm256_store_ps(y + 8, b1); _mm256_store_ps(y + 16, b2); _mm256_store_ps(y + 24, b3);
    _mm256_store_ps(z, c0); _mm256_store_ps(z + 8, c1); _mm256_store_ps(z + 16, c2); _mm256_store_ps(z + 24, c3);
  }
  for (; e < d; e += 8)  // the last d % 32 columns
    for (size_t g = 0; g < 3; ++g) {
      __m256 a = _mm256_load_ps(acc + g * as + e);
      for (size_t i = 0; i < n; ++i)
        a = _mm256_fmadd_ps(_mm256_broadcast_ss(p + g * ps + i), _mm256_load_ps(vf + i * d + e), a);
      _mm256_store_ps(acc + g * as + e, a);
    }
}

// The scores of G query heads (q rows d apart) against n rows of kf, into
// s (rows ch apart): three heads at a time, then one by one (the first
// call brings `ah` toward L2).
static void scores_heads(const float *q, size_t G, const float *kf, size_t n, size_t d, float scale, float *s,
                         size_t ch, Ahead ah) {
  size_t g = 0;
  for (; g + 3 <= G; g += 3) scores4x3(q + g * d, d, kf, n, d, scale, s + g * ch, ch, g ? NO_AHEAD : ah);
  for (; g < G; ++g) scores4(q + g * d, kf, n, d, scale, s + g * ch, g ? NO_AHEAD : ah);
}

// acc (G rows of d) += the G rows of p (ch apart) times n rows of vf.
static void mix_heads(const float *p, size_t G, size_t ch, const float *vf, size_t n, size_t d, float *acc,
                      Ahead ah) {
  size_t g = 0;
  for (; g + 3 <= G; g += 3) mix3(p + g * ch, ch, vf, n, d, acc + g * d, d, g ? NO_AHEAD : ah);
  for (; g < G; ++g) mix(p + g * ch, vf, n, d, acc + g * d, g ? NO_AHEAD : ah);
}

// The same two steps for G = 3 query heads a KV head, reading the f16 cache
// rows in place (`ks` values apart) rather than a widened copy: each row is
// still converted once, for its three heads, but nothing is stored and read
// back, and the products and sums are those of scores4x3 and mix3, in their
// order. Where `pf` is set, each loop fetches the whole rows (`pfb` bytes:
// every head of a position) PF_INLINE positions ahead into L1, so the later
// heads' passes find their rows there. In place, both steps are faster than
// on a widened chunk, with the cache in L3 or from DRAM (docs/kernels.md).
#define PF_INLINE 8
// ahead_rows with T0 and no bound on the rows: one helper for both, the hint
// a flag, changed the code GCC makes for scores4x3 and mix3, so they stay two.
static inline void fetch_rows(const char *pf, size_t stride, size_t r0, size_t n, size_t bytes) {
  for (size_t r = r0; r < r0 + n; ++r)
    for (size_t b = 0; b < bytes; b += 64) _mm_prefetch(pf + r * stride + b, _MM_HINT_T0);
}

// s[g * ss + i] = scale * q_g . K[i] for the three heads g at q (qs apart) and
// n rows of K; rows past n repeat row i (their scores are never read).
static void scores4x3_f16(const float *q, size_t qs, const uint16_t *K, size_t ks, size_t n, size_t d, float scale,
                          float *s, size_t ss, const char *pf, size_t pfb) {
  const __m128 sc = _mm_set1_ps(scale);
  for (size_t i = 0; i < n; i += 4) {
    if (pf) fetch_rows(pf, ks * 2, i + PF_INLINE, 4, pfb);
    const uint16_t *k0 = K + i * ks;
    const size_t k1 = i + 1 < n ? ks : 0, k2 = i + 2 < n ? 2 * ks : 0, k3 = i + 3 < n ? 3 * ks : 0;
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0, b0 = a0, b1 = a0, b2 = a0, b3 = a0, c0 = a0, c1 = a0,
           c2 = a0, c3 = a0;
    for (size_t e = 0; e < d; e += 8) {
      const __m256 qa = _mm256_loadu_ps(q + e), qb = _mm256_loadu_ps(q + qs + e), qc = _mm256_loadu_ps(q + 2 * qs + e);
      __m256 k = f16x8(k0 + e);
      a0 = _mm256_fmadd_ps(qa, k, a0); b0 = _mm256_fmadd_ps(qb, k, b0); c0 = _mm256_fmadd_ps(qc, k, c0);
      k = f16x8(k0 + k1 + e);
      a1 = _mm256_fmadd_ps(qa, k, a1); b1 = _mm256_fmadd_ps(qb, k, b1); c1 = _mm256_fmadd_ps(qc, k, c1);
      k = f16x8(k0 + k2 + e);
      a2 = _mm256_fmadd_ps(qa, k, a2); b2 = _mm256_fmadd_ps(qb, k, b2); c2 = _mm256_fmadd_ps(qc, k, c2);
      k = f16x8(k0 + k3 + e);
      a3 = _mm256_fmadd_ps(qa, k, a3); b3 = _mm256_fmadd_ps(qb, k, b3); c3 = _mm256_fmadd_ps(qc, k, c3);
    }
    __m256 h = _mm256_hadd_ps(_mm256_hadd_ps(a0, a1), _mm256_hadd_ps(a2, a3));
    _mm_store_ps(s + i, _mm_mul_ps(sc, _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1))));
    h = _mm256_hadd_ps(_mm256_hadd_ps(b0, b1), _mm256_hadd_ps(b2, b3));
    _mm_store_ps(s + ss + i, _mm_mul_ps(sc, _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1))));
    h = _mm256_hadd_ps(_mm256_hadd_ps(c0, c1), _mm256_hadd_ps(c2, c3));
    _mm_store_ps(s + 2 * ss + i, _mm_mul_ps(sc, _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1))));
  }
}

// acc[g] (d, as apart) += sum_i p[g][i] * V[i] (p rows ps apart) for the
// three heads g, 32 columns at a time (d % 32 == 0); `pf` on the first pass.
// These two repeat scores4x3 and mix3 but for the load: one body for both,
// taking the element type as a flag, is slower, and so is calling these two
// without inlining them (docs/kernels.md).
static void mix3_f16(const float *p, size_t ps, const uint16_t *V, size_t vs, size_t n, size_t d, float *acc,
                     size_t as, const char *pf, size_t pfb) {
  for (size_t e = 0; e < d; e += 32, pf = 0) {
    float *x = acc + e, *y = acc + as + e, *z = acc + 2 * as + e;
    __m256 a0 = _mm256_load_ps(x), a1 = _mm256_load_ps(x + 8), a2 = _mm256_load_ps(x + 16), a3 = _mm256_load_ps(x + 24);
    __m256 b0 = _mm256_load_ps(y), b1 = _mm256_load_ps(y + 8), b2 = _mm256_load_ps(y + 16), b3 = _mm256_load_ps(y + 24);
    __m256 c0 = _mm256_load_ps(z), c1 = _mm256_load_ps(z + 8), c2 = _mm256_load_ps(z + 16), c3 = _mm256_load_ps(z + 24);
    for (size_t i = 0; i < n; ++i) {
      if (pf) fetch_rows(pf, vs * 2, i + PF_INLINE, 1, pfb);
      const uint16_t *v = V + i * vs + e;
      const __m256 pa = _mm256_broadcast_ss(p + i), pb = _mm256_broadcast_ss(p + ps + i),
                   pc = _mm256_broadcast_ss(p + 2 * ps + i);
      __m256 t = f16x8(v);
      a0 = _mm256_fmadd_ps(pa, t, a0); b0 = _mm256_fmadd_ps(pb, t, b0); c0 = _mm256_fmadd_ps(pc, t, c0);
      t = f16x8(v + 8);
      a1 = _mm256_fmadd_ps(pa, t, a1); b1 = _mm256_fmadd_ps(pb, t, b1); c1 = _mm256_fmadd_ps(pc, t, c1);
      t = f16x8(v + 16);
      a2 = _mm256_fmadd_ps(pa, t, a2); b2 = _mm256_fmadd_ps(pb, t, b2); c2 = _mm256_fmadd_ps(pc, t, c2);
      t = f16x8(v + 24);
      a3 = _mm256_fmadd_ps(pa, t, a3); b3 = _mm256_fmadd_ps(pb, t, b3); c3 = _mm256_fmadd_ps(pc, t, c3);
    }
    _mm256_store_ps(x, a0); _mm256_store_ps(x + 8, a1); _mm256_store_ps(x + 16, a2); _mm256_store_ps(x + 24, a3);
    _mm256_store_ps(y, b0); _mm256_store_ps(y + 8, b1); _mm256_store_ps(y + 16, b2); _mm256_store_ps(y + 24, b3);
    _mm256_store_ps(z, c0); _mm256_store_ps(z + 8, c1); _mm256_store_ps(z + 16, c2); _mm256_store_ps(z + 24, c3);
  }
}

// One chunk of the online softmax for one query head: n scores in s become
// exp(score - m) in place; the running max m grows to cover them (the sums
// so far, *l and acc (d), shrink by exp(m_old - m_new)), and *l adds them.
static void softmax_chunk(float *s, size_t n, float *m, float *l, float *acc, size_t d) {
  size_t t = 0;
  __m256 mx = _mm256_set1_ps(-__builtin_inff());
  for (; t + 8 <= n; t += 8) mx = _mm256_max_ps(mx, _mm256_load_ps(s + t));
  __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(mx), _mm256_extractf128_ps(mx, 1));
  m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
  float mc = _mm_cvtss_f32(_mm_max_ss(m4, _mm_movehdup_ps(m4)));
  for (; t < n; ++t) mc = s[t] > mc ? s[t] : mc;
  if (mc > *m) {
    const float alpha = *m == -__builtin_inff() ? 0.f : exp_neg1(*m - mc);
    const __m256 av = _mm256_set1_ps(alpha);
    for (size_t e = 0; e < d; e += 8) _mm256_store_ps(acc + e, _mm256_mul_ps(av, _mm256_load_ps(acc + e)));
    *l *= alpha;
    *m = mc;
  }
  const __m256 mv = _mm256_set1_ps(*m);
  __m256 sum = _mm256_setzero_ps();
  for (t = 0; t + 8 <= n; t += 8) {
    const __m256 p = exp_neg(_mm256_sub_ps(_mm256_load_ps(s + t), mv));
    _mm256_store_ps(s + t, p);
    sum = _mm256_add_ps(sum, p);
  }
  float tail = 0.f;
  for (; t < n; ++t) {
    s[t] = exp_neg1(s[t] - *m);
    tail += s[t];
  }
  *l += hsum(sum) + tail;
}

// RoPE (HF's rotate_half), values j .. j + 7 of a head of d at x:
// x[j] cos[j] + x[j +- d/2] sin[j], sin carrying rotate_half's sign
// (negative in the first half; d/2 a multiple of 8): the tables
// FunctionEmitter.rope_table computes once a step for the row's position. Decode's
// q and k take it here rather than in two dispatches a layer of their own;
// the products and the sum round one by one, as the reference's.
static inline __m256 rope8(const float *x, size_t j, size_t d, const float *cs, const float *sn) {
  const size_t half = d / 2;
  __m256 a = _mm256_mul_ps(_mm256_loadu_ps(x + j), _mm256_loadu_ps(cs + j));
  __m256 b = _mm256_mul_ps(_mm256_loadu_ps(x + (j < half ? j + half : j - half)), _mm256_loadu_ps(sn + j));
  __asm__("" : "+x"(a), "+x"(b));  // kept apart: no contraction into an FMA
  return _mm256_add_ps(a, b);
}

// Workgroup wg = (r * (kv / HG) + c) * S + split attends positions
// [lo, hi) = split's share of [0, pos[r]] for KV heads j = c * HG ..
// c * HG + HG - 1, and writes each one's partial record
// part[(r * kv + j) * S + split] = {m[G], l[G], acc[G][d]}: the running max,
// the sum of exp(score - m), and the sum of exp(score - m) * V
// (unnormalized). Taking every KV head of a position at once (HG = kv where
// the buffers allow) reads the cache front to back, where one head per
// workgroup would read a strided 1/kv of it (docs/kernels.md). Splitting
// the positions lets a lone decode row use every core; lse_attend_merge
// combines the S records of each (row, KV head).
// A sliding layer's ring (R > 0, compiler/kv_layout.py): position t in row
// base + t mod R of its slab; a full layer (R = 0): row t. A chunk of
// positions stops at the ring's end, so its rows stay contiguous.
static inline size_t ring_row(size_t t, size_t base, size_t R) { return R ? base + t % R : t; }
static inline size_t ring_chunk(size_t t0, size_t n, size_t R) { return R && R - t0 % R < n ? R - t0 % R : n; }
#define MAX_ACC 4096  /* HG * G * d: the workgroup's accumulators (16 KiB) */
#define MAX_SC 4096   /* HG * G * ch: a chunk's scores (16 KiB) */
// First, this step's K and V rows (kn, vn: rows x kv x d, f32) go into the
// cache at each row's position, row r in slot slots[r] (each row its own
// slot, or a verify's consecutive rows of one slot): the step's whole cache
// update in the attention's own dispatch,
// rather than an insert dispatch per row, K or V, and layer (16 a layer at 4
// rows). Rows name their slots, so a step may take any subset of the slots
// (the decode buckets, emit_mlir.bucket_modes).
void lse_attend_write_f16(const float *q, size_t q_off, const float *kn, size_t kn_off, const float *vn,
                          size_t vn_off, uint16_t *cache, size_t c_off, const int64_t *pos, size_t p_off,
                          const int64_t *slots, size_t s_off, const float *cs, size_t cs_off, const float *sn,
                          size_t sn_off, float *part, size_t part_off, size_t rows, size_t layer, size_t P, size_t T,
                          size_t kv, size_t G, size_t d, size_t S, size_t HG, size_t rope, size_t W, size_t base,
                          size_t R, size_t wg) {
  q += q_off; kn += kn_off; vn += vn_off; cache += c_off; pos += p_off; slots += s_off; part += part_off;
  cs += cs_off; sn += sn_off;
  if (HG == 0 || kv % HG || d > MAX_D || d % 8 || HG * G * d > MAX_ACC) return;
  const size_t groups = kv / HG, split = wg % S, r = wg / S / groups, j0 = wg / S % groups * HG;
  size_t ch = KF / (HG * d);
  if (ch > MAX_CH) ch = MAX_CH;
  if (ch * HG * G > MAX_SC) ch = MAX_SC / (HG * G);
  ch &= ~(size_t)7;  // positions per chunk (32-byte aligned score rows): 40 for SmolLM2's 3 heads of 64
  if (r >= rows || ch == 0) return;
  int64_t last = pos[r];
  if (last < 0) last = 0;
  if (!R && (size_t)last >= T) last = (int64_t)T - 1;  // a ring holds any position mod R
  // A sliding layer (W > 0) reads only positions last - W < t <= last.
  const size_t count = (size_t)last + 1, first = W && count > W ? count - W : 0, span = count - first;
  const size_t lo = first + span * split / S, hi = first + span * (split + 1) / S;
  const size_t stride = kv * d, qc = kv * G * d, hs = ch * d;
  const size_t slot = (size_t)slots[r];
  if (slot >= P) return;
  uint16_t *K = cache + ((layer * 2 + 0) * P + slot) * T * stride + j0 * d;
  uint16_t *V = cache + ((layer * 2 + 1) * P + slot) * T * stride + j0 * d;
  const float *qr = q + r * qc + j0 * G * d;
  // This step's K and V rows of the workgroup's heads, rounded to f16 as
  // arith.truncf rounds (to nearest even): every row w of this slot whose
  // position falls in [lo, hi), the positions this workgroup reads. A row in
  // its own slot (decode) is written by its last split alone. Several rows
  // of one slot at consecutive positions (a verify, emit_verify.py) are
  // causal: row r reads the positions of rows before it, so each workgroup
  // writes those rows itself rather than wait on theirs; workgroups that
  // share a position write the same bytes.
  for (size_t w = 0; w < rows; ++w) {
    if ((size_t)slots[w] != slot || pos[w] < (int64_t)lo || pos[w] >= (int64_t)hi) continue;
    const size_t at = ring_row((size_t)pos[w], base, R);
    const float *kr = kn + w * stride + j0 * d, *vr = vn + w * stride + j0 * d;
    for (size_t e = 0; e < HG * d; e += 8) {
      const __m256 kv8 = rope ? rope8(kr + e / d * d, e % d, d, cs + w * d, sn + w * d) : _mm256_loadu_ps(kr + e);
      _mm_storeu_si128((__m128i *)(K + at * stride + e), _mm256_cvtps_ph(kv8, _MM_FROUND_TO_NEAREST_INT));
      _mm_storeu_si128((__m128i *)(V + at * stride + e), _mm256_cvtps_ph(_mm256_loadu_ps(vr + e), _MM_FROUND_TO_NEAREST_INT));
    }
  }

  float kf[KF + 3 * MAX_D] __attribute__((aligned(32)));  // + 3 rows scores4 may read past n  // a chunk of K, then of V, widened
  float acc[MAX_ACC] __attribute__((aligned(32)));
  float s[MAX_SC + 4] __attribute__((aligned(32)));
  float m[MAX_ACC / 8], l[MAX_ACC / 8];
  const float scale = 1.f / _mm_cvtss_f32(_mm_sqrt_ss(_mm_set_ss((float)d)));
  const size_t nq = HG * G;  // query heads: head h's G at qr + h * G * d, its scores at s + h * G * ch
  float qx[MAX_ACC] __attribute__((aligned(32)));  // the heads' q after RoPE
  if (rope) {
    for (size_t e = 0; e < nq * d; e += 8) _mm256_store_ps(qx + e, rope8(qr + e / d * d, e % d, d, cs + r * d, sn + r * d));
    qr = qx;
  }
  for (size_t i = 0; i < nq; ++i) {
    m[i] = -__builtin_inff();
    l[i] = 0.f;
    for (size_t e = 0; e < d; e += 8) _mm256_store_ps(acc + i * d + e, _mm256_setzero_ps());
  }
  for (size_t t0 = lo, n; t0 < hi; t0 += n) {
    n = ring_chunk(t0, hi - t0 < ch ? hi - t0 : ch, R);
    const size_t next = ring_chunk(t0 + n, hi - (t0 + n) < ch ? hi - (t0 + n) : ch, R);  // the next chunk's positions
    const size_t row = ring_row(t0, base, R), row_next = ring_row(t0 + n, base, R);
    if (G % 3 == 0 && d % 32 == 0) {  // the cache read in place, three query heads at a time
      const uint16_t *Kc = K + row * stride, *Vc = V + row * stride;
      for (size_t h = 0; h < HG; ++h)
        for (size_t g = 0; g < G; g += 3)
          scores4x3_f16(qr + (h * G + g) * d, d, Kc + h * d, stride, n, d, scale, s + (h * G + g) * ch, ch,
                        h + g ? 0 : (const char *)Kc, HG * d * 2);
      for (size_t i = 0; i < nq; ++i) softmax_chunk(s + i * ch, n, m + i, l + i, acc + i * d, d);
      for (size_t h = 0; h < HG; ++h)
        for (size_t g = 0; g < G; g += 3)
          mix3_f16(s + (h * G + g) * ch, ch, Vc + h * d, stride, n, d, acc + (h * G + g) * d, d,
                   h + g ? 0 : (const char *)Vc, HG * d * 2);
      continue;
    }
    widen_heads(K + row * stride, stride, n, HG, d, kf, hs);
    for (size_t h = 0; h < HG; ++h) {  // head h's V rows of this chunk come in meanwhile
      const Ahead v = {(const char *)(V + row * stride + h * d), stride * 2, d * 2, n};
      scores_heads(qr + h * G * d, G, kf + h * hs, n, d, scale, s + h * G * ch, ch, v);
    }
    for (size_t i = 0; i < nq; ++i) softmax_chunk(s + i * ch, n, m + i, l + i, acc + i * d, d);
    widen_heads(V + row * stride, stride, n, HG, d, kf, hs);
    for (size_t h = 0; h < HG; ++h) {  // and head h's K rows of the next chunk here
      const Ahead k = {(const char *)(K + row_next * stride + h * d), stride * 2, d * 2, next};
      mix_heads(s + h * G * ch, G, ch, kf + h * hs, n, d, acc + h * G * d, k);
    }
  }
  for (size_t h = 0; h < HG; ++h) {
    float *rec = part + ((r * kv + j0 + h) * S + split) * G * (d + 2);
    for (size_t g = 0; g < G; ++g) {
      const size_t i = h * G + g;
      rec[g] = m[i];
      rec[G + g] = l[i];
      for (size_t e = 0; e < d; e += 8) _mm256_storeu_ps(rec + 2 * G + g * d + e, _mm256_load_ps(acc + i * d + e));
    }
  }
}

// y[r, (j * G + g) * d + e] from the S partial records of (r, j): each
// rescaled by exp(m_s - max m), summed, divided by the rescaled sum of l.
// One workgroup per (row, KV head).
void lse_attend_merge(const float *part, size_t part_off, float *y, size_t y_off, size_t kv, size_t G, size_t d,
                      size_t S, size_t wg) {
  part += part_off; y += y_off;
  const size_t rec = G * (d + 2), r = wg / kv, j = wg % kv;
  const float *first = part + wg * S * rec;
  float *yr = y + (r * kv + j) * G * d;
  for (size_t g = 0; g < G; ++g) {
    float mx = -__builtin_inff();
    for (size_t sp = 0; sp < S; ++sp) mx = first[sp * rec + g] > mx ? first[sp * rec + g] : mx;
    float total = 0.f;
    for (size_t e = 0; e < d; e += 8) _mm256_storeu_ps(yr + g * d + e, _mm256_setzero_ps());
    for (size_t sp = 0; sp < S; ++sp) {
      const float *p = first + sp * rec;
      if (p[G + g] == 0.f) continue;  // an empty split (fewer positions than splits)
      const float w = exp_neg1(p[g] - mx);
      total += w * p[G + g];
      const __m256 wv = _mm256_set1_ps(w);
      for (size_t e = 0; e < d; e += 8)
        _mm256_storeu_ps(yr + g * d + e, _mm256_fmadd_ps(wv, _mm256_loadu_ps(p + 2 * G + g * d + e),
                                                         _mm256_loadu_ps(yr + g * d + e)));
    }
    const __m256 inv = _mm256_set1_ps(1.f / total);
    for (size_t e = 0; e < d; e += 8) _mm256_storeu_ps(yr + g * d + e, _mm256_mul_ps(inv, _mm256_loadu_ps(yr + g * d + e)));
  }
}

// A block of up to BR consecutive query rows of one slot against KV head j,
// written straight to y: the prompt's rows in prefill. Each chunk of K and V
// is widened once for the block's BR * G query heads; each row reads only
// positions t <= pos[r], and in a sliding layer (W > 0) only t > pos[r] - W. Workgroup wg = (blocks - 1 - block) * kv + j: the
// later (longer) blocks come first, so the short ones fill the end.
#define RF 4096       /* floats of widened K or V per chunk */
#define MAX_QV_D 8192 /* BR * G * d: the block's accumulators (32 KiB) */
#define MAX_S 4096    /* BR * G * ch: the chunk's scores (16 KiB) */
void lse_attend_rows_f16(const float *q, size_t q_off, const uint16_t *cache, size_t c_off, const int64_t *pos,
                         size_t p_off, float *y, size_t y_off, size_t rows, size_t layer, size_t slot, size_t P,
                         size_t T, size_t kv, size_t G, size_t d, size_t BR, size_t W, size_t base, size_t R,
                         size_t wg) {
  q += q_off; cache += c_off; pos += p_off; y += y_off;
  const size_t blocks = (rows + BR - 1) / BR, j = wg % kv, block = blocks - 1 - wg / kv;
  const size_t nq = BR * G;
  if (wg / kv >= blocks || d > MAX_D || d % 8 || nq * d > MAX_QV_D) return;
  const size_t r0 = block * BR, nr = rows - r0 < BR ? rows - r0 : BR;
  size_t ch = RF / d;
  if (ch * nq > MAX_S) ch = MAX_S / nq;
  ch &= ~(size_t)7;  // 32-byte aligned score rows
  if (ch == 0) return;
  const size_t stride = kv * d, qc = kv * G * d;
  const uint16_t *K = cache + ((layer * 2 + 0) * P + slot) * T * stride + j * d;
  const uint16_t *V = cache + ((layer * 2 + 1) * P + slot) * T * stride + j * d;

  float kf[RF + 3 * MAX_D] __attribute__((aligned(32)));  // + 3 rows scores4 may read past n
  float acc[MAX_QV_D] __attribute__((aligned(32)));
  float s[MAX_S + 4] __attribute__((aligned(32)));
  float m[MAX_QV_D / 8], l[MAX_QV_D / 8];
  size_t count[MAX_QV_D / 8], from[MAX_QV_D / 8];  // each row reads positions [from, count)
  const float scale = 1.f / _mm_cvtss_f32(_mm_sqrt_ss(_mm_set_ss((float)d)));
  size_t hi = 0, lo = (size_t)-1;
  for (size_t r = 0; r < nr; ++r) {
    int64_t last = pos[r0 + r];
    if (last < 0) last = 0;
    if (!R && (size_t)last >= T) last = (int64_t)T - 1;  // a ring holds any position mod R
    count[r] = (size_t)last + 1;
    from[r] = W && count[r] > W ? count[r] - W : 0;
    hi = count[r] > hi ? count[r] : hi;
    lo = from[r] < lo ? from[r] : lo;
  }
  for (size_t i = 0; i < nr * G; ++i) {
    m[i] = -__builtin_inff();
    l[i] = 0.f;
    for (size_t e = 0; e < d; e += 8) _mm256_store_ps(acc + i * d + e, _mm256_setzero_ps());
  }
  for (size_t t0 = lo, n; t0 < hi; t0 += n) {
    n = ring_chunk(t0, hi - t0 < ch ? hi - t0 : ch, R);
    const size_t row = ring_row(t0, base, R);
    widen_heads(K + row * stride, stride, n, 1, d, kf, 0);
    for (size_t r = 0; r < nr; ++r) {
      if (count[r] <= t0 || from[r] >= t0 + n) continue;
      const size_t a = from[r] > t0 ? from[r] - t0 : 0;  // the row's first position in this chunk
      const size_t nt = (count[r] - t0 < n ? count[r] - t0 : n) - a;
      scores_heads(q + (r0 + r) * qc + j * G * d, G, kf + a * d, nt, d, scale, s + r * G * ch, ch, NO_AHEAD);
      for (size_t g = 0; g < G; ++g) {
        const size_t i = r * G + g;
        softmax_chunk(s + i * ch, nt, m + i, l + i, acc + i * d, d);
      }
    }
    widen_heads(V + row * stride, stride, n, 1, d, kf, 0);
    for (size_t r = 0; r < nr; ++r) {
      if (count[r] <= t0 || from[r] >= t0 + n) continue;
      const size_t a = from[r] > t0 ? from[r] - t0 : 0;
      const size_t nt = (count[r] - t0 < n ? count[r] - t0 : n) - a;
      mix_heads(s + r * G * ch, G, ch, kf + a * d, nt, d, acc + r * G * d, NO_AHEAD);
    }
  }
  for (size_t r = 0; r < nr; ++r)
    for (size_t g = 0; g < G; ++g) {
      const size_t i = r * G + g;
      const __m256 inv = _mm256_set1_ps(1.f / l[i]);
      float *yr = y + (r0 + r) * qc + (j * G + g) * d;
      for (size_t e = 0; e < d; e += 8) _mm256_storeu_ps(yr + e, _mm256_mul_ps(inv, _mm256_load_ps(acc + i * d + e)));
    }
}

// A prompt's K and V rows (kn, vn: rows x kv x d, f32) into the f16 cache at
// their positions pos[r] in slot `slot` of slab `layer`, rounded to nearest
// even as arith.truncf rounds (what lse_attend_write_f16 stores for decode's
// rows); in a ring, position t goes to row base + t mod R, and of a step
// longer than the ring only its last R rows, the ones that stay. Workgroup
// wg writes rows [wg * per, (wg + 1) * per), in place. The slab is an
// operand, so every layer's write is one export: an MLIR insert per layer,
// its slab a constant, is an executable of its own for iree-compile to
// generate (32 at 1B: docs/kernels.md, "A prompt's cache write").
void lse_kv_write_f16(const float *kn, size_t kn_off, const float *vn, size_t vn_off, uint16_t *cache, size_t c_off,
                      const int64_t *pos, size_t p_off, size_t rows, size_t layer, size_t slot, size_t P, size_t T,
                      size_t kv, size_t d, size_t base, size_t R, size_t per, size_t wg) {
  kn += kn_off; vn += vn_off; cache += c_off; pos += p_off;
  const size_t stride = kv * d, r1 = (wg + 1) * per < rows ? (wg + 1) * per : rows;
  if (slot >= P || stride % 8) return;
  uint16_t *K = cache + ((layer * 2 + 0) * P + slot) * T * stride;
  uint16_t *V = cache + ((layer * 2 + 1) * P + slot) * T * stride;
  for (size_t r = wg * per; r < r1; ++r) {
    if (pos[r] < 0 || (R && r + R < rows) || (!R && (size_t)pos[r] >= T)) continue;
    const size_t at = ring_row((size_t)pos[r], base, R);
    const float *kr = kn + r * stride, *vr = vn + r * stride;
    for (size_t e = 0; e < stride; e += 8) {
      _mm_storeu_si128((__m128i *)(K + at * stride + e), _mm256_cvtps_ph(_mm256_loadu_ps(kr + e), _MM_FROUND_TO_NEAREST_INT));
      _mm_storeu_si128((__m128i *)(V + at * stride + e), _mm256_cvtps_ph(_mm256_loadu_ps(vr + e), _MM_FROUND_TO_NEAREST_INT));
    }
  }
}
