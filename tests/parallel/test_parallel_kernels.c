// SPDX-License-Identifier: MIT
// The parallel kernels (every registered kernel with ATTN_CAP_THREADS):
//   1. bitwise identical output for threads = 1, 2, 3 — the work split never changes a
//      row's arithmetic (flash_plan.h: the split depends on the shape only);
//   2. correct against the double-precision reference (the checker's error bound) and
//      relative max error ≤ 2e-5, at 1 thread and at 2 threads;
//   3. the shapes that take the special paths: split-KV decode (seq_q 1, MQA and MHA),
//      causal with seq_q < seq_kv and seq_q > seq_kv (rows that see nothing), GQA
//      groups larger than a tile, odd head dims (vector tails, narrow P·V edges),
//      tiny and odd tile sizes (tiles that do not divide anything);
//   4. memory: the flash workspace does not grow with the sequence length.
// Usage: test_parallel_kernels [kernel…] (default: the available flash__* and omp__*
// kernels; other ATTN_CAP_THREADS kernels, e.g. the OpenBLAS baseline, whose library
// does not promise thread-count-independent results, can be named explicitly).
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attn.h"
#include "check/check.h"
#include "flash/flash_plan.h"
#include "test_util.h"

typedef struct shape {
  int64_t b, h, kvh, sq, skv, dqk, dv;
  bool causal;
  int tile_q, tile_kv;  // 0 = kernel default
} shape;

static const shape kShapes[] = {
    // decode: seq_q 1, long KV → split-KV (MHA, MQA, GQA), odd lengths
    {1, 8, 8, 1, 5000, 128, 128, false, 0, 0},
    {1, 8, 1, 1, 4099, 128, 128, false, 0, 0},
    {2, 4, 2, 1, 1537, 64, 64, true, 0, 0},
    {1, 3, 3, 2, 3001, 33, 17, true, 0, 0},
    {1, 2, 2, 1, 700, 40, 200, false, 0, 0},  // one-row path: 8-vector passes + narrow tail
    {1, 2, 2, 1, 1500, 7, 9, false, 0, 0},    // one-row path, head dims below one vector
    // prefill, causal and not, GQA, cross both ways
    {1, 4, 4, 300, 300, 64, 64, true, 0, 0},
    {1, 4, 4, 257, 257, 64, 64, false, 0, 0},
    {2, 8, 2, 130, 190, 80, 48, true, 0, 0},
    {1, 6, 3, 190, 70, 40, 72, true, 0, 0},  // seq_q > seq_kv: first rows see nothing
    {1, 2, 1, 77, 333, 7, 9, false, 0, 0},   // head dims below one vector
    {1, 32, 1, 9, 200, 64, 64, true, 0, 0},  // group of 32 heads, MQA
    {1, 16, 1, 40, 90, 16, 16, true, 8, 0},  // group larger than tile_q
    // awkward tile sizes
    {1, 4, 2, 101, 203, 33, 65, true, 5, 17},
    {1, 2, 2, 64, 640, 128, 128, true, 16, 32},
    {1, 1, 1, 1000, 1000, 24, 24, true, 1000, 600},
    {1, 2, 2, 37, 300, 33, 20, true, 1, 0},  // one-row tasks under a causal mask
    {1, 2, 1, 70, 45, 19, 130, true, 1, 0},  // … with rows that see nothing (seq_q > seq_kv)
    {1, 4, 2, 3, 2, 24, 40, true, 4, 0},     // decode-path GQA rows with differing limits
    {1, 6, 2, 5, 900, 40, 20, true, 6, 0},   // … 3 heads × 2 positions, split-KV
    // rows-in-lanes decode path (8 rows on AVX-512, 8–16 on AVX2, 4–8 on NEON)
    {1, 8, 1, 2, 3000, 128, 128, true, 0, 0},  // MQA, 2 positions: 16 rows, limits differ
    {1, 12, 1, 1, 1000, 33, 20, false, 0, 0},  // 12 rows (padding lanes), V copied
    {1, 8, 2, 3, 50, 16, 24, true, 0, 16},     // GQA 4 heads × 3 positions, small tiles
    {1, 8, 1, 21, 10, 16, 16, true, 16, 0},    // rows that see nothing beside rows that do
    {1, 4, 1, 2, 777, 24, 8, true, 0, 0},      // 8 rows = one x86 row vector, two on NEON
    {1, 8, 1, 1, 1001, 64, 64, false, 0, 0},   // 8 rows (AVX-512: head_dim pairs, 64 constant)
    {1, 8, 1, 1, 1003, 30, 24, false, 0, 0},   // … head_dim pairs, any even head_dim
    {1, 8, 1, 1, 517, 17, 24, false, 0, 0},    // … odd head_dim: one element at a time
};

