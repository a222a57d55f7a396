// SPDX-License-Identifier: MIT
// The checker's three verdicts (kernels/check/check.h): a pass must mean something.
//  - Huge scores (Q (1,2,4,8), K/V (1,2,5,8), every Q and K element ±3e38, V
//    normal): an output of zeros passed with err/tol 1.79e-143; now it is inconclusive,
//    and every kernel (which refuses such inputs) is inconclusive too — never pass.
//  - Inside the domain but with a bound too loose to tell the weights apart (scale 1e30):
//    inconclusive even for the exact reference output; zeros still not a pass.
//  - Non-finite inputs: inconclusive.
//  - Flush-to-zero: inputs of 1e-40 everywhere (subnormal) pass on every float kernel,
//    while an output wrong by more than the FTZ terms fails, and zeros still fail on
//    ordinary inputs.
//  - Soft-capping that saturates (raw scores ~1e7, cap 50): the capped scores are
//    determined, so the reference and every kernel pass; the uncapped answer and zeros
//    fail (the raw score's error passes through tanh's slope, not undiminished).
//  - The caller's rounding mode (FE_UPWARD) does not reach a prepared case: the q8_0 K/V
//    stored from float32, the int8 mode's Q and the reference are bitwise those of
//    round-to-nearest, every kernel passes, and the caller's mode is back afterwards.
#include <fenv.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attn.h"
#include "check/check.h"
#include "test_util.h"

static float lcg(uint64_t *s) {  // deterministic values in (-2, 2)
  *s = *s * 6364136223846793005ull + 1442695040888963407ull;
  return (float)((double)(*s >> 11) / 9007199254740992.0 * 4.0 - 2.0);
}

typedef struct inputs {
  attn_problem p;
  float *q, *k, *v, *o;
} inputs;

static inputs make(void) {
  inputs x = {.p = attn_problem_make(1, 2, 2, 4, 5, 8, 8, false)};
  x.q = malloc(attn_q_elems(&x.p) * sizeof(float));
  x.k = malloc(attn_k_elems(&x.p) * sizeof(float));
  x.v = malloc(attn_v_elems(&x.p) * sizeof(float));
  x.o = calloc(attn_o_elems(&x.p), sizeof(float));
  uint64_t s = 11;
  for (size_t i = 0; i < attn_q_elems(&x.p); i++) x.q[i] = lcg(&s);
  for (size_t i = 0; i < attn_k_elems(&x.p); i++) x.k[i] = lcg(&s);
  for (size_t i = 0; i < attn_v_elems(&x.p); i++) x.v[i] = lcg(&s);
  return x;
}

static void release(inputs *x) {
  free(x->q), free(x->k), free(x->v), free(x->o);
}

static attn_check_prepared *prepare(const inputs *x) {
  char err[256];
  attn_check_prepared *pc = attn_check_prepare_inputs(&x->p, x->q, x->k, x->v, err, sizeof err);
  EXPECT(pc != NULL, "prepare: %s", err);
  return pc;
}

// The verdict for a caller-computed output.
static attn_check_verdict verdict_of(const attn_check_prepared *pc, const float *o,
                                     attn_check_result *r) {
  attn_check_output(pc, o, r);
  EXPECT(r->pass == (r->verdict == ATTN_CHECK_PASS), "pass flag disagrees with the verdict");
  return r->verdict;
}

// A test-only kernel that writes zeros (what tiled/omp/flash once output on huge scores).
static int zeros_run(const attn_problem *p, const attn_exec *exec, const float *q, const void *k,
                     const void *v, float *o, void *ws) {
  (void)exec, (void)q, (void)k, (void)v, (void)ws;
  memset(o, 0, attn_o_elems(p) * sizeof *o);
  return ATTN_OK;
}
static const attn_kernel kZeros = {
    .name = "zeros", .summary = "test-only", .caps = ATTN_CAP_ALL_SHAPES, .run = zeros_run};

