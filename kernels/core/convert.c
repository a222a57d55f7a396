// SPDX-License-Identifier: MIT
// float32 ⇄ f16 / bf16 / q8_0 (rules in convert.h).
#include "core/convert.h"

#include <math.h>

static uint32_t f32_bits(float f) {
  uint32_t x;
  memcpy(&x, &f, sizeof x);
  return x;
}
static float f32_from_bits(uint32_t x) {
  float f;
  memcpy(&f, &x, sizeof f);
  return f;
}

float attn_f16_to_f32(uint16_t h) {
  const uint32_t sign = (uint32_t)(h & 0x8000u) << 16, em = h & 0x7fffu;
  if (em >= 0x7c00u) return f32_from_bits(sign | 0x7f800000u | ((em & 0x3ffu) << 13));  // inf, NaN
  if (em >= 0x0400u) return f32_from_bits(sign | ((em << 13) + 0x38000000u));  // rebias 15 → 127
  // zero or subnormal: em·2^-24, exact (em < 2^10; both factors and the product are normal
  // float32 or zero, so FTZ/DAZ cannot touch it)
  const float f = (float)em * 0x1p-24f;
  return sign ? -f : f;
}

uint16_t attn_f32_to_f16(float f) {
  const uint32_t x = f32_bits(f);
  const uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
  const uint32_t ax = x & 0x7fffffffu;
  if (ax > 0x7f800000u)  // NaN: quiet, the top 9 payload bits kept
    return (uint16_t)(sign | 0x7e00u | ((ax >> 13) & 0x3ffu));
  // |f| ≥ 65520 (halfway from 65504, the largest f16, to 2^16; the tie goes to the even
  // 2^16): inf. Also covers inf.
  if (ax >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u);
  if (ax >= 0x38800000u) {  // ≥ 2^-14: normal. Rebias 127 → 15, round 13 bits off (RNE);
                            // a carry out of the mantissa correctly bumps the exponent.
    const uint32_t r = ax + 0xfffu + ((ax >> 13) & 1u);
    return (uint16_t)(sign | ((r - 0x38000000u) >> 13));
  }
  // Subnormal f16: m·2^-24 with m = RNE(|f|·2^24). |f| ≤ 2^-25 (the tie) rounds to 0.
  if (ax <= 0x33000000u) return sign;
  const uint32_t e = ax >> 23;                         // 102..112
  const uint32_t mant = (ax & 0x7fffffu) | 0x800000u;  // |f| = mant·2^(e−150)
  const uint32_t shift = 126u - e;                     // m = mant·2^(e−126): 14..24 bits off
  uint32_t m = mant >> shift;
  const uint32_t rem = mant & ((1u << shift) - 1u), half = 1u << (shift - 1u);
  if (rem > half || (rem == half && (m & 1u))) m++;  // m = 0x400 is the smallest normal
  return (uint16_t)(sign | m);
}

float attn_bf16_to_f32(uint16_t h) {
  return f32_from_bits((uint32_t)h << 16);
}

