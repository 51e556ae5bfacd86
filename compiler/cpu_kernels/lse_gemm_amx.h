// The prompt GEMM on AMX-BF16 (lse_gemm.c includes it where LSE_AMX is
// defined: cpu_kernel_build.amx(), built with -mamx-tile -mamx-bf16
// -mavx512bf16), as exact as the f32 kernel. A block's integers are exact in
// bf16, and so is each of x's three parts xh + xm + xl (x's 24 bits cut at 8
// and 16 bits), so each part's product with an integer is exact in f32.
// Formats of 32-value blocks: per 16 rows x 16 columns x one block, three
// TDPBF16PS give sum_k q x in f32, which the block's per-column d scales,
// plus m times the row's block sum of x, into 16 registers of sums (d * sum
// q x + m * sum x, the reference's sum of (d q + m) x), added into y once a
// chunk. Q6_K: gemm_amx6 below.
// x is split once (lse_split_x, a dispatch of its own before the GEMMs that
// share x). Per chunk of up to AMX_STEPS * 32 values of k the workgroup's
// weight tiles (up to AMX_GROUPS groups of 16 columns) are made once and serve
// every 16 rows of x. The workgroup's buffers (about 55 KiB) fit IREE's
// default 128 KiB worker stacks. Linux grants a process the
// tiles' state on request (arch_prctl ARCH_REQ_XCOMP_PERM): the kernel asks
// itself, once a call (harmless once granted), and where that is refused
// (an older kernel) the export runs the f32 kernel.
#ifndef LSE_GEMM_AMX_H
#define LSE_GEMM_AMX_H

#define AMX_GROUPS 16  /* groups of 16 columns a workgroup at most: 256 columns */
#define AMX_WT 48      /* weight tiles a chunk: 48 KiB */
#define AMX_STEPS 6    /* 32-value steps a chunk at most: 192 values */
/* Every prompt GEMM's rows (lse_gemm.c's FEW_ROWS + 1; fewer take the matvec): a
   row's sums are then the same bits whatever the chunk it is in (runtime/pacing.py) */
#define AMX_MIN_ROWS 17
#define TW 512         /* bf16 a tile: 16 rows x 32 */

INLINE int amx_grant(void) {
  long r;
  /* arch_prctl(ARCH_REQ_XCOMP_PERM = 0x1023, XFEATURE_XTILEDATA = 18) */
  __asm__ volatile("syscall" : "=a"(r) : "0"(158L), "D"(0x1023L), "S"(18L) : "rcx", "r11", "memory");
  return r == 0;
}

INLINE void amx_config(void) {
  struct {
    uint8_t palette, start, pad[14];
    uint16_t colsb[16];
    uint8_t rows[16];
  } __attribute__((aligned(64))) c;
  _mm512_store_si512((__m512i *)&c, _mm512_setzero_si512());
  c.palette = 1;
  for (int t = 0; t < 8; ++t) {
    c.colsb[t] = 64;
    c.rows[t] = 16;
  }
  _tile_loadconfig(&c);
}

// The high 16 bits of each lane of a and b (values whose low 16 bits are
// zero: so each is its bf16 exactly) as VNNI pairs: lane c's 32 bits hold
// a[c] below, b[c] above.
INLINE __m512i pair_bf16(__m512 a, __m512 b) {
  const __m512i hi = _mm512_set1_epi32((int)0xffff0000u);
  return _mm512_ternarylogic_epi32(_mm512_srli_epi32(_mm512_castps_si512(a), 16), _mm512_castps_si512(b), hi, 0xf8);
}
INLINE __m512 cut8(__m512 v) {  /* v's top 8 significant bits (sign, exponent, 7 of the mantissa) */
  return _mm512_castsi512_ps(_mm512_and_si512(_mm512_castps_si512(v), _mm512_set1_epi32((int)0xffff0000u)));
}

