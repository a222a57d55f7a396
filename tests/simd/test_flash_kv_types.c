// SPDX-License-Identifier: MIT
// The SIMD kernels that read low-precision K/V natively (ATTN_CAP_KV_* bits: flash__*,
// tiled__*, omp__*) on every such type, on shapes derived from each record's
// register tiles (below, at and above: rows, keys, head dims) and on every path of the
// kernel (decode rows fused or in lanes, the tiled FA2 pass, split-KV decode; decode with
// softcap, ALiBi, a window, a mask and sinks). For each
// (kernel, type, shape) and 1 and 2 threads:
//   1. the kernel is native for the type: attn_kernel_kv_native, the workspace is the
//      kernel's own (no float32 copies added by attn_kernel_run) and *fallback is false;
//   2. its output passes the checker against the float64 reference computed from the
//      *stored* values (attn_dequantize_rows of the quantized K/V), and it writes
//      nothing past O;
//   3. it is bitwise identical to the same kernel on float32 copies of the stored values
//      (widening is exact, so the arithmetic must be the float32 path's), and bitwise
//      identical across thread counts.
// Inputs include tiny K/V (f16 subnormals, q8_0 subnormal scales) and large scores.
// Exit 77 when no kernel with a native K/V type is available. --quick: fewer cases.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attn.h"
#include "check/check.h"
#include "core/convert.h"
#include "size_set.h"
#include "test_util.h"

static size_t g_cases = 0;
enum { kGuard = 64 };
static const float kSentinel = 1234.5f;

typedef struct kv_case {
  attn_problem p;  // F32 shape
  attn_dist dist;
  float kv_scale;  // multiplies K and V before quantizing (tiny values: subnormals)
  attn_exec ex;
} kv_case;

