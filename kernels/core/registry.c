// SPDX-License-Identifier: MIT
// The kernel table, generated from attn_registry.def, plus the checked call path.
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/attn_internal.h"

#if defined(__x86_64__) || defined(__i386__)
#define ATTN_KERNEL_X86(sym) ATTN_KERNEL(sym)
#else
#define ATTN_KERNEL_X86(sym)
#endif
#if defined(__aarch64__)
#define ATTN_KERNEL_ARM(sym) ATTN_KERNEL(sym)
#else
#define ATTN_KERNEL_ARM(sym)
#endif

// Baselines built outside kernels/ (baselines/CMakeLists.txt defines this when found).
#if defined(ATTNBENCH_HAVE_BLAS)
#define ATTN_KERNEL_BLAS(sym) ATTN_KERNEL(sym)
#else
#define ATTN_KERNEL_BLAS(sym)
#endif

#define ATTN_KERNEL(sym) extern const attn_kernel attn_kernel_##sym;
#include "attn_registry.def"
#undef ATTN_KERNEL

static const attn_kernel *const kTable[] = {
#define ATTN_KERNEL(sym) &attn_kernel_##sym,
#include "attn_registry.def"
#undef ATTN_KERNEL
};

size_t attn_kernel_count(void) {
  return sizeof kTable / sizeof kTable[0];
}

const attn_kernel *attn_kernel_at(size_t i) {
  return i < attn_kernel_count() ? kTable[i] : NULL;
}

const attn_kernel *attn_kernel_find(const char *name) {
  if (!name) return NULL;
  for (size_t i = 0; i < attn_kernel_count(); i++)
    if (strcmp(kTable[i]->name, name) == 0) return kTable[i];
  return NULL;
}

bool attn_kernel_available(const attn_kernel *k, char *why, size_t why_len) {
  const uint32_t missing = k->required_isa & ~attn_cpu_features();
  if (!missing) {
    if (why && why_len) why[0] = '\0';
    return true;
  }
  if (why && why_len) {
    char names[64];
    snprintf(why, why_len, "needs %s", attn_isa_names(missing, names, sizeof names));
  }
  return false;
}

bool attn_kernel_native(const attn_kernel *k, const attn_problem *p) {
  return (attn_problem_options_used(p) & ~k->caps) == 0;
}

size_t attn_kernel_workspace(const attn_kernel *k, const attn_problem *p, const attn_exec *exec) {
  static const attn_exec kDefaultExec = {0};
  if (!attn_kernel_native(k, p)) return attn_fallback_workspace(p);
  return k->workspace ? k->workspace(p, exec ? exec : &kDefaultExec) : 0;
}

int attn_kernel_run(const attn_kernel *k, const attn_problem *p, const attn_exec *exec,
                    const float *q, const float *kk, const float *v, float *o, void *workspace,
                    bool *fallback) {
  static const attn_exec kDefaultExec = {0};
  if (!exec) exec = &kDefaultExec;
  const bool native = attn_kernel_native(k, p);
  if (fallback) *fallback = !native;
  if (native) return k->run(p, exec, q, kk, v, o, workspace);
  return attn_fallback_run(p, q, kk, v, o, workspace);
}

int attn_exec_check(const attn_exec *exec, char *err, size_t err_len) {
  if (!exec) return ATTN_OK;  // all defaults; the OpenMP default is checked below
  if (exec->threads < 0 || exec->threads > ATTN_MAX_THREADS) {
    if (err && err_len)
      snprintf(err, err_len, "threads = %d is out of range (0..%d, 0 = OpenMP default)",
               exec->threads, ATTN_MAX_THREADS);
    return ATTN_ERR_INVALID;
  }
  if (exec->tile_q < 0 || exec->tile_kv < 0 || exec->tile_q > ATTN_MAX_TILE ||
      exec->tile_kv > ATTN_MAX_TILE) {
    if (err && err_len)
      snprintf(err, err_len, "tile sizes must be in 0..%d (got tile_q %d, tile_kv %d)",
               ATTN_MAX_TILE, exec->tile_q, exec->tile_kv);
    return ATTN_ERR_INVALID;
  }
  if (exec->threads == 0) {
    const int def = omp_get_max_threads();
    if (def > ATTN_MAX_THREADS) {
      if (err && err_len)
        snprintf(err, err_len,
                 "the OpenMP default of %d threads (OMP_NUM_THREADS) exceeds the cap of %d; "
                 "set OMP_NUM_THREADS or the thread count to at most %d",
                 def, ATTN_MAX_THREADS, ATTN_MAX_THREADS);
      return ATTN_ERR_INVALID;
    }
  }
  return ATTN_OK;
}

int attn_kernel_call(const attn_kernel *k, const attn_problem *p, const attn_exec *exec,
                     const float *q, const float *kk, const float *v, float *o, char *err,
                     size_t err_len) {
  static const attn_exec kDefaultExec = {0};
  if (!exec) exec = &kDefaultExec;
  if (!k) {
    if (err && err_len) snprintf(err, err_len, "kernel is NULL");
    return ATTN_ERR_INVALID;
  }
  if (!attn_problem_validate(p, err, err_len)) return ATTN_ERR_INVALID;
  if (!q || !kk || !v || !o) {
    if (err && err_len) snprintf(err, err_len, "a tensor pointer (q, k, v or o) is NULL");
    return ATTN_ERR_INVALID;
  }
  // Before anything that sizes or starts a parallel region (workspace functions read
  // the thread count).
  int rc = attn_exec_check(exec, err, err_len);
  if (rc != ATTN_OK) return rc;
  char why[96];
  if (!attn_kernel_available(k, why, sizeof why)) {
    if (err && err_len)
      snprintf(err, err_len, "kernel %s is unavailable on this CPU: %s", k->name, why);
    return ATTN_ERR_INVALID;
  }
  rc = attn_inputs_check(p, q, kk, v, err, err_len);
  if (rc != ATTN_OK) return rc;
  const size_t ws_bytes = attn_kernel_workspace(k, p, exec);
  void *ws = NULL;
  if (ws_bytes) {
    // rounded up to the alignment; a size within 63 of SIZE_MAX cannot be allocated
    ws = ws_bytes <= SIZE_MAX - 63 ? aligned_alloc(64, (ws_bytes + 63) & ~(size_t)63) : NULL;
    if (!ws) {
      if (err && err_len)
        snprintf(err, err_len, "kernel %s: cannot allocate %zu bytes of workspace", k->name,
                 ws_bytes);
      return ATTN_ERR_NOMEM;
    }
  }
  rc = attn_kernel_run(k, p, exec, q, kk, v, o, ws, NULL);
  free(ws);
  if (rc != ATTN_OK && err && err_len)
    snprintf(err, err_len, "kernel %s failed with status %d", k->name, rc);
  else if (err && err_len)
    err[0] = '\0';
  return rc;
}
