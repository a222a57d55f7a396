// SPDX-License-Identifier: MIT
// Bench points with attention options (bench/config.h attn_bench_opts) reach the kernel
// and its correctness check: a kernel that claims to handle every option natively but
// ignores one of them fails the check of a point with that option (reported as an error,
// never timed) and passes the same point without it; blocked passes every option; a
// kernel with no native option runs the portable fallback on option points (its own
// entry point is never called there) and the `fallback` counter says so; the option
// counters carry the point's values. Runs bench/point.c + the gbench shim with kernels
// that are not in the registry.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attn.h"
#include "bench/config.h"
#include "bench/gbench/gbench.h"
#include "bench/inputs.h"
#include "bench/point.h"

static int failures;
#define EXPECT(c, ...)                                      \
  do {                                                      \
    if (!(c)) {                                             \
      fprintf(stderr, "%s:%d: FAIL: ", __FILE__, __LINE__); \
      fprintf(stderr, __VA_ARGS__);                         \
      fputc('\n', stderr);                                  \
      failures++;                                           \
    }                                                       \
  } while (0)

// Which option the "ignoring" kernel drops (one of kOptions' indices).
enum { kAlign, kWindow, kSoftcap, kAlibi, kSinks, kMask, kLse, kNumOptions };
static const char *const kOptionNames[kNumOptions] = {"align", "window", "softcap", "alibi",
                                                      "sinks", "mask",   "lse"};
static int g_ignore = -1;

static void set_option(attn_bench_opts *o, int which) {
  switch (which) {
    case kAlign:
      o->align = ATTN_ALIGN_TOP_LEFT;
      break;
    case kWindow:
      o->window = true;
      o->window_left = 5;
      o->window_right = 0;
      break;
    case kSoftcap:
      o->softcap = 2.0f;
      break;
    case kAlibi:
      o->alibi_max_bias = 8.0f;
      break;
    case kSinks:
      o->sinks = true;
      break;
    case kMask:
      o->mask = true;
      break;
    default:
      o->lse = true;
      break;
  }
}

// blocked (native for every option) on the problem with option g_ignore removed.
static int ignoring_run(const attn_problem *p, const attn_exec *exec, const float *q, const void *k,
                        const void *v, float *o, void *ws) {
  attn_options opts = p->opts ? *p->opts : (attn_options){0};
  switch (g_ignore) {
    case kAlign:
      opts.align = ATTN_ALIGN_BOTTOM_RIGHT;
      break;
    case kWindow:
      opts.window = false;
      break;
    case kSoftcap:
      opts.softcap = 0.0f;
      break;
    case kAlibi:
      opts.alibi_max_bias = 0.0f;
      break;
    case kSinks:
      opts.sinks = NULL;
      break;
    case kMask:
      opts.mask = NULL;
      break;
    case kLse:
      opts.lse = NULL;  // the LSE output stays as the checker filled it (NaN)
      break;
    default:
      break;
  }
  attn_problem q2 = *p;
  q2.opts = p->opts ? &opts : NULL;
  return attn_kernel_find("blocked")->run(&q2, exec, q, k, v, o, ws);
}

static size_t blocked_ws(const attn_problem *p, const attn_exec *exec) {
  return attn_kernel_workspace(attn_kernel_find("blocked"), p, exec);
}

static const attn_kernel kIgnoring = {.name = "ignoring",
                                      .summary = "test only: claims every option, drops one",
                                      .caps = ATTN_CAP_ALL_SHAPES | ATTN_CAP_OPT_ALL,
                                      .workspace = blocked_ws,
                                      .run = ignoring_run};

// No native option: its entry point must never see a problem with options.
static int g_plain_calls_with_opts, g_plain_calls;
static int plain_run(const attn_problem *p, const attn_exec *exec, const float *q, const void *k,
                     const void *v, float *o, void *ws) {
  g_plain_calls++;
  if (p->opts && attn_problem_options_used(p)) g_plain_calls_with_opts++;
  attn_problem q2 = *p;
  q2.opts = NULL;  // wrong for option problems, on purpose: only the fallback may run them
  return attn_kernel_find("blocked")->run(&q2, exec, q, k, v, o, ws);
}

static const attn_kernel kPlain = {.name = "plain",
                                   .summary = "test only: no native option",
                                   .caps = ATTN_CAP_ALL_SHAPES,
                                   .workspace = blocked_ws,
                                   .run = plain_run};

