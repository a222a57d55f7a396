// SPDX-License-Identifier: MIT
// Machine topology from hwloc, and available memory from /proc and the cgroup. This file
// is the process's one hwloc reader: the topology is loaded once and kept (placement.c
// binds threads with it through attn_topology_hwloc()).
#include "machine/topology.h"

#include <hwloc.h>
#include <omp.h>
#include <string.h>

#include "common/util.h"           // attn_format_bytes, attn_available_memory
#include "machine/peak/hugemem.h"  // attn_thp_mode

static hwloc_topology_t g_topo;  // loaded by discover(); NULL if hwloc failed
static hwloc_bitmap_t g_set;     // the process's CPU set at load (attn_topology.cpuset)

// The CPU set the process inherited: the union of its threads' affinities (Linux) and of
// OpenMP's places, within the machine; the whole machine if the OS does not say. Read at load,
// which precedes any binding (placement.c binds through this topology), so it is the user's, not
// ours.
static void inherited_set(hwloc_topology_t topo, attn_topology *t) {
  hwloc_const_cpuset_t all = hwloc_topology_get_topology_cpuset(topo);
  g_set = hwloc_bitmap_alloc();
  if (!g_set) return;
  if (hwloc_get_cpubind(topo, g_set, HWLOC_CPUBIND_PROCESS) != 0 &&
      hwloc_get_cpubind(topo, g_set, HWLOC_CPUBIND_THREAD) != 0)
    hwloc_bitmap_copy(g_set, all);
  // With OMP_PLACES / OMP_PROC_BIND set, libgomp has already bound this thread to its
  // first place; the places together are the set OpenMP derived from the affinity.
  for (int pl = 0; pl < omp_get_num_places(); pl++) {
    int ids[1024];
    const int n = omp_get_place_num_procs(pl);
    if (n <= 0 || n > 1024) continue;
    omp_get_place_proc_ids(pl, ids);
    for (int i = 0; i < n; i++) hwloc_bitmap_set(g_set, (unsigned)ids[i]);
  }
  hwloc_bitmap_and(g_set, g_set, all);
  if (hwloc_bitmap_iszero(g_set)) hwloc_bitmap_copy(g_set, all);
  hwloc_bitmap_list_snprintf(t->cpuset, sizeof t->cpuset, g_set);
  t->set_pus = hwloc_bitmap_weight(g_set);
  for (hwloc_obj_t c = NULL; (c = hwloc_get_next_obj_by_type(topo, HWLOC_OBJ_CORE, c));)
    t->set_cores += hwloc_bitmap_intersects(c->cpuset, g_set);
  if (t->set_cores < 1) t->set_cores = t->set_pus > 0 ? t->set_pus : 1;
}

