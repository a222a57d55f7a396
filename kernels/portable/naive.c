// SPDX-License-Identifier: MIT
// naive — the seed article's formulas, in float32, one query row at a time:
//     ω_j = q · k_j                      (unnormalised attention scores)
//     α_j = softmax_j(ω_j · scale)       (max-subtracted for stability)
//     z   = Σ_j α_j v_j                  (context vector)
// over the keys of attn_row_keys, with every option of attn.h natively (the scores pass
// through attn_score_finish; a sink joins the softmax denominator).
#include <math.h>
#include <string.h>

#include "core/attn_internal.h"

static size_t naive_workspace(const attn_problem *p, const attn_exec *exec) {
  (void)exec;
  return (size_t)p->seq_kv * sizeof(float);  // ω / α for one row
}

static int naive_run(const attn_problem *p, const attn_exec *exec, const float *q, const void *kv,
                     const void *vv, float *o, void *workspace) {
  (void)exec;
  const float *k = (const float *)kv, *v = (const float *)vv;
  ATTN_ASSERT_PRECONDITIONS(p, q, k, v, o);
  attn_fp_env env = attn_fp_env_enter();
  float *alpha = workspace;
  const int64_t dqk = p->head_dim_qk, dv = p->head_dim_v;
  for (int64_t b = 0; b < p->batch; b++) {
    for (int64_t h = 0; h < p->heads; h++) {
      const int64_t g = attn_kv_head_of(p, h);
      const float *qh = attn_q_head(p, q, b, h);
      const float *kh = attn_k_head(p, k, b, g);
      const float *vh = attn_v_head(p, v, b, g);
      float *oh = attn_o_head(p, o, b, h);
      const attn_head_opts ho = attn_head_opts_of(p, b, h);
      for (int64_t i = 0; i < p->seq_q; i++) {
        int64_t lo, hi;
        attn_row_keys(p, i, &lo, &hi);
        const int64_t n = hi - lo;
        float *z = oh + i * dv;
        memset(z, 0, (size_t)dv * sizeof *z);
        float m = -INFINITY;
        const float *kr = kh + lo * dqk, *vr = vh + lo * dv;  // the row's first key
        for (int64_t j = 0; j < n; j++) {
          float w = 0.0f;
          for (int64_t d = 0; d < dqk; d++) w += qh[i * dqk + d] * kr[j * dqk + d];
          alpha[j] = ho.finish ? attn_score_finish(&ho, w * p->scale, i, lo + j) : w * p->scale;
          m = fmaxf(m, alpha[j]);
        }
        if (m == -INFINITY) {  // fully masked row: zeros, LSE −inf
          if (ho.lse) ho.lse[i] = -INFINITY;
          continue;
        }
        float l = 0.0f;
        for (int64_t j = 0; j < n; j++) {
          alpha[j] = expf(alpha[j] - m);
          l += alpha[j];
        }
        if (ho.lse) ho.lse[i] = attn_row_lse(l, m);
        const float inv_l = 1.0f / attn_denominator(&ho, l, m);
        for (int64_t j = 0; j < n; j++) {
          const float a = alpha[j] * inv_l;
          for (int64_t d = 0; d < dv; d++) z[d] += a * vr[j * dv + d];
        }
      }
    }
  }
  attn_fp_env_leave(env);
  return ATTN_OK;
}

const attn_kernel attn_kernel_naive = {
    .name = "naive",
    .summary = "float32 direct translation of the seed's formulas: scores, softmax, weighted sum",
    .required_isa = 0,
    .caps = ATTN_CAP_ALL_SHAPES | ATTN_CAP_OPT_ALL,
    .workspace = naive_workspace,
    .run = naive_run,
    .vec_width = 1,  // scalar C, no register tile
};
