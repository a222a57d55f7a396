// SPDX-License-Identifier: MIT
// The sweep-config loader's limits and strictness (harness/bench/config.c): NUL bytes,
// text after a section header, over-long section names, the thread cap, the point cap
// (computed before expanding, overflow-safe) and a linear duplicate check. Each config is
// written to a temporary file and loaded through the public attn_bench_plan_load().
#define _POSIX_C_SOURCE 200809L
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "attn.h"
#include "bench/config.h"
#include "test_util.h"

static char g_dir[64];
static char g_path[128];

static const char *write_config(const char *text, size_t len) {
  snprintf(g_path, sizeof g_path, "%s/c.ini", g_dir);
  FILE *f = fopen(g_path, "wb");
  if (!f || fwrite(text, 1, len, f) != len || fclose(f) != 0) {
    perror(g_path);
    exit(2);
  }
  return g_path;
}

static bool load_len(const char *text, size_t len, const attn_bench_overrides *ov,
                     attn_bench_plan *plan, char *err, size_t err_len) {
  return attn_bench_plan_load(write_config(text, len), ov, NULL, plan, err, err_len);
}

// Expects the config to be rejected with "PATH:LINE: ..." containing want.
static void expect_error(const char *label, const char *text, size_t len, int line,
                         const char *want) {
  attn_bench_plan plan;
  char err[512] = "", prefix[160];
  const bool ok = load_len(text, len, NULL, &plan, err, sizeof err);
  EXPECT(!ok, "%s: accepted (%zu points)", label, ok ? plan.count : 0);
  if (ok) {
    attn_bench_plan_free(&plan);
    return;
  }
  EXPECT(plan.points == NULL && plan.count == 0, "%s: failed load left points", label);
  snprintf(prefix, sizeof prefix, "%s:%d: ", g_path, line);
  EXPECT(strncmp(err, prefix, strlen(prefix)) == 0, "%s: '%s' does not start with '%s'", label, err,
         prefix);
  EXPECT(strstr(err, want) != NULL, "%s: '%s' lacks '%s'", label, err, want);
}

static size_t expect_ok(const char *label, const char *text, const attn_bench_overrides *ov) {
  attn_bench_plan plan;
  char err[512] = "";
  const bool ok = load_len(text, strlen(text), ov, &plan, err, sizeof err);
  EXPECT(ok, "%s: rejected: %s", label, err);
  const size_t n = ok ? plan.count : 0;
  if (ok) attn_bench_plan_free(&plan);
  return n;
}

#define GOOD_KEYS "kernels = blocked\nheads = 4\nhead_dim = 16\nseq_len = 8\n"

static void test_nul_byte(void) {
  static const char text[] = "[s]\nkernels = blocked\nheads = 4\0\nhead_dim = 16\nseq_len = 8\n";
  expect_error("NUL byte", text, sizeof text - 1, 3, "NUL byte");
  static const char key[] = "[s]\nkernels = blocked\nhe\0ads = 4\nhead_dim = 16\nseq_len = 8\n";
  expect_error("NUL byte in a key", key, sizeof key - 1, 3, "NUL byte");
}

static void test_section_header(void) {
  const char *junk = "[t] junk\n" GOOD_KEYS;
  expect_error("[t] junk", junk, strlen(junk), 1, "text after the section header");
  const char *glued = GOOD_KEYS;
  char buf[512];
  snprintf(buf, sizeof buf, "[t]x\n%s", glued);
  expect_error("[t]x", buf, strlen(buf), 1, "text after the section header");
  snprintf(buf, sizeof buf, "[t] ; a comment\n%s", GOOD_KEYS);
  EXPECT(expect_ok("[t] ; comment", buf, NULL) == 1, "header with a comment gives one point");
  snprintf(buf, sizeof buf, "[]\n%s", GOOD_KEYS);
  expect_error("[]", buf, strlen(buf), 1, "empty section name");
  // inih keeps 49 characters of a section name; the sweep name holds 47.
  snprintf(buf, sizeof buf, "[%s]\n%s", "0123456789012345678901234567890123456789012345678",
           GOOD_KEYS);
  expect_error("long section", buf, strlen(buf), 1, "section name too long");
  snprintf(buf, sizeof buf, "[%s]\n%s", "01234567890123456789012345678901234567890123456",
           GOOD_KEYS);
  EXPECT(expect_ok("47-character section", buf, NULL) == 1, "a 47-character section name is fine");
  // A UTF-8 BOM does not shift or hide the header: errors still name the right line.
  const char *bom = "\xEF\xBB\xBF[s]\n" GOOD_KEYS "colour = blue\n";
  expect_error("BOM", bom, strlen(bom), 6, "unknown key 'colour'");
}

