// SPDX-License-Identifier: MIT
// Serving batches for the bench (harness/bench/serving.c, config_serving.c): length
// descriptions (explicit, N*C, generated mixes with an exact total, prefill:N:C), the
// layouts they build (pages a permutation of the pool, shuffled differs from sequential),
// the sweep keys and their FILE:LINE errors (continuation lines add to the lists), and a
// plan's serving points (whole names, one batch per serving combination).
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "attn.h"
#include "bench/config.h"
#include "bench/serving.h"
#include "test_util.h"

static void test_lengths(void) {
  int64_t l[64], n = 0;
  char err[256];
  EXPECT(attn_serving_kv_lens("4096 300 7*2 0", l, 64, &n, err, sizeof err) && n == 5 &&
             l[0] == 4096 && l[1] == 300 && l[2] == 7 && l[3] == 7 && l[4] == 0,
         "explicit lengths: %s (n %lld)", err, (long long)n);
  static const char *const dists[] = {"fixed:32:4096", "uniform:32:4096:5", "longtail:32:4096:1"};
  for (int d = 0; d < 3; d++) {
    EXPECT(attn_serving_kv_lens(dists[d], l, 64, &n, err, sizeof err) && n == 32, "%s: %s",
           dists[d], err);
    int64_t total = 0, lo = INT64_MAX, hi = 0;
    for (int i = 0; i < n; i++) {
      total += l[i];
      lo = l[i] < lo ? l[i] : lo;
      hi = l[i] > hi ? l[i] : hi;
    }
    EXPECT(total == 32 * 4096 && lo >= 1, "%s: total %lld (want %d), shortest %lld", dists[d],
           (long long)total, 32 * 4096, (long long)lo);
    if (d == 2)
      EXPECT(hi > 3 * 4096 && lo < 4096 / 3, "longtail: %lld..%lld is not long-tailed",
             (long long)lo, (long long)hi);
    if (d == 0) EXPECT(lo == 4096 && hi == 4096, "fixed: %lld..%lld", (long long)lo, (long long)hi);
  }
  int64_t a[32], b[32];
  attn_serving_kv_lens("longtail:32:4096:1", a, 32, &n, err, sizeof err);
  attn_serving_kv_lens("longtail:32:4096:2", b, 32, &n, err, sizeof err);
  EXPECT(memcmp(a, b, sizeof a) != 0, "the seed changes the mix");
  // ... also anything after MEAN but a seed (a suffix, a fraction, another separator), a
  // sign, and a mix whose longest generated length would pass 2^30
  static const char *const bad[] = {"",
                                    "12 x",
                                    "-3",
                                    "3*",
                                    "longtail:0:4096",
                                    "zipf:3:10",
                                    "fixed:3",
                                    "1*5000",
                                    "fixed:32:4k",
                                    "uniform:32:4096.5",
                                    "longtail:32:4096;7",
                                    "fixed:32:4096/x",
                                    "fixed:+3:4",
                                    "fixed:3:4:",
                                    "fixed:3:4:x",
                                    "longtail:8:1073741824:1"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    err[0] = '\0';
    EXPECT(!attn_serving_kv_lens(bad[i], l, 64, &n, err, sizeof err) && strstr(err, "kv_lens"),
           "'%s' accepted (or no message: '%s')", bad[i], err);
  }
  int64_t q[4];
  EXPECT(attn_serving_q_lens("prefill:1:512", 4, q, err, sizeof err) && q[0] == 512 && q[1] == 1 &&
             q[3] == 1,
         "prefill:1:512: %s", err);
  EXPECT(attn_serving_q_lens("decode", 4, q, err, sizeof err) && q[2] == 1, "decode");
  EXPECT(attn_serving_q_lens("3 1*3", 4, q, err, sizeof err) && q[0] == 3 && q[3] == 1, "explicit");
  EXPECT(!attn_serving_q_lens("1 1", 4, q, err, sizeof err) && strstr(err, "4 lengths"),
         "a short q list: %s", err);
  EXPECT(!attn_serving_q_lens("prefill:5:8", 4, q, err, sizeof err), "prefill of 5 of 4");
  // prefill:N:C takes whole numbers only, as kv_lens does: a sign or a blank would name the
  // same batch twice ("prefill:+1:2" and "prefill:1:2" measured as two points)
  static const char *const bad_prefill[] = {"prefill:+1:2", "prefill: 1: 2", "prefill:1: 2",
                                            "prefill:1:+2", "prefill:1:2x",  "prefill:1:2:3",
                                            "prefill:1:",   "prefill::2",    "prefill:1:0"};
  for (size_t i = 0; i < sizeof bad_prefill / sizeof bad_prefill[0]; i++) {
    err[0] = '\0';
    EXPECT(
        !attn_serving_q_lens(bad_prefill[i], 4, q, err, sizeof err) && strstr(err, "prefill:N:C"),
        "'%s' accepted (or no message: '%s')", bad_prefill[i], err);
  }
  EXPECT(attn_serving_q_lens("prefill:0:7", 4, q, err, sizeof err) && q[0] == 1, "prefill:0:7: %s",
         err);
}

