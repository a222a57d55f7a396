// SPDX-License-Identifier: MIT
// omp__neon — OpenMP over (batch, head, query block) around tiled__neon (see
// core/omp_wrap.h for the decomposition and how it differs from flash__neon).
#include "core/omp_wrap.h"

extern const attn_kernel attn_kernel_tiled__neon;

static size_t omp_neon_workspace(const attn_problem *p, const attn_exec *exec) {
  return attn_omp_wrap_workspace(&attn_kernel_tiled__neon, p, exec);
}
static int omp_neon_run(const attn_problem *p, const attn_exec *exec, const float *q,
                          const float *k, const float *v, float *o, void *ws) {
  return attn_omp_wrap_run(&attn_kernel_tiled__neon, p, exec, q, k, v, o, ws);
}

const attn_kernel attn_kernel_omp__neon = {
    .name = "omp__neon",
    .summary = "OpenMP over (batch, head, query block) around tiled__neon; no GQA sharing, "
               "no split-KV (the plain-parallel baseline for flash__neon)",
    .required_isa = ATTN_ISA_NEON,
    // No ATTN_CAP_GQA: each query head packs its own K/V (nothing shared across a group).
    .caps = ATTN_CAP_CAUSAL | ATTN_CAP_CROSS | ATTN_CAP_DV_NE_DQK | ATTN_CAP_THREADS,
    .workspace = omp_neon_workspace,
    .run = omp_neon_run,
};
