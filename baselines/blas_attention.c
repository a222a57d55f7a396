// SPDX-License-Identifier: MIT
// blas — the unfused baseline: S = scale·Q·Kᵀ (cblas_sgemm), row softmax, O = P·V
// (cblas_sgemm), as PyTorch-style "math" attention does it. The anchor every report
// compares the fused kernels with. Built only when OpenBLAS is found (baselines/
// CMakeLists.txt); kernels/ never includes a BLAS header.
//
// GQA: the query heads that share K/V head g are consecutive in Q and O, so the
// group's rows form one [group·seq_q × head_dim] matrix and one GEMM serves the group
// (decode with GQA gets M = group size instead of 1).
// Work split: tasks are (batch, KV head, block of R group rows); R depends on the shape
// only (R = ceil(rows/8) clamped to [8, 128], and at most kScoreFloats / seq_kv), so
// every task makes the same single-threaded sgemm calls whatever the thread count and
// the output is bitwise independent of exec->threads (attn.h's contract; OpenBLAS's own
// threading splits differently per thread count and is not). OpenMP runs the tasks on
// exec->threads threads — the batched-GEMM pattern of framework CPU attention — with
// OpenBLAS set to one thread, so no second thread pool competes for the cores.
// Memory: each thread materialises one block of scores (R × seq_kv floats, ≤ 16 MiB),
// so any shape runs. Causal: a block's GEMMs stop at the last key its rows can see;
// masked scores inside the block are excluded from the softmax.
// Softmax: vectorised, as in the frameworks' CPU attention (PyTorch uses SLEEF's exp):
// the row max and sum are `omp simd` reductions, and the exponentials go through the same
// vectorised exp as the fused kernels (simd/vexp.h, ≤ 1.01 ulp, exactly 0 below
// ln FLT_MIN — no denormals), picked at run time for the CPU (scalar expf without AVX2).
// So a comparison with `blas` measures fusion and tiling, not a slower exp.
// Loading: OpenBLAS is opened (dlopen) on the kernel's first run, with
// OPENBLAS_NUM_THREADS=1 in the environment while its constructor reads it (the previous
// value is put back): a process that never runs `blas` never loads it, and one that does
// gets no OpenBLAS thread pool. Linked in, the library's pthread build starts a worker per
// core at program load, and each spins (sched_yield) for its thread timeout (~2^28
// cycles) before sleeping — on a 2-core machine that took a core from whatever kernel ran
// in the first ~0.2 s of every process (a 1 ms problem timed at 15 ms over 9 calls).
// If the library cannot be opened, the kernel fails with BLAS_ERR_LOAD and says why on
// stderr once.
#define _POSIX_C_SOURCE 200809L  // setenv, unsetenv, strdup

#include <cblas.h>
#include <dlfcn.h>
#include <math.h>
#include <omp.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/attn_internal.h"
#include "simd/vexp.h"

enum { kScoreFloats = 4 << 20 };  // 16 MiB of scores per row block

enum { BLAS_ERR_LOAD = 16 };  // OpenBLAS could not be opened (the kernel's own status)

#ifndef ATTN_OPENBLAS_LIBRARY  // the build's OpenBLAS, if the runtime name is not found
#define ATTN_OPENBLAS_LIBRARY "libopenblas.so"
#endif

typedef __typeof__(cblas_sgemm) sgemm_fn;
static sgemm_fn *g_sgemm;  // NULL until loaded (or when the load failed)
static pthread_once_t g_blas_once = PTHREAD_ONCE_INIT;

