// LSE's prompt matmuls over block-format weights, f32 activations (x86-64-v3:
// AVX2, FMA, F16C). Called from IREE dispatches (see cpu_kernel_build.py) for a
// prompt's rows, where the decode matvecs (lse_qmv.c) would unpack every block
// once per 8 rows:
//   y[r, n] = sum_k x[r, k] * w[n, k],   w[n, 32b + l] = d[n, b] * q[n, b, l] (+ m[n, b])
// Each workgroup owns `tile` output columns (a multiple of 16). Per chunk of
// KC values of k it widens one group of 16 weight rows of lse-compile's
// interleaved layout (lse_qmv.c) into an f32 panel laid out k-major (16
// floats per k, as the layout's runs already are: each run widened and
// dequantised as d * q + m like the reference), which stays in L1 while every row of
// x passes over it: 6 rows x 16 columns of sums in 12 registers, one FMA per
// weight per row, as a BLAS microkernel. The panel costs one unpack per weight
// per call, not per row. x is never quantised, so results equal numpy on the
// dequantised weights up to summation order.
// Bare-metal: no libc, no globals; one call per workgroup.
#include <immintrin.h>
#include <stddef.h>
#include <stdint.h>

#include "lse_blocks.h"

// Inlined into each format's export, where its Fmt is a constant.
#define INLINE static inline __attribute__((always_inline))
#define KC 192        /* k per panel chunk: 12 KiB of f32 per panel */
#define MAX_PANELS 4  /* panels per workgroup (tile <= 64 columns, 48 KiB): each 6 rows of x serve all of them */
#define NR 16   /* columns per panel: two vectors */
#define MR 6    /* rows of x per microkernel tile: 12 accumulators + 2 panel vectors + 1 broadcast */


// 16 f16 scales of a group's block as two vectors.
INLINE void scales16(const void *p, size_t i, __m256 *lo, __m256 *hi) {
  *lo = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)((const uint16_t *)p + i)));
  *hi = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)((const uint16_t *)p + i + 8)));
}

// Eight values widened to 32-bit lanes (4-bit: one nibble of 8 bytes,
// q4_0's two's complement) as the f32 weights d q (+ m), as the reference
// dequantises them.
INLINE __m256 dequant8(const Fmt *f, __m256i v, __m256 d, __m256 m) {
  if (f->sign4) v = _mm256_sub_epi32(_mm256_xor_si256(v, _mm256_set1_epi32(8)), _mm256_set1_epi32(8));
  const __m256 w = _mm256_mul_ps(d, _mm256_cvtepi32_ps(v));
  return f->has_m ? _mm256_add_ps(w, m) : w;
}

