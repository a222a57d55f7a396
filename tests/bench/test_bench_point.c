// SPDX-License-Identifier: MIT
// A kernel that fails the correctness check must be reported as an error through
// Google Benchmark and never timed; a correct kernel on the same shape is timed and
// carries its counters. Runs bench/point.c + the gbench shim with a deliberately broken
// kernel that is not in the registry. Then: a results save that fails stops the sweep —
// no kernel runs after it — and attn_gb_run reports it. And the roofline score: decode is
// bandwidth-bound, prefill FMA-bound, and %roofline = 100 · t_roof / time.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attn.h"
#include "bench/gbench/gbench.h"
#include "bench/point.h"
#include "common/util.h"
#include "io/fileio.h"

static int g_broken_calls;

// blocked, then one output element off by 1e-2 — well beyond the checker's tolerance.
static int broken_run(const attn_problem *p, const attn_exec *exec, const float *q, const void *k,
                      const void *v, float *o, void *ws) {
  g_broken_calls++;
  const attn_kernel *b = attn_kernel_find("blocked");
  const int rc = b->run(p, exec, q, k, v, o, ws);
  o[attn_o_elems(p) / 2] += 1e-2f;
  return rc;
}

static size_t broken_ws(const attn_problem *p, const attn_exec *exec) {
  return attn_kernel_workspace(attn_kernel_find("blocked"), p, exec);
}

static const attn_kernel kBroken = {.name = "broken",
                                    .summary = "test only",
                                    .caps = ATTN_CAP_ALL_SHAPES,
                                    .workspace = broken_ws,
                                    .run = broken_run};

typedef struct seen {
  int results, errors;
  char message[512];
  double gflops_good;
  double seconds_good, roofline_good, memory_bound_good, attainable_good;
} seen;

static void progress(void *user, const attn_gb_result *r, size_t done, size_t total) {
  (void)done;
  (void)total;
  seen *s = user;
  s->results++;
  if (r->error) {
    s->errors++;
    snprintf(s->message, sizeof s->message, "%s", r->error_message);
  } else {
    s->gflops_good = attn_gb_result_counter(r, "GFLOP/s", -1);
    s->seconds_good = r->seconds;
    s->roofline_good = attn_gb_result_counter(r, "%roofline", -1);
    s->memory_bound_good = attn_gb_result_counter(r, "memory_bound", -1);
    s->attainable_good = attn_gb_result_counter(r, "roofline_GFLOP/s", -1);
  }
}

// The results policy of cmd_bench in miniature: every document replaces the file.
static bool save_to_file(void *user, const char *json, size_t len) {
  char err[512];
  const attn_buf part = {json, len};
  if (attn_write_file_atomic(user, &part, 1, err, sizeof err)) return true;
  fprintf(stderr, "save failed: %s\n", err);
  return false;
}

static int g_counted_calls;
static int counted_run(const attn_problem *p, const attn_exec *exec, const float *q, const void *k,
                       const void *v, float *o, void *ws) {
  g_counted_calls++;
  return attn_kernel_find("blocked")->run(p, exec, q, k, v, o, ws);
}
static const attn_kernel kCounted = {.name = "counted",
                                     .summary = "test only",
                                     .caps = ATTN_CAP_ALL_SHAPES,
                                     .workspace = broken_ws,
                                     .run = counted_run};

// Fails at the third save (context, first point, second point's results).
static int g_saves, g_calls_at_failure = -1;
static bool save_then_fail(void *user, const char *json, size_t len) {
  (void)user;
  (void)json;
  (void)len;
  if (++g_saves < 3) return true;
  g_calls_at_failure = g_counted_calls;
  return false;
}

