// LSE decode matvec microkernels for GGUF block-quantised weights, f32 activations.
//   y[r, n] = sum_k x[r, k] * w[n, k],  w[n, 32b+l] = d[n,b] * q[n,b,l] + m[n,b]
// Weights are read in GGUF's own block layout (row-major blocks, no repacking):
//   Q4_1: struct { f16 d; f16 m; u8 qs[16]; } 20 B / 32 weights; lane l<16 = qs[l]&15, lane l>=16 = qs[l-16]>>4
//   Q8_0: struct { f16 d; i8 qs[32]; }       34 B / 32 weights; m = 0
// Bare-metal: no libc, no globals, no TLS.  Called once per IREE workgroup;
// workgroup `wg` computes rows n in [wg*tile, min(N, (wg+1)*tile)) for all R rows of x.
// Build: gcc -O3 -march=x86-64-v3 -mf16c -ffreestanding -fno-builtin -fPIC -nostdlib
//            -fno-stack-protector -fno-asynchronous-unwind-tables -c lse_qmv.c -o lse_qmv.o
#include <immintrin.h>
#include <stddef.h>
#include <stdint.h>

#define MAX_R 8
#define MAX_NB 64 /* K <= 2048 */

static inline float hsum256(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

static inline uint32_t ld_u32(const uint8_t *p) {
  uint32_t v; __builtin_memcpy(&v, p, 4); return v;  // lowered to one mov (no libc call)
}
static inline uint16_t ld_u16(const uint8_t *p) {
  uint16_t v; __builtin_memcpy(&v, p, 2); return v;
}

// unpack one Q4_1 block's 32 nibbles into 4 x 8 f32 (lanes 0-7, 8-15, 16-23, 24-31)
#define Q4_UNPACK(blk, q0, q1, q2, q3)                                          \
  __m128i qs_ = _mm_loadu_si128((const __m128i *)((blk) + 4));                   \
  __m128i lo_ = _mm_and_si128(qs_, m0f);                                         \
  __m128i hi_ = _mm_and_si128(_mm_srli_epi16(qs_, 4), m0f);                      \
  __m256 q0 = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(lo_));                     \
  __m256 q1 = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_srli_si128(lo_, 8)));  \
  __m256 q2 = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(hi_));                     \
  __m256 q3 = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_srli_si128(hi_, 8)));

static inline __m256 dot32(const float *xr, __m256 q0, __m256 q1, __m256 q2, __m256 q3) {
  __m256 t = _mm256_mul_ps(q0, _mm256_loadu_ps(xr));
  __m256 u = _mm256_mul_ps(q1, _mm256_loadu_ps(xr + 8));
  t = _mm256_fmadd_ps(q2, _mm256_loadu_ps(xr + 16), t);
  u = _mm256_fmadd_ps(q3, _mm256_loadu_ps(xr + 24), u);
  return _mm256_add_ps(t, u);
}

// xs[r*nb + b] = sum_l x[r, 32b + l]
static inline void block_sums(const float *x, size_t R, size_t K, float *xs) {
  size_t nb = K / 32;
  for (size_t r = 0; r < R; ++r)
    for (size_t b = 0; b < nb; ++b) {
      const float *p = x + r * K + b * 32;
      __m256 s = _mm256_add_ps(_mm256_add_ps(_mm256_loadu_ps(p), _mm256_loadu_ps(p + 8)),
                               _mm256_add_ps(_mm256_loadu_ps(p + 16), _mm256_loadu_ps(p + 24)));
      xs[r * nb + b] = hsum256(s);
    }
}

// ---- Q4_1, one activation row, 4 weight rows at a time (4 independent FMA chains) ----
static void q4_1_r1(const float *restrict x, const uint8_t *restrict w, float *restrict y,
                    size_t K, size_t n0, size_t n1, const float *xs) {
  const __m128i m0f = _mm_set1_epi8(0x0F);
  const size_t nb = K / 32, rb = nb * 20;
  size_t n = n0;
  for (; n + 4 <= n1; n += 4) {
    __m256 acc[4]; float macc[4];
    for (int j = 0; j < 4; ++j) { acc[j] = _mm256_setzero_ps(); macc[j] = 0.f; }
    for (size_t b = 0; b < nb; ++b) {
      const float *xr = x + b * 32;
      for (int j = 0; j < 4; ++j) {
        const uint8_t *blk = w + (n + j) * rb + b * 20;
        __m128 dm = _mm_cvtph_ps(_mm_cvtsi32_si128((int)ld_u32(blk)));  // [d, m, 0, 0]
        Q4_UNPACK(blk, q0, q1, q2, q3)
        acc[j] = _mm256_fmadd_ps(_mm256_broadcastss_ps(dm), dot32(xr, q0, q1, q2, q3), acc[j]);
        macc[j] += _mm_cvtss_f32(_mm_movehdup_ps(dm)) * xs[b];
      }
    }
    for (int j = 0; j < 4; ++j) y[n + j] = hsum256(acc[j]) + macc[j];
  }
  for (; n < n1; ++n) {
    __m256 acc = _mm256_setzero_ps(); float macc = 0.f;
    for (size_t b = 0; b < nb; ++b) {
      const uint8_t *blk = w + n * rb + b * 20;
      __m128 dm = _mm_cvtph_ps(_mm_cvtsi32_si128((int)ld_u32(blk)));
      Q4_UNPACK(blk, q0, q1, q2, q3)
      acc = _mm256_fmadd_ps(_mm256_broadcastss_ps(dm), dot32(x + b * 32, q0, q1, q2, q3), acc);
      macc += _mm_cvtss_f32(_mm_movehdup_ps(dm)) * xs[b];
    }
    y[n] = hsum256(acc) + macc;
  }
}


