// SPDX-License-Identifier: MIT
// The option keys of sweep configs (harness/bench/config.c): align, window, softcap,
// alibi, sinks, lse. Good values expand as lists like the other keys (the product, each
// point's attn_bench_opts and its name), defaults are "no option", two points that
// differ only in an option never share a name, and every bad value is refused with
// "FILE:LINE: message". Each config is written to a temporary file and loaded through
// attn_bench_plan_load().
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "attn.h"
#include "bench/config.h"
#include "test_util.h"

static char g_dir[64];
static char g_path[128];

static const char *write_config(const char *text) {
  snprintf(g_path, sizeof g_path, "%s/c.ini", g_dir);
  FILE *f = fopen(g_path, "wb");
  if (!f || fputs(text, f) < 0 || fclose(f) != 0) {
    perror(g_path);
    exit(2);
  }
  return g_path;
}

static bool load(const char *text, attn_bench_plan *plan, char *err, size_t err_len) {
  return attn_bench_plan_load(write_config(text), NULL, NULL, plan, err, err_len);
}

#define BASE \
  "[s]\nkernels = blocked\nheads = 4\nkv_heads = 2\nhead_dim = 16\nseq_len = 8\nseq_kv = 12\n"
// BASE has 7 lines: a key appended after it is on line 8.

static void expect_error(const char *extra, int line, const char *want) {
  char text[1024], err[512] = "", prefix[160];
  snprintf(text, sizeof text, "%s%s\n", BASE, extra);
  attn_bench_plan plan;
  const bool ok = load(text, &plan, err, sizeof err);
  EXPECT(!ok, "'%s': accepted (%zu points)", extra, ok ? plan.count : 0);
  if (ok) {
    attn_bench_plan_free(&plan);
    return;
  }
  snprintf(prefix, sizeof prefix, "%s:%d: ", g_path, line);
  EXPECT(strncmp(err, prefix, strlen(prefix)) == 0, "'%s': '%s' does not start with '%s'", extra,
         err, prefix);
  EXPECT(strstr(err, want) != NULL, "'%s': '%s' lacks '%s'", extra, err, want);
}

static const attn_bench_point *find(const attn_bench_plan *plan, const char *suffix) {
  const attn_bench_point *hit = NULL;
  for (size_t i = 0; i < plan->count; i++) {
    const char *n = plan->points[i].name;
    const size_t ln = strlen(n), ls = strlen(suffix);
    if (ln >= ls && strcmp(n + ln - ls, suffix) == 0) {
      EXPECT(!hit, "two points end in '%s'", suffix);
      hit = &plan->points[i];
    }
  }
  EXPECT(hit != NULL, "no point ends in '%s'", suffix);
  return hit;
}

