// SPDX-License-Identifier: MIT
// Accuracy of the vectorised tanh (kernels/simd/vec_tanh.h) of every ISA this CPU runs,
// against libm's tanh in double, under the kernels' FTZ/DAZ environment:
//   a dense sweep of every float32 binade, both signs: every 251st bit pattern of
//   [2^-126, 2^-10), every 29th of [2^-10, 64) (the polynomial, its split and the exp
//   form), every 4099th of [64, +inf), plus edge values (±0, ±FLT_MIN, subnormals, the
//   split point and its neighbours, ±inf, FLT_MAX, NaN).
// Asserts per ISA: the same bits whether a vector's lanes lie on one side of the split or
// both; error ≤ VTANH_MAX_ULP ulp of the exactly rounded tanh for every x
// whose tanh is a normal float; below that (subnormal x, read as 0 under DAZ) an absolute
// error < FLT_MIN; ±0 → ±0 (sign kept), ±inf → ±1, NaN → NaN; the array tails write
// nothing past n; and VTANH_MAX_ULP ≤ ATTN_CHECK_TANH_ULP, the budget the checker's
// softcap bound assumes. Exit 77 (skip) if no ISA is available. --dense: every float of
// [2^-10, 64) and 13x denser elsewhere (opt-in CTest test_vtanh_dense, label exhaustive);
// --quick: 8x sparser (the aarch64 cross build runs it under qemu). Then the same for the
// soft-capping c·tanh(x/c) of the flash kernels (vf_softcap; softcap_cases below).
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "attn.h"
#include "check/check.h"
#include "simd/vtanh.h"
#include "test_float.h"
#include "test_util.h"

typedef void (*vtanh_fn)(const float *, float *, size_t);
typedef void (*vsoftcap_fn)(const float *, float *, size_t, float);
static const struct {
  const char *name;
  uint32_t isa;
  vtanh_fn fn;
  vsoftcap_fn softcap;
} kImpls[] = {
#if defined(__x86_64__) || defined(__i386__)
    {"avx2", ATTN_ISA_AVX2, attn_vtanh__avx2, attn_vsoftcap__avx2},
    {"avx512", ATTN_ISA_AVX512F, attn_vtanh__avx512, attn_vsoftcap__avx512},
#endif
#if defined(__aarch64__)
    {"neon", ATTN_ISA_NEON, attn_vtanh__neon, attn_vsoftcap__neon},
#endif
};

typedef struct stats {
  double max_ulp, max_abs_tiny;
  float worst_x;
  uint64_t count, bad, bad_mixed;
} stats;

static void check_value(stats *st, float x, float y) {
  st->count++;
  const double want = tanh((double)x);
  if (fabs(want) < FLT_MIN) {  // subnormal result: x reads as 0 (DAZ), the result flushes
    const double e = fabs((double)y - want);
    if (e > st->max_abs_tiny) st->max_abs_tiny = e;
    if (!(e < FLT_MIN)) st->bad++;
    return;
  }
  const double e = fabs((double)y - want) / ulp_of(want);
  if (e > st->max_ulp || isnan(e)) st->max_ulp = isnan(e) ? INFINITY : e, st->worst_x = x;
  if (!(e <= VTANH_MAX_ULP)) st->bad++;
}

// fn under the kernels' environment (FTZ/DAZ); the checks run outside it, so that
// (double)x of a subnormal x is exact, not read as 0.
static void call(vtanh_fn fn, const float *x, float *y, size_t n) {
  const attn_fp_env env = attn_fp_env_enter();
  fn(x, y, n);
  attn_fp_env_leave(env);
}

