// SPDX-License-Identifier: MIT
// blas — the unfused baseline: S = scale·Q·Kᵀ (cblas_sgemm), row softmax, O = P·V
// (cblas_sgemm), as PyTorch-style "math" attention does it. The anchor every report
// compares the fused kernels with. Built only when OpenBLAS is found (baselines/
// CMakeLists.txt); kernels/ never includes a BLAS header.
//
// GQA: the query heads that share K/V head g are consecutive in Q and O, so the
// group's rows form one [group·seq_q × head_dim] matrix and one GEMM serves the group
// (decode with GQA gets M = group size instead of 1).
// Memory: S is materialised one row block at a time — at most kScoreFloats floats — so
// any shape runs; row blocks are tall enough (≥ 64 rows unless seq_kv is huge) for
// efficient GEMMs. Causal: each row block's GEMMs stop at the last key its last-seeing
// row may see (what any blocked implementation gets for free); masked scores inside
// the block are set to −∞ before the softmax.
// Threads: OpenBLAS parallelises each GEMM; its pool is set to exec->threads so that
// comparisons with the OpenMP kernels use the same core count. The softmax runs on
// the calling thread (it is O(S) work next to the O(S·D) GEMMs).
#include <cblas.h>
#include <math.h>
#include <omp.h>
#include <stdlib.h>

#include "core/attn_internal.h"

enum { kScoreFloats = 4 << 20 };  // 16 MiB of scores per row block

static int64_t rows_per_block(const attn_problem *p) {
  const int64_t rows = (int64_t)p->seq_q * (p->heads / p->kv_heads);
  int64_t r = kScoreFloats / p->seq_kv;
  if (r < 1) r = 1;
  return r < rows ? r : rows;
}

static size_t blas_workspace(const attn_problem *p, const attn_exec *exec) {
  (void)exec;
  return (size_t)rows_per_block(p) * (size_t)p->seq_kv * sizeof(float);
}

// Row r of a group block is query row r % seq_q of some head of the group.
static int64_t visible(const attn_problem *p, int64_t r) {
  return attn_visible_keys(p, r % p->seq_q);
}

static int blas_run(const attn_problem *p, const attn_exec *exec, const float *q, const float *k,
                    const float *v, float *o, void *workspace) {
  ATTN_ASSERT_PRECONDITIONS(p, q, k, v, o);
  openblas_set_num_threads(exec->threads > 0 ? exec->threads : omp_get_max_threads());
  attn_fp_env env = attn_fp_env_enter();
  float *S = workspace;
  const int64_t group = p->heads / p->kv_heads, dqk = p->head_dim_qk, dv = p->head_dim_v;
  const int64_t rows = group * p->seq_q, R = rows_per_block(p);
  for (int64_t b = 0; b < p->batch; b++) {
    for (int64_t g = 0; g < p->kv_heads; g++) {
      const float *qg = attn_q_head(p, q, b, g * group);  // [rows][dqk]
      float *og = attn_o_head(p, o, b, g * group);         // [rows][dv]
      const float *kg = attn_k_head(p, k, b, g), *vg = attn_v_head(p, v, b, g);
      for (int64_t r0 = 0; r0 < rows; r0 += R) {
        const int64_t nr = rows - r0 < R ? rows - r0 : R;
        // the most keys any row of the block sees (rows may span two heads)
        int64_t n = 0;
        for (int64_t r = r0; r < r0 + nr; r++) {
          const int64_t vis = visible(p, r);
          n = vis > n ? vis : n;
          if (n == p->seq_kv) break;
        }
        if (n == 0) {  // no row of the block sees a key: zeros
          for (int64_t i = 0; i < nr * dv; i++) og[r0 * dv + i] = 0.0f;
          continue;
        }
        // S[nr][n] = scale · Q_block · K[0:n]ᵀ   (row stride n)
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)nr, (int)n, (int)dqk, p->scale,
                    qg + r0 * dqk, (int)dqk, kg, (int)dqk, 0.0f, S, (int)n);
        // P = softmax(S) row by row (masked scores excluded, max subtracted)
        for (int64_t r = 0; r < nr; r++) {
          float *s = S + r * n;
          const int64_t vis = visible(p, r0 + r);
          float m = -INFINITY;
          for (int64_t j = 0; j < vis; j++) m = fmaxf(m, s[j]);
          float l = 0.0f;
          for (int64_t j = 0; j < vis; j++) {
            const float x = s[j] - m;
            // exp(x) < 2^-126 is denormal: flush it here, OpenBLAS threads do not run
            // with FTZ/DAZ (the dropped mass is < 2^-126 per key, far below rounding).
            const float e = x < -87.0f ? 0.0f : expf(x);
            s[j] = e;
            l += e;
          }
          const float inv = vis > 0 ? 1.0f / l : 0.0f;
          for (int64_t j = 0; j < vis; j++) s[j] *= inv;
          for (int64_t j = vis; j < n; j++) s[j] = 0.0f;
        }
        // O_block = P · V[0:n]
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)nr, (int)dv, (int)n, 1.0f, S,
                    (int)n, vg, (int)dv, 0.0f, og + r0 * dv, (int)dv);
      }
    }
  }
  attn_fp_env_leave(env);
  return ATTN_OK;
}

const attn_kernel attn_kernel_blas = {
    .name = "blas",
    .summary = "unfused baseline: OpenBLAS sgemm (Q·Kᵀ), softmax, sgemm (P·V)",
    .required_isa = 0,
    .caps = ATTN_CAP_ALL_SHAPES | ATTN_CAP_THREADS,
    .workspace = blas_workspace,
    .run = blas_run,
};
