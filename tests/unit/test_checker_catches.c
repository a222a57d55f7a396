// SPDX-License-Identifier: MIT
// The checker must be able to fail. Each deliberately broken kernel below (registered
// only here, never in the registry) carries one classic attention bug; the quick check
// matrix must report it, while the correct kernels pass the same cases.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attn.h"
#include "check/check.h"
#include "core/attn_internal.h"
#include "test_util.h"

typedef enum {
  BUG_NO_SCALE,         // forgets the 1/sqrt(d) scale
  BUG_CAUSAL_OFF_BY_1,  // lets row i see one key too many
  BUG_NO_MAX_SUB,       // exponentiates raw scores (overflows on large magnitudes)
  BUG_GQA_MAPPING,      // query head h reads K/V head h % kv_heads instead of h / group
  BUG_WRITES_PAST_O,    // writes one float after the end of O
  BUG_SKIPS_LAST,       // leaves the last output element unwritten
  BUG_MASKED_ROW_NAN,   // divides 0/0 on rows that see no key
  // Each of these declares the option native but ignores it (attn.h, "Attention variants").
  BUG_IGNORES_ALIGN,    // always bottom-right
  BUG_IGNORES_WINDOW,   // no sliding window
  BUG_IGNORES_SOFTCAP,  // no tanh capping
  BUG_IGNORES_ALIBI,    // no ALiBi bias
  BUG_IGNORES_SINKS,    // no sink in the denominator
  BUG_IGNORES_MASK,     // no additive mask
  BUG_IGNORES_LSE,      // never writes the LSE output
  BUG_LSE_WITH_SINK,    // includes the sink in the LSE
  BUG_SINK_ROW_NAN,     // with a sink, a row that sees nothing divides −inf·v by inf: NaN
  BUG_COUNT
} bug;

static const char *const kBugNames[BUG_COUNT] = {"missing scale",
                                                 "causal off by one",
                                                 "no max subtraction",
                                                 "wrong GQA head mapping",
                                                 "write past O",
                                                 "last element unwritten",
                                                 "NaN on fully masked rows",
                                                 "ignores alignment",
                                                 "ignores window",
                                                 "ignores softcap",
                                                 "ignores ALiBi",
                                                 "ignores sinks",
                                                 "ignores mask",
                                                 "ignores LSE",
                                                 "LSE includes the sink",
                                                 "NaN on sink-only rows"};

static bug g_bug;

