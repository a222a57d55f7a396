// SPDX-License-Identifier: MIT
// Every available SIMD kernel (required_isa != 0) against the float64 reference with the
// checker (kernels/check/check.h: error-bound tolerance, guard zones around O), on a
// systematic sweep aimed at vector and tile edges:
//   0. the record's tile metadata (attn.h: vec_width, qk/pv register tiles) is declared
//      and consistent; omp__<isa> declares its inner tiled__<isa>'s tiles;
//   1. per kernel, sizes derived from ITS record: below, at and above the vector width,
//      two vectors and each register tile (T−1, T, T+1, 2T±1), every sub-tile 1..T, and
//      primes — as head_dim_qk, head_dim_v (P·V columns), seq_q (tile rows) and seq_kv
//      (Q·Kᵀ columns), causal on/off, self and cross both ways (cross with
//      seq_q > seq_kv has fully masked rows);
//   2. head dims 1..40 and wide dims, and sequence lengths around multiples of
//      8/16/32/64 for every SIMD kernel at once;
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

// Runs the case on `only`, or on every available SIMD kernel when only == NULL.
static void run_case_on(const attn_kernel *only, attn_problem p, attn_dist dist,
                        const attn_exec *exec) {
  const attn_check_case c = {.problem = p, .dist = dist, .seed = 7000 + g_cases++};
  char desc[160], err[256];
  attn_check_case_describe(&c, desc, sizeof desc);
  attn_check_prepared *pc = attn_check_prepare(&c, err, sizeof err);
  EXPECT(pc != NULL, "cannot prepare %s: %s", desc, err);
  if (!pc) return;
  for (size_t i = 0; i < attn_kernel_count(); i++) {
    const attn_kernel *k = attn_kernel_at(i);
    if (!k->required_isa || !attn_kernel_available(k, NULL, 0)) continue;
    if (only && k != only) continue;
    attn_check_result r;
    EXPECT(attn_check_kernel(k, pc, exec, &r), "%s %s tile_q=%d tile_kv=%d: %s (err/tol %.3g)",
           k->name, desc, exec->tile_q, exec->tile_kv, r.message, r.worst_ratio);
  }
  attn_check_prepared_free(pc);
}

static void run_case(attn_problem p, attn_dist dist, const attn_exec *exec) {
  run_case_on(NULL, p, dist, exec);
}

// ── Sizes derived from a kernel record ───────────────────────────────────────────────
typedef struct size_set {
  int64_t v[128];
  size_t n;
} size_set;

static void add_size(size_set *s, int64_t x) {
  if (x < 1 || s->n == sizeof s->v / sizeof s->v[0]) return;
  for (size_t i = 0; i < s->n; i++)
    if (s->v[i] == x) return;
  s->v[s->n++] = x;
}

// T−1, T, T+1, 2T−1, 2T+1 and (unless quick) every sub-tile 1..T.
static void add_tile(size_set *s, int64_t t, bool quick) {
  if (t <= 0) return;
  const int64_t around[] = {t - 1, t, t + 1, 2 * t - 1, 2 * t + 1};
  for (size_t i = 0; i < 5; i++) add_size(s, around[i]);
  for (int64_t x = 1; x <= t; x += quick ? 3 : 1) add_size(s, x);
}

static void add_primes(size_set *s) {
  static const int64_t primes[] = {2, 3, 5, 7, 11, 13, 37, 67, 131};
  for (size_t i = 0; i < sizeof primes / sizeof primes[0]; i++) add_size(s, primes[i]);
}

// 0. The tile metadata every SIMD kernel must declare.
static void check_record(const attn_kernel *k) {
  EXPECT(k->vec_width > 1, "%s: vec_width %d (a SIMD kernel has > 1 lane)", k->name, k->vec_width);
  EXPECT(k->qk_rows > 0 && k->qk_cols > 0 && k->pv_rows > 0 && k->pv_cols > 0,
         "%s: register tiles qk %dx%d pv %dx%d not declared", k->name, k->qk_rows, k->qk_cols,
         k->pv_rows, k->pv_cols);
  EXPECT(k->vec_width > 1 && k->qk_cols % k->vec_width == 0 && k->pv_cols % k->vec_width == 0,
         "%s: tile columns qk %d / pv %d are not whole vectors of %d", k->name, k->qk_cols,
         k->pv_cols, k->vec_width);
  if (strncmp(k->name, "omp__", 5) == 0) {  // the wrapper runs tiled__<isa>: same tiles
    char inner[64];
    snprintf(inner, sizeof inner, "tiled__%s", k->name + 5);
    const attn_kernel *t = attn_kernel_find(inner);
    EXPECT(t != NULL, "%s: no %s", k->name, inner);
    if (t)
      EXPECT(t->vec_width == k->vec_width && t->qk_rows == k->qk_rows && t->qk_cols == k->qk_cols &&
                 t->pv_rows == k->pv_rows && t->pv_cols == k->pv_cols,
             "%s declares w%d qk%dx%d pv%dx%d, its inner %s has w%d qk%dx%d pv%dx%d", k->name,
             k->vec_width, k->qk_rows, k->qk_cols, k->pv_rows, k->pv_cols, inner, t->vec_width,
             t->qk_rows, t->qk_cols, t->pv_rows, t->pv_cols);
  }
}