static void fill(float *x, size_t n, uint64_t seed) {
  uint64_t s = seed * 0x9e3779b97f4a7c15ull + 7;
  for (size_t i = 0; i < n; i++) {
    s ^= s << 13, s ^= s >> 7, s ^= s << 17;
    x[i] = (float)((double)(s >> 11) * (2.0 / 9007199254740992.0) - 1.0);
  }
}

static void describe(const shape *s, char *buf, size_t n) {
  snprintf(buf, n, "B%lld H%lld KV%lld Sq%lld Skv%lld Dqk%lld Dv%lld%s tq%d tkv%d", (long long)s->b,
           (long long)s->h, (long long)s->kvh, (long long)s->sq, (long long)s->skv,
           (long long)s->dqk, (long long)s->dv, s->causal ? " causal" : "", s->tile_q, s->tile_kv);
}

static void test_kernel_shape(const attn_kernel *k, const shape *s) {
  char desc[160], err[256];
  describe(s, desc, sizeof desc);
  attn_problem p = attn_problem_make(s->b, s->h, s->kvh, s->sq, s->skv, s->dqk, s->dv, s->causal);
  float *q = malloc(attn_q_elems(&p) * sizeof(float));
  float *kk = malloc(attn_k_elems(&p) * sizeof(float));
  float *v = malloc(attn_v_elems(&p) * sizeof(float));
  const size_t no = attn_o_elems(&p);
  float *o[3] = {malloc(no * sizeof(float)), malloc(no * sizeof(float)),
                 malloc(no * sizeof(float))};
  fill(q, attn_q_elems(&p), 1), fill(kk, attn_k_elems(&p), 2), fill(v, attn_v_elems(&p), 3);
  attn_check_prepared *pc = attn_check_prepare_inputs(&p, q, kk, v, err, sizeof err);
  EXPECT(pc != NULL, "%s: prepare: %s", desc, err);
  for (int t = 1; t <= 3; t++) {
    attn_exec ex = {.threads = t, .tile_q = s->tile_q, .tile_kv = s->tile_kv};
    memset(o[t - 1], 0xff, no * sizeof(float));  // NaN: an unwritten element cannot pass
    const int rc = attn_kernel_call(k, &p, &ex, q, kk, v, o[t - 1], err, sizeof err);
    EXPECT(rc == ATTN_OK, "%s %s threads %d: %s", k->name, desc, t, err);
    if (t > 1)
      EXPECT(memcmp(o[0], o[t - 1], no * sizeof(float)) == 0,
             "%s %s: threads %d output differs bitwise from threads 1", k->name, desc, t);
    if (pc && t <= 2) {
      attn_check_result r;
      const bool ok = attn_check_output(pc, o[t - 1], &r);
      EXPECT(ok, "%s %s threads %d: %s (err/tol %.3g)", k->name, desc, t, r.message, r.worst_ratio);
      EXPECT(r.max_rel_err <= 2e-5, "%s %s threads %d: relative max error %.3g > 2e-5", k->name,
             desc, t, r.max_rel_err);
      // Also through the checker's own path (guard zones around O).
      attn_check_result r2;
      EXPECT(attn_check_kernel(k, pc, &ex, &r2), "%s %s threads %d (guarded): %s", k->name, desc, t,
             r2.message);
    }
  }
  attn_check_prepared_free(pc);
  free(q), free(kk), free(v), free(o[0]), free(o[1]), free(o[2]);
}

