// SPDX-License-Identifier: MIT
// The flash kernels compute every attention option natively:
//   1. every flash kernel this CPU runs declares ATTN_CAP_OPT_ALL, and on every case it
//      is native: attn_kernel_run reports no fallback (the low-precision flash kernels,
//      with an ATTN_CAP_COMPUTE_* bit, leave options to the portable path: skipped,
//      docs/low-precision-kernels.md);
//   2. every option case of the check matrix, plus cases built from the kernel record's
//      tiles (window 1, tile − 1, tile, tile + 1, 2·tile + 1, more than seq_kv, with the
//      key tile forced to the register tile and at the default; both alignments with
//      seq_q above, equal to and below seq_kv; decode rows in lanes and fused; split-KV
//      decode with a window; softcap on huge scores; sinks on rows that see nothing; the
//      LSE; ALiBi alone and with a window on GQA rows of four heads per task, with sinks
//      and the LSE) passes the checker at 1 and 2 threads, with bitwise the same O and LSE;
//   3. window work is skipped: each task's keys (flash_task_keys, the loop bounds of the
//      kernels) are exactly the union of its rows' attn_row_keys ranges, split-KV chunks
//      tile that union, and at H8 D128 window 1024 the visited key tiles grow linearly with
//      seq (×2 from 8192 to 16384) where full causal grows quadratically.
// Usage: test_flash_options [--quick]. Exit 77 when no flash kernel runs here.
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "attn.h"
#include "check/check.h"
#include "core/convert.h"
#include "flash/flash_plan.h"
#include "test_util.h"

static size_t g_cases, g_runs;

// Runs k on the case at 1 and 2 threads through attn_kernel_run (asserting no fallback),
// checks O (and the LSE when the case asks) against the reference, and that both thread
// counts agree bitwise.
static void run_case(const attn_kernel *k, const attn_check_case *c, int tile_kv) {
  char desc[200], err[256];
  attn_check_case_describe(c, desc, sizeof desc);
  attn_check_prepared *pc = attn_check_prepare(c, err, sizeof err);
  EXPECT(pc != NULL, "cannot prepare %s: %s", desc, err);
  if (!pc) return;
  g_cases++;
  attn_problem p = *attn_check_problem(pc);
  attn_options o = p.opts ? *p.opts : (attn_options){0};
  const bool want_lse = attn_check_reference_lse(pc) != NULL;
  const size_t nq = attn_q_elems(&p), nk = attn_k_elems(&p), nv = attn_v_elems(&p);
  const size_t no = attn_o_elems(&p), nl = (size_t)(p.batch * p.heads * p.seq_q);
  float *q = malloc(nq * sizeof *q), *kk = malloc(nk * sizeof *kk), *v = malloc(nv * sizeof *v);
  float *out[2] = {malloc(no * sizeof(float)), malloc(no * sizeof(float))};
  float *lse[2] = {malloc(nl * sizeof(float)), malloc(nl * sizeof(float))};
  attn_check_fill(c, q, kk, v);
  // A case with K/V stored as another type (kv=f16, …): the kernel reads the stored K/V,
  // as the checker's reference does (float32 generated, then converted).
  void *ks = kk, *vs = v;
  if (p.kv_dtype != ATTN_DTYPE_F32) {
    const size_t rows = (size_t)(p.batch * p.kv_heads * p.seq_kv);
    ks = malloc(attn_k_bytes(&p)), vs = malloc(attn_v_bytes(&p));
    attn_quantize_rows(p.kv_dtype, kk, rows, p.head_dim_qk, ks);
    attn_quantize_rows(p.kv_dtype, v, rows, p.head_dim_v, vs);
  }
  for (int t = 0; t < 2; t++) {
    const attn_exec exec = {.threads = t + 1, .tile_kv = tile_kv};
    o.lse = want_lse ? lse[t] : NULL;
    p.opts = &o;
    EXPECT(attn_kernel_native(k, &p), "%s: not native for %s", k->name, desc);
    const size_t ws_bytes = attn_kernel_workspace(k, &p, &exec);
    void *ws = ws_bytes ? aligned_alloc(64, (ws_bytes + 63) & ~(size_t)63) : NULL;
    memset(out[t], 0xff, no * sizeof(float));  // NaN: an unwritten element fails the check
    memset(lse[t], 0xff, nl * sizeof(float));
    bool fb = true;
    const int rc = attn_kernel_run(k, &p, &exec, q, ks, vs, out[t], ws, &fb);
    free(ws);
    g_runs++;
    EXPECT(rc == ATTN_OK && !fb, "%s threads %d %s: rc %d, fallback %d", k->name, t + 1, desc, rc,
           fb);
    attn_check_result r;
    attn_check_output_lse(pc, out[t], want_lse ? lse[t] : NULL, &r);
    EXPECT(r.verdict == ATTN_CHECK_PASS, "%s threads %d tile_kv %d %s: %s: %s (err/tol %.3g)",
           k->name, t + 1, tile_kv, desc, attn_check_verdict_name(r.verdict), r.message,
           r.worst_ratio);
  }
  EXPECT(memcmp(out[0], out[1], no * sizeof(float)) == 0 &&
             (!want_lse || memcmp(lse[0], lse[1], nl * sizeof(float)) == 0),
         "%s %s: 1 and 2 threads differ", k->name, desc);
  if (ks != kk) free(ks), free(vs);
  free(q), free(kk), free(v), free(out[0]), free(out[1]), free(lse[0]), free(lse[1]);
  attn_check_prepared_free(pc);
}

