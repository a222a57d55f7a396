// SPDX-License-Identifier: MIT
// Register-tile variants (attn_exec.regtile) and the split-KV knob (attn_exec.kv_split)
// of the available kernels that have them (flash__avx512, flash__avx2):
//   1. each record's variants: names "<qk_rows>x<qk_cols>/<pv_rows>x<pv_cols>" of their
//      own tiles, whole vectors; a regtile past the last variant (or on a kernel without
//      variants) is refused by attn_kernel_call with a message; attn_exec_check's limits;
//   2. every variant gives bitwise the output (and LSE) of variant 0 at 1 and 2 threads
//      (flash_body.h: one plan, one path per task, one FMA order per element), and passes
//      the checker: on sizes below, at and above EACH variant's register tiles (rows, keys,
//      head_dim_v), and on prefill (causal, window, GQA), decode (MHA fused rows, GQA,
//      MQA lanes, split-KV), rows around the fused-decode threshold, options, f16 and q8_0;
//   3. kv_split = N: the plan has at most N chunks (1: none; N > 1 splits even a task
//      count the default rule leaves whole), the output passes the checker and is bitwise
//      the same at 1 and 2 threads and for every variant.
// Exit 77 when no kernel with variants is available. --quick: fewer sizes.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attn.h"
#include "check/check.h"
#include "core/convert.h"
#include "flash/flash_plan.h"
#include "size_set.h"
#include "test_util.h"

static size_t g_cases = 0;

typedef struct rt_case {
  attn_problem p;  // F32 shape; p.opts may point to options (lse: filled per run here)
  attn_dtype t;    // K/V type the kernel reads
  int kv_split;
} rt_case;

// Runs c on every variant of k at 1 and 2 threads: each run passes the checker and equals
// (output and LSE, bitwise) variant 0 at 1 thread.
static void run_variants(const attn_kernel *k, const rt_case *c) {
  attn_problem p32 = c->p;
  attn_options opts = p32.opts ? *p32.opts : (attn_options){0};
  const bool lse = p32.opts && p32.opts->lse;
  const size_t nlse = (size_t)(p32.batch * p32.heads * p32.seq_q);
  float *lse_buf = lse ? malloc(nlse * sizeof(float)) : NULL;
  float *lse0 = lse ? malloc(nlse * sizeof(float)) : NULL;
  if (lse) opts.lse = lse_buf;
  if (p32.opts) p32.opts = &opts;
  attn_problem pt = p32;
  pt.kv_dtype = c->t;
  const attn_check_case cc = {
      .problem = p32, .dist = (attn_dist)(g_cases % 3), .seed = 4400 + g_cases};
  g_cases++;
  char desc[200], err[512];
  attn_check_case_describe(&cc, desc, sizeof desc);
  const size_t nq = attn_q_elems(&p32), nk = attn_k_elems(&p32), nv = attn_v_elems(&p32);
  const size_t no = attn_o_elems(&p32);
  const size_t krows = nk / (size_t)p32.head_dim_qk, vrows = nv / (size_t)p32.head_dim_v;
  float *q = malloc(nq * sizeof(float)), *kf = malloc(nk * sizeof(float));
  float *vf = malloc(nv * sizeof(float)), *kd = malloc(nk * sizeof(float));
  float *vd = malloc(nv * sizeof(float));
  void *kt = malloc(krows * attn_kv_row_bytes(c->t, p32.head_dim_qk));
  void *vt = malloc(vrows * attn_kv_row_bytes(c->t, p32.head_dim_v));
  float *o0 = malloc(no * sizeof(float)), *o = malloc(no * sizeof(float));
  if (!q || !kf || !vf || !kd || !vd || !kt || !vt || !o0 || !o || (lse && (!lse_buf || !lse0))) {
    EXPECT(0, "out of memory");
    exit(1);
  }
  attn_check_fill(&cc, q, kf, vf);
  attn_quantize_rows(c->t, kf, krows, p32.head_dim_qk, kt);
  attn_quantize_rows(c->t, vf, vrows, p32.head_dim_v, vt);
  attn_dequantize_rows(c->t, kt, krows, p32.head_dim_qk, kd);
  attn_dequantize_rows(c->t, vt, vrows, p32.head_dim_v, vd);
  attn_check_prepared *pc = attn_check_prepare_inputs(&p32, q, kd, vd, err, sizeof err);
  EXPECT(pc != NULL, "cannot prepare %s: %s", desc, err);
  const int n = attn_kernel_regtile_count(k);
  for (int rt = 0; rt < n && pc; rt++)
    for (int threads = 1; threads <= 2; threads++) {
      const attn_exec ex = {.threads = threads, .regtile = rt, .kv_split = c->kv_split};
      const char *name = attn_kernel_regtile(k, rt).name;
      const int rc = attn_kernel_call(k, &pt, &ex, q, kt, vt, o, err, sizeof err);
      EXPECT(rc == ATTN_OK, "%s %s %s kv_split %d regtile %s T%d: %s", k->name,
             attn_dtype_name(c->t), desc, c->kv_split, name, threads, err);
      if (rc != ATTN_OK) continue;
      attn_check_result r;
      const bool ok =
          lse ? attn_check_output_lse(pc, o, lse_buf, &r) : attn_check_output(pc, o, &r);
      EXPECT(ok, "%s %s %s kv_split %d regtile %s T%d: %s (err/tol %.3g)", k->name,
             attn_dtype_name(c->t), desc, c->kv_split, name, threads, r.message, r.worst_ratio);
      if (rt == 0 && threads == 1) {
        memcpy(o0, o, no * sizeof(float));
        if (lse) memcpy(lse0, lse_buf, nlse * sizeof(float));
        continue;
      }
      size_t diff = 0, first = 0;
      for (size_t i = 0; i < no; i++)
        if (memcmp(&o[i], &o0[i], sizeof(float)) != 0 && !diff++) first = i;
      EXPECT(diff == 0,
             "%s %s %s kv_split %d: regtile %s T%d differs from %s T1 in %zu of %zu outputs "
             "(first o[%zu] = %a vs %a)",
             k->name, attn_dtype_name(c->t), desc, c->kv_split, name, threads,
             attn_kernel_regtile(k, 0).name, diff, no, first, (double)o[first], (double)o0[first]);
      EXPECT(!lse || memcmp(lse_buf, lse0, nlse * sizeof(float)) == 0,
             "%s %s %s: regtile %s T%d: LSE differs from variant 0", k->name, attn_dtype_name(c->t),
             desc, name, threads);
    }
  attn_check_prepared_free(pc);
  free(q), free(kf), free(vf), free(kd), free(vd), free(kt), free(vt), free(o0), free(o);
  free(lse_buf), free(lse0);
}

