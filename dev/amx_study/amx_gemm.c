// A study of the prompt GEMM on AMX-BF16 with f32-faithful activations
// (dev/amx_study/study.py drives it; docs/kernels.md records what it measured).
//   y[r, n] = sum_b d[n, b] * sum_l x[r, 32b + l] * q[n, b, l] + m[n, b] * sum_l x[r, 32b + l]
// q's integers (here 0..15, as q4_1 / q4_k hold them) are exact in bf16; x is
// split into hi + mid + lo, each bf16 (together x's 24 bits), so each of the
// three TDPBF16PS per 16 rows x 16 columns x 32 values multiplies exactly, the
// sums in f32. Each block's 16 x 16 sums are then scaled by the block's
// per-column d and offset by m times the row's block sum of x, summed in
// registers over a chunk, then into y. One call is one workgroup of TN tiles
// of 16 columns; x is split once per call beforehand (amx_split).
#include <immintrin.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef KC
#define KC 192 /* k per chunk: 6 blocks */
#endif
#define NB (KC / 32)
#ifndef TN
#define TN 16 /* column tiles of 16 per workgroup: 256 columns (study.py --tn) */
#endif

// AMX's tile data needs the OS's leave once per process (Linux 5.16+).
int amx_request(void) { return (int)syscall(SYS_arch_prctl, 0x1023 /* ARCH_REQ_XCOMP_PERM */, 18 /* XTILEDATA */); }

typedef struct {
  uint8_t palette, start;
  uint8_t pad[14];
  uint16_t colsb[16];
  uint8_t rows[16];
} TileCfg;

static void config(void) {
  TileCfg c;
  memset(&c, 0, sizeof c);
  c.palette = 1;
  for (int t = 0; t < 8; ++t) { c.colsb[t] = 64; c.rows[t] = 16; }
  _tile_loadconfig(&c);
}

static inline __m512i bf16_bits(__m512 v) {  // round to nearest even, as vcvtneps2bf16
  return _mm512_castsi256_si512((__m256i)_mm512_cvtneps_pbh(v));
}
static inline __m512 bf16_f32(__m256i h) { return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16)); }

// x split once per call (a dispatch of its own in a module, shared by every
// workgroup) into bf16 parts hi, mid, lo (x - hi - mid, exact), laid out by
// tile: per 16 rows and chunk of KC, [part][row][KC] (18 KiB, so a chunk's A
// tiles come from L1 for every column tile); and xsum [R][K/32], each row's
// block sums of x in f32.
void amx_split(const float *x, size_t R, size_t K, uint16_t *xs, float *xsum) {
  const size_t chunks = (K + KC - 1) / KC;
  for (size_t i = 0; i < R; ++i)
    for (size_t k = 0; k < K; k += 32) {
      __m512 v0 = _mm512_loadu_ps(x + i * K + k), v1 = _mm512_loadu_ps(x + i * K + k + 16);
      xsum[i * (K / 32) + k / 32] = _mm512_reduce_add_ps(_mm512_add_ps(v0, v1));
      uint16_t *t = xs + ((i / 16) * chunks + k / KC) * 3 * 16 * KC + (i % 16) * KC + k % KC;
      for (size_t p = 0; p < 3; ++p) {
        const __m512bh h = _mm512_cvtne2ps_pbh(v1, v0);  /* v0's 16 low, v1's high */
        _mm512_storeu_si512((__m512i *)(t + p * 16 * KC), (__m512i)h);
        v0 = _mm512_sub_ps(v0, bf16_f32(_mm512_castsi512_si256((__m512i)h)));
        v1 = _mm512_sub_ps(v1, bf16_f32(_mm512_extracti64x4_epi64((__m512i)h, 1)));
      }
    }
}

