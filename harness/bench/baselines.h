// SPDX-License-Identifier: MIT
// External baselines for `attnbench bench` (baselines.c): before the sweep, the
// pre-flight of scripts/bench-baselines and the export of every point's inputs; after
// it, the script run on those inputs into the results file.
#ifndef ATTNBENCH_BENCH_BASELINES_H
#define ATTNBENCH_BENCH_BASELINES_H

#include <stdbool.h>

#include "bench/config.h"
#include "io/fileio.h"  // ATTN_OUT_PATH_MAX

typedef struct attn_baselines_run {
  // From the command line.
  const char *list;        // --baselines LIST ("all" or names; NULL: no baselines)
  const char *venv;        // --baselines-venv DIR (NULL: the script's default)
  bool require;            // --require-baselines: a baseline that cannot run is an error
  const char *export_dir;  // --export-inputs DIR (NULL: a temporary one if baselines run)
  bool quiet;              // no "inputs of N points" line
  // Set by attn_baselines_prepare.
  char script[ATTN_OUT_PATH_MAX + 64];
  char exe[ATTN_OUT_PATH_MAX];
  char dir[ATTN_OUT_PATH_MAX];  // the export
  bool temporary;               // dir is ours to remove
  bool ready;                   // the pre-flight found something to run
} attn_baselines_run;

// Before the sweep: the script, this binary, the pre-flight (Python environment and each
// named baseline installed), the export. Returns -1 to go on, else the exit code.
int attn_baselines_prepare(attn_baselines_run *br, const attn_bench_plan *plan);
// After the sweep: the baselines into the results file `out`, then the temporary export
// removed. Returns the script's verdict (0 ok, 1 something failed, 130 interrupted by
// Ctrl-C: the script recorded the points it had timed).
int attn_baselines_finish(attn_baselines_run *br, const char *out);
// When the sweep did not run to its end: removes the temporary export (if any).
void attn_baselines_discard(attn_baselines_run *br);

#endif
