// SPDX-License-Identifier: MIT
// `bench --export-inputs` (harness/bench/inputs.h) on a hand-made plan: points of one
// problem share one input set whatever their kernel and threads; a point with options
// gets its own set with the option arrays as files and the options in the index; every
// file holds exactly attn_bench_fill_inputs' values (what the timed loop reads) and the
// index's digest is theirs; the digest changes with any one element, any option value and
// a replaced option file (the mask). A target that is a file is refused with a message. (The Python
// side: tests/baselines, "inputs".)
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "attn.h"
#include "bench/inputs.h"
#include "io/npy.h"

static int g_failures;
#define EXPECT(cond, ...)                                  \
  do {                                                     \
    if (!(cond)) {                                         \
      g_failures++;                                        \
      fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
      fprintf(stderr, __VA_ARGS__);                        \
      fputc('\n', stderr);                                 \
    }                                                      \
  } while (0)

static char *slurp(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  static char buf[1 << 16];
  const size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = '\0';
  return buf;
}

// The file in dir holds exactly want[0..n) with the given shape.
static void expect_file(const char *dir, const char *file, const float *want, size_t n, int ndim) {
  char path[512], err[600];
  snprintf(path, sizeof path, "%s/%s", dir, file);
  npy_array a = {0};
  const bool ok = npy_read_f32(path, &a, err, sizeof err);
  EXPECT(ok, "%s: %s", file, err);
  if (ok) {
    EXPECT(a.count == n && a.ndim == ndim, "%s: %zu elements, %d-D", file, a.count, a.ndim);
    EXPECT(a.count == n && memcmp(a.data, want, n * sizeof *want) == 0, "%s: other values", file);
  }
  npy_free(&a);
}

// The digest of problem p (its option values) over the arrays read back from the export
// in dir: in1.q/k/v.npy, in1.sinks.npy, in1.mask.npy (what a baseline would run on).
static bool digest_from_files(const char *dir, const attn_problem *p, uint32_t *out) {
  const char *names[5] = {"in1.q.npy", "in1.k.npy", "in1.v.npy", "in1.sinks.npy", "in1.mask.npy"};
  npy_array a[5] = {{0}};
  bool ok = true;
  for (int i = 0; i < 5 && ok; i++) {
    char path[512], err[600];
    snprintf(path, sizeof path, "%s/%s", dir, names[i]);
    ok = npy_read_f32(path, &a[i], err, sizeof err);
  }
  if (ok) {
    attn_options o = *p->opts;
    o.sinks = a[3].data, o.mask = a[4].data;
    attn_problem x = *p;
    x.opts = &o;
    *out = attn_bench_inputs_digest(&x, a[0].data, a[1].data, a[2].data);
  }
  for (int i = 0; i < 5; i++) npy_free(&a[i]);
  return ok;
}

static attn_bench_point point(const char *kernel, const attn_problem *p, int threads) {
  attn_bench_point pt = {.kernel = attn_kernel_find(kernel), .problem = *p, .threads = threads};
  attn_bench_point_name(pt.kernel, p, threads, pt.name, sizeof pt.name);
  return pt;
}