#define CHUNK 4096
// Each chunk runs twice: as is (vectors of neighbouring x mostly on one side of the split,
// so the polynomial-only shortcut runs) and with every other x replaced by 2 (every vector
// mixes both forms): the values at the even positions must agree bitwise.
static void sweep_range(stats *st, vtanh_fn fn, uint32_t lo, uint32_t hi, uint32_t step) {
  static float xs[CHUNK], ys[CHUNK], xm[CHUNK], ym[CHUNK];
  for (int sign = 0; sign <= 1; sign++) {
    size_t n = 0;
    for (uint64_t b = lo; b < hi; b += step) {
      xs[n++] = bits_to_float((uint32_t)b | (sign ? 0x80000000u : 0u));
      if (n == CHUNK || b + step >= hi) {
        call(fn, xs, ys, n);
        for (size_t i = 0; i < n; i++) check_value(st, xs[i], ys[i]);
        for (size_t i = 0; i < n; i++) xm[i] = i % 2 ? 2.0f : xs[i];
        call(fn, xm, ym, n);
        for (size_t i = 0; i < n; i += 2)
          st->bad_mixed += memcmp(&ym[i], &ys[i], sizeof(float)) != 0;
        n = 0;
      }
    }
  }
}

static void edges(stats *st, vtanh_fn fn, const char *name) {
  const float split = VTANH_SPLIT;
  const float xs[] = {0.0f,
                      FLT_MIN,
                      nextafterf(FLT_MIN, 1.0f),
                      0x1p-149f,
                      0x1p-130f,
                      1e-20f,
                      nextafterf(split, 0.0f),
                      split,
                      nextafterf(split, 1.0f),
                      43.0f,
                      44.0f,
                      88.0f,
                      1e10f,
                      FLT_MAX};
  const size_t n = sizeof xs / sizeof xs[0];
  float x2[2 * (sizeof xs / sizeof xs[0])], y2[2 * (sizeof xs / sizeof xs[0])];
  for (size_t i = 0; i < n; i++) x2[i] = xs[i], x2[n + i] = -xs[i];
  call(fn, x2, y2, 2 * n);
  for (size_t i = 0; i < 2 * n; i++) check_value(st, x2[i], y2[i]);
  float sp[5] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN}, yp[5];
  call(fn, sp, yp, 5);
  EXPECT(yp[0] == 0.0f && !signbit(yp[0]), "%s: tanh(+0) = %g", name, (double)yp[0]);
  EXPECT(yp[1] == 0.0f && signbit(yp[1]), "%s: tanh(-0) = %g", name, (double)yp[1]);
  EXPECT(yp[2] == 1.0f && yp[3] == -1.0f, "%s: tanh(±inf) = %g, %g", name, (double)yp[2],
         (double)yp[3]);
  EXPECT(isnan(yp[4]), "%s: tanh(NaN) = %g", name, (double)yp[4]);
}

// The masked tail: n = 1..40 values, nothing written past y[n − 1].
static void tails(vtanh_fn fn, const char *name) {
  float x[64], y[64];
  for (int i = 0; i < 64; i++) x[i] = 0.1f * (float)(i - 20);
  for (size_t n = 1; n <= 40; n++) {
    for (int i = 0; i < 64; i++) y[i] = -7.0f;
    call(fn, x, y, n);
    bool ok = true;
    for (size_t i = n; i < 64; i++) ok = ok && y[i] == -7.0f;
    for (size_t i = 0; i < n; i++) ok = ok && fabs((double)y[i] - tanh((double)x[i])) < 1e-6;
    EXPECT(ok, "%s: n = %zu: wrong values or a write past the tail", name, n);
  }
}