// A step's integers (panel[32][16] as f32, k-major) as a weight tile
// (TDPBF16PS's B: row j holds values 2j and 2j + 1 of the 16 columns).
INLINE void panel_tile(const float *panel, uint16_t *t) {
  for (size_t j = 0; j < 16; ++j)
    _mm512_store_si512((__m512i *)(t + j * 32),
                       pair_bf16(_mm512_load_ps(panel + 2 * j * NR), _mm512_load_ps(panel + (2 * j + 1) * NR)));
}

// Group g's weight tiles for `steps` steps from value k0, and each step's
// per-column scales d and m (ds, ms: 16 floats a step).
INLINE void weight_tiles(const Fmt *f, const uint8_t *q, const void *d, const void *m, size_t g, size_t nb,
                         size_t k0, size_t steps, uint16_t *wt, float *ds, float *ms) {
  float panel[32 * NR] __attribute__((aligned(64)));
  const __m256 one = _mm256_set1_ps(1.0f), zero = _mm256_setzero_ps();
  for (size_t s = 0; s < steps; ++s) {
    const size_t b = k0 / 32 + s, blk = (g * nb + b) * 16;
    widen_vals(f, q, blk, one, one, zero, zero, panel);
    __m256 d0, d1, m0 = zero, m1 = zero;
    if (f->ks) {
      lse_k_scales(f, d, m, g, nb, b, &d0, &d1, &m0, &m1);
    } else {
      scales16(d, blk, &d0, &d1);
      if (f->has_m) scales16(m, blk, &m0, &m1);
    }
    _mm256_store_ps(ds + s * 16, d0);
    _mm256_store_ps(ds + s * 16 + 8, d1);
    _mm256_store_ps(ms + s * 16, m0);
    _mm256_store_ps(ms + s * 16 + 8, m1);
    panel_tile(panel, wt + s * TW);
  }
}

// The 16 sums of 16 vectors' lanes (v[i]'s sum in lane i), by halving
// swaps: 15 adds, 30 shuffles and a permute for the 16.
INLINE __m512 sum16(__m512 *v) {
  for (int w = 8, n = 16; w >= 1; w /= 2, n /= 2)
    for (int i = 0; i < n / 2; ++i) {
      /* lanes: pair i's vectors a, b; keep a's low half-blocks and b's high ones of width w, summed */
      const __m512 a = v[i], b = v[i + n / 2];
      __m512 lo, hi;
      if (w == 8) {
        lo = _mm512_shuffle_f32x4(a, b, 0x44);  /* a0 a1 b0 b1 (128-bit blocks) */
        hi = _mm512_shuffle_f32x4(a, b, 0xee);  /* a2 a3 b2 b3 */
      } else if (w == 4) {
        lo = _mm512_shuffle_f32x4(a, b, 0x88);  /* a0 a2 b0 b2 */
        hi = _mm512_shuffle_f32x4(a, b, 0xdd);  /* a1 a3 b1 b3 */
      } else if (w == 2) {
        lo = _mm512_shuffle_ps(a, b, 0x44);     /* in each block: a0 a1 b0 b1 */
        hi = _mm512_shuffle_ps(a, b, 0xee);
      } else {
        lo = _mm512_shuffle_ps(a, b, 0x88);     /* a0 a2 b0 b2 */
        hi = _mm512_shuffle_ps(a, b, 0xdd);
      }
      v[i] = _mm512_add_ps(lo, hi);
    }
  /* the halvings leave row r's sum in lane 0 2 1 3 8 10 9 11 4 6 5 7 12 14 13 15 */
  return _mm512_permutexvar_ps(_mm512_set_epi32(15, 13, 14, 12, 7, 5, 6, 4, 11, 9, 10, 8, 3, 1, 2, 0), v[0]);
}

