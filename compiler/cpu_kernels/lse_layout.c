// The kernels' layout of a GGUF block matrix, made in C: a run of whole
// row groups of the file's blocks → qi, di and mi as compiler/kernel_layout.py
// describes them (16 rows interleaved; the K-quants' scales at their file's
// widths). It does what kernel_layout._interleaved(reader.layout_parts(raw))
// does with numpy, byte for byte (tests/unit/test_layout_streamed.py), in one
// pass over the run: the numpy form makes and reads back a dozen temporaries
// a run. A host library (compiler/layout_native.py builds it once a machine
// and calls it through ctypes), not an IREE kernel.
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define ROWS 16
enum { Q8_0 = 0, Q4_0 = 1, Q4_1 = 2, Q4_K = 3, Q6_K = 4 };

static uint16_t load16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }
static uint32_t load32(const uint8_t *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24; }

// n packed bytes of ggml 4-bit values (byte j: value j in its low nibble,
// j + n in its high one) as n bytes of value pairs, low nibble first: byte
// k < n / 2 holds values 2k and 2k + 1, byte n / 2 + k values n + 2k and
// n + 2k + 1 (reader._nibble_pairs); then xor'ed with `flip`.
static void nibble_pairs(const uint8_t *qs, size_t n, uint8_t flip, uint8_t *out) {
  for (size_t k = 0; k < n / 2; ++k) {
    const uint8_t a = qs[2 * k], b = qs[2 * k + 1];
    out[k] = (uint8_t)(((a & 0x0F) | (b << 4)) ^ flip);
    out[n / 2 + k] = (uint8_t)(((a >> 4) | (b & 0xF0)) ^ flip);
  }
}

// Q4_K's six-bit sub-block scales and mins of a super-block's 12 bytes (gguf's Q4_K.get_scale_min).
static void k4_scales(const uint8_t *s, uint8_t sc[8], uint8_t mn[8]) {
  for (int j = 0; j < 4; ++j) {
    sc[j] = s[j] & 63;
    mn[j] = s[j + 4] & 63;
    sc[j + 4] = (uint8_t)((s[j + 8] & 0x0F) | (s[j] >> 6) << 4);
    mn[j + 4] = (uint8_t)((s[j + 8] >> 4) | (s[j + 4] >> 6) << 4);
  }
}

// Q6_K's super-block (210 bytes) as its 16 blocks' three words A, B, C
// (kernel_layout.q6_words, from u = q + 32 four values a lane: u[r] holds
// values 4r .. 4r + 3 of a block in bytes 0-3).
static void q6_block_words(const uint8_t *blk, uint32_t words[16][3]) {
  uint8_t u[256];  // value v of the super-block: ggml's order
  for (int h = 0; h < 2; ++h)
    for (int l = 0; l < 32; ++l) {
      const uint8_t *ql = blk + 64 * h, qh = blk[128 + 32 * h + l];
      u[128 * h + l] = (uint8_t)((ql[l] & 0x0F) | (qh & 3) << 4);
      u[128 * h + 32 + l] = (uint8_t)((ql[32 + l] & 0x0F) | ((qh >> 2) & 3) << 4);
      u[128 * h + 64 + l] = (uint8_t)((ql[l] >> 4) | ((qh >> 4) & 3) << 4);
      u[128 * h + 96 + l] = (uint8_t)((ql[32 + l] >> 4) | ((qh >> 6) & 3) << 4);
    }
  for (int b = 0; b < 16; ++b) {
    const uint32_t u0 = load32(u + 16 * b), u1 = load32(u + 16 * b + 4), u2 = load32(u + 16 * b + 8),
                   u3 = load32(u + 16 * b + 12);
#define LOW(w, top) (((w) & 0x3F) | (((w) >> 2) & 0xFC0) | (((w) >> 4) & 0x3F000) | (((u3 >> (8 * (top))) & 0x3F) << 18))
    words[b][0] = LOW(u0, 0) | ((u0 << 2) & 0xFC000000u) | (u3 & 0x03000000u);
    words[b][1] = LOW(u1, 1) | ((u1 << 2) & 0xFC000000u) | ((u3 >> 2) & 0x03000000u);
    words[b][2] = LOW(u2, 2) | (u2 & 0x3F000000u) | ((u3 << 2) & 0xC0000000u);
#undef LOW
  }
}