static void run_f32(const attn_kernel *k, attn_problem p) {
  run_variants(k, &(rt_case){.p = p});
}

// 1. The record's variants and the refusals.
static void check_record(const attn_kernel *k) {
  const int n = attn_kernel_regtile_count(k);
  EXPECT(n == k->regtile_count && n >= 2, "%s: %d variants", k->name, n);
  for (int i = 0; i < n; i++) {
    const attn_regtile r = attn_kernel_regtile(k, i);
    char want[48];
    snprintf(want, sizeof want, "%dx%d/%dx%d", r.qk_rows, r.qk_cols, r.pv_rows, r.pv_cols);
    EXPECT(!strcmp(r.name, want), "%s: variant %d is named %s, its tiles say %s", k->name, i,
           r.name, want);
    EXPECT(r.qk_rows > 0 && r.pv_rows > 0 && r.qk_cols % k->vec_width == 0 &&
               r.pv_cols % k->vec_width == 0 && r.qk_cols > 0 && r.pv_cols > 0,
           "%s: variant %s: not whole vectors of %d", k->name, r.name, k->vec_width);
    EXPECT(attn_kernel_regtile_find(k, r.name) == i, "%s: find(%s) != %d", k->name, r.name, i);
  }
  const attn_regtile d = attn_kernel_regtile(k, 0);
  EXPECT(d.qk_rows == k->qk_rows && d.qk_cols == k->qk_cols && d.pv_rows == k->pv_rows &&
             d.pv_cols == k->pv_cols,
         "%s: variant 0 is not the record's tiles", k->name);
  EXPECT(attn_kernel_regtile_find(k, "1x1/1x1") == -1, "%s: found a variant that is not there",
         k->name);
  EXPECT(k->caps & ATTN_CAP_KV_SPLIT, "%s: no ATTN_CAP_KV_SPLIT", k->name);

  const attn_problem p = attn_problem_make(1, 2, 1, 9, 21, 16, 16, false);
  float q[2 * 9 * 16], kk[21 * 16], v[21 * 16], o[2 * 9 * 16];
  for (size_t i = 0; i < sizeof q / sizeof q[0]; i++) q[i] = (float)(i % 7) * 0.1f;
  for (size_t i = 0; i < sizeof kk / sizeof kk[0]; i++) kk[i] = v[i] = (float)(i % 5) * 0.1f;
  char err[512] = "";
  const attn_exec past = {.regtile = n};
  EXPECT(attn_kernel_call(k, &p, &past, q, kk, v, o, err, sizeof err) == ATTN_ERR_INVALID &&
             strstr(err, "register-tile variant") && strstr(err, d.name),
         "%s: regtile %d: got '%s'", k->name, n, err);
  const attn_kernel *plain = attn_kernel_find("naive");
  EXPECT(plain && attn_kernel_regtile_count(plain) == 1 &&
             !strcmp(attn_kernel_regtile(plain, 0).name, "default"),
         "naive: not one implicit variant named default");
  if (plain) {
    const attn_exec one = {.regtile = 1};
    EXPECT(attn_kernel_call(plain, &p, &one, q, kk, v, o, err, sizeof err) == ATTN_ERR_INVALID &&
               strstr(err, "register-tile variant"),
           "naive: regtile 1: got '%s'", err);
    EXPECT(attn_kernel_call(plain, &p, &(attn_exec){0}, q, kk, v, o, err, sizeof err) == ATTN_OK,
           "naive: regtile 0: %s", err);
  }
  const attn_exec bad[] = {{.regtile = -1},
                           {.regtile = ATTN_MAX_REGTILES},
                           {.kv_split = -1},
                           {.kv_split = ATTN_MAX_KV_SPLIT + 1}};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    EXPECT(attn_exec_check(&bad[i], err, sizeof err) == ATTN_ERR_INVALID,
           "attn_exec_check accepted regtile %d kv_split %d", bad[i].regtile, bad[i].kv_split);
  const attn_exec good = {.regtile = ATTN_MAX_REGTILES - 1, .kv_split = ATTN_MAX_KV_SPLIT};
  EXPECT(attn_exec_check(&good, err, sizeof err) == ATTN_OK, "attn_exec_check: %s", err);
}