static void test_good_values(void) {
  const char *text = BASE
      "align = bottom-right, top-left\n"
      "window = none, 4095:0, 128:128, inf:0, 3:INF\n"
      "softcap = 0, 50, 2.5\n"
      "alibi = 0, 8\n"
      "sinks = off, on\n"
      "mask = none, random\n"
      "lse = false, true\n";
  attn_bench_plan plan;
  char err[512] = "";
  const bool ok = load(text, &plan, err, sizeof err);
  EXPECT(ok, "option keys rejected: %s", err);
  if (!ok) return;
  EXPECT(plan.count == 2 * 5 * 3 * 2 * 2 * 2 * 2, "the product of the lists: %zu points",
         plan.count);
  // every name unique: two points that differ only in an option never collide
  size_t dups = 0;
  for (size_t i = 0; i < plan.count; i++)
    for (size_t j = i + 1; j < plan.count; j++)
      dups += strcmp(plan.points[i].name, plan.points[j].name) == 0;
  EXPECT(dups == 0, "%zu duplicate names", dups);
  // no options: the plain name, all fields zero
  const attn_bench_point *none = find(&plan, "/D16/noncausal/T1");
  if (none) {
    char plain[192];
    attn_bench_point_name(none->kernel, &none->problem, none->threads, plain, sizeof plain);
    EXPECT(strcmp(plain, none->name) == 0, "no options: name '%s' is the plain '%s'", none->name,
           plain);
    EXPECT(!attn_bench_opts_any(&none->opts), "no options: attn_bench_opts_any false");
    EXPECT(none->problem.opts == NULL, "the plan's problem has no opts pointer");
  }
  const attn_bench_point *all =
      find(&plan, "/T1/top-left/win4095:0/softcap50/alibi8/sinks/mask/lse");
  if (all) {
    const attn_bench_opts *o = &all->opts;
    EXPECT(o->align == ATTN_ALIGN_TOP_LEFT && o->window && o->window_left == 4095 &&
               o->window_right == 0 && o->softcap == 50.0f && o->alibi_max_bias == 8.0f &&
               o->sinks && o->mask && o->lse,
           "every option: values");
    attn_options ao;
    attn_bench_opts_apply(o, &ao);
    EXPECT(ao.align == ATTN_ALIGN_TOP_LEFT && ao.window && ao.window_left == 4095 &&
               ao.window_right == 0 && ao.softcap == 50.0f && ao.alibi_max_bias == 8.0f &&
               !ao.sinks && !ao.lse && !ao.mask && !ao.alibi_slopes,
           "attn_bench_opts_apply copies the values, no arrays");
  }
  const attn_bench_point *inf_left = find(&plan, "/T1/wininf:0");
  if (inf_left)
    EXPECT(inf_left->opts.window && inf_left->opts.window_left == ATTN_WINDOW_UNBOUNDED &&
               inf_left->opts.window_right == 0,
           "inf:0 is an unbounded left side");
  const attn_bench_point *inf_right = find(&plan, "/T1/win3:inf");
  if (inf_right)
    EXPECT(
        inf_right->opts.window_left == 3 && inf_right->opts.window_right == ATTN_WINDOW_UNBOUNDED,
        "3:INF (any case) is an unbounded right side");
  const attn_bench_point *cap = find(&plan, "/T1/softcap2.5");
  if (cap) EXPECT(cap->opts.softcap == 2.5f, "softcap 2.5");
  find(&plan, "/T1/top-left/sinks");
  find(&plan, "/T1/win128:128/lse");
  const attn_bench_point *mask = find(&plan, "/T1/mask");
  if (mask) EXPECT(mask->opts.mask && !mask->opts.lse, "mask = random alone");
  attn_bench_plan_free(&plan);

  // Defaults: a config without option keys has none; empty values mean the default too.
  const char *empty = BASE "window =\nsoftcap =\n";
  EXPECT(load(BASE, &plan, err, sizeof err) && plan.count == 1 &&
             !attn_bench_opts_any(&plan.points[0].opts),
         "no option keys: one point without options (%s)", err);
  if (plan.points) attn_bench_plan_free(&plan);
  EXPECT(load(empty, &plan, err, sizeof err) && plan.count == 1 &&
             !attn_bench_opts_any(&plan.points[0].opts),
         "empty option keys: the default (%s)", err);
  if (plan.points) attn_bench_plan_free(&plan);

  // inf:inf is no window (the same problem), and duplicates add nothing.
  const char *same = BASE "window = none, inf:inf, unbounded:inf\nsoftcap = 50, 50.0\n";
  EXPECT(load(same, &plan, err, sizeof err) && plan.count == 1 && !plan.points[0].opts.window,
         "inf:inf and none are one point (%s)", err);
  if (plan.points) attn_bench_plan_free(&plan);

  // Two sweeps differing only in an option: both kept; identical ones: kept once.
  const char *two = BASE
      "softcap = 30\n[t]\nkernels = blocked\nheads = 4\nkv_heads = 2\n"
      "head_dim = 16\nseq_len = 8\nseq_kv = 12\nsoftcap = 50\n[u]\n"
      "kernels = blocked\nheads = 4\nkv_heads = 2\nhead_dim = 16\nseq_len = 8\n"
      "seq_kv = 12\nsoftcap = 50\n";
  EXPECT(load(two, &plan, err, sizeof err) && plan.count == 2,
         "sweeps differing in softcap: 2 points (%zu, %s)", plan.count, err);
  if (plan.points) attn_bench_plan_free(&plan);
}

