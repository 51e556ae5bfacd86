// LSE's prompt matmuls over block-format weights, f32 activations (x86-64-v3:
// AVX2, FMA, F16C). Called from IREE dispatches (see cpu_kernels.py) for a
// prompt's rows, where the decode matvecs (lse_qmv.c) would unpack every block
// once per 8 rows:
//   y[r, n] = sum_k x[r, k] * w[n, k],   w[n, 32b + l] = d[n, b] * q[n, b, l] (+ m[n, b])
// Each workgroup owns `tile` output columns (a multiple of 16). Per chunk of
// KC values of k it widens 16 weight rows into an f32 panel laid out k-major
// (16 floats per k: the rows' blocks unpacked, dequantised as d * q + m like
// the reference, then transposed 8 x 8), which stays in L1 while every row of
// x passes over it: 6 rows x 16 columns of sums in 12 registers, one FMA per
// weight per row, as a BLAS microkernel. The panel costs one unpack per weight
// per call, not per row. x is never quantised, so results equal numpy on the
// dequantised weights up to summation order.
// Bare-metal: no libc, no globals; one call per workgroup.
#include <immintrin.h>
#include <stddef.h>
#include <stdint.h>

#define KC 192        /* k per panel chunk: 12 KiB of f32 per panel */
#define MAX_PANELS 4  /* panels per workgroup (tile <= 64 columns, 48 KiB): each 6 rows of x serve all of them */
#define NR 16   /* columns per panel: two vectors */
#define MR 6    /* rows of x per microkernel tile: 12 accumulators + 2 panel vectors + 1 broadcast */

static inline uint32_t ld32(const uint8_t *p) { uint32_t v; __builtin_memcpy(&v, p, 4); return v; }
static inline uint64_t ld64(const uint8_t *p) { uint64_t v; __builtin_memcpy(&v, p, 8); return v; }

// Eight vectors (rows) of eight floats transposed in place: v[i][j] <-> v[j][i].
static inline void transpose8(__m256 *v) {
  __m256 t0 = _mm256_unpacklo_ps(v[0], v[1]), t1 = _mm256_unpackhi_ps(v[0], v[1]);
  __m256 t2 = _mm256_unpacklo_ps(v[2], v[3]), t3 = _mm256_unpackhi_ps(v[2], v[3]);
  __m256 t4 = _mm256_unpacklo_ps(v[4], v[5]), t5 = _mm256_unpackhi_ps(v[4], v[5]);
  __m256 t6 = _mm256_unpacklo_ps(v[6], v[7]), t7 = _mm256_unpackhi_ps(v[6], v[7]);
  __m256 s0 = _mm256_shuffle_ps(t0, t2, 0x44), s1 = _mm256_shuffle_ps(t0, t2, 0xee);
  __m256 s2 = _mm256_shuffle_ps(t1, t3, 0x44), s3 = _mm256_shuffle_ps(t1, t3, 0xee);
  __m256 s4 = _mm256_shuffle_ps(t4, t6, 0x44), s5 = _mm256_shuffle_ps(t4, t6, 0xee);
  __m256 s6 = _mm256_shuffle_ps(t5, t7, 0x44), s7 = _mm256_shuffle_ps(t5, t7, 0xee);
  v[0] = _mm256_permute2f128_ps(s0, s4, 0x20); v[1] = _mm256_permute2f128_ps(s1, s5, 0x20);
  v[2] = _mm256_permute2f128_ps(s2, s6, 0x20); v[3] = _mm256_permute2f128_ps(s3, s7, 0x20);
  v[4] = _mm256_permute2f128_ps(s0, s4, 0x31); v[5] = _mm256_permute2f128_ps(s1, s5, 0x31);
  v[6] = _mm256_permute2f128_ps(s2, s6, 0x31); v[7] = _mm256_permute2f128_ps(s3, s7, 0x31);
}

