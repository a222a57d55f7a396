// SPDX-License-Identifier: MIT
// Test-only compute-mode kernels (lowprec_kernels.h): one honest, three with a bug each.
#include "lowprec_kernels.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "core/attn_internal.h"
#include "core/convert.h"

typedef enum { HONEST, P_F16, ACC_BF16, Q_BLOCK64 } lp_variant;

// Scratch of one row: scores [seq_kv], Q as the mode reads it [dqk], the accumulator [dv],
// and Q's int8 values with one scale per 32 elements.
static size_t lp_workspace(const attn_problem *p, const attn_exec *exec) {
  (void)exec;
  return ((size_t)p->seq_kv + 2 * (size_t)p->head_dim_qk + (size_t)p->head_dim_v) * sizeof(float) +
         (size_t)p->head_dim_qk + 64;
}

// Q row x of dim elements as int8 values qs with one float scale per 32 (ds), by the Q8_0
// rule over blocks of `block` elements (32 honest, 64 the bug: one scale for two blocks).
static void lp_quantize_q(const float *x, int64_t dim, int block, int8_t *qs, float *ds) {
  for (int64_t b0 = 0; b0 < dim; b0 += block) {
    const int64_t w = dim - b0 < block ? dim - b0 : block;
    float amax = 0.0f;
    for (int64_t t = 0; t < w; t++) amax = fmaxf(amax, fabsf(x[b0 + t]));
    const float d = attn_f16_to_f32(attn_f32_to_f16(amax / 127.0f));
    for (int64_t t = 0; t < w; t++) {
      float q = d > 0.0f ? rintf(x[b0 + t] / d) : 0.0f;
      q = q > 127.0f ? 127.0f : (q < -127.0f ? -127.0f : q);
      qs[b0 + t] = (int8_t)q;
    }
    for (int64_t t = 0; t < w; t += ATTN_Q8_0_BLOCK) ds[(b0 + t) / ATTN_Q8_0_BLOCK] = d;
  }
}

// The probability as the variant rounds it.
static float lp_round_p(lp_variant var, attn_compute c, float p) {
  if (c != ATTN_COMPUTE_BF16 && c != ATTN_COMPUTE_F16) return p;
  return attn_compute_round(var == P_F16 ? ATTN_COMPUTE_F16 : c, p);
}

static float lp_add(lp_variant var, float acc, float x) {
  const float s = acc + x;
  return var == ACC_BF16 ? attn_compute_round(ATTN_COMPUTE_BF16, s) : s;
}

static void lp_row(lp_variant var, const attn_problem *p, int64_t b, int64_t h, int64_t i,
                   const float *q, const void *k, const void *v, float *o, float *ws) {
  const attn_compute c = p->compute;
  const attn_dtype t = p->kv_dtype;
  const int64_t dqk = p->head_dim_qk, dv = p->head_dim_v, g = attn_kv_head_of(p, h);
  float *s = ws, *qi = s + p->seq_kv, *acc = qi + dqk, *dq = acc + dv;
  int8_t *qq = (int8_t *)(dq + dqk);
  const float *qrow = attn_q_head(p, q, b, h) + i * dqk;
  const void *kh = attn_kv_head(p, k, b, g, dqk), *vh = attn_kv_head(p, v, b, g, dv);
  float *orow = attn_o_head(p, o, b, h) + i * dv;
  int64_t lo, hi;
  attn_row_keys(p, i, &lo, &hi);
  if (lo == hi) {
    memset(orow, 0, (size_t)dv * sizeof *orow);
    return;
  }
  if (c == ATTN_COMPUTE_INT8)
    lp_quantize_q(qrow, dqk, var == Q_BLOCK64 ? 64 : ATTN_Q8_0_BLOCK, qq, dq);
  else
    for (int64_t d = 0; d < dqk; d++) qi[d] = attn_compute_round(c, qrow[d]);
  float m = -INFINITY;
  for (int64_t j = lo; j < hi; j++) {
    float dot = 0.0f;
    if (c == ATTN_COMPUTE_INT8) {  // Σ_blocks f16(d_q)·f16(d_k)·Σ_t q_t·k_t, the sum exact
      const attn_block_q8_0 *kb = (const attn_block_q8_0 *)kh + j * (dqk / ATTN_Q8_0_BLOCK);
      for (int64_t bl = 0; bl < dqk / ATTN_Q8_0_BLOCK; bl++) {
        int32_t isum = 0;
        for (int u = 0; u < ATTN_Q8_0_BLOCK; u++)
          isum += (int32_t)qq[bl * ATTN_Q8_0_BLOCK + u] * (int32_t)kb[bl].qs[u];
        dot += dq[bl] * attn_f16_to_f32(kb[bl].d) * (float)isum;
      }
    } else {
      for (int64_t d = 0; d < dqk; d++)
        dot += qi[d] * attn_compute_round(c, attn_kv_elem(t, kh, dqk, (size_t)(j * dqk + d)));
    }
    s[j - lo] = p->scale * dot;
    m = fmaxf(m, s[j - lo]);
  }
  float l = 0.0f;
  for (int64_t d = 0; d < dv; d++) acc[d] = 0.0f;
  for (int64_t j = lo; j < hi; j++) {
    const float pj = lp_round_p(var, c, expf(s[j - lo] - m));
    l = lp_add(var, l, pj);
    for (int64_t d = 0; d < dv; d++) {
      const float x = attn_kv_elem(t, vh, dv, (size_t)(j * dv + d));
      acc[d] = lp_add(var, acc[d], pj * (c == ATTN_COMPUTE_INT8 ? x : attn_compute_round(c, x)));
    }
  }
  for (int64_t d = 0; d < dv; d++) orow[d] = acc[d] / l;
}

