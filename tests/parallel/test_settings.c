// SPDX-License-Identifier: MIT
// kernels/core/settings.c, the one resolver of execution settings: for every setting and
// every pair of sources the higher one wins (command line > config > environment > tuning
// file > machine rule > kernel default) and the provenance names the winner; the
// environment layer's parsing (through a fake getenv), the machine rule, the register-tile
// variant by name or index and the faults (a variant the kernel lacks, the thread cap).
// Kernels only: no harness, no hwloc.
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attn.h"
#include "core/settings.h"
#include "core/tiles.h"
#include "test_util.h"

static const char *const *g_env;  // "NAME", "value", ..., NULL

static const char *fake_getenv(const char *name) {
  for (const char *const *e = g_env; e && *e; e += 2)
    if (!strcmp(e[0], name)) return e[1];
  return NULL;
}

// A kernel with several register-tile variants and split-KV (the flash kernels of this
// build), or NULL.
static const attn_kernel *variant_kernel(void) {
  for (size_t i = 0; i < attn_kernel_count(); i++) {
    const attn_kernel *k = attn_kernel_at(i);
    if (attn_kernel_regtile_count(k) >= 2 && (k->caps & ATTN_CAP_KV_SPLIT)) return k;
  }
  return NULL;
}

// Every integer setting, each pair of sources hi > lo: with both giving a value the
// higher wins, with only the lower it does.
static void test_precedence(const attn_problem *p) {
  static const attn_setting fields[] = {ATTN_SETTING_THREADS, ATTN_SETTING_BIND,
                                        ATTN_SETTING_TILE_Q, ATTN_SETTING_TILE_KV,
                                        ATTN_SETTING_KV_SPLIT};
  for (size_t fi = 0; fi < sizeof fields / sizeof fields[0]; fi++) {
    const attn_setting f = fields[fi];
    for (int hi = ATTN_SOURCE_MACHINE; hi < ATTN_SOURCE_COUNT; hi++)
      for (int lo = ATTN_SOURCE_MACHINE; lo < hi; lo++) {
        attn_setting_layers ls;
        attn_setting_layers_clear(&ls);
        // distinct values per source (bind: cores for the higher, none for the lower)
        const int vhi = f == ATTN_SETTING_BIND ? ATTN_BIND_CORES : 10 + hi;
        const int vlo = f == ATTN_SETTING_BIND ? ATTN_BIND_NONE : 10 + lo;
        attn_setting_layer_set(&ls.layer[hi], f, vhi, "hi");
        attn_setting_layer_set(&ls.layer[lo], f, vlo, "lo");
        attn_settings s;
        char err[256];
        EXPECT(attn_settings_resolve(NULL, p, &ls, &s, NULL, err, sizeof err) == 0, "%s", err);
        char v[32];
        attn_settings_value(&s, NULL, f, v, sizeof v);
        EXPECT(s.source[f] == (attn_source)hi && !strcmp(s.what[f], "hi"),
               "%s: %s over %s: got source %s (%s), value %s", attn_setting_name(f),
               attn_source_name(hi), attn_source_name(lo), attn_source_name(s.source[f]), s.what[f],
               v);
        attn_setting_layer_clear(&ls.layer[hi]);
        EXPECT(attn_settings_resolve(NULL, p, &ls, &s, NULL, err, sizeof err) == 0, "%s", err);
        EXPECT(s.source[f] == (attn_source)lo, "%s: only %s gives it: source %s",
               attn_setting_name(f), attn_source_name(lo), attn_source_name(s.source[f]));
      }
  }
  // Field by field: the command line's tile_q does not take the environment's tile_kv.
  attn_setting_layers ls;
  attn_setting_layers_clear(&ls);
  attn_setting_layer_set(&ls.layer[ATTN_SOURCE_CLI], ATTN_SETTING_TILE_Q, 24, "--tile-q");
  attn_setting_layer_set(&ls.layer[ATTN_SOURCE_ENV], ATTN_SETTING_TILE_Q, 40, "ATTNBENCH_TILE_Q");
  attn_setting_layer_set(&ls.layer[ATTN_SOURCE_ENV], ATTN_SETTING_TILE_KV, 96, "ATTNBENCH_TILE_KV");
  attn_settings s;
  char err[256];
  EXPECT(attn_settings_resolve(NULL, p, &ls, &s, NULL, err, sizeof err) == 0, "%s", err);
  EXPECT(s.exec.tile_q == 24 && s.exec.tile_kv == 96, "per field: %d/%d", s.exec.tile_q,
         s.exec.tile_kv);
}

