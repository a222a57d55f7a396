// SPDX-License-Identifier: MIT
// The kernels' FP environment (attn.h, "Floating-point environment"; fp_env.c):
//  1. a caller at FE_UPWARD (or FE_DOWNWARD, FE_TOWARDZERO) gets bitwise the outputs of
//     round-to-nearest from every available kernel, options and fallback included, and
//     keeps its own rounding mode;
//  2. a caller with every exception trap enabled gets the same outputs, no SIGFPE, and
//     its traps back;
//  3. a kernel that returns with the FP environment changed (here: rounding upward,
//     traps on) leaves the caller's untouched and fails the check with a named reason.
#define _GNU_SOURCE
#include <fenv.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attn.h"
#include "check/check.h"
#include "core/attn_internal.h"

static int g_fail;
#define CHECK(cond, ...)                                   \
  do {                                                     \
    if (!(cond)) {                                         \
      fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
      fprintf(stderr, __VA_ARGS__);                        \
      fputc('\n', stderr);                                 \
      g_fail = 1;                                          \
    }                                                      \
  } while (0)

// Runs k on a prepared case's inputs into o (float32 K/V); returns the status.
static int run_on(const attn_kernel *k, const attn_check_prepared *pc, const float *q,
                  const float *kk, const float *v, float *o, int threads) {
  const attn_exec ex = {.threads = threads};
  char err[256];
  return attn_kernel_call(k, attn_check_problem(pc), &ex, q, kk, v, o, err, sizeof err);
}

// Case 1 and 2 for one problem: every available kernel, at nearest and in mode `mode`
// (with traps when traps != 0), bitwise.
static void compare_modes(const attn_check_case *c, int mode, int traps, const char *what) {
  char err[256], desc[192];
  attn_check_case_describe(c, desc, sizeof desc);
  attn_check_prepared *pc = attn_check_prepare(c, err, sizeof err);
  CHECK(pc != NULL, "prepare %s: %s", desc, err);
  if (!pc) return;
  const attn_problem *p = attn_check_problem(pc);
  float *q = malloc(attn_q_elems(p) * sizeof(float)), *kk = malloc(attn_k_elems(p) * sizeof(float));
  float *v = malloc(attn_v_elems(p) * sizeof(float));
  float *o1 = malloc(attn_o_elems(p) * sizeof(float)),
        *o2 = malloc(attn_o_elems(p) * sizeof(float));
  attn_check_fill(c, q, kk, v);
  for (size_t i = 0; i < attn_kernel_count(); i++) {
    const attn_kernel *k = attn_kernel_at(i);
    if (!attn_kernel_available(k, NULL, 0)) continue;
    for (int threads = 1; threads <= 2; threads++) {
      memset(o1, 0, attn_o_elems(p) * sizeof(float));
      memset(o2, 0xff, attn_o_elems(p) * sizeof(float));
      const int rc1 = run_on(k, pc, q, kk, v, o1, threads);
      fesetround(mode);
      if (traps) feenableexcept(traps);
      const uint64_t before = attn_fp_env_control();
      const int rc2 = run_on(k, pc, q, kk, v, o2, threads);
      const uint64_t after = attn_fp_env_control();
      const int mode_after = fegetround();
      if (traps) fedisableexcept(traps);
      fesetround(FE_TONEAREST);
      CHECK(rc1 == ATTN_OK && rc2 == ATTN_OK, "%s %s (%s): status %d / %d", k->name, desc, what,
            rc1, rc2);
      CHECK(memcmp(o1, o2, attn_o_elems(p) * sizeof(float)) == 0,
            "%s %s threads=%d: output at %s differs from round-to-nearest", k->name, desc, threads,
            what);
      CHECK(before == after && mode_after == mode,
            "%s %s: the caller's FP environment (%s) was not restored", k->name, desc, what);
    }
  }
  free(q), free(kk), free(v), free(o1), free(o2);
  attn_check_prepared_free(pc);
}

// A kernel that computes correctly (the registered reference) and then leaves rounding
// upward and every trap enabled, as a careless plug-in might.
static int leaky_run(const attn_problem *p, const attn_exec *exec, const float *q, const void *k,
                     const void *v, float *o, void *ws) {
  const attn_kernel *ref = attn_kernel_find("naive");
  const int rc = ref->run(p, exec, q, k, v, o, ws);
  fesetround(FE_UPWARD);
  feenableexcept(FE_DIVBYZERO | FE_INVALID | FE_OVERFLOW);
  return rc;
}
static size_t leaky_ws(const attn_problem *p, const attn_exec *exec) {
  return attn_kernel_find("naive")->workspace(p, exec);
}

int main(void) {
  attn_check_case cs[] = {
      {.problem = attn_problem_make(2, 4, 2, 37, 53, 32, 16, true),
       .dist = ATTN_DIST_NORMAL,
       .seed = 11},
      {.problem = attn_problem_make(1, 4, 1, 70, 90, 64, 64, false),
       .dist = ATTN_DIST_LARGE,
       .seed = 12},
      {.problem = attn_problem_make(1, 2, 2, 40, 31, 32, 32, true),
       .dist = ATTN_DIST_NORMAL,
       .seed = 13,
       .opts = {.window = true,
                .window_left = 9,
                .window_right = 0,
                .softcap = 20.0f,
                .alibi_max_bias = 8.0f},
       .gen = ATTN_CHECK_GEN_SINKS | ATTN_CHECK_GEN_MASK},
  };
  const int modes[] = {FE_UPWARD, FE_DOWNWARD, FE_TOWARDZERO};
  const char *names[] = {"FE_UPWARD", "FE_DOWNWARD", "FE_TOWARDZERO"};
  for (size_t c = 0; c < sizeof cs / sizeof cs[0]; c++) {
    for (size_t m = 0; m < 3; m++) compare_modes(&cs[c], modes[m], 0, names[m]);
    compare_modes(&cs[c], FE_TONEAREST, FE_DIVBYZERO | FE_INVALID | FE_OVERFLOW | FE_UNDERFLOW,
                  "every trap enabled");
  }

  // 3. the leak is reported and repaired
  static const attn_kernel kLeaky = {.name = "fp_leaky",
                                     .summary = "leaves the FP environment changed",
                                     .run = leaky_run,
                                     .workspace = leaky_ws};
  char err[256];
  attn_check_prepared *pc = attn_check_prepare(&cs[0], err, sizeof err);
  CHECK(pc != NULL, "prepare: %s", err);
  if (pc) {
    const uint64_t before = attn_fp_env_control();
    attn_check_result r;
    attn_check_kernel(&kLeaky, pc, NULL, &r);
    CHECK(attn_fp_env_control() == before && fegetround() == FE_TONEAREST && fegetexcept() == 0,
          "the leaky kernel's FP environment reached the caller");
    CHECK(r.verdict == ATTN_CHECK_FAIL && r.fp_leak &&
              strstr(r.message, "left the FP environment changed") != NULL,
          "a leaking kernel must fail with a named reason (verdict %d, message '%s')",
          (int)r.verdict, r.message);
    // a correct kernel right after it still passes
    attn_check_kernel(attn_kernel_find("blocked"), pc, NULL, &r);
    CHECK(r.verdict == ATTN_CHECK_PASS && !r.fp_leak, "blocked after the leak: %s", r.message);
    attn_check_prepared_free(pc);
  }
  if (!g_fail) printf("FP environment: caller modes and traps isolated, leaks reported\n");
  return g_fail;
}