// 1. Below, at and above each of the kernel's tiles, in every dimension it tiles.
static void tile_edges(const attn_kernel *k, bool quick) {
  size_set dqk = {0}, dv = {0}, rows = {0}, keys = {0};
  add_tile(&dqk, k->vec_width, quick);
  add_tile(&dqk, 2 * k->vec_width, true);
  add_tile(&dv, k->vec_width, quick);
  add_tile(&dv, k->pv_cols, quick);
  add_tile(&rows, k->qk_rows, quick);
  add_tile(&rows, k->pv_rows, quick);
  add_tile(&keys, k->qk_cols, quick);
  add_tile(&keys, k->vec_width, true);
  add_primes(&dqk), add_primes(&dv), add_primes(&rows), add_primes(&keys);
  const size_t before = g_cases;
  for (size_t i = 0; i < dqk.n; i++)  // head_dim_qk (the v width cycles through dv)
    run_case_on(k, attn_problem_make(1, 2, 1, 9, 21, dqk.v[i], dv.v[i % dv.n], i % 2),
                (attn_dist)(i % 3), &(attn_exec){0});
  for (size_t i = 0; i < dv.n; i++)  // head_dim_v around the P·V tile columns
    run_case_on(k, attn_problem_make(1, 2, 2, 11, 19, 16, dv.v[i], i % 2), ATTN_DIST_NORMAL,
                &(attn_exec){0});
  for (size_t i = 0; i < rows.n; i++)  // seq_q around the tile rows; cross both ways
    for (int causal = 0; causal <= 1; causal++) {
      run_case_on(k, attn_problem_make(1, 2, 1, rows.v[i], rows.v[i], 24, 20, causal),
                  ATTN_DIST_UNIFORM, &(attn_exec){0});
      run_case_on(k, attn_problem_make(1, 1, 1, rows.v[i], keys.v[i % keys.n], 8, 9, causal),
                  ATTN_DIST_NORMAL, &(attn_exec){0});
    }
  for (size_t i = 0; i < keys.n; i++)  // seq_kv around the Q·Kᵀ tile columns
    for (int causal = 0; causal <= 1; causal++)
      run_case_on(k, attn_problem_make(1, 3, 1, rows.v[i % rows.n], keys.v[i], 17, 32, causal),
                  ATTN_DIST_UNIFORM, &(attn_exec){0});
  printf("%s: %zu cases from w%d qk%dx%d pv%dx%d\n", k->name, g_cases - before, k->vec_width,
         k->qk_rows, k->qk_cols, k->pv_rows, k->pv_cols);
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

  // 0 and 1: per kernel, from its record
  for (size_t i = 0; i < attn_kernel_count(); i++) {
    const attn_kernel *k = attn_kernel_at(i);
    if (!k->required_isa || !attn_kernel_available(k, NULL, 0)) continue;
    check_record(k);
    tile_edges(k, quick);
  }

  // 2. head dims
  for (int64_t d = 1; d <= 40; d += quick ? 3 : 1) {
    const int64_t dv = (d % 3 == 0) ? (d * 7) % 37 + 1 : d;
    run_case(attn_problem_make(1, 2, 1, 13, 37, d, dv, d % 2), (attn_dist)(d % 3), &dflt);
  }
  const int64_t wide[][2] = {{64, 64},   {80, 80},   {96, 48},  {128, 128},
                             {256, 256}, {255, 257}, {1000, 1}, {1, 1000}};
  for (size_t i = 0; i < sizeof wide / sizeof wide[0]; i++)
    run_case(attn_problem_make(1, 2, 2, 9, 70, wide[i][0], wide[i][1], i % 2), ATTN_DIST_NORMAL,
             &dflt);

  // sequence lengths (self, and cross both ways)
  const int64_t seqs[] = {1,  2,  5,  7,  8,  9,  15, 16, 17,  31,  32,
                          33, 47, 48, 49, 63, 64, 65, 97, 130, 257, 300};
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
