// The block formats LSE keeps (compiler/gguf/reader.py writes them; the
// cpu_kernel_build.py FORMAT_EXPORTS table names the same exports), shared by the
// decode matvecs (lse_qmv.c) and the prompt GEMM (lse_gemm.c).
#ifndef LSE_BLOCKS_H
#define LSE_BLOCKS_H
#include <stddef.h>
#include <stdint.h>
#include <immintrin.h>

// A block format: q `bits` wide (4: two per byte, value 2j in the low nibble;
// 8: one int8 each; 6: q6_k's u = q + 32, a block's 16 in three 32-bit
// words, lse_qmv.c's Q6_POS comment), two's-complement nibbles where sign4 (q4_0), a scale d
// (and an offset m where has_m) per B values. A weight is d * q (+ m), as the
// reference dequantises it. The kernels read q, d and m in lse-compile's
// layout of 16 rows interleaved (compiler/kernel_layout.py; lse_qmv.c
// describes it). d and m are f16, except for the K-quants (ks > 0), whose
// scales keep their file's widths: d is the int8 sub-block scales (ks of
// them a block: q4_k and q5_k's sc, then mn), m the f16 super-block scales
// (ks of them per 256 values: q4_k and q5_k's d, then -dmin; q6_k's d); a
// block's scale is their product, formed in f32 (lse_k_scales).
typedef struct {
  int bits;    /* 4, 6 (q6_k) or 8 */
  int sign4;   /* 4-bit values are two's-complement nibbles (q4_0) */
  int ks;      /* K-quant: super-block scales per 256 values (1 or 2), else 0 */
  int has_m;
  size_t B;    /* values per d: 32, or 16 (q6_k) */
} Fmt;

// X(stem, kind, M or D (with or without an m binding), bits, sign4, ks, has_m, B) for
// each format; formats with one layout share a stem (q5_0 is q8_0's).
#define LSE_BLOCK_FORMATS(X, kind)                                                \
  X(u4, kind, M, 4, 0, 0, 1, 32)   /* q4_1 */                                     \
  X(i8, kind, D, 8, 0, 0, 0, 32)   /* q8_0, and q5_0 kept as int8 */              \
  X(q5_1, kind, M, 8, 0, 0, 1, 32) /* q5_1 kept as int8, with m */                \
  X(q4_0, kind, D, 4, 1, 0, 0, 32) /* q4_0: signed nibbles */                     \
  X(q4_k, kind, M, 4, 0, 2, 1, 32) /* q4_k: int8 sc, mn per 32; f16 d, -dmin */   \
  X(q5_k, kind, M, 8, 0, 2, 1, 32) /* q5_k: 0..31 as int8, scales as q4_k */      \
  X(q6_k, kind, M, 6, 0, 1, 0, 16) /* q6_k: 6-bit, int8 sc per 16, f16 d */

// Bytes per element of the d and m bindings.
#define LSE_D_BYTES(f) ((f).ks ? 1 : 2)
#define LSE_M_BYTES(f) 2

// Block b of group g's 16 scales (d0, d1: rows 0-7, 8-15) and offsets (m0,
// m1, where ks == 2) of a K-quant: the int8 sub-block scale times its f16
// super-block scale, in f32, exact (8 + 11 bits), so the reference's own
// products. d holds per group and block 16 * ks int8 (16 sc, then 16 mn), m
// per group and 256 values 16 * ks f16 (16 d, then 16 of -dmin).
static inline __attribute__((always_inline)) void lse_k_scales(const Fmt *f, const void *d, const void *m,
                                                               size_t g, size_t nb, size_t b, __m256 *d0,
                                                               __m256 *d1, __m256 *m0, __m256 *m1) {
  const size_t per = 256 / f->B;  // blocks a super-block
  const int8_t *sub = (const int8_t *)d + (g * nb + b) * 16 * f->ks;
  const uint16_t *sup = (const uint16_t *)m + (g * (nb / per) + b / per) * 16 * f->ks;
#define LSE_I8F(p) _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)(p))))
#define LSE_H16F(p) _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(p)))
  *d0 = _mm256_mul_ps(LSE_H16F(sup), LSE_I8F(sub));
  *d1 = _mm256_mul_ps(LSE_H16F(sup + 8), LSE_I8F(sub + 8));
  if (f->ks > 1) {
    *m0 = _mm256_mul_ps(LSE_H16F(sup + 16), LSE_I8F(sub + 16));
    *m1 = _mm256_mul_ps(LSE_H16F(sup + 24), LSE_I8F(sub + 24));
  }
#undef LSE_I8F
#undef LSE_H16F
}

// One export lse_<stem>_<kind> per format, calling kind(&f, x, q, d, m, y,
// R, N, K, tile, wg) with the Fmt a constant, so each is compiled for its
// format. Arguments as cpu_kernel_build.py's _matmul_entry passes them: x, q, d,
// [m] (each a base and an element offset), y, then R, N, K, tile, wg.
// The arguments after x (lse_gemm.c's AMX build puts x's split between them)
#define LSE_BLOCK_REST_M                                                                                        \
  const uint8_t *q, size_t q_off, const void *d, size_t d_off, const void *m, size_t m_off, float *y,           \
      size_t y_off, size_t R, size_t N, size_t K, size_t tile, size_t wg
#define LSE_BLOCK_REST_D                                                                                        \
  const uint8_t *q, size_t q_off, const void *d, size_t d_off, float *y, size_t y_off, size_t R, size_t N,      \
      size_t K, size_t tile, size_t wg
#define LSE_BLOCK_ARGS_M const float *x, size_t x_off, LSE_BLOCK_REST_M
#define LSE_BLOCK_ARGS_D const float *x, size_t x_off, LSE_BLOCK_REST_D
#define LSE_BLOCK_PASS_M x, x_off, q, q_off, d, d_off, m, m_off, y, y_off, R, N, K, tile, wg
#define LSE_BLOCK_PASS_D x, x_off, q, q_off, d, d_off, y, y_off, R, N, K, tile, wg
#define LSE_BLOCK_EXPORT(stem, kind, mode, ...) LSE_BLOCK_EXPORT_##mode(lse_##stem##_##kind, kind, __VA_ARGS__)
#define LSE_BLOCK_EXPORT_M(name, kind, ...)                                                                     \
  void name(LSE_BLOCK_ARGS_M) {                                                                                 \
    static const Fmt f = {__VA_ARGS__};                                                                          \
    kind(&f, x + x_off, q + q_off, (const char *)d + d_off * LSE_D_BYTES(f),                                  \
         (const char *)m + m_off * LSE_M_BYTES(f), y + y_off, R, N, K, tile, wg);                              \
  }
#define LSE_BLOCK_EXPORT_D(name, kind, ...)                                                                     \
  void name(LSE_BLOCK_ARGS_D) {                                                                                 \
    static const Fmt f = {__VA_ARGS__};                                                                          \
    kind(&f, x + x_off, q + q_off, (const char *)d + d_off * LSE_D_BYTES(f), 0, y + y_off, R, N, K, tile, wg); \
  }
#endif
