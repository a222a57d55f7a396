// SPDX-License-Identifier: MIT
// harness/machine/placement.c, resolve.c and peak/bandwidth.c: default threads, binding
// report, tile precedence (command line > ATTNBENCH_TILE_* > cache rule), the environment
// read once and
// never by kernels, malformed environment values,
// and the read-bandwidth probe's self-check on a small buffer; the inherited CPU set
// (the `taskset -c <last CPU>` case, run in a forked child that restricts itself first)
// and the bind modes (--bind none / cores, OMP_PLACES / OMP_PROC_BIND). Built only with the
// harness (needs hwloc). Binding may be refused in some containers: then the test
// checks that the failure is reported, not that it succeeded.
#define _GNU_SOURCE
#include <omp.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/tiles.h"
#include "machine/peak/bandwidth.h"
#include "machine/placement.h"
#include "machine/topology.h"
#include "resolve/resolve.h"
#include "test_util.h"

// Runs fn in a forked child (before this process has used OpenMP or hwloc, so the child
// starts both afresh); the child's failures come back as its exit status.
static void in_child(const char *what, void (*fn)(void)) {
  fflush(stdout), fflush(stderr);
  const pid_t pid = fork();
  if (pid == 0) {
    g_failures = 0;  // the child's own checks only
    fn();
    fflush(stdout), fflush(stderr);
    _exit(g_failures ? 1 : 0);
  }
  int status = 0;
  EXPECT(pid > 0 && waitpid(pid, &status, 0) == pid, "%s: fork/wait failed", what);
  EXPECT(WIFEXITED(status) && WEXITSTATUS(status) == 0, "%s: child failed (status %d)", what,
         status);
}

// Every thread of a team of n must be allowed on exactly the CPUs in want.
static void expect_team_on(int n, const cpu_set_t *want, const char *what) {
  int wrong = 0;
#pragma omp parallel num_threads(n) reduction(+ : wrong)
  {
    cpu_set_t got;
    CPU_ZERO(&got);
    wrong += sched_getaffinity(0, sizeof got, &got) != 0 || !CPU_EQUAL(&got, want);
  }
  EXPECT(wrong == 0, "%s: %d of %d threads not on the expected CPUs", what, wrong, n);
}

// `taskset -c L attnbench ... --threads 1`, L = the last CPU we may use: thread 0 must bind
// to L's core (not core 0), and more threads than cores share it, never leave the set.
static int g_last_cpu = -1;
static void child_taskset(void) {
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(g_last_cpu, &one);
  EXPECT(sched_setaffinity(0, sizeof one, &one) == 0, "sched_setaffinity");
  const attn_topology *t = attn_topology_get();
  char want[32], report[512], set[192];
  snprintf(want, sizeof want, "%d", g_last_cpu);
  EXPECT(strcmp(t->cpuset, want) == 0, "cpuset '%s', expected '%s'", t->cpuset, want);
  EXPECT(t->set_pus == 1 && t->set_cores == 1, "set: %d PUs, %d cores", t->set_pus, t->set_cores);
  EXPECT(attn_placement_default_threads() == 1, "default threads %d in a 1-CPU set",
         attn_placement_default_threads());
  EXPECT(attn_placement_query().cores == 1, "query: %d cores", attn_placement_query().cores);
  attn_placement_describe_set(set, sizeof set);
  snprintf(want, sizeof want, "cpuset %d (", g_last_cpu);
  EXPECT(strstr(set, want) && strstr(set, "bind cores"), "describe_set '%s'", set);
  const int bound = attn_placement_bind(1, report, sizeof report);
  if (bound < 0) {
    EXPECT(report[0] != '\0', "binding failed without a reason");
    return;
  }
  snprintf(want, sizeof want, "(PU%d)", g_last_cpu);
  EXPECT(bound == 1 && strncmp(report, "T0->core", 8) == 0 && strstr(report, want),
         "taskset -c %d: report '%s'", g_last_cpu, report);
  expect_team_on(1, &one, "1 thread");
  EXPECT(attn_placement_bind(2, report, sizeof report) == 2, "2 threads: %s", report);
  snprintf(want, sizeof want, "T1->core");
  EXPECT(strstr(report, want) && strstr(report + 8, "(PU"), "2 threads: '%s'", report);
  expect_team_on(2, &one, "2 threads on a 1-CPU set");
}

