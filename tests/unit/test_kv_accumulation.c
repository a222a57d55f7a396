// SPDX-License-Identifier: MIT
// The FP32-accumulation test. seq_kv = 131072 keys of F16 K/V whose scores are
// all nearly equal (|s| < 0.01) and whose values are about 1, so the unnormalised weighted
// sum Σ_j e^(s_j − m)·v_j of a row reaches about 131072 — past 65504, FP16's largest finite
// value, and far past 2048, where FP16's spacing (2) swallows a +1. A kernel that
// accumulates the weighted sum of V in FP16 (as ggml's CPU path does for F16 V) gets
// overflow or a stalled sum; with FP32 accumulation the output is within the checker's
// bound. Every available kernel of the registry runs (native F16 or through the float32
// conversion of attn_kernel_run), decode (seq_q 1) and a few rows (seq_q 5, GQA); then
// the same test-only kernel is run with an FP32 and with an FP16 accumulator: the first
// must pass and the second must fail, which shows the test detects FP16 accumulation.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attn.h"
#include "check/check.h"
#include "core/attn_internal.h"
#include "core/convert.h"
#include "test_util.h"

enum { kSeqKv = 131072 };

static bool g_fp16_acc;  // the test kernel's accumulator: FP16 (true) or FP32

// A test-only kernel reading F16 K/V natively: scores, row maximum, then
// l = Σ_j e^(s_j − m), acc = Σ_j e^(s_j − m)·v_j, o = acc / l. With
// g_fp16_acc every update of acc is rounded to FP16 (an FP16 accumulator); l stays FP32.
static int acc_run(const attn_problem *p, const attn_exec *e, const float *q, const void *k,
                   const void *v, float *o, void *ws) {
  (void)e;
  float *s = ws;
  const int64_t dqk = p->head_dim_qk, dv = p->head_dim_v;
  for (int64_t b = 0; b < p->batch; b++)
    for (int64_t h = 0; h < p->heads; h++) {
      const int64_t g = attn_kv_head_of(p, h);
      const uint16_t *kh = attn_kv_head(p, k, b, g, dqk), *vh = attn_kv_head(p, v, b, g, dv);
      const float *qh = attn_q_head(p, q, b, h);
      float *oh = attn_o_head(p, o, b, h);
      for (int64_t i = 0; i < p->seq_q; i++) {
        float m = -INFINITY;
        for (int64_t j = 0; j < p->seq_kv; j++) {
          float dot = 0.0f;
          for (int64_t d = 0; d < dqk; d++)
            dot += qh[i * dqk + d] * attn_f16_to_f32(kh[j * dqk + d]);
          s[j] = dot * p->scale;
          m = fmaxf(m, s[j]);
        }
        float l = 0.0f;
        for (int64_t j = 0; j < p->seq_kv; j++) l += (s[j] = expf(s[j] - m));
        for (int64_t d = 0; d < dv; d++) {
          float acc = 0.0f;
          for (int64_t j = 0; j < p->seq_kv; j++) {
            acc += s[j] * attn_f16_to_f32(vh[j * dv + d]);
            if (g_fp16_acc) acc = attn_f16_to_f32(attn_f32_to_f16(acc));
          }
          oh[i * dv + d] = acc / l;
        }
      }
    }
  return ATTN_OK;
}
static size_t acc_workspace(const attn_problem *p, const attn_exec *e) {
  (void)e;
  return (size_t)p->seq_kv * sizeof(float);
}
static const attn_kernel kAccKernel = {.name = "test_accumulator",
                                       .summary = "FP32 or FP16 accumulation of P·V",
                                       .caps = ATTN_CAP_KV_F16,
                                       .workspace = acc_workspace,
                                       .run = acc_run};

static uint64_t g_rng = 0x9e3779b97f4a7c15ull;
static float uniform(float lo, float hi) {
  g_rng ^= g_rng >> 12, g_rng ^= g_rng << 25, g_rng ^= g_rng >> 27;
  return lo + (hi - lo) * (float)((g_rng * 0x2545f4914f6cdd1dull) >> 40) * 0x1p-24f;
}

static attn_check_prepared *prepare(const attn_problem *p) {
  const size_t nq = attn_q_elems(p), nk = attn_k_elems(p), nv = attn_v_elems(p);
  float *q = malloc(nq * sizeof *q), *k = malloc(nk * sizeof *k), *v = malloc(nv * sizeof *v);
  attn_check_prepared *pc = NULL;
  if (q && k && v) {
    for (size_t i = 0; i < nq; i++) q[i] = uniform(-0.05f, 0.05f);
    for (size_t i = 0; i < nk; i++) k[i] = uniform(-0.05f, 0.05f);
    for (size_t i = 0; i < nv; i++) v[i] = uniform(0.98f, 1.02f);
    char err[256];
    pc = attn_check_prepare_convert(p, q, k, v, err, sizeof err);
    EXPECT(pc != NULL, "prepare: %s", err);
  }
  free(q);
  free(k);
  free(v);
  return pc;
}

// Usage: test_kv_accumulation [--decode-only] (seq_q 1 only: the cross build under qemu).
int main(int argc, char **argv) {
  const int64_t rows[2] = {1, 5};
  const int n_cases = argc > 1 && strcmp(argv[1], "--decode-only") == 0 ? 1 : 2;
  for (int c = 0; c < n_cases; c++) {
    attn_problem p = attn_problem_make(1, 2, 1, rows[c], kSeqKv, 32, 32, false);
    p.kv_dtype = ATTN_DTYPE_F16;
    attn_check_prepared *pc = prepare(&p);
    if (!pc) continue;
    // the premise: the stored V makes the unnormalised sum pass FP16's range
    const float *ref = attn_check_reference_output(pc);
    EXPECT(fabsf(ref[0] - 1.0f) < 0.03f, "reference output near 1 (got %g)", (double)ref[0]);
    size_t ran = 0;
    for (size_t i = 0; i < attn_kernel_count(); i++) {
      const attn_kernel *k = attn_kernel_at(i);
      if (!attn_kernel_available(k, NULL, 0)) continue;
      const attn_exec ex = {.threads = 2};
      attn_check_result r;
      EXPECT(attn_check_kernel(k, pc, &ex, &r),
             "%s, seq_q %lld, seq_kv %d, f16 K/V: %s (err/tol %.3g)", k->name, (long long)p.seq_q,
             kSeqKv, r.message, r.worst_ratio);
      ran++;
    }
    EXPECT(ran >= 3, "the portable kernels at least ran (%zu)", ran);
    attn_check_result r;
    g_fp16_acc = false;
    EXPECT(attn_check_kernel(&kAccKernel, pc, NULL, &r), "FP32 accumulator passes: %s", r.message);
    g_fp16_acc = true;
    EXPECT(!attn_check_kernel(&kAccKernel, pc, NULL, &r) && r.verdict == ATTN_CHECK_FAIL,
           "an FP16 accumulator fails (verdict %s, max abs err %.3g)",
           attn_check_verdict_name(r.verdict), r.max_abs_err);
    printf("seq_q %lld: FP16 accumulator: max abs err %.3g (%s)\n", (long long)p.seq_q,
           r.max_abs_err, r.message);
    attn_check_prepared_free(pc);
  }
  return test_finish("test_kv_accumulation");
}