// Block b of interleaved group g (lse_qmv.c: a run of 16 bytes for each
// byte of a row's block, holding that byte of the 16 rows) into panel rows
// k = 0..B-1 of 16 floats: a 4-bit run widens to its rows' values 2j and
// 2j + 1, an 8-bit run to value l.
// widen_vals: the block's values with the scales given (d0/m0: rows 0-7,
// d1/m1: rows 8-15; q6_k takes m0 for both), so the AMX GEMM gets a block's
// integers (d 1, m 0) or Q6_K's sc * q through the same unpack.
INLINE void widen_vals(const Fmt *f, const uint8_t *q, size_t blk, __m256 d0, __m256 d1, __m256 m0, __m256 m1,
                       float *dst) {
  if (f->bits == 6) {  // q6_k: three runs of 16 rows' 32-bit words A, B, C (lse_qmv.c's Q6_POS comment)
    const uint8_t *p = q + blk * 12;
    /* value v < 12: word v / 4 at 0, 6, 12, then 26 (C: 24); 12-14: words 0-2 at 18; 15 from the spare pairs */
    const __m256i f6 = _mm256_set1_epi32(0x3f), k32 = _mm256_set1_epi32(32);
    for (size_t h = 0; h < 2; ++h) { /* rows 0-7, 8-15 */
      __m256i w[3];
      for (size_t k = 0; k < 3; ++k) w[k] = _mm256_loadu_si256((const __m256i *)(p + k * 64 + h * 32));
      const __m256 dh = h ? d1 : d0;
      for (size_t v = 0; v < 15; ++v) {
        const size_t wi = v < 12 ? v / 4 : v - 12, at = v >= 12 ? 18 : v % 4 < 3 ? 6 * (v % 4) : v == 11 ? 24 : 26;
        const __m256i u = _mm256_and_si256(_mm256_srli_epi32(w[wi], (int)at), f6);
        _mm256_store_ps(dst + v * NR + h * 8, dequant8(f, _mm256_sub_epi32(u, k32), dh, m0));
      }
      const __m256i u15 = _mm256_or_si256(
          _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi32(w[0], 24), _mm256_set1_epi32(3)),
                          _mm256_and_si256(_mm256_srli_epi32(w[1], 22), _mm256_set1_epi32(12))),
          _mm256_slli_epi32(_mm256_srli_epi32(w[2], 30), 4));
      _mm256_store_ps(dst + 15 * NR + h * 8, dequant8(f, _mm256_sub_epi32(u15, k32), dh, m0));
    }
    return;
  }
  if (f->bits == 8) {
    for (size_t l = 0; l < f->B; ++l) {
      const __m128i u = _mm_loadu_si128((const __m128i *)(q + blk * f->B + l * 16));
      _mm256_store_ps(dst + l * NR, dequant8(f, _mm256_cvtepi8_epi32(u), d0, m0));
      _mm256_store_ps(dst + l * NR + 8, dequant8(f, _mm256_cvtepi8_epi32(_mm_srli_si128(u, 8)), d1, m1));
    }
    return;
  }
  const __m256i mf = _mm256_set1_epi32(15);
  for (size_t j = 0; j < 16; ++j) {
    const __m128i u = _mm_loadu_si128((const __m128i *)(q + blk * 16 + j * 16));
    const __m256i e0 = _mm256_cvtepu8_epi32(u), e1 = _mm256_cvtepu8_epi32(_mm_srli_si128(u, 8));
    float *o = dst + 2 * j * NR;
    _mm256_store_ps(o, dequant8(f, _mm256_and_si256(e0, mf), d0, m0));
    _mm256_store_ps(o + 8, dequant8(f, _mm256_and_si256(e1, mf), d1, m1));
    _mm256_store_ps(o + NR, dequant8(f, _mm256_srli_epi32(e0, 4), d0, m0));
    _mm256_store_ps(o + NR + 8, dequant8(f, _mm256_srli_epi32(e1, 4), d1, m1));
  }
}

INLINE void widen16(const Fmt *f, const uint8_t *q, const void *d, const void *m, size_t g, size_t nb, size_t b,
                    float *dst) {
  const size_t blk = (g * nb + b) * 16;
  __m256 d0, d1, m0 = _mm256_setzero_ps(), m1 = m0;
  if (f->ks) {
    lse_k_scales(f, d, m, g, nb, b, &d0, &d1, &m0, &m1);
  } else {
    scales16(d, blk, &d0, &d1);
    if (f->has_m) scales16(m, blk, &m0, &m1);
  }
  widen_vals(f, q, blk, d0, d1, m0, m1, dst);
}

