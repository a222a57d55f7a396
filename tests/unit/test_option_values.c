// SPDX-License-Identifier: MIT
// Option values that kernels (under FTZ/DAZ) and the double reference must read alike.
//
// A sweep over every scalar of attn_problem / attn_options — scale, softcap, ALiBi max_bias,
// explicit ALiBi slopes, sink values, mask values, window sides — at its boundaries: the
// smallest subnormal, the largest subnormal, the smallest normal (FLT_MIN), values whose
// derived constants underflow or overflow inside a kernel (1/softcap, the slopes 2^-max_bias,
// scale·Q), the limits of the input domain and FLT_MAX. Each value must be either
//   refused: by attn_problem_validate (a message naming the option and its valid range)
//            or by attn_inputs_check (ATTN_ERR_RANGE with a message naming the quantity), or
//   agreed:  every available kernel's output passes the checker against the reference
//            (check.h's bound), on inputs sized so that the value matters (scores of a
//            few units, or ~1e4 for the soft-cap).
// A subnormal softcap accepted by validation, for example, makes every kernel but the
// reference treat the cap as off, which fails here.
//
// Also: the validation messages themselves (option name and range), and that the ranges'
// end points are accepted.
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "attn.h"
#include "check/check.h"
#include "test_util.h"

typedef enum field {
  F_SCALE,
  F_SOFTCAP,
  F_MAX_BIAS,
  F_SLOPES,
  F_SINKS,
  F_MASK,
  F_WINDOW,
} field;

static const char *const kFieldName[] = {"scale", "softcap", "alibi max_bias", "alibi slopes",
                                         "sinks", "mask",    "window"};

typedef struct sweep_value {
  field f;
  double value;    // the option's value (F_WINDOW: unused, see side)
  int64_t side;    // F_WINDOW: both sides
  double target;   // typical |score| the inputs aim at (scale·‖q‖·‖k‖ per row pair)
  double qk_skew;  // ‖q‖ / ‖k‖ (1: balanced); 0: K all zeros
  const char *what;
} sweep_value;

// Deterministic standard normal values (xorshift64* + Box–Muller).
static uint64_t g_state = 0x9E3779B97F4A7C15ull;
static double uniform01(void) {
  g_state ^= g_state >> 12, g_state ^= g_state << 25, g_state ^= g_state >> 27;
  return (double)((g_state * 0x2545F4914F6CDD1Dull) >> 11) * 0x1p-53;
}
static double normal01(void) {
  const double u = uniform01() + 0x1p-60, v = uniform01();
  return sqrt(-2.0 * log(u)) * cos(6.283185307179586 * v);
}

typedef struct shape {
  int64_t b, h, kvh, sq, skv, dqk, dv;
  bool causal;
} shape;

static const shape kShapes[] = {
    {1, 4, 2, 9, 33, 16, 8, false},  // prefill, cross, GQA
    {2, 4, 4, 1, 70, 32, 16, true},  // decode (flash's split-KV path)
    {1, 3, 1, 20, 20, 8, 8, true},   // odd head count (the max_bias rule's second branch)
};

static int g_refused = 0, g_agreed = 0, g_kernel_runs = 0, g_loose = 0;
static bool g_verbose = false;