// A float32 one-row-at-a-time kernel with the selected bug injected.
static int buggy_run(const attn_problem *pp, const attn_exec *exec, const float *q, const void *kv,
                     const void *vv, float *o, void *ws) {
  (void)exec;
  const float *k = (const float *)kv, *v = (const float *)vv;
  // The option-ignoring bugs compute the problem without that option.
  attn_problem pb = *pp;
  attn_options ob = pp->opts ? *pp->opts : (attn_options){0};
  if (pp->opts) pb.opts = &ob;
  if (g_bug == BUG_IGNORES_ALIGN) ob.align = ATTN_ALIGN_BOTTOM_RIGHT;
  if (g_bug == BUG_IGNORES_WINDOW) ob.window = false;
  if (g_bug == BUG_IGNORES_SOFTCAP) ob.softcap = 0.0f;
  if (g_bug == BUG_IGNORES_ALIBI) ob.alibi_slopes = NULL, ob.alibi_max_bias = 0.0f;
  if (g_bug == BUG_IGNORES_SINKS) ob.sinks = NULL;
  if (g_bug == BUG_IGNORES_MASK) ob.mask = NULL;
  if (g_bug == BUG_IGNORES_LSE) ob.lse = NULL;
  const attn_problem *p = &pb;
  float *s = ws;
  const int64_t dqk = p->head_dim_qk, dv = p->head_dim_v;
  const float scale = g_bug == BUG_NO_SCALE ? 1.0f : p->scale;
  for (int64_t b = 0; b < p->batch; b++)
    for (int64_t h = 0; h < p->heads; h++) {
      const int64_t g = g_bug == BUG_GQA_MAPPING ? h % p->kv_heads : attn_kv_head_of(p, h);
      const float *qh = attn_q_head(p, q, b, h), *kh = attn_k_head(p, k, b, g);
      const float *vh = attn_v_head(p, v, b, g);
      float *oh = attn_o_head(p, o, b, h);
      const attn_head_opts ho = attn_head_opts_of(p, b, h);
      for (int64_t i = 0; i < p->seq_q; i++) {
        int64_t lo, hi;
        attn_row_keys(p, i, &lo, &hi);
        if (g_bug == BUG_CAUSAL_OFF_BY_1 && p->causal && hi < p->seq_kv) hi++;
        const int64_t n = hi - lo;
        float m = g_bug == BUG_NO_MAX_SUB ? 0.0f : -INFINITY, l = 0.0f;
        for (int64_t j = 0; j < n; j++) {
          float dot = 0.0f;
          for (int64_t t = 0; t < dqk; t++) dot += qh[i * dqk + t] * kh[(lo + j) * dqk + t];
          s[j] = attn_score_finish(&ho, dot * scale, i, lo + j);
          if (g_bug != BUG_NO_MAX_SUB) m = fmaxf(m, s[j]);
        }
        const bool empty = m == -INFINITY;  // sees nothing (range or mask)
        if (!empty)
          for (int64_t j = 0; j < n; j++) l += (s[j] = expf(s[j] - m));
        float denom = l;
        if (ho.has_sink && (!empty || (g_bug == BUG_SINK_ROW_NAN && ho.has_sink)))
          denom += expf(ho.sink - m);
        if (ho.lse) {
          ho.lse[i] = empty ? -INFINITY : m + logf(l);
          if (g_bug == BUG_LSE_WITH_SINK && !empty) ho.lse[i] = m + logf(denom);
        }
        for (int64_t d = 0; d < dv; d++) {
          float acc = 0.0f;
          if (!empty || g_bug == BUG_MASKED_ROW_NAN || (g_bug == BUG_SINK_ROW_NAN && ho.has_sink))
            for (int64_t j = 0; j < n; j++) acc += s[j] * vh[(lo + j) * dv + d];
          if ((n == 0 || empty) && g_bug != BUG_MASKED_ROW_NAN &&
              !(g_bug == BUG_SINK_ROW_NAN && ho.has_sink))
            oh[i * dv + d] = 0.0f;
          else
            oh[i * dv + d] = acc / denom;
        }
      }
    }
  const size_t n_o = attn_o_elems(p);
  if (g_bug == BUG_WRITES_PAST_O) o[n_o] = 0.0f;
  if (g_bug == BUG_SKIPS_LAST) memcpy(&o[n_o - 1], &(uint32_t){0x7fc0dead}, sizeof(float));
  return ATTN_OK;
}

static size_t buggy_ws(const attn_problem *p, const attn_exec *exec) {
  (void)exec;
  return (size_t)p->seq_kv * sizeof(float);
}

static const attn_kernel kBuggy = {
    .name = "buggy",
    .summary = "test-only broken kernel",
    .caps = ATTN_CAP_ALL_SHAPES | ATTN_CAP_OPT_ALL,  // natively: the bugs run, no fallback
    .workspace = buggy_ws,
    .run = buggy_run};

int main(void) {
  const size_t n_cases = attn_check_matrix(true, NULL, 0);
  attn_check_case *cases = calloc(n_cases, sizeof *cases);
  attn_check_matrix(true, cases, n_cases);
  size_t caught[BUG_COUNT] = {0}, naive_failures = 0;
  for (size_t c = 0; c < n_cases; c++) {
    char err[256];
    attn_check_prepared *pc = attn_check_prepare(&cases[c], err, sizeof err);
    EXPECT(pc != NULL, "prepare: %s", err);
    if (!pc) continue;
    attn_check_result r;
    naive_failures += !attn_check_kernel(attn_kernel_find("naive"), pc, NULL, &r);
    for (int b = 0; b < BUG_COUNT; b++) {
      g_bug = (bug)b;
      caught[b] += !attn_check_kernel(&kBuggy, pc, NULL, &r);
    }
    attn_check_prepared_free(pc);
  }
  EXPECT(naive_failures == 0, "the correct naive kernel failed %zu cases", naive_failures);
  for (int b = 0; b < BUG_COUNT; b++) {
    printf("%-26s caught in %3zu of %zu cases\n", kBugNames[b], caught[b], n_cases);
    EXPECT(caught[b] > 0, "the checker missed the '%s' bug", kBugNames[b]);
  }
  free(cases);
  return test_finish("test_checker_catches");
}