// x's rows (rows of 16; the rest zero) over `steps` steps as tiles
// [step][part] of 16 rows x 32 values (TDPBF16PS's A), and (has_m) each
// row's sum of each step's 32 values (xs[step][row]).
INLINE void split_x(const float *x, size_t ldx, size_t rows, size_t steps, int has_m, uint16_t *xt, float *xs) {
  for (size_t s = 0; s < steps; ++s) {
    __m512 sums[16];
    for (size_t i = 0; i < 16; ++i) {
      uint16_t *t = xt + s * 3 * TW + i * 32;
      __m512 a = _mm512_setzero_ps(), b = a;
      if (i < rows) {
        a = _mm512_loadu_ps(x + i * ldx + s * 32);
        b = _mm512_loadu_ps(x + i * ldx + s * 32 + 16);
      }
      sums[i] = _mm512_add_ps(a, b);
      for (int p = 0; p < 3; ++p) {  /* hi, mid: the top 8 bits of what is left; lo: the rest (8 bits at most) */
        const __m512 ah = p < 2 ? cut8(a) : a, bh = p < 2 ? cut8(b) : b;
        /* exact conversions (the low 16 bits are zero): a's 16 values, then b's */
        _mm512_storeu_si512((__m512i *)(t + p * TW), (__m512i)_mm512_cvtne2ps_pbh(bh, ah));
        a = _mm512_sub_ps(a, ah);
        b = _mm512_sub_ps(b, bh);
      }
    }
    /* the sums' order differs from the reference's, as every sum's here */
    if (has_m) _mm512_storeu_ps(xs + s * 16, sum16(sums));
  }
}

// One group's sums for 16 rows of x over a chunk, added into 16 registers
// (acc: one a row of x), then into y's rows (stored where `first`; cols <= 16
// columns). Tiles: 0 and 1 the sums of alternate steps (so one step's
// products run while the last one's are stored and scaled), 2 the weights,
// 6 and 7 x's parts in turn.
#define AMX_A(T, P, B) \
  _tile_loadd(T, a + (P) * TW, 64); \
  _tile_dpbf16ps(B, T, 2);
#define AMX_STEP(C, s)                    \
  {                                       \
    const uint16_t *a = xt + (s) * 3 * TW; \
    _tile_zero(C);                        \
    _tile_loadd(2, w + (s) * TW, 64);     \
    AMX_A(6, 0, C) AMX_A(7, 1, C) AMX_A(6, 2, C) \
  }
INLINE void amx_scale(const float *c, __m512 dv, __m512 mv, const float *xs, int has_m, __m512 *acc) {
#pragma GCC unroll 16
  for (int i = 0; i < 16; ++i) {
    acc[i] = _mm512_fmadd_ps(_mm512_load_ps(c + i * 16), dv, acc[i]);
    if (has_m) acc[i] = _mm512_fmadd_ps(_mm512_set1_ps(xs[i]), mv, acc[i]);
  }
}
INLINE void amx_group(const Fmt *f, const uint16_t *w, const float *ds, const float *ms, const uint16_t *xt,
                      const float *xs, size_t steps, float *y, size_t ldy, size_t rows, size_t cols, int first) {
  float c[3][256] __attribute__((aligned(64)));
  __m512 acc[16];
#pragma GCC unroll 16
  for (int i = 0; i < 16; ++i) acc[i] = _mm512_setzero_ps();
  {
    /* step s's products, step s - 1's sums stored, step s - 2's scaled: each waits on work issued a step before */
    for (size_t s = 0; s < steps + 2; ++s) {
      if (s < steps) {
        if (s & 1) AMX_STEP(1, s) else AMX_STEP(0, s)
      }
      if (s >= 1 && s <= steps) {
        if ((s - 1) & 1) _tile_stored(1, c[(s - 1) % 3], 64); else _tile_stored(0, c[(s - 1) % 3], 64);
      }
      if (s >= 2) {
        const size_t t = s - 2;
        amx_scale(c[t % 3], _mm512_load_ps(ds + t * 16), _mm512_load_ps(ms + t * 16), xs + t * 16, f->has_m, acc);
      }
    }
  }
  const __mmask16 lanes = cols >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << cols) - 1);
  /* every row's load before any row's store: y's rows lie a multiple of 4 KiB apart, where a load after a
     store to another row waits on it (4K aliasing) */
  if (!first)
#pragma GCC unroll 16
    for (size_t i = 0; i < 16; ++i)
      if (i < rows) acc[i] = _mm512_add_ps(_mm512_maskz_loadu_ps(lanes, y + i * ldy), acc[i]);