static void test_threads_cap(void) {
  char buf[512];
  snprintf(buf, sizeof buf, "[s]\n%sthreads = 1, 65536\n", GOOD_KEYS);
  expect_error("threads 65536", buf, strlen(buf), 6, "threads: 65536 is out of range [0, 1024]");
  snprintf(buf, sizeof buf, "[s]\n%sthreads = %d\n", GOOD_KEYS, ATTN_MAX_THREADS + 1);
  expect_error("threads max+1", buf, strlen(buf), 6, "out of range");
  snprintf(buf, sizeof buf, "[s]\n%sthreads = 1073741824\n", GOOD_KEYS);
  expect_error("threads 2^30", buf, strlen(buf), 6, "out of range");
  snprintf(buf, sizeof buf, "[s]\n%sthreads = %d\n", GOOD_KEYS, ATTN_MAX_THREADS);
  EXPECT(expect_ok("threads max", buf, NULL) == 1, "ATTN_MAX_THREADS itself is allowed");
  // Overrides (the CLI's --threads) and "0 = physical cores" are capped too.
  const int big[] = {ATTN_MAX_THREADS + 1};
  const attn_bench_overrides ov = {.threads = big, .thread_count = 1};
  snprintf(buf, sizeof buf, "[s]\n%s", GOOD_KEYS);
  attn_bench_plan plan;
  char err[512] = "";
  EXPECT(!load_len(buf, strlen(buf), &ov, &plan, err, sizeof err),
         "override above the cap accepted");
  EXPECT(strstr(err, "threads is out of range") != NULL, "override error: '%s'", err);
}

// "key =" followed by n values on continuation lines of at most 16 values each.
static void append_list(char *buf, size_t cap, const char *key, int n) {
  size_t used = strlen(buf);
  used += (size_t)snprintf(buf + used, cap - used, "%s =\n", key);
  for (int i = 1; i <= n; i++)
    used += (size_t)snprintf(buf + used, cap - used, "%s%d%s", i % 16 == 1 ? "  " : "", i,
                             i == n || i % 16 == 0 ? "\n" : ", ");
}

static double seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void test_point_cap(void) {
  static char buf[1 << 16];
  // Three 64-value lists: 262144 points, over the cap; refused before expanding.
  snprintf(buf, sizeof buf, "[s]\nkernels = blocked\nheads = 1\n");
  append_list(buf, sizeof buf, "head_dim", 64);
  append_list(buf, sizeof buf, "seq_len", 64);
  append_list(buf, sizeof buf, "seq_kv", 64);
  double t0 = seconds();
  expect_error("3 x 64 values", buf, strlen(buf), 1, "more than 100000 points");
  EXPECT(seconds() - t0 < 1.0, "the cap is checked before expanding (took %.2f s)", seconds() - t0);

  // 64^7 · 2 = 2^43 points: the product saturates (a 32-bit product would wrap to 2048).
  snprintf(buf, sizeof buf, "[s]\nkernels = blocked\ncausal = false, true\n");
  const char *keys[] = {"batch", "heads", "head_dim", "head_dim_v", "seq_len", "seq_kv", "threads"};
  for (int i = 0; i < 7; i++) append_list(buf, sizeof buf, keys[i], 64);
  expect_error("2^43 points", buf, strlen(buf), 1, "more than 100000 points");

  // Several sweeps each under the cap, together over it: named at the sweep that crosses.
  buf[0] = '\0';
  for (int s = 0; s < 3; s++) {
    size_t used = strlen(buf);
    snprintf(buf + used, sizeof buf - used, "[s%d]\nkernels = blocked\nheads = 1\nseq_kv = %d\n", s,
             s + 1);
    append_list(buf, sizeof buf, "head_dim", 64);
    append_list(buf, sizeof buf, "seq_len", 64);
    used = strlen(buf);
    snprintf(buf + used, sizeof buf - used, "threads = ");
    for (int t = 1; t <= 10; t++) {
      used = strlen(buf);
      snprintf(buf + used, sizeof buf - used, t < 10 ? "%d, " : "%d\n", t);
    }
  }
  // 3 sweeps × 40960 points: the third crosses 100000 and starts on its line.
  const char *third = strstr(buf, "[s2]");
  int line = 1;
  for (const char *p = buf; p < third; p++) line += *p == '\n';
  expect_error("sum over sweeps", buf, strlen(buf), line, "expand to more than 100000 points");
}