// --bind none: nothing bound, threads keep the inherited set; the report says so.
static void child_bind_none(void) {
  cpu_set_t all;
  CPU_ZERO(&all);
  EXPECT(sched_getaffinity(0, sizeof all, &all) == 0, "sched_getaffinity");
  char err[160], report[512];
  EXPECT(attn_placement_set_bind("none", err, sizeof err) == 0, "%s", err);
  EXPECT(attn_placement_bind_mode() == ATTN_BIND_NONE, "mode %d", attn_placement_bind_mode());
  const int n = CPU_COUNT(&all) > 1 ? 2 : 1;
  EXPECT(attn_placement_bind(n, report, sizeof report) == 0, "none bound threads: %s", report);
  EXPECT(strncmp(report, "not bound (--bind none):", 24) == 0 && strstr(report, "T0 on PUs "),
         "report '%s'", report);
  expect_team_on(n, &all, "--bind none");
  char set[192];
  EXPECT(strstr(attn_placement_describe_set(set, sizeof set), "bind none"), "'%s'", set);
  // --bind cores then binds (and the bad value is refused, naming it).
  EXPECT(attn_placement_set_bind("cores", err, sizeof err) == 0, "%s", err);
  EXPECT(attn_placement_set_bind("core", err, sizeof err) != 0 && strstr(err, "'core'"),
         "bad --bind accepted or unnamed: '%s'", err);
  EXPECT(attn_placement_bind_mode() == ATTN_BIND_CORES, "mode after cores");
  if (attn_placement_bind(n, report, sizeof report) == n) {
    cpu_set_t mine;
    CPU_ZERO(&mine);
    EXPECT(sched_getaffinity(0, sizeof mine, &mine) == 0, "sched_getaffinity");
    EXPECT(n == 1 || CPU_COUNT(&mine) < CPU_COUNT(&all), "cores: thread 0 still on every CPU");
  }
}

// OMP_PLACES / OMP_PROC_BIND set by the user: the default leaves placement to OpenMP, an
// explicit --bind cores still binds.
static void child_openmp_env(void) {
  setenv("OMP_PROC_BIND", "false", 1);
  EXPECT(attn_placement_bind_mode() == ATTN_BIND_OPENMP, "OMP_PROC_BIND set: mode %d",
         attn_placement_bind_mode());
  char report[512], err[160];
  EXPECT(attn_placement_bind(1, report, sizeof report) == 0 &&
             strstr(report, "not bound (OMP_PLACES/OMP_PROC_BIND set)"),
         "report '%s'", report);
  unsetenv("OMP_PROC_BIND"), setenv("OMP_PLACES", "cores", 1);
  EXPECT(attn_placement_bind_mode() == ATTN_BIND_OPENMP, "OMP_PLACES set: mode %d",
         attn_placement_bind_mode());
  EXPECT(attn_placement_set_bind("cores", err, sizeof err) == 0, "%s", err);
  EXPECT(attn_placement_bind_mode() == ATTN_BIND_CORES, "explicit cores lost to OMP_PLACES");
  unsetenv("OMP_PLACES");
}

static void test_cpu_set_and_modes(void) {
  cpu_set_t all;
  CPU_ZERO(&all);
  if (sched_getaffinity(0, sizeof all, &all) == 0)
    for (int c = 0; c < CPU_SETSIZE; c++)
      if (CPU_ISSET(c, &all)) g_last_cpu = c;
  if (g_last_cpu > 0)
    in_child("taskset", child_taskset);
  else
    printf("test_placement: one CPU allowed, the taskset case is not tried\n");
  in_child("--bind none", child_bind_none);
  in_child("OMP_* set", child_openmp_env);
}

static void test_threads_and_binding(void) {
  const attn_placement_caches c = attn_placement_query();
  const int n = attn_placement_default_threads();
  EXPECT(n >= 1, "default threads %d", n);
  if (c.cores > 0) EXPECT(n == c.cores, "default threads %d != physical cores %d", n, c.cores);
  char report[512], again[512];
  const int bound = attn_placement_bind(n, report, sizeof report);
  if (bound > 0) {
    EXPECT(bound == n, "bound %d of %d threads", bound, n);
    EXPECT(strncmp(report, "T0->core", 8) == 0, "report '%s'", report);
    char want[32];
    snprintf(want, sizeof want, "T%d->core", n - 1);
    EXPECT(strstr(report, want) != NULL, "report '%s' lacks %s", report, want);
  } else {
    EXPECT(report[0] != '\0', "binding failed without a reason");
  }
  attn_placement_describe(again, sizeof again);
  EXPECT(strcmp(report, again) == 0, "describe '%s' != bind report '%s'", again, report);
}