int main(void) {
  char dir[] = "/tmp/attnbench-export-test.XXXXXX";
  if (!mkdtemp(dir)) return 1;
  const attn_problem plain = attn_problem_make(2, 4, 2, 5, 7, 8, 8, true);
  attn_problem with = attn_problem_make(1, 2, 1, 3, 6, 4, 4, false);
  const float sinks[2] = {0.5f, -1.25f};
  float mask[3 * 6];
  for (int i = 0; i < 18; i++) mask[i] = (float)(i % 5) - 2.0f;
  const attn_options opts = {.window = true,
                             .window_left = 2,
                             .window_right = ATTN_WINDOW_UNBOUNDED,
                             .softcap = 30.0f,
                             .sinks = sinks,
                             .mask = mask};
  with.opts = &opts;
  attn_bench_point pts[3] = {point("naive", &plain, 1), point("blocked", &plain, 1),
                             point("blocked", &with, 1)};
  const attn_bench_plan plan = {.points = pts, .count = 3};
  char err[600];
  EXPECT(attn_bench_export_inputs(&plan, dir, err, sizeof err), "export: %s", err);

  char path[512];
  snprintf(path, sizeof path, "%s/index.json", dir);
  const char *ix = slurp(path);
  EXPECT(ix != NULL, "no index.json");
  if (!ix) ix = "";
  // Two sets: the plain problem once for both kernels, the one with options apart.
  EXPECT(strstr(ix, "\"in0\"") && strstr(ix, "\"in1\"") && !strstr(ix, "\"in2\""),
         "want two input sets:\n%s", ix);
  char want[ATTN_BENCH_NAME_MAX + 64];
  snprintf(want, sizeof want, "\"%s\": {\"inputs\": \"in0\"", pts[0].name);
  EXPECT(strstr(ix, want), "missing %s", want);
  snprintf(want, sizeof want, "\"%s\": {\"inputs\": \"in0\"", pts[1].name);
  EXPECT(strstr(ix, want), "missing %s", want);
  snprintf(want, sizeof want, "\"%s\": {\"inputs\": \"in1\"", pts[2].name);
  EXPECT(strstr(ix, want), "missing %s", want);
  EXPECT(strstr(ix, "\"key\": \"B2/H4/KV2/Sq5/Skv7/D8/causal\""), "key of in0:\n%s", ix);
  EXPECT(strstr(ix, "\"window\": true, \"window_left\": 2, \"window_right\": -1") &&
             strstr(ix, "\"softcap\": 30,") && strstr(ix, "\"sinks\": \"in1.sinks.npy\"") &&
             strstr(ix, "\"mask\": \"in1.mask.npy\""),
         "options of in1:\n%s", ix);
  EXPECT(!strstr(ix, "alibi_slopes\": \""), "no slopes file expected:\n%s", ix);

  // The files hold exactly what the timed loop reads; the digest is theirs.
  const attn_problem *ps[2] = {&plain, &with};
  for (int s = 0; s < 2; s++) {
    const attn_problem *p = ps[s];
    const size_t nq = attn_q_elems(p), nk = attn_k_elems(p), nv = attn_v_elems(p);
    float *q = malloc(nq * sizeof *q), *k = malloc(nk * sizeof *k), *v = malloc(nv * sizeof *v);
    attn_bench_fill_inputs(p, q, k, v);
    char f[64];
    snprintf(f, sizeof f, "in%d.q.npy", s);
    expect_file(dir, f, q, nq, 4);
    snprintf(f, sizeof f, "in%d.k.npy", s);
    expect_file(dir, f, k, nk, 4);
    snprintf(f, sizeof f, "in%d.v.npy", s);
    expect_file(dir, f, v, nv, 4);
    const uint32_t d = attn_bench_inputs_digest(p, q, k, v);
    snprintf(want, sizeof want, "\"digest\": %lu,", (unsigned long)d);
    EXPECT(strstr(ix, want), "set %d: digest %s not in the index", s, want);
    v[nv - 1] = -v[nv - 1] + 1.0f;  // any one element changes the digest
    EXPECT(attn_bench_inputs_digest(p, q, k, v) != d, "digest blind to V's last element");
    free(q);
    free(k);
    free(v);
  }
  expect_file(dir, "in1.sinks.npy", sinks, 2, 1);
  expect_file(dir, "in1.mask.npy", mask, 18, 2);

  // The digest covers the option arrays and values: the problem recomputed from the
  // export's files has the index's digest; with the mask file replaced (one entry) it
  // does not — a baseline run on it reads as another problem (bench-baselines refuses).
  uint32_t from_files = 0;
  EXPECT(digest_from_files(dir, &with, &from_files), "reading the export back");
  snprintf(want, sizeof want, "\"digest\": %lu,", (unsigned long)from_files);
  EXPECT(strstr(ix, want), "the digest of the exported files (%s) is not the index's", want);
  float other[3 * 6];
  memcpy(other, mask, sizeof other);
  other[7] += 1.0f;
  const int64_t m2[2] = {3, 6};
  snprintf(path, sizeof path, "%s/in1.mask.npy", dir);
  EXPECT(npy_write_f32(path, other, 2, m2, err, sizeof err), "replacing the mask: %s", err);
  uint32_t replaced = 0;
  EXPECT(digest_from_files(dir, &with, &replaced) && replaced != from_files,
         "a replaced mask file keeps the digest %lu", (unsigned long)replaced);
  // every option value and flag enters it too (one at a time, against the original)
  {
    const size_t nq = attn_q_elems(&with), nk = attn_k_elems(&with), nv = attn_v_elems(&with);
    float *q = malloc(nq * sizeof *q), *k = malloc(nk * sizeof *k), *v = malloc(nv * sizeof *v);
    attn_bench_fill_inputs(&with, q, k, v);
    attn_problem x = with;
    attn_options xo = opts;
    x.opts = &xo;
    const uint32_t d0 = attn_bench_inputs_digest(&x, q, k, v);
    EXPECT(d0 == from_files, "digest of the options in memory");
    float lse_marker = 0.0f;
    const float slopes[2] = {0.5f, 0.25f};
    const char *changes[] = {"softcap",  "window_left", "window_right", "window",    "align",
                             "max_bias", "slopes",      "lse",          "sinks",     "mask",
                             "per_head", "scale",       "causal",       "no options"};
    for (size_t c = 0; c < sizeof changes / sizeof changes[0]; c++) {
      x = with, xo = opts, x.opts = &xo;
      const char *w = changes[c];
      if (!strcmp(w, "softcap")) xo.softcap = 31.0f;
      if (!strcmp(w, "window_left")) xo.window_left = 3;
      if (!strcmp(w, "window_right")) xo.window_right = 0;
      if (!strcmp(w, "window")) xo.window = false;
      if (!strcmp(w, "align")) xo.align = ATTN_ALIGN_TOP_LEFT;
      if (!strcmp(w, "max_bias")) xo.alibi_max_bias = 8.0f;
      if (!strcmp(w, "slopes")) xo.alibi_slopes = slopes;
      if (!strcmp(w, "lse")) xo.lse = &lse_marker;
      if (!strcmp(w, "sinks")) xo.sinks = NULL;
      if (!strcmp(w, "mask")) xo.mask = NULL;
      if (!strcmp(w, "scale")) x.scale = nextafterf(x.scale, 1.0f);
      if (!strcmp(w, "causal")) x.causal = true;
      if (!strcmp(w, "no options")) x.opts = NULL;
      if (!strcmp(w, "per_head")) {  // the same values read as [batch][heads][seq_q][seq_kv]
        x.heads = 1, x.kv_heads = 1, x.batch = 1;  // 1x1 heads: the same 18 mask values
        xo.mask_per_head = false;
        attn_options yo = xo;
        yo.mask_per_head = true;
        attn_problem y = x;
        y.opts = &yo;
        EXPECT(attn_bench_inputs_digest(&x, q, k, v) != attn_bench_inputs_digest(&y, q, k, v),
               "digest blind to mask_per_head");
        continue;
      }
      EXPECT(attn_bench_inputs_digest(&x, q, k, v) != d0, "digest blind to %s", w);
    }
    free(q);
    free(k);
    free(v);
  }

  // A file where the directory should be: refused, with the path in the message.
  snprintf(path, sizeof path, "%s/in0.q.npy", dir);
  EXPECT(!attn_bench_export_inputs(&plan, path, err, sizeof err) && strstr(err, "in0.q.npy"),
         "exporting into a file must fail (%s)", err);

  const char *files[] = {"index.json", "in0.q.npy", "in0.k.npy",     "in0.v.npy",   "in1.q.npy",
                         "in1.k.npy",  "in1.v.npy", "in1.sinks.npy", "in1.mask.npy"};
  for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
    snprintf(path, sizeof path, "%s/%s", dir, files[i]);
    unlink(path);
  }
  rmdir(dir);
  if (g_failures) return 1;
  printf("export: 2 sets for 3 points, files == timed inputs, digests, options, refusal\n");
  return 0;
}
