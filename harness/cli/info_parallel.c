// SPDX-License-Identifier: MIT
// The parallel-execution section of `attnbench info` (info_parallel.h).
#include "cli/info_parallel.h"

#include <omp.h>

#include "attn.h"
#include "machine/peak/bandwidth.h"
#include "machine/placement.h"
#include "resolve/resolve.h"

static void kib(char *buf, size_t len, size_t bytes) {
  if (bytes == 0)
    snprintf(buf, len, "unknown");
  else if (bytes >= ((size_t)1 << 20))
    snprintf(buf, len, "%zu MiB", bytes >> 20);
  else
    snprintf(buf, len, "%zu KiB", bytes >> 10);
}

void attn_info_parallel(FILE *out, bool measure) {
  const attn_placement_caches c = attn_placement_query();
  char l1[32], l2[32], l3[32];
  kib(l1, sizeof l1, c.l1d), kib(l2, sizeof l2, c.l2), kib(l3, sizeof l3, c.l3);
  const int threads = attn_placement_default_threads();
  fprintf(out, "parallel (hwloc):\n");
  fprintf(out, "  cores:      %d physical, %d PUs; per core L1d %s, L2 %s; L3 %s\n", c.cores, c.pus,
          l1, l2, l3);
  char report[512];
  const int bound = attn_placement_bind(threads, report, sizeof report);
  fprintf(out,
          "  threads:    %d by default (one per physical core of the set; --threads overrides)\n",
          threads);
  char set[192];
  fprintf(out, "  cpu set:    %s\n", attn_placement_describe_set(set, sizeof set));
  fprintf(out, "  binding:    %s%s\n", report, bound < 0 ? " [binding failed]" : "");
  // The tiles `run` would use (resolve/resolve.h, no kernel: no tuning-file entry) for
  // typical shapes, and where they come from.
  static const int dims[] = {64, 128};
  for (size_t i = 0; i < sizeof dims / sizeof dims[0]; i++) {
    attn_problem p = attn_problem_make(1, 8, 8, 2048, 2048, dims[i], dims[i], false);
    attn_settings s;
    char err[256], from[160];
    if (attn_resolve(NULL, &p, NULL, NULL, 0, &s, NULL, err, sizeof err) != 0) {
      fprintf(out, "  tiles:      %s\n", err);
      break;
    }
    fprintf(out, "  tiles D=%-3d tile_q %d, tile_kv %d from %s (--tile-q/--tile-kv override)\n",
            dims[i], s.exec.tile_q, s.exec.tile_kv,
            attn_settings_provenance(&s, ATTN_SETTING_TILE_Q, from, sizeof from));
  }
  if (!measure) return;
  attn_bandwidth one, all;
  const int ok1 = attn_bandwidth_read(0, 1, 5, &one) == 0 && one.ok;
  const int okn = attn_bandwidth_read(0, threads, 5, &all) == 0 && all.ok;
  fprintf(out,
          "read bandwidth, measured (GB/s, 1 GiB buffer, best / median of 5 passes; a pass is "
          "the fastest of its read patterns, the best pass's named):\n");
  if (ok1)
    fprintf(out, "  %-12s %8.1f / %.1f  (%s)\n", "1 thread", one.best_gbs, one.median_gbs,
            one.pattern);
  else
    fprintf(out, "  1 thread     unavailable\n");
  if (okn)
    fprintf(out, "  %-2d threads   %8.1f / %.1f  (%s)\n", threads, all.best_gbs, all.median_gbs,
            all.pattern);
  else
    fprintf(out, "  all threads  unavailable\n");
}
