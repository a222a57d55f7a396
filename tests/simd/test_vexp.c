// SPDX-License-Identifier: MIT
// Accuracy of the vectorised exp (kernels/simd/vec_exp.h) of every ISA this CPU runs.
//   test_vexp               sampled: every 97th float in [−88, 0] plus edge values
//   test_vexp --exhaustive  every float in [−88, 0] (~1.12e9 values per ISA)
// Asserts, per ISA: max error ≤ VEXP_MAX_ULP ulp of the exactly rounded e^x (computed in
// double), results below VEXP_CUTOFF are exactly +0, every other result is a normal
// float (no denormals), and the array tails touch nothing past n. Prints the measured max
// ulp against exact e^x and against libm expf. Exit 77 (skip) if no ISA is available.
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "attn.h"
#include "simd/vexp.h"
#include "test_float.h"
#include "test_util.h"

typedef void (*vexp_fn)(const float *, float *, size_t);
static const struct {
  const char *name;
  uint32_t isa;
  vexp_fn fn;
} kImpls[] = {
#if defined(__x86_64__) || defined(__i386__)
    {"avx2", ATTN_ISA_AVX2, attn_vexp__avx2},
    {"avx512", ATTN_ISA_AVX512F, attn_vexp__avx512},
#endif
#if defined(__aarch64__)
    {"neon", ATTN_ISA_NEON, attn_vexp__neon},
#endif
};

typedef struct stats {
  double max_ulp, max_ulp_expf;  // vs exact e^x, vs libm expf
  float worst_x;
  uint64_t count, bad_zero, bad_denormal, bad_bound;
} stats;

static void check_value(stats *st, float x, float y) {
  st->count++;
  if (x < VEXP_CUTOFF) {
    if (!(y == 0.0f && !signbit(y))) st->bad_zero++;
    return;
  }
  if (fpclassify(y) != FP_NORMAL) {
    st->bad_denormal++;
    return;
  }
  const double exact = exp((double)x);
  const double err = fabs((double)y - exact) / ulp_of(exact);
  const float ref = expf(x);
  const double err_f = ref > 0.0f ? fabs((double)y - (double)ref) / ulp_of(ref) : 0.0;
  if (err > st->max_ulp) {
    st->max_ulp = err;
    st->worst_x = x;
  }
  if (err_f > st->max_ulp_expf) st->max_ulp_expf = err_f;
  if (err > VEXP_MAX_ULP) st->bad_bound++;
}

enum { kChunk = 4096 };

// Every step-th float from −0 (0x80000000) down to −88 (0xC2B00000), in chunks.
static stats sweep(vexp_fn fn, uint32_t step) {
  const uint32_t first = 0x80000000u, last = 0xC2B00000u;
  const uint64_t n_total = ((uint64_t)(last - first)) / step + 1;
  const int64_t n_chunks = (int64_t)((n_total + kChunk - 1) / kChunk);
  stats total = {0};
#pragma omp parallel
  {
    stats st = {0};
    float x[kChunk], y[kChunk];
#pragma omp for schedule(dynamic, 64)
    for (int64_t c = 0; c < n_chunks; c++) {
      const uint64_t i0 = (uint64_t)c * kChunk;
      const size_t n = (size_t)(n_total - i0 < kChunk ? n_total - i0 : kChunk);
      for (size_t i = 0; i < n; i++) x[i] = bits_to_float(first + (uint32_t)((i0 + i) * step));
      fn(x, y, n);
      for (size_t i = 0; i < n; i++) check_value(&st, x[i], y[i]);
    }
#pragma omp critical
    {
      if (st.max_ulp > total.max_ulp) {
        total.max_ulp = st.max_ulp;
        total.worst_x = st.worst_x;
      }
      if (st.max_ulp_expf > total.max_ulp_expf) total.max_ulp_expf = st.max_ulp_expf;
      total.count += st.count;
      total.bad_zero += st.bad_zero;
      total.bad_denormal += st.bad_denormal;
      total.bad_bound += st.bad_bound;
    }
  }
  return total;
}

