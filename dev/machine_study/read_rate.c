// The machine's read rate (docs/kernels.md, "The machine's bandwidth moves"):
// a buffer read by THREADS threads, each its own slice, AVX2 loads summed,
// 40 passes, median and best. MODE anon (MIB MiB, HUGE 1: MADV_HUGEPAGE) or
// file (a path; HUGE 1: MADV_HUGEPAGE, 2: and MADV_COLLAPSE). STREAMS=S
// reads each slice as S regions in turn, CHUNK bytes of each (default 256);
// KQ=1 reads the decode kernel's pattern instead (4 groups: q 256, d 32, m 8
// bytes a block, each in its own region).
//   cc -O2 -mavx2 -pthread dev/machine_study/read_rate.c -o /tmp/read_rate
//   /tmp/read_rate anon 2 0 1024; KQ=1 /tmp/read_rate anon 2 0 1024
#define _GNU_SOURCE
#include <immintrin.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
static const uint8_t *buf; static size_t len; static int nthreads;
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec * 1e-9; }
static int streams = 1; static size_t chunk = 256;
static void *work(void *arg) {
  size_t i = (size_t)arg, per = len / nthreads, lo = i * per;
  size_t sub = per / streams / chunk * chunk;
  __m256i acc = _mm256_setzero_si256();
  if (getenv("KQ")) {  /* 4 groups: q 256 B, d 32 B, m 8 B per block, each its own region */
    size_t total = 256 + 32 + 8, blocks = per / 4 / total;
    const uint8_t *base = buf + lo;
    for (size_t b = 0; b < blocks; ++b)
      for (int g = 0; g < 4; ++g) {
        const uint8_t *q = base + (size_t)g * blocks * 256 + b * 256;
        const uint8_t *d = base + 4 * blocks * 256 + (size_t)g * blocks * 32 + b * 32;
        const uint8_t *m = base + 4 * blocks * 288 + (size_t)g * blocks * 8 + b * 8;
        for (int p = 0; p < 256; p += 32) acc = _mm256_add_epi8(acc, _mm256_loadu_si256((const __m256i *)(q + p)));
        acc = _mm256_add_epi8(acc, _mm256_loadu_si256((const __m256i *)d));
        acc = _mm256_add_epi8(acc, _mm256_set1_epi64x(*(const int64_t *)m));
      }
    static volatile int sink2; sink2 = _mm256_extract_epi32(acc, 0);
    return NULL;
  }
  for (size_t c = 0; c < sub; c += chunk)
    for (int s = 0; s < streams; ++s) {
      const uint8_t *b = buf + lo + s * sub + c;
      for (size_t p = 0; p < chunk; p += 128) {
        acc = _mm256_add_epi8(acc, _mm256_loadu_si256((const __m256i *)(b + p)));
        acc = _mm256_add_epi8(acc, _mm256_loadu_si256((const __m256i *)(b + p + 32)));
        acc = _mm256_add_epi8(acc, _mm256_loadu_si256((const __m256i *)(b + p + 64)));
        acc = _mm256_add_epi8(acc, _mm256_loadu_si256((const __m256i *)(b + p + 96)));
      }
    }
  static volatile int sink; sink = _mm256_extract_epi32(acc, 0);
  return NULL;
}
static double pass(void) {
  pthread_t t[8]; double t0 = now();
  for (int i = 0; i < nthreads; ++i) pthread_create(&t[i], NULL, work, (void *)(size_t)i);
  for (int i = 0; i < nthreads; ++i) pthread_join(t[i], NULL);
  return len / (now() - t0) / 1e9;
}
int main(int argc, char **argv) {
  if (getenv("STREAMS")) streams = atoi(getenv("STREAMS"));
  if (getenv("CHUNK")) chunk = atol(getenv("CHUNK"));
  const char *mode = argv[1]; nthreads = atoi(argv[2]); int huge = atoi(argv[3]);
  if (!strcmp(mode, "anon")) {
    len = (size_t)atol(argv[4]) << 20;
    uint8_t *b = mmap(NULL, len + (2 << 20), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    b = (uint8_t *)(((uintptr_t)b + (2 << 20) - 1) & ~(uintptr_t)((2 << 20) - 1));
    if (huge) madvise(b, len, MADV_HUGEPAGE);
    memset(b, 1, len); buf = b;
  } else {
    int fd = open(argv[4], O_RDONLY); struct stat st; fstat(fd, &st); len = st.st_size & ~(size_t)4095;
    buf = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0);
    if (huge) { int r = madvise((void *)buf, len, MADV_HUGEPAGE); if (r) perror("madvise"); }
    if (huge == 2) { int r = madvise((void *)buf, len, 25 /* MADV_COLLAPSE */); if (r) perror("collapse"); }
  }
  double best = 0, all[40]; int n = 40;
  for (int i = 0; i < n; ++i) { double g = pass(); all[i] = g; if (g > best) best = g; }
  for (int i = 0; i < n; ++i) for (int j = i + 1; j < n; ++j) if (all[j] < all[i]) { double t = all[i]; all[i] = all[j]; all[j] = t; }
  printf("median %.1f ", all[n / 2]);
  FILE *f = fopen("/proc/self/smaps_rollup", "r"); char line[256]; long ah = 0, fh = 0;
  while (fgets(line, sizeof line, f)) { sscanf(line, "AnonHugePages: %ld", &ah); sscanf(line, "FilePmdMapped: %ld", &fh); }
  printf("%s streams %d chunk %zu %s threads=%d huge=%d: best %.1f GB/s (AnonHuge %ld kB, FilePmdMapped %ld kB)\n", getenv("KQ") ? "kernel pattern" : "plain", streams, chunk, mode, nthreads, huge, best, ah, fh);
  return 0;
}
