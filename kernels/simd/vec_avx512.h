// SPDX-License-Identifier: MIT
// vec_avx512.h — the SIMD mapping for AVX-512F: 16 float lanes in a __m512.
// Include ONLY from translation units compiled with -mavx512f (files named *_avx512.c).
// Same names as vec_avx2.h (see there for the list).
#pragma once

#if !defined(__AVX512F__)
#error \
    "vec_avx512.h needs -mavx512f: include it only from files named *_avx512.c (kernels/CMakeLists.txt)"
#endif

#include <immintrin.h>
#include <stdint.h>

#include "attn.h"

typedef __m512 vf_t;
enum { VF_W = 16 };
#define VF_ISA ATTN_ISA_AVX512F
#define VF_ISA_NAME "avx512f"

static inline vf_t vf_load(const float *p) {
  return _mm512_loadu_ps(p);
}
static inline void vf_store(float *p, vf_t v) {
  _mm512_storeu_ps(p, v);
}
static inline vf_t vf_set1(float x) {
  return _mm512_set1_ps(x);
}
static inline vf_t vf_zero(void) {
  return _mm512_setzero_ps();
}
// x unchanged, but held in a register from here on: the compiler may no longer fold
// the load that produced it into each instruction that uses it (a register-held
// operand reused by several FMAs would otherwise be reloaded for every one).
static inline vf_t vf_pin(vf_t x) {
  __asm__("" : "+v"(x));
  return x;
}
static inline vf_t vf_fma(vf_t a, vf_t b, vf_t c) {
  return _mm512_fmadd_ps(a, b, c);
}
static inline vf_t vf_mul(vf_t a, vf_t b) {
  return _mm512_mul_ps(a, b);
}
static inline vf_t vf_add(vf_t a, vf_t b) {
  return _mm512_add_ps(a, b);
}
static inline vf_t vf_sub(vf_t a, vf_t b) {
  return _mm512_sub_ps(a, b);
}
static inline vf_t vf_max(vf_t a, vf_t b) {
  return _mm512_max_ps(a, b);
}
static inline vf_t vf_min(vf_t a, vf_t b) {
  return _mm512_min_ps(a, b);
}

// Masked-off lanes are neither read nor written (no fault), loads give 0 there.
static inline vf_t vf_load_partial(const float *p, int n) {
  return _mm512_maskz_loadu_ps((__mmask16)((1u << n) - 1u), p);
}
static inline void vf_store_partial(float *p, vf_t v, int n) {
  _mm512_mask_storeu_ps(p, (__mmask16)((1u << n) - 1u), v);
}

static inline float vf_hsum(vf_t v) {
  return _mm512_reduce_add_ps(v);
}
static inline float vf_hmax(vf_t v) {
  return _mm512_reduce_max_ps(v);
}

// ── Primitives used by the shared exp (vec_exp.h) ──
static inline vf_t vf_round(vf_t x) {
  return _mm512_roundscale_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}
static inline vf_t vf_pow2i(vf_t n) {
  const __m512i e = _mm512_add_epi32(_mm512_cvtps_epi32(n), _mm512_set1_epi32(127));
  return _mm512_castsi512_ps(_mm512_slli_epi32(e, 23));
}
static inline vf_t vf_zero_below(vf_t x, float c, vf_t v) {
  const __mmask16 keep = _mm512_cmp_ps_mask(x, _mm512_set1_ps(c), _CMP_NLT_UQ);
  return _mm512_maskz_mov_ps(keep, v);
}
// x < c ? 0 : p·2^n in one masked vscalefps (n a whole float; NaN x keeps its lane, so
// NaN flows through). Exact where p·2^n is a normal float, so bitwise
// vf_zero_below(x, c, vf_mul(p, vf_pow2i(n))) for every x ≥ c, with no integer range on n.
#define VF_HAVE_SCALEF_BELOW 1
static inline vf_t vf_scalef_below(vf_t x, float c, vf_t p, vf_t n) {
  const __mmask16 keep = _mm512_cmp_ps_mask(x, _mm512_set1_ps(c), _CMP_NLT_UQ);
  return _mm512_maskz_scalef_ps(keep, p, n);
}

