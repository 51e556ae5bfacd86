// LSE's RMSNorm over f32 rows with an f32 weight, x86-64-v3 (AVX2, FMA).
// Called from an IREE dispatch (see cpu_kernel_build.py), `per` rows a workgroup:
//   y[r, i] = (x[r, i] * rsqrt(sum_j x[r, j]^2 / C + eps)) * w[i]
// as the generic form computes it (the reference, compiler/kernels.py,
// divides by the root instead). IREE's code for the same reduction is an
// order of magnitude slower on a prompt's rows (docs/kernels.md).
// Bare-metal: no libc, no globals.
#include <immintrin.h>
#include <stddef.h>
#include <stdint.h>

// Rows [wg * per, (wg + 1) * per) of x normalized into y; with a residual b,
// x + b is written to s first and normalized (a transformer block's residual
// add and the next RMSNorm in one pass).
static void norm_rows(const float *x, const float *b, float *s, const float *w, float *y, size_t rows, size_t C,
                      size_t eps_bits, size_t per, size_t wg) {
  union { uint32_t u; float f; } eps = {(uint32_t)eps_bits};
  const size_t r1 = (wg + 1) * per < rows ? (wg + 1) * per : rows;
  for (size_t r = wg * per; r < r1; ++r) {
    const float *xr = x + r * C;
    if (b) {
      for (size_t i = 0; i < C; i += 8)
        _mm256_storeu_ps(s + r * C + i, _mm256_add_ps(_mm256_loadu_ps(xr + i), _mm256_loadu_ps(b + r * C + i)));
      xr = s + r * C;
    }
    __m256 s0 = _mm256_setzero_ps(), s1 = _mm256_setzero_ps();
    size_t i = 0;
    for (; i + 16 <= C; i += 16) {
      const __m256 a = _mm256_loadu_ps(xr + i), b = _mm256_loadu_ps(xr + i + 8);
      s0 = _mm256_fmadd_ps(a, a, s0);
      s1 = _mm256_fmadd_ps(b, b, s1);
    }
    for (; i < C; i += 8) s0 = _mm256_fmadd_ps(_mm256_loadu_ps(xr + i), _mm256_loadu_ps(xr + i), s0);
    __m256 s = _mm256_add_ps(s0, s1);
    __m128 h = _mm_add_ps(_mm256_castps256_ps128(s), _mm256_extractf128_ps(s, 1));
    h = _mm_add_ps(h, _mm_movehl_ps(h, h));
    h = _mm_add_ss(h, _mm_movehdup_ps(h));
    const float mean = _mm_cvtss_f32(h) / (float)C;
    const float rs = 1.f / _mm_cvtss_f32(_mm_sqrt_ss(_mm_set_ss(mean + eps.f)));
    const __m256 rv = _mm256_set1_ps(rs);
    for (i = 0; i < C; i += 8)
      _mm256_storeu_ps(y + r * C + i, _mm256_mul_ps(_mm256_mul_ps(_mm256_loadu_ps(xr + i), rv), _mm256_loadu_ps(w + i)));
  }
}

void lse_rms_norm(const float *x, size_t x_off, const float *w, size_t w_off, float *y, size_t y_off, size_t rows,
                  size_t C, size_t eps_bits, size_t per, size_t wg) {
  norm_rows(x + x_off, 0, 0, w + w_off, y + y_off, rows, C, eps_bits, per, wg);
}

// s = a + b, y = RMSNorm(s) * w.
void lse_add_rms_norm(const float *a, size_t a_off, const float *b, size_t b_off, const float *w, size_t w_off,
                      float *s, size_t s_off, float *y, size_t y_off, size_t rows, size_t C, size_t eps_bits,
                      size_t per, size_t wg) {
  norm_rows(a + a_off, b + b_off, s + s_off, w + w_off, y + y_off, rows, C, eps_bits, per, wg);
}