static void test_build(void) {
  const int64_t q[3] = {4, 1, 1}, kv[3] = {40, 17, 0};
  attn_serving_batch seq, shuf, rag;
  char err[256];
  EXPECT(attn_serving_build(q, kv, 3, 8, ATTN_PAGE_SEQUENTIAL, 1, &seq, err, sizeof err), "%s",
         err);
  EXPECT(attn_serving_build(q, kv, 3, 8, ATTN_PAGE_SHUFFLED, 1, &shuf, err, sizeof err), "%s", err);
  EXPECT(attn_serving_build(q, kv, 3, 0, ATTN_PAGE_SEQUENTIAL, 1, &rag, err, sizeof err), "%s",
         err);
  EXPECT(rag.layout.kind == ATTN_LAYOUT_RAGGED && rag.cu_kv[3] == 57, "ragged offsets");
  EXPECT(seq.layout.num_pages == 8 && seq.layout.pages_per_seq == 5, "pages %lld per %lld",
         (long long)seq.layout.num_pages, (long long)seq.layout.pages_per_seq);
  // each pool page used exactly once, in both orders; the orders differ
  int used[8] = {0}, diff = 0;
  for (int b = 0, k = 0; b < 3; b++)
    for (int i = 0; i < (kv[b] + 7) / 8; i++, k++) {
      const int32_t ps = shuf.page_table[b * 5 + i];
      EXPECT(seq.page_table[b * 5 + i] == k, "sequential page %d", k);
      if (ps >= 0 && ps < 8) used[ps]++;
      diff += ps != k;
    }
  for (int i = 0; i < 8; i++) EXPECT(used[i] == 1, "page %d used %d times", i, used[i]);
  EXPECT(diff > 0, "shuffled equals sequential");
  attn_problem p = attn_problem_make(1, 4, 2, 1, 1, 32, 32, true);
  attn_problem_set_layout(&p, &shuf.layout, 3);
  EXPECT(attn_problem_validate(&p, err, sizeof err), "the built layout: %s", err);
  EXPECT(attn_serving_kv_bytes(&p) == 57u * 2 * (128 + 128) && attn_serving_tokens(&p) == 6,
         "kv bytes %llu, tokens %llu", (unsigned long long)attn_serving_kv_bytes(&p),
         (unsigned long long)attn_serving_tokens(&p));
  attn_serving_free(&seq);
  attn_serving_free(&shuf);
  attn_serving_free(&rag);
}

static char g_path[64];

static bool load(const char *text, attn_bench_plan *plan, char *err, size_t len) {
  FILE *f = fopen(g_path, "w");
  if (!f) return false;
  fputs(text, f);
  fclose(f);
  return attn_bench_plan_load(g_path, NULL, NULL, plan, err, len);
}