// Soft-capping c·tanh(x/c) (vf_softcap) against the exact value in double, for every c of
// kCaps, over normal x of both signs from 2^-126 to FLT_MAX (every `step`th bit pattern, so
// x/c crosses the split for each c) plus x = ±c·VTANH_SPLIT and its neighbours: each error
// within VSOFTCAP_MAX_ULP ulp of the exact value (VSOFTCAP_POLY_MAX_ULP for |x/c| below the
// split, the polynomial's range) and within the checker's softcap term
// 2u·|x| + (2·ATTN_CHECK_TANH_ULP + 1)·u·|c·tanh(x/c)|; the same bits in vectors mixing
// both forms (every other x replaced by 2c) as in one-sided ones; ±0 → 0 (of either sign:
// x + x·z·P(z) gives +0 for −0, and e^(±0 − m) is the same weight), ±inf → ±c,
// NaN → NaN; subnormal x (read as 0) give an absolute error below FLT_MIN.
static const float kCaps[] = {0.01f, 0.3f, 1.0f, 3.7f, 30.0f, 50.0f, 1e4f};
static void softcap_cases(vsoftcap_fn fn, const char *name, uint32_t step) {
  static float xs[CHUNK], ys[CHUNK], xm[CHUNK], ym[CHUNK];
  const double u = 1.0 / 16777216.0;
  for (size_t ci = 0; ci < sizeof kCaps / sizeof kCaps[0]; ci++) {
    const float c = kCaps[ci];
    double worst = 0.0, worst_poly = 0.0;  // all x; x in the polynomial's range
    float worst_x = 0.0f;
    uint64_t bad = 0, bad_budget = 0, bad_mixed = 0, count = 0;
    size_t n = 0;
    const float sp = c * VTANH_SPLIT;
    const float extra[] = {nextafterf(sp, 0.0f), sp, nextafterf(sp, INFINITY), 0x1p-140f};
    const size_t nextra = sizeof extra / sizeof extra[0];
    for (uint64_t b = 0x00800000u;; b += step) {
      const bool last = b + step >= 0x7f800000u;
      for (int sign = 0; sign <= 1; sign++) {
        const float x = bits_to_float((uint32_t)(b < 0x7f800000u ? b : 0x7f7fffffu) |
                                      (sign ? 0x80000000u : 0u));
        xs[n++] = x;
      }
      if (last)
        for (size_t e = 0; e < nextra; e++) xs[n++] = extra[e], xs[n++] = -extra[e];
      if (n + 2 * nextra + 2 > CHUNK || last) {
        const attn_fp_env env = attn_fp_env_enter();
        fn(xs, ys, n, c);
        for (size_t i = 0; i < n; i++) xm[i] = i % 2 ? 2.0f * c : xs[i];
        fn(xm, ym, n, c);
        attn_fp_env_leave(env);
        for (size_t i = 0; i < n; i++) {
          count++;
          const double x = xs[i], want = (double)c * tanh(x / (double)c);
          const double err = fabs((double)ys[i] - want);
          if (fabs(x) < FLT_MIN) {  // subnormal x reads as 0
            bad += !(err < FLT_MIN);
            continue;
          }
          const double e = err / ulp_of(want);
          if (e > worst || isnan(e)) worst = isnan(e) ? INFINITY : e, worst_x = xs[i];
          const bool poly = fabs(x) < (double)c * (double)VTANH_SPLIT * (1.0 - 4.0 * u);
          if (poly && !(e <= worst_poly)) worst_poly = isnan(e) ? INFINITY : e;
          bad += !(e <= (poly ? VSOFTCAP_POLY_MAX_ULP : VSOFTCAP_MAX_ULP));
          bad_budget +=
              !(err <= 2.0 * u * fabs(x) + (2.0 * ATTN_CHECK_TANH_ULP + 1.0) * u * fabs(want));
        }
        for (size_t i = 0; i < n; i += 2) bad_mixed += memcmp(&ym[i], &ys[i], sizeof(float)) != 0;
        n = 0;
      }
      if (last) break;
    }
    printf(
        "%-7s softcap c = %g: %llu values, max error %.4f ulp (at x = %.9g), %.4f for |x/c| < "
        "the split; bounds %.2f, %.2f ulp\n",
        name, (double)c, (unsigned long long)count, worst, (double)worst_x, worst_poly,
        VSOFTCAP_MAX_ULP, VSOFTCAP_POLY_MAX_ULP);
    EXPECT(bad == 0, "%s: softcap %g: %llu results outside the bound (worst %.4f ulp at %.9g)",
           name, (double)c, (unsigned long long)bad, worst, (double)worst_x);
    EXPECT(bad_budget == 0, "%s: softcap %g: %llu results outside the checker's softcap term", name,
           (double)c, (unsigned long long)bad_budget);
    EXPECT(bad_mixed == 0, "%s: softcap %g: %llu results differ in mixed vectors", name, (double)c,
           (unsigned long long)bad_mixed);
    float sx[5] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN}, sy[5];
    const attn_fp_env env = attn_fp_env_enter();
    fn(sx, sy, 5, c);
    attn_fp_env_leave(env);
    EXPECT(sy[0] == 0.0f && sy[1] == 0.0f, "%s: softcap %g of ±0 = %g, %g", name, (double)c,
           (double)sy[0], (double)sy[1]);
    EXPECT(sy[2] == c && sy[3] == -c && isnan(sy[4]), "%s: softcap %g of ±inf, NaN = %g, %g, %g",
           name, (double)c, (double)sy[2], (double)sy[3], (double)sy[4]);
  }
}

