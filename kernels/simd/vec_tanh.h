// SPDX-License-Identifier: MIT
// vec_tanh.h — vectorised tanh, written once over the vf_* mapping (included by each
// vec_<isa>.h after vec_exp.h; needs vf_div, vf_abs, vf_copysign, vf_select_lt, vf_all_lt).
// Used by the flash kernels' logit soft-capping, s ← c·tanh(s/c).
//
// Method, on a = |x| with the sign of x put back at the end (tanh is odd):
//   a < VTANH_SPLIT:  tanh a = a + a³·P(a²), P of degree 6 (Horner, FMAs): our own
//                     weighted least-squares fit (scripts/fit_vtanh.py), minimising the relative
//                     error of tanh(a)/a − 1 − a²·P(a²) on [0, VTANH_SPLIT], rounded to float
//                     (relative truncation error below 0.05·2^-24). No cancellation:
//                     |a³·P(a²)| ≤ 0.1·a there. For tiny a the a³ term underflows (FTZ) and
//                     the result is a itself, exactly tanh's float value; ±0 stays ±0.
//   a ≥ VTANH_SPLIT:  t = e^(−2a) (vf_exp), tanh a = (1 − t)/(1 + t). An error ε (relative)
//                     in t moves the result by 2t/(1 − t²)·ε ≤ 0.72·ε relative (t ≤ 0.34),
//                     so vf_exp's 1.01 ulp enter attenuated; 1 − t, 1 + t and the divide
//                     round once each. For a > 43.7, t is 0 (vf_exp's cutoff) and the
//                     result is exactly 1, which is tanh's float value there; +inf gives 1.
//   NaN gives NaN (the compare sends it to the second branch, vf_exp keeps NaN).
//
// Error bound (tests/simd/test_vtanh.c; docs/simd.md): within VTANH_MAX_ULP ulp of the
// exactly rounded tanh for every float x with |tanh x| ≥ FLT_MIN (a dense sweep of all
// binades plus ±0, ±inf); below that (subnormal x, read as 0 under DAZ) the absolute
// error is below FLT_MIN. That is inside the checker's ATTN_CHECK_TANH_ULP (check.h).
#pragma once

#include "simd/vtanh.h"  // VTANH_MAX_ULP, VTANH_SPLIT

// P(z) by Horner (FMAs): tanh a ≈ a + a³·P(a²) on [0, VTANH_SPLIT].
static inline vf_t vtanh_poly(vf_t z) {
  vf_t q = vf_set1(VTANH_C6);
  q = vf_fma(q, z, vf_set1(VTANH_C5));
  q = vf_fma(q, z, vf_set1(VTANH_C4));
  q = vf_fma(q, z, vf_set1(VTANH_C3));
  q = vf_fma(q, z, vf_set1(VTANH_C2));
  q = vf_fma(q, z, vf_set1(VTANH_C1));
  return vf_fma(q, z, vf_set1(VTANH_C0));
}

static inline vf_t vf_tanh(vf_t x) {
  const vf_t a = vf_abs(x);
  // a < VTANH_SPLIT: the odd polynomial
  const vf_t z = vf_mul(a, a);
  const vf_t q = vtanh_poly(z);
  const vf_t small = vf_fma(vf_mul(q, z), a, a);
  // Softcapped scores are mostly far below the cap: then every lane takes the polynomial
  // and the exp form (an exp and a divide) is not evaluated. Same result either way.
  if (vf_all_lt(a, VTANH_SPLIT)) return vf_copysign(small, x);
  // a ≥ VTANH_SPLIT: (1 − e^(−2a)) / (1 + e^(−2a))
  const vf_t t = vf_exp(vf_mul(a, vf_set1(-2.0f)));
  const vf_t one = vf_set1(1.0f);
  const vf_t big = vf_div(vf_sub(one, t), vf_add(one, t));
  return vf_copysign(vf_select_lt(a, VTANH_SPLIT, small, big), x);
}

// c·tanh(x/c) (logit soft-capping) for c > 0, given icap = 1/c rounded. With a = x·icap
// and z = a², the polynomial branch scales back without a multiply: c·(a + a³·P(a²)) =
// x + x·(z·P(z)), an odd function of x, so neither |x| nor the sign is needed there; the
// other lanes (z ≥ VTANH_SPLIT²: some a ≥ VTANH_SPLIT up to the rounding of z) take
// c·vf_tanh(a). Error (tests/simd/test_vtanh.c, docs/simd.md): within VSOFTCAP_MAX_ULP ulp
// of c·tanh(x/c) plus 2 ulp of x for the rounded 1/c — inside the checker's softcap term
// 2u·|x| + (2·ATTN_CHECK_TANH_ULP + 1)·u·|c·tanh(x/c)| (check.h).
static inline vf_t vf_softcap(vf_t x, vf_t cap, vf_t icap) {
  const vf_t a = vf_mul(x, icap), z = vf_mul(a, a);
  const vf_t q = vtanh_poly(z);
  const vf_t small = vf_fma(vf_mul(z, q), x, x);
  if (vf_all_lt(z, VTANH_SPLIT * VTANH_SPLIT)) return small;
  return vf_select_lt(z, VTANH_SPLIT * VTANH_SPLIT, small, vf_mul(cap, vf_tanh(a)));
}
