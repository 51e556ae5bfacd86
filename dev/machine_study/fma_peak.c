// Each thread's f32 FMA rate: 10 independent zmm FMA chains (kept in
// registers by an empty asm), N FMAs each; the peak an exact f32 kernel can
// reach (docs/kernels.md).
//   cc -O2 -mavx512f -pthread dev/machine_study/fma_peak.c -o /tmp/fma_peak && /tmp/fma_peak 2
#include <immintrin.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec * 1e-9; }
#define N 100000000L
static void *work(void *a) {
  __m512 m = _mm512_set1_ps(0.999f), c = _mm512_set1_ps(0.001f);
  __m512 a0 = m, a1 = m, a2 = m, a3 = m, a4 = m, a5 = m, a6 = m, a7 = m, a8 = m, a9 = m;
  for (long i = 0; i < N / 10; ++i) {
    __asm__ volatile("" : "+v"(a0), "+v"(a1), "+v"(a2), "+v"(a3), "+v"(a4), "+v"(a5), "+v"(a6), "+v"(a7), "+v"(a8), "+v"(a9));
    a0 = _mm512_fmadd_ps(a0, m, c); a1 = _mm512_fmadd_ps(a1, m, c); a2 = _mm512_fmadd_ps(a2, m, c);
    a3 = _mm512_fmadd_ps(a3, m, c); a4 = _mm512_fmadd_ps(a4, m, c); a5 = _mm512_fmadd_ps(a5, m, c);
    a6 = _mm512_fmadd_ps(a6, m, c); a7 = _mm512_fmadd_ps(a7, m, c); a8 = _mm512_fmadd_ps(a8, m, c);
    a9 = _mm512_fmadd_ps(a9, m, c);
  }
  __m512 s = _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)), _mm512_add_ps(_mm512_add_ps(a4, a5), _mm512_add_ps(_mm512_add_ps(a6, a7), _mm512_add_ps(a8, a9))));
  static volatile float out; out = _mm512_reduce_add_ps(s);
  return NULL;
}
int main(int argc, char **argv) {
  int nt = atoi(argv[1]); pthread_t t[4]; double t0 = now();
  for (int i = 0; i < nt; ++i) pthread_create(&t[i], NULL, work, NULL);
  for (int i = 0; i < nt; ++i) pthread_join(t[i], NULL);
  printf("threads %d: %.1f G f32 FMA/s\n", nt, nt * (double)N * 16 / (now() - t0) / 1e9);
}
