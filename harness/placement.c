// SPDX-License-Identifier: MIT
// Thread placement and cache-derived tile sizes with hwloc (see placement.h).
#include "placement.h"

#include <ctype.h>
#include <errno.h>
#include <hwloc.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/tiles.h"
#include "topology.h"

static char g_report[512] = "unbound";

// The process's one hwloc topology, loaded by topology.c.
static hwloc_topology_t topo(void) {
  return (hwloc_topology_t)attn_topology_hwloc();
}

attn_placement_caches attn_placement_query(void) {
  attn_placement_caches c = {0};
  const attn_topology *t = attn_topology_get();
  if (!t->ok) return c;
  c.l1d = (size_t)t->l1d_bytes;
  c.l2 = (size_t)t->l2_bytes;
  c.l3 = (size_t)t->l3_bytes;
  c.cores = t->cores > 0 ? t->cores : 0;
  c.pus = t->pus > 0 ? t->pus : 0;
  return c;
}

int attn_placement_default_threads(void) {
  const attn_placement_caches c = attn_placement_query();
  return c.cores > 0 ? c.cores : omp_get_max_threads();
}

int attn_placement_bind(int threads, char *report, size_t len) {
  hwloc_topology_t t = topo();
  if (threads <= 0) threads = attn_placement_default_threads();
  if (!t) {
    snprintf(report, len, "hwloc topology unavailable: threads not bound");
    snprintf(g_report, sizeof g_report, "unbound (hwloc unavailable)");
    return -1;
  }
  const int cores = hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_CORE);
  if (cores <= 0) {
    snprintf(report, len, "hwloc reports no cores: threads not bound");
    snprintf(g_report, sizeof g_report, "unbound (no cores)");
    return -1;
  }
  int core_of[256], pu_of[256], err_of[256];
  const int n = threads < 256 ? threads : 256;
  int bound = 0;
#pragma omp parallel num_threads(n) reduction(+ : bound)
  {
    const int tid = omp_get_thread_num();
    hwloc_obj_t core = hwloc_get_obj_by_type(t, HWLOC_OBJ_CORE, (unsigned)(tid % cores));
    err_of[tid] = 0, core_of[tid] = -1, pu_of[tid] = -1;
    if (core && hwloc_set_cpubind(t, core->cpuset, HWLOC_CPUBIND_THREAD) == 0) {
      bound = 1;
      core_of[tid] = (int)core->logical_index;
      hwloc_cpuset_t where = hwloc_bitmap_alloc();
      if (where && hwloc_get_last_cpu_location(t, where, HWLOC_CPUBIND_THREAD) == 0)
        pu_of[tid] = hwloc_bitmap_first(where);
      hwloc_bitmap_free(where);
    } else {
      err_of[tid] = errno ? errno : EINVAL;
    }
  }
  size_t off = 0;
  report[0] = '\0';
  for (int i = 0; i < n && off + 1 < len; i++) {
    int w;
    if (core_of[i] >= 0)
      w = snprintf(report + off, len - off, "%sT%d->core%d(PU%d)", i ? " " : "", i, core_of[i],
                   pu_of[i]);
    else
      w = snprintf(report + off, len - off, "%sT%d unbound (%s)", i ? " " : "", i,
                   strerror(err_of[i]));
    if (w < 0) break;
    off += (size_t)w;
  }
  snprintf(g_report, sizeof g_report, "%s", report);
  return bound == n ? n : (bound ? bound : -1);
}

const char *attn_placement_describe(char *buf, size_t len) {
  snprintf(buf, len, "%s", g_report);
  return buf;
}

int attn_placement_parse_tile(const char *name, const char *value, int *tile, char *err,
                              size_t err_len) {
  *tile = 0;
  if (!value || !*value) return 0;
  char *end;
  errno = 0;
  const long v = strtol(value, &end, 10);  // digits only: no sign, no blanks
  if (!isdigit((unsigned char)value[0]) || errno || *end || v <= 0 || v > (1L << 20)) {
    if (err && err_len)
      snprintf(err, err_len, "%s=%s: expected a positive integer (at most 1048576)", name, value);
    return -1;
  }
  *tile = (int)v;
  return 0;
}

// ATTNBENCH_TILE_Q / ATTNBENCH_TILE_KV, read and checked once per process.
static struct {
  int state;  // 0 = not read yet, 1 = read, −1 = a value is malformed (err says which)
  int tile[2];
  char err[192];
} g_env;

int attn_placement_env_tiles(attn_exec *exec, char *err, size_t err_len) {
  static const char *const names[2] = {"ATTNBENCH_TILE_Q", "ATTNBENCH_TILE_KV"};
  if (g_env.state == 0) {
    g_env.state = 1;
    for (int i = 0; i < 2 && g_env.state == 1; i++)
      if (attn_placement_parse_tile(names[i], getenv(names[i]), &g_env.tile[i], g_env.err,
                                    sizeof g_env.err) != 0)
        g_env.state = -1;
  }
  if (g_env.state < 0) {
    if (err && err_len) snprintf(err, err_len, "%s", g_env.err);
    return -1;
  }
  if (exec) {  // the command line / config (exec) wins, field by field
    if (exec->tile_q <= 0) exec->tile_q = g_env.tile[0];
    if (exec->tile_kv <= 0) exec->tile_kv = g_env.tile[1];
  }
  return 0;
}

bool attn_placement_env_bad(const char *command, attn_exec *exec) {
  char err[256];
  if (attn_placement_env_tiles(exec, err, sizeof err) == 0) return false;
  fprintf(stderr, "attnbench %s: %s\n", command, err);
  return true;
}

int attn_placement_tiles(const attn_problem *p, attn_exec *exec, char *err, size_t err_len) {
  if (attn_placement_env_tiles(exec, err, err_len) != 0) return -1;
  if (exec->tile_q > 0 && exec->tile_kv > 0) return 0;
  const attn_placement_caches c = attn_placement_query();
  int rq, rkv;
  attn_tiles_for_caches(p, c.l1d, c.l2, &rq, &rkv);
  if (exec->tile_q <= 0) exec->tile_q = rq;
  if (exec->tile_kv <= 0) exec->tile_kv = rkv;
  return 0;
}