static void test_linear_duplicates(void) {
  // Two identical sweeps of 48000 points each (96000 before dropping duplicates): the
  // quadratic check took minutes; the hash set takes well under a second.
  static char buf[1 << 16];
  buf[0] = '\0';
  for (int s = 0; s < 2; s++) {
    size_t used = strlen(buf);
    snprintf(buf + used, sizeof buf - used, "[s%d]\nkernels = blocked\nheads = 1\n", s);
    append_list(buf, sizeof buf, "head_dim", 40);
    append_list(buf, sizeof buf, "seq_len", 40);
    append_list(buf, sizeof buf, "seq_kv", 30);
  }
  const double t0 = seconds();
  const size_t n = expect_ok("2 x 48000 points", buf, NULL);
  const double dt = seconds() - t0;
  EXPECT(n == 48000, "duplicates across sweeps are kept once (%zu points)", n);
  EXPECT(dt < 5.0, "expanding 96000 points took %.2f s", dt);

  // The kept points are unique and the first sweep's order is preserved.
  attn_bench_plan plan;
  char err[512];
  if (load_len(buf, strlen(buf), NULL, &plan, err, sizeof err)) {
    EXPECT(strcmp(plan.points[0].sweep, "s0") == 0, "first point from s0");
    EXPECT(strcmp(plan.points[plan.count - 1].sweep, "s0") == 0, "every kept point from s0");
    attn_bench_plan_free(&plan);
  }
}

// The file is opened and read once: a FIFO (one writer, one pass of data) loads; a
// directory and an endless or huge file are refused with a message.
static void test_file_kinds(void) {
  char fifo[128], err[512] = "";
  attn_bench_plan plan;
  snprintf(fifo, sizeof fifo, "%s/fifo.ini", g_dir);
  if (mkfifo(fifo, 0600) != 0) {
    perror("mkfifo");
    exit(2);
  }
  const char *text = "[s]\n" GOOD_KEYS;
  const pid_t pid = fork();
  if (pid == 0) {
    FILE *f = fopen(fifo, "w");
    _exit(!f || fputs(text, f) < 0 || fclose(f) != 0);
  }
  alarm(10);  // the old loader opened the file twice: the second open waited forever
  const bool ok = attn_bench_plan_load(fifo, NULL, NULL, &plan, err, sizeof err);
  alarm(0);
  EXPECT(ok && plan.count == 1, "a config read from a FIFO: %s", ok ? "wrong count" : err);
  if (ok) attn_bench_plan_free(&plan);
  waitpid(pid, NULL, 0);
  unlink(fifo);

  EXPECT(!attn_bench_plan_load(g_dir, NULL, NULL, &plan, err, sizeof err) &&
             strstr(err, "is a directory"),
         "a directory: '%s'", err);
  EXPECT(!attn_bench_plan_load("/dev/zero", NULL, NULL, &plan, err, sizeof err) &&
             strstr(err, "larger than"),
         "/dev/zero: '%s'", err);
  // 1 MiB of comments and one sweep: over the size limit although every line is fine.
  static char big[(1 << 20) + 4096];
  size_t n = (size_t)snprintf(big, sizeof big, "[s]\n%s", GOOD_KEYS);
  while (n + 64 < sizeof big) n += (size_t)snprintf(big + n, sizeof big - n, "; %60s\n", "x");
  attn_bench_plan p2;
  EXPECT(!load_len(big, n, NULL, &p2, err, sizeof err) && strstr(err, "larger than 1048576 bytes"),
         "a 1 MiB config: '%s'", err);
}