static void blas_load(void) {
  const char *old = getenv("OPENBLAS_NUM_THREADS");
  char *saved = old ? strdup(old) : NULL;
  setenv("OPENBLAS_NUM_THREADS", "1", 1);
  void *lib = dlopen("libopenblas.so.0", RTLD_NOW | RTLD_LOCAL);
  if (!lib) lib = dlopen(ATTN_OPENBLAS_LIBRARY, RTLD_NOW | RTLD_LOCAL);
  if (saved) {
    setenv("OPENBLAS_NUM_THREADS", saved, 1);
    free(saved);
  } else {
    unsetenv("OPENBLAS_NUM_THREADS");
  }
  if (lib) g_sgemm = (sgemm_fn *)dlsym(lib, "cblas_sgemm");
  if (!g_sgemm)
    fprintf(stderr, "blas: cannot load cblas_sgemm (libopenblas.so.0, %s): %s\n",
            ATTN_OPENBLAS_LIBRARY, dlerror());
}

static int64_t rows_per_block(const attn_problem *p) {
  const int64_t rows = p->seq_q * (p->heads / p->kv_heads);
  int64_t r = (rows + 7) / 8;
  r = r < 8 ? 8 : r > 128 ? 128 : r;
  const int64_t cap = kScoreFloats / p->seq_kv;
  r = r < cap ? r : (cap > 0 ? cap : 1);
  return r < rows ? r : rows;
}

static int team_size(const attn_exec *exec) {
  return exec->threads > 0 ? exec->threads : omp_get_max_threads();
}

// team · R · seq_kv floats. R·seq_kv ≤ max(kScoreFloats, seq_kv) and seq_kv·4 fits in
// size_t (attn_problem_validate); the team (≤ ATTN_MAX_THREADS once attn_exec_check has
// passed) could still wrap it on a 32-bit size_t, so the product saturates at SIZE_MAX.
static size_t blas_workspace(const attn_problem *p, const attn_exec *exec) {
  const size_t per_thread = (size_t)rows_per_block(p) * (size_t)p->seq_kv * sizeof(float);
  const size_t team = (size_t)team_size(exec);
  return per_thread > SIZE_MAX / team ? SIZE_MAX : team * per_thread;
}

typedef void (*vexp_fn)(const float *x, float *y, size_t n);

// The CPU's vectorised exp, or NULL (scalar expf).
static vexp_fn pick_vexp(void) {
#if defined(__x86_64__) || defined(__i386__)
  const uint32_t f = attn_cpu_features();
  if (f & ATTN_ISA_AVX512F) return attn_vexp__avx512;
  if (f & ATTN_ISA_AVX2) return attn_vexp__avx2;
#elif defined(__aarch64__)
  if (attn_cpu_features() & ATTN_ISA_NEON) return attn_vexp__neon;
#endif
  return NULL;
}

// s[0..n) = softmax(s[0..n)), in place: max subtracted, exp, divided by the sum (n ≥ 1).
static void softmax_row(float *s, int64_t n, vexp_fn vexp) {
  float m = -INFINITY;
#pragma omp simd reduction(max : m)
  for (int64_t j = 0; j < n; j++) m = s[j] > m ? s[j] : m;
#pragma omp simd
  for (int64_t j = 0; j < n; j++) s[j] -= m;
  if (vexp) {
    vexp(s, s, (size_t)n);
  } else {
    // exp(x) < 2^-126 would be denormal: flushed here (< 2^-126 of mass per key, far
    // below float rounding of l >= 1), so sgemm never sees denormal inputs.
    for (int64_t j = 0; j < n; j++) s[j] = s[j] < -87.0f ? 0.0f : expf(s[j]);
  }
  float l = 0.0f;
#pragma omp simd reduction(+ : l)
  for (int64_t j = 0; j < n; j++) l += s[j];
  const float inv = 1.0f / l;  // l ≥ 1: the max element gives e^0
#pragma omp simd
  for (int64_t j = 0; j < n; j++) s[j] *= inv;
}

// Row r of a group block is query row r % seq_q of some head of the group.
static int64_t visible(const attn_problem *p, int64_t r) {
  return attn_visible_keys(p, r % p->seq_q);
}

