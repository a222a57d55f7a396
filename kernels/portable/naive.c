// SPDX-License-Identifier: MIT
// naive — the seed article's formulas, in float32, one query row at a time:
//     ω_j = q · k_j                      (unnormalised attention scores)
//     α_j = softmax_j(ω_j · scale)       (max-subtracted for stability)
//     z   = Σ_j α_j v_j                  (context vector)
// over the keys of attn_row_keys, with every option of attn.h natively (the scores pass
// through attn_score_finish; a sink joins the softmax denominator). K and V of any type
// are read natively, element by element (converted exactly to float32, core/convert.h).
#include <math.h>
#include <string.h>

#include "core/attn_internal.h"
#include "core/convert.h"

static size_t naive_workspace(const attn_problem *p, const attn_exec *exec) {
  (void)exec;
  return (size_t)p->seq_kv * sizeof(float);  // ω / α for one row
}

// Element idx of a K/V head of type t with rows of dim (float32: a plain load).
static inline float kv_at(attn_dtype t, const void *head, int64_t dim, size_t idx) {
  return t == ATTN_DTYPE_F32 ? ((const float *)head)[idx] : attn_kv_elem(t, head, dim, idx);
}

static int naive_run(const attn_problem *p, const attn_exec *exec, const float *q, const void *k,
                     const void *v, float *o, void *workspace) {
  (void)exec;
  ATTN_ASSERT_PRECONDITIONS(p, q, k, v, o);
  const attn_dtype t = p->kv_dtype;
  attn_fp_env env = attn_fp_env_enter();
  float *alpha = workspace;
  const int64_t dqk = p->head_dim_qk, dv = p->head_dim_v;
  for (int64_t b = 0; b < p->batch; b++) {
    for (int64_t h = 0; h < p->heads; h++) {
      const attn_head_view hd = attn_head_at(p, q, k, v, o, b, h);
      const attn_head_opts ho = attn_head_opts_of(p, b, h);
      for (int64_t i = 0; i < p->seq_q; i++) {
        int64_t lo, hi;
        attn_row_keys(p, i, &lo, &hi);
        const int64_t n = hi - lo;
        float *z = hd.o + i * dv;
        memset(z, 0, (size_t)dv * sizeof *z);
        float m = -INFINITY;
        const size_t k0 = (size_t)(lo * dqk), v0 = (size_t)(lo * dv);  // the row's first key
        for (int64_t j = 0; j < n; j++) {
          float w = 0.0f;
          for (int64_t d = 0; d < dqk; d++)
            w += hd.q[i * dqk + d] * kv_at(t, hd.k, dqk, k0 + (size_t)(j * dqk + d));
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
          for (int64_t d = 0; d < dv; d++)
            z[d] += a * kv_at(t, hd.v, dv, v0 + (size_t)(j * dv + d));
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
    .caps = ATTN_CAP_ALL_SHAPES | ATTN_CAP_OPT_ALL | ATTN_CAP_KV_ALL,
    .workspace = naive_workspace,
    .run = naive_run,
    .vec_width = 1,  // scalar C, no register tile
};