// ── Primitives used by the shared tanh (vec_tanh.h) ──
static inline vf_t vf_div(vf_t a, vf_t b) {
  return _mm512_div_ps(a, b);
}
// |x| (the sign bit cleared) and sign(s)·|m| (the sign bit of s on m, m ≥ 0). Integer
// ops: AVX-512F has no float and/or (that is AVX512DQ).
static inline vf_t vf_abs(vf_t x) {
  return _mm512_castsi512_ps(
      _mm512_and_si512(_mm512_castps_si512(x), _mm512_set1_epi32(0x7fffffff)));
}
static inline vf_t vf_copysign(vf_t m, vf_t s) {
  const __m512i sign = _mm512_and_si512(_mm512_castps_si512(s), _mm512_set1_epi32(INT32_MIN));
  return _mm512_castsi512_ps(_mm512_or_si512(_mm512_castps_si512(m), sign));
}
// x < c ? a : b (lane-wise); an unordered compare (NaN x) gives b.
static inline vf_t vf_select_lt(vf_t x, float c, vf_t a, vf_t b) {
  return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(x, _mm512_set1_ps(c), _CMP_LT_OQ), b, a);
}
// True if x < c in every lane (false if any lane is NaN).
static inline int vf_all_lt(vf_t x, float c) {
  return _mm512_cmp_ps_mask(x, _mm512_set1_ps(c), _CMP_LT_OQ) == 0xffff;
}

// ── In-register transpose, used by the K packer (microkernel.h) ──
#define VF_HAVE_TRANSPOSE 1
// dst[d·ds + c] = src[c·ss + d], c, d < 16: the 16×16 in-register transpose (4 rounds of
// 2×2 block swaps: 32-bit lanes, 64-bit pairs, 128-bit and 256-bit blocks).
static inline void vf_transpose_block(const float *src, int64_t ss, float *dst, int64_t ds) {
  __m512 r[16], t[16];
  for (int i = 0; i < 16; i++) r[i] = _mm512_loadu_ps(src + i * ss);
  for (int i = 0; i < 16; i += 2) {  // interleave 32-bit lanes of row pairs
    t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
  }
  for (int i = 0; i < 16; i += 4) {  // 64-bit pairs across row quads
    r[i] = _mm512_shuffle_ps(t[i], t[i + 2], 0x44);
    r[i + 1] = _mm512_shuffle_ps(t[i], t[i + 2], 0xEE);
    r[i + 2] = _mm512_shuffle_ps(t[i + 1], t[i + 3], 0x44);
    r[i + 3] = _mm512_shuffle_ps(t[i + 1], t[i + 3], 0xEE);
  }
  for (int i = 0; i < 4; i++) {  // 128-bit blocks across row octets
    t[i] = _mm512_shuffle_f32x4(r[i], r[i + 4], 0x88);
    t[i + 4] = _mm512_shuffle_f32x4(r[i], r[i + 4], 0xDD);
    t[i + 8] = _mm512_shuffle_f32x4(r[i + 8], r[i + 12], 0x88);
    t[i + 12] = _mm512_shuffle_f32x4(r[i + 8], r[i + 12], 0xDD);
  }
  for (int i = 0; i < 8; i++) {  // 128-bit blocks across the two halves
    r[i] = _mm512_shuffle_f32x4(t[i], t[i + 8], 0x88);
    r[i + 8] = _mm512_shuffle_f32x4(t[i], t[i + 8], 0xDD);
  }
  for (int i = 0; i < 16; i++) _mm512_storeu_ps(dst + i * ds, r[i]);  // r[i] = column i
}

#include "simd/vec_exp.h"
#include "simd/vec_tanh.h"