#pragma GCC unroll 16
  for (size_t i = 0; i < 16; ++i)
    if (i < rows) _mm512_mask_storeu_ps(y + i * ldy, lanes, acc[i]);
}
#undef AMX_STEP
#undef AMX_A

// Q6_K: a block's 16 values share sc (int8), 16 blocks one f16 d, and a
// 32-value tile spans two sc. So its tiles hold v = sc * q (13 bits, exact
// in f32) as two bf16 parts vh + vl (vl the 5 bits under vh's 8): six
// TDPBF16PS per 32 values sum v x over a super-block of 256 in a tile of
// sums, which d scales into y. Group g's tiles [step][part] for the
// super-block from value k0, and its d (16 floats).
INLINE void weight_tiles6(const Fmt *f, const uint8_t *q, const void *d, const void *m, size_t g, size_t nb,
                          size_t k0, uint16_t *wt, float *ds) {
  float panel[32 * NR] __attribute__((aligned(64)));
  const __m256 zero = _mm256_setzero_ps();
  for (size_t s = 0; s < 8; ++s)
    for (size_t h = 0; h < 2; ++h) {  /* the step's two blocks of 16 */
      const size_t b = k0 / 16 + 2 * s + h;
      const int8_t *sc = (const int8_t *)d + (g * nb + b) * 16;
      const __m256 s0 = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)sc)));
      const __m256 s1 = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)(sc + 8))));
      widen_vals(f, q, (g * nb + b) * 16, s0, s1, zero, zero, panel + h * 16 * NR);
      if (h)
        for (size_t j = 0; j < 16; ++j) {
          const __m512 va = _mm512_load_ps(panel + 2 * j * NR), vb = _mm512_load_ps(panel + (2 * j + 1) * NR);
          const __m512 ha = cut8(va), hb = cut8(vb);
          _mm512_store_si512((__m512i *)(wt + s * 2 * TW + j * 32), pair_bf16(ha, hb));
          _mm512_store_si512((__m512i *)(wt + s * 2 * TW + TW + j * 32),
                             pair_bf16(_mm512_sub_ps(va, ha), _mm512_sub_ps(vb, hb)));
        }
    }
  const uint16_t *sup = (const uint16_t *)m + (g * (nb / 16) + k0 / 256) * 16;
  _mm512_store_ps(ds, _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)sup)));
}

// y's rows (rows, ldy apart) at cols (<= 16) columns plus c * dv, stored where
// `first`: every row's load before any row's store (y's rows lie a multiple of
// 4 KiB apart, where a load after a store to another row waits on it).
INLINE void amx_flush(const float *c, __m512 dv, float *y, size_t ldy, size_t rows, size_t cols, int first) {
  const __mmask16 lanes = cols >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << cols) - 1);
  __m512 v[16];
#pragma GCC unroll 16
  for (size_t i = 0; i < 16; ++i) {
    v[i] = _mm512_mul_ps(_mm512_load_ps(c + i * 16), dv);
    if (!first && i < rows) v[i] = _mm512_add_ps(_mm512_maskz_loadu_ps(lanes, y + i * ldy), v[i]);
  }
#pragma GCC unroll 16
  for (size_t i = 0; i < 16; ++i)
    if (i < rows) _mm512_mask_storeu_ps(y + i * ldy, lanes, v[i]);
}