// The point cap counts the option combinations (40 × 40 × 30 × 2 fits, × 2 more does not).
static void test_point_cap(void) {
  static char text[16384];
  size_t n = (size_t)snprintf(text, sizeof text, "%s", BASE);
  const char *keys[] = {"softcap", "alibi"};
  for (int k = 0; k < 2; k++) {
    n += (size_t)snprintf(text + n, sizeof text - n, "%s = 1", keys[k]);
    for (int i = 2; i <= 40; i++) n += (size_t)snprintf(text + n, sizeof text - n, ",%d", i);
    n += (size_t)snprintf(text + n, sizeof text - n, "\n");
  }
  n += (size_t)snprintf(text + n, sizeof text - n, "window = 1:0");
  for (int i = 2; i <= 30; i++) n += (size_t)snprintf(text + n, sizeof text - n, ",%d:0", i);
  n += (size_t)snprintf(text + n, sizeof text - n, "\nlse = false, true\n");
  attn_bench_plan plan;
  char err[512] = "";
  const bool ok = load(text, &plan, err, sizeof err);  // 40 × 40 × 30 × 2 = 96000: fits
  EXPECT(ok && plan.count == 96000, "96000 option points: %s (%zu)", err, ok ? plan.count : 0);
  if (ok) attn_bench_plan_free(&plan);
  snprintf(text + n, sizeof text - n, "sinks = off, on\n");  // 192000: over the cap
  EXPECT(!load(text, &plan, err, sizeof err) && strstr(err, "more than 100000 points"),
         "192000 option points refused: '%s'", err);
}

static void test_bad_values(void) {
  expect_error("align = diagonal", 8, "align: 'diagonal' is not bottom-right or top-left");
  expect_error("align = top-left, bottom_right", 8, "'bottom_right' is not bottom-right");
  expect_error("window = -2:0", 8, "window: left side -2 must be >= 0 or inf (unbounded)");
  expect_error("window = 4:-1", 8, "window: right side -1 must be >= 0 or inf (unbounded)");
  expect_error("window = 4095", 8, "window: '4095' is not none or LEFT:RIGHT");
  expect_error("window = x:0", 8, "window: left side 'x' is not an integer or inf");
  expect_error("window = 1:2:3", 8, "window: right side '2:3' is not an integer or inf");
  expect_error("window = 5:", 8, "window: right side '' is not an integer or inf");
  expect_error("window = 4.5:0", 8, "left side '4.5' is not an integer");
  expect_error("window = 2000000000:0", 8, "left side 2000000000 is out of range");
  expect_error("window = none,, 4:0", 8, "window: empty item");
  expect_error("softcap = -1", 8, "softcap: -1 must be 0 (off) or a finite number > 0");
  expect_error("softcap = 0, nan", 8, "softcap: nan must be 0 (off) or a finite number > 0");
  expect_error("softcap = inf", 8, "softcap: inf must be 0 (off)");
  expect_error("softcap = 1e39", 8,
               "softcap: 1e39 must be 0 (off) or a finite number > 0 within float range");
  expect_error("softcap = 1e-40", 8, "within float range");
  expect_error("softcap = 1e-400", 8, "within float range");  // not silently 0 (off)
  expect_error("softcap = fifty", 8, "softcap: 'fifty' is not a number");
  expect_error("alibi = -8", 8, "alibi (max_bias): -8 must be 0 (off) or a finite number > 0");
  expect_error("alibi = 8, -inf", 8, "alibi (max_bias): -inf must be 0 (off)");
  expect_error("sinks = maybe", 8, "sinks: 'maybe' is not on or off");
  expect_error("lse = 2", 8, "lse: '2' is not true or false");
  expect_error("softcap = 50\nsoftcap = 30", 9, "key 'softcap' repeated");
  expect_error("mask = dense", 8, "mask: 'dense' is not none or random");
  // the message lists the option keys
  expect_error("colour = blue", 8, "align window softcap alibi sinks mask lse");
}

int main(void) {
  snprintf(g_dir, sizeof g_dir, "/tmp/attn_cfgopt_XXXXXX");
  if (!mkdtemp(g_dir)) {
    perror("mkdtemp");
    return 2;
  }
  test_good_values();
  test_point_cap();
  test_bad_values();
  unlink(g_path);
  rmdir(g_dir);
  return test_finish("test_config_options");
}