// The plan really takes the split-KV path on decode shapes, and not on prefill.
static void test_plan(void) {
  flash_plan pl;
  // Explicit tiles: the plan must not depend on ATTNBENCH_TILE_* in the environment here.
  attn_exec ex = {.threads = 2, .tile_q = 256, .tile_kv = 128};
  attn_problem dec = attn_problem_make(1, 8, 8, 1, 32768, 128, 128, false);
  flash_plan_make(&dec, &ex, 16, 32, &pl);
  EXPECT(pl.nsplit > 1, "decode MHA: no split (nsplit %lld)", (long long)pl.nsplit);
  attn_problem mqa = attn_problem_make(1, 8, 1, 1, 32768, 128, 128, false);
  flash_plan_make(&mqa, &ex, 16, 32, &pl);
  EXPECT(pl.nsplit > 1 && pl.rows == 8, "decode MQA: nsplit %lld rows %lld", (long long)pl.nsplit,
         (long long)pl.rows);
  attn_problem pre = attn_problem_make(1, 8, 8, 2048, 2048, 64, 64, true);
  flash_plan_make(&pre, &ex, 16, 32, &pl);
  EXPECT(pl.nsplit == 1 && pl.tasks >= 64, "prefill: nsplit %lld tasks %lld", (long long)pl.nsplit,
         (long long)pl.tasks);
  // Thread count never enters the plan.
  flash_plan a, b;
  attn_exec e1 = {.threads = 1, .tile_q = 256, .tile_kv = 128};
  attn_exec e7 = {.threads = 7, .tile_q = 256, .tile_kv = 128};
  flash_plan_make(&dec, &e1, 16, 32, &a);
  flash_plan_make(&dec, &e7, 16, 32, &b);
  EXPECT(memcmp(&a, &b, sizeof a) == 0, "the plan depends on the thread count");
}

// O(threads × tile) memory: the workspace is the same for seq 4096 and 65536.
static void test_workspace_bound(const attn_kernel *k) {
  if (!k->workspace) return;
  attn_exec ex = {.threads = 2, .tile_q = 256, .tile_kv = 128};
  attn_problem a = attn_problem_make(1, 8, 8, 4096, 4096, 64, 64, true);
  attn_problem b = attn_problem_make(1, 8, 8, 65536, 65536, 64, 64, true);
  const size_t wa = k->workspace(&a, &ex), wb = k->workspace(&b, &ex);
  EXPECT(wa == wb, "%s: workspace grows with seq (%zu → %zu bytes)", k->name, wa, wb);
  EXPECT(wb < ((size_t)16 << 20), "%s: workspace %zu bytes for 2 threads", k->name, wb);
}

int main(int argc, char **argv) {
  test_plan();
  size_t tested = 0;
  for (size_t i = 0; i < attn_kernel_count(); i++) {
    const attn_kernel *k = attn_kernel_at(i);
    if (!(k->caps & ATTN_CAP_THREADS) || !attn_kernel_available(k, NULL, 0)) continue;
    bool wanted =
        argc < 2 && (strncmp(k->name, "flash__", 7) == 0 || strncmp(k->name, "omp__", 5) == 0);
    for (int a = 1; a < argc; a++) wanted |= strcmp(argv[a], k->name) == 0;
    if (!wanted) continue;
    tested++;
    for (size_t s = 0; s < sizeof kShapes / sizeof kShapes[0]; s++)
      test_kernel_shape(k, &kShapes[s]);
    if (strncmp(k->name, "flash__", 7) == 0) test_workspace_bound(k);
    printf("%s: %zu shapes x threads 1,2,3\n", k->name, sizeof kShapes / sizeof kShapes[0]);
  }
  if (tested == 0) {
    printf("no parallel kernel available: skipped\n");
    return TEST_SKIP;
  }
  return test_finish("test_parallel_kernels");
}
