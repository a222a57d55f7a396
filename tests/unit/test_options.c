// SPDX-License-Identifier: MIT
// The attention options of attn.h ("Attention variants"): validation with clear messages,
// the visible-key range against its definition, the ALiBi slope rule, the input-domain
// checks of the option arrays, the capability bits and the portable fallback dispatch.
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "attn.h"
#include "check/check.h"
#include "test_util.h"

// Rejected with a message containing want.
static void expect_invalid(const attn_problem *p, const char *want) {
  char err[256] = "";
  const bool ok = attn_problem_validate(p, err, sizeof err);
  EXPECT(!ok && strstr(err, want), "want an error with '%s', got %s: %s", want,
         ok ? "valid" : "invalid", err);
}

// The definition: -left <= j - (i + off) <= right, causal caps right at 0.
static bool sees(const attn_problem *p, int64_t i, int64_t j) {
  const int64_t off = p->opts && p->opts->align == ATTN_ALIGN_TOP_LEFT ? 0 : p->seq_kv - p->seq_q;
  const int64_t d = j - (i + off);
  if (p->causal && d > 0) return false;
  if (p->opts && p->opts->window) {
    if (p->opts->window_left != ATTN_WINDOW_UNBOUNDED && d < -p->opts->window_left) return false;
    if (p->opts->window_right != ATTN_WINDOW_UNBOUNDED && d > p->opts->window_right) return false;
  }
  return true;
}

static void test_validation(void) {
  attn_options o = {0};
  attn_problem p = attn_problem_make(1, 4, 2, 8, 8, 16, 16, false);
  p.opts = &o;
  EXPECT(attn_problem_validate(&p, NULL, 0), "zero options must be valid");
  EXPECT(attn_problem_options_used(&p) == 0, "zero options use nothing");
  o.window = true, o.window_left = -2, o.window_right = 0;
  expect_invalid(&p, "window left must be >= 0 or unbounded (got -2)");
  o.window_left = ATTN_WINDOW_UNBOUNDED, o.window_right = -5;
  expect_invalid(&p, "window right must be >= 0 or unbounded (got -5)");
  o.window_right = 3;
  EXPECT(attn_problem_validate(&p, NULL, 0), "window (inf, 3) is valid");
  o.window = false;
  o.softcap = -1.0f;
  expect_invalid(&p, "softcap must be 0 (none) or in [");
  o.softcap = INFINITY;
  expect_invalid(&p, "softcap must be 0 (none) or in [");
  o.softcap = NAN;
  expect_invalid(&p, "softcap must be 0 (none) or in [");
  o.softcap = 30.0f;
  o.alibi_max_bias = -8.0f;
  expect_invalid(&p, "alibi max_bias must be 0 (none) or in [");
  const float slopes[4] = {0.5f, 0.25f, 0.125f, 0.0625f};
  o.alibi_max_bias = 8.0f, o.alibi_slopes = slopes;
  expect_invalid(&p, "not both");
  o.alibi_slopes = NULL;
  o.align = (attn_align)7;
  expect_invalid(&p, "align must be bottom-right (0), top-left (1) or offset (2) (got 7)");
  o.align = ATTN_ALIGN_TOP_LEFT;
  EXPECT(attn_problem_validate(&p, NULL, 0), "softcap + alibi + top-left valid");
  // alignment is "used" only where it changes something
  EXPECT(!(attn_problem_options_used(&p) & ATTN_CAP_OPT_ALIGN), "top-left with seq_q == seq_kv");
  p.seq_q = 3;
  EXPECT(attn_problem_options_used(&p) ==
             (ATTN_CAP_OPT_ALIGN | ATTN_CAP_OPT_SOFTCAP | ATTN_CAP_OPT_ALIBI),
         "options used: %#x", attn_problem_options_used(&p));
  char names[128];
  EXPECT(strcmp(attn_option_names(attn_problem_options_used(&p), names, sizeof names),
                "align softcap alibi") == 0,
         "names: %s", names);
  EXPECT(strcmp(attn_option_names(0, names, sizeof names), "none") == 0, "names of 0: %s", names);
}

