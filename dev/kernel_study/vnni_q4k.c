// A study, not a kernel LSE runs: the one-row Q4_K matvec on integer dot
// products (docs/kernels.md, "What a core's loop costs, and a cheaper one").
//
// Layout (this file's own): per group of 16 weight rows and block of 32
// values, four 64-byte chunks; chunk c's 32-bit lane i is row i's bytes
// 4c .. 4c + 3 of the block (values 8c + 2j low nibble, 8c + 2j + 1 high).
// Q4_K's scales as lse_blocks.h keeps them: int8 sc and mn per row and block,
// f16 d and dmin per row and 256 values; w = d sc q - dmin mn.
// x per block of 32: s = max|x| / 127 and three signed parts, x / s ~ a +
// b / 128 + c / 16384 (each rounded; |a| <= 127, |b|, |c| <= 64), so a
// block's dot product is three exact integer sums (vpdpbusd: 16 rows x 4
// values an instruction), combined and scaled in f32.
//
// It checks the result against a double-precision sum over the dequantised
// weights (the error as a share of sum |w x|, beside the same share for a
// plain f32 sum in k order) and times one thread, best of the calls:
//   cc -O3 -march=x86-64-v4 -mavx512vnni -mavx512vbmi -pthread dev/kernel_study/vnni_q4k.c -o /tmp/vnni_q4k -lm
//   /tmp/vnni_q4k 8192 2048 200     # 9.4 MB: from L2/L3
//   /tmp/vnni_q4k 262144 2048 7 2   # 302 MB: from DRAM, two threads
// -DRUNS=1 keeps q in lse-compile's layout (run j: byte j of 16 rows) and
// turns each 64 bytes into the rows' words with one vpermb (-mavx512vbmi).
// (-DAHEAD=N: blocks ahead each group's chunks are prefetched, default 2.)
// Compare with `python dev/kernel_speed.py --case q4_k:8192x2048 --rows 1
// --threads 1` (the f32 kernel, the same bytes a weight) run beside it.
#include <immintrin.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define IL 16
#define B 32
#define G 4 /* groups at once, as lse_qmv.c's one-row tile */
#ifndef RUNS
#define RUNS 0 /* 1: q in lse-compile's layout (run j = byte j of the 16 rows), turned into row words by vpermb */
#endif
#ifndef AHEAD
#define AHEAD 2 /* blocks ahead that each group's chunks are prefetched */
#endif

typedef struct {
  size_t N, K, nb;
  uint8_t *q;             /* [N/16][nb][4][16][4] */
  int8_t *sc, *mn;        /* [N/16][nb][16] */
  uint16_t *d, *dmin;     /* [N/16][nb/8][16] */
} Mat;

typedef struct {
  float s, sum;            /* the block's scale and its values' sum */
  int32_t w[3][2][4];      /* part, nibble half (even, odd values), chunk: 4 int8 as a word */
} XBlock;

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}
static float h2f(uint16_t h) { return _cvtsh_ss(h); }
static uint16_t f2h(float f) { return _cvtss_sh(f, 0); }
static uint32_t rng = 12345;
static uint32_t next(void) { rng ^= rng << 13; rng ^= rng >> 17; rng ^= rng << 5; return rng; }
static float unit(void) { return (next() >> 8) * (1.f / 16777216.f); }

static int qval(const Mat *m, size_t n, size_t k) {
  const size_t g = n / IL, i = n % IL, b = k / B, v = k % B, c = v / 8, j = (v % 8) / 2;
  const uint8_t byte = RUNS ? m->q[(g * m->nb + b) * 256 + (4 * c + j) * IL + i]
                            : m->q[((((g * m->nb + b) * 4 + c) * IL) + i) * 4 + j];
  return v % 2 ? byte >> 4 : byte & 15;
}
static double weight(const Mat *m, size_t n, size_t k) {
  const size_t g = n / IL, i = n % IL, b = k / B, sb = b / 8;
  const double d = h2f(m->d[(g * (m->nb / 8) + sb) * IL + i]), dm = h2f(m->dmin[(g * (m->nb / 8) + sb) * IL + i]);
  return d * m->sc[(g * m->nb + b) * IL + i] * qval(m, n, k) - dm * m->mn[(g * m->nb + b) * IL + i];
}

