// SPDX-License-Identifier: MIT
// vec_exp.h — vectorised e^x, written once over the vf_* mapping (included by each
// vec_<isa>.h after it defines vf_t, vf_fma, vf_round, vf_pow2i and vf_zero_below).
//
// Method (Cody–Waite range reduction + polynomial + exponent-field scaling):
//   1. x is clamped to [-87.5, 88] so the integer below stays in [-126, 127].
//   2. n = round(x·log2(e))                          (nearest, ties to even)
//   3. r = (x − n·LN2_HI) − n·LN2_LO                 two FMAs; LN2_HI = float(ln 2),
//      LN2_LO = ln 2 − LN2_HI. The first FMA is exact (|r| < 0.35 and both terms are
//      multiples of ulp(x)), so r carries one rounding;  |r| ≤ ln2/2 (+ a rounding sliver).
//   4. e^r ≈ 1 + r + r²·(c2 + c3·r + c4·r² + c5·r³ + c6·r⁴)   (Horner, FMAs)
//      c2..c6 are our own weighted least-squares/minimax fit of (e^r − 1 − r)/r² on
//      |r| ≤ ln2/2, rounded to float: relative truncation error ≤ 0.07·2^-24, far below
//      the rounding errors of the evaluation.
//   5. e^x = e^r · 2^n, with 2^n built directly in the exponent field (exact); where the
//      mapping has a scale-by-2^n instruction (AVX-512 vscalefps, VF_HAVE_SCALEF_BELOW)
//      that one instruction does 5 and 6 together, with the same bits; where it has
//      cheap integer ops on the float bits (AVX2: VF_HAVE_ROUND_MAGIC, VF_HAVE_SCALE_EXP),
//      n of step 2 comes from x·log2(e) + 1.5·2^23 − 1.5·2^23 (no round instruction) and
//      step 5 adds n to the exponent field of e^r (no multiply), again with the same
//      bits. Both drop the clamp at −87.5 of step 1.
//   6. Underflow: for x < EXP_CUTOFF = −87.33654 (≈ ln FLT_MIN, e^x would be subnormal)
//      the result is exactly +0 — never a denormal, so no slow path, and e^(−∞) = 0.
//      From the cutoff up, results are normal floats (checked by the tests).
//
// Domain and measured error (tests/simd/test_vexp.c; docs/simd.md):
//   over every float x in [−88, 0] (exhaustive) the result is within VEXP_MAX_ULP ulp of
//   the exactly rounded e^x, and exactly 0 below the cutoff. Inputs in (0, 88] are also
//   accurate (same algorithm); above 88 the result saturates at ≈ e^88 (softmax inputs are
//   ≤ 0); NaN in gives NaN out, so a NaN in Q/K/V reaches the output instead of hiding.
#pragma once

#include "simd/vexp.h"  // VEXP_MAX_ULP, VEXP_CUTOFF

static inline vf_t vf_exp(vf_t x) {
  // Operand order matters: x86 min/max return the SECOND operand when either is NaN, so
  // NaN inputs flow through to a NaN result (NEON min/max propagate NaN anyway).
#if defined(VF_HAVE_SCALEF_BELOW) || defined(VF_HAVE_SCALE_EXP)
  // Step 1 without the lower clamp: lanes below the cutoff (−∞ included) are zeroed at
  // the end whatever their n and r, and every lane at or above it has n ≥ −126.
  const vf_t xm = vf_min(vf_set1(88.0f), x);
#else
  const vf_t xc = vf_max(vf_set1(-87.5f), x);
  const vf_t xm = vf_min(vf_set1(88.0f), xc);
#endif
#ifdef VF_HAVE_ROUND_MAGIC
  const vf_t n = vf_round_magic(vf_mul(xm, vf_set1(1.44269504088896341f)));
#else
  const vf_t n = vf_round(vf_mul(xm, vf_set1(1.44269504088896341f)));
#endif
  vf_t r = vf_fma(n, vf_set1(-0.693147182464599609375f), xm);  // LN2_HI = float(ln 2)
  r = vf_fma(n, vf_set1(1.904654323148236e-09f), r);           // −LN2_LO (ln2 − LN2_HI < 0)
  vf_t q = vf_set1(0.001381461275741458f);
  q = vf_fma(q, r, vf_set1(0.008368710055947304f));
  q = vf_fma(q, r, vf_set1(0.04166838899254799f));
  q = vf_fma(q, r, vf_set1(0.1666652113199234f));
  q = vf_fma(q, r, vf_set1(0.4999999403953552f));
  const vf_t p = vf_add(vf_set1(1.0f), vf_fma(q, vf_mul(r, r), r));
#if defined(VF_HAVE_SCALEF_BELOW)
  return vf_scalef_below(x, VEXP_CUTOFF, p, n);  // AVX-512: one vscalefps, bitwise the same
#elif defined(VF_HAVE_SCALE_EXP)
  // Lanes at or above the cutoff give normal results (step 6), where the exponent add
  // is exact; the ones below are zeroed whatever it gave.
  return vf_zero_below(x, VEXP_CUTOFF, vf_scale_exp(p, n));
#else
  return vf_zero_below(x, VEXP_CUTOFF, vf_mul(p, vf_pow2i(n)));
#endif
}
