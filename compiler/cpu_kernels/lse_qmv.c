// LSE's decode matvecs over block-format weights, f32 activations (x86-64-v3:
// AVX2, FMA, F16C). Called from IREE dispatches (see cpu_kernels.py):
//   y[r, n] = sum_k x[r, k] * w[n, k],   w[n, 32b + l] = d[n, b] * q[n, b, l] (+ m[n, b])
// in the layout lse-import writes (compiler/weights.py): q4 two values per byte
// (value 2j in the low nibble, IREE's i4 order), q8 int8, d and m f16 per
// block of 32. x is never quantised: every product is an f32 FMA, so results
// equal numpy on the dequantised weights up to summation order.
// Bare-metal: no libc, no globals; one call per workgroup, which computes the
// rows n in [wg * tile, min(N, (wg + 1) * tile)) for all R rows of x.
#include <immintrin.h>
#include <stddef.h>
#include <stdint.h>

#define MAX_R 8
#define MAX_NB 128 /* K <= 4096: the emitter checks */

static inline float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}
static inline uint32_t ld32(const uint8_t *p) { uint32_t v; __builtin_memcpy(&v, p, 4); return v; }
static inline float h2f(uint16_t h) { return _cvtsh_ss(h); }

// 32 values of a q4 block in order: each 32-bit word holds 8 values, value i
// of the word in bits 4i..4i+3 (IREE's i4 order), so a variable shift by
// 0, 4, ..., 28 and a mask give them in order.
#define U4_BLOCK(p, q0, q1, q2, q3)                                              \
  __m256 q0 = _mm256_cvtepi32_ps(_mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32((int)ld32(p)), sh), mf));      \
  __m256 q1 = _mm256_cvtepi32_ps(_mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32((int)ld32((p) + 4)), sh), mf)); \
  __m256 q2 = _mm256_cvtepi32_ps(_mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32((int)ld32((p) + 8)), sh), mf)); \
  __m256 q3 = _mm256_cvtepi32_ps(_mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32((int)ld32((p) + 12)), sh), mf));

#define I8_BLOCK(p, q0, q1, q2, q3)                                               \
  __m256i b_ = _mm256_loadu_si256((const __m256i *)(p));                          \
  __m128i lo_ = _mm256_castsi256_si128(b_), hi_ = _mm256_extracti128_si256(b_, 1); \
  __m256 q0 = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(lo_));                      \
  __m256 q1 = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(lo_, 8)));   \
  __m256 q2 = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(hi_));                      \
  __m256 q3 = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(hi_, 8)));

static inline __m256 dot32(const float *x, __m256 q0, __m256 q1, __m256 q2, __m256 q3) {
  __m256 t = _mm256_mul_ps(q0, _mm256_loadu_ps(x));
  __m256 u = _mm256_mul_ps(q1, _mm256_loadu_ps(x + 8));
  t = _mm256_fmadd_ps(q2, _mm256_loadu_ps(x + 16), t);
  u = _mm256_fmadd_ps(q3, _mm256_loadu_ps(x + 24), u);
  return _mm256_add_ps(t, u);
}

static void block_sums(const float *x, size_t R, size_t K, float *xs) {
  size_t nb = K / 32;
  for (size_t r = 0; r < R; ++r)
    for (size_t b = 0; b < nb; ++b) {
      const float *p = x + r * K + b * 32;
      xs[r * nb + b] = hsum(_mm256_add_ps(_mm256_add_ps(_mm256_loadu_ps(p), _mm256_loadu_ps(p + 8)),
                                          _mm256_add_ps(_mm256_loadu_ps(p + 16), _mm256_loadu_ps(p + 24))));
    }
}