// panel[k][c] = w[n0 + c, k0 + k] for k < kc (a multiple of 32), c < 16, from
// interleaved group n0 / 16 (n0 is a multiple of 16); columns at or past N
// are the layout's zero rows.
INLINE void widen_panel(const Fmt *f, const uint8_t *q, const void *d, const void *m, size_t K, size_t n0, size_t k0,
                        size_t kc, float *panel) {
  for (size_t k = 0; k < kc; k += f->B) widen16(f, q, d, m, n0 / NR, K / f->B, (k0 + k) / f->B, panel + k * NR);
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
INLINE void kernel_x16(const float *x, size_t ldx, const float *panel, size_t kc, float *out, const int rows) {
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

// `rows` (1..6) rows of x (xr: row r's chunk) over the workgroup's panels
// into y's rows from yr0 (columns start..end), one panel at a time.
INLINE void rows_ymm(const float *xr, size_t K, const float *panels, size_t npanels, size_t kc, float *yr0, size_t N,
                     size_t start, size_t end, int first, size_t rows) {
  float out[MR * NR] __attribute__((aligned(32)));
  for (size_t p = 0; p < npanels; ++p) {
    const size_t n0 = start + p * NR, cols = end - n0 < NR ? end - n0 : NR;
    if (rows == MR) {
      kernel6(xr, K, panels + p * KC * NR, kc, out);
    } else {
      kernel_tail(xr, K, panels + p * KC * NR, kc, out, rows);
    }
    for (size_t i = 0; i < rows; ++i) {
      float *yr = yr0 + i * N + n0;
      if (cols == NR && first) {
        _mm256_storeu_ps(yr, _mm256_load_ps(out + i * NR));
        _mm256_storeu_ps(yr + 8, _mm256_load_ps(out + i * NR + 8));
      } else if (cols == NR) {
        _mm256_storeu_ps(yr, _mm256_add_ps(_mm256_loadu_ps(yr), _mm256_load_ps(out + i * NR)));
        _mm256_storeu_ps(yr + 8, _mm256_add_ps(_mm256_loadu_ps(yr + 8), _mm256_load_ps(out + i * NR + 8)));
      } else {
        for (size_t c = 0; c < cols; ++c) yr[c] = first ? out[i * NR + c] : yr[c] + out[i * NR + c];
      }
    }
  }
}

#ifdef __AVX512F__
// AVX-512 (x86-64-v4): each panel's k-row of 16 floats is one zmm, so up to ZP
// panels side by side take 6 rows x 64 columns of sums in 24 of the 32
// registers, 4 panel loads and 6 broadcasts a k for 24 FMAs, where the AVX2
// kernel needs 2 loads and 1 broadcast for 2 FMAs. Every column's sum runs over
// k in the same order, one FMA at a time from zero per chunk, and is added to y
// as the AVX2 kernel adds it, so both builds give the same bits. The sums go
// straight into y (stored on the first chunk, added after), a ragged last
// panel through a lane mask.
#define ZMM_GEMM
#define ZP 4  /* panels per AVX-512 microkernel */
INLINE void kernel_z(const float *x, size_t ldx, const float *panel, size_t kc, float *y, size_t ldy, size_t cols,
                     int first, const int rows, const int np) {
  __m512 acc[MR][ZP];
#pragma GCC unroll 6
  for (int i = 0; i < rows; ++i)
#pragma GCC unroll 4
    for (int j = 0; j < np; ++j) acc[i][j] = _mm512_setzero_ps();
  for (size_t k = 0; k < kc; ++k) {
    __m512 p[ZP];
#pragma GCC unroll 4
    for (int j = 0; j < np; ++j) p[j] = _mm512_load_ps(panel + j * KC * NR + k * NR);
#pragma GCC unroll 6
    for (int i = 0; i < rows; ++i) {
      const __m512 xb = _mm512_set1_ps(x[i * ldx + k]);
#pragma GCC unroll 4
      for (int j = 0; j < np; ++j) acc[i][j] = _mm512_fmadd_ps(xb, p[j], acc[i][j]);
    }
  }
#pragma GCC unroll 4
  for (int j = 0; j < np; ++j) {
    const size_t c = cols > (size_t)j * NR ? cols - (size_t)j * NR : 0;
    const __mmask16 lanes = c >= NR ? (__mmask16)0xffff : (__mmask16)((1u << c) - 1);
#pragma GCC unroll 6
    for (int i = 0; i < rows; ++i) {
      float *yr = y + i * ldy + j * NR;
      const __m512 v = first ? acc[i][j] : _mm512_add_ps(_mm512_maskz_loadu_ps(lanes, yr), acc[i][j]);
      _mm512_mask_storeu_ps(yr, lanes, v);
    }
  }
}
// One instance per (rows, panels): both constants, so the loops unroll and the sums stay in registers.
#define ZCASE(r, n) \
  case (r) * 8 + (n): kernel_z(x, ldx, panel, kc, y, ldy, cols, first, r, n); break;
#define ZROWS(r) ZCASE(r, 1) ZCASE(r, 2) ZCASE(r, 3) ZCASE(r, 4)
static void kernel_zmm(const float *x, size_t ldx, const float *panel, size_t kc, float *y, size_t ldy, size_t cols,
                       int first, size_t rows, size_t np) {
  switch (rows * 8 + np) { ZROWS(1) ZROWS(2) ZROWS(3) ZROWS(4) ZROWS(5) ZROWS(6) default: break; }
}
// As rows_ymm, ZP panels at a time.
INLINE void rows_zmm(const float *xr, size_t K, const float *panels, size_t npanels, size_t kc, float *yr0, size_t N,
                     size_t start, size_t end, int first, size_t rows) {
  for (size_t p = 0; p < npanels; p += ZP) {
    const size_t n0 = start + p * NR;
    kernel_zmm(xr, K, panels + p * KC * NR, kc, yr0 + n0, N, end - n0, first, rows, npanels - p < ZP ? npanels - p : ZP);
  }
}
#endif

#ifdef LSE_AMX
#include "lse_gemm_amx.h"
#endif

// Columns [start, end) (at most MAX_PANELS panels) on the f32 kernel.
INLINE void gemm_f32(const Fmt *f, const float *x, const uint8_t *q, const void *d, const void *m, float *y, size_t R,
                     size_t N, size_t K, size_t start, size_t end) {
  float panels[MAX_PANELS * KC * NR] __attribute__((aligned(64)));
  const size_t npanels = (end - start + NR - 1) / NR;
  // Fetch the workgroup's groups (<= 64 rows, 60 KiB at K = 1536 in q4_1,
  // each group one run) into L2 up front, as many misses in flight as it takes.
  // a row's bytes of q, d and m (the K-quants: ks int8 a block, ks f16 per 256 values)
  const size_t qrow = K * f->bits / 8, drow = K / f->B * (f->ks ? f->ks : 2);
  const size_t mrow = f->ks ? K / 256 * 2 * f->ks : f->has_m ? drow : 0;
  const size_t nend = (end + NR - 1) / NR * NR;  // whole interleaved groups
  for (size_t b = start * qrow; b < nend * qrow; b += 64) _mm_prefetch((const char *)(q + b), _MM_HINT_T1);
  for (size_t b = start * drow; b < nend * drow; b += 64) _mm_prefetch((const char *)d + b, _MM_HINT_T1);
  for (size_t b = start * mrow; b < nend * mrow; b += 64) _mm_prefetch((const char *)m + b, _MM_HINT_T1);
  for (size_t k0 = 0; k0 < K; k0 += KC) {
    const size_t kc = K - k0 < KC ? K - k0 : KC;
    for (size_t p = 0; p < npanels; ++p) widen_panel(f, q, d, m, K, start + p * NR, k0, kc, panels + p * KC * NR);
    for (size_t r = 0; r < R; r += MR) {
      const size_t rows = R - r < MR ? R - r : MR;
      const float *xr = x + r * K + k0;  // up to 6 rows of x: in L1 for every panel
#ifdef ZMM_GEMM
      rows_zmm(xr, K, panels, npanels, kc, y + r * N, N, start, end, k0 == 0, rows);
#else
      rows_ymm(xr, K, panels, npanels, kc, y + r * N, N, start, end, k0 == 0, rows);
#endif
    }
  }
}

// The workgroup's `tile_cols` columns on the f32 kernel, 64 at a time.
INLINE void gemm(const Fmt *f, const float *x, const uint8_t *q, const void *d, const void *m, float *y, size_t R,
                 size_t N, size_t K, size_t tile_cols, size_t wg) {
  const size_t start = wg * tile_cols, end = start + tile_cols < N ? start + tile_cols : N;
  for (size_t s = start; s < end; s += MAX_PANELS * NR)
    gemm_f32(f, x, q, d, m, y, R, N, K, s, end - s < MAX_PANELS * NR ? end : s + MAX_PANELS * NR);
}

// ---- the exports -----------------------------------------------------------------
// A prompt of at most FEW_ROWS rows runs decode's matvec for its format
// (lse_qmv.c, linked into the same executables) on this workgroup's columns:
// its several-row kernels unpack each block once per 8 rows, where the panels
// cost an unpack and a store per weight per call however few the rows: the
// matvec takes less time up to 16 rows and more past about 20 (the ratios:
// docs/kernels.md). The GEMM's body is its own function, so
// the matvec's frame does not sit on top of the panels.
#define FEW_ROWS 16
#define MATVEC_MAX_K 32768 /* lse_qmv.c's XS_FLOATS blocks of 16 */
#define GEMM_BODY(stem, kind, mode, ...) static __attribute__((noinline)) LSE_BLOCK_EXPORT_##mode(gemm_##stem, gemm, __VA_ARGS__)
#ifdef LSE_AMX
// The AMX build's exports take x twice: as it is (the matvec's and the f32
// kernel's), and split by lse_split_x (xt, xs: lse_gemm_amx.h), which one
// dispatch makes before the GEMMs that share x.
#define AMX_M_M ((const char *)m + m_off * LSE_M_BYTES(f))
#define AMX_M_D 0
#define AMX_BODY(stem, kind, mode, ...)                                                                  \
  static __attribute__((noinline)) void amx_##stem(const uint16_t *xt, const float *xs, LSE_BLOCK_ARGS_##mode) { \
    static const Fmt f = {__VA_ARGS__};                                                                  \
    const size_t start = wg * tile, end = start + tile < N ? start + tile : N;                           \
    (void)x, (void)x_off;                                                                                \
    if (start < end && f.bits == 6)                                                                      \
      gemm_amx6(&f, xt, q + q_off, (const char *)d + d_off * LSE_D_BYTES(f), AMX_M_##mode, y + y_off, R, N, K, \
                start, end);                                                                             \
    else if (start < end)                                                                                \
      gemm_amx(&f, xt, xs, q + q_off, (const char *)d + d_off * LSE_D_BYTES(f), AMX_M_##mode, y + y_off, R, N, \
               K, start, end);                                                                           \
  }
LSE_BLOCK_FORMATS(AMX_BODY, amx)
#define GEMM_SPLIT_ARGS const uint16_t *xt, size_t xt_off, const float *xs, size_t xs_off,
#define AMX_TRY(stem, mode)                                                                       \
  if (R >= AMX_MIN_ROWS && tile <= AMX_GROUPS * NR && amx_grant()) {             \
    amx_##stem(xt + xt_off, xs + xs_off, LSE_BLOCK_PASS_##mode);                                  \
    return;                                                                                       \
  }

// x's rows as AMX_A tiles and block sums, for every GEMM over x: `per` tiles
// of 16 rows a workgroup, all K values of each.
void lse_split_x(const float *x, size_t x_off, uint16_t *xt, size_t xt_off, float *xs, size_t xs_off, size_t R,
                 size_t K, size_t per, size_t wg) {
  const size_t tiles = (R + 15) / 16, steps = K / 32;
  for (size_t t = wg * per; t < tiles && t < (wg + 1) * per; ++t)
    split_x(x + x_off + t * 16 * K, K, R - t * 16 < 16 ? R - t * 16 : 16, steps, 1, xt + xt_off + t * steps * 3 * TW,
            xs + xs_off + t * steps * 16);
}
#else
#define GEMM_SPLIT_ARGS
#define AMX_TRY(stem, mode)
#endif
#define GEMM_EXPORT(stem, kind, mode, ...)                                                        \
  void lse_##stem##_matvec(LSE_BLOCK_ARGS_##mode);                                                \
  void lse_##stem##_gemm(const float *x, size_t x_off, GEMM_SPLIT_ARGS LSE_BLOCK_REST_##mode) {   \
    if (R <= FEW_ROWS && K <= MATVEC_MAX_K) {                                                     \
      lse_##stem##_matvec(LSE_BLOCK_PASS_##mode);                                                 \
      return;                                                                                     \
    }                                                                                             \
    AMX_TRY(stem, mode)                                                                           \
    gemm_##stem(LSE_BLOCK_PASS_##mode);                                                           \
  }