// Runs one value on one shape: refused with a message, or every kernel passes.
static void sweep_one(const sweep_value *sv, const shape *sh) {
  attn_problem p =
      attn_problem_make(sh->b, sh->h, sh->kvh, sh->sq, sh->skv, sh->dqk, sh->dv, sh->causal);
  attn_options o = {0};
  float slopes[8], sinks[8];
  const size_t mask_n = (size_t)sh->sq * (size_t)sh->skv;
  float *mask = malloc(mask_n * sizeof *mask);
  const size_t nq = attn_q_elems(&p), nk = attn_k_elems(&p), nv = attn_v_elems(&p);
  float *q = malloc(nq * sizeof *q), *k = malloc(nk * sizeof *k), *v = malloc(nv * sizeof *v);
  if (!mask || !q || !k || !v) {
    EXPECT(0, "out of memory");
    goto done;
  }
  const float x = (float)sv->value;
  switch (sv->f) {
    case F_SCALE:
      p.scale = x;
      break;
    case F_SOFTCAP:
      o.softcap = x;
      break;
    case F_MAX_BIAS:
      o.alibi_max_bias = x;
      break;
    case F_SLOPES:
      for (int h = 0; h < 8; h++) slopes[h] = h % 2 ? -x : x;
      o.alibi_slopes = slopes;
      break;
    case F_SINKS:
      for (int h = 0; h < 8; h++) sinks[h] = h % 2 ? -x : x;
      o.sinks = sinks;
      break;
    case F_MASK:  // the value on even entries, 0 on odd ones (and −x every third if finite)
      for (size_t i = 0; i < mask_n; i++) mask[i] = i % 2 ? 0.0f : (i % 3 || isinf(x) ? x : -x);
      o.mask = mask;
      break;
    case F_WINDOW:
      o.window = true, o.window_left = sv->side, o.window_right = sv->side;
      break;
  }
  p.opts = &o;

  char label[160];
  snprintf(label, sizeof label, "%s = %s (%.9g) on B%lld H%lld KV%lld Sq%lld Skv%lld",
           kFieldName[sv->f], sv->what, sv->value, (long long)sh->b, (long long)sh->h,
           (long long)sh->kvh, (long long)sh->sq, (long long)sh->skv);
  char err[320] = "";
  if (!attn_problem_validate(&p, err, sizeof err)) {
    // refused: the message names the option and gives the range (or the rule)
    const char *name = sv->f == F_MAX_BIAS ? "max_bias" : kFieldName[sv->f];
    EXPECT(strstr(err, name) != NULL, "%s: refusal does not name the option: %s", label, err);
    EXPECT(strchr(err, '[') || strstr(err, "<=") || strstr(err, ">="),
           "%s: refusal gives no valid range: %s", label, err);
    if (g_verbose) printf("refused  %s: %s\n", label, err);
    g_refused++;
    goto done;
  }

  // Inputs: q, k rows of norms ~ sqrt(target/|scale|)·skew^(±1/2), V standard normal.
  const double sa = p.scale != 0.0f ? fabs((double)p.scale) : 1.0;
  double m = sqrt(sv->target / (sa * sqrt((double)sh->dqk)));
  // keep max(1,|scale|)·‖q‖·‖k‖ inside the input domain (scores below 2^118)
  const double mmax = sqrt(0x1p118 / (fmax(1.0, sa) * 4.0 * (double)sh->dqk));
  if (m > mmax) m = mmax;
  // qk_skew 0: K all zeros, Q of norm ~ sqrt(target) (unscaled)
  const double qm = sv->qk_skew > 0 ? m * sqrt(sv->qk_skew) : sqrt(sv->target);
  const double km = sv->qk_skew > 0 ? m / sqrt(sv->qk_skew) : 0.0;
  for (size_t i = 0; i < nq; i++) q[i] = (float)(qm * normal01());
  for (size_t i = 0; i < nk; i++) k[i] = (float)(km * normal01());
  for (size_t i = 0; i < nv; i++) v[i] = (float)normal01();

  const int rc = attn_inputs_check(&p, q, k, v, err, sizeof err);
  if (rc == ATTN_ERR_RANGE) {
    EXPECT(err[0] != '\0', "%s: ATTN_ERR_RANGE without a message", label);
    if (g_verbose) printf("refused  %s: %s\n", label, err);
    g_refused++;
    goto done;
  }
  EXPECT(rc == ATTN_OK, "%s: attn_inputs_check returned %d: %s", label, rc, err);
  if (rc != ATTN_OK) goto done;

  attn_check_prepared *pc = attn_check_prepare_inputs(&p, q, k, v, err, sizeof err);
  EXPECT(pc != NULL, "%s: prepare failed: %s", label, err);
  if (!pc) goto done;
  for (size_t i = 0; i < attn_kernel_count(); i++) {
    const attn_kernel *kern = attn_kernel_at(i);
    if (!attn_kernel_available(kern, NULL, 0)) continue;
    attn_check_result r;
    attn_check_kernel(kern, pc, NULL, &r);
    g_kernel_runs++;
    // pass; or inconclusive because the bound is too loose to tell weightings apart (huge
    // scale, sinks or mask values) — then still every element within it (err/tol <= 1)
    const bool loose = r.verdict == ATTN_CHECK_INCONCLUSIVE && strstr(r.message, "uninformative");
    EXPECT(r.verdict == ATTN_CHECK_PASS || (loose && r.worst_ratio <= 1.0),
           "%s: %s %s (err/tol %.3g, max abs err %.3g): %s", label, kern->name,
           attn_check_verdict_name(r.verdict), r.worst_ratio, r.max_abs_err, r.message);
    g_loose += loose;
    if (g_verbose)
      printf("agreed   %s: %s %s, err/tol %.3g, max abs err %.3g\n", label, kern->name,
             attn_check_verdict_name(r.verdict), r.worst_ratio, r.max_abs_err);
  }
  attn_check_prepared_free(pc);
  g_agreed++;
done:
  free(mask), free(q), free(k), free(v);
}

