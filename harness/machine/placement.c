// SPDX-License-Identifier: MIT
// Thread placement with hwloc (see placement.h).
#include "machine/placement.h"

#include <errno.h>
#include <hwloc.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "machine/topology.h"

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
  c.cores = t->set_cores > 0 ? t->set_cores : 0;
  c.pus = t->set_pus > 0 ? t->set_pus : 0;
  return c;
}

static attn_bind_mode g_mode = ATTN_BIND_DEFAULT;

int attn_placement_set_bind(const char *value, char *err, size_t err_len) {
  if (!value) return 0;
  if (strcmp(value, "cores") == 0)
    g_mode = ATTN_BIND_CORES;
  else if (strcmp(value, "none") == 0)
    g_mode = ATTN_BIND_NONE;
  else {
    if (err && err_len) snprintf(err, err_len, "--bind '%s': expected cores or none", value);
    return -1;
  }
  return 0;
}

bool attn_placement_bind_bad(const char *command, const char *value) {
  char err[160];
  if (attn_placement_set_bind(value, err, sizeof err) == 0) return false;
  fprintf(stderr, "attnbench %s: %s\n", command, err);
  return true;
}

static bool env_set(const char *name) {
  const char *v = getenv(name);
  return v && *v;
}

attn_bind_mode attn_placement_bind_mode(void) {
  if (g_mode != ATTN_BIND_DEFAULT) return g_mode;
  return env_set("OMP_PLACES") || env_set("OMP_PROC_BIND") ? ATTN_BIND_OPENMP : ATTN_BIND_CORES;
}

const char *attn_placement_bind_mode_name(attn_bind_mode m) {
  return attn_bind_mode_name(m);
}

void attn_placement_use_mode(attn_bind_mode m) {
  g_mode = m;
}

const char *attn_placement_describe_set(char *buf, size_t len) {
  const attn_topology *t = attn_topology_get();
  const char *mode = attn_placement_bind_mode_name(attn_placement_bind_mode());
  if (!t->ok)
    snprintf(buf, len, "cpuset unknown (%s); bind %s", t->error, mode);
  else
    snprintf(buf, len, "cpuset %s (%d of %d cores, %d of %d PUs); bind %s", t->cpuset, t->set_cores,
             t->cores, t->set_pus, t->pus, mode);
  return buf;
}

// none / openmp: nothing is bound; the report gives each thread's allowed PUs.
static int report_unbound(hwloc_topology_t t, int n, attn_bind_mode mode, char *report,
                          size_t len) {
  char where[64][48];
  const int shown = n < 64 ? n : 64;
#pragma omp parallel num_threads(n)
  {
    const int tid = omp_get_thread_num();
    if (tid < shown) {
      hwloc_cpuset_t s = hwloc_bitmap_alloc();
      if (s && hwloc_get_cpubind(t, s, HWLOC_CPUBIND_THREAD) == 0)
        hwloc_bitmap_list_snprintf(where[tid], sizeof where[tid], s);
      else
        snprintf(where[tid], sizeof where[tid], "?");
      hwloc_bitmap_free(s);
    }
  }
  size_t off = (size_t)snprintf(
      report, len,
      "not bound (%s):", mode == ATTN_BIND_NONE ? "--bind none" : "OMP_PLACES/OMP_PROC_BIND set");
  for (int i = 0; i < shown && off + 1 < len; i++) {
    const int w = snprintf(report + off, len - off, " T%d on PUs %s", i, where[i]);
    if (w < 0) break;
    off += (size_t)w;
  }
  snprintf(g_report, sizeof g_report, "%s", report);
  return 0;
}

int attn_placement_default_threads(void) {
  const attn_placement_caches c = attn_placement_query();
  return c.cores > 0 ? c.cores : omp_get_max_threads();
}

int attn_placement_unbind(void) {
  hwloc_topology_t t = topo();
  hwloc_const_cpuset_t set = (hwloc_const_cpuset_t)attn_topology_cpuset();
  if (!t || !set) return -1;
  return hwloc_set_cpubind(t, set, HWLOC_CPUBIND_THREAD) == 0 ? 0 : -1;
}

int attn_placement_bind(int threads, char *report, size_t len) {
  hwloc_topology_t t = topo();
  if (threads <= 0) threads = attn_placement_default_threads();
  if (!t) {
    snprintf(report, len, "hwloc topology unavailable: threads not bound");
    snprintf(g_report, sizeof g_report, "unbound (hwloc unavailable)");
    return -1;
  }
  const int n = threads < 256 ? threads : 256;
  const attn_bind_mode mode = attn_placement_bind_mode();
  if (mode == ATTN_BIND_NONE || mode == ATTN_BIND_OPENMP)
    return report_unbound(t, n, mode, report, len);
  // The cores with a PU in the inherited set, in hwloc's logical order; each thread gets
  // the PUs of its core that are in the set.
  hwloc_const_cpuset_t set = (hwloc_const_cpuset_t)attn_topology_cpuset();
  hwloc_obj_t cores[256];
  int ncores = 0;
  for (hwloc_obj_t c = NULL;
       ncores < 256 && (c = hwloc_get_next_obj_by_type(t, HWLOC_OBJ_CORE, c));)
    if (!set || hwloc_bitmap_intersects(c->cpuset, set)) cores[ncores++] = c;
  if (ncores <= 0) {
    snprintf(report, len, "hwloc reports no cores in the CPU set: threads not bound");
    snprintf(g_report, sizeof g_report, "unbound (no cores)");
    return -1;
  }
  int core_of[256], pu_of[256], err_of[256];
  int bound = 0;
#pragma omp parallel num_threads(n) reduction(+ : bound)
  {
    const int tid = omp_get_thread_num();
    hwloc_obj_t core = cores[tid % ncores];
    err_of[tid] = 0, core_of[tid] = -1, pu_of[tid] = -1;
    hwloc_cpuset_t mine = hwloc_bitmap_dup(core->cpuset);
    if (mine && set) hwloc_bitmap_and(mine, mine, set);
    if (mine && hwloc_set_cpubind(t, mine, HWLOC_CPUBIND_THREAD) == 0) {
      bound = 1;
      core_of[tid] = (int)core->logical_index;
      hwloc_cpuset_t where = hwloc_bitmap_alloc();
      if (where && hwloc_get_last_cpu_location(t, where, HWLOC_CPUBIND_THREAD) == 0)
        pu_of[tid] = hwloc_bitmap_first(where);
      hwloc_bitmap_free(where);
    } else {
      err_of[tid] = errno ? errno : EINVAL;
    }
    hwloc_bitmap_free(mine);
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