// Nothing given: the kernel defaults, exactly what a kernel does with an attn_exec of 0s.
static void test_defaults(const attn_problem *p) {
  attn_setting_layers ls;
  attn_setting_layers_clear(&ls);
  attn_settings s;
  char err[256];
  EXPECT(attn_settings_resolve(NULL, p, &ls, &s, NULL, err, sizeof err) == 0, "%s", err);
  int tq, tkv;
  attn_tiles_resolve(p, &(attn_exec){0}, &tq, &tkv);
  EXPECT(s.exec.tile_q == tq && s.exec.tile_kv == tkv, "default tiles %d/%d, kernel's %d/%d",
         s.exec.tile_q, s.exec.tile_kv, tq, tkv);
  EXPECT(s.exec.threads == omp_get_max_threads(), "default threads %d", s.exec.threads);
  EXPECT(s.bind == ATTN_BIND_NONE && s.exec.regtile == 0 && s.exec.kv_split == 0,
         "default bind %d regtile %d kv_split %d", s.bind, s.exec.regtile, s.exec.kv_split);
  for (int f = 0; f < ATTN_SETTING_COUNT; f++)
    EXPECT(s.source[f] == ATTN_SOURCE_DEFAULT, "%s: source %s", attn_setting_name(f),
           attn_source_name(s.source[f]));
}

// The machine rule: cores → threads, caches → the tile rule, binding when possible; what
// the machine does not know stays with the kernel default.
static void test_machine(const attn_problem *p) {
  attn_setting_layers ls;
  attn_setting_layers_clear(&ls);
  attn_settings_machine(&ls.layer[ATTN_SOURCE_MACHINE], p, 48 << 10, 2 << 20, 3, true);
  attn_settings s;
  char err[256];
  EXPECT(attn_settings_resolve(NULL, p, &ls, &s, NULL, err, sizeof err) == 0, "%s", err);
  int tq, tkv;
  attn_tiles_for_caches(p, 48 << 10, 2 << 20, &tq, &tkv);
  EXPECT(s.exec.threads == 3 && s.bind == ATTN_BIND_CORES && s.exec.tile_q == tq &&
             s.exec.tile_kv == tkv,
         "machine: threads %d bind %d tiles %d/%d (rule %d/%d)", s.exec.threads, s.bind,
         s.exec.tile_q, s.exec.tile_kv, tq, tkv);
  EXPECT(strstr(s.what[ATTN_SETTING_TILE_Q], "L1d 48 KiB, L2 2048 KiB") != NULL, "what '%s'",
         s.what[ATTN_SETTING_TILE_Q]);
  attn_setting_layers_clear(&ls);
  attn_settings_machine(&ls.layer[ATTN_SOURCE_MACHINE], p, 0, 0, 0, false);
  EXPECT(attn_settings_resolve(NULL, p, &ls, &s, NULL, err, sizeof err) == 0, "%s", err);
  for (int f = 0; f < ATTN_SETTING_COUNT; f++)
    EXPECT(s.source[f] == ATTN_SOURCE_DEFAULT, "unknown machine: %s from %s", attn_setting_name(f),
           attn_source_name(s.source[f]));
}

static void test_env(void) {
  static const char *const good[] = {"ATTNBENCH_TILE_Q",
                                     "40",
                                     "ATTNBENCH_TILE_KV",
                                     "96",
                                     "ATTNBENCH_REGTILE",
                                     "1",
                                     "ATTNBENCH_KV_SPLIT",
                                     "0",
                                     "OMP_PROC_BIND",
                                     "true",
                                     NULL};
  attn_setting_layer l;
  attn_setting_layer_clear(&l);
  char err[256];
  g_env = good;
  EXPECT(attn_settings_env(&l, fake_getenv, err, sizeof err) == 0, "%s", err);
  EXPECT(l.value[ATTN_SETTING_TILE_Q] == 40 && l.value[ATTN_SETTING_TILE_KV] == 96 &&
             !strcmp(l.regtile, "1") && l.value[ATTN_SETTING_KV_SPLIT] == 0 &&
             l.value[ATTN_SETTING_BIND] == ATTN_BIND_OPENMP,
         "env layer: %d %d '%s' %d %d", l.value[ATTN_SETTING_TILE_Q], l.value[ATTN_SETTING_TILE_KV],
         l.regtile, l.value[ATTN_SETTING_KV_SPLIT], l.value[ATTN_SETTING_BIND]);
  EXPECT(!attn_setting_layer_has(&l, ATTN_SETTING_THREADS), "threads without OMP_NUM_THREADS");
  EXPECT(!strcmp(l.what[ATTN_SETTING_TILE_KV], "ATTNBENCH_TILE_KV"), "what '%s'",
         l.what[ATTN_SETTING_TILE_KV]);
  static const char *const omp[] = {"OMP_NUM_THREADS", "3", NULL};
  attn_setting_layer_clear(&l);
  g_env = omp;
  EXPECT(attn_settings_env(&l, fake_getenv, err, sizeof err) == 0, "%s", err);
  EXPECT(l.value[ATTN_SETTING_THREADS] == omp_get_max_threads() &&
             !strcmp(l.what[ATTN_SETTING_THREADS], "OMP_NUM_THREADS"),
         "OMP_NUM_THREADS: threads %d (%s)", l.value[ATTN_SETTING_THREADS],
         l.what[ATTN_SETTING_THREADS]);
  static const char *const bad[][3] = {{"ATTNBENCH_TILE_Q", "0", NULL},
                                       {"ATTNBENCH_TILE_KV", "12x", NULL},
                                       {"ATTNBENCH_REGTILE", "a b", NULL},
                                       {"ATTNBENCH_KV_SPLIT", "-1", NULL},
                                       {"ATTNBENCH_KV_SPLIT", "99999", NULL}};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    attn_setting_layer_clear(&l);
    g_env = bad[i];
    err[0] = '\0';
    EXPECT(
        attn_settings_env(&l, fake_getenv, err, sizeof err) != 0 && strstr(err, bad[i][0]) != NULL,
        "%s=%s: accepted or unnamed ('%s')", bad[i][0], bad[i][1], err);
  }
  g_env = NULL;
}