// kv_dtype: a list, swept; the names and problems carry the type; a bad value
// or a type the shape cannot take (q8_0 with head_dim 16) is FILE:LINE at the key.
static void test_kv_dtype(void) {
  const char *text =
      "[s]\nkernels = blocked\nheads = 4\nhead_dim = 32\nseq_len = 8\nkv_dtype = f32, f16, q8_0, "
      "f16\n";
  attn_bench_plan plan;
  char err[512] = "";
  const bool ok = load_len(text, strlen(text), NULL, &plan, err, sizeof err);
  EXPECT(ok && plan.count == 3, "kv_dtype list: %s (%zu points)", err, ok ? plan.count : 0);
  if (ok) {
    static const attn_dtype want[3] = {ATTN_DTYPE_F32, ATTN_DTYPE_F16, ATTN_DTYPE_Q8_0};
    static const char *const names[3] = {"blocked/B1/H4/KV4/Sq8/Skv8/D32/noncausal/T1",
                                         "blocked/B1/H4/KV4/Sq8/Skv8/D32/noncausal/f16/T1",
                                         "blocked/B1/H4/KV4/Sq8/Skv8/D32/noncausal/q8_0/T1"};
    for (size_t i = 0; i < plan.count && i < 3; i++) {
      EXPECT(plan.points[i].problem.kv_dtype == want[i], "point %zu: kv_dtype %d", i,
             (int)plan.points[i].problem.kv_dtype);
      EXPECT(strcmp(plan.points[i].name, names[i]) == 0, "point %zu: name %s", i,
             plan.points[i].name);
    }
    attn_bench_plan_free(&plan);
  }
  const char *bad = "[s]\n" GOOD_KEYS "kv_dtype = f16, q8\n";
  expect_error("kv_dtype q8", bad, strlen(bad), 6, "'q8' is not a K/V type");
  const char *q8 = "[s]\n" GOOD_KEYS "kv_dtype = bf16, q8_0\n";
  expect_error("q8_0 with head_dim 16", q8, strlen(q8), 6, "multiples of 32");
  // a point the problem refuses names the line of the key that set the refused field
  const char *cap = "[s]\n" GOOD_KEYS "softcap = 1e30\n";
  expect_error("softcap above 2^64", cap, strlen(cap), 6, "softcap must be 0 (none) or in");
  const char *empty = "[s]\n" GOOD_KEYS "kv_dtype =\n";
  expect_error("kv_dtype empty", empty, strlen(empty), 6, "kv_dtype: empty list");
  const char *dup = "[s]\n" GOOD_KEYS "kv_dtype = f16,\n";
  expect_error("kv_dtype trailing comma", dup, strlen(dup), 6, "empty item");
}

// A key that takes one value refuses a second one from a continuation line (an indented
// line after it) instead of keeping the last, at that line (7); the list keys add the
// line's values.
static void test_single_value_keys(void) {
  static const struct {
    const char *key, *first, *second;
  } keys[] = {{"repetitions", "3", "7"},
              {"min_time", "0.1", "0.2"},
              {"kv_split", "2", "3"},
              {"cold_inputs", "true", "false"},
              {"regtile", "0", "0"}};
  for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
    char text[256], want[96];
    snprintf(text, sizeof text, "[s]\n" GOOD_KEYS "%s = %s\n   %s\n", keys[i].key, keys[i].first,
             keys[i].second);
    snprintf(want, sizeof want, "%s: takes one value, but a continuation line gives it another",
             keys[i].key);
    expect_error(keys[i].key, text, strlen(text), 7, want);
  }
  const char *list = "[s]\nkernels = blocked\nheads = 4\n  8\nhead_dim = 16\nseq_len = 8\n";
  EXPECT(expect_ok("heads continued", list, NULL) == 2, "heads = 4 / 8 over two lines: 2 points");
}