static void add_around(set64 *s, int64_t t, bool quick) {
  add(s, t - 1), add(s, t), add(s, t + 1);
  if (!quick) add(s, 2 * t - 1), add(s, 2 * t + 1);
}

// 2a. Sizes from each variant's tiles, every variant compared with variant 0.
static void tile_edges(const attn_kernel *k, bool quick) {
  set64 rows = {0}, keys = {0}, dv = {0};
  for (int i = 0; i < attn_kernel_regtile_count(k); i++) {
    const attn_regtile r = attn_kernel_regtile(k, i);
    add_around(&rows, r.qk_rows, quick), add_around(&rows, r.pv_rows, quick);
    add_around(&keys, r.qk_cols, quick), add_around(&dv, r.pv_cols, quick);
  }
  add_around(&dv, k->vec_width, true);
  const size_t before = g_cases;
  for (size_t i = 0; i < rows.n; i++) {
    const bool causal = i % 2;
    run_f32(k, attn_problem_make(1, 2, 1, rows.v[i], rows.v[i], 24, 20, causal));
    run_f32(k, attn_problem_make(1, 1, 1, rows.v[i], keys.v[i % keys.n], 8, 9, !causal));
  }
  for (size_t i = 0; i < keys.n; i++)
    run_f32(k, attn_problem_make(1, 3, 1, rows.v[i % rows.n], keys.v[i], 17, 32, i % 2));
  for (size_t i = 0; i < dv.n; i++)
    run_f32(k, attn_problem_make(1, 2, 2, 11 + (int64_t)i, 19, 16, dv.v[i], i % 2));
  printf("%s: %zu tile-edge cases over %d variants\n", k->name, g_cases - before,
         attn_kernel_regtile_count(k));
}

// 2b. Every path of the kernel, options and K/V types.
static void paths(const attn_kernel *k) {
  run_f32(k, attn_problem_make(1, 4, 2, 200, 200, 64, 64, true));   // prefill causal GQA
  run_f32(k, attn_problem_make(2, 2, 2, 97, 150, 48, 40, false));   // cross, dv != dqk
  run_f32(k, attn_problem_make(1, 32, 32, 1, 700, 64, 64, false));  // MHA decode: fused rows
  run_f32(k, attn_problem_make(1, 8, 2, 1, 3000, 64, 64, false));   // GQA decode, split-KV
  run_f32(k, attn_problem_make(1, 16, 1, 1, 2100, 32, 32, false));  // MQA decode: lanes
  for (int64_t sq = 5; sq <= 13; sq += 2)                           // around FL_DEC_ROWS
    run_f32(k, attn_problem_make(1, 2, 2, sq, 333, 32, 32, sq % 3 == 0));
  run_f32(k, attn_problem_make(1, 12, 1, 1, 900, 64, 64, false));  // 12 rows: tiled
  const attn_options win = {.window = true, .window_left = 40, .window_right = 3};
  attn_problem pw = attn_problem_make(1, 2, 1, 150, 170, 32, 32, true);
  pw.opts = &win;
  run_f32(k, pw);
  const attn_options many = {.softcap = 20.0f, .alibi_max_bias = 8.0f, .lse = (float *)1};
  attn_problem po = attn_problem_make(1, 4, 4, 70, 90, 32, 32, false);
  po.opts = &many;  // lse: run_variants supplies the array
  run_f32(k, po);
  attn_problem pd = attn_problem_make(1, 8, 2, 1, 1500, 64, 64, false);
  pd.opts = &many;
  run_f32(k, pd);
  const attn_dtype types[] = {ATTN_DTYPE_F16, ATTN_DTYPE_Q8_0};
  for (size_t i = 0; i < 2; i++) {
    run_variants(
        k, &(rt_case){.p = attn_problem_make(1, 4, 2, 100, 130, 64, 64, true), .t = types[i]});
    run_variants(
        k, &(rt_case){.p = attn_problem_make(1, 8, 1, 1, 1200, 64, 32, false), .t = types[i]});
    run_variants(k,
                 &(rt_case){.p = attn_problem_make(1, 4, 4, 1, 900, 32, 32, false), .t = types[i]});
  }
}

