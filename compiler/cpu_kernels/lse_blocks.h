// The block formats LSE keeps (compiler/gguf/reader.py writes them; the
// cpu_kernel_build.py FORMAT_EXPORTS table names the same exports), shared by the
// decode matvecs (lse_qmv.c) and the prompt GEMM (lse_gemm.c).
#ifndef LSE_BLOCKS_H
#define LSE_BLOCKS_H
#include <stddef.h>
#include <stdint.h>

// A block format: q `bits` wide (4: two per byte, value 2j in the low nibble;
// 8: one int8 each), two's-complement nibbles where sign4 (q4_0), a scale d
// (and an offset m where has_m) per B values, f32 where f32 (the K-quants),
// else f16. A weight is d * q (+ m), as the reference dequantises it. The
// kernels read q, d and m in lse-compile's layout of 16 rows interleaved
// (compiler/kernel_layout.py; lse_qmv.c describes it).
typedef struct {
  int bits;    /* 4 or 8 */
  int sign4;   /* 4-bit values are two's-complement nibbles (q4_0) */
  int f32;     /* d and m are f32 (the K-quants), else f16 */
  int has_m;
  size_t B;    /* values per d: 32, or 16 (q6_k) */
} Fmt;

// X(stem, kind, M or D (with or without m), bits, sign4, f32, has_m, B) for
// each format; formats with one layout share a stem (q5_0 is q8_0's).
#define LSE_BLOCK_FORMATS(X, kind)                                                \
  X(u4, kind, M, 4, 0, 0, 1, 32)   /* q4_1 */                                     \
  X(i8, kind, D, 8, 0, 0, 0, 32)   /* q8_0, and q5_0 kept as int8 */              \
  X(q5_1, kind, M, 8, 0, 0, 1, 32) /* q5_1 kept as int8, with m */                \
  X(q4_0, kind, D, 4, 1, 0, 0, 32) /* q4_0: signed nibbles */                     \
  X(q4_k, kind, M, 4, 0, 1, 1, 32) /* q4_k: f32 d and m per 32 */                 \
  X(q5_k, kind, M, 8, 0, 1, 1, 32) /* q5_k: 0..31 as int8 */                      \
  X(q6_k, kind, D, 8, 0, 1, 0, 16) /* q6_k: -32..31 as int8, d per 16 */

// One export lse_<stem>_<kind> per format, calling kind(&f, x, q, d, m, y,
// R, N, K, tile, wg) with the Fmt a constant, so each is compiled for its
// format. Arguments as cpu_kernel_build.py's _matmul_entry passes them: x, q, d,
// [m] (each a base and an element offset), y, then R, N, K, tile, wg.
#define LSE_BLOCK_ARGS_M                                                                                        \
  const float *x, size_t x_off, const uint8_t *q, size_t q_off, const void *d, size_t d_off, const void *m,       \
      size_t m_off, float *y, size_t y_off, size_t R, size_t N, size_t K, size_t tile, size_t wg
#define LSE_BLOCK_ARGS_D                                                                                        \
  const float *x, size_t x_off, const uint8_t *q, size_t q_off, const void *d, size_t d_off, float *y,           \
      size_t y_off, size_t R, size_t N, size_t K, size_t tile, size_t wg
#define LSE_BLOCK_PASS_M x, x_off, q, q_off, d, d_off, m, m_off, y, y_off, R, N, K, tile, wg
#define LSE_BLOCK_PASS_D x, x_off, q, q_off, d, d_off, y, y_off, R, N, K, tile, wg
#define LSE_BLOCK_EXPORT(stem, kind, mode, ...) LSE_BLOCK_EXPORT_##mode(lse_##stem##_##kind, kind, __VA_ARGS__)
#define LSE_BLOCK_EXPORT_M(name, kind, ...)                                                                     \
  void name(LSE_BLOCK_ARGS_M) {                                                                                 \
    static const Fmt f = {__VA_ARGS__};                                                                          \
    const size_t e = f.f32 ? 4 : 2;                                                                             \
    kind(&f, x + x_off, q + q_off, (const char *)d + d_off * e, (const char *)m + m_off * e, y + y_off, R, N, K, \
         tile, wg);                                                                                             \
  }
#define LSE_BLOCK_EXPORT_D(name, kind, ...)                                                                     \
  void name(LSE_BLOCK_ARGS_D) {                                                                                 \
    static const Fmt f = {__VA_ARGS__};                                                                          \
    kind(&f, x + x_off, q + q_off, (const char *)d + d_off * (f.f32 ? 4 : 2), 0, y + y_off, R, N, K, tile, wg); \
  }
#endif
