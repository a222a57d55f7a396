// SPDX-License-Identifier: MIT
// Conversions between float32 and the K/V element types of attn.h ("K/V element types"),
// portable C (integer bit manipulation: independent of the FTZ/DAZ state and of the
// compiler's float flags). Usable by every kernel and by the harness.
//   f16  → f32, bf16 → f32, q8_0 → f32: exact (every stored value is a float32; the
//        q8_0 product f16(d)·q has at most 11 + 7 significant bits).
//   f32 → f16, f32 → bf16: round to nearest, ties to even; overflow → ±inf; NaN stays
//        NaN (quiet, sign and the top payload bits kept); f16 subnormals are produced
//        (gradual underflow, also RNE).
//   f32 → q8_0, per block of 32: d = f16(max|x| / 127) (RNE), q_t = x_t / d rounded to
//        nearest even and clamped to [-127, 127] (d's rounding may put |x/d| above
//        127.5); d == 0 (an all-zero block, or max|x|/127 below the smallest f16) gives
//        q = 0. A block with a non-finite element gets d = NaN, q = 0, so every element
//        of it dequantizes to NaN (and attn_inputs_check refuses it), as does a block
//        whose max|x|/127 overflows f16 (d = inf).
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "attn.h"

#ifdef __cplusplus
extern "C" {
#endif

// The largest finite binary16 and bfloat16 (0x7f7f: (2 − 2^-7)·2^127).
#define ATTN_F16_MAX 65504.0
#define ATTN_BF16_MAX 0x1.fep127

float attn_f16_to_f32(uint16_t h);
uint16_t attn_f32_to_f16(float f);
float attn_bf16_to_f32(uint16_t h);
uint16_t attn_f32_to_bf16(float f);

// One row of dim elements (dim % 32 == 0) into dim/32 blocks.
void attn_quantize_q8_0_row(const float *x, int64_t dim, attn_block_q8_0 *out);

// One stored row of dim elements of type t → float32 (exact).
void attn_dequantize_row(attn_dtype t, const void *row, int64_t dim, float *out);
// One float32 row of dim elements → type t (the rounding rules above).
void attn_quantize_row(attn_dtype t, const float *x, int64_t dim, void *out);

// rows consecutive rows of dim elements, either way (attn_kv_row_bytes(t, dim) per row).
void attn_dequantize_rows(attn_dtype t, const void *x, size_t rows, int64_t dim, float *out);
void attn_quantize_rows(attn_dtype t, const float *x, size_t rows, int64_t dim, void *out);

// ── Compute modes (attn.h, "Compute modes"): the rounding of the inputs ───────────────
// x rounded to the element type of mode c: bfloat16 (BF16) or binary16 (F16), nearest,
// ties to even, as a float32 (exact); x itself for F32 and INT8.
float attn_compute_round(attn_compute c, float x);
// True if mode c rounds the K and V elements it reads (BF16, F16) and a stored type t does
// not already hold values of that type (BF16 of BF16, F16 of F16 are unchanged).
bool attn_compute_rounds_kv(attn_compute c, attn_dtype t);
// rows rows of dim elements of Q (float32) as mode c sees them: BF16/F16 round each
// element (attn_compute_round); INT8 quantizes each row per 32-element block with the
// Q8_0 rule above and dequantizes it (dim % 32 == 0); F32 copies.
void attn_compute_round_q(attn_compute c, const float *q, size_t rows, int64_t dim, float *out);
// rows stored rows of dim elements of type t (K or V) as mode c sees them, as float32:
// widened exactly, then rounded per element for BF16/F16. One pass for both.
void attn_compute_round_kv(attn_compute c, attn_dtype t, const void *x, size_t rows, int64_t dim,
                           float *out);

// Element idx (flat, row-major with rows of dim elements) of a tensor of type t.
static inline float attn_kv_elem(attn_dtype t, const void *x, int64_t dim, size_t idx) {
  switch (t) {
    case ATTN_DTYPE_F16:
      return attn_f16_to_f32(((const uint16_t *)x)[idx]);
    case ATTN_DTYPE_BF16:
      return attn_bf16_to_f32(((const uint16_t *)x)[idx]);
    case ATTN_DTYPE_Q8_0: {
      const size_t row = idx / (size_t)dim, col = idx % (size_t)dim;
      const attn_block_q8_0 *b = (const attn_block_q8_0 *)x +
                                 row * ((size_t)dim / ATTN_Q8_0_BLOCK) + col / ATTN_Q8_0_BLOCK;
      return attn_f16_to_f32(b->d) * (float)b->qs[col % ATTN_Q8_0_BLOCK];
    }
    case ATTN_DTYPE_F32:
    default:
      return ((const float *)x)[idx];
  }
}

#ifdef __cplusplus
}
#endif