// 3. kv_split: the plan, then outputs.
static void kv_split(const attn_kernel *k) {
  const int nr = k->qk_cols, lanes = k->vec_width;
  const attn_problem mha = attn_problem_make(1, 32, 32, 1, 4096, 64, 64, false);
  flash_plan pl;
  flash_plan_make(&mha, &(attn_exec){0}, lanes, nr, &pl);
  EXPECT(pl.nsplit == 1, "%s: MHA decode H32 splits by default (%lld)", k->name,
         (long long)pl.nsplit);
  const int ns[] = {1, 2, 3, 4, 7, 64, ATTN_MAX_KV_SPLIT};
  for (size_t i = 0; i < sizeof ns / sizeof ns[0]; i++) {
    flash_plan_make(&mha, &(attn_exec){.kv_split = ns[i]}, lanes, nr, &pl);
    EXPECT(pl.nsplit >= 1 && pl.nsplit <= ns[i] && (ns[i] == 1) == (pl.nsplit == 1) &&
               pl.chunk % pl.tkv == 0 && pl.chunk * pl.nsplit >= 4096 &&
               pl.chunk * (pl.nsplit - 1) < 4096,
           "%s: kv_split %d: nsplit %lld chunk %lld tkv %lld", k->name, ns[i], (long long)pl.nsplit,
           (long long)pl.chunk, (long long)pl.tkv);
  }
  const attn_problem gqa = attn_problem_make(1, 8, 2, 1, 3000, 64, 64, false);
  flash_plan_make(&gqa, &(attn_exec){0}, lanes, nr, &pl);
  EXPECT(pl.nsplit > 1, "%s: GQA decode does not split by default", k->name);
  flash_plan_make(&gqa, &(attn_exec){.kv_split = 1}, lanes, nr, &pl);
  EXPECT(pl.nsplit == 1, "%s: kv_split 1 still splits (%lld)", k->name, (long long)pl.nsplit);

  const int vals[] = {1, 2, 3, 5, 64};
  for (size_t i = 0; i < sizeof vals / sizeof vals[0]; i++) {
    run_variants(k, &(rt_case){.p = attn_problem_make(1, 8, 8, 1, 1000, 64, 64, false),
                               .kv_split = vals[i]});
    run_variants(k, &(rt_case){.p = gqa, .kv_split = vals[i]});
    run_variants(
        k, &(rt_case){.p = attn_problem_make(1, 2, 1, 90, 400, 32, 32, true), .kv_split = vals[i]});
  }
  const attn_options win = {
      .window = true, .window_left = 300, .window_right = 0, .lse = (float *)1};
  attn_problem pw = attn_problem_make(1, 4, 1, 1, 2000, 32, 32, false);
  pw.opts = &win;
  run_variants(k, &(rt_case){.p = pw, .kv_split = 3});
  run_variants(k, &(rt_case){.p = attn_problem_make(1, 4, 1, 1, 1100, 64, 64, false),
                             .t = ATTN_DTYPE_Q8_0,
                             .kv_split = 4});
}

int main(int argc, char **argv) {
  const bool quick = argc > 1 && strcmp(argv[1], "--quick") == 0;
  size_t tested = 0;
  for (size_t i = 0; i < attn_kernel_count(); i++) {
    const attn_kernel *k = attn_kernel_at(i);
    if (k->regtile_count < 2 || !attn_kernel_available(k, NULL, 0)) continue;
    printf("testing %s (%d variants)\n", k->name, k->regtile_count);
    tested++;
    check_record(k);
    tile_edges(k, quick);
    paths(k);
    kv_split(k);
  }
  if (!tested) {
    printf("test_flash_regtiles: no kernel with register-tile variants on this CPU, skipped\n");
    return TEST_SKIP;
  }
  printf("%zu cases\n", g_cases);
  return test_finish("test_flash_regtiles");
}