static void discover(attn_topology *t) {
  memset(t, 0, sizeof *t);
  snprintf(t->cpu_model, sizeof t->cpu_model, "unknown");
  snprintf(t->cpuset, sizeof t->cpuset, "unknown");
  hwloc_topology_t topo;
  if (hwloc_topology_init(&topo) != 0) {
    snprintf(t->error, sizeof t->error, "hwloc could not load the topology");
    return;
  }
  if (hwloc_topology_load(topo) != 0) {
    hwloc_topology_destroy(topo);
    snprintf(t->error, sizeof t->error, "hwloc could not load the topology");
    return;
  }
  t->packages = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PACKAGE);
  t->cores = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_CORE);
  t->pus = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PU);
  t->numa_nodes = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_NUMANODE);
  const hwloc_obj_type_t levels[3] = {HWLOC_OBJ_L1CACHE, HWLOC_OBJ_L2CACHE, HWLOC_OBJ_L3CACHE};
  uint64_t *sizes[3] = {&t->l1d_bytes, &t->l2_bytes, &t->l3_bytes};
  int *counts[3] = {&t->l1d_count, &t->l2_count, &t->l3_count};
  for (int i = 0; i < 3; i++) {
    *counts[i] = hwloc_get_nbobjs_by_type(topo, levels[i]);
    hwloc_obj_t c = hwloc_get_obj_by_type(topo, levels[i], 0);
    if (c && c->attr) *sizes[i] = c->attr->cache.size;
  }
  hwloc_obj_t pkg = hwloc_get_obj_by_type(topo, HWLOC_OBJ_PACKAGE, 0);
  const char *model = pkg ? hwloc_obj_get_info_by_name(pkg, "CPUModel") : NULL;
  if (model) snprintf(t->cpu_model, sizeof t->cpu_model, "%s", model);
  hwloc_obj_t root = hwloc_get_root_obj(topo);
  if (root) t->memory_bytes = root->total_memory;
  // Some virtual machines show hwloc only part of the memory; take MemTotal if larger.
  FILE *f = fopen("/proc/meminfo", "r");
  if (f) {
    unsigned long long kb;
    if (fscanf(f, "MemTotal: %llu kB", &kb) == 1 && kb * 1024 > t->memory_bytes)
      t->memory_bytes = (uint64_t)kb * 1024;
    fclose(f);
  }
  if (t->cores < 1) t->cores = t->pus > 0 ? t->pus : 1;
  inherited_set(topo, t);
  g_topo = topo;  // kept for the process's lifetime (thread binding)
  t->ok = true;
}

const attn_topology *attn_topology_get(void) {
  static attn_topology t;
  static bool done;
  if (!done) {
    discover(&t);
    done = true;
  }
  return &t;
}

void *attn_topology_hwloc(void) {
  attn_topology_get();
  return g_topo;
}

const void *attn_topology_cpuset(void) {
  attn_topology_get();
  return g_topo ? g_set : NULL;
}

uint64_t attn_topology_llc_bytes(const attn_topology *t) {
  if (!t->ok) return 0;
  if (t->l3_bytes) return t->l3_bytes * (uint64_t)(t->l3_count > 0 ? t->l3_count : 1);
  if (t->l2_bytes) return t->l2_bytes * (uint64_t)(t->l2_count > 0 ? t->l2_count : 1);
  return 0;
}

static const char *plural(int n, const char *one, const char *many) {
  return n == 1 ? one : many;
}

void attn_topology_summary(const attn_topology *t, char *buf, size_t len) {
  if (!t->ok) {
    snprintf(buf, len, "unknown (%s)", t->error);
    return;
  }
  char l1[32], l2[32], l3[32];
  snprintf(buf, len, "%d %s, %d %s, %d %s, %d NUMA %s; L1d %s x%d, L2 %s x%d, L3 %s x%d",
           t->packages, plural(t->packages, "package", "packages"), t->cores,
           plural(t->cores, "core", "cores"), t->pus, plural(t->pus, "PU", "PUs"), t->numa_nodes,
           plural(t->numa_nodes, "node", "nodes"), attn_format_bytes(t->l1d_bytes, l1, sizeof l1),
           t->l1d_count, attn_format_bytes(t->l2_bytes, l2, sizeof l2), t->l2_count,
           attn_format_bytes(t->l3_bytes, l3, sizeof l3), t->l3_count);
}

void attn_topology_print(const attn_topology *t, FILE *out) {
  char line[256], mem[32], avail[32];
  attn_topology_summary(t, line, sizeof line);
  fprintf(out, "topology:    %s\n", line);
  if (t->ok)
    fprintf(out,
            "cpu set:     %s (%d of %d cores, %d of %d PUs: the affinity this process "
            "inherited)\n",
            t->cpuset, t->set_cores, t->cores, t->set_pus, t->pus);
  char thp[32];
  fprintf(out,
          "memory:      %s total, %s available; transparent huge pages: %s (timed inputs "
          "of 2 MiB and more request them)\n",
          attn_format_bytes(t->memory_bytes, mem, sizeof mem),
          attn_format_bytes(attn_available_memory(), avail, sizeof avail),
          attn_thp_mode(thp, sizeof thp));
}