static int lp_run(lp_variant var, const attn_problem *p, const float *q, const void *k,
                  const void *v, float *o, void *ws) {
  ATTN_ASSERT_PRECONDITIONS(p, q, k, v, o);
  float *scratch = (float *)(((uintptr_t)ws + 63) & ~(uintptr_t)63);
  for (int64_t b = 0; b < p->batch; b++)
    for (int64_t h = 0; h < p->heads; h++)
      for (int64_t i = 0; i < p->seq_q; i++) lp_row(var, p, b, h, i, q, k, v, o, scratch);
  return ATTN_OK;
}

#define LP_ENTRY(fn, var)                                                                    \
  static int fn(const attn_problem *p, const attn_exec *exec, const float *q, const void *k, \
                const void *v, float *o, void *ws) {                                         \
    (void)exec;                                                                              \
    return lp_run(var, p, q, k, v, o, ws);                                                   \
  }
LP_ENTRY(lp_honest_run, HONEST)
LP_ENTRY(lp_p_f16_run, P_F16)
LP_ENTRY(lp_acc_bf16_run, ACC_BF16)
LP_ENTRY(lp_q_block64_run, Q_BLOCK64)

#define LP_CAPS (ATTN_CAP_ALL_SHAPES | ATTN_CAP_KV_ALL | ATTN_CAP_COMPUTE_ALL)
const attn_kernel lowprec_honest = {.name = "lowprec_honest",
                                    .summary = "test: compute modes as the contract says",
                                    .caps = LP_CAPS,
                                    .workspace = lp_workspace,
                                    .run = lp_honest_run,
                                    .vec_width = 1};
const attn_kernel lowprec_p_f16 = {.name = "lowprec_p_f16",
                                   .summary = "test: rounds p to binary16 when asked for bfloat16",
                                   .caps = LP_CAPS,
                                   .workspace = lp_workspace,
                                   .run = lp_p_f16_run,
                                   .vec_width = 1};
const attn_kernel lowprec_acc_bf16 = {.name = "lowprec_acc_bf16",
                                      .summary = "test: accumulates P.V in bfloat16",
                                      .caps = LP_CAPS,
                                      .workspace = lp_workspace,
                                      .run = lp_acc_bf16_run,
                                      .vec_width = 1};
const attn_kernel lowprec_q_block64 = {.name = "lowprec_q_block64",
                                       .summary = "test: quantizes Q in 64-element blocks",
                                       .caps = LP_CAPS,
                                       .workspace = lp_workspace,
                                       .run = lp_q_block64_run,
                                       .vec_width = 1};