uint16_t attn_f32_to_bf16(float f) {
  const uint32_t x = f32_bits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40u);  // quiet NaN
  // RNE on the low 16 bits; a carry into the exponent is right, up to inf on overflow
  return (uint16_t)((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

void attn_quantize_q8_0_row(const float *x, int64_t dim, attn_block_q8_0 *out) {
  const int64_t nb = dim / ATTN_Q8_0_BLOCK;
  for (int64_t b = 0; b < nb; b++) {
    const float *xb = x + b * ATTN_Q8_0_BLOCK;
    attn_block_q8_0 *ob = out + b;
    float amax = 0.0f;
    bool finite = true;
    for (int t = 0; t < ATTN_Q8_0_BLOCK; t++) {
      if (!isfinite(xb[t])) finite = false;
      const float a = fabsf(xb[t]);
      if (a > amax) amax = a;
    }
    memset(ob->qs, 0, sizeof ob->qs);
    if (!finite) {
      ob->d = 0x7e00u;  // NaN: the block is not representable
      continue;
    }
    ob->d = attn_f32_to_f16(amax / 127.0f);
    const float d = attn_f16_to_f32(ob->d);
    if (d == 0.0f || isinf(d)) continue;  // zeros, or (inf) NaN on dequantization
    for (int t = 0; t < ATTN_Q8_0_BLOCK; t++) {
      float q = rintf(xb[t] / d);  // the default rounding mode: to nearest, ties to even
      q = q > 127.0f ? 127.0f : (q < -127.0f ? -127.0f : q);
      ob->qs[t] = (int8_t)q;
    }
  }
}

void attn_dequantize_row(attn_dtype t, const void *row, int64_t dim, float *out) {
  switch (t) {
    case ATTN_DTYPE_F16: {
      const uint16_t *h = row;
      for (int64_t i = 0; i < dim; i++) out[i] = attn_f16_to_f32(h[i]);
      return;
    }
    case ATTN_DTYPE_BF16: {
      const uint16_t *h = row;
      for (int64_t i = 0; i < dim; i++) out[i] = attn_bf16_to_f32(h[i]);
      return;
    }
    case ATTN_DTYPE_Q8_0: {
      const attn_block_q8_0 *b = row;
      for (int64_t i = 0; i < dim / ATTN_Q8_0_BLOCK; i++) {
        const float d = attn_f16_to_f32(b[i].d);
        for (int t = 0; t < ATTN_Q8_0_BLOCK; t++)
          out[i * ATTN_Q8_0_BLOCK + t] = d * (float)b[i].qs[t];
      }
      return;
    }
    case ATTN_DTYPE_F32:
    default:
      memcpy(out, row, (size_t)dim * sizeof(float));
      return;
  }
}

void attn_quantize_row(attn_dtype t, const float *x, int64_t dim, void *out) {
  switch (t) {
    case ATTN_DTYPE_F16: {
      uint16_t *h = out;
      for (int64_t i = 0; i < dim; i++) h[i] = attn_f32_to_f16(x[i]);
      return;
    }
    case ATTN_DTYPE_BF16: {
      uint16_t *h = out;
      for (int64_t i = 0; i < dim; i++) h[i] = attn_f32_to_bf16(x[i]);
      return;
    }
    case ATTN_DTYPE_Q8_0:
      attn_quantize_q8_0_row(x, dim, out);
      return;
    case ATTN_DTYPE_F32:
    default:
      memcpy(out, x, (size_t)dim * sizeof(float));
      return;
  }
}

void attn_dequantize_rows(attn_dtype t, const void *x, size_t rows, int64_t dim, float *out) {
  const size_t rb = attn_kv_row_bytes(t, dim);
  for (size_t r = 0; r < rows; r++)
    attn_dequantize_row(t, (const char *)x + r * rb, dim, out + r * (size_t)dim);
}

void attn_quantize_rows(attn_dtype t, const float *x, size_t rows, int64_t dim, void *out) {
  const size_t rb = attn_kv_row_bytes(t, dim);
  for (size_t r = 0; r < rows; r++)
    attn_quantize_row(t, x + r * (size_t)dim, dim, (char *)out + r * rb);
}

float attn_compute_round(attn_compute c, float x) {
  switch (c) {
    case ATTN_COMPUTE_BF16:
      return attn_bf16_to_f32(attn_f32_to_bf16(x));
    case ATTN_COMPUTE_F16:
      return attn_f16_to_f32(attn_f32_to_f16(x));
    case ATTN_COMPUTE_F32:
    case ATTN_COMPUTE_INT8:
    default:
      return x;
  }
}

bool attn_compute_rounds_kv(attn_compute c, attn_dtype t) {
  if (c == ATTN_COMPUTE_BF16) return t != ATTN_DTYPE_BF16;
  if (c == ATTN_COMPUTE_F16) return t != ATTN_DTYPE_F16;
  return false;
}

// n values x rounded to bfloat16 as float32 (attn_f32_to_bf16 then widened, bit for bit),
// written branch-free so that the compiler vectorizes it: the copies attn_kernel_run makes
// for a kernel that does not run the BF16 mode go through here.
static void round_bf16_n(const float *x, size_t n, float *out) {
  for (size_t i = 0; i < n; i++) {
    const uint32_t b = f32_bits(x[i]);
    const uint32_t nan = (b & 0x7fffffffu) > 0x7f800000u;
    const uint32_t rne = b + 0x7fffu + ((b >> 16) & 1u), quiet = b | 0x400000u;
    out[i] = f32_from_bits((nan ? quiet : rne) & 0xffff0000u);
  }
}

// The same for binary16 (attn_f32_to_f16 then widened): normal results, ±inf and NaN
// branch-free (vectorized), each |x| < 2^-14 (f16 subnormals and zero) copied as it is
// and then rounded one at a time by the scalar rule, in blocks of 256 so that a block
// without one costs nothing more (a rounded normal stays ≥ 2^-14, so the second pass
// finds exactly those). x may be out.
static void round_f16_n(const float *x, size_t n, float *out) {
  for (size_t i0 = 0; i0 < n; i0 += 256) {
    const size_t i1 = n - i0 < 256 ? n : i0 + 256;
    uint32_t small = 0;
    for (size_t i = i0; i < i1; i++) {
      const uint32_t b = f32_bits(x[i]), sign = b & 0x80000000u, ax = b & 0x7fffffffu;
      const uint32_t rne = (ax + 0xfffu + ((ax >> 13) & 1u)) & ~0x1fffu;  // 13 bits off
      const uint32_t nan = sign | 0x7fc00000u | (ax & 0x7fe000u);
      const uint32_t big = ax > 0x7f800000u    ? nan
                           : ax >= 0x477ff000u ? sign | 0x7f800000u
                                               : sign | rne;
      small |= ax < 0x38800000u ? 1u : 0u;  // (this form vectorizes)
      out[i] = f32_from_bits(ax < 0x38800000u ? b : big);
    }
    if (small)
      for (size_t i = i0; i < i1; i++)
        if ((f32_bits(out[i]) & 0x7fffffffu) < 0x38800000u)
          out[i] = attn_f16_to_f32(attn_f32_to_f16(out[i]));
  }
}

void attn_compute_round_q(attn_compute c, const float *q, size_t rows, int64_t dim, float *out) {
  const size_t n = rows * (size_t)dim;
  if (c == ATTN_COMPUTE_INT8) {
    attn_block_q8_0 blocks[8];  // a row is quantized in pieces of up to 8 blocks
    const int64_t piece = 8 * ATTN_Q8_0_BLOCK;
    for (size_t r = 0; r < rows; r++) {
      for (int64_t at = 0; at < dim; at += piece) {
        const int64_t w = dim - at < piece ? dim - at : piece;
        const float *x = q + r * (size_t)dim + (size_t)at;
        attn_quantize_q8_0_row(x, w, blocks);
        attn_dequantize_row(ATTN_DTYPE_Q8_0, blocks, w, out + r * (size_t)dim + (size_t)at);
      }
    }
    return;
  }
  if (c == ATTN_COMPUTE_F32) {
    memcpy(out, q, n * sizeof(float));
    return;
  }
  if (c == ATTN_COMPUTE_BF16)
    round_bf16_n(q, n, out);
  else if (c == ATTN_COMPUTE_F16)
    round_f16_n(q, n, out);
  else
    memcpy(out, q, n * sizeof(float));
}

void attn_compute_round_kv(attn_compute c, attn_dtype t, const void *x, size_t rows, int64_t dim,
                           float *out) {
  const size_t n = rows * (size_t)dim;
  const bool rounds = attn_compute_rounds_kv(c, t);
  const float *src = out;
  if (rounds && t == ATTN_DTYPE_F32)
    src = x;  // one pass
  else
    attn_dequantize_rows(t, x, rows, dim, out);
  if (!rounds) return;
  if (c == ATTN_COMPUTE_BF16)
    round_bf16_n(src, n, out);
  else  // F16 (attn_compute_rounds_kv: the two modes that round)
    round_f16_n(src, n, out);
}

// Bytes of one stored K/V row of dim elements (attn.h), saturating at SIZE_MAX.
size_t attn_kv_row_bytes(attn_dtype t, int64_t dim) {
  if (dim < 1) return 0;
  const uint64_t n = (uint64_t)dim;
  uint64_t bytes;
  switch (t) {
    case ATTN_DTYPE_F32:
      bytes = n > UINT64_MAX / 4 ? UINT64_MAX : 4 * n;
      break;
    case ATTN_DTYPE_F16:
    case ATTN_DTYPE_BF16:
      bytes = 2 * n;  // dim < 2^63
      break;
    case ATTN_DTYPE_Q8_0:
      bytes = (n + ATTN_Q8_0_BLOCK - 1) / ATTN_Q8_0_BLOCK * sizeof(attn_block_q8_0);
      break;
    default:
      return 0;
  }
  return bytes > SIZE_MAX ? SIZE_MAX : (size_t)bytes;
}
