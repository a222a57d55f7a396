// SPDX-License-Identifier: MIT
// omp.c — the `omp__<isa>` kernels: OpenMP parallelism around the single-thread
// `tiled__<isa>` kernel. Tasks are (batch, query head, query block); each task calls the inner
// kernel on a sub-problem that views one head's block of rows in place (no copies):
//     batch = heads = kv_heads = 1, seq_q = the block's rows, seq_kv = the keys the
//     block's last row can see, same head dims and scale.
// Under the bottom-right causal mask, query row i0 + r of the full problem sees keys
// j ≤ i0 + r + seq_kv − seq_q; with seq_kv' = visible(i0 + nq − 1) the sub-problem's row
// r sees j ≤ r + seq_kv' − nq — the same keys (when visible() is clamped at seq_kv the
// block is the last one, i0 + nq = seq_q, and the two bounds agree again). So the
// inner kernel's causal skipping and masking apply unchanged, and tiles above the
// diagonal are never read.
// Balance: blocks are ordered heaviest first (last query block first) and handed out
// dynamically. Deterministic: the blocks depend on the shape and tile_q only, so any
// thread count gives bitwise the same output.
// Compared with flash__*: no GQA sharing (each query head re-packs its K/V), no
// split-KV (decode has only batch × heads tasks) — it measures what plain "parallel for
// over heads and blocks" achieves around the best single-thread kernel.
//
// One file for every ISA: it needs no ISA flags, because the vector work happens inside
// the inner tiled__<isa> kernel, which is compiled with its own flags.
#include <omp.h>
#include <string.h>

#include "core/attn_internal.h"
#include "core/tiles.h"
#include "tiled/tiled_tiles.h"

// Query rows per task: the tile rule's tile_q (or the user's).
static int64_t block_rows(const attn_problem *p, const attn_exec *exec) {
  int tq, tkv;
  attn_tiles_resolve(p, exec, &tq, &tkv);
  return tq < p->seq_q ? tq : p->seq_q;
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
  const size_t bytes = attn_kernel_workspace(inner, &s, exec);
  return bytes > SIZE_MAX - 63 ? SIZE_MAX : (bytes + 63) & ~(size_t)63;  // saturating
}

static size_t omp_workspace(const attn_kernel *inner, const attn_problem *p,
                            const attn_exec *exec) {
  return attn_size_mul_sat((size_t)attn_exec_threads(exec), per_thread(inner, p, exec));
}

// K and V are addressed by the bytes of p->kv_dtype rows, so every type the inner kernel
// reads (tiled__<isa>: ATTN_CAP_KV_ALL, widened per task's K/V head) passes through
// unchanged, in its stored type.
static int omp_run(const attn_kernel *inner, const attn_problem *p, const attn_exec *exec,
                   const float *q, const void *k, const void *v, float *o, void *workspace) {
  ATTN_ASSERT_PRECONDITIONS(p, q, k, v, o);
  const int nt = attn_exec_threads(exec);
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
                                attn_kv_head(p, k, b, g, p->head_dim_qk),
                                attn_kv_head(p, v, b, g, p->head_dim_v), oh, ws);
      if (rc != ATTN_OK) {
#pragma omp atomic write
        status = rc;
      }
    }
    attn_fp_env_leave(env);
  }
  return status;
}

// The entry points of omp__<isa>: omp_workspace / omp_run with inner = tiled__<isa>.
#define OMP_ENTRY_POINTS(isa)                                                              \
  extern const attn_kernel attn_kernel_tiled__##isa;                                       \
  static size_t omp_##isa##_workspace(const attn_problem *p, const attn_exec *exec) {      \
    return omp_workspace(&attn_kernel_tiled__##isa, p, exec);                              \
  }                                                                                        \
  static int omp_##isa##_run(const attn_problem *p, const attn_exec *exec, const float *q, \
                             const void *k, const void *v, float *o, void *ws) {           \
    return omp_run(&attn_kernel_tiled__##isa, p, exec, q, k, v, o, ws);                    \
  }

// No ATTN_CAP_GQA: each query head packs its own K/V (nothing shared across a group).
#define OMP_CAPS \
  (ATTN_CAP_CAUSAL | ATTN_CAP_CROSS | ATTN_CAP_DV_NE_DQK | ATTN_CAP_THREADS | ATTN_CAP_KV_ALL)

// The record of omp__<isa> (registry name, summary, the ISA it needs, the tiles of
// tiled__<isa>, which runs each task).
#define OMP_KERNEL(isa, ISA, isa_flag)                                                       \
  OMP_ENTRY_POINTS(isa)                                                                      \
  const attn_kernel attn_kernel_omp__##isa = {                                               \
      .name = "omp__" #isa,                                                                  \
      .summary =                                                                             \
          "OpenMP over (batch, head, query block) around tiled__" #isa                       \
          "; no GQA sharing, no split-KV (the plain-parallel baseline for flash__" #isa ")", \
      .required_isa = isa_flag,                                                              \
      .caps = OMP_CAPS,                                                                      \
      .workspace = omp_##isa##_workspace,                                                    \
      .run = omp_##isa##_run,                                                                \
      TILED_TILES_RECORD(ISA),                                                               \
  };

// The records, for the ISAs the registry lists them on (ATTN_KERNEL_X86 / _ARM).
#if defined(__x86_64__) || defined(__i386__)
OMP_KERNEL(avx2, AVX2, ATTN_ISA_AVX2)
OMP_KERNEL(avx512, AVX512, ATTN_ISA_AVX512F)
#endif

#if defined(__aarch64__)
OMP_KERNEL(neon, NEON, ATTN_ISA_NEON)
#endif