// The environment is read once, on first use (nothing above resolves settings): set it
// first. Then the harness's layers through attn_resolve: command line > environment >
// machine rule (hwloc's caches), per field.
static void test_tiles(void) {
  setenv("ATTNBENCH_TILE_Q", "40", 1), setenv("ATTNBENCH_TILE_KV", "96", 1);
  const attn_problem p = attn_problem_make(1, 8, 8, 2048, 2048, 64, 64, false);
  char err[256];
  attn_settings s;
  EXPECT(attn_resolve(NULL, &p, NULL, NULL, 0, &s, NULL, err, sizeof err) == 0, "%s", err);
  EXPECT(s.exec.tile_q == 40 && s.exec.tile_kv == 96, "env: got %d/%d", s.exec.tile_q,
         s.exec.tile_kv);
  EXPECT(s.source[ATTN_SETTING_TILE_Q] == ATTN_SOURCE_ENV &&
             !strcmp(s.what[ATTN_SETTING_TILE_Q], "ATTNBENCH_TILE_Q"),
         "env provenance: %d %s", s.source[ATTN_SETTING_TILE_Q], s.what[ATTN_SETTING_TILE_Q]);
  attn_setting_layer cli;  // the command line beats the environment, per field
  attn_setting_layer_clear(&cli);
  attn_setting_layer_set(&cli, ATTN_SETTING_TILE_Q, 8, "--tile-q");
  EXPECT(attn_resolve(NULL, &p, &cli, NULL, 0, &s, NULL, err, sizeof err) == 0, "%s", err);
  EXPECT(s.exec.tile_q == 8 && s.exec.tile_kv == 96, "cli+env: got %d/%d", s.exec.tile_q,
         s.exec.tile_kv);
  EXPECT(s.source[ATTN_SETTING_TILE_Q] == ATTN_SOURCE_CLI &&
             s.source[ATTN_SETTING_TILE_KV] == ATTN_SOURCE_ENV,
         "cli+env sources %d %d", s.source[ATTN_SETTING_TILE_Q], s.source[ATTN_SETTING_TILE_KV]);
  // Read once: a later change of the environment is not seen.
  setenv("ATTNBENCH_TILE_Q", "24", 1), unsetenv("ATTNBENCH_TILE_KV");
  EXPECT(attn_resolve(NULL, &p, NULL, NULL, 0, &s, NULL, err, sizeof err) == 0, "%s", err);
  EXPECT(s.exec.tile_q == 40 && s.exec.tile_kv == 96, "re-read the environment: got %d/%d",
         s.exec.tile_q, s.exec.tile_kv);
  // The machine layer is the tile rule with hwloc's caches, and the physical cores.
  const attn_placement_caches c = attn_placement_query();
  attn_setting_layer m;
  attn_resolve_machine_layer(&p, &m);
  if (c.l1d || c.l2) {
    int rq, rkv;
    attn_tiles_for_caches(&p, c.l1d, c.l2, &rq, &rkv);
    EXPECT(m.value[ATTN_SETTING_TILE_Q] == rq && m.value[ATTN_SETTING_TILE_KV] == rkv,
           "machine tiles %d/%d, the rule with hwloc's caches gives %d/%d",
           m.value[ATTN_SETTING_TILE_Q], m.value[ATTN_SETTING_TILE_KV], rq, rkv);
  }
  if (c.cores > 0)
    EXPECT(m.value[ATTN_SETTING_THREADS] == c.cores, "machine threads %d, cores %d",
           m.value[ATTN_SETTING_THREADS], c.cores);
  // Kernels see attn_exec and the rule, nothing else: no environment.
  int kq, kkv, dq, dkv;
  attn_tiles_resolve(&p, &(attn_exec){0}, &kq, &kkv);
  attn_tiles_for_caches(&p, 0, 0, &dq, &dkv);
  EXPECT(kq == dq && kkv == dkv, "kernel-side tiles %d/%d, the rule gives %d/%d", kq, kkv, dq, dkv);
  attn_tiles_resolve(&p, &(attn_exec){.tile_q = 5, .tile_kv = 7}, &kq, &kkv);
  EXPECT(kq == 5 && kkv == 7, "kernel-side exec tiles: got %d/%d", kq, kkv);
  // One value at a time: the parser.
  static const char *const bad[] = {"abc", "0", "-5", "12x", "99999999", " 7"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    int v = -1;
    err[0] = '\0';
    EXPECT(attn_settings_parse_tile("ATTNBENCH_TILE_Q", bad[i], &v, err, sizeof err) != 0,
           "ATTNBENCH_TILE_Q=%s accepted", bad[i]);
    EXPECT(strstr(err, "ATTNBENCH_TILE_Q") != NULL && strstr(err, bad[i]) != NULL,
           "error '%s' does not name the variable and value", err);
  }
  int v = -1;
  EXPECT(attn_settings_parse_tile("X", "64", &v, err, sizeof err) == 0 && v == 64, "64 -> %d", v);
  EXPECT(attn_settings_parse_tile("X", NULL, &v, err, sizeof err) == 0 && v == 0, "unset -> %d", v);
  EXPECT(attn_settings_parse_tile("X", "", &v, err, sizeof err) == 0 && v == 0, "empty -> %d", v);
}