static void split_x(const float *x, size_t K, XBlock *xb) {
  for (size_t b = 0; b < K / B; ++b) {
    const float *p = x + b * B;
    float mx = 0.f, sum = 0.f;
    for (int v = 0; v < B; ++v) { mx = fmaxf(mx, fabsf(p[v])); sum += p[v]; }
    const float s = mx > 0.f ? mx / 127.f : 1.f;
    xb[b].s = s, xb[b].sum = sum;
    int8_t part[3][B];
    for (int v = 0; v < B; ++v) {
      const double t = p[v] / (double)s;
      const double a = nearbyint(t), r1 = (t - a) * 128.0, bb = nearbyint(r1), r2 = (r1 - bb) * 128.0;
      part[0][v] = (int8_t)a, part[1][v] = (int8_t)bb, part[2][v] = (int8_t)nearbyint(r2);
    }
    for (int k = 0; k < 3; ++k)
      for (int h = 0; h < 2; ++h)
        for (int c = 0; c < 4; ++c) {
          int8_t w4[4];
          for (int j = 0; j < 4; ++j) w4[j] = part[k][8 * c + 2 * j + h];
          memcpy(&xb[b].w[k][h][c], w4, 4);
        }
  }
}

// y[n] for groups [ga, gz): G groups at a time, each block's three integer sums.
static void matvec_vnni(const Mat *m, const XBlock *xb, float *y, size_t ga, size_t gz) {
  const __m512i nib = _mm512_set1_epi8(15);
  uint8_t perm[64];  /* out byte 4i + t = in byte 16t + i: four runs to 16 rows' words */
  for (int i = 0; i < 16; ++i)
    for (int t = 0; t < 4; ++t) perm[4 * i + t] = (uint8_t)(16 * t + i);
  const __m512i to_rows = _mm512_loadu_si512((const void *)perm);
  (void)to_rows;
  for (size_t g0 = ga; g0 < gz; g0 += G) {
    __m512 acc[G];
    for (int g = 0; g < G; ++g) acc[g] = _mm512_setzero_ps();
    for (size_t b = 0; b < m->nb; ++b) {
      const XBlock *xv = xb + b;
      for (int g = 0; g < G; ++g) {
        const uint8_t *q = m->q + ((g0 + g) * m->nb + b) * 256;
        _mm_prefetch((const char *)q + AHEAD * 256, _MM_HINT_T0);
        _mm_prefetch((const char *)q + AHEAD * 256 + 64, _MM_HINT_T0);
        _mm_prefetch((const char *)q + AHEAD * 256 + 128, _MM_HINT_T0);
        _mm_prefetch((const char *)q + AHEAD * 256 + 192, _MM_HINT_T0);
        __m512i s0 = _mm512_setzero_si512(), s1 = s0, s2 = s0;
        for (int c = 0; c < 4; ++c) {
          __m512i v = _mm512_loadu_si512((const void *)(q + c * 64));
#if RUNS
          v = _mm512_permutexvar_epi8(to_rows, v);
#endif
          const __m512i lo = _mm512_and_si512(v, nib), hi = _mm512_and_si512(_mm512_srli_epi32(v, 4), nib);
          s0 = _mm512_dpbusd_epi32(s0, lo, _mm512_set1_epi32(xv->w[0][0][c]));
          s1 = _mm512_dpbusd_epi32(s1, lo, _mm512_set1_epi32(xv->w[1][0][c]));
          s2 = _mm512_dpbusd_epi32(s2, lo, _mm512_set1_epi32(xv->w[2][0][c]));
          s0 = _mm512_dpbusd_epi32(s0, hi, _mm512_set1_epi32(xv->w[0][1][c]));
          s1 = _mm512_dpbusd_epi32(s1, hi, _mm512_set1_epi32(xv->w[1][1][c]));
          s2 = _mm512_dpbusd_epi32(s2, hi, _mm512_set1_epi32(xv->w[2][1][c]));
        }
        // sum q x / s for the block's 16 rows, then d sc s times it, less dmin mn sum(x)
        const __m512 f = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s2), _mm512_set1_ps(1.f / 16384.f),
                                         _mm512_fmadd_ps(_mm512_cvtepi32_ps(s1), _mm512_set1_ps(1.f / 128.f),
                                                         _mm512_cvtepi32_ps(s0)));
        const size_t sb = (g0 + g) * (m->nb / 8) + b / 8;
        const __m512 d = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(m->d + sb * IL)));
        const __m512 dm = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(m->dmin + sb * IL)));
        const __m512 sc = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)(m->sc + ((g0 + g) * m->nb + b) * IL))));
        const __m512 mn = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)(m->mn + ((g0 + g) * m->nb + b) * IL))));
        acc[g] = _mm512_fmadd_ps(_mm512_mul_ps(d, sc), _mm512_mul_ps(f, _mm512_set1_ps(xv->s)), acc[g]);
        acc[g] = _mm512_fnmadd_ps(_mm512_mul_ps(dm, mn), _mm512_set1_ps(xv->sum), acc[g]);
      }
    }
    for (int g = 0; g < G; ++g) _mm512_storeu_ps(y + (g0 + g) * IL, acc[g]);
  }
}