LSE_BLOCK_FORMATS(GEMM_BODY, gemm)
LSE_BLOCK_FORMATS(GEMM_EXPORT, gemm)

// ---- the embedding: a block matrix's rows by token id -----------------------------
// y[r, :] = w[t[r], :] for this workgroup's `per` rows, each decoded from the
// interleaved layout block by block: widen16 gives the block's values of all
// 16 rows of the token's group (the same d * q + m as the panels, so the same
// floats as the reference), of which the token's lane is kept. A table read
// this way needs no second copy in the import's parts; the 16x decode is
// small beside a step's matmuls (K values a row, not N x K). An id past the
// table's rows gives a row of zeros (the runtime refuses such ids first).
INLINE void embed(const Fmt *f, const int64_t *t, const uint8_t *q, const void *d, const void *m, float *y, size_t R,
                  size_t N, size_t K, size_t per, size_t wg) {
  float blk[32 * NR] __attribute__((aligned(32)));
  const size_t r0 = wg * per, r1 = R < r0 + per ? R : r0 + per, nb = K / f->B;
  for (size_t r = r0; r < r1; ++r) {
    float *out = y + r * K;
    const uint64_t id = (uint64_t)t[r];
    if (id >= N) {
      for (size_t k = 0; k < K; ++k) out[k] = 0.0f;
      continue;
    }
    for (size_t b = 0; b < nb; ++b) {
      widen16(f, q, d, m, id / NR, nb, b, blk);
      for (size_t l = 0; l < f->B; ++l) out[b * f->B + l] = blk[l * NR + id % NR];
    }
  }
}