// q4 with f16 d and m (Q4_1). One row of x: each weight row is read front
// to back (one sequential stream), two accumulators over alternate blocks;
// the row's scales are widened to f32 eight at a time, and its offsets'
// contribution is one dot product with the block sums.
static void u4_r1(const float *x, const uint8_t *q, const uint16_t *d, const uint16_t *m, float *y,
                  size_t K, size_t n0, size_t n1, const float *xs) {
  const __m256i sh = _mm256_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28), mf = _mm256_set1_epi32(15);
  const size_t nb = K / 32, qrow = K / 2;
  float dv[MAX_NB] __attribute__((aligned(32)));
  for (size_t n = n0; n < n1; ++n) {
    const uint16_t *dn = d + n * nb, *mn = m + n * nb;
    __m256 mdot = _mm256_setzero_ps();
    size_t b = 0;
    for (; b + 8 <= nb; b += 8) {
      _mm256_store_ps(dv + b, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(dn + b))));
      mdot = _mm256_fmadd_ps(_mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(mn + b))), _mm256_loadu_ps(xs + b), mdot);
    }
    float mtail = 0.f;
    for (; b < nb; ++b) { dv[b] = h2f(dn[b]); mtail += h2f(mn[b]) * xs[b]; }
    const uint8_t *qn = q + n * qrow;
    __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
    b = 0;
    for (; b + 2 <= nb; b += 2) {
      const uint8_t *p = qn + b * 16;
      U4_BLOCK(p, q0, q1, q2, q3)
      acc0 = _mm256_fmadd_ps(_mm256_broadcast_ss(dv + b), dot32(x + b * 32, q0, q1, q2, q3), acc0);
      const uint8_t *p2 = p + 16;
      U4_BLOCK(p2, r0, r1, r2, r3)
      acc1 = _mm256_fmadd_ps(_mm256_broadcast_ss(dv + b + 1), dot32(x + b * 32 + 32, r0, r1, r2, r3), acc1);
    }
    if (b < nb) {
      const uint8_t *p = qn + b * 16;
      U4_BLOCK(p, q0, q1, q2, q3)
      acc0 = _mm256_fmadd_ps(_mm256_broadcast_ss(dv + b), dot32(x + b * 32, q0, q1, q2, q3), acc0);
    }
    y[n] = hsum(_mm256_add_ps(acc0, acc1)) + hsum(mdot) + mtail;
  }
}

// Several rows of x: each block is unpacked once and used for every row.
static void u4_rn(const float *x, const uint8_t *q, const uint16_t *d, const uint16_t *m, float *y,
                  size_t R, size_t N, size_t K, size_t n0, size_t n1, const float *xs) {
  const __m256i sh = _mm256_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28), mf = _mm256_set1_epi32(15);
  const size_t nb = K / 32, qrow = K / 2;
  for (size_t n = n0; n < n1; ++n) {
    __m256 acc[MAX_R];
    float macc[MAX_R];
    for (size_t r = 0; r < R; ++r) { acc[r] = _mm256_setzero_ps(); macc[r] = 0.f; }
    for (size_t b = 0; b < nb; ++b) {
      const uint8_t *p = q + n * qrow + b * 16;
      __m256 dv = _mm256_set1_ps(h2f(d[n * nb + b]));
      float mv = h2f(m[n * nb + b]);
      U4_BLOCK(p, q0, q1, q2, q3)
      for (size_t r = 0; r < R; ++r) {
        acc[r] = _mm256_fmadd_ps(dv, dot32(x + r * K + b * 32, q0, q1, q2, q3), acc[r]);
        macc[r] += mv * xs[r * nb + b];
      }
    }
    for (size_t r = 0; r < R; ++r) y[r * N + n] = hsum(acc[r]) + macc[r];
  }
}