static void test_row_keys(void) {
  const int64_t seqs[][2] = {{1, 1}, {5, 5}, {7, 3}, {3, 7}, {1, 9}, {9, 1}, {16, 40}};
  const int64_t sides[] = {ATTN_WINDOW_UNBOUNDED, 0, 1, 2, 5, 100};
  size_t mismatches = 0, checked = 0;
  for (size_t s = 0; s < sizeof seqs / sizeof seqs[0]; s++)
    for (int causal = 0; causal <= 1; causal++)
      for (int align = 0; align <= 1; align++)
        for (int win = 0; win <= 1; win++)
          for (size_t l = 0; l < 6; l++)
            for (size_t r = 0; r < 6; r++) {
              attn_options o = {.align = (attn_align)align,
                                .window = win,
                                .window_left = sides[l],
                                .window_right = sides[r]};
              attn_problem p = attn_problem_make(1, 1, 1, seqs[s][0], seqs[s][1], 4, 4, causal);
              p.opts = &o;
              for (int64_t i = 0; i < p.seq_q; i++) {
                int64_t lo, hi;
                attn_row_keys(&p, i, &lo, &hi);
                bool ok = 0 <= lo && lo <= hi && hi <= p.seq_kv;
                for (int64_t j = 0; j < p.seq_kv; j++)
                  ok = ok && sees(&p, i, j) == (lo <= j && j < hi);
                ok = ok && attn_visible_keys(&p, i) == hi - lo;
                mismatches += !ok;
                checked++;
                if (!ok && mismatches < 5)
                  fprintf(stderr,
                          "Sq%lld Skv%lld causal %d align %d win %d (%lld,%lld) row %lld: "
                          "[%lld,%lld)\n",
                          (long long)p.seq_q, (long long)p.seq_kv, causal, align, win,
                          (long long)sides[l], (long long)sides[r], (long long)i, (long long)lo,
                          (long long)hi);
              }
            }
  EXPECT(mismatches == 0, "attn_row_keys differs from the definition in %zu of %zu rows",
         mismatches, checked);
  // Without options attn_visible_keys keeps its old closed form
  const attn_problem c = attn_problem_make(1, 1, 1, 7, 3, 4, 4, true);
  for (int64_t i = 0; i < 7; i++) {
    int64_t n = i + 1 + 3 - 7;
    n = n < 0 ? 0 : n > 3 ? 3 : n;
    EXPECT(attn_visible_keys(&c, i) == n, "row %lld: %lld keys", (long long)i,
           (long long)attn_visible_keys(&c, i));
  }
  // flops count only the window's pairs: Mistral-like causal window 4 at seq 10
  attn_options w = {.window = true, .window_left = 3, .window_right = 0};
  attn_problem pw = attn_problem_make(1, 1, 1, 10, 10, 2, 2, true);
  pw.opts = &w;
  const double pairs = 1 + 2 + 3 + 4 * 7;
  EXPECT(attn_flops(&pw) == 2.0 * 4 * pairs, "window flops %g", attn_flops(&pw));
}

static void test_alibi_slopes(void) {
  attn_options o = {.alibi_max_bias = 8.0f};
  attn_problem p = attn_problem_make(1, 8, 8, 4, 4, 4, 4, false);
  p.opts = &o;
  for (int64_t h = 0; h < 8; h++)  // BLOOM: 2^(-8(h+1)/8) = 2^-(h+1)
    EXPECT(attn_alibi_slope(&p, h) == ldexpf(1.0f, -(int)(h + 1)), "8 heads, slope %lld = %g",
           (long long)h, attn_alibi_slope(&p, h));
  p.heads = p.kv_heads = 6;  // n = 4: 2^-2, 2^-4, 2^-6, 2^-8, then 2^-1, 2^-3
  const int e6[6] = {2, 4, 6, 8, 1, 3};
  for (int64_t h = 0; h < 6; h++)
    EXPECT(attn_alibi_slope(&p, h) == ldexpf(1.0f, -e6[h]), "6 heads, slope %lld = %g",
           (long long)h, attn_alibi_slope(&p, h));
  const float explicit_slopes[6] = {1, -2, 3, 4, 5, 6};
  o.alibi_max_bias = 0.0f, o.alibi_slopes = explicit_slopes;
  EXPECT(attn_alibi_slope(&p, 1) == -2.0f, "explicit slope");
  p.opts = NULL;
  EXPECT(attn_alibi_slope(&p, 1) == 0.0f, "no ALiBi: slope 0");
}

static void test_input_arrays(void) {
  float q[8] = {0}, k[8] = {0}, v[8] = {0};
  float sinks[2] = {0.0f, NAN}, slopes[2] = {1.0f, INFINITY}, mask[4] = {0, -INFINITY, 1, 2};
  attn_options o = {.sinks = sinks};
  attn_problem p = attn_problem_make(1, 2, 1, 2, 2, 2, 2, false);
  p.opts = &o;
  char err[256];
  EXPECT(
      attn_inputs_check(&p, q, k, v, err, sizeof err) == ATTN_ERR_RANGE && strstr(err, "sink[1]"),
      "NaN sink: %s", err);
  sinks[1] = 1.0f;
  o.alibi_slopes = slopes;
  EXPECT(attn_inputs_check(&p, q, k, v, err, sizeof err) == ATTN_ERR_RANGE &&
             strstr(err, "ALiBi slope[1]"),
         "inf slope: %s", err);
  slopes[1] = 0.5f;
  o.mask = mask;
  EXPECT(attn_inputs_check(&p, q, k, v, err, sizeof err) == ATTN_OK, "-inf mask allowed: %s", err);
  mask[2] = INFINITY;
  EXPECT(
      attn_inputs_check(&p, q, k, v, err, sizeof err) == ATTN_ERR_RANGE && strstr(err, "mask[2]"),
      "+inf mask: %s", err);
  mask[2] = NAN;
  EXPECT(
      attn_inputs_check(&p, q, k, v, err, sizeof err) == ATTN_ERR_RANGE && strstr(err, "mask[2]"),
      "NaN mask: %s", err);
}