// Weight tiles of the chunk: [tile j][block b] 16 k-pairs x 16 columns x 2
// (VNNI order) of bf16 integers, from lse-compile's interleaved q4_1 layout
// (lse_qmv.c), whose run j of a group's block holds byte j of its 16 rows:
// values 2j (low nibble) and 2j + 1 (high), already the tile's row j. A
// value 0..15 as f32 has its bf16 in the top half, exactly.
static void widen_b(const uint8_t *q, size_t nb, size_t g0, size_t b0, size_t nbc, uint16_t *wb) {
  const __m512i mf = _mm512_set1_epi32(15), top = _mm512_set1_epi32((int)0xffff0000u);
  for (int j = 0; j < TN; ++j)
    for (size_t b = 0; b < nbc; ++b) {
      const uint8_t *run = q + ((g0 + j) * nb + b0 + b) * 256;
      uint16_t *t = wb + ((size_t)j * NB + b) * 512;
      for (int r = 0; r < 16; ++r) {
        const __m512i u = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(run + r * 16)));
        const __m512i lo = _mm512_castps_si512(_mm512_cvtepi32_ps(_mm512_and_si512(u, mf)));
        const __m512i hi = _mm512_castps_si512(_mm512_cvtepi32_ps(_mm512_srli_epi32(u, 4)));
        _mm512_store_si512((__m512i *)(t + r * 32), _mm512_or_si512(_mm512_and_si512(hi, top), _mm512_srli_epi32(lo, 16)));
      }
    }
}

// y[R][N] for columns n0..n0 + 16 TN (R a multiple of 16, N of 16 TN, K of
// 32), from amx_split's parts: q in the interleaved q4_1 layout, d and m f32
// interleaved as lse-compile lays them out: [N/16][K/32][16]. Per 16 rows and
// 16 columns, a chunk's sums stay in 16 registers, then go into y.
void amx_gemm(const uint16_t *xs, const float *xsum, const uint8_t *q, const float *d, const float *m, float *y,
              size_t R, size_t N, size_t K, size_t wg) {
  static __thread uint16_t wb[TN * NB * 512] __attribute__((aligned(64)));
  float c[256] __attribute__((aligned(64)));
  const size_t n0 = wg * TN * 16, nb = K / 32;
  config();
  for (size_t k0 = 0; k0 < K; k0 += KC) {
    const size_t kc = K - k0 < KC ? K - k0 : KC;
    widen_b(q, nb, n0 / 16, k0 / 32, kc / 32, wb);
    for (size_t r0 = 0; r0 < R; r0 += 16)
      for (int j = 0; j < TN; ++j) {
        __m512 acc[16];
        for (int i = 0; i < 16; ++i) acc[i] = _mm512_setzero_ps();
        const size_t g = n0 / 16 + j;
        const uint16_t *xa = xs + ((r0 / 16) * ((K + KC - 1) / KC) + k0 / KC) * 3 * 16 * KC;
        for (size_t b = 0; b < kc / 32; ++b) {
          const size_t kb = k0 / 32 + b;
          _tile_loadd(0, xa + 0 * 16 * KC + b * 32, KC * 2);
          _tile_loadd(1, xa + 1 * 16 * KC + b * 32, KC * 2);
          _tile_loadd(2, xa + 2 * 16 * KC + b * 32, KC * 2);
          _tile_loadd(3, wb + ((size_t)j * NB + b) * 512, 64);
          _tile_zero(5);
          _tile_dpbf16ps(5, 2, 3);  // smallest part first
          _tile_dpbf16ps(5, 1, 3);
          _tile_dpbf16ps(5, 0, 3);
          _tile_stored(5, c, 64);
          const __m512 dv = _mm512_loadu_ps(d + (g * nb + kb) * 16), mv = _mm512_loadu_ps(m + (g * nb + kb) * 16);
          for (int i = 0; i < 16; ++i) {
            acc[i] = _mm512_fmadd_ps(dv, _mm512_load_ps(c + i * 16), acc[i]);
            acc[i] = _mm512_fmadd_ps(mv, _mm512_set1_ps(xsum[(r0 + i) * nb + kb]), acc[i]);
          }
        }
        for (int i = 0; i < 16; ++i) {
          float *o = y + (r0 + i) * N + n0 + j * 16;
          _mm512_storeu_ps(o, k0 == 0 ? acc[i] : _mm512_add_ps(_mm512_loadu_ps(o), acc[i]));
        }
      }
  }
  _tile_release();
}

