// SPDX-License-Identifier: MIT
// The blas baseline opens OpenBLAS on its first run, never at program load
// (baselines/blas_attention.c, "Loading"): linked in, OpenBLAS's pthread build starts a
// worker thread per core at load, and each spins for ~0.2 s, taking a core from whatever
// kernel runs first. Checks, in this process:
//   • before any run of `blas`: no OpenBLAS in the address space, one thread (this one);
//   • a run of `blas` loads it with no thread pool: the thread count grows by no more
//     than the OpenMP team of the run, and the kernel passes the checker;
//   • OPENBLAS_NUM_THREADS, set to 1 only while the library loads, is put back.
// Skipped (77) where the build has no blas kernel.
#define _POSIX_C_SOURCE 200809L  // setenv

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attn.h"
#include "check/check.h"
#include "test_util.h"

static bool openblas_mapped(void) {
  FILE *f = fopen("/proc/self/maps", "r");
  if (!f) return false;
  char line[512];
  bool found = false;
  while (!found && fgets(line, sizeof line, f)) found = strstr(line, "libopenblas") != NULL;
  fclose(f);
  return found;
}

static int thread_count(void) {
  FILE *f = fopen("/proc/self/status", "r");
  if (!f) return -1;
  char line[256];
  int n = -1;
  while (fgets(line, sizeof line, f))
    if (sscanf(line, "Threads: %d", &n) == 1) break;
  fclose(f);
  return n;
}

int main(void) {
  const attn_kernel *k = attn_kernel_find("blas");
  if (!k) {
    printf("test_blas_loading: no blas kernel in this build: skipped\n");
    return TEST_SKIP;
  }
  setenv("OPENBLAS_NUM_THREADS", "7", 1);  // the user's value, to be put back
  EXPECT(!openblas_mapped(), "OpenBLAS is mapped before the blas kernel ran");
  EXPECT(thread_count() == 1, "%d threads at start (1 expected)", thread_count());

  attn_problem p = attn_problem_make(1, 4, 2, 33, 70, 32, 32, true);
  enum { kThreads = 2 };
  const attn_exec ex = {.threads = kThreads};
  attn_check_result r;
  char err[256] = "";
  const attn_check_case c = {.problem = p, .seed = 1234};
  attn_check_prepared *pc = attn_check_prepare(&c, err, sizeof err);
  EXPECT(pc != NULL, "cannot prepare: %s", err);
  if (pc) {
    EXPECT(attn_check_kernel(k, pc, &ex, &r), "blas fails the checker: %s", r.message);
    attn_check_prepared_free(pc);
  }
  EXPECT(openblas_mapped(), "OpenBLAS is not mapped after the blas kernel ran");
  // This thread plus at most the OpenMP team's workers; an OpenBLAS pool would add one
  // thread per core on top (OPENBLAS_NUM_THREADS=7 here, were it read).
  const int threads = thread_count();
  EXPECT(threads >= 1 && threads <= kThreads, "%d threads after a %d-thread run", threads,
         kThreads);
  const char *v = getenv("OPENBLAS_NUM_THREADS");
  EXPECT(v && strcmp(v, "7") == 0, "OPENBLAS_NUM_THREADS is '%s' after the load (7 expected)",
         v ? v : "(unset)");
  return test_finish("test_blas_loading");
}