int main(void) {
  EXPECT(strcmp(attn_check_verdict_name(ATTN_CHECK_PASS), "pass") == 0 &&
             strcmp(attn_check_verdict_name(ATTN_CHECK_FAIL), "fail") == 0 &&
             strcmp(attn_check_verdict_name(ATTN_CHECK_INCONCLUSIVE), "inconclusive") == 0,
         "verdict names");
  attn_check_result r;

  {  // 1. Q, K of ±3e38, V standard normal
    inputs x = make();
    uint64_t sv = 21;
    for (size_t i = 0; i < attn_v_elems(&x.p); i++) {  // Box–Muller from (0, 1) uniforms
      const double u1 = (lcg(&sv) + 2.0) / 4.0 + 1e-12, u2 = (lcg(&sv) + 2.0) / 4.0;
      x.v[i] = (float)(sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2));
    }
    for (size_t i = 0; i < attn_q_elems(&x.p); i++) x.q[i] = x.q[i] < 0 ? -3e38f : 3e38f;
    for (size_t i = 0; i < attn_k_elems(&x.p); i++) x.k[i] = x.k[i] < 0 ? -3e38f : 3e38f;
    attn_check_prepared *pc = prepare(&x);
    if (pc) {
      const float *ref = attn_check_reference_output(pc);
      double peak = 0;
      for (size_t i = 0; i < attn_o_elems(&x.p); i++) peak = fmax(peak, fabs((double)ref[i]));
      EXPECT(peak > 0.5 && isfinite(peak), "the double reference is meaningful (peak %g)", peak);
      EXPECT(verdict_of(pc, x.o, &r) == ATTN_CHECK_INCONCLUSIVE, "zeros: verdict %s (%s)",
             attn_check_verdict_name(r.verdict), r.message);
      EXPECT(strstr(r.message, "input domain") != NULL, "reason names the input domain: %s",
             r.message);
      EXPECT(verdict_of(pc, ref, &r) != ATTN_CHECK_PASS,
             "even the reference output cannot pass here");
      EXPECT(!attn_check_kernel(&kZeros, pc, NULL, &r) && r.verdict == ATTN_CHECK_INCONCLUSIVE,
             "zeros kernel: %s (%s)", attn_check_verdict_name(r.verdict), r.message);
      for (size_t i = 0; i < attn_kernel_count(); i++) {
        const attn_kernel *k = attn_kernel_at(i);
        if (!attn_kernel_available(k, NULL, 0)) continue;
        EXPECT(!attn_check_kernel(k, pc, NULL, &r) && r.verdict == ATTN_CHECK_INCONCLUSIVE,
               "%s on +-3e38: %s (%s)", k->name, attn_check_verdict_name(r.verdict), r.message);
        EXPECT(strstr(r.message, "refused") != NULL, "%s: reason: %s", k->name, r.message);
      }
      attn_check_prepared_free(pc);
    }
    release(&x);
  }
  {  // 2. inside the domain, bound uninformative: scale 1e30 with ordinary Q, K
    inputs x = make();
    x.p.scale = 1e30f;
    char err[256];
    EXPECT(attn_inputs_check(&x.p, x.q, x.k, x.v, err, sizeof err) == ATTN_OK, "in domain: %s",
           err);
    attn_check_prepared *pc = prepare(&x);
    if (pc) {
      EXPECT(verdict_of(pc, attn_check_reference_output(pc), &r) == ATTN_CHECK_INCONCLUSIVE,
             "reference output at scale 1e30: %s (%s)", attn_check_verdict_name(r.verdict),
             r.message);
      EXPECT(strstr(r.message, "uninformative") != NULL, "reason: %s", r.message);
      EXPECT(verdict_of(pc, x.o, &r) != ATTN_CHECK_PASS, "zeros at scale 1e30: pass");
      EXPECT(!attn_check_kernel(&kZeros, pc, NULL, &r), "zeros kernel at scale 1e30 passed");
      attn_check_prepared_free(pc);
    }
    release(&x);
  }
  {  // 3. non-finite inputs: prepared, but no verdict
    inputs x = make();
    x.v[3] = NAN;
    attn_check_prepared *pc = prepare(&x);
    if (pc) {
      EXPECT(verdict_of(pc, x.o, &r) == ATTN_CHECK_INCONCLUSIVE, "NaN in V: %s (%s)",
             attn_check_verdict_name(r.verdict), r.message);
      EXPECT(strstr(r.message, "not finite") != NULL, "reason: %s", r.message);
      attn_check_prepared_free(pc);
    }
    release(&x);
  }
  {  // 4. ordinary inputs: the reference passes, zeros and a slightly wrong output fail
    inputs x = make();
    attn_check_prepared *pc = prepare(&x);
    if (pc) {
      const float *ref = attn_check_reference_output(pc);
      EXPECT(verdict_of(pc, ref, &r) == ATTN_CHECK_PASS, "reference: %s (%s)",
             attn_check_verdict_name(r.verdict), r.message);
      EXPECT(verdict_of(pc, x.o, &r) == ATTN_CHECK_FAIL, "zeros: %s (%s)",
             attn_check_verdict_name(r.verdict), r.message);
      EXPECT(!attn_check_kernel(&kZeros, pc, NULL, &r) && r.verdict == ATTN_CHECK_FAIL,
             "zeros kernel: %s", attn_check_verdict_name(r.verdict));
      memcpy(x.o, ref, attn_o_elems(&x.p) * sizeof(float));
      x.o[5] *= 1.001f;  // 1e-3 relative: far beyond float32 rounding
      EXPECT(verdict_of(pc, x.o, &r) == ATTN_CHECK_FAIL, "1e-3 error: %s",
             attn_check_verdict_name(r.verdict));
      attn_check_prepared_free(pc);
    }
    release(&x);
  }
  {  // 5. flush-to-zero: subnormal inputs everywhere
    static const float kDenorm[2] = {1e-40f, -3e-39f};
    for (int variant = 0; variant < 3; variant++) {
      inputs x = make();
      uint64_t s = 5;
      for (size_t i = 0; i < attn_q_elems(&x.p); i++)
        x.q[i] = variant < 2 ? kDenorm[variant] : lcg(&s) * 5e-39f;
      for (size_t i = 0; i < attn_k_elems(&x.p); i++)
        x.k[i] = variant < 2 ? kDenorm[variant] : lcg(&s) * 5e-39f;
      for (size_t i = 0; i < attn_v_elems(&x.p); i++)
        x.v[i] = variant < 2 ? kDenorm[variant] : lcg(&s) * 5e-39f;
      EXPECT(fpclassify(x.v[0]) == FP_SUBNORMAL, "variant %d: inputs are subnormal", variant);
      attn_check_prepared *pc = prepare(&x);
      if (!pc) {
        release(&x);
        continue;
      }
      const float *ref = attn_check_reference_output(pc);
      for (size_t i = 0; i < attn_kernel_count(); i++) {
        const attn_kernel *k = attn_kernel_at(i);
        if (!attn_kernel_available(k, NULL, 0)) continue;
        EXPECT(attn_check_kernel(k, pc, NULL, &r), "%s on subnormal inputs (variant %d): %s (%s)",
               k->name, variant, attn_check_verdict_name(r.verdict), r.message);
      }
      // A flushed (all-zero) answer passes: exactly what DAZ makes of these inputs …
      EXPECT(verdict_of(pc, x.o, &r) == ATTN_CHECK_PASS, "variant %d: zeros %s (%s)", variant,
             attn_check_verdict_name(r.verdict), r.message);
      // … but an output wrong by more than the FTZ terms (a few·n·FLT_MIN) fails.
      for (size_t e = 0; e < attn_o_elems(&x.p); e++) x.o[e] = ref[e];
      x.o[2] = ref[2] + 1e-35f;
      EXPECT(verdict_of(pc, x.o, &r) == ATTN_CHECK_FAIL, "variant %d: off by 1e-35: %s (%s)",
             variant, attn_check_verdict_name(r.verdict), r.message);
      x.o[2] = 1e-30f;
      EXPECT(verdict_of(pc, x.o, &r) == ATTN_CHECK_FAIL, "variant %d: 1e-30: %s", variant,
             attn_check_verdict_name(r.verdict));
      attn_check_prepared_free(pc);
      release(&x);
    }
  }
  {  // 6. DAZ inside the scores: subnormal Q elements against large K elements. The kernel
     //    reads q_0 as 0, losing q_0·k_0 (up to ~2e-3) from every score — far beyond the
     //    rounding terms; the bound's DAZ term (check.h, F_j) accounts for it.
    inputs x = make();
    uint64_t s = 9;
    for (int64_t r = 0; r < x.p.heads * x.p.seq_q; r++)
      x.q[r * 8] = (lcg(&s) < 0 ? -1.0f : 1.0f) * 1.1e-38f * 0.9f;
    for (int64_t r = 0; r < x.p.kv_heads * x.p.seq_kv; r++)
      x.k[r * 8] = (lcg(&s) < 0 ? -1.0f : 1.0f) * 2e35f;
    EXPECT(fpclassify(x.q[0]) == FP_SUBNORMAL, "q_0 is subnormal");
    char err[256];
    EXPECT(attn_inputs_check(&x.p, x.q, x.k, x.v, err, sizeof err) == ATTN_OK, "in domain: %s",
           err);
    attn_check_prepared *pc = prepare(&x);
    for (size_t i = 0; pc && i < attn_kernel_count(); i++) {
      const attn_kernel *k = attn_kernel_at(i);
      if (!attn_kernel_available(k, NULL, 0)) continue;
      EXPECT(attn_check_kernel(k, pc, NULL, &r), "%s with subnormal q_0, large k_0: %s (%s)",
             k->name, attn_check_verdict_name(r.verdict), r.message);
    }
    attn_check_prepared_free(pc);
    release(&x);
  }
  {  // 7. softcap 50 over raw scores of ~1e7: tanh saturates
    inputs x = make();
    for (size_t i = 0; i < attn_q_elems(&x.p); i++) x.q[i] *= 3000.0f;
    for (size_t i = 0; i < attn_k_elems(&x.p); i++) x.k[i] *= 3000.0f;
    const attn_options capped = {.softcap = 50.0f};
    x.p.opts = &capped;
    attn_check_prepared *pc = prepare(&x);
    x.p.opts = NULL;
    attn_check_prepared *raw = prepare(&x);
    if (pc && raw) {
      EXPECT(verdict_of(pc, attn_check_reference_output(pc), &r) == ATTN_CHECK_PASS,
             "reference output, saturated softcap: %s (%s)", attn_check_verdict_name(r.verdict),
             r.message);
      EXPECT(verdict_of(pc, attn_check_reference_output(raw), &r) == ATTN_CHECK_FAIL,
             "the uncapped answer under softcap: %s (%s)", attn_check_verdict_name(r.verdict),
             r.message);
      EXPECT(verdict_of(pc, x.o, &r) == ATTN_CHECK_FAIL, "zeros, saturated softcap: %s",
             attn_check_verdict_name(r.verdict));
      for (size_t i = 0; i < attn_kernel_count(); i++) {
        const attn_kernel *k = attn_kernel_at(i);
        if (!attn_kernel_available(k, NULL, 0)) continue;
        EXPECT(attn_check_kernel(k, pc, NULL, &r), "%s, saturated softcap: %s (%s)", k->name,
               attn_check_verdict_name(r.verdict), r.message);
      }
    }
    attn_check_prepared_free(pc);
    attn_check_prepared_free(raw);
    release(&x);
  }
  {  // 8. an int8 case on q8_0 K/V prepared under FE_UPWARD
    attn_problem p = attn_problem_make(1, 2, 2, 3, 7, 32, 32, false);
    p.kv_dtype = ATTN_DTYPE_Q8_0, p.compute = ATTN_COMPUTE_INT8;
    const size_t nq = attn_q_elems(&p), nk = attn_k_elems(&p), no = attn_o_elems(&p);
    float *q = malloc(nq * sizeof *q), *k = malloc(nk * sizeof *k), *v = malloc(nk * sizeof *v);
    uint64_t s = 17;
    for (size_t i = 0; i < nq; i++) q[i] = lcg(&s);
    for (size_t i = 0; i < nk; i++) k[i] = lcg(&s), v[i] = lcg(&s);
    char err[256];
    attn_check_prepared *near = attn_check_prepare_convert(&p, q, k, v, err, sizeof err);
    fesetround(FE_UPWARD);
    attn_check_prepared *up = attn_check_prepare_convert(&p, q, k, v, err, sizeof err);
    EXPECT(fegetround() == FE_UPWARD, "the caller's rounding mode is restored");
    fesetround(FE_TONEAREST);
    EXPECT(near && up, "prepared: %s", err);
    if (near && up) {
      EXPECT(!memcmp(attn_check_reference_output(near), attn_check_reference_output(up),
                     no * sizeof(float)),
             "the reference does not depend on the caller's rounding mode");
      fesetround(FE_UPWARD);
      for (size_t i = 0; i < attn_kernel_count(); i++) {
        const attn_kernel *kn = attn_kernel_at(i);
        if (!attn_kernel_available(kn, NULL, 0)) continue;
        EXPECT(attn_check_kernel(kn, up, NULL, &r), "%s, int8 under FE_UPWARD: %s (%s)", kn->name,
               attn_check_verdict_name(r.verdict), r.message);
      }
      fesetround(FE_TONEAREST);
    }
    attn_check_prepared_free(near);
    attn_check_prepared_free(up);
    free(q), free(k), free(v);
  }
  return test_finish("test_checker_verdicts");
}