void lse_u4_matvec(const float *x, size_t x_off, const uint8_t *q, size_t q_off, const uint16_t *d,
                   size_t d_off, const uint16_t *m, size_t m_off, float *y, size_t y_off, size_t R,
                   size_t N, size_t K, size_t tile, size_t wg) {
  x += x_off; q += q_off; d += d_off; m += m_off; y += y_off;
  size_t n0 = wg * tile, n1 = n0 + tile < N ? n0 + tile : N;
  if (n0 >= n1) return;
  float xs[MAX_R * MAX_NB];
  for (size_t r0 = 0; r0 < R; r0 += MAX_R) {
    size_t rr = R - r0 < MAX_R ? R - r0 : MAX_R;
    block_sums(x + r0 * K, rr, K, xs);
    if (rr == 1)
      u4_r1(x + r0 * K, q, d, m, y + r0 * N, K, n0, n1, xs);
    else
      u4_rn(x + r0 * K, q, d, m, y + r0 * N, rr, N, K, n0, n1, xs);
  }
}

// q8 with an f16 d and no offset (Q8_0), one row of x: like u4_r1.
static void i8_r1(const float *x, const int8_t *q, const uint16_t *d, float *y, size_t K, size_t n0, size_t n1) {
  const size_t nb = K / 32;
  float dv[MAX_NB] __attribute__((aligned(32)));
  for (size_t n = n0; n < n1; ++n) {
    const uint16_t *dn = d + n * nb;
    size_t b = 0;
    for (; b + 8 <= nb; b += 8) _mm256_store_ps(dv + b, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(dn + b))));
    for (; b < nb; ++b) dv[b] = h2f(dn[b]);
    const int8_t *qn = q + n * K;
    __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
    b = 0;
    for (; b + 2 <= nb; b += 2) {
      const int8_t *p = qn + b * 32;
      I8_BLOCK(p, q0, q1, q2, q3)
      acc0 = _mm256_fmadd_ps(_mm256_broadcast_ss(dv + b), dot32(x + b * 32, q0, q1, q2, q3), acc0);
      {  /* the next block into the second accumulator: its own scope for the macro's temporaries */
        const int8_t *p2 = p + 32;
        I8_BLOCK(p2, r0, r1, r2, r3)
        acc1 = _mm256_fmadd_ps(_mm256_broadcast_ss(dv + b + 1), dot32(x + b * 32 + 32, r0, r1, r2, r3), acc1);
      }
    }
    if (b < nb) {
      const int8_t *p = qn + b * 32;
      I8_BLOCK(p, q0, q1, q2, q3)
      acc0 = _mm256_fmadd_ps(_mm256_broadcast_ss(dv + b), dot32(x + b * 32, q0, q1, q2, q3), acc0);
    }
    y[n] = hsum(_mm256_add_ps(acc0, acc1));
  }
}

// q8 with an f16 d and no offset (Q8_0).
void lse_i8_matvec(const float *x, size_t x_off, const int8_t *q, size_t q_off, const uint16_t *d,
                   size_t d_off, float *y, size_t y_off, size_t R, size_t N, size_t K, size_t tile,
                   size_t wg) {
  x += x_off; q += q_off; d += d_off; y += y_off;
  size_t n0 = wg * tile, n1 = n0 + tile < N ? n0 + tile : N;
  const size_t nb = K / 32;
  if (R == 1) {
    i8_r1(x, q, d, y, K, n0, n1);
    return;
  }
  for (size_t r0 = 0; r0 < R; r0 += MAX_R) {
    size_t rr = R - r0 < MAX_R ? R - r0 : MAX_R;
    const float *xr = x + r0 * K;
    for (size_t n = n0; n < n1; ++n) {
      __m256 acc[MAX_R];
      for (size_t r = 0; r < rr; ++r) acc[r] = _mm256_setzero_ps();
      for (size_t b = 0; b < nb; ++b) {
        const int8_t *p = q + n * K + b * 32;
        __m256 dv = _mm256_set1_ps(h2f(d[n * nb + b]));
        I8_BLOCK(p, q0, q1, q2, q3)
        for (size_t r = 0; r < rr; ++r) acc[r] = _mm256_fmadd_ps(dv, dot32(xr + r * K + b * 32, q0, q1, q2, q3), acc[r]);
      }
      for (size_t r = 0; r < rr; ++r) y[(r0 + r) * N + n] = hsum(acc[r]);
    }
  }
}
