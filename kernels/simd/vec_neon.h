// SPDX-License-Identifier: MIT
// vec_neon.h — the SIMD mapping for aarch64 Advanced SIMD: 4 float lanes in a float32x4_t.
// Same names as vec_avx2.h (see there for the list). NEON has no masked loads, so the
// partial load/store go through a small stack buffer (only n lanes of memory touched).
#pragma once

#if !defined(__aarch64__)
#error "vec_neon.h is for aarch64 builds only (files named *_neon.c)"
#endif

#include <arm_neon.h>
#include <stdint.h>
#include <string.h>

#include "attn.h"

typedef float32x4_t vf_t;
enum { VF_W = 4 };
#define VF_ISA ATTN_ISA_NEON
#define VF_ISA_NAME "neon"

static inline vf_t vf_load(const float *p) {
  return vld1q_f32(p);
}
static inline void vf_store(float *p, vf_t v) {
  vst1q_f32(p, v);
}
static inline vf_t vf_set1(float x) {
  return vdupq_n_f32(x);
}
static inline vf_t vf_zero(void) {
  return vdupq_n_f32(0.0f);
}
// x unchanged, but held in a register from here on: the compiler may no longer fold
// the load that produced it into each instruction that uses it (a register-held
// operand reused by several FMAs would otherwise be reloaded for every one).
static inline vf_t vf_pin(vf_t x) {
  __asm__("" : "+w"(x));
  return x;
}
static inline vf_t vf_fma(vf_t a, vf_t b, vf_t c) {
  return vfmaq_f32(c, a, b);
}
static inline vf_t vf_mul(vf_t a, vf_t b) {
  return vmulq_f32(a, b);
}
static inline vf_t vf_add(vf_t a, vf_t b) {
  return vaddq_f32(a, b);
}
static inline vf_t vf_sub(vf_t a, vf_t b) {
  return vsubq_f32(a, b);
}
static inline vf_t vf_max(vf_t a, vf_t b) {
  return vmaxq_f32(a, b);
}
static inline vf_t vf_min(vf_t a, vf_t b) {
  return vminq_f32(a, b);
}

static inline vf_t vf_load_partial(const float *p, int n) {
  float buf[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  memcpy(buf, p, (size_t)n * sizeof(float));
  return vld1q_f32(buf);
}
static inline void vf_store_partial(float *p, vf_t v, int n) {
  float buf[4];
  vst1q_f32(buf, v);
  memcpy(p, buf, (size_t)n * sizeof(float));
}

static inline float vf_hsum(vf_t v) {
  return vaddvq_f32(v);
}
static inline float vf_hmax(vf_t v) {
  return vmaxvq_f32(v);
}

// ── Primitives used by the shared exp (vec_exp.h) ──
static inline vf_t vf_round(vf_t x) {
  return vrndnq_f32(x);
}
static inline vf_t vf_pow2i(vf_t n) {
  const int32x4_t e = vaddq_s32(vcvtq_s32_f32(n), vdupq_n_s32(127));
  return vreinterpretq_f32_s32(vshlq_n_s32(e, 23));
}
static inline vf_t vf_zero_below(vf_t x, float c, vf_t v) {
  const uint32x4_t below = vcltq_f32(x, vdupq_n_f32(c));  // false for NaN
  return vreinterpretq_f32_u32(vbicq_u32(vreinterpretq_u32_f32(v), below));
}

// ── Primitives used by the shared tanh (vec_tanh.h) ──
static inline vf_t vf_div(vf_t a, vf_t b) {
  return vdivq_f32(a, b);
}
static inline vf_t vf_abs(vf_t x) {
  return vabsq_f32(x);
}
// sign(s)·|m| (the sign bit of s on m, m ≥ 0).
static inline vf_t vf_copysign(vf_t m, vf_t s) {
  const uint32x4_t sign = vandq_u32(vreinterpretq_u32_f32(s), vdupq_n_u32(0x80000000u));
  return vreinterpretq_f32_u32(vorrq_u32(vreinterpretq_u32_f32(m), sign));
}
// x < c ? a : b (lane-wise); an unordered compare (NaN x) gives b.
static inline vf_t vf_select_lt(vf_t x, float c, vf_t a, vf_t b) {
  return vbslq_f32(vcltq_f32(x, vdupq_n_f32(c)), a, b);
}
// True if x < c in every lane (false if any lane is NaN).
static inline int vf_all_lt(vf_t x, float c) {
  return vminvq_u32(vcltq_f32(x, vdupq_n_f32(c))) != 0;
}

// ── In-register transpose, used by the K packer (microkernel.h) ──
#define VF_HAVE_TRANSPOSE 1
// dst[d·ds + c] = src[c·ss + d], c, d < 4: the 4×4 in-register transpose (trn1/trn2 on
// 32-bit lanes, then the 64-bit halves recombined).
static inline void vf_transpose_block(const float *src, int64_t ss, float *dst, int64_t ds) {
  const float32x4x2_t t01 = vtrnq_f32(vld1q_f32(src), vld1q_f32(src + ss));
  const float32x4x2_t t23 = vtrnq_f32(vld1q_f32(src + 2 * ss), vld1q_f32(src + 3 * ss));
  // t01.val[0] = {r0[0], r1[0], r0[2], r1[2]}, t01.val[1] = {r0[1], r1[1], r0[3], r1[3]}
  vst1q_f32(dst, vcombine_f32(vget_low_f32(t01.val[0]), vget_low_f32(t23.val[0])));
  vst1q_f32(dst + ds, vcombine_f32(vget_low_f32(t01.val[1]), vget_low_f32(t23.val[1])));
  vst1q_f32(dst + 2 * ds, vcombine_f32(vget_high_f32(t01.val[0]), vget_high_f32(t23.val[0])));
  vst1q_f32(dst + 3 * ds, vcombine_f32(vget_high_f32(t01.val[1]), vget_high_f32(t23.val[1])));
}

#include "simd/vec_exp.h"
#include "simd/vec_tanh.h"
