// Single-thread microbenchmark of the kernels outside IREE (same object code path).
// gcc -O3 -march=x86-64-v3 ubench.c lse_qmv.c -o build/ubench && build/ubench
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <time.h>
void lse_q4_1_matvec(const float *x, size_t, const uint8_t *w, size_t, float *y, size_t, size_t R, size_t N, size_t K, size_t tile, size_t wg);
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + 1e-9 * t.tv_nsec; }
int main(int argc, char **argv) {
  size_t shapes[][2] = {{576, 576}, {576, 192}, {576, 1536}, {1536, 576}, {576, 49152}};
  int Rs[] = {1, 4, 8};
  for (int ri = 0; ri < 3; ++ri) for (int s = 0; s < 5; ++s) {
    size_t K = shapes[s][0], N = shapes[s][1], R = Rs[ri];
    size_t rb = K / 32 * 20, copies = (64u << 20) / (N * rb) + 1;  // 64 MB of weights: DRAM-resident
    uint8_t *w = malloc(copies * N * rb);
    for (size_t i = 0; i < copies * N * rb; ++i) w[i] = (uint8_t)(i * 2654435761u >> 13);
    for (size_t i = 0; i < copies * N * K / 32; ++i) { w[i * 20] = 0; w[i * 20 + 1] = 0x20; w[i * 20 + 2] = 0; w[i * 20 + 3] = 0xA0; }
    float *x = malloc(R * K * 4), *y = malloc(R * N * 4);
    for (size_t i = 0; i < R * K; ++i) x[i] = (float)(i % 7) - 3;
    double best = 1e9;
    for (int it = 0; it < 5; ++it) {
      double t0 = now();
      for (size_t c = 0; c < copies; ++c) lse_q4_1_matvec(x, 0, w + c * N * rb, 0, y, 0, R, N, K, N, 0);
      double t = (now() - t0) / copies;
      if (t < best) best = t;
    }
    printf("R=%zu %zux%zu: %.1f us  %.2f GB/s (1 thread)\n", R, K, N, best * 1e6, N * rb / best / 1e9);
    free(w); free(x); free(y);
  }
}
