// SPDX-License-Identifier: MIT
// Thread placement and cache-derived tile sizes with hwloc (see placement.h).
#include "placement.h"

#include <errno.h>
#include <hwloc.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/tiles.h"

static hwloc_topology_t g_topo;
static int g_topo_state;  // 0 = not loaded, 1 = loaded, −1 = failed
static char g_report[512] = "unbound";

static hwloc_topology_t topo(void) {
  if (g_topo_state == 0) {
    g_topo_state = -1;
    if (hwloc_topology_init(&g_topo) == 0) {
      if (hwloc_topology_load(g_topo) == 0) g_topo_state = 1;
      else hwloc_topology_destroy(g_topo);
    }
  }
  return g_topo_state == 1 ? g_topo : NULL;
}

// Size of the first cache of `type` (data or unified) on core 0's path to the root.
static size_t cache_size(hwloc_topology_t t, hwloc_obj_type_t type) {
  hwloc_obj_t c = hwloc_get_obj_by_type(t, type, 0);
  return c && c->attr ? (size_t)c->attr->cache.size : 0;
}

attn_placement_caches attn_placement_query(void) {
  attn_placement_caches c = {0};
  hwloc_topology_t t = topo();
  if (!t) return c;
  c.l1d = cache_size(t, HWLOC_OBJ_L1CACHE);
  c.l2 = cache_size(t, HWLOC_OBJ_L2CACHE);
  c.l3 = cache_size(t, HWLOC_OBJ_L3CACHE);
  const int cores = hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_CORE);
  const int pus = hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_PU);
  c.cores = cores > 0 ? cores : 0;
  c.pus = pus > 0 ? pus : 0;
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

// A positive integer from the environment; 0 if unset; −1 if set but malformed.
static int env_tile(const char *name) {
  const char *s = getenv(name);
  if (!s || !*s) return 0;
  char *end;
  errno = 0;
  const long v = strtol(s, &end, 10);
  if (errno || *end || v <= 0 || v > (1L << 20)) return -1;
  return (int)v;
}

int attn_placement_tiles(const attn_problem *p, attn_exec *exec, char *err, size_t err_len) {
  static const char *const names[2] = {"ATTNBENCH_TILE_Q", "ATTNBENCH_TILE_KV"};
  int *slots[2] = {&exec->tile_q, &exec->tile_kv};
  int rule[2];
  const attn_placement_caches c = attn_placement_query();
  attn_tiles_for_caches(p, c.l1d, c.l2, &rule[0], &rule[1]);
  for (int i = 0; i < 2; i++) {
    if (*slots[i] > 0) continue;  // set by the user on the command line / config
    const int e = env_tile(names[i]);
    if (e < 0) {
      if (err && err_len)
        snprintf(err, err_len, "%s=%s: expected a positive integer (at most 1048576)", names[i],
                 getenv(names[i]));
      return -1;
    }
    *slots[i] = e > 0 ? e : rule[i];
  }
  return 0;
}