// ---- Q4_1, one activation row, variant B: x permuted once per workgroup into nibble order so each
// 4-byte word of qs expands to 8 lanes with broadcast + variable shift (no byte shuffles).
// Word j of a block's qs holds, at nibble 2i: lane 4j+i, at nibble 2i+1: lane 16+4j+i.
static void q4_1_r1b(const float *restrict x, const uint8_t *restrict w, float *restrict y,
                     size_t K, size_t n0, size_t n1, const float *xs) {
  const size_t nb = K / 32, rb = nb * 20;
  float xp[MAX_NB * 32] __attribute__((aligned(32)));
  for (size_t b = 0; b < nb; ++b)
    for (int j = 0; j < 4; ++j)
      for (int i = 0; i < 4; ++i) {
        xp[b * 32 + 8 * j + 2 * i] = x[b * 32 + 4 * j + i];
        xp[b * 32 + 8 * j + 2 * i + 1] = x[b * 32 + 16 + 4 * j + i];
      }
  const __m256i sh = _mm256_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28);
  const __m256i mf = _mm256_set1_epi32(15);
#define NIB(blk, j) _mm256_cvtepi32_ps(_mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32((int)ld_u32((blk) + 4 + 4 * (j))), sh), mf))
  size_t n = n0;
  for (; n + 4 <= n1; n += 4) {
    __m256 acc[4]; float macc[4];
    for (int j = 0; j < 4; ++j) { acc[j] = _mm256_setzero_ps(); macc[j] = 0.f; }
    for (size_t b = 0; b < nb; ++b) {
      const float *xb = xp + b * 32;
      __m256 x0 = _mm256_load_ps(xb), x1 = _mm256_load_ps(xb + 8), x2 = _mm256_load_ps(xb + 16), x3 = _mm256_load_ps(xb + 24);
      for (int j = 0; j < 4; ++j) {
        const uint8_t *blk = w + (n + j) * rb + b * 20;
        __m128 dm = _mm_cvtph_ps(_mm_cvtsi32_si128((int)ld_u32(blk)));
        __m256 t = _mm256_mul_ps(NIB(blk, 0), x0);
        __m256 u = _mm256_mul_ps(NIB(blk, 1), x1);
        t = _mm256_fmadd_ps(NIB(blk, 2), x2, t);
        u = _mm256_fmadd_ps(NIB(blk, 3), x3, u);
        acc[j] = _mm256_fmadd_ps(_mm256_broadcastss_ps(dm), _mm256_add_ps(t, u), acc[j]);
        macc[j] += _mm_cvtss_f32(_mm_movehdup_ps(dm)) * xs[b];
      }
    }
    for (int j = 0; j < 4; ++j) y[n + j] = hsum256(acc[j]) + macc[j];
  }
  if (n < n1) q4_1_r1(x, w, y, K, n, n1, xs);
}

