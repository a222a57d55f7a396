// SPDX-License-Identifier: MIT
// vec_avx2.h — the SIMD mapping for AVX2 + FMA3: 8 float lanes in a __m256.
// Include ONLY from translation units compiled with -mavx2 -mfma (files named *_avx2.c).
// Every mapping header (vec_avx2.h, vec_avx512.h, vec_neon.h) defines the same names,
// so kernel bodies written against them serve every ISA:
//   vf_t, VF_W (lanes), VF_ISA (ATTN_ISA_* bit), VF_ISA_NAME
//   vf_load/vf_store (unaligned), vf_load_partial/vf_store_partial (n < VF_W lanes;
//   lanes >= n are neither read nor written; loads give 0 there)
//   vf_set1, vf_zero, vf_fma(a,b,c)=a·b+c, vf_mul, vf_add, vf_sub, vf_max, vf_min,
//   vf_hmax, vf_hsum (horizontal), vf_exp (vec_exp.h, shared), vf_tanh (vec_tanh.h, shared;
//   its primitives vf_div, vf_abs, vf_copysign, vf_select_lt, vf_all_lt)
#pragma once

#if !defined(__AVX2__) || !defined(__FMA__)
#error \
    "vec_avx2.h needs -mavx2 -mfma: include it only from files named *_avx2.c (kernels/CMakeLists.txt)"
#endif

#include <immintrin.h>
#include <stdint.h>

#include "attn.h"

typedef __m256 vf_t;
enum { VF_W = 8 };
#define VF_ISA ATTN_ISA_AVX2
#define VF_ISA_NAME "avx2"

static inline vf_t vf_load(const float *p) {
  return _mm256_loadu_ps(p);
}
static inline void vf_store(float *p, vf_t v) {
  _mm256_storeu_ps(p, v);
}
static inline vf_t vf_set1(float x) {
  return _mm256_set1_ps(x);
}
static inline vf_t vf_zero(void) {
  return _mm256_setzero_ps();
}
// x unchanged, but held in a register from here on: the compiler may no longer fold
// the load that produced it into each instruction that uses it (a register-held
// operand reused by several FMAs would otherwise be reloaded for every one).
static inline vf_t vf_pin(vf_t x) {
  __asm__("" : "+x"(x));
  return x;
}
static inline vf_t vf_fma(vf_t a, vf_t b, vf_t c) {
  return _mm256_fmadd_ps(a, b, c);
}
static inline vf_t vf_mul(vf_t a, vf_t b) {
  return _mm256_mul_ps(a, b);
}
static inline vf_t vf_add(vf_t a, vf_t b) {
  return _mm256_add_ps(a, b);
}
static inline vf_t vf_sub(vf_t a, vf_t b) {
  return _mm256_sub_ps(a, b);
}
static inline vf_t vf_max(vf_t a, vf_t b) {
  return _mm256_max_ps(a, b);
}
static inline vf_t vf_min(vf_t a, vf_t b) {
  return _mm256_min_ps(a, b);
}

// Lane mask with the first n (0..8) lanes set: a sliding window over {-1 x8, 0 x8}.
static inline __m256i vf_mask_first(int n) {
  static const int32_t kWindow[16] = {-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0};
  return _mm256_loadu_si256((const __m256i *)(kWindow + 8 - n));
}
// vmaskmov does not touch (nor fault on) masked-off lanes.
static inline vf_t vf_load_partial(const float *p, int n) {
  return _mm256_maskload_ps(p, vf_mask_first(n));
}
static inline void vf_store_partial(float *p, vf_t v, int n) {
  _mm256_maskstore_ps(p, vf_mask_first(n), v);
}