static void run_one(const attn_kernel *k, attn_dtype t, const kv_case *c) {
  const attn_problem p32 = c->p;
  attn_problem pt = p32;
  pt.kv_dtype = t;
  char desc[200], err[256];
  const attn_check_case cc = {.problem = p32, .dist = c->dist, .seed = 9100 + g_cases++};
  attn_check_case_describe(&cc, desc, sizeof desc);
  if (!attn_problem_validate(&pt, err, sizeof err)) {
    EXPECT(0, "%s %s: invalid: %s", k->name, desc, err);
    return;
  }
  const size_t nq = attn_q_elems(&p32), nk = attn_k_elems(&p32), nv = attn_v_elems(&p32);
  const size_t no = attn_o_elems(&p32);
  const size_t krows = nk / (size_t)p32.head_dim_qk, vrows = nv / (size_t)p32.head_dim_v;
  const size_t kb = krows * attn_kv_row_bytes(t, p32.head_dim_qk);
  const size_t vb = vrows * attn_kv_row_bytes(t, p32.head_dim_v);
  float *q = malloc(nq * sizeof(float)), *kf = malloc(nk * sizeof(float));
  float *vf = malloc(nv * sizeof(float)), *kd = malloc(nk * sizeof(float));
  float *vd = malloc(nv * sizeof(float));
  void *kt = malloc(kb), *vt = malloc(vb);
  float *o[3];
  for (int i = 0; i < 3; i++) o[i] = malloc((no + kGuard) * sizeof(float));
  if (!q || !kf || !vf || !kd || !vd || !kt || !vt || !o[0] || !o[1] || !o[2]) {
    EXPECT(0, "out of memory");
    exit(1);
  }
  attn_check_fill(&cc, q, kf, vf);
  for (size_t i = 0; i < nk; i++) kf[i] *= c->kv_scale;
  for (size_t i = 0; i < nv; i++) vf[i] *= c->kv_scale;
  attn_quantize_rows(t, kf, krows, p32.head_dim_qk, kt);
  attn_quantize_rows(t, vf, vrows, p32.head_dim_v, vt);
  attn_dequantize_rows(t, kt, krows, p32.head_dim_qk, kd);
  attn_dequantize_rows(t, vt, vrows, p32.head_dim_v, vd);

  attn_check_prepared *pc = attn_check_prepare_inputs(&p32, q, kd, vd, err, sizeof err);
  EXPECT(pc != NULL, "cannot prepare %s: %s", desc, err);
  EXPECT(attn_kernel_kv_native(k, &pt), "%s is not native for %s", k->name, attn_dtype_name(t));
  const int threads[2] = {1, 2};
  for (int ti = 0; ti < 2 && pc; ti++) {
    attn_exec ex = c->ex;
    ex.threads = threads[ti];
    const size_t own = k->workspace ? k->workspace(&pt, &ex) : 0;
    const size_t ws_bytes = attn_kernel_workspace(k, &pt, &ex);
    EXPECT(ws_bytes == own, "%s %s %s: workspace %zu != the kernel's own %zu (float32 copies?)",
           k->name, attn_dtype_name(t), desc, ws_bytes, own);
    void *ws = ws_bytes ? aligned_alloc(64, (ws_bytes + 63) & ~(size_t)63) : NULL;
    for (size_t i = 0; i < no + kGuard; i++) o[ti][i] = kSentinel;
    bool fb = true;
    const int rc = attn_kernel_run(k, &pt, &ex, q, kt, vt, o[ti], ws, &fb);
    EXPECT(rc == ATTN_OK && !fb, "%s %s %s T%d: rc %d fallback %d", k->name, attn_dtype_name(t),
           desc, ex.threads, rc, (int)fb);
    for (size_t i = no; i < no + kGuard; i++)
      if (o[ti][i] != kSentinel) {
        EXPECT(0, "%s %s %s: wrote past O at +%zu", k->name, attn_dtype_name(t), desc, i - no);
        break;
      }
    attn_check_result r;
    EXPECT(attn_check_output(pc, o[ti], &r), "%s %s %s T%d: %s (err/tol %.3g)", k->name,
           attn_dtype_name(t), desc, ex.threads, r.message, r.worst_ratio);
    free(ws);
  }
  if (pc) {
    EXPECT(memcmp(o[0], o[1], no * sizeof(float)) == 0, "%s %s %s: 1 and 2 threads differ", k->name,
           attn_dtype_name(t), desc);
    // The float32 path of the same kernel on the stored values, 2 threads.
    attn_exec ex = c->ex;
    ex.threads = 2;
    const int rc = attn_kernel_call(k, &p32, &ex, q, kd, vd, o[2], err, sizeof err);
    EXPECT(rc == ATTN_OK, "%s f32 %s: %s", k->name, desc, err);
    size_t diff = 0, first = 0;
    for (size_t i = 0; i < no; i++)
      if (memcmp(&o[1][i], &o[2][i], sizeof(float)) != 0 && !diff++) first = i;
    EXPECT(diff == 0,
           "%s %s %s: %zu outputs differ from the float32 path on the stored values (first "
           "o[%zu] = %a vs %a)",
           k->name, attn_dtype_name(t), desc, diff, first, (double)o[1][first],
           (double)o[2][first]);
  }
  attn_check_prepared_free(pc);
  free(q), free(kf), free(vf), free(kd), free(vd), free(kt), free(vt);
  for (int i = 0; i < 3; i++) free(o[i]);
}

static void add_around(set64 *s, int64_t t) {
  add(s, t - 1), add(s, t), add(s, t + 1), add(s, 2 * t + 1);
}
static int64_t round32(int64_t x) {  // Q8_0 dims: whole blocks of 32
  return x < 32 ? 32 : (x + 31) / 32 * 32;
}

