// What splitting x into three 7-bit parts costs a workgroup call: times the
// kernels' own il_split_x (compiler/cpu_kernels/lse_qmv_dots.h, compiled in
// here with lse_qmv.c) on one row of K values, best of 5 rounds of 20000
// calls, and checks block 0's reconstruction from its record
// (docs/kernels.md, "What the study leaves out").
//   cc -O3 -march=x86-64-v4 -mavx512vnni -mavx512vbmi -DLSE_INT_DOTS=1 dev/kernel_study/split_x.c -o /tmp/split_x -lm
//   /tmp/split_x 2048
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../../compiler/cpu_kernels/lse_qmv.c" /* not this folder's study copy */

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
  const size_t K = (size_t)atol(argv[1]);
  const int calls = 20000;
  float *x = aligned_alloc(64, K * 4), *xp = aligned_alloc(64, K * 4);
  for (size_t k = 0; k < K; ++k) x[k] = sinf(k * 0.37f) * (k % 97 ? 1.f : 30.f);
  double best = 1e9;
  for (int r = 0; r < 5; ++r) {
    const double t0 = now();
    for (int c = 0; c < calls; ++c) il_split_x(x, 1, K, 0, K / 32, xp);
    best = fmin(best, (now() - t0) / calls);
  }
  // value v of block 0: part p's word (p * 2 + v % 2) * 4 + v / 8, byte (v % 8) / 2
  double err = 0;
  const int8_t *w = (const int8_t *)xp;
  for (int v = 0; v < 32; ++v) {
    const int word = (v % 2) * 4 + v / 8, j = (v % 8) / 2;
    const double parts = w[word * 4 + j] + w[(8 + word) * 4 + j] / 128.0 + w[(16 + word) * 4 + j] / 16384.0;
    err = fmax(err, fabs(xp[DOTS_S] * parts - x[v]));
  }
  printf("K %zu: split %.3f us a row (%.2f ns a value); block 0 max error %.2e (max |x| 30)\n", K, best * 1e6,
         best * 1e9 / K, err);
  return 0;
}