static inline float vf_hsum(vf_t v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}
static inline float vf_hmax(vf_t v) {
  __m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_max_ps(s, _mm_movehl_ps(s, s));
  s = _mm_max_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// ── Primitives used by the shared exp (vec_exp.h) ──
// Round to nearest integer (ties to even), as float.
static inline vf_t vf_round(vf_t x) {
  return _mm256_round_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}
// 2^n for integral float n in [-126, 127]: the exponent field set to n + 127.
static inline vf_t vf_pow2i(vf_t n) {
  const __m256i e = _mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127));
  return _mm256_castsi256_ps(_mm256_slli_epi32(e, 23));
}
// n = round(t) (nearest, ties to even) as float, for |t| < 2^22: u = t + 1.5·2^23 is
// rounded once, to an integer (ulp 1 there; 1.5·2^23 is even, so ties go to even as in
// vf_round), and n = u − 1.5·2^23 exactly. Two adds for vroundps (two uops on Intel),
// bitwise the same.
#define VF_HAVE_ROUND_MAGIC 1
static inline vf_t vf_round_magic(vf_t t) {
  const vf_t magic = _mm256_set1_ps(12582912.0f);
  return _mm256_sub_ps(_mm256_add_ps(t, magic), magic);
}
// p·2^n for integral float n where the product is a normal float: n added to p's exponent
// field (an integer add; multiplying by 2^n is exact there too, so the bits are the
// same). It replaces the multiply at the end of vf_exp's dependency chain by a 1-cycle
// integer add and takes it off the two FMA/multiply pipes (docs/design.md). A NaN n
// converts to 0x80000000, which the shift clears: p — then NaN as well — is returned
// unchanged, so NaN still flows through vf_exp.
#define VF_HAVE_SCALE_EXP 1
static inline vf_t vf_scale_exp(vf_t p, vf_t n) {
  const __m256i sh = _mm256_slli_epi32(_mm256_cvtps_epi32(n), 23);
  return _mm256_castsi256_ps(_mm256_add_epi32(_mm256_castps_si256(p), sh));
}
// x < c ? 0 : v (lane-wise). An unordered compare (NaN x) keeps v.
static inline vf_t vf_zero_below(vf_t x, float c, vf_t v) {
  return _mm256_andnot_ps(_mm256_cmp_ps(x, _mm256_set1_ps(c), _CMP_LT_OQ), v);
}

// ── Primitives used by the shared tanh (vec_tanh.h) ──
static inline vf_t vf_div(vf_t a, vf_t b) {
  return _mm256_div_ps(a, b);
}
// |x| (the sign bit cleared) and sign(s)·|m| (the sign bit of s on m, m ≥ 0).
static inline vf_t vf_abs(vf_t x) {
  return _mm256_andnot_ps(_mm256_set1_ps(-0.0f), x);
}
static inline vf_t vf_copysign(vf_t m, vf_t s) {
  return _mm256_or_ps(m, _mm256_and_ps(_mm256_set1_ps(-0.0f), s));
}
// x < c ? a : b (lane-wise); an unordered compare (NaN x) gives b.
static inline vf_t vf_select_lt(vf_t x, float c, vf_t a, vf_t b) {
  return _mm256_blendv_ps(b, a, _mm256_cmp_ps(x, _mm256_set1_ps(c), _CMP_LT_OQ));
}
// True if x < c in every lane (false if any lane is NaN).
static inline int vf_all_lt(vf_t x, float c) {
  return _mm256_movemask_ps(_mm256_cmp_ps(x, _mm256_set1_ps(c), _CMP_LT_OQ)) == 0xff;
}

// ── In-register transpose, used by the K packer (microkernel.h) ──
#define VF_HAVE_TRANSPOSE 1
// dst[d·ds + c] = src[c·ss + d], c, d < 8: the 8×8 in-register transpose (32-bit lanes,
// 64-bit pairs, then 128-bit halves).
static inline void vf_transpose_block(const float *src, int64_t ss, float *dst, int64_t ds) {
  __m256 r[8], t[8];
  for (int i = 0; i < 8; i++) r[i] = _mm256_loadu_ps(src + i * ss);
  for (int i = 0; i < 8; i += 2) {
    t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
  }
  for (int i = 0; i < 8; i += 4) {  // r[i + j] = column 4k + j of rows i..i+3, in lane k
    r[i] = _mm256_shuffle_ps(t[i], t[i + 2], 0x44);
    r[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], 0xEE);
    r[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0x44);
    r[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0xEE);
  }
  for (int j = 0; j < 4; j++) {  // columns j and 4 + j: low / high lanes of rows 0-3 | 4-7
    _mm256_storeu_ps(dst + j * ds, _mm256_permute2f128_ps(r[j], r[4 + j], 0x20));
    _mm256_storeu_ps(dst + (4 + j) * ds, _mm256_permute2f128_ps(r[j], r[4 + j], 0x31));
  }
}

#include "simd/vec_exp.h"
#include "simd/vec_tanh.h"
