// A study beside vnni_q4k.c (docs/kernels.md): what splitting x into three
// 7-bit parts costs a workgroup call, vectorised. Per block of 32 values:
// s = max|x| / 127, then a, b, c (x / s ~ a + b / 128 + c / 16384, each
// rounded to nearest) packed as the integer kernel reads them (32 words a
// block: part p, nibble half h, chunk c at word (p * 2 + h) * 4 + c; s at 24).
// Times one row of K values, best of 5 rounds of 20000 calls, and checks
// block 0's reconstruction.
//   cc -O3 -march=x86-64-v4 dev/kernel_study/split_x.c -o /tmp/split_x -lm && /tmp/split_x 2048
#include <immintrin.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec * 1e-9; }
// one block of 32 values into its record (words 0-23 the parts, 24 s)
static inline void split_block(const float *p, int32_t *rec) {
  const __m512 a0 = _mm512_loadu_ps(p), a1 = _mm512_loadu_ps(p + 16);
  const float mx = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_abs_ps(a0), _mm512_abs_ps(a1)));
  const float inv = mx > 0.f ? 127.f / mx : 0.f, s = mx > 0.f ? mx / 127.f : 1.f;
  const __m512 vi = _mm512_set1_ps(inv), k128 = _mm512_set1_ps(128.f);
  __m128i parts[3][2];
  const __m512 in[2] = {a0, a1};
  for (int h = 0; h < 2; ++h) {
    const __m512 t = _mm512_mul_ps(in[h], vi);
    const __m512 A = _mm512_roundscale_ps(t, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    const __m512 r1 = _mm512_mul_ps(_mm512_sub_ps(t, A), k128);
    const __m512 B = _mm512_roundscale_ps(r1, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    const __m512 C = _mm512_roundscale_ps(_mm512_mul_ps(_mm512_sub_ps(r1, B), k128), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    parts[0][h] = _mm512_cvtepi32_epi8(_mm512_cvtps_epi32(A));
    parts[1][h] = _mm512_cvtepi32_epi8(_mm512_cvtps_epi32(B));
    parts[2][h] = _mm512_cvtepi32_epi8(_mm512_cvtps_epi32(C));
  }
  const __m256i shuf = _mm256_setr_epi8(0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15,
                                        0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15);
  const __m256i order = _mm256_setr_epi32(0, 1, 4, 5, 2, 3, 6, 7);
  for (int k = 0; k < 3; ++k) {
    __m256i v = _mm256_set_m128i(parts[k][1], parts[k][0]);
    v = _mm256_permutevar8x32_epi32(_mm256_shuffle_epi8(v, shuf), order);
    _mm256_storeu_si256((__m256i *)(rec + k * 8), v);
  }
  memcpy(rec + 24, &s, 4);
}
int main(int argc, char **argv) {
  const int K = atoi(argv[1]), calls = 20000;
  float *x = aligned_alloc(64, K * 4);
  int32_t *rec = aligned_alloc(64, K * 4 * 2);
  for (int k = 0; k < K; ++k) x[k] = sinf(k * 0.37f) * (k % 97 ? 1.f : 30.f);
  double best = 1e9;
  for (int r = 0; r < 5; ++r) {
    const double t0 = now();
    for (int c = 0; c < calls; ++c)
      for (int b = 0; b < K / 32; ++b) split_block(x + b * 32, rec + b * 32);
    best = fmin(best, (now() - t0) / calls);
  }
  // check one block's reconstruction
  double err = 0; const int8_t *w = (const int8_t *)rec; float s; memcpy(&s, rec + 24, 4);
  for (int v = 0; v < 32; ++v) {
    const int c = v / 8, h = v % 2, j = (v % 8) / 2;
    const double val = s * (w[((0 * 2 + h) * 4 + c) * 4 + j] + w[((1 * 2 + h) * 4 + c) * 4 + j] / 128.0 + w[((2 * 2 + h) * 4 + c) * 4 + j] / 16384.0);
    err = fmax(err, fabs(val - x[v]));
  }
  printf("K %d: split %.3f us a row (%.2f ns a value); block 0 max error %.2e (max |x| %.2f)\n", K, best * 1e6, best * 1e9 / K, err, 30.f);
  return 0;
}