// The other way round: each weight dequantised as the reference does (d q + m,
// in f32) and split into three bf16 parts too, so a tile's products need no
// scaling and its sums run over a whole chunk in one tile: per 16 x 16 x 32,
// the six TDPBF16PS whose parts reach 2^-24 of the product (hh, hm, mh, hl,
// lh, mm; the three below it dropped), then the chunk's sums added into y.
// wb3: [tile j][block b][part] 1 KiB tiles.
static void widen_w3(const uint8_t *q, const float *d, const float *m, size_t nb, size_t g0, size_t b0, size_t nbc,
                     uint16_t *wb) {
  const __m512i mf = _mm512_set1_epi32(15);
  for (int j = 0; j < TN; ++j)
    for (size_t b = 0; b < nbc; ++b) {
      const size_t blk = (g0 + j) * nb + b0 + b;
      const uint8_t *run = q + blk * 256;
      const __m512 dv = _mm512_loadu_ps(d + blk * 16), mv = _mm512_loadu_ps(m + blk * 16);
      uint16_t *t = wb + ((size_t)j * NB + b) * 3 * 512;
      for (int r = 0; r < 16; ++r) {
        const __m512i u = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(run + r * 16)));
        __m512 w0 = _mm512_fmadd_ps(dv, _mm512_cvtepi32_ps(_mm512_and_si512(u, mf)), mv);
        __m512 w1 = _mm512_fmadd_ps(dv, _mm512_cvtepi32_ps(_mm512_srli_epi32(u, 4)), mv);
        for (int p = 0; p < 3; ++p) {
          const __m256i h0 = (__m256i)_mm512_cvtneps_pbh(w0), h1 = (__m256i)_mm512_cvtneps_pbh(w1);
          const __m512i pair = _mm512_or_si512(_mm512_cvtepu16_epi32(h0), _mm512_slli_epi32(_mm512_cvtepu16_epi32(h1), 16));
          _mm512_store_si512((__m512i *)(t + p * 512 + r * 32), pair);
          w0 = _mm512_sub_ps(w0, bf16_f32(h0));
          w1 = _mm512_sub_ps(w1, bf16_f32(h1));
        }
      }
    }
}

void amx_gemm_w3(const uint16_t *xs, const float *xsum, const uint8_t *q, const float *d, const float *m, float *y,
                 size_t R, size_t N, size_t K, size_t wg) {
  static __thread uint16_t wb[TN * NB * 3 * 512] __attribute__((aligned(64)));
  float c[256] __attribute__((aligned(64)));
  const size_t n0 = wg * TN * 16, nb = K / 32;
  (void)xsum;
  config();
  for (size_t k0 = 0; k0 < K; k0 += KC) {
    const size_t kc = K - k0 < KC ? K - k0 : KC;
    widen_w3(q, d, m, nb, n0 / 16, k0 / 32, kc / 32, wb);
    for (size_t r0 = 0; r0 < R; r0 += 16) {
      const uint16_t *xa = xs + ((r0 / 16) * ((K + KC - 1) / KC) + k0 / KC) * 3 * 16 * KC;
      for (int j = 0; j < TN; ++j) {
        _tile_zero(6);
        for (size_t b = 0; b < kc / 32; ++b) {
          const uint16_t *w = wb + ((size_t)j * NB + b) * 3 * 512;
          _tile_loadd(0, xa + 0 * 16 * KC + b * 32, KC * 2);
          _tile_loadd(1, xa + 1 * 16 * KC + b * 32, KC * 2);
          _tile_loadd(2, xa + 2 * 16 * KC + b * 32, KC * 2);
          _tile_loadd(3, w, 64);
          _tile_loadd(4, w + 512, 64);
          _tile_loadd(5, w + 1024, 64);
          _tile_dpbf16ps(6, 1, 4);  // the smaller products first: mm, lh, hl, mh, hm, hh
          _tile_dpbf16ps(6, 2, 3);
          _tile_dpbf16ps(6, 0, 5);
          _tile_dpbf16ps(6, 1, 3);
          _tile_dpbf16ps(6, 0, 4);
          _tile_dpbf16ps(6, 0, 3);
        }
        _tile_stored(6, c, 64);
        for (int i = 0; i < 16; ++i) {
          float *o = y + (r0 + i) * N + n0 + j * 16;
          const __m512 v = _mm512_load_ps(c + i * 16);
          _mm512_storeu_ps(o, k0 == 0 ? v : _mm512_add_ps(_mm512_loadu_ps(o), v));
        }
      }
    }
  }
  _tile_release();
}
