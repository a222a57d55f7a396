// SPDX-License-Identifier: MIT
// Every available registered kernel against the reference over the check matrix
// (the same matrix `attnbench check` runs). Usage: test_kernels_matrix [--quick]
// [--threads N] [kernel…]. Kernels the CPU cannot run are reported as skipped.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attn.h"
#include "check/check.h"
#include "test_util.h"

int main(int argc, char **argv) {
  bool quick = false;
  attn_exec exec = {0};
  const char *only[32];
  size_t n_only = 0;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--quick") == 0)
      quick = true;
    else if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc)
      exec.threads = atoi(argv[++i]);
    else if (n_only < 32)
      only[n_only++] = argv[i];
  }
  const size_t n_cases = attn_check_matrix(quick, NULL, 0);
  attn_check_case *cases = calloc(n_cases, sizeof *cases);
  attn_check_matrix(quick, cases, n_cases);

  size_t passed = 0, failed = 0, tested_kernels = 0;
  for (size_t c = 0; c < n_cases; c++) {
    char desc[160], err[256];
    attn_check_case_describe(&cases[c], desc, sizeof desc);
    attn_check_prepared *pc = attn_check_prepare(&cases[c], err, sizeof err);
    EXPECT(pc != NULL, "cannot prepare %s: %s", desc, err);
    if (!pc) continue;
    tested_kernels = 0;
    for (size_t i = 0; i < attn_kernel_count(); i++) {
      const attn_kernel *k = attn_kernel_at(i);
      if (!attn_kernel_available(k, NULL, 0)) continue;
      if (n_only) {
        bool wanted = false;
        for (size_t j = 0; j < n_only; j++) wanted |= strcmp(only[j], k->name) == 0;
        if (!wanted) continue;
      }
      tested_kernels++;
      attn_check_result r;
      if (attn_check_kernel(k, pc, &exec, &r)) {
        passed++;
      } else {
        failed++;
        fprintf(stderr, "FAIL %-18s %s: %s (max abs err %.3g, err/tol %.3g)\n", k->name, desc,
                r.message, r.max_abs_err, r.worst_ratio);
      }
    }
    attn_check_prepared_free(pc);
  }
  EXPECT(tested_kernels > 0, "no kernel selected");
  EXPECT(failed == 0, "%zu kernel/case pairs failed", failed);
  printf("%zu cases, %zu passed, %zu failed\n", n_cases, passed, failed);
  free(cases);
  return test_finish("test_kernels_matrix");
}
