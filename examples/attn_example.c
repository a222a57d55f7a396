// SPDX-License-Identifier: MIT
// attn_example.c — calling a kernel through the installed API (attn.h, check/check.h):
//   attn_example [KERNEL]     (default: reference)
// lists the kernels, runs KERNEL on a small GQA causal cross-attention problem with
// attn_kernel_call, checks the output against the float64 reference with the checker's
// error bound, and prints the verdict. Exit 0 on pass, 1 otherwise.
#include <stdio.h>
#include <stdlib.h>

#include "attn.h"
#include "check/check.h"

int main(int argc, char **argv) {
  const char *name = argc > 1 ? argv[1] : "reference";
  printf("%zu kernels:", attn_kernel_count());
  for (size_t i = 0; i < attn_kernel_count(); i++) printf(" %s", attn_kernel_at(i)->name);
  printf("\n");
  const attn_kernel *k = attn_kernel_find(name);
  if (!k) {
    fprintf(stderr, "attn_example: unknown kernel '%s'\n", name);
    return 1;
  }
  const attn_check_case c = {.problem = attn_problem_make(2, 4, 2, 5, 9, 16, 8, true),
                             .dist = ATTN_DIST_NORMAL,
                             .seed = 7};
  const attn_problem *p = &c.problem;
  float *q = malloc(attn_q_elems(p) * sizeof *q), *kk = malloc(attn_k_elems(p) * sizeof *kk);
  float *v = malloc(attn_v_elems(p) * sizeof *v), *o = malloc(attn_o_elems(p) * sizeof *o);
  char err[256];
  attn_check_prepared *pc = NULL;
  int status = 1;
  if (!q || !kk || !v || !o) {
    fprintf(stderr, "attn_example: out of memory\n");
    goto done;
  }
  attn_check_fill(&c, q, kk, v);
  if (attn_kernel_call(k, p, NULL, q, kk, v, o, err, sizeof err) != ATTN_OK) {
    fprintf(stderr, "attn_example: %s\n", err);
    goto done;
  }
  pc = attn_check_prepare_inputs(p, q, kk, v, err, sizeof err);
  if (!pc) {
    fprintf(stderr, "attn_example: %s\n", err);
    goto done;
  }
  attn_check_result r;
  attn_check_output(pc, o, &r);
  printf("%s: %s (max abs err %.3g, worst err/tol %.3g)%s%s\n", name,
         attn_check_verdict_name(r.verdict), r.max_abs_err, r.worst_ratio, r.pass ? "" : ": ",
         r.message);
  status = r.pass ? 0 : 1;
done:
  attn_check_prepared_free(pc);
  free(q), free(kk), free(v), free(o);
  return status;
}
