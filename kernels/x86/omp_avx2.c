// SPDX-License-Identifier: MIT
// omp__avx2 — OpenMP over (batch, head, query block) around tiled__avx2 (see
// core/omp_wrap.h for the decomposition and how it differs from flash__avx2).
#include "core/omp_wrap.h"

extern const attn_kernel attn_kernel_tiled__avx2;

static size_t omp_avx2_workspace(const attn_problem *p, const attn_exec *exec) {
  return attn_omp_wrap_workspace(&attn_kernel_tiled__avx2, p, exec);
}
static int omp_avx2_run(const attn_problem *p, const attn_exec *exec, const float *q,
                          const float *k, const float *v, float *o, void *ws) {
  return attn_omp_wrap_run(&attn_kernel_tiled__avx2, p, exec, q, k, v, o, ws);
}

const attn_kernel attn_kernel_omp__avx2 = {
    .name = "omp__avx2",
    .summary = "OpenMP over (batch, head, query block) around tiled__avx2; no GQA sharing, "
               "no split-KV (the plain-parallel baseline for flash__avx2)",
    .required_isa = ATTN_ISA_AVX2,
    .caps = ATTN_CAP_ALL_SHAPES | ATTN_CAP_THREADS,
    .workspace = omp_avx2_workspace,
    .run = omp_avx2_run,
};