int main(int argc, char **argv) {
  const bool dense = argc > 1 && strcmp(argv[1], "--dense") == 0;  // 29x / 13x denser
  const bool quick = argc > 1 && strcmp(argv[1], "--quick") == 0;  // 8x sparser (qemu)
  EXPECT(VTANH_MAX_ULP <= ATTN_CHECK_TANH_ULP,
         "VTANH_MAX_ULP %.2f exceeds the checker's softcap budget ATTN_CHECK_TANH_ULP %d",
         VTANH_MAX_ULP, ATTN_CHECK_TANH_ULP);
  size_t tested = 0;
  for (size_t i = 0; i < sizeof kImpls / sizeof kImpls[0]; i++) {
    if (!(attn_cpu_features() & kImpls[i].isa)) {
      printf("%-7s skipped (CPU lacks it)\n", kImpls[i].name);
      continue;
    }
    tested++;
    stats st = {0};
    const uint32_t k = dense ? 13 : 1, x = quick ? 8 : 1;  // step divisor / multiplier
    sweep_range(&st, kImpls[i].fn, 0x00000001u, 0x00800000u, 4093 / k * x);  // subnormals
    sweep_range(&st, kImpls[i].fn, 0x00800000u, 0x3a800000u, 251 / k * x);   // [2^-126, 2^-10)
    sweep_range(&st, kImpls[i].fn, 0x3a800000u, 0x42800000u, dense ? 1 : 29 * x);  // [2^-10, 64)
    sweep_range(&st, kImpls[i].fn, 0x42800000u, 0x7f800000u, 4099 / k * x);        // [64, FLT_MAX]
    edges(&st, kImpls[i].fn, kImpls[i].name);
    tails(kImpls[i].fn, kImpls[i].name);
    softcap_cases(kImpls[i].softcap, kImpls[i].name, (dense ? 61 : 1021) * x);
    printf(
        "%-7s %llu values: max error %.4f ulp vs exact tanh (at x = %.9g), subnormal abs "
        "error %.3g; bound %.2f ulp\n",
        kImpls[i].name, (unsigned long long)st.count, st.max_ulp, (double)st.worst_x,
        st.max_abs_tiny, VTANH_MAX_ULP);
    EXPECT(st.bad_mixed == 0, "%s: %llu results differ between mixed and one-sided vectors",
           kImpls[i].name, (unsigned long long)st.bad_mixed);
    EXPECT(st.bad == 0, "%s: %llu results outside the bound (worst %.4f ulp at %.9g)",
           kImpls[i].name, (unsigned long long)st.bad, st.max_ulp, (double)st.worst_x);
  }
  if (!tested) {
    printf("test_vtanh: no SIMD ISA available, skipped\n");
    return TEST_SKIP;
  }
  return test_finish(dense ? "test_vtanh --dense" : "test_vtanh");
}