static attn_check_case mk(attn_problem p, attn_dist dist, attn_options o, uint32_t gen) {
  static uint64_t seed = 7000;
  return (attn_check_case){.problem = p, .dist = dist, .seed = seed++, .opts = o, .gen = gen};
}

// The cases built from k's register tile T (keys per Q·Kᵀ register tile).
static void tile_cases(const attn_kernel *k, bool quick) {
  const int64_t T = k->qk_cols;
  const int64_t wins[] = {1, T - 1, T, T + 1, 2 * T + 1, 400};
  const int64_t seqs[][2] = {{3 * T + 5, 2 * T + 3}, {2 * T + 7, 2 * T + 7}, {T + 2, 3 * T + 1}};
  for (size_t w = 0; w < sizeof wins / sizeof wins[0]; w++)
    for (size_t s = 0; s < 3; s++)
      for (int align = 0; align <= 1; align++) {
        if (quick && (w + s + (size_t)align) % 3) continue;
        const bool causal = (w + s) % 2 == 0;
        attn_problem p = attn_problem_make(1, 4, 2, seqs[s][0], seqs[s][1], 32, 24, causal);
        const attn_options o = {.align = (attn_align)align,
                                .window = true,
                                .window_left = wins[w] - 1,
                                .window_right = causal ? 0 : (int64_t)(w % 3)};
        const attn_check_case c = mk(p, ATTN_DIST_NORMAL, o, ATTN_CHECK_GEN_LSE);
        run_case(k, &c, (int)T);  // key tile = register tile: windows around the key tile
        if (!quick) run_case(k, &c, 0);
      }
  // everything at once, window around the tile, GQA prefill
  attn_problem pa = attn_problem_make(2, 4, 2, 3 * T, 3 * T + 9, 64, 48, true);
  const attn_options all = {.window = true,
                            .window_left = T,
                            .softcap = 30.0f,
                            .alibi_max_bias = 8.0f,
                            .align = ATTN_ALIGN_TOP_LEFT};
  const attn_check_case ca = mk(pa, ATTN_DIST_NORMAL, all,
                                ATTN_CHECK_GEN_SINKS | ATTN_CHECK_GEN_MASK | ATTN_CHECK_GEN_LSE);
  run_case(k, &ca, (int)T);
  run_case(k, &ca, 0);
  // ALiBi alone and with a window (the tiled pass recomputes the bias FMA rather than
  // storing it), GQA: the rows of four heads, each with its own slope, in one task; with
  // sinks and the LSE; both alignments, seq_q below seq_kv.
  for (int align = 0; align <= 1; align++)
    for (int w = 0; w <= 1; w++) {
      attn_problem pg = attn_problem_make(1, 8, 2, 2 * T + 11, 3 * T + 5, 32, 32, true);
      const attn_options ao = {.alibi_max_bias = 8.0f,
                               .align = (attn_align)align,
                               .window = w != 0,
                               .window_left = w ? T + 3 : 0};
      const attn_check_case cg =
          mk(pg, ATTN_DIST_NORMAL, ao, (align ? ATTN_CHECK_GEN_SINKS : 0) | ATTN_CHECK_GEN_LSE);
      run_case(k, &cg, (int)T);
      run_case(k, &cg, 0);
    }
}