typedef struct { const Mat *m; const XBlock *xb; float *y; size_t ga, gz; } Job;
static void *run_job(void *p) {
  const Job *j = p;
  matvec_vnni(j->m, j->xb, j->y, j->ga, j->gz);
  return NULL;
}
// The groups split in two halves, one a thread where threads is 2 (x split once, before).
static void matvec(const Mat *m, const XBlock *xb, float *y, int threads) {
  const size_t groups = m->N / IL, half = groups / 2 / G * G;
  if (threads < 2) {
    matvec_vnni(m, xb, y, 0, groups);
    return;
  }
  Job a = {m, xb, y, 0, half}, b = {m, xb, y, half, groups};
  pthread_t t;
  pthread_create(&t, NULL, run_job, &b);
  run_job(&a);
  pthread_join(t, NULL);
}

int main(int argc, char **argv) {
  Mat m = {.N = (size_t)atol(argv[1]), .K = (size_t)atol(argv[2])};
  const int calls = argc > 3 ? atoi(argv[3]) : 20, threads = argc > 4 ? atoi(argv[4]) : 1;
  m.nb = m.K / B;
  const size_t groups = m.N / IL;
  m.q = aligned_alloc(64, groups * m.nb * 256);
  m.sc = malloc(groups * m.nb * IL), m.mn = malloc(groups * m.nb * IL);
  m.d = malloc(groups * (m.nb / 8) * IL * 2), m.dmin = malloc(groups * (m.nb / 8) * IL * 2);
  for (size_t i = 0; i < groups * m.nb * 256; ++i) m.q[i] = (uint8_t)next();
  for (size_t i = 0; i < groups * m.nb * IL; ++i) m.sc[i] = (int8_t)(next() % 64), m.mn[i] = (int8_t)(next() % 64);
  for (size_t i = 0; i < groups * (m.nb / 8) * IL; ++i) m.d[i] = f2h(unit() * 1e-3f), m.dmin[i] = f2h(unit() * 1e-3f);
  float *x = malloc(m.K * 4), *y = malloc(m.N * 4);
  for (size_t k = 0; k < m.K; ++k) x[k] = (unit() - 0.5f) * (k % 97 == 0 ? 40.f : 2.f);  /* some outliers */
  XBlock *xb = aligned_alloc(64, (m.K / B) * sizeof(XBlock) + 64);
  split_x(x, m.K, xb);
  matvec(&m, xb, y, threads);
  double worst = 0, worst_f32 = 0;
  const size_t check = m.N < 512 ? m.N : 512;
  for (size_t n = 0; n < check; ++n) {
    double ref = 0, mag = 0;
    float f32 = 0.f;
    for (size_t k = 0; k < m.K; ++k) {
      const double w = weight(&m, n, k);
      ref += w * x[k], mag += fabs(w * x[k]), f32 += (float)w * x[k];
    }
    worst = fmax(worst, fabs(y[n] - ref) / mag), worst_f32 = fmax(worst_f32, fabs(f32 - ref) / mag);
  }
  printf("error / sum|w x|, worst of %zu rows: integer parts %.2e, f32 in k order %.2e\n", check, worst, worst_f32);
  double best = 1e9;
  for (int i = 0; i < calls; ++i) {
    const double t0 = now();
    split_x(x, m.K, xb);
    matvec(&m, xb, y, threads);
    best = fmin(best, now() - t0);
  }
  const double bytes = (double)groups * m.nb * (256 + 32) + groups * (m.nb / 8) * 64;
  printf("q4_k %zux%zu rows 1, %d thread(s), prefetch %d blocks ahead: %.3f ms, %.2f G values/s, %.1f GB/s\n", m.N, m.K, threads, AHEAD, best * 1e3,
         m.N * (double)m.K / best / 1e9, bytes / best / 1e9);
  return 0;
}
