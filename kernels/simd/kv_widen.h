// SPDX-License-Identifier: MIT
// kv_widen.h — K/V element types (attn.h, "K/V element types") widened to float32 in
// registers, for the SIMD kernels. Include after a vec_<isa>.h.
//
// Every widening is exact: a binary16 or bfloat16 value is a float32, and a Q8_0 element
// f16(d)·q (|q| ≤ 127) has at most 11 + 7 significant bits, so the float32 product is
// exact too. A kernel that widens K and V and then runs its float32 arithmetic therefore
// computes bitwise what it computes on float32 copies made by attn_dequantize_row.
//
// Per ISA (VF_W elements per call unless noted):
//   kv_w_bf16     zero-extend 16 → 32 bits, shift left by 16 (the bf16 bits are the top
//                 half of the float32)
//   kv_w_i8       sign-extend int8 → int32, convert to float (exact, |q| ≤ 127)
//   kv_w_scale    the Q8_0 block scale f16(d), broadcast (AVX2: portable C;
//                 kv_w_scale_f16c the F16C instruction, KV_F16C functions only)
//   kv_w_f16      binary16 → float32: AVX-512F vcvtph2ps (zmm); AVX2 the F16C vcvtph2ps
//                 (ymm), in functions marked KV_F16C (target "f16c"), taken only when the
//                 CPU has F16C (ATTN_ISA_F16C, a run-time branch: kv_have_f16c); NEON fcvtl
//                 (vcvt_f32_f16, base AArch64).
// F16 subnormals: vcvtph2ps and fcvtl convert them exactly (their results are float32
// normals, so FTZ/DAZ do not touch them); bf16 subnormals are float32 subnormals and act
// as zero under DAZ, as their float32 copies do.
// Then, over the vf_* mapping: kv_widen_rows (rows → float32 rows, zero-padded), used
// once per K/V block or tile by the flash kernels.
#pragma once

#include <stdint.h>
#include <string.h>

#include "attn.h"
#include "core/convert.h"

#if defined(__AVX512F__)
#include <immintrin.h>
#define KV_F16C
static inline int kv_have_f16c(void) {
  return 1;  // vcvtph2ps zmm is AVX-512F
}
KV_F16C static inline vf_t kv_w_f16(const uint16_t *p) {
  return _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)p));
}
static inline vf_t kv_w_bf16(const uint16_t *p) {
  const __m512i x = _mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)p));
  return _mm512_castsi512_ps(_mm512_slli_epi32(x, 16));
}
static inline vf_t kv_w_i8(const int8_t *p) {
  return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)p)));
}
static inline vf_t kv_w_scale(uint16_t d) {
  return _mm512_cvtph_ps(_mm256_set1_epi16((short)d));
}
#elif defined(__AVX2__)
#include <immintrin.h>
#define KV_F16C __attribute__((target("f16c")))
static inline int kv_have_f16c(void) {
  return (attn_cpu_features() & ATTN_ISA_F16C) != 0;
}
KV_F16C static inline vf_t kv_w_f16(const uint16_t *p) {
  return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)p));
}
static inline vf_t kv_w_bf16(const uint16_t *p) {
  const __m256i x = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)p));
  return _mm256_castsi256_ps(_mm256_slli_epi32(x, 16));
}
static inline vf_t kv_w_i8(const int8_t *p) {
  return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)p)));
}
static inline vf_t kv_w_scale(uint16_t d) {  // portable: no F16C needed for the scale
  return _mm256_set1_ps(attn_f16_to_f32(d));
}
KV_F16C static inline vf_t kv_w_scale_f16c(uint16_t d) {  // the same with F16C
  return _mm256_cvtph_ps(_mm_set1_epi16((short)d));
}
#elif defined(__aarch64__)
#define KV_F16C
static inline int kv_have_f16c(void) {
  return 1;  // fcvtl is base AArch64
}
static inline vf_t kv_w_f16(const uint16_t *p) {
  return vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(p)));
}
static inline vf_t kv_w_bf16(const uint16_t *p) {
  return vreinterpretq_f32_u32(vshll_n_u16(vld1_u16(p), 16));
}
static inline vf_t kv_w_i8(const int8_t *p) {  // 4 bytes, no over-read
  int32_t w;
  memcpy(&w, p, sizeof w);
  const int16x8_t h = vmovl_s8(vreinterpret_s8_s32(vdup_n_s32(w)));
  return vcvtq_f32_s32(vmovl_s16(vget_low_s16(h)));
}
static inline vf_t kv_w_scale(uint16_t d) {
  return vcvt_f32_f16(vreinterpret_f16_u16(vdup_n_u16(d)));
}
#else
#error "kv_widen.h: include after vec_avx512.h, vec_avx2.h or vec_neon.h"
#endif