static void test_sweep(void) {
  const double sub_max = (double)nextafterf(FLT_MIN, 0.0f);  // the largest subnormal float
  const double sub_min = 0x1p-149;                           // the smallest subnormal float
  const double fmin = (double)FLT_MIN, fmax_ = (double)FLT_MAX;
  const sweep_value values[] = {
      // scale: subnormal reads as 0 in a kernel (all scores 0), not in the reference
      {F_SCALE, sub_min, 0, 1e30, 1, "smallest subnormal"},
      {F_SCALE, sub_max, 0, 1e30, 1, "largest subnormal"},
      {F_SCALE, -sub_max, 0, 1e30, 1, "largest negative subnormal"},
      {F_SCALE, fmin, 0, 1e30, 1, "smallest normal"},
      {F_SCALE, 0.0, 0, 3, 1, "zero (uniform weights)"},
      {F_SCALE, 0x1p-100, 0, 3, 1, "2^-100"},
      {F_SCALE, 0.25, 0, 3, 1, "1/4"},
      {F_SCALE, -0.25, 0, 3, 1, "-1/4"},
      {F_SCALE, 0x1p100, 0, 3, 1, "2^100"},
      {F_SCALE, fmax_, 0, 3, 1, "FLT_MAX"},
      {F_SCALE, -fmax_, 0, 3, 1, "-FLT_MAX"},
      // scale·Q overflows float32 while the scores are small (tiny or zero K)
      {F_SCALE, 0x1p127, 0, 3, 0x1p120, "2^127 with |q|/|k| = 2^120"},
      {F_SCALE, 0x1p127, 0, 3, 0, "2^127 with K = 0"},
      {F_SCALE, 0x1p100, 0, 3, 0x1p60, "2^100 with |q|/|k| = 2^60"},
      // softcap: subnormal reads as off; 1/c subnormal above 2^126; flush of s/c above 2^64
      {F_SOFTCAP, sub_min, 0, 3, 1, "smallest subnormal"},
      {F_SOFTCAP, sub_max, 0, 3, 1, "largest subnormal"},
      {F_SOFTCAP, fmin, 0, 3, 1, "smallest normal"},
      {F_SOFTCAP, fmin, 0, 1e4, 1, "smallest normal, scores 1e4"},
      {F_SOFTCAP, 0x1p-100, 0, 3, 1, "2^-100"},
      {F_SOFTCAP, 1.0, 0, 3, 1, "1"},
      {F_SOFTCAP, 30.0, 0, 1e4, 1, "30, scores 1e4"},
      {F_SOFTCAP, 0x1p64, 0, 3, 1, "2^64"},
      {F_SOFTCAP, 0x1p64, 0, 1e30, 1, "2^64, scores 1e30"},
      {F_SOFTCAP, nextafterf(0x1p64f, INFINITY), 0, 3, 1, "just above 2^64"},
      {F_SOFTCAP, 0x1p126, 0, 3, 1, "2^126"},
      {F_SOFTCAP, 0x1.8p126, 0, 3, 1, "1.5*2^126 (1/c subnormal)"},
      {F_SOFTCAP, fmax_, 0, 3, 1, "FLT_MAX"},
      // max_bias: subnormal reads as off (the reference derives slopes of 1); above 126
      // the smallest slope 2^-max_bias is subnormal
      {F_MAX_BIAS, sub_min, 0, 3, 1, "smallest subnormal"},
      {F_MAX_BIAS, sub_max, 0, 3, 1, "largest subnormal"},
      {F_MAX_BIAS, fmin, 0, 3, 1, "smallest normal"},
      {F_MAX_BIAS, 8.0, 0, 3, 1, "8"},
      {F_MAX_BIAS, 126.0, 0, 3, 1, "126"},
      {F_MAX_BIAS, nextafterf(126.0f, INFINITY), 0, 3, 1, "just above 126"},
      {F_MAX_BIAS, 200.0, 0, 3, 1, "200"},
      {F_MAX_BIAS, fmax_, 0, 3, 1, "FLT_MAX"},
      // explicit slopes (array contents: attn_inputs_check)
      {F_SLOPES, sub_min, 0, 3, 1, "smallest subnormal"},
      {F_SLOPES, sub_max, 0, 3, 1, "largest subnormal"},
      {F_SLOPES, fmin, 0, 3, 1, "smallest normal"},
      {F_SLOPES, 0.5, 0, 3, 1, "1/2"},
      {F_SLOPES, 0x1p100, 0, 3, 1, "2^100"},
      {F_SLOPES, fmax_, 0, 3, 1, "FLT_MAX"},
      // sinks: subnormal ones are inputs that flush (attn.h, flush-to-zero): an error below
      // FLT_MIN in one logit, inside the bound
      {F_SINKS, sub_max, 0, 3, 1, "largest subnormal"},
      {F_SINKS, fmin, 0, 3, 1, "smallest normal"},
      {F_SINKS, 30.0, 0, 3, 1, "30"},
      {F_SINKS, 0x1p120, 0, 3, 1, "2^120 (the limit)"},
      {F_SINKS, 0x1p121, 0, 3, 1, "2^121"},
      {F_SINKS, fmax_, 0, 3, 1, "FLT_MAX"},
      // mask values: the same for subnormals; finite values up to the limit
      {F_MASK, sub_max, 0, 3, 1, "largest subnormal"},
      {F_MASK, fmin, 0, 3, 1, "smallest normal"},
      {F_MASK, 5.0, 0, 3, 1, "5"},
      {F_MASK, 0x1p120, 0, 3, 1, "2^120 (the limit)"},
      {F_MASK, 0x1p121, 0, 3, 1, "2^121"},
      {F_MASK, -(double)INFINITY, 0, 3, 1, "-inf"},
      // window sides (integers): 0, 1, huge
      {F_WINDOW, 0, 0, 3, 1, "0,0"},
      {F_WINDOW, 0, 1, 3, 1, "1,1"},
      {F_WINDOW, 0, INT64_MAX / 2, 3, 1, "2^62,2^62"},
      {F_WINDOW, 0, INT64_MAX - 1, 3, 1, "INT64_MAX-1"},
      {F_WINDOW, 0, INT64_MAX, 3, 1, "INT64_MAX"},
      {F_WINDOW, 0, INT64_MIN, 3, 1, "INT64_MIN"},
  };
  for (size_t i = 0; i < sizeof values / sizeof values[0]; i++)
    for (size_t s = 0; s < sizeof kShapes / sizeof kShapes[0]; s++)
      sweep_one(&values[i], &kShapes[s]);
  printf(
      "sweep: %d refused, %d accepted (%d kernel runs passing the check, %d of them inside a "
      "bound too loose for a verdict)\n",
      g_refused, g_agreed, g_kernel_runs, g_loose);
}

