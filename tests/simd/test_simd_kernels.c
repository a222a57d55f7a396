// SPDX-License-Identifier: MIT
// Every available SIMD kernel (required_isa != 0) against the float64 reference with the
// checker (kernels/check/check.h: error-bound tolerance, guard zones around O), on a
// systematic sweep aimed at vector and tile edges:
//   1. head dims 1..40 (qk) with equal and unequal v widths — below, at and above one
//      and two vectors of every ISA;
//   2. sequence lengths around multiples of 8/16/32/64 (self and cross both ways,
//      causal on/off — cross with seq_q > seq_kv has fully masked rows);
//   3. small and odd tile_q / tile_kv overrides (many partial tiles, causal tile skips);
//   4. large-magnitude scores (max subtraction) and GQA/MQA layouts.
// Exit 77 (skip) when no SIMD kernel is available on this CPU. --quick: fewer cases.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attn.h"
#include "check/check.h"
#include "test_util.h"

static size_t g_cases = 0;

static void run_case(attn_problem p, attn_dist dist, const attn_exec *exec) {
  const attn_check_case c = {.problem = p, .dist = dist, .seed = 7000 + g_cases++};
  char desc[160], err[256];
  attn_check_case_describe(&c, desc, sizeof desc);
  attn_check_prepared *pc = attn_check_prepare(&c, err, sizeof err);
  EXPECT(pc != NULL, "cannot prepare %s: %s", desc, err);
  if (!pc) return;
  for (size_t i = 0; i < attn_kernel_count(); i++) {
    const attn_kernel *k = attn_kernel_at(i);
    if (!k->required_isa || !attn_kernel_available(k, NULL, 0)) continue;
    attn_check_result r;
    EXPECT(attn_check_kernel(k, pc, exec, &r), "%s %s tile_q=%d tile_kv=%d: %s (err/tol %.3g)",
           k->name, desc, exec->tile_q, exec->tile_kv, r.message, r.worst_ratio);
  }
  attn_check_prepared_free(pc);
}

int main(int argc, char **argv) {
  const bool quick = argc > 1 && strcmp(argv[1], "--quick") == 0;
  size_t n_simd = 0;
  for (size_t i = 0; i < attn_kernel_count(); i++) {
    const attn_kernel *k = attn_kernel_at(i);
    if (k->required_isa && attn_kernel_available(k, NULL, 0)) {
      printf("testing %s\n", k->name);
      n_simd++;
    }
  }
  if (!n_simd) {
    printf("test_simd_kernels: no SIMD kernel available on this CPU, skipped\n");
    return TEST_SKIP;
  }
  const attn_exec dflt = {0};

  // 1. head dims
  for (int64_t d = 1; d <= 40; d += quick ? 3 : 1) {
    const int64_t dv = (d % 3 == 0) ? (d * 7) % 37 + 1 : d;
    run_case(attn_problem_make(1, 2, 1, 13, 37, d, dv, d % 2), (attn_dist)(d % 3), &dflt);
  }
  const int64_t wide[][2] = {{64, 64}, {80, 80}, {96, 48}, {128, 128}, {256, 256}, {255, 257},
                             {1000, 1}, {1, 1000}};
  for (size_t i = 0; i < sizeof wide / sizeof wide[0]; i++)
    run_case(attn_problem_make(1, 2, 2, 9, 70, wide[i][0], wide[i][1], i % 2), ATTN_DIST_NORMAL, &dflt);

  // 2. sequence lengths (self, and cross both ways)
  const int64_t seqs[] = {1, 2, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 47, 48, 49, 63, 64, 65, 97, 130, 257, 300};
  const size_t n_seqs = sizeof seqs / sizeof seqs[0];
  for (size_t i = 0; i < n_seqs; i += quick ? 2 : 1) {
    const int64_t s = seqs[i], t = seqs[(i * 7 + 3) % n_seqs];
    for (int causal = 0; causal <= 1; causal++) {
      run_case(attn_problem_make(1, 2, 2, s, s, 24, 20, causal), ATTN_DIST_UNIFORM, &dflt);
      run_case(attn_problem_make(1, 3, 1, s, t, 17, 32, causal), ATTN_DIST_NORMAL, &dflt);
      run_case(attn_problem_make(1, 1, 1, t, s, 8, 9, causal), ATTN_DIST_UNIFORM, &dflt);
    }
  }

  // 3. tile overrides
  const int tqs[] = {1, 5, 8, 13, 64}, tkvs[] = {1, 16, 33, 64, 1000};
  for (size_t a = 0; a < 5; a++) {
    for (size_t b = 0; b < 5; b += quick ? 2 : 1) {
      const attn_exec ex = {.tile_q = tqs[a], .tile_kv = tkvs[b]};
      run_case(attn_problem_make(1, 2, 1, 50, 70, 33, 19, (a + b) % 2), ATTN_DIST_NORMAL, &ex);
      run_case(attn_problem_make(1, 1, 1, 70, 50, 16, 16, true), ATTN_DIST_UNIFORM, &ex);
    }
  }

  // 4. large scores, GQA/MQA, batch > 1, custom scale
  run_case(attn_problem_make(2, 8, 2, 40, 90, 64, 64, false), ATTN_DIST_LARGE, &dflt);
  run_case(attn_problem_make(2, 8, 1, 33, 33, 48, 80, true), ATTN_DIST_LARGE, &dflt);
  attn_problem neg = attn_problem_make(1, 4, 2, 20, 41, 32, 32, true);
  neg.scale = -0.75f;
  run_case(neg, ATTN_DIST_NORMAL, &dflt);

  printf("%zu cases x %zu SIMD kernels\n", g_cases, n_simd);
  return test_finish("test_simd_kernels");
}