#if !defined(__AVX2__) || defined(__AVX512F__)
#define kv_w_scale_f16c kv_w_scale  // the widening needs nothing beyond the base ISA
#endif

_Static_assert(ATTN_Q8_0_BLOCK % VF_W == 0, "a vector never straddles two Q8_0 blocks");

// Row r of src (rows of row_bytes bytes, dim elements of type t) → dst[r·ldd + e] for
// r < n, e < dim, and dst[r·ldd + e] = 0 for dim ≤ e < pad. Exact (see above).
static inline void kv_widen_rows_scalar(attn_dtype t, const char *src, size_t row_bytes, int64_t n,
                                        int64_t dim, float *dst, int64_t ldd, int64_t pad) {
  for (int64_t r = 0; r < n; r++) {
    float *d = dst + r * ldd;
    attn_dequantize_row(t, src + (size_t)r * row_bytes, dim, d);
    for (int64_t e = dim; e < pad; e++) d[e] = 0.0f;
  }
}

// The SIMD loop for one 16-bit type (f16 or bf16: is_f16 a compile-time constant).
#define KV_WIDEN16_BODY(WIDEN, CONVERT)                                  \
  for (int64_t r = 0; r < n; r++) {                                      \
    const uint16_t *s = (const uint16_t *)(src + (size_t)r * row_bytes); \
    float *d = dst + r * ldd;                                            \
    int64_t e = 0;                                                       \
    for (; e + VF_W <= dim; e += VF_W) vf_store(d + e, WIDEN(s + e));    \
    for (; e < dim; e++) d[e] = CONVERT(s[e]);                           \
    for (; e < pad; e++) d[e] = 0.0f;                                    \
  }

KV_F16C static void kv_widen_rows_f16(const char *src, size_t row_bytes, int64_t n, int64_t dim,
                                      float *dst, int64_t ldd, int64_t pad) {
  KV_WIDEN16_BODY(kv_w_f16, attn_f16_to_f32)
}
static void kv_widen_rows_bf16(const char *src, size_t row_bytes, int64_t n, int64_t dim,
                               float *dst, int64_t ldd, int64_t pad) {
  KV_WIDEN16_BODY(kv_w_bf16, attn_bf16_to_f32)
}
#undef KV_WIDEN16_BODY

// Q8_0 rows (dim % 32 == 0): per block, the scale once, then 32/VF_W vectors d·q.
static void kv_widen_rows_q8_0(const char *src, size_t row_bytes, int64_t n, int64_t dim,
                               float *dst, int64_t ldd, int64_t pad) {
  const int64_t nb = dim / ATTN_Q8_0_BLOCK;
  for (int64_t r = 0; r < n; r++) {
    const attn_block_q8_0 *b = (const attn_block_q8_0 *)(src + (size_t)r * row_bytes);
    float *d = dst + r * ldd;
    for (int64_t i = 0; i < nb; i++) {
      const vf_t sc = kv_w_scale(b[i].d);
#pragma GCC unroll 8
      for (int x = 0; x < ATTN_Q8_0_BLOCK; x += VF_W)
        vf_store(d + i * ATTN_Q8_0_BLOCK + x, vf_mul(sc, kv_w_i8(b[i].qs + x)));
    }
    for (int64_t e = dim; e < pad; e++) d[e] = 0.0f;
  }
}

// n rows of type t (t != F32) → float32 rows of stride ldd, zero-padded to pad ≥ dim.
static inline void kv_widen_rows(attn_dtype t, const void *src, size_t row_bytes, int64_t n,
                                 int64_t dim, float *dst, int64_t ldd, int64_t pad) {
  const char *s = (const char *)src;
  switch (t) {
    case ATTN_DTYPE_F16:
      if (kv_have_f16c())
        kv_widen_rows_f16(s, row_bytes, n, dim, dst, ldd, pad);
      else
        kv_widen_rows_scalar(t, s, row_bytes, n, dim, dst, ldd, pad);
      break;
    case ATTN_DTYPE_BF16:
      kv_widen_rows_bf16(s, row_bytes, n, dim, dst, ldd, pad);
      break;
    case ATTN_DTYPE_Q8_0:
      kv_widen_rows_q8_0(s, row_bytes, n, dim, dst, ldd, pad);
      break;
    default:
      kv_widen_rows_scalar(t, s, row_bytes, n, dim, dst, ldd, pad);
      break;
  }
}