// Refused at validation with the option and its range in the message; the end points of
// each range are accepted.
static void expect_refused(const attn_problem *p, const char *want) {
  char err[320] = "";
  const bool ok = attn_problem_validate(p, err, sizeof err);
  EXPECT(!ok && strstr(err, want), "want a refusal with '%s', got %s: %s", want,
         ok ? "valid" : "invalid", err);
}

static void test_messages_and_end_points(void) {
  attn_options o = {0};
  attn_problem p = attn_problem_make(1, 4, 2, 8, 8, 16, 16, false);
  p.opts = &o;
  p.scale = 1e-45f;
  expect_refused(&p, "scale 1.4013e-45 is subnormal");
  p.scale = -FLT_MIN;
  EXPECT(attn_problem_validate(&p, NULL, 0), "scale -FLT_MIN must be valid");
  p.scale = 0.0f;
  EXPECT(attn_problem_validate(&p, NULL, 0), "scale 0 must be valid");
  p.scale = 0.25f;

  o.softcap = 1e-45f;
  expect_refused(&p,
                 "softcap must be 0 (none) or in [1.17549e-38, 1.84467e+19] (got 1.40129846e-45)");
  o.softcap = 0x1.8p126f;
  expect_refused(&p, "softcap must be 0 (none) or in [");
  o.softcap = ATTN_SOFTCAP_MIN;
  EXPECT(attn_problem_validate(&p, NULL, 0), "softcap FLT_MIN must be valid");
  o.softcap = (float)ATTN_SOFTCAP_MAX;
  EXPECT(attn_problem_validate(&p, NULL, 0), "softcap 2^64 must be valid");
  o.softcap = 0.0f;

  o.alibi_max_bias = 1e-45f;
  expect_refused(&p,
                 "alibi max_bias must be 0 (none) or in [1.17549e-38, 126] (got 1.40129846e-45)");
  o.alibi_max_bias = 127.0f;
  expect_refused(&p, "alibi max_bias must be 0 (none) or in [1.17549e-38, 126] (got 127)");
  o.alibi_max_bias = ATTN_ALIBI_MAX_BIAS_MIN;
  EXPECT(attn_problem_validate(&p, NULL, 0), "max_bias FLT_MIN must be valid");
  o.alibi_max_bias = ATTN_ALIBI_MAX_BIAS_MAX;
  EXPECT(attn_problem_validate(&p, NULL, 0), "max_bias 126 must be valid");
  // every slope of max_bias 126 is a normal float32 (the smallest is 2^-126)
  for (int64_t h = 0; h < p.heads; h++)
    EXPECT(fabsf(attn_alibi_slope(&p, h)) >= FLT_MIN, "slope %lld = %g", (long long)h,
           (double)attn_alibi_slope(&p, h));
  o.alibi_max_bias = 0.0f;

  // The same refusals when the caller runs with FTZ/DAZ (a plug-in or a kernel left it
  // set): there a subnormal compares equal to 0, so the checks read bits, not values.
  const attn_fp_env env = attn_fp_env_enter();
  p.scale = 1e-40f;
  const bool scale_ok = attn_problem_validate(&p, NULL, 0);
  p.scale = 0.25f;
  o.softcap = 1e-40f;
  const bool softcap_ok = attn_problem_validate(&p, NULL, 0);
  o.softcap = 0.0f;
  o.alibi_max_bias = 1e-40f;
  const bool bias_ok = attn_problem_validate(&p, NULL, 0);
  o.alibi_max_bias = 0.0f;
  attn_fp_env_leave(env);
  EXPECT(!scale_ok && !softcap_ok && !bias_ok,
         "under FTZ/DAZ a subnormal was accepted: scale %d softcap %d max_bias %d", scale_ok,
         softcap_ok, bias_ok);
}