static int failures;
#define EXPECT(c)                                                            \
  do {                                                                       \
    if (!(c)) {                                                              \
      fprintf(stderr, "%s:%d: EXPECT(%s) failed\n", __FILE__, __LINE__, #c); \
      failures++;                                                            \
    }                                                                        \
  } while (0)

static bool close_to(double a, double b) {
  return fabs(a - b) <= 1e-9 * fabs(b);
}

// The roofline on two real shapes with this machine's kind of limits (235 GFLOP/s FMA
// peak, 35 GB/s read bandwidth: ridge point 6.7 flop/byte).
static void test_roofline_limits(void) {
  bool mem = false;
  // decode: Sq1 Skv32768 D128, 8 heads: 0.5 flop/byte -> the bandwidth term
  const attn_problem dec = attn_problem_make(1, 8, 8, 1, 32768, 128, 128, false);
  const double fd = attn_flops(&dec), bd = (double)attn_tensor_bytes(&dec);
  double t = attn_bench_roofline_seconds(fd, bd, 235, 35, &mem);
  EXPECT(mem);
  EXPECT(close_to(t, bd / 35e9));
  // prefill: S2048 D64, 8 heads: 512 flop/byte -> the FMA term
  const attn_problem pre = attn_problem_make(1, 8, 8, 2048, 2048, 64, 64, false);
  const double fp = attn_flops(&pre), bp = (double)attn_tensor_bytes(&pre);
  mem = true;
  t = attn_bench_roofline_seconds(fp, bp, 235, 35, &mem);
  EXPECT(!mem);
  EXPECT(close_to(t, fp / 235e9));
  // the larger term always wins: t_roof = max(flop / peak, bytes / bandwidth)
  EXPECT(close_to(attn_bench_roofline_seconds(1e9, 1e9, 100, 10, &mem), 0.1) && mem);
  EXPECT(close_to(attn_bench_roofline_seconds(1e9, 1e9, 10, 100, &mem), 0.1) && !mem);
  // an unknown limit gives no score
  mem = true;
  EXPECT(attn_bench_roofline_seconds(fp, bp, 0, 35, &mem) == 0 && !mem);
  EXPECT(attn_bench_roofline_seconds(fp, bp, 235, 0, NULL) == 0);
}

int main(int argc, char **argv) {
  test_roofline_limits();
  const char *out = argc > 1 ? argv[1] : "test_bench_point.json";
  char a0[] = "test", a1[] = "--benchmark_min_time=0.01";
  char *gb_argv[] = {a0, a1, NULL};
  int gb_argc = 2;
  EXPECT(attn_gb_init(&gb_argc, gb_argv));

  attn_bench_point pts[2];
  memset(pts, 0, sizeof pts);
  const attn_kernel *kernels[2] = {&kBroken, attn_kernel_find("blocked")};
  attn_bench_state states[2];
  memset(states, 0, sizeof states);
  for (int i = 0; i < 2; i++) {
    pts[i].kernel = kernels[i];
    pts[i].problem = attn_problem_make(1, 4, 2, 33, 47, 16, 16, true);
    pts[i].threads = 1;
    attn_bench_point_name(pts[i].kernel, &pts[i].problem, 1, pts[i].name, sizeof pts[i].name);
    states[i].point = &pts[i];
    states[i].peak_gflops = 50;  // made-up limits: the counters must follow them
    states[i].bandwidth_gbs = 0.5;
    const attn_gb_def def = {
        .name = pts[i].name, .run = attn_bench_run_point, .user = &states[i], .real_time = true};
    EXPECT(attn_gb_register(&def));
  }
  seen s = {0};
  const attn_gb_run_opts opts = {.save_json = save_to_file,
                                 .save_user = (void *)out,
                                 .display = "none",
                                 .plain_names = true,
                                 .progress = progress,
                                 .progress_user = &s};
  EXPECT(attn_gb_run(&opts) == 2);
  attn_bench_release_buffers();
  attn_bench_release_reference();

  EXPECT(s.results == 2);
  EXPECT(s.errors == 1);
  EXPECT(strstr(s.message, "failed the correctness check") != NULL);
  EXPECT(g_broken_calls == 1);  // the check's call only: never timed
  EXPECT(s.gflops_good > 0);
  EXPECT(states[0].checked && !states[0].check_pass);
  EXPECT(states[1].checked && states[1].check_pass);
  {  // %roofline = 100 · t_roof / time, with the limits of the state and the right bound
    const attn_problem *p = &pts[1].problem;
    bool mem = false;
    const double t_roof =
        attn_bench_roofline_seconds(attn_flops(p), (double)attn_tensor_bytes(p), 50, 0.5, &mem);
    EXPECT(t_roof > 0 && s.seconds_good > 0);
    EXPECT(fabs(s.roofline_good - 100 * t_roof / s.seconds_good) <= 1e-6 * s.roofline_good);
    EXPECT(s.memory_bound_good == (mem ? 1 : 0));
    EXPECT(close_to(s.attainable_good, attn_flops(p) * 1e-9 / t_roof));
  }

  // The results file holds both, the broken one marked as an error.
  FILE *f = fopen(out, "r");
  EXPECT(f != NULL);
  if (f) {
    static char text[1 << 16];
    const size_t n = fread(text, 1, sizeof text - 1, f);
    text[n] = '\0';
    fclose(f);
    EXPECT(strstr(text, "\"error_occurred\": true") != NULL);
    EXPECT(strstr(text, "broken/B1/H4/KV2/Sq33/Skv47/D16/causal/T1") != NULL);
    EXPECT(strstr(text, "\"name\": \"blocked/B1/H4/KV2/Sq33/Skv47/D16/causal/T1\"") != NULL);
  }
  // A failed save stops the sweep: the points after it never call their kernel.
  attn_bench_point cp[3];
  attn_bench_state cs[3];
  memset(cp, 0, sizeof cp);
  memset(cs, 0, sizeof cs);
  for (int i = 0; i < 3; i++) {
    cp[i].kernel = &kCounted;
    cp[i].problem = attn_problem_make(1, 2, 2, 8 + i, 8, 16, 16, false);
    cp[i].threads = 1;
    attn_bench_point_name(cp[i].kernel, &cp[i].problem, 1, cp[i].name, sizeof cp[i].name);
    cs[i].point = &cp[i];
    const attn_gb_def def = {
        .name = cp[i].name, .run = attn_bench_run_point, .user = &cs[i], .real_time = true};
    EXPECT(attn_gb_register(&def));
  }
  seen s2 = {0};
  const attn_gb_run_opts stop_opts = {
      .save_json = save_then_fail, .display = "none", .progress = progress, .progress_user = &s2};
  EXPECT(attn_gb_run(&stop_opts) == (size_t)-1);
  attn_bench_release_buffers();
  attn_bench_release_reference();
  EXPECT(g_saves == 3);                           // no save attempted after the failure
  EXPECT(g_calls_at_failure > 0);                 // the first two points ran
  EXPECT(g_counted_calls == g_calls_at_failure);  // nothing ran after the failed save
  EXPECT(cs[1].checked && !cs[2].checked);
  EXPECT(s2.results == 1);  // the point whose save failed is not reported as finished

  if (failures) {
    fprintf(stderr, "test_bench_point: %d failure(s); last error message: %s\n", failures,
            s.message);
    return 1;
  }
  printf("test_bench_point: broken kernel reported as an error and not timed; blocked timed\n");
  return 0;
}
