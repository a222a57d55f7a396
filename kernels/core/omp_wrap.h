// SPDX-License-Identifier: MIT
// omp_wrap.h — OpenMP parallelism around any single-thread kernel: the `omp__<isa>`
// kernels. Tasks are (batch, query head, query block); each task calls the inner kernel
// on a sub-problem that views one head's block of rows in place (no copies):
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
#pragma once

#include "attn.h"

#ifdef __cplusplus
extern "C" {
#endif

size_t attn_omp_wrap_workspace(const attn_kernel *inner, const attn_problem *p,
                               const attn_exec *exec);
int attn_omp_wrap_run(const attn_kernel *inner, const attn_problem *p, const attn_exec *exec,
                      const float *q, const float *k, const float *v, float *o, void *workspace);

#ifdef __cplusplus
}
#endif