// Two sweeps that plan the same point with other repetitions or min_time: the point runs
// once, with the first sweep's settings, and a note says so (names both sweeps).
static void test_conflicting_settings(void) {
  const char *text = "[a]\n" GOOD_KEYS "repetitions = 3\n\n[b]\n" GOOD_KEYS
                     "repetitions = 5\n"
                     "min_time = 0.2\n";
  FILE *notes = tmpfile();
  attn_bench_plan plan;
  char err[512] = "", note[1024] = "";
  const bool ok =
      attn_bench_plan_load(write_config(text, strlen(text)), NULL, notes, &plan, err, sizeof err);
  EXPECT(ok && plan.count == 1 && plan.points[0].repetitions == 3 && plan.points[0].min_time == 0,
         "the first sweep's settings: %s (%zu points, repetitions %d)", err, ok ? plan.count : 0,
         ok && plan.count ? plan.points[0].repetitions : -1);
  if (ok) attn_bench_plan_free(&plan);
  if (notes) {
    rewind(notes);
    const size_t n = fread(note, 1, sizeof note - 1, notes);
    note[n] = '\0';
    fclose(notes);
  }
  EXPECT(strstr(note,
                "note: [b]: point blocked/B1/H4/KV4/Sq8/Skv8/D16/noncausal/T1 is also "
                "planned by [a] with repetitions 3, min_time default (here 5, 0.2)") &&
             strstr(note, "with the first sweep's repetitions and min_time"),
         "the note: '%s'", note);
  // the same settings: the shared point is dropped without a note
  const char *same = "[a]\n" GOOD_KEYS "repetitions = 3\n\n[b]\n" GOOD_KEYS "repetitions = 3\n";
  notes = tmpfile();
  EXPECT(
      attn_bench_plan_load(write_config(same, strlen(same)), NULL, notes, &plan, err, sizeof err),
      "%s", err);
  attn_bench_plan_free(&plan);
  EXPECT(notes && ftell(notes) == 0, "no note when the settings agree");
  if (notes) fclose(notes);
}

// The name builders return the whole length (as snprintf) so that a name that does not
// fit is refused, never cut.
static void test_name_lengths(void) {
  attn_bench_opts o;
  memset(&o, 0, sizeof o);
  o.sinks = o.lse = true;
  char small[8], big[64];
  EXPECT(attn_bench_opts_name(&o, big, sizeof big) == strlen("/sinks/lse") &&
             strcmp(big, "/sinks/lse") == 0,
         "whole: '%s'", big);
  EXPECT(attn_bench_opts_name(&o, small, sizeof small) == strlen("/sinks/lse") &&
             strcmp(small, "/sinks/") == 0,
         "cut copy '%s', whole length returned", small);
  const attn_problem p = attn_problem_make(1, 4, 4, 8, 8, 16, 16, false);
  const attn_kernel *k = attn_kernel_find("blocked");
  const size_t whole = attn_bench_point_name(k, &p, 1, big, sizeof big);
  EXPECT(whole == strlen(big) && attn_bench_point_name(k, &p, 1, small, sizeof small) == whole,
         "point name length %zu", whole);
}

int main(void) {
  snprintf(g_dir, sizeof g_dir, "/tmp/attn_config_XXXXXX");
  if (!mkdtemp(g_dir)) {
    perror("mkdtemp");
    return 2;
  }
  test_nul_byte();
  test_section_header();
  test_threads_cap();
  test_point_cap();
  test_linear_duplicates();
  test_file_kinds();
  test_kv_dtype();
  test_single_value_keys();
  test_conflicting_settings();
  test_name_lengths();
  unlink(g_path);
  rmdir(g_dir);
  return test_finish("test_config");
}