// Block b of weight row n, dequantised, as four vectors of eight values in
// order. fmt 4: q4_1 (two per byte, even value in the low nibble; d and m);
// fmt 8: q8_0 (int8; d).
static inline void block32(int fmt, const uint8_t *q, const uint16_t *d, const uint16_t *m, size_t n, size_t nb,
                           size_t b, __m256 *v) {
  const __m256 dv = _mm256_set1_ps(_cvtsh_ss(d[n * nb + b]));
  if (fmt == 4) {
    const __m256i sh = _mm256_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28), mf = _mm256_set1_epi32(15);
    const __m256 mv = _mm256_set1_ps(_cvtsh_ss(m[n * nb + b]));
    const uint8_t *p = q + (n * nb + b) * 16;
    for (size_t j = 0; j < 4; ++j) {
      const __m256 qv = _mm256_cvtepi32_ps(_mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32((int)ld32(p + 4 * j)), sh), mf));
      v[j] = _mm256_add_ps(_mm256_mul_ps(dv, qv), mv);
    }
    return;
  }
  const uint8_t *p = q + (n * nb + b) * 32;
  for (size_t j = 0; j < 4; ++j)
    v[j] = _mm256_mul_ps(dv, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_cvtsi64_si128((long long)ld64(p + 8 * j)))));
}

// The q4_1 blocks b of 8 whole rows c0.. into panel rows k = 0..31 (8 floats
// each, NR apart): the 8 x 16 bytes transposed as bytes first (24 unpacks for
// 256 values, where transposing floats took 96), then each byte column widened
// to the 8 rows' two values, dequantised with the rows' d and m as vectors.
static void widen8_u4(const uint8_t *q, const uint16_t *d, const uint16_t *m, size_t c0, size_t nb, size_t b,
                      float *dst) {
  __m128i r[8];
  uint16_t dh[8], mh[8];
  for (size_t i = 0; i < 8; ++i) {
    r[i] = _mm_loadu_si128((const __m128i *)(q + ((c0 + i) * nb + b) * 16));
    dh[i] = d[(c0 + i) * nb + b];
    mh[i] = m[(c0 + i) * nb + b];
  }
  const __m256 dv = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)dh));
  const __m256 mv = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)mh));
  const __m128i t0 = _mm_unpacklo_epi8(r[0], r[1]), t1 = _mm_unpackhi_epi8(r[0], r[1]);
  const __m128i t2 = _mm_unpacklo_epi8(r[2], r[3]), t3 = _mm_unpackhi_epi8(r[2], r[3]);
  const __m128i t4 = _mm_unpacklo_epi8(r[4], r[5]), t5 = _mm_unpackhi_epi8(r[4], r[5]);
  const __m128i t6 = _mm_unpacklo_epi8(r[6], r[7]), t7 = _mm_unpackhi_epi8(r[6], r[7]);
  const __m128i u0 = _mm_unpacklo_epi16(t0, t2), u1 = _mm_unpackhi_epi16(t0, t2);
  const __m128i u2 = _mm_unpacklo_epi16(t1, t3), u3 = _mm_unpackhi_epi16(t1, t3);
  const __m128i u4 = _mm_unpacklo_epi16(t4, t6), u5 = _mm_unpackhi_epi16(t4, t6);
  const __m128i u6 = _mm_unpacklo_epi16(t5, t7), u7 = _mm_unpackhi_epi16(t5, t7);
  // v[j]: byte 2j of rows 0..7, then byte 2j + 1 of rows 0..7
  const __m128i v[8] = {_mm_unpacklo_epi32(u0, u4), _mm_unpackhi_epi32(u0, u4), _mm_unpacklo_epi32(u1, u5),
                        _mm_unpackhi_epi32(u1, u5), _mm_unpacklo_epi32(u2, u6), _mm_unpackhi_epi32(u2, u6),
                        _mm_unpacklo_epi32(u3, u7), _mm_unpackhi_epi32(u3, u7)};
  const __m256i mf = _mm256_set1_epi32(15);
  for (size_t j = 0; j < 8; ++j) {
    const __m256i e0 = _mm256_cvtepu8_epi32(v[j]), e1 = _mm256_cvtepu8_epi32(_mm_srli_si128(v[j], 8));
    float *o = dst + 4 * j * NR;  // values 4j .. 4j + 3 of the block
    _mm256_store_ps(o, _mm256_add_ps(_mm256_mul_ps(dv, _mm256_cvtepi32_ps(_mm256_and_si256(e0, mf))), mv));
    _mm256_store_ps(o + NR, _mm256_add_ps(_mm256_mul_ps(dv, _mm256_cvtepi32_ps(_mm256_srli_epi32(e0, 4))), mv));
    _mm256_store_ps(o + 2 * NR, _mm256_add_ps(_mm256_mul_ps(dv, _mm256_cvtepi32_ps(_mm256_and_si256(e1, mf))), mv));
    _mm256_store_ps(o + 3 * NR, _mm256_add_ps(_mm256_mul_ps(dv, _mm256_cvtepi32_ps(_mm256_srli_epi32(e1, 4))), mv));
  }
}