// The rule itself: within range, multiples of the register tiles, monotone in L2.
static void test_rule(void) {
  static const size_t l2s[] = {256 << 10, 512 << 10, 1 << 20, 2 << 20, 32 << 20};
  static const int dims[] = {1, 64, 128, 256, 1000};
  for (size_t d = 0; d < sizeof dims / sizeof dims[0]; d++) {
    const attn_problem p = attn_problem_make(1, 1, 1, 100, 100, dims[d], dims[d], false);
    int prev_q = 0;
    for (size_t i = 0; i < sizeof l2s / sizeof l2s[0]; i++) {
      int tq, tkv;
      attn_tiles_for_caches(&p, 32 << 10, l2s[i], &tq, &tkv);
      EXPECT(tq >= 8 && tq <= 256 && tq % 8 == 0, "D%d L2 %zu: tile_q %d", dims[d], l2s[i], tq);
      EXPECT(tkv >= 32 && tkv <= 512 && tkv % 32 == 0, "D%d L2 %zu: tile_kv %d", dims[d], l2s[i],
             tkv);
      EXPECT(tq >= prev_q, "D%d: tile_q shrinks as L2 grows", dims[d]);
      prev_q = tq;
    }
  }
}

static void test_bandwidth(void) {
  attn_bandwidth b;
  EXPECT(attn_bandwidth_read((size_t)8 << 20, 2, 3, &b) == 0, "probe failed");
  EXPECT(b.ok == 1, "probe sum mismatch");
  EXPECT(b.best_gbs > 0 && b.median_gbs > 0 && b.best_gbs >= b.median_gbs, "best %g median %g",
         b.best_gbs, b.median_gbs);
  EXPECT(b.bytes == ((size_t)8 << 20) && b.threads == 2 && b.passes == 3, "fields");
  EXPECT(b.pattern != NULL, "no pattern named");
  // Every read pattern sums every element: sizes that leave tails in a thread's slice, a
  // 1 Mi-float chunk, a 16-float step and a two-stream half (all values positive, so a
  // skipped element shows as a smaller sum) ...
  const size_t sizes[] = {((size_t)5 << 20) + 4 * 37, ((size_t)1 << 20) + 4 * 3, 4 * 41};
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
    for (int t = 1; t <= 2; t++) {
      attn_bandwidth_buffer buf;
      EXPECT(attn_bandwidth_prepare(sizes[i], t, &buf) == 0, "prepare %zu", sizes[i]);
      attn_bandwidth r = {0};
      EXPECT(attn_bandwidth_measure(&buf, t, 1, &r) == 0 && r.ok == 1,
             "%zu bytes, %d threads: sum mismatch", sizes[i], t);
      // ... and the check fails when one element is off: first, in a second half, last.
      const size_t at[] = {0, buf.n / 2 + buf.n / 8, buf.n - 1};
      for (size_t k = 0; k < 3; k++) {
        buf.x[at[k]] = 1.0f;
        EXPECT(attn_bandwidth_measure(&buf, t, 1, &r) == 0 && r.ok == 0,
               "%zu bytes, %d threads: element %zu changed, the check passed", sizes[i], t, at[k]);
        buf.x[at[k]] = 1.0f / 64.0f;
      }
      attn_bandwidth_release(&buf);
    }
}

int main(void) {
  test_cpu_set_and_modes();  // first: forks before this process starts OpenMP or hwloc
  test_threads_and_binding();
  test_tiles();
  test_rule();
  test_bandwidth();
  return test_finish("test_placement");
}