static void kernel_cases(const attn_kernel *k, attn_dtype t, bool quick) {
  const bool q8 = t == ATTN_DTYPE_Q8_0;
  const int w = k->vec_width;
  set64 dqk = {0}, dv = {0}, rows = {0}, keys = {0};
  if (q8) {
    add(&dqk, 32), add(&dqk, 64), add(&dqk, 96), add(&dqk, 128);
    add(&dv, 32), add(&dv, round32(k->pv_cols)), add(&dv, round32(k->pv_cols) + 32), add(&dv, 160);
  } else {
    add_around(&dqk, w), add(&dqk, 1), add(&dqk, 37), add(&dqk, 128);
    add_around(&dv, w), add_around(&dv, k->pv_cols), add(&dv, 20), add(&dv, 128);
  }
  add(&rows, 1), add(&rows, 2), add_around(&rows, k->qk_rows), add_around(&rows, k->pv_rows);
  add(&rows, 33);
  add(&keys, 1), add_around(&keys, k->qk_cols), add(&keys, 31), add(&keys, 33), add(&keys, 65);
  add(&keys, 300);
  const size_t before = g_cases;
  const attn_dist dists[3] = {ATTN_DIST_NORMAL, ATTN_DIST_UNIFORM, ATTN_DIST_LARGE};
  const size_t step = quick ? 3 : 1;
  // head dims (a prefill-ish and a decode row count)
  for (size_t i = 0; i < dqk.n; i += step)
    for (size_t j = 0; j < dv.n; j += quick ? 2 : 1) {
      kv_case c = {attn_problem_make(1, 2, 1, i % 2 ? 1 : 9, 45, dqk.v[i], dv.v[j], (i + j) % 2),
                   dists[(i + j) % 3],
                   1.0f,
                   {0}};
      run_one(k, t, &c);
    }
  // rows: fused (< qk_rows), lanes, tiled; self and cross, causal both
  for (size_t i = 0; i < rows.n; i += quick ? 2 : 1)
    for (int causal = 0; causal <= 1; causal++) {
      kv_case a = {
          attn_problem_make(1, 2, 1, rows.v[i], rows.v[i], q8 ? 64 : 24, q8 ? 32 : 20, causal),
          ATTN_DIST_UNIFORM,
          1.0f,
          {0}};
      run_one(k, t, &a);
      kv_case b = {attn_problem_make(1, 1, 1, rows.v[i], keys.v[i % keys.n], q8 ? 32 : 8,
                                     q8 ? 64 : 9, causal),
                   ATTN_DIST_NORMAL,
                   1.0f,
                   {0}};
      run_one(k, t, &b);
    }
  // keys around the Q·Kᵀ tile columns
  for (size_t i = 0; i < keys.n; i += quick ? 2 : 1)
    for (int causal = 0; causal <= 1; causal++) {
      kv_case c = {
          attn_problem_make(1, 3, 1, rows.v[i % rows.n], keys.v[i], q8 ? 32 : 17, 32, causal),
          ATTN_DIST_UNIFORM,
          1.0f,
          {0}};
      run_one(k, t, &c);
    }
  // decode: MHA (1 row), GQA (4 rows), MQA (8 and 16 rows in lanes or tiles), split-KV
  const int64_t groups[][2] = {{4, 4}, {8, 2}, {8, 1}, {16, 1}, {12, 1}};
  const int64_t dkv[] = {31, 64, 1500};
  for (size_t g = 0; g < 5; g++)
    for (size_t s = 0; s < 3; s += quick ? 2 : 1) {
      kv_case c = {attn_problem_make(1, groups[g][0], groups[g][1], 1, dkv[s], 64, 64, s == 1),
                   dists[(g + s) % 3],
                   1.0f,
                   {0}};
      run_one(k, t, &c);
    }
  // decode with options (flash_opts.h inside the typed decode paths): softcap and ALiBi,
  // a window with a bounded left side, a mask with −inf keys and sinks; MHA (one row),
  // GQA (4 fused rows), MQA (rows in lanes); split-KV at 2 threads
  static float mask[1500], sinks[8];
  for (int j = 0; j < 1500; j++) mask[j] = j % 7 == 3 ? -INFINITY : 0.25f * (float)(j % 5);
  for (int h = 0; h < 8; h++) sinks[h] = 0.5f - 0.1f * (float)h;
  const attn_options os[3] = {
      {.softcap = 20.0f, .alibi_max_bias = 8.0f},
      {.window = true, .window_left = 499, .window_right = 0},
      {.mask = mask, .sinks = sinks},
  };
  const int64_t og[3][2] = {{1, 1}, {4, 1}, {8, 1}};
  // only for kernels that compute these options themselves (the others take the portable
  // option fallback, on float32 copies: not the typed path under test)
  const unsigned opt_caps = ATTN_CAP_OPT_SOFTCAP | ATTN_CAP_OPT_ALIBI | ATTN_CAP_OPT_WINDOW |
                            ATTN_CAP_OPT_MASK | ATTN_CAP_OPT_SINKS;
  for (size_t g = 0; g < ((k->caps & opt_caps) == opt_caps ? 3u : 0u); g++)
    for (size_t o = 0; o < 3; o++) {
      if (quick && (g + o) % 2) continue;
      kv_case c = {attn_problem_make(1, og[g][0], og[g][1], 1, 1500, 64, 64, true),
                   o == 0 ? ATTN_DIST_LARGE : ATTN_DIST_NORMAL,
                   1.0f,
                   {0}};
      c.p.opts = &os[o];
      run_one(k, t, &c);
    }
  // tiny values: f16 subnormals (2e-5), q8_0 block scales that are f16 subnormals (1e-3)
  const float tiny[] = {2e-5f, 1e-3f};
  for (size_t i = 0; i < 2; i++) {
    kv_case a = {attn_problem_make(1, 2, 2, 1, 200, 64, 32, false), ATTN_DIST_NORMAL, tiny[i], {0}};
    run_one(k, t, &a);
    kv_case b = {attn_problem_make(1, 2, 1, 40, 70, 64, 32, true), ATTN_DIST_NORMAL, tiny[i], {0}};
    run_one(k, t, &b);
  }
  // small and odd tiles: many K/V tiles per task in the tiled pass, batch > 1
  const int tkvs[] = {1, 16, 33, 64};
  for (size_t i = 0; i < 4; i += quick ? 2 : 1) {
    kv_case c = {attn_problem_make(2, 4, 2, 50, 70, q8 ? 64 : 33, q8 ? 32 : 19, i % 2),
                 ATTN_DIST_NORMAL,
                 1.0f,
                 {.tile_q = 13, .tile_kv = tkvs[i]}};
    run_one(k, t, &c);
  }
  printf("%s %s: %zu cases from w%d qk%dx%d pv%dx%d\n", k->name, attn_dtype_name(t),
         g_cases - before, w, k->qk_rows, k->qk_cols, k->pv_rows, k->pv_cols);
}

int main(int argc, char **argv) {
  const bool quick = argc > 1 && strcmp(argv[1], "--quick") == 0;
  size_t n = 0;
  const attn_dtype types[3] = {ATTN_DTYPE_F16, ATTN_DTYPE_BF16, ATTN_DTYPE_Q8_0};
  for (size_t i = 0; i < attn_kernel_count(); i++) {
    const attn_kernel *k = attn_kernel_at(i);
    if (!k->required_isa || !attn_kernel_available(k, NULL, 0)) continue;
    for (int ti = 0; ti < 3; ti++) {
      if (!(k->caps & attn_dtype_cap(types[ti]))) continue;
      kernel_cases(k, types[ti], quick);
      n++;
    }
  }
  if (!n) {
    printf("test_flash_kv_types: no SIMD kernel reads a low-precision K/V type here, skipped\n");
    return TEST_SKIP;
  }
  printf("%zu cases\n", g_cases);
  return test_finish("test_flash_kv_types");
}