// ---- Q4_1, R activation rows (2..8): unpack once per block, reuse for all rows ----
#define Q4_RN(RR)                                                                        \
static void q4_1_r##RR(const float *restrict x, const uint8_t *restrict w,               \
                       float *restrict y, size_t N, size_t K, size_t n0, size_t n1,       \
                       const float *xs) {                                                 \
  const __m128i m0f = _mm_set1_epi8(0x0F);                                               \
  const size_t nb = K / 32, rb = nb * 20;                                                \
  for (size_t n = n0; n < n1; ++n) {                                                     \
    __m256 acc[RR]; float macc[RR];                                                      \
    for (int r = 0; r < RR; ++r) { acc[r] = _mm256_setzero_ps(); macc[r] = 0.f; }        \
    for (size_t b = 0; b < nb; ++b) {                                                    \
      const uint8_t *blk = w + n * rb + b * 20;                                          \
      __m128 dm = _mm_cvtph_ps(_mm_cvtsi32_si128((int)ld_u32(blk)));                     \
      __m256 d = _mm256_broadcastss_ps(dm);                                              \
      float m = _mm_cvtss_f32(_mm_movehdup_ps(dm));                                      \
      Q4_UNPACK(blk, q0, q1, q2, q3)                                                     \
      for (int r = 0; r < RR; ++r) {                                                     \
        acc[r] = _mm256_fmadd_ps(d, dot32(x + r * K + b * 32, q0, q1, q2, q3), acc[r]);  \
        macc[r] += m * xs[r * nb + b];                                                   \
      }                                                                                  \
    }                                                                                    \
    for (int r = 0; r < RR; ++r) y[r * N + n] = hsum256(acc[r]) + macc[r];               \
  }                                                                                      \
}
Q4_RN(2)
Q4_RN(4)
Q4_RN(8)

// Entry point (IREE llvm.bareptr ABI: each memref = base pointer + element offset).
// x: [R, K] f32, w: [N, K/32 * 20] bytes (GGUF Q4_1 blocks), y: [R, N] f32.
void lse_q4_1_matvec(const float *restrict x, size_t x_off, const uint8_t *restrict w,
                     size_t w_off, float *restrict y, size_t y_off, size_t R, size_t N,
                     size_t K, size_t tile, size_t wg) {
  x += x_off; w += w_off; y += y_off;
  size_t n0 = wg * tile, n1 = n0 + tile;
  if (n1 > N) n1 = N;
  if (n0 >= n1) return;
  float xs[MAX_R * MAX_NB];
  for (size_t r0 = 0; r0 < R; r0 += MAX_R) {  // any R; fast paths for 1, 2, 4, 8
    size_t rr = R - r0 < MAX_R ? R - r0 : MAX_R;
    const float *xr = x + r0 * K;
    float *yr = y + r0 * N;
    block_sums(xr, rr, K, xs);
    switch (rr) {
#ifdef LSE_R1_A
      case 1: q4_1_r1(xr, w, yr, K, n0, n1, xs); break;
#else
      case 1: q4_1_r1b(xr, w, yr, K, n0, n1, xs); break;
#endif
      case 2: q4_1_r2(xr, w, yr, N, K, n0, n1, xs); break;
      case 4: q4_1_r4(xr, w, yr, N, K, n0, n1, xs); break;
      case 8: q4_1_r8(xr, w, yr, N, K, n0, n1, xs); break;
      default:
        for (size_t r = 0; r < rr; ++r) q4_1_r1(xr + r * K, w, yr + r * N, K, n0, n1, xs + r * (K / 32));
    }
  }
}

// ---- Q8_0 (GGUF block { f16 d; i8 qs[32]; }, 34 B) ----
#define Q8_UNPACK(blk, q0, q1, q2, q3)                                                   \
  __m256i qs_ = _mm256_loadu_si256((const __m256i *)((blk) + 2));                         \
  __m128i a_ = _mm256_castsi256_si128(qs_), b_ = _mm256_extracti128_si256(qs_, 1);        \
  __m256 q0 = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(a_));                               \
  __m256 q1 = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(a_, 8)));            \
  __m256 q2 = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(b_));                               \
  __m256 q3 = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(b_, 8)));

void lse_q8_0_matvec(const float *restrict x, size_t x_off, const uint8_t *restrict w,
                     size_t w_off, float *restrict y, size_t y_off, size_t R, size_t N,
                     size_t K, size_t tile, size_t wg) {
  x += x_off; w += w_off; y += y_off;
  size_t n0 = wg * tile, n1 = n0 + tile;
  if (n1 > N) n1 = N;
  const size_t nb = K / 32, rb = nb * 34;
  for (size_t r0 = 0; r0 < R; r0 += 4) {
    size_t rr = R - r0 < 4 ? R - r0 : 4;
    const float *xr = x + r0 * K;
    for (size_t n = n0; n < n1; ++n) {
      __m256 acc[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
      for (size_t b = 0; b < nb; ++b) {
        const uint8_t *blk = w + n * rb + b * 34;
        __m256 d = _mm256_set1_ps(_cvtsh_ss(ld_u16(blk)));
        Q8_UNPACK(blk, q0, q1, q2, q3)
        for (size_t r = 0; r < rr; ++r)
          acc[r] = _mm256_fmadd_ps(d, dot32(xr + r * K + b * 32, q0, q1, q2, q3), acc[r]);
      }
      for (size_t r = 0; r < rr; ++r) y[(r0 + r) * N + n] = hsum256(acc[r]);
    }
  }
}