typedef struct record {
  bool error;
  char message[256];
  double fallback, align, wl, wr, softcap, alibi, sinks, mask, lse, flop, check_sq;
} record;

typedef struct seen {
  int results;
  record r[8];
} seen;

static void progress(void *user, const attn_gb_result *r, size_t done, size_t total) {
  (void)total;
  seen *s = user;
  s->results++;
  if (done == 0 || done > 8) return;
  record *e = &s->r[done - 1];
  e->error = r->error;
  if (r->error) snprintf(e->message, sizeof e->message, "%s", r->error_message);
  e->fallback = attn_gb_result_counter(r, "fallback", -9);
  e->align = attn_gb_result_counter(r, "align", -9);
  e->wl = attn_gb_result_counter(r, "window_left", -9);
  e->wr = attn_gb_result_counter(r, "window_right", -9);
  e->softcap = attn_gb_result_counter(r, "softcap", -9);
  e->alibi = attn_gb_result_counter(r, "alibi", -9);
  e->sinks = attn_gb_result_counter(r, "sinks", -9);
  e->mask = attn_gb_result_counter(r, "mask", -9);
  e->lse = attn_gb_result_counter(r, "lse", -9);
  e->flop = attn_gb_result_counter(r, "flop", -9);
  e->check_sq = attn_gb_result_counter(r, "check_Sq", -9);
}

// A group of points run in one attn_gb_run (in order; results in the same order).
typedef struct group {
  int n;
  attn_bench_point pt[8];
  attn_bench_state st[8];
  seen seen;
} group;

static void add_point(group *g, const attn_kernel *k, const attn_bench_opts *o) {
  attn_bench_point *pt = &g->pt[g->n];
  memset(pt, 0, sizeof *pt);
  pt->kernel = k;
  pt->problem = attn_problem_make(1, 4, 2, 33, 47, 16, 16, true);
  if (o) pt->opts = *o;
  pt->threads = 1;
  attn_bench_point_name(k, &pt->problem, 1, pt->name, sizeof pt->name);
  const size_t len = strlen(pt->name);
  attn_bench_opts_name(&pt->opts, pt->name + len, sizeof pt->name - len);
  memset(&g->st[g->n], 0, sizeof g->st[g->n]);
  g->st[g->n].point = pt;
  g->n++;
}

static void run_group(group *g) {
  for (int i = 0; i < g->n; i++) {
    const attn_gb_def def = {
        .name = g->pt[i].name, .run = attn_bench_run_point, .user = &g->st[i], .real_time = true};
    EXPECT(attn_gb_register(&def), "register %s", g->pt[i].name);
  }
  memset(&g->seen, 0, sizeof g->seen);
  const attn_gb_run_opts opts = {
      .display = "none", .plain_names = true, .progress = progress, .progress_user = &g->seen};
  EXPECT(attn_gb_run(&opts) == (size_t)g->n, "every point of the group ran");
  EXPECT(g->seen.results == g->n, "every point reported (%d of %d)", g->seen.results, g->n);
  attn_bench_release_buffers();
  attn_bench_release_reference();
}