// The input checks of the class: subnormal explicit slopes, a pre-scaled Q that overflows.
static void test_input_refusals(void) {
  attn_options o = {0};
  attn_problem p = attn_problem_make(1, 2, 1, 4, 4, 8, 8, false);
  p.opts = &o;
  float q[64], k[32], v[32];
  for (int i = 0; i < 64; i++) q[i] = 1.0f;
  for (int i = 0; i < 32; i++) k[i] = v[i] = 1.0f;
  float slopes[2] = {0.5f, 1e-40f};
  o.alibi_slopes = slopes;
  char err[320] = "";
  EXPECT(attn_inputs_check(&p, q, k, v, err, sizeof err) == ATTN_ERR_RANGE &&
             strstr(err, "ALiBi slope[1] = 9.99995e-41 is subnormal"),
         "subnormal slope: %s", err);
  slopes[1] = -FLT_MIN;
  EXPECT(attn_inputs_check(&p, q, k, v, err, sizeof err) == ATTN_OK, "slope -FLT_MIN: %s", err);
  o.alibi_slopes = NULL;
  // scale 2^127, q of 1: scale·q is finite; q of 4 (norm 11.3): 2^130.5 is not, with K = 0
  p.scale = 0x1p127f;
  for (int i = 0; i < 32; i++) k[i] = 0.0f;
  EXPECT(attn_inputs_check(&p, q, k, v, err, sizeof err) == ATTN_ERR_RANGE &&
             strstr(err, "the scaled queries may overflow float32"),
         "scale 2^127, K = 0: %s", err);
  p.scale = 0x1p100f;
  EXPECT(attn_inputs_check(&p, q, k, v, err, sizeof err) == ATTN_OK, "scale 2^100, K = 0: %s", err);
}

int main(int argc, char **argv) {
  g_verbose = argc > 1 && strcmp(argv[1], "-v") == 0;  // print every refusal
  test_messages_and_end_points();
  test_input_refusals();
  test_sweep();
  return test_finish("test_option_values");
}
