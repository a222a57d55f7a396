// SPDX-License-Identifier: MIT
// The settings resolver (see settings.h).
#include "core/settings.h"

#include <ctype.h>
#include <errno.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/attn_internal.h"
#include "core/tiles.h"

int attn_exec_threads(const attn_exec *exec) {
  return exec && exec->threads > 0 ? exec->threads : omp_get_max_threads();
}

static const char *const kSettingNames[ATTN_SETTING_COUNT] = {"threads", "bind",    "tile_q",
                                                              "tile_kv", "regtile", "kv_split"};
static const char *const kSourceNames[ATTN_SOURCE_COUNT] = {
    "kernel default", "machine rule", "tuning file", "environment", "config", "command line"};

const char *attn_setting_name(attn_setting f) {
  return f >= 0 && f < ATTN_SETTING_COUNT ? kSettingNames[f] : "?";
}

const char *attn_source_name(attn_source s) {
  return s >= 0 && s < ATTN_SOURCE_COUNT ? kSourceNames[s] : "?";
}

const char *attn_bind_mode_name(attn_bind_mode m) {
  switch (m) {
    case ATTN_BIND_DEFAULT:
      return "default";
    case ATTN_BIND_CORES:
      return "cores";
    case ATTN_BIND_NONE:
      return "none";
    case ATTN_BIND_OPENMP:
      return "openmp";
  }
  return "?";
}

void attn_setting_layer_clear(attn_setting_layer *l) {
  memset(l, 0, sizeof *l);
  for (int f = 0; f < ATTN_SETTING_COUNT; f++) l->value[f] = ATTN_SETTING_UNSET;
}

void attn_setting_layers_clear(attn_setting_layers *ls) {
  for (int s = 0; s < ATTN_SOURCE_COUNT; s++) attn_setting_layer_clear(&ls->layer[s]);
}

void attn_setting_layer_set(attn_setting_layer *l, attn_setting f, int value, const char *what) {
  l->value[f] = value;
  snprintf(l->what[f], sizeof l->what[f], "%s", what ? what : "");
}

void attn_setting_layer_regtile(attn_setting_layer *l, const char *name_or_index,
                                const char *what) {
  snprintf(l->regtile, sizeof l->regtile, "%s", name_or_index ? name_or_index : "");
  snprintf(l->what[ATTN_SETTING_REGTILE], sizeof l->what[0], "%s", what ? what : "");
}

bool attn_setting_layer_has(const attn_setting_layer *l, attn_setting f) {
  return f == ATTN_SETTING_REGTILE ? l->regtile[0] != '\0' : l->value[f] != ATTN_SETTING_UNSET;
}

void attn_settings_machine(attn_setting_layer *l, const attn_problem *p, size_t l1d, size_t l2,
                           int cores, bool can_bind) {
  char what[ATTN_SETTING_WHAT];
  if (cores > 0) {
    snprintf(what, sizeof what, "%d physical cores in the CPU set", cores);
    attn_setting_layer_set(l, ATTN_SETTING_THREADS, cores, what);
  }
  if (can_bind)
    attn_setting_layer_set(l, ATTN_SETTING_BIND, ATTN_BIND_CORES, "one thread per core");
  if (l1d > 0 || l2 > 0) {  // an unknown size is the rule's assumed one (tiles.h)
    int tq, tkv;
    attn_tiles_for_caches(p, l1d, l2, &tq, &tkv);
    const size_t kl1 = (l1d ? l1d : ATTN_TILES_DEFAULT_L1D) >> 10;
    const size_t kl2 = (l2 ? l2 : ATTN_TILES_DEFAULT_L2) >> 10;
    snprintf(what, sizeof what, "tile rule, L1d %zu KiB, L2 %zu KiB", kl1, kl2);
    attn_setting_layer_set(l, ATTN_SETTING_TILE_Q, tq, what);
    attn_setting_layer_set(l, ATTN_SETTING_TILE_KV, tkv, what);
  }
}