static void test_regtile_and_faults(const attn_problem *p) {
  const attn_kernel *k = variant_kernel();
  attn_setting_layers ls;
  attn_settings s;
  attn_setting_fault fault;
  char err[512];
  if (k) {
    const int n = attn_kernel_regtile_count(k);
    const char *last = attn_kernel_regtile(k, n - 1).name;
    attn_setting_layers_clear(&ls);  // by name from the tuning file, by index from the env
    attn_setting_layer_regtile(&ls.layer[ATTN_SOURCE_TUNE_FILE], last, "file");
    EXPECT(attn_settings_resolve(k, p, &ls, &s, NULL, err, sizeof err) == 0, "%s", err);
    EXPECT(s.exec.regtile == n - 1 && s.source[ATTN_SETTING_REGTILE] == ATTN_SOURCE_TUNE_FILE,
           "%s by name: %d", last, s.exec.regtile);
    attn_setting_layer_regtile(&ls.layer[ATTN_SOURCE_ENV], "1", "ATTNBENCH_REGTILE");
    EXPECT(attn_settings_resolve(k, p, &ls, &s, NULL, err, sizeof err) == 0, "%s", err);
    EXPECT(s.exec.regtile == 1 && s.source[ATTN_SETTING_REGTILE] == ATTN_SOURCE_ENV,
           "index from the environment over the file: %d", s.exec.regtile);
    attn_setting_layer_regtile(&ls.layer[ATTN_SOURCE_CLI], "9x9", "--regtile");
    EXPECT(attn_settings_resolve(k, p, &ls, &s, &fault, err, sizeof err) != 0 &&
               fault.field == ATTN_SETTING_REGTILE && fault.source == ATTN_SOURCE_CLI &&
               strstr(err, "--regtile '9x9'") && strstr(err, k->name),
           "a variant the kernel lacks: '%s'", err);
  } else {
    printf("test_settings: no kernel with register-tile variants here; that part skipped\n");
  }
  attn_setting_layers_clear(&ls);  // the thread cap, named by its source
  attn_setting_layer_set(&ls.layer[ATTN_SOURCE_ENV], ATTN_SETTING_THREADS, ATTN_MAX_THREADS + 1,
                         "OMP_NUM_THREADS");
  EXPECT(attn_settings_resolve(NULL, p, &ls, &s, &fault, err, sizeof err) != 0 &&
             fault.field == ATTN_SETTING_THREADS && fault.source == ATTN_SOURCE_ENV &&
             strstr(err, "OMP_NUM_THREADS") && strstr(err, "cap"),
         "thread cap: '%s'", err);
  attn_setting_layer_set(&ls.layer[ATTN_SOURCE_CLI], ATTN_SETTING_THREADS, 2, "--threads");
  EXPECT(attn_settings_resolve(NULL, p, &ls, &s, NULL, err, sizeof err) == 0 && s.exec.threads == 2,
         "--threads under the cap wins over OMP_NUM_THREADS above it: %s", err);
  char text[1024];  // the explain text names each setting and its source
  attn_settings_explain(&s, NULL, text, sizeof text);
  EXPECT(strstr(text, "threads  = 2") && strstr(text, "from command line (--threads)") &&
             strstr(text, "kv_split = 0"),
         "explain:\n%s", text);
}

int main(void) {
  const attn_problem p = attn_problem_make(1, 4, 2, 300, 500, 64, 64, false);
  test_defaults(&p);
  test_precedence(&p);
  test_machine(&p);
  test_env();
  test_regtile_and_faults(&p);
  return test_finish("test_settings");
}