#define EMBED_EXPORT(stem, kind, mode, ...) EMBED_EXPORT_##mode(lse_##stem##_embed, __VA_ARGS__)
#define EMBED_EXPORT_M(name, ...)                                                                              \
  void name(const int64_t *t, size_t t_off, const uint8_t *q, size_t q_off, const void *d, size_t d_off,        \
            const void *m, size_t m_off, float *y, size_t y_off, size_t R, size_t N, size_t K, size_t per,      \
            size_t wg) {                                                                                        \
    static const Fmt f = {__VA_ARGS__};                                                                         \
    embed(&f, t + t_off, q + q_off, (const char *)d + d_off * LSE_D_BYTES(f),                                  \
          (const char *)m + m_off * LSE_M_BYTES(f), y + y_off, R, N, K, per, wg);                              \
  }
#define EMBED_EXPORT_D(name, ...)                                                                              \
  void name(const int64_t *t, size_t t_off, const uint8_t *q, size_t q_off, const void *d, size_t d_off,        \
            float *y, size_t y_off, size_t R, size_t N, size_t K, size_t per, size_t wg) {                     \
    static const Fmt f = {__VA_ARGS__};                                                                         \
    embed(&f, t + t_off, q + q_off, (const char *)d + d_off * LSE_D_BYTES(f), 0, y + y_off, R, N, K, per, wg); \
  }
LSE_BLOCK_FORMATS(EMBED_EXPORT, embed)
