// SPDX-License-Identifier: MIT
// OpenMP over (batch, head, query block) around a single-thread kernel (omp_wrap.h).
#include "core/omp_wrap.h"

#include <omp.h>
#include <string.h>

#include "core/attn_internal.h"
#include "core/tiles.h"

// Query rows per task: the tile rule's tile_q (or the user's).
static int64_t block_rows(const attn_problem *p, const attn_exec *exec) {
  int tq, tkv;
  attn_tiles_resolve(p, exec, &tq, &tkv);
  return tq < p->seq_q ? tq : p->seq_q;
}

static int threads_of(const attn_exec *exec) {
  return exec && exec->threads > 0 ? exec->threads : omp_get_max_threads();
}

static attn_problem sub_problem(const attn_problem *p, int64_t rows, int64_t keys) {
  attn_problem s = *p;  // keeps scale, head dims and the mask flag
  s.batch = s.heads = s.kv_heads = 1;
  s.seq_q = rows;
  s.seq_kv = keys;
  return s;
}

// Bytes of inner workspace per thread, rounded to 64: the largest sub-problem
// (a full block against every key) bounds the others.
static size_t per_thread(const attn_kernel *inner, const attn_problem *p, const attn_exec *exec) {
  const attn_problem s = sub_problem(p, block_rows(p, exec), p->seq_kv);
  return (attn_kernel_workspace(inner, &s, exec) + 63) & ~(size_t)63;
}

size_t attn_omp_wrap_workspace(const attn_kernel *inner, const attn_problem *p,
                               const attn_exec *exec) {
  return (size_t)threads_of(exec) * per_thread(inner, p, exec);
}

int attn_omp_wrap_run(const attn_kernel *inner, const attn_problem *p, const attn_exec *exec,
                      const float *q, const float *k, const float *v, float *o, void *workspace) {
  ATTN_ASSERT_PRECONDITIONS(p, q, k, v, o);
  const int nt = threads_of(exec);
  const int64_t tq = block_rows(p, exec);
  const int64_t nqb = (p->seq_q + tq - 1) / tq;
  const int64_t tasks = p->batch * p->heads * nqb;
  const size_t stride = per_thread(inner, p, exec);
  int status = ATTN_OK;
#pragma omp parallel num_threads(nt)
  {
    const attn_fp_env env = attn_fp_env_enter();  // the inner kernel sets it too; harmless
    void *ws = stride ? (char *)workspace + (size_t)omp_get_thread_num() * stride : NULL;
#pragma omp for schedule(dynamic, 1)
    for (int64_t t = 0; t < tasks; t++) {
      const int64_t bh = t % (p->batch * p->heads);
      const int64_t qb = nqb - 1 - t / (p->batch * p->heads);  // heaviest (last) block first
      const int64_t b = bh / p->heads, h = bh % p->heads, g = attn_kv_head_of(p, h);
      const int64_t i0 = qb * tq, nq = p->seq_q - i0 < tq ? p->seq_q - i0 : tq;
      const int64_t keys = attn_visible_keys(p, i0 + nq - 1);
      float *oh = attn_o_head(p, o, b, h) + i0 * p->head_dim_v;
      if (keys == 0) {  // no row of the block sees a key: zeros
        memset(oh, 0, (size_t)(nq * p->head_dim_v) * sizeof(float));
        continue;
      }
      const attn_problem s = sub_problem(p, nq, keys);
      const int rc = inner->run(&s, exec, attn_q_head(p, q, b, h) + i0 * p->head_dim_qk,
                                attn_k_head(p, k, b, g), attn_v_head(p, v, b, g), oh, ws);
      if (rc != ATTN_OK) {
#pragma omp atomic write
        status = rc;
      }
    }
    attn_fp_env_leave(env);
  }
  return status;
}
