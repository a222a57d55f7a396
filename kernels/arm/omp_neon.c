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
    .caps = ATTN_CAP_ALL_SHAPES | ATTN_CAP_THREADS,
    .workspace = omp_neon_workspace,
    .run = omp_neon_run,
};