int attn_settings_parse_tile(const char *name, const char *value, int *tile, char *err,
                             size_t err_len) {
  *tile = 0;
  if (!value || !*value) return 0;
  char *end;
  errno = 0;
  const long v = strtol(value, &end, 10);  // digits only: no sign, no blanks
  if (!isdigit((unsigned char)value[0]) || errno || *end || v <= 0 || v > ATTN_MAX_TILE) {
    if (err && err_len)
      snprintf(err, err_len, "%s=%s: expected a positive integer (at most %d)", name, value,
               ATTN_MAX_TILE);
    return -1;
  }
  *tile = (int)v;
  return 0;
}

int attn_settings_parse_kv_split(const char *name, const char *value, int *kv_split, char *err,
                                 size_t err_len) {
  *kv_split = -1;
  if (!value || !*value) return 0;
  char *end;
  errno = 0;
  const long v = strtol(value, &end, 10);
  if (!isdigit((unsigned char)value[0]) || errno || *end || v < 0 || v > ATTN_MAX_KV_SPLIT) {
    if (err && err_len)
      snprintf(err, err_len, "%s=%s: expected a whole number in 0..%d (0 = the kernel's rule)",
               name, value, ATTN_MAX_KV_SPLIT);
    return -1;
  }
  *kv_split = (int)v;
  return 0;
}

bool attn_settings_regtile_syntax(const char *value) {
  if (!value || !*value || strlen(value) > 31) return false;
  for (const char *c = value; *c; c++)
    if (!(isalnum((unsigned char)*c) || *c == '/' || *c == '_' || *c == '.' || *c == '-'))
      return false;
  return true;
}

int attn_settings_regtile_index(const attn_kernel *k, const char *value, const char *what,
                                char *err, size_t err_len) {
  const int n = attn_kernel_regtile_count(k);
  int i = attn_kernel_regtile_find(k, value);
  if (i < 0 && isdigit((unsigned char)value[0])) {
    char *end;
    const long v = strtol(value, &end, 10);
    if (!*end && v >= 0 && v < n) i = (int)v;
  }
  if (i >= 0) return i;
  if (err && err_len) {
    int w =
        snprintf(err, err_len, "%s '%s': kernel %s has no such register-tile variant (0..%d:", what,
                 value, k->name, n - 1);
    for (int j = 0; j < n && w >= 0 && (size_t)w < err_len; j++)
      w += snprintf(err + w, err_len - (size_t)w, " %s", attn_kernel_regtile(k, j).name);
    if (w >= 0 && (size_t)w < err_len) snprintf(err + w, err_len - (size_t)w, ")");
  }
  return -1;
}

static bool set_in(attn_settings_getenv get, const char *name) {
  const char *v = get(name);
  return v && *v;
}

int attn_settings_env(attn_setting_layer *l, attn_settings_getenv get, char *err, size_t err_len) {
  static const char *const tiles[2] = {"ATTNBENCH_TILE_Q", "ATTNBENCH_TILE_KV"};
  static const attn_setting tile_f[2] = {ATTN_SETTING_TILE_Q, ATTN_SETTING_TILE_KV};
  for (int i = 0; i < 2; i++) {
    int t;
    if (attn_settings_parse_tile(tiles[i], get(tiles[i]), &t, err, err_len) != 0) return -1;
    if (t > 0) attn_setting_layer_set(l, tile_f[i], t, tiles[i]);
  }
  const char *rt = get("ATTNBENCH_REGTILE");
  if (rt && *rt) {
    if (!attn_settings_regtile_syntax(rt)) {
      if (err && err_len)
        snprintf(err, err_len,
                 "ATTNBENCH_REGTILE=%.40s: expected a register-tile variant name or index "
                 "(attnbench list: rt=)",
                 rt);
      return -1;
    }
    attn_setting_layer_regtile(l, rt, "ATTNBENCH_REGTILE");
  }
  int kv;
  if (attn_settings_parse_kv_split("ATTNBENCH_KV_SPLIT", get("ATTNBENCH_KV_SPLIT"), &kv, err,
                                   err_len) != 0)
    return -1;
  if (kv >= 0) attn_setting_layer_set(l, ATTN_SETTING_KV_SPLIT, kv, "ATTNBENCH_KV_SPLIT");
  // The OpenMP runtime parsed OMP_NUM_THREADS (a list "4,2" too): its default is the value.
  if (set_in(get, "OMP_NUM_THREADS"))
    attn_setting_layer_set(l, ATTN_SETTING_THREADS, omp_get_max_threads(), "OMP_NUM_THREADS");
  if (set_in(get, "OMP_PLACES") || set_in(get, "OMP_PROC_BIND"))
    attn_setting_layer_set(l, ATTN_SETTING_BIND, ATTN_BIND_OPENMP,
                           set_in(get, "OMP_PLACES") ? "OMP_PLACES" : "OMP_PROC_BIND");
  return 0;
}