static void test_config(void) {
  snprintf(g_path, sizeof g_path, "/tmp/attn_serving_%d.ini", (int)getpid());
  attn_bench_plan plan;
  char err[512];
  const char *ok =
      "[s]\nkernels = naive\nheads = 4\nkv_heads = 2\nhead_dim = 32\ncausal = true\n"
      "kv_lens = 100 37 1 5, fixed:3:9\nq_lens = decode, prefill:1:4\npage_size = 0, 16\n"
      "page_order = sequential, shuffled\n";
  EXPECT(load(ok, &plan, err, sizeof err), "serving config refused: %s", err);
  // 2 kv × 2 q × (ragged once + page16 × 2 orders) = 12 distinct points
  EXPECT(plan.count == 12, "%zu points", plan.count);
  for (size_t i = 0; i < plan.count; i++) {
    const attn_problem *p = &plan.points[i].problem;
    EXPECT(p->layout && attn_problem_validate(p, err, sizeof err), "%s: %s", plan.points[i].name,
           err);
    EXPECT(strstr(plan.points[i].name, "/kv=") && strstr(plan.points[i].name, "/q="), "name %s",
           plan.points[i].name);
  }
  attn_bench_plan_free(&plan);
  static const struct {
    const char *text, *want;
  } bad[] = {
      {"[s]\nkernels = naive\nheads = 4\nhead_dim = 32\nseq_len = 8\nkv_lens = 9\n", "seq_len"},
      {"[s]\nkernels = naive\nheads = 4\nhead_dim = 32\nkv_lens = 9 9\nq_lens = 1\n", "2 lengths"},
      {"[s]\nkernels = naive\nheads = 4\nhead_dim = 32\nkv_lens = zipf:2:3\n", "DIST"},
      {"[s]\nkernels = naive\nheads = 4\nhead_dim = 32\nkv_lens = 9\npage_size = -1\n",
       "page_size"},
      {"[s]\nkernels = naive\nheads = 4\nhead_dim = 32\nkv_lens = 9\npage_order = random\n",
       "page_order"},
      {"[s]\nkernels = naive\nheads = 4\nhead_dim = 32\nkv_lens = 9\nmask = random\n", "mask"},
      {"[s]\nkernels = naive\nheads = 4\nhead_dim = 32\nseq_len = 4\npage_size = 16\n", "kv_lens"},
      // new tokens beyond a sequence's context (q_len > kv_len), with a list and generated
      {"[s]\nkernels = naive\nheads = 4\nhead_dim = 32\nkv_lens = 9 0\n", "sequence 1 has 1"},
      {"[s]\nkernels = naive\nheads = 4\nhead_dim = 32\nkv_lens = fixed:2:9\nq_lens = 3 10\n",
       "sequence 1 has 10 new tokens in a context of 9"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    err[0] = '\0';
    EXPECT(!load(bad[i].text, &plan, err, sizeof err) && strstr(err, bad[i].want) &&
               strstr(err, g_path),
           "config %zu: want an error naming '%s', got '%s'", i, bad[i].want, err);
  }
  unlink(g_path);
}

// Continuation lines (indented lines after `key =`) add to the serving lists as to every
// list key: 2 kv_lens x 2 q_lens x 2 page sizes = 8 points, not the last line's 1.
static void test_continuation_lines(void) {
  attn_bench_plan plan;
  char err[512] = "";
  const char *text =
      "[a]\nkernels = naive\nkv_lens = fixed:4:64\n   fixed:4:128\npage_size = 0\n   16\n"
      "q_lens = decode\n   prefill:1:8\npage_order = sequential\n  sequential\n"
      "heads = 2\nhead_dim = 16\n";
  const bool ok = load(text, &plan, err, sizeof err);
  EXPECT(ok && plan.count == 8, "continued serving lists: %s (%zu points, want 8)", err,
         ok ? plan.count : 0);
  if (ok) attn_bench_plan_free(&plan);
  // the limit counts every line's items together
  char many[1024] = "[a]\nkernels = naive\nheads = 2\nhead_dim = 16\nkv_lens = 1";
  for (int i = 2; i <= 17; i++)
    snprintf(many + strlen(many), sizeof many - strlen(many), "\n  %d", i);
  strcat(many, "\n");
  EXPECT(!load(many, &plan, err, sizeof err) && strstr(err, "kv_lens: more than 16 values"),
         "17 kv_lens over several lines: '%s'", err);
}

// Every serving batch is built once per sweep and shared by the points of the outer
// lists (heads here): 2 page sizes give 2 batches, however many heads values.
static void test_shared_batches(void) {
  attn_bench_plan plan;
  char err[512] = "";
  const char *text =
      "[a]\nkernels = naive\nkv_lens = 40 17\npage_size = 0, 16\nheads = 1, 2, 4\n"
      "head_dim = 16\n";
  const bool ok = load(text, &plan, err, sizeof err);
  EXPECT(ok && plan.count == 6 && plan.batch_count == 2, "%s: %zu points, %zu batches (want 6, 2)",
         err, ok ? plan.count : 0, ok ? plan.batch_count : 0);
  if (ok) attn_bench_plan_free(&plan);
}

// Long names are whole: a serving point with many options keeps every suffix, so the
// points that differ only in lse (or in /cold, /rt, /split) stay two points.
static void test_long_names(void) {
  attn_bench_plan plan;
  char err[512] = "";
  const char *text =
      "[a]\nkernels = naive\nkv_lens = fixed:16:40960\nq_lens = 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1\n"
      "page_size = 16\npage_order = shuffled\nheads = 1024\nkv_heads = 1\nhead_dim = 128\n"
      "align = top-left\nwindow = 1073741824:1073741824\nsoftcap = 0.123456789\n"
      "alibi = 0.123456789\nsinks = on\nlse = false, true\ncold_inputs = true\nkv_split = 4\n";
  const bool ok = load(text, &plan, err, sizeof err);
  EXPECT(ok && plan.count == 2, "%s: %zu points (want 2: lse false and true)", err,
         ok ? plan.count : 0);
  for (size_t i = 0; ok && i < plan.count; i++) {
    const char *n = plan.points[i].name;
    const char *want = plan.points[i].opts.lse ? "/sinks/lse/cold/split4" : "/sinks/cold/split4";
    EXPECT(strlen(n) > 191 && strlen(n) >= strlen(want) &&
               strcmp(n + strlen(n) - strlen(want), want) == 0,
           "name '%s' does not end in '%s'", n, want);
  }
  if (ok) attn_bench_plan_free(&plan);
}

// A batch with no query token is refused at the line of its q_lens item, in the kernel
// contract's words: the key's line, or the continuation line that gives the item.
static void test_zero_q_lens(void) {
  attn_bench_plan plan;
  char err[512] = "", want[192];
  const char *text =
      "[a]\nkernels = naive\nkv_lens = 4*4\nheads = 1\nq_lens = 0*4\nhead_dim = 32\n";
  snprintf(want, sizeof want,
           "%s:5: [a]: invalid point: no sequence of the batch has a query token", g_path);
  EXPECT(!load(text, &plan, err, sizeof err) && strncmp(err, want, strlen(want)) == 0,
         "q_lens = 0*4: '%s' (want '%s...')", err, want);
  const char *continued =
      "[a]\nkernels = naive\nkv_lens = 4*4\nq_lens = decode\n  ; a comment\n  3 1*3\n"
      "  0*4\nheads = 1\nhead_dim = 32\n";
  snprintf(want, sizeof want,
           "%s:7: [a]: invalid point: no sequence of the batch has a query token", g_path);
  EXPECT(!load(continued, &plan, err, sizeof err) && strncmp(err, want, strlen(want)) == 0,
         "q_lens 0*4 on a continuation line: '%s' (want '%s...')", err, want);
}

// A value given twice counts once, whatever its spelling: the kv_lens and q_lens items that
// give the same lengths are one item (blanks and tabs, N*1, a generator's default seed;
// decode, prefill:0:C and an explicit list of ones), named by the first spelling with each
// run of blanks as one '_'. Another seed is another batch.
static void test_same_lengths(void) {
  attn_bench_plan plan;
  char err[512] = "";
  const char *text =
      "[a]\nkernels = naive\nheads = 2\nhead_dim = 16\n"
      "kv_lens = 64\t32, 64 32, 64  32, 64 32*1, uniform:2:48, uniform:2:48:1\n"
      "  uniform:2:48:2\nq_lens = decode, prefill:0:9, 1 1, 1 \t1, prefill:2:1\n";
  const bool ok = load(text, &plan, err, sizeof err);
  EXPECT(ok && plan.count == 3 && plan.batch_count == 3, "%s: %zu points, %zu batches (want 3)",
         err, ok ? plan.count : 0, ok ? plan.batch_count : 0);
  static const char *const kv[] = {"/kv=64_32/", "/kv=uniform:2:48/", "/kv=uniform:2:48:2/"};
  for (size_t i = 0; ok && i < plan.count; i++) {
    const char *n = plan.points[i].name;
    EXPECT(!strchr(n, '\t') && !strstr(n, "__") && i < 3 && strstr(n, kv[i]) &&
               strstr(n, "/q=decode/"),
           "point %zu: '%s' (want q=decode, %s, no tab or run of '_')", i, n, i < 3 ? kv[i] : "");
  }
  if (ok) attn_bench_plan_free(&plan);
}

int main(void) {
  test_lengths();
  test_build();
  test_config();
  test_continuation_lines();
  test_shared_batches();
  test_long_names();
  test_zero_q_lens();
  test_same_lengths();
  unlink(g_path);
  return test_finish("test_serving");
}