// Rows [0, rows) of a run, raw: rows x sb x tsize bytes (sb of the file's
// blocks a row), into the run's ceil(rows / 16) groups: qi (groups x qg
// bytes), di and mi (elements of their part's type; mi unused where the
// format has none). Rows past `rows` in the last group are zero. Returns 0,
// or -1 for a format this file does not take.
int lse_layout_run(int fmt, const uint8_t *raw, size_t rows, size_t sb, uint8_t *qi, void *di, void *mi) {
  static const size_t TSIZE[] = {34, 18, 20, 144, 210}, BPS[] = {1, 1, 1, 8, 16}, QB[] = {32, 16, 16, 16, 12};
  if (fmt < Q8_0 || fmt > Q6_K) return -1;
  const size_t ts = TSIZE[fmt], nb = sb * BPS[fmt], qb = QB[fmt], groups = (rows + ROWS - 1) / ROWS;
  const size_t qg = nb * ROWS * qb;  // qi bytes a group
  uint8_t *d8 = (uint8_t *)di;
  uint16_t *d16 = (uint16_t *)di, *m16 = (uint16_t *)mi;
  memset(qi, 0, groups * qg);
  const size_t dn = fmt == Q4_K ? 2 * ROWS * nb : ROWS * nb, mn = fmt == Q4_K ? 2 * ROWS * sb : ROWS * (fmt == Q6_K ? sb : nb);
  memset(di, 0, groups * dn * (fmt >= Q4_K ? 1 : 2));
  if (fmt != Q8_0 && fmt != Q4_0) memset(mi, 0, groups * mn * 2);
  for (size_t r = 0; r < rows; ++r) {
    const size_t g = r / ROWS, i = r % ROWS;
    uint8_t *q = qi + g * qg;
    for (size_t s = 0; s < sb; ++s) {
      const uint8_t *blk = raw + (r * sb + s) * ts;
      if (fmt == Q6_K) {
        uint32_t words[16][3];
        q6_block_words(blk, words);
        for (size_t b = 0; b < 16; ++b) {
          const size_t bb = s * 16 + b;
          for (int w = 0; w < 3; ++w) memcpy(q + (bb * 3 + w) * 64 + i * 4, &words[b][w], 4);
          d8[g * dn + bb * ROWS + i] = blk[192 + b];
        }
        m16[g * mn + s * ROWS + i] = load16(blk + 208);
        continue;
      }
      if (fmt == Q4_K) {  // 4 runs of 32 bytes: block 2t the run's low nibbles, 2t + 1 its high ones
        uint8_t sc[8], mins[8], pairs[32];
        k4_scales(blk + 4, sc, mins);
        for (size_t t = 0; t < 4; ++t) {
          nibble_pairs(blk + 16 + 32 * t, 32, 0, pairs);
          for (size_t j = 0; j < 32; ++j) q[((s * 8 + 2 * t) * 16 + j) * ROWS + i] = pairs[j];
        }
        for (size_t b = 0; b < 8; ++b) {
          d8[g * dn + ((s * 8 + b) * 2 + 0) * ROWS + i] = sc[b];
          d8[g * dn + ((s * 8 + b) * 2 + 1) * ROWS + i] = mins[b];
        }
        m16[g * mn + (s * 2 + 0) * ROWS + i] = load16(blk);
        m16[g * mn + (s * 2 + 1) * ROWS + i] = load16(blk + 2) ^ 0x8000;  // -dmin: f16 negation is exact
        continue;
      }
      d16[g * dn + s * ROWS + i] = load16(blk);
      if (fmt == Q4_1) m16[g * mn + s * ROWS + i] = load16(blk + 2);
      if (fmt == Q8_0) {
        for (size_t j = 0; j < 32; ++j) q[(s * 32 + j) * ROWS + i] = blk[2 + j];
        continue;
      }
      uint8_t pairs[16];
      nibble_pairs(blk + (fmt == Q4_1 ? 4 : 2), 16, fmt == Q4_0 ? 0x88 : 0, pairs);
      for (size_t j = 0; j < 16; ++j) q[(s * 16 + j) * ROWS + i] = pairs[j];
    }
  }
  return 0;
}