// The kernel defaults (what a kernel does with an attn_exec of zeros, made explicit).
static void default_layer(const attn_problem *p, attn_setting_layer *l) {
  attn_setting_layer_clear(l);
  attn_setting_layer_set(l, ATTN_SETTING_THREADS, omp_get_max_threads(), "OpenMP default");
  attn_setting_layer_set(l, ATTN_SETTING_BIND, ATTN_BIND_NONE, "not bound");
  int tq, tkv;
  attn_tiles_for_caches(p, 0, 0, &tq, &tkv);
  char what[ATTN_SETTING_WHAT];
  snprintf(what, sizeof what, "tile rule, assumed L1d %zu KiB, L2 %zu KiB",
           ATTN_TILES_DEFAULT_L1D >> 10, ATTN_TILES_DEFAULT_L2 >> 10);
  attn_setting_layer_set(l, ATTN_SETTING_TILE_Q, tq, what);
  attn_setting_layer_set(l, ATTN_SETTING_TILE_KV, tkv, what);
  attn_setting_layer_set(l, ATTN_SETTING_REGTILE, 0, "the kernel's default variant");
  attn_setting_layer_set(l, ATTN_SETTING_KV_SPLIT, 0, "the kernel's split rule");
}

int attn_settings_resolve(const attn_kernel *k, const attn_problem *p,
                          const attn_setting_layers *layers, attn_settings *s,
                          attn_setting_fault *fault, char *err, size_t err_len) {
  attn_setting_layer dflt;
  default_layer(p, &dflt);
  memset(s, 0, sizeof *s);
  int value[ATTN_SETTING_COUNT];
  for (int f = 0; f < ATTN_SETTING_COUNT; f++) {
    int src = ATTN_SOURCE_COUNT - 1;  // the first source (highest precedence) that gives f
    while (src > ATTN_SOURCE_DEFAULT && !attn_setting_layer_has(&layers->layer[src], f)) src--;
    const attn_setting_layer *l = src > ATTN_SOURCE_DEFAULT ? &layers->layer[src] : &dflt;
    s->source[f] = (attn_source)src;
    snprintf(s->what[f], sizeof s->what[f], "%s", l->what[f]);
    value[f] = l->value[f];
    if (f == ATTN_SETTING_REGTILE && src > ATTN_SOURCE_DEFAULT) {
      value[f] = 0;  // a name or an index, checked against the kernel
      if (k &&
          (value[f] = attn_settings_regtile_index(k, l->regtile, l->what[f], err, err_len)) < 0) {
        if (fault) *fault = (attn_setting_fault){ATTN_SETTING_REGTILE, (attn_source)src};
        return -1;
      }
      if (!k) snprintf(s->what[f], sizeof s->what[f], "%s", "no kernel: variant 0");
    }
  }
  s->exec = (attn_exec){.threads = value[ATTN_SETTING_THREADS],
                        .tile_q = value[ATTN_SETTING_TILE_Q],
                        .tile_kv = value[ATTN_SETTING_TILE_KV],
                        .regtile = value[ATTN_SETTING_REGTILE],
                        .kv_split = value[ATTN_SETTING_KV_SPLIT]};
  s->bind = (attn_bind_mode)value[ATTN_SETTING_BIND];
  // One check of the whole result: the thread cap first (by its source: OMP_NUM_THREADS
  // is the usual one), then the ranges and the variant.
  if (s->exec.threads < 1 || s->exec.threads > ATTN_MAX_THREADS) {
    const attn_source ts = s->source[ATTN_SETTING_THREADS];
    if (err && err_len && (ts == ATTN_SOURCE_ENV || ts == ATTN_SOURCE_DEFAULT))
      snprintf(err, err_len,
               "the OpenMP default of %d threads (OMP_NUM_THREADS) exceeds the cap of %d; "
               "set OMP_NUM_THREADS or the thread count to at most %d",
               s->exec.threads, ATTN_MAX_THREADS, ATTN_MAX_THREADS);
    else if (err && err_len)
      snprintf(err, err_len, "threads = %d (%s) is out of range (1..%d)", s->exec.threads,
               attn_source_name(ts), ATTN_MAX_THREADS);
    if (fault) *fault = (attn_setting_fault){ATTN_SETTING_THREADS, s->source[ATTN_SETTING_THREADS]};
    return -1;
  }
  const int rc = k ? attn_kernel_exec_check(k, &s->exec, err, err_len)
                   : attn_exec_check(&s->exec, err, err_len);
  if (rc != ATTN_OK) {
    if (fault) *fault = (attn_setting_fault){ATTN_SETTING_TILE_Q, s->source[ATTN_SETTING_TILE_Q]};
    return -1;
  }
  return 0;
}