// Kernels without an option natively run the portable path: same bits as `blocked`.
static void test_fallback(void) {
  const attn_kernel *blocked = attn_kernel_find("blocked");
  attn_problem p = attn_problem_make(1, 2, 1, 9, 12, 8, 8, true);
  float sinks[2] = {0.5f, -1.0f};
  float q[2 * 9 * 8], k[12 * 8], v[12 * 8], o1[2 * 9 * 8], o2[2 * 9 * 8], l1[18], l2[18];
  for (size_t i = 0; i < sizeof q / sizeof q[0]; i++) q[i] = (float)sin(0.37 * (double)i);
  for (size_t i = 0; i < sizeof k / sizeof k[0]; i++) k[i] = (float)cos(0.11 * (double)i);
  for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) v[i] = (float)sin(0.07 * (double)i + 1);
  attn_options o = {.window = true,
                    .window_left = 2,
                    .window_right = 0,
                    .sinks = sinks,
                    .softcap = 3.0f,
                    .align = ATTN_ALIGN_TOP_LEFT};
  p.opts = &o;
  char err[256];
  o.lse = l1;
  EXPECT(attn_kernel_call(blocked, &p, NULL, q, k, v, o1, err, sizeof err) == ATTN_OK, "%s", err);
  size_t non_native = 0;
  for (size_t i = 0; i < attn_kernel_count(); i++) {
    const attn_kernel *kk = attn_kernel_at(i);
    const bool native = attn_kernel_native(kk, &p);
    EXPECT(native == ((kk->caps & ATTN_CAP_OPT_ALL) == ATTN_CAP_OPT_ALL ||
                      (attn_problem_options_used(&p) & ~kk->caps) == 0),
           "%s: native %d", kk->name, native);
    if (native || !attn_kernel_available(kk, NULL, 0)) continue;
    non_native++;
    o.lse = l2;
    memset(o2, 0xff, sizeof o2);
    memset(l2, 0xff, sizeof l2);
    EXPECT(attn_kernel_call(kk, &p, NULL, q, k, v, o2, err, sizeof err) == ATTN_OK, "%s: %s",
           kk->name, err);
    EXPECT(memcmp(o1, o2, sizeof o1) == 0 && memcmp(l1, l2, sizeof l1) == 0,
           "%s's fallback differs from blocked", kk->name);
    EXPECT(attn_kernel_workspace(kk, &p, NULL) == attn_kernel_workspace(blocked, &p, NULL),
           "%s: fallback workspace", kk->name);
    bool fb = false;
    void *ws = aligned_alloc(64, (attn_kernel_workspace(kk, &p, NULL) + 63) & ~(size_t)63);
    EXPECT(attn_kernel_run(kk, &p, NULL, q, k, v, o2, ws, &fb) == ATTN_OK && fb,
           "%s: attn_kernel_run reports no fallback", kk->name);
    free(ws);
  }
  bool fb = true;
  o.lse = l2;
  void *ws = aligned_alloc(64, (attn_kernel_workspace(blocked, &p, NULL) + 63) & ~(size_t)63);
  EXPECT(attn_kernel_run(blocked, &p, NULL, q, k, v, o2, ws, &fb) == ATTN_OK && !fb,
         "blocked is native");
  free(ws);
  printf("%zu available kernels took the fallback\n", non_native);
  // rows 0.. see keys [max(0,i-2), i] top-left; none is empty here, so LSE finite
  for (int r = 0; r < 18; r++) EXPECT(isfinite(l1[r]), "LSE[%d] = %g", r, l1[r]);
}

// The portable kernels' softcap uses libm's tanhf: within the checker's budget
// ATTN_CHECK_TANH_ULP (check.h) of the correctly rounded tanh, measured in ulp of the
// result, on every 97th float32 of [-20, 20] (tanh is ±1 in float32 beyond ~9.01).
static void test_tanh_budget(void) {
  double worst = 0.0;
  float at = 0.0f;
  for (uint32_t bits = 0; bits < 0x41a00000u; bits += 97) {  // |x| in [0, 20)
    for (int sign = 0; sign <= 1; sign++) {
      float x;
      const uint32_t b = bits | (sign ? 0x80000000u : 0u);
      memcpy(&x, &b, sizeof x);
      const double want = tanh((double)x);
      const float got = tanhf(x);
      const float wf = (float)want;
      const double ulp =
          want == 0.0 ? 0x1p-149 : (double)(nextafterf(fabsf(wf), INFINITY) - fabsf(wf));
      const double e = fabs((double)got - want) / ulp;
      if (e > worst) worst = e, at = x;
    }
  }
  printf("tanhf: worst %.2f ulp (at %g), budget %d\n", worst, (double)at, ATTN_CHECK_TANH_ULP);
  EXPECT(worst <= ATTN_CHECK_TANH_ULP, "tanhf error %.2f ulp at %g exceeds the checker budget",
         worst, (double)at);
}

int main(void) {
  test_tanh_budget();
  test_validation();
  test_row_keys();
  test_alibi_slopes();
  test_input_arrays();
  test_fallback();
  return test_finish("test_options");
}