// panel[k][c] = w[n0 + c, k0 + k] for k < kc (a multiple of 32), c < 16;
// columns at or past N are zero.
static void widen_panel(int fmt, const uint8_t *q, const uint16_t *d, const uint16_t *m, size_t N, size_t K,
                        size_t n0, size_t k0, size_t kc, float *panel) {
  const size_t nb = K / 32;
  for (size_t half = 0; half < NR / 8; ++half) {
    const size_t c0 = n0 + half * 8;
    for (size_t k = 0; k < kc; k += 32) {
      if (fmt == 4 && c0 + 8 <= N) {
        widen8_u4(q, d, m, c0, nb, (k0 + k) / 32, panel + k * NR + half * 8);
        continue;
      }
      __m256 v[4][8];  // [eight values of the block][row]
      for (size_t i = 0; i < 8; ++i) {
        __m256 w[4];
        if (c0 + i < N) {
          block32(fmt, q, d, m, c0 + i, nb, (k0 + k) / 32, w);
        } else {
          w[0] = w[1] = w[2] = w[3] = _mm256_setzero_ps();
        }
        for (size_t j = 0; j < 4; ++j) v[j][i] = w[j];
      }
      for (size_t j = 0; j < 4; ++j) {
        transpose8(v[j]);
        for (size_t i = 0; i < 8; ++i) _mm256_store_ps(panel + (k + 8 * j + i) * NR + half * 8, v[j][i]);
      }
    }
  }
}

// out[i][c] = sum_k x[i * ldx + k] * panel[k][c] for `rows` (1..6) rows and
// 16 columns: the 12 sums named one by one, so they stay in registers; rows is
// a constant in each instance below, so the unused ones vanish.
#define ROW(i, lo, hi)                                                 \
  if (rows > (i)) {                                                    \
    const __m256 xb = _mm256_broadcast_ss(x + (i) * ldx + k);          \
    lo = _mm256_fmadd_ps(xb, p0, lo);                                  \
    hi = _mm256_fmadd_ps(xb, p1, hi);                                  \
  }
#define OUT(i, lo, hi)                                                 \
  if (rows > (i)) {                                                    \
    _mm256_store_ps(out + (i) * NR, lo);                               \
    _mm256_store_ps(out + (i) * NR + 8, hi);                           \
  }
static inline __attribute__((always_inline)) void kernel_x16(const float *x, size_t ldx, const float *panel, size_t kc,
                                                             float *out, const int rows) {
  __m256 a0 = _mm256_setzero_ps(), b0 = a0, a1 = a0, b1 = a0, a2 = a0, b2 = a0, a3 = a0, b3 = a0, a4 = a0, b4 = a0,
         a5 = a0, b5 = a0;
  for (size_t k = 0; k < kc; ++k) {
    const __m256 p0 = _mm256_load_ps(panel + k * NR), p1 = _mm256_load_ps(panel + k * NR + 8);
    ROW(0, a0, b0) ROW(1, a1, b1) ROW(2, a2, b2) ROW(3, a3, b3) ROW(4, a4, b4) ROW(5, a5, b5)
  }
  OUT(0, a0, b0) OUT(1, a1, b1) OUT(2, a2, b2) OUT(3, a3, b3) OUT(4, a4, b4) OUT(5, a5, b5)
}
static void kernel6(const float *x, size_t ldx, const float *p, size_t kc, float *out) { kernel_x16(x, ldx, p, kc, out, 6); }
static void kernel_tail(const float *x, size_t ldx, const float *p, size_t kc, float *out, size_t rows) {
  switch (rows) {
    case 1: kernel_x16(x, ldx, p, kc, out, 1); break;
    case 2: kernel_x16(x, ldx, p, kc, out, 2); break;
    case 3: kernel_x16(x, ldx, p, kc, out, 3); break;
    case 4: kernel_x16(x, ldx, p, kc, out, 4); break;
    default: kernel_x16(x, ldx, p, kc, out, 5); break;
  }
}

