// SPDX-License-Identifier: MIT
// Fuzz target: the sweep-config loader (attn_bench_plan_load: inih + validation +
// expansion) on arbitrary bytes. Invariants checked on every input, beyond "no crash,
// leak, hang or sanitizer report":
//   * success: at most ATTN_BENCH_MAX_POINTS points, each a valid problem (with its
//     attention options) for a known kernel with 1..ATTN_MAX_THREADS threads, and no two
//     points share a name;
//   * failure: no points, and one line "<path>:<line>: <reason>" or "<path>: <reason>".
#define _POSIX_C_SOURCE 200809L  // strnlen
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "attn.h"
#include "bench/config.h"
#include "fuzz_input.h"

static int by_name(const void *a, const void *b) {
  return strcmp(((const attn_bench_point *)a)->name, ((const attn_bench_point *)b)->name);
}

static void check_plan(const attn_bench_plan *plan) {
  if (plan->count > ATTN_BENCH_MAX_POINTS) fuzz_fail("%zu points, above the cap", plan->count);
  for (size_t i = 0; i < plan->count; i++) {
    const attn_bench_point *pt = &plan->points[i];
    char why[160];
    if (!pt->kernel || !attn_kernel_find(pt->kernel->name)) fuzz_fail("point %zu: no kernel", i);
    if (!attn_problem_validate(&pt->problem, why, sizeof why))
      fuzz_fail("point %zu (%s): invalid problem: %s", i, pt->name, why);
    attn_options opts;  // the point's options (values) must be valid with its problem
    attn_bench_opts_apply(&pt->opts, &opts);
    attn_problem with_opts = pt->problem;
    with_opts.opts = &opts;
    if (!attn_problem_validate(&with_opts, why, sizeof why))
      fuzz_fail("point %zu (%s): invalid options: %s", i, pt->name, why);
    if (pt->threads < 1 || pt->threads > ATTN_MAX_THREADS)
      fuzz_fail("point %zu: %d threads", i, pt->threads);
    if (!memchr(pt->name, '\0', sizeof pt->name) || !pt->name[0])
      fuzz_fail("point %zu: bad name", i);
    if (!memchr(pt->sweep, '\0', sizeof pt->sweep) || !pt->sweep[0])
      fuzz_fail("point %zu: bad sweep name", i);
  }
  if (plan->count < 2) return;
  attn_bench_point *sorted = malloc(plan->count * sizeof *sorted);
  if (!sorted) return;
  memcpy(sorted, plan->points, plan->count * sizeof *sorted);
  qsort(sorted, plan->count, sizeof *sorted, by_name);
  for (size_t i = 1; i < plan->count; i++)
    if (strcmp(sorted[i - 1].name, sorted[i].name) == 0)
      fuzz_fail("duplicate point %s", sorted[i].name);
  free(sorted);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *path = fuzz_input_path(data, size);
  if (!path) fuzz_fail("cannot hand the input over");
  const attn_bench_overrides ov = {.physical_cores = 2};
  attn_bench_plan plan;
  char err[512];
  memset(err, 'x', sizeof err);
  if (attn_bench_plan_load(path, &ov, NULL, &plan, err, sizeof err)) {
    check_plan(&plan);
    attn_bench_plan_free(&plan);
    return 0;
  }
  if (plan.points || plan.count) fuzz_fail("failed load left points");
  const size_t n = strnlen(err, sizeof err), pl = strlen(path);
  if (n == sizeof err) fuzz_fail("error message not terminated");
  if (strchr(err, '\n')) fuzz_fail("error message spans lines: '%s'", err);
  if (strncmp(err, path, pl) != 0 || err[pl] != ':' || n < pl + 3)
    fuzz_fail("error message does not start with the path: '%s'", err);
  // "PATH:LINE: ..." names a line of the input (at most one past its last newline).
  if (err[pl + 1] >= '0' && err[pl + 1] <= '9') {
    const long line = strtol(err + pl + 1, NULL, 10);
    size_t lines = 1;
    for (size_t i = 0; i < size; i++) lines += data[i] == '\n';
    if (line < 1 || (size_t)line > lines)
      fuzz_fail("error names line %ld of a %zu-line input: '%s'", line, lines, err);
  }
  return 0;
}