static void edges(stats *st, vexp_fn fn) {
  const float cut = VEXP_CUTOFF;
  const float xs[] = {0.0f,
                      -0.0f,
                      -FLT_MIN,
                      -FLT_TRUE_MIN,
                      -1e-30f,
                      -1e-7f,
                      -0.5f,
                      -0.34657359f,
                      -0.6931472f,
                      -1.0f,
                      -10.0f,
                      -50.0f,
                      -87.0f,
                      -87.3f,
                      nextafterf(cut, 0.0f),
                      cut,
                      nextafterf(cut, -INFINITY),
                      -87.33655f,
                      -87.5f,
                      -88.0f,
                      -100.0f,
                      -1e30f,
                      -FLT_MAX,
                      -INFINITY};
  const size_t n = sizeof xs / sizeof xs[0];
  float y[sizeof xs / sizeof xs[0]];
  fn(xs, y, n);
  for (size_t i = 0; i < n; i++) check_value(st, xs[i], y[i]);
  EXPECT(y[0] == 1.0f && y[1] == 1.0f, "e^0 = %g, e^-0 = %g (want exactly 1)", y[0], y[1]);
  EXPECT(y[n - 1] == 0.0f, "e^-inf = %g (want 0)", y[n - 1]);
  float nan_in[3] = {NAN, -NAN, 1.0f}, nan_out[3];
  fn(nan_in, nan_out, 3);
  EXPECT(isnan(nan_out[0]) && isnan(nan_out[1]), "e^NaN = %g, %g (want NaN)", nan_out[0],
         nan_out[1]);
  EXPECT(fabsf(nan_out[2] - 2.7182817f) <= 3e-7f, "e^1 = %.9g", nan_out[2]);
}

// Tails: for every n < 3 vectors, nothing past y[n-1] is written.
static void tails(vexp_fn fn, const char *name) {
  float x[64], y[64 + 16];
  for (int i = 0; i < 64; i++) x[i] = -0.25f * (float)i;
  for (size_t n = 0; n <= 48; n++) {
    for (int i = 0; i < 64 + 16; i++) y[i] = 12345.0f;
    fn(x, y, n);
    for (size_t i = 0; i < n; i++)
      EXPECT(fabsf(y[i] - expf(x[i])) <= 4e-7f * expf(x[i]), "%s n=%zu: y[%zu] = %g", name, n, i,
             y[i]);
    for (size_t i = n; i < 64 + 16; i++)
      EXPECT(y[i] == 12345.0f, "%s n=%zu: wrote past the end at %zu", name, n, i);
  }
}

int main(int argc, char **argv) {
  const bool exhaustive = argc > 1 && strcmp(argv[1], "--exhaustive") == 0;
  const uint32_t step = exhaustive ? 1 : 97;
  size_t tested = 0;
  for (size_t i = 0; i < sizeof kImpls / sizeof kImpls[0]; i++) {
    if (!(attn_cpu_features() & kImpls[i].isa)) {
      printf("%-7s skipped (CPU lacks it)\n", kImpls[i].name);
      continue;
    }
    tested++;
    stats st = sweep(kImpls[i].fn, step);
    edges(&st, kImpls[i].fn);
    tails(kImpls[i].fn, kImpls[i].name);
    printf(
        "%-7s %s: %llu values in [-88, 0]: max error %.4f ulp vs exact e^x (at x = %.9g), "
        "%.4f ulp vs libm expf; bound %.2f\n",
        kImpls[i].name, exhaustive ? "exhaustive" : "sampled", (unsigned long long)st.count,
        st.max_ulp, (double)st.worst_x, st.max_ulp_expf, VEXP_MAX_ULP);
    EXPECT(st.bad_bound == 0, "%s: %llu results above %.2f ulp", kImpls[i].name,
           (unsigned long long)st.bad_bound, VEXP_MAX_ULP);
    EXPECT(st.bad_zero == 0, "%s: %llu results below the cutoff are not exactly +0", kImpls[i].name,
           (unsigned long long)st.bad_zero);
    EXPECT(st.bad_denormal == 0, "%s: %llu results at or above the cutoff are not normal floats",
           kImpls[i].name, (unsigned long long)st.bad_denormal);
  }
  if (!tested) {
    printf("test_vexp: no SIMD ISA available, skipped\n");
    return TEST_SKIP;
  }
  return test_finish(exhaustive ? "test_vexp --exhaustive" : "test_vexp");
}