// One task: rows [r0, r0 + nr) of K/V head g's group in batch b. S: nr × seq_kv floats.
static void block(const attn_problem *p, int64_t b, int64_t g, int64_t r0, int64_t nr,
                  const float *q, const float *k, const float *v, float *o, float *S,
                  vexp_fn vexp) {
  const int64_t group = p->heads / p->kv_heads, dqk = p->head_dim_qk, dv = p->head_dim_v;
  const float *qg = attn_q_head(p, q, b, g * group);  // [group·seq_q][dqk]
  float *og = attn_o_head(p, o, b, g * group);        // [group·seq_q][dv]
  const float *kg = attn_k_head(p, k, b, g), *vg = attn_v_head(p, v, b, g);
  // the most keys any row of the block sees (rows may span two heads)
  int64_t n = 0;
  for (int64_t r = r0; r < r0 + nr && n < p->seq_kv; r++) {
    const int64_t vis = visible(p, r);
    n = vis > n ? vis : n;
  }
  if (n == 0) {  // no row of the block sees a key: zeros
    for (int64_t i = 0; i < nr * dv; i++) og[r0 * dv + i] = 0.0f;
    return;
  }
  // S[nr][n] = scale · Q_block · K[0:n]ᵀ   (row stride n)
  g_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)nr, (int)n, (int)dqk, p->scale,
          qg + r0 * dqk, (int)dqk, kg, (int)dqk, 0.0f, S, (int)n);
  // P = softmax(S) row by row (masked scores excluded, row max subtracted)
  for (int64_t r = 0; r < nr; r++) {
    float *s = S + r * n;
    const int64_t vis = visible(p, r0 + r);
    if (vis > 0) softmax_row(s, vis, vexp);
    for (int64_t j = vis; j < n; j++) s[j] = 0.0f;  // masked (vis = 0: the row outputs 0)
  }
  // O_block = P · V[0:n]
  g_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)nr, (int)dv, (int)n, 1.0f, S, (int)n, vg,
          (int)dv, 0.0f, og + r0 * dv, (int)dv);
}

static int blas_run(const attn_problem *p, const attn_exec *exec, const float *q, const void *kv,
                    const void *vv, float *o, void *workspace) {
  const float *k = (const float *)kv, *v = (const float *)vv;
  ATTN_ASSERT_PRECONDITIONS(p, q, k, v, o);
  // One OpenBLAS thread (no pool, blas_load): parallelism comes from the tasks below.
  pthread_once(&g_blas_once, blas_load);
  if (!g_sgemm) return BLAS_ERR_LOAD;
  const int64_t rows = p->seq_q * (p->heads / p->kv_heads), R = rows_per_block(p);
  const int64_t nblocks = (rows + R - 1) / R, ntasks = p->batch * p->kv_heads * nblocks;
  const size_t per_thread = (size_t)R * (size_t)p->seq_kv;
  const vexp_fn vexp = pick_vexp();
#pragma omp parallel num_threads(team_size(exec))
  {
    attn_fp_env env = attn_fp_env_enter();
    float *S = (float *)workspace + (size_t)omp_get_thread_num() * per_thread;
#pragma omp for schedule(dynamic)
    for (int64_t t = 0; t < ntasks; t++) {
      const int64_t rb = t % nblocks, bg = t / nblocks;
      const int64_t r0 = rb * R, nr = rows - r0 < R ? rows - r0 : R;
      block(p, bg / p->kv_heads, bg % p->kv_heads, r0, nr, q, k, v, o, S, vexp);
    }
    attn_fp_env_leave(env);
  }
  return ATTN_OK;
}

const attn_kernel attn_kernel_blas = {
    .name = "blas",
    .summary =
        "unfused baseline: OpenBLAS sgemm (Q·Kᵀ), vectorised softmax, sgemm (P·V); OpenMP "
        "over row blocks",
    .required_isa = 0,
    .caps = ATTN_CAP_ALL_SHAPES | ATTN_CAP_THREADS,
    .workspace = blas_workspace,
    .run = blas_run,
};