int main(void) {
  char a0[] = "test", a1[] = "--benchmark_min_time=0.001";
  char *gb_argv[] = {a0, a1, NULL};
  int gb_argc = 2;
  EXPECT(attn_gb_init(&gb_argc, gb_argv), "gbench init");

  // The sinks a point uses: deterministic, finite, not all equal, 2·N(0,1)-sized.
  float s1[64], s2[64];
  attn_bench_sinks(64, ATTN_BENCH_SINK_SEED, s1);
  attn_bench_sinks(64, ATTN_BENCH_SINK_SEED, s2);
  double sum = 0, sq = 0;
  for (int h = 0; h < 64; h++) {
    EXPECT(isfinite(s1[h]) && s1[h] == s2[h], "sink %d deterministic and finite", h);
    sum += s1[h];
    sq += (double)s1[h] * s1[h];
  }
  const double sd = sqrt(sq / 64 - (sum / 64) * (sum / 64));
  EXPECT(sd > 1.0 && sd < 3.5, "sinks spread like 2·N(0,1) (sd %.3f)", sd);

  // Per option: the ignoring kernel without it (passes), with it (fails: the option
  // reached the check), blocked with it (passes, native), plain with it (the fallback).
  static group g[kNumOptions];
  for (int w = 0; w < kNumOptions; w++) {
    const char *n = kOptionNames[w];
    attn_bench_opts o;
    memset(&o, 0, sizeof o);
    set_option(&o, w);
    add_point(&g[w], &kIgnoring, NULL);
    add_point(&g[w], &kIgnoring, &o);
    add_point(&g[w], attn_kernel_find("blocked"), &o);
    add_point(&g[w], &kPlain, &o);
    EXPECT(strcmp(g[w].pt[1].name, g[w].pt[0].name) != 0, "%s: names differ (%s)", n,
           g[w].pt[1].name);
    g_ignore = w;
    run_group(&g[w]);
    const record *r = g[w].seen.r;
    EXPECT(!r[0].error, "%s: the ignoring kernel passes a point without it: %s", n, r[0].message);
    EXPECT(r[1].error && strstr(r[1].message, "correctness check") != NULL,
           "%s: a kernel ignoring it fails the point's check (got: %s)", n,
           r[1].error ? r[1].message : "no error");
    EXPECT(!r[2].error, "%s: blocked passes: %s", n, r[2].message);
    EXPECT(r[2].fallback == 0, "%s: blocked is native (fallback %g)", n, r[2].fallback);
    EXPECT(!r[3].error, "%s: the no-option kernel passes on the fallback: %s", n, r[3].message);
    EXPECT(r[3].fallback == 1, "%s: fallback counter 1 (got %g)", n, r[3].fallback);
    // test_bench_options_reduced: a tiny check budget, so every point is checked on a
    // reduced shape (the options, sinks and a mask of its own size go with it)
    const bool reduced = ATTN_BENCH_CHECK_BUDGET < 1e5;
    for (int i = 0; i < 4; i++)  // (the failing point 1 is an error entry: no counters)
      EXPECT(i == 1 || (reduced ? r[i].check_sq > 0 && r[i].check_sq < 33 : r[i].check_sq == 33),
             "%s: point %d checked at seq_q %g (%s)", n, i, r[i].check_sq,
             reduced ? "reduced" : "full size");
  }
  // the window point's flop counts visible pairs only
  const attn_problem full = attn_problem_make(1, 4, 2, 33, 47, 16, 16, true);
  const record *wr = &g[kWindow].seen.r[2];
  EXPECT(wr->flop > 0 && wr->flop < attn_flops(&full) * 0.5,
         "window flop %g counts visible pairs (full causal %g)", wr->flop, attn_flops(&full));

  // Every option at once: blocked (native), plain (fallback); plain without options
  // runs its own entry point (fallback 0) and carries the counters' none values.
  static group all_g;
  attn_bench_opts all;
  memset(&all, 0, sizeof all);
  for (int w = 0; w < kNumOptions; w++) set_option(&all, w);
  add_point(&all_g, attn_kernel_find("blocked"), &all);
  add_point(&all_g, &kPlain, &all);
  add_point(&all_g, &kPlain, NULL);
  g_ignore = -1;
  run_group(&all_g);
  const record *a = &all_g.seen.r[0];
  EXPECT(
      !a->error && a->align == 1 && a->wl == 5 && a->wr == 0 && a->softcap == 2 && a->alibi == 8 &&
          a->sinks == 1 && a->mask == 1 && a->lse == 1,
      "combined counters: align %g window %g:%g softcap %g alibi %g sinks %g mask %g lse %g (%s)",
      a->align, a->wl, a->wr, a->softcap, a->alibi, a->sinks, a->mask, a->lse, a->message);
  EXPECT(!all_g.seen.r[1].error && all_g.seen.r[1].fallback == 1,
         "every option at once on the fallback: %s", all_g.seen.r[1].message);
  const record *z = &all_g.seen.r[2];
  EXPECT(!z->error && z->fallback == 0 && z->align == 0 && z->wl == -1 && z->wr == -1 &&
             z->softcap == 0 && z->alibi == 0 && z->sinks == 0 && z->mask == 0 && z->lse == 0,
         "no options: fallback %g, counters at their none values (%s)", z->fallback, z->message);
  EXPECT(g_plain_calls > 0, "plain's own entry point ran on the point without options");
  EXPECT(g_plain_calls_with_opts == 0,
         "plain's entry point never saw a problem with options (%d times)",
         g_plain_calls_with_opts);

  if (failures) {
    fprintf(stderr, "test_bench_options: %d failure(s)\n", failures);
    return 1;
  }
  printf(
      "test_bench_options: each option reaches the check (a kernel ignoring it fails), "
      "blocked native, no-option kernel on the fallback with fallback=1\n");
  return 0;
}