// Decode shapes: rows in lanes (MQA, 8 heads per K/V head), fused rows (MHA, few rows),
// split-KV (few base tasks, long key range) with a window and every score option.
static void decode_cases(const attn_kernel *k) {
  const attn_options opt_sets[] = {
      {.window = true, .window_left = 700, .window_right = 0},
      {.softcap = 5.0f, .alibi_max_bias = 8.0f},
      {.window = true, .window_left = 300, .softcap = 20.0f, .alibi_max_bias = 4.0f},
      {.window = true, .window_left = 40, .window_right = 3, .align = ATTN_ALIGN_TOP_LEFT},
  };
  const attn_problem shapes[] = {
      attn_problem_make(1, 8, 1, 1, 2100, 64, 64, true),   // lanes, split-KV
      attn_problem_make(1, 16, 2, 1, 1500, 32, 40, true),  // lanes (8 rows), split-KV
      attn_problem_make(1, 2, 2, 1, 1800, 48, 48, true),   // fused, split-KV
      attn_problem_make(1, 2, 1, 3, 999, 32, 32, true),    // fused: 6 rows at 3 positions
      attn_problem_make(2, 4, 4, 5, 90, 16, 16, false),    // fused, 5 positions, no split
  };
  for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
    for (size_t o = 0; o < sizeof opt_sets / sizeof opt_sets[0]; o++) {
      const uint32_t gen = ATTN_CHECK_GEN_LSE | ((s + o) % 2 ? ATTN_CHECK_GEN_SINKS : 0) |
                           ((s + o) % 3 == 0 ? ATTN_CHECK_GEN_MASK : 0);
      const attn_check_case c =
          mk(shapes[s], o == 1 ? ATTN_DIST_LARGE : ATTN_DIST_NORMAL, opt_sets[o], gen);
      run_case(k, &c, 0);
    }
}

// Task key ranges against the rows' ranges; visited key tiles of a plan.
static int64_t plan_tiles(const attn_problem *p, const attn_kernel *k, bool check_union) {
  flash_plan pl;
  flash_plan_make(p, NULL, k->vec_width, k->qk_cols, &pl);
  int64_t tiles = 0;
  for (int64_t base = 0; base < pl.base_tasks; base++) {
    int64_t covered_lo = -1, covered_hi = -1;
    for (int64_t c = 0; c < pl.nsplit; c++) {
      const flash_task tk = flash_task_at(p, &pl, base * pl.nsplit + c);
      int64_t kb, ke;
      flash_task_keys(p, &pl, &tk, &kb, &ke);
      tiles += (ke - kb + pl.tkv - 1) / pl.tkv;
      if (!check_union || kb == ke) continue;
      if (covered_lo < 0) covered_lo = kb;
      EXPECT(covered_hi < 0 || kb == covered_hi, "chunk %lld starts at %lld, not %lld",
             (long long)c, (long long)kb, (long long)covered_hi);
      covered_hi = ke;
    }
    if (!check_union) continue;
    const flash_task tk = flash_task_at(p, &pl, base * pl.nsplit);
    const int64_t i0 = tk.qb * pl.tq, i1 = i0 + pl.tq < p->seq_q ? i0 + pl.tq : p->seq_q;
    int64_t ulo = p->seq_kv, uhi = 0;  // the union of the rows' ranges, row by row
    for (int64_t i = i0; i < i1; i++) {
      int64_t lo, hi;
      attn_row_keys(p, i, &lo, &hi);
      if (lo < hi) ulo = lo < ulo ? lo : ulo, uhi = hi > uhi ? hi : uhi;
    }
    if (ulo >= uhi)
      EXPECT(covered_lo < 0, "task %lld visits keys though its rows see none", (long long)base);
    else
      EXPECT(covered_lo == ulo && covered_hi == uhi,
             "task %lld visits [%lld, %lld), its rows see [%lld, %lld)", (long long)base,
             (long long)covered_lo, (long long)covered_hi, (long long)ulo, (long long)uhi);
  }
  return tiles;
}