static void gemm(int fmt, const float *x, const uint8_t *q, const uint16_t *d, const uint16_t *m, float *y, size_t R,
                 size_t N, size_t K, size_t tile_cols, size_t wg) {
  float panels[MAX_PANELS * KC * NR] __attribute__((aligned(32)));
  float out[MR * NR] __attribute__((aligned(32)));
  const size_t start = wg * tile_cols, end = start + tile_cols < N ? start + tile_cols : N;
  if (start >= end || tile_cols > MAX_PANELS * NR) return;
  const size_t npanels = (end - start + NR - 1) / NR;
  // The panels read 16 rows' blocks side by side, more streams than the
  // hardware prefetchers follow: fetch the workgroup's rows (<= 64 rows, 60
  // KiB at K = 1536) into L2 up front, as many misses in flight as it takes.
  const size_t nb = K / 32, qrow = fmt == 4 ? K / 2 : K;
  for (size_t n = start; n < end; ++n) {
    for (size_t b = 0; b < qrow; b += 64) _mm_prefetch((const char *)(q + n * qrow + b), _MM_HINT_T1);
    for (size_t b = 0; b < nb * 2; b += 64) {
      _mm_prefetch((const char *)(d + n * nb) + b, _MM_HINT_T1);
      if (fmt == 4) _mm_prefetch((const char *)(m + n * nb) + b, _MM_HINT_T1);
    }
  }
  for (size_t k0 = 0; k0 < K; k0 += KC) {
    const size_t kc = K - k0 < KC ? K - k0 : KC;
    for (size_t p = 0; p < npanels; ++p) widen_panel(fmt, q, d, m, N, K, start + p * NR, k0, kc, panels + p * KC * NR);
    for (size_t r = 0; r < R; r += MR) {
      const size_t rows = R - r < MR ? R - r : MR;
      const float *xr = x + r * K + k0;  // up to 6 rows of x: in L1 for every panel
      for (size_t p = 0; p < npanels; ++p) {
        const size_t n0 = start + p * NR, cols = end - n0 < NR ? end - n0 : NR;
        if (rows == MR) {
          kernel6(xr, K, panels + p * KC * NR, kc, out);
        } else {
          kernel_tail(xr, K, panels + p * KC * NR, kc, out, rows);
        }
        for (size_t i = 0; i < rows; ++i) {
          float *yr = y + (r + i) * N + n0;
          if (cols == NR && k0 == 0) {
            _mm256_storeu_ps(yr, _mm256_load_ps(out + i * NR));
            _mm256_storeu_ps(yr + 8, _mm256_load_ps(out + i * NR + 8));
          } else if (cols == NR) {
            _mm256_storeu_ps(yr, _mm256_add_ps(_mm256_loadu_ps(yr), _mm256_load_ps(out + i * NR)));
            _mm256_storeu_ps(yr + 8, _mm256_add_ps(_mm256_loadu_ps(yr + 8), _mm256_load_ps(out + i * NR + 8)));
          } else {
            for (size_t c = 0; c < cols; ++c) yr[c] = k0 == 0 ? out[i * NR + c] : yr[c] + out[i * NR + c];
          }
        }
      }
    }
  }
}

// The same arguments as lse_u4_matvec / lse_i8_matvec (one export shape for both).
void lse_u4_gemm(const float *x, size_t x_off, const uint8_t *q, size_t q_off, const uint16_t *d, size_t d_off,
                 const uint16_t *m, size_t m_off, float *y, size_t y_off, size_t R, size_t N, size_t K, size_t tile,
                 size_t wg) {
  gemm(4, x + x_off, q + q_off, d + d_off, m + m_off, y + y_off, R, N, K, tile, wg);
}

void lse_i8_gemm(const float *x, size_t x_off, const int8_t *q, size_t q_off, const uint16_t *d, size_t d_off,
                 float *y, size_t y_off, size_t R, size_t N, size_t K, size_t tile, size_t wg) {
  gemm(8, x + x_off, (const uint8_t *)(q + q_off), d + d_off, 0, y + y_off, R, N, K, tile, wg);
}