const char *attn_settings_value(const attn_settings *s, const attn_kernel *k, attn_setting f,
                                char *buf, size_t len) {
  switch (f) {
    case ATTN_SETTING_THREADS:
      snprintf(buf, len, "%d", s->exec.threads);
      break;
    case ATTN_SETTING_BIND:
      snprintf(buf, len, "%s", attn_bind_mode_name(s->bind));
      break;
    case ATTN_SETTING_TILE_Q:
      snprintf(buf, len, "%d", s->exec.tile_q);
      break;
    case ATTN_SETTING_TILE_KV:
      snprintf(buf, len, "%d", s->exec.tile_kv);
      break;
    case ATTN_SETTING_REGTILE:
      if (k)
        snprintf(buf, len, "%d (%s)", s->exec.regtile,
                 attn_kernel_regtile(k, s->exec.regtile).name);
      else
        snprintf(buf, len, "%d", s->exec.regtile);
      break;
    case ATTN_SETTING_KV_SPLIT:
      snprintf(buf, len, "%d", s->exec.kv_split);
      break;
    default:
      snprintf(buf, len, "?");
  }
  return buf;
}

const char *attn_settings_provenance(const attn_settings *s, attn_setting f, char *buf,
                                     size_t len) {
  if (s->what[f][0])
    snprintf(buf, len, "%s (%s)", attn_source_name(s->source[f]), s->what[f]);
  else
    snprintf(buf, len, "%s", attn_source_name(s->source[f]));
  return buf;
}

int attn_settings_explain(const attn_settings *s, const attn_kernel *k, char *buf, size_t len) {
  int total = 0;
  for (int f = 0; f < ATTN_SETTING_COUNT; f++) {
    char v[64], from[ATTN_SETTING_WHAT + 32];
    const size_t off = (size_t)total < len ? (size_t)total : len;
    const int w = snprintf(buf + off, len - off, "  %-8s = %-16s from %s\n",
                           attn_setting_name((attn_setting)f),
                           attn_settings_value(s, k, (attn_setting)f, v, sizeof v),
                           attn_settings_provenance(s, (attn_setting)f, from, sizeof from));
    if (w < 0) return w;
    total += w;
  }
  return total;
}

const char *attn_settings_line(const attn_settings *s, const attn_kernel *k, char *buf,
                               size_t len) {
  size_t off = 0;
  if (len) buf[0] = '\0';
  for (int f = 0; f < ATTN_SETTING_COUNT && off < len; f++) {
    char v[64];
    const int w = snprintf(buf + off, len - off, "%s%s=%s [%s%s%s]", f ? "; " : "",
                           attn_setting_name((attn_setting)f),
                           attn_settings_value(s, k, (attn_setting)f, v, sizeof v),
                           attn_source_name(s->source[f]), s->what[f][0] ? ": " : "", s->what[f]);
    if (w < 0) break;
    off += (size_t)w;
  }
  return buf;
}