// Q6_K's columns [start, end): up to three groups at once, each a tile of
// sums over a super-block (tiles 0-2), x's parts in 5-7, the weights' parts in 3 and 4.
INLINE void gemm_amx6(const Fmt *f, const uint16_t *xt, const uint8_t *q, const void *d, const void *m, float *y,
                      size_t R, size_t N, size_t K, size_t start, size_t end) {
  uint16_t wt[3 * 16 * TW] __attribute__((aligned(64)));  /* 48 KiB: three groups x 8 steps x 2 parts */
  float ds[3 * 16] __attribute__((aligned(64))), c[256] __attribute__((aligned(64)));
  const size_t groups = (end - start + NR - 1) / NR, nb = K / 16, steps_k = K / 32;
  amx_config();
  for (size_t g0 = 0; g0 < groups; g0 += 3) {
    const size_t gn = groups - g0 < 3 ? groups - g0 : 3;
    for (size_t k0 = 0; k0 < K; k0 += 256) {
      for (size_t j = 0; j < gn; ++j) weight_tiles6(f, q, d, m, start / NR + g0 + j, nb, k0, wt + j * 16 * TW, ds + j * 16);
      for (size_t r = 0; r < R; r += 16) {
        const size_t rows = R - r < 16 ? R - r : 16;
        _tile_zero(0);
        _tile_zero(1);
        _tile_zero(2);
        for (size_t s = 0; s < 8; ++s) {
          const uint16_t *a = xt + ((r / 16) * steps_k + k0 / 32 + s) * 3 * TW;
          _tile_loadd(5, a, 64);
          _tile_loadd(6, a + TW, 64);
          _tile_loadd(7, a + 2 * TW, 64);
#define AMX6(C)                                                                 \
  _tile_loadd(3, wt + ((C) * 16 + s * 2) * TW, 64);                            \
  _tile_dpbf16ps(C, 5, 3);                                                     \
  _tile_dpbf16ps(C, 6, 3);                                                     \
  _tile_dpbf16ps(C, 7, 3);                                                     \
  _tile_loadd(4, wt + ((C) * 16 + s * 2 + 1) * TW, 64);                        \
  _tile_dpbf16ps(C, 5, 4);                                                     \
  _tile_dpbf16ps(C, 6, 4);                                                     \
  _tile_dpbf16ps(C, 7, 4);
          AMX6(0)
          if (gn > 1) { AMX6(1) }
          if (gn > 2) { AMX6(2) }
#undef AMX6
        }
        for (size_t j = 0; j < gn; ++j) {
          if (j == 0) _tile_stored(0, c, 64); else if (j == 1) _tile_stored(1, c, 64); else _tile_stored(2, c, 64);
          const size_t n0 = start + (g0 + j) * NR;
          amx_flush(c, _mm512_load_ps(ds + j * 16), y + r * N + n0, N, rows, end - n0 < NR ? end - n0 : NR, k0 == 0);
        }
      }
    }
  }
  _tile_release();
}

// The workgroup's columns [start, end) over all R rows of x, split by
// lse_split_x: xt[tile of 16 rows][step][part][16][32], xs[tile][step][16].
INLINE void gemm_amx(const Fmt *f, const uint16_t *xt, const float *xs, const uint8_t *q, const void *d,
                     const void *m, float *y, size_t R, size_t N, size_t K, size_t start, size_t end) {
  uint16_t wt[AMX_WT * TW] __attribute__((aligned(64)));  /* 48 KiB */
  float ds[AMX_WT * 16] __attribute__((aligned(64))), ms[AMX_WT * 16] __attribute__((aligned(64)));
  const size_t groups = (end - start + NR - 1) / NR, nb = K / f->B, steps_k = K / 32;
  const size_t per = AMX_WT / groups < AMX_STEPS ? AMX_WT / groups : AMX_STEPS; /* steps a chunk */
  const size_t chunk = per * 32;
  amx_config();
  for (size_t k0 = 0; k0 < K; k0 += chunk) {
    const size_t steps = (K - k0 < chunk ? K - k0 : chunk) / 32;
    for (size_t g = 0; g < groups; ++g)
      weight_tiles(f, q, d, m, start / NR + g, nb, k0, steps, wt + g * per * TW, ds + g * per * 16,
                   ms + g * per * 16);
    for (size_t r = 0; r < R; r += 16) {
      const size_t rows = R - r < 16 ? R - r : 16, at = (r / 16) * steps_k + k0 / 32;
      for (size_t g = 0; g < groups; ++g) {
        const size_t n0 = start + g * NR;
        amx_group(f, wt + g * per * TW, ds + g * per * 16, ms + g * per * 16, xt + at * 3 * TW, xs + at * 16, steps,
                  y + r * N + n0, N, rows, end - n0 < NR ? end - n0 : NR, k0 == 0);
      }
    }
  }
  _tile_release();
}

#endif