static void window_skipping(const attn_kernel *k) {
  const attn_options win = {.window = true, .window_left = 1023, .window_right = 0};
  int64_t tw[2], tc[2];
  for (int s = 0; s < 2; s++) {
    attn_problem p = attn_problem_make(1, 8, 8, 8192 << s, 8192 << s, 128, 128, true);
    tc[s] = plan_tiles(&p, k, false);
    p.opts = &win;
    tw[s] = plan_tiles(&p, k, s == 0);
  }
  printf(
      "%s: key tiles visited, window 1024 vs full causal: seq 8192 %lld vs %lld (%.3f), "
      "seq 16384 %lld vs %lld\n",
      k->name, (long long)tw[0], (long long)tc[0], (double)tw[0] / (double)tc[0], (long long)tw[1],
      (long long)tc[1]);
  EXPECT((double)tw[1] / (double)tw[0] < 2.1, "window tiles grow %.2fx with seq x2 (want ~2)",
         (double)tw[1] / (double)tw[0]);
  EXPECT((double)tc[1] / (double)tc[0] > 3.5, "full causal tiles grow %.2fx (want ~4)",
         (double)tc[1] / (double)tc[0]);
  EXPECT((double)tw[0] / (double)tc[0] < 0.35, "window/causal tiles %.3f",
         (double)tw[0] / (double)tc[0]);
  // small shapes, every row checked: windows, alignments, split-KV decode
  const attn_options ws[] = {
      {.window = true, .window_left = 5, .window_right = 2},
      {.window = true, .window_left = 700, .window_right = 0},
      {.window = true, .window_left = 0, .window_right = 30, .align = ATTN_ALIGN_TOP_LEFT},
      {.window = true, .window_left = 100, .window_right = ATTN_WINDOW_UNBOUNDED}};
  const int64_t shp[][3] = {{300, 200, 0}, {200, 300, 1}, {1, 3000, 1}, {2, 5000, 0}, {17, 17, 1}};
  for (size_t w = 0; w < 4; w++)
    for (size_t s = 0; s < 5; s++) {
      attn_problem p = attn_problem_make(1, 2, 1, shp[s][0], shp[s][1], 32, 32, shp[s][2] != 0);
      p.opts = &ws[w];
      plan_tiles(&p, k, true);
    }
}

int main(int argc, char **argv) {
  const bool quick = argc > 1 && strcmp(argv[1], "--quick") == 0;
  const size_t n_cases = attn_check_matrix(quick, NULL, 0);
  attn_check_case *cases = calloc(n_cases, sizeof *cases);
  attn_check_matrix(quick, cases, n_cases);
  size_t kernels = 0;
  for (size_t i = 0; i < attn_kernel_count(); i++) {
    const attn_kernel *k = attn_kernel_at(i);
    if (strncmp(k->name, "flash__", 7) != 0 || !attn_kernel_available(k, NULL, 0)) continue;
    if ((k->caps & ATTN_CAP_COMPUTE_ALL) && !(k->caps & ATTN_CAP_OPT_ALL)) {
      printf("%s: skipped (low-precision kernel; options run on the portable path)\n", k->name);
      continue;
    }
    kernels++;
    EXPECT((k->caps & ATTN_CAP_OPT_ALL) == ATTN_CAP_OPT_ALL, "%s lacks option caps %#x", k->name,
           k->caps);
    g_cases = g_runs = 0;
    for (size_t c = 0; c < n_cases; c++) {
      const attn_check_case *cc = &cases[c];
      const attn_options zero = {0};
      if (memcmp(&cc->opts, &zero, sizeof zero) == 0 && !cc->gen) continue;  // no options
      // serving layouts reach flash one gathered sequence at a time (test_layout,
      // test_kernels_matrix check them); this test fills dense inputs itself
      if (cc->layout.kind != ATTN_LAYOUT_DENSE) continue;
      run_case(k, cc, 0);
    }
    tile_cases(k, quick);
    decode_cases(k);
    window_skipping(k);
    printf("%s: %zu option cases, %zu runs (1 and 2 threads), all native\n", k->name, g_cases,
           g_runs);
  }
  free(cases);
  if (!kernels) {
    printf("test_flash_options: no flash kernel runs on this CPU, skipped\n");
    return TEST_SKIP;
  }
  return test_finish("test_flash_options");
}
