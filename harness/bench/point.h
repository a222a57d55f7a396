// SPDX-License-Identifier: MIT
// point.h — running one benchmark point under Google Benchmark: allocate its inputs,
// check the kernel against the reference on that shape, then time it.
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "bench/config.h"
#include "bench/gbench/gbench.h"
#include "core/settings.h"
#include "machine/peak/peak.h"

#ifdef __cplusplus
extern "C" {
#endif

// The settings a point runs with (resolve/resolve.h): the point's threads, regtile and
// kv_split as its config or the command line's overrides gave them (attn_bench_point.
// from_cli), the command line's other settings (attn_bench_set_cli_settings: --tile-q,
// --tile-kv, --bind), then the environment, tuning file, machine rule and kernel default.
// Returns 0, or −1 with a message in err (and the value at fault in *fault, may be NULL).
void attn_bench_set_cli_settings(const attn_setting_layer *cli);
int attn_bench_point_settings(const attn_bench_point *pt, attn_settings *s,
                              attn_setting_fault *fault, char *err, size_t err_len);

// The largest check the double-precision reference runs at full size, in
// batch·heads·seq_q·seq_kv·(head_dim_qk + head_dim_v) multiply-adds (a few seconds).
// Larger points are checked on the same shape with seq_q/seq_kv halved until it fits.
// (A test build may define a smaller budget to check small points on reduced shapes.)
#ifndef ATTN_BENCH_CHECK_BUDGET
#define ATTN_BENCH_CHECK_BUDGET 1.2e9
#endif

typedef struct attn_bench_state {
  const attn_bench_point *point;
  attn_peak_key peak_key;  // the unit the point is judged by (attn_bench_point_peak_key)
  double peak_gflops;      // that unit's peak (G ops/s) on the point's threads; 0 = unknown
  double bandwidth_gbs;    // read bandwidth measured with the point's threads; 0 = unknown
  bool adjacent_probe;     // probe the bandwidth around each timed run (if memory-bound)
  double min_time;         // the point's own min_time in effect (0: the flag's or the default);
                           // recorded as the min_time counter for the external baselines
  char refused[192];       // non-empty: not run (e.g. does not fit in memory)
  // filled by the first run
  bool checked, check_pass;
  char check_message[512];
  attn_problem checked_shape;  // the shape the check ran on (== point's unless reduced)
  // K/V types other than F32: the storage error on the checked shape (check.h,
  // attn_check_storage_error), the counters kv_storage_err and kv_storage_err/tol
  bool has_storage;
  double storage_abs, storage_ratio;
} attn_bench_state;

// Bytes the point needs: inputs + output (× input copies) + workspace + what the check
// needs on top.
uint64_t attn_bench_point_bytes(const attn_bench_point *pt);

// The shape a point is checked on: the point's own, or with seq_q/seq_kv halved until
// the reference's work fits ATTN_BENCH_CHECK_BUDGET (other dimensions unchanged).
attn_problem attn_bench_check_shape(const attn_problem *p);

// The unit (and its ISA) whose peak a point's "% of peak" is against: attn_peak_unit_for
// (machine/peak/peak.h) for the point's kernel and problem on this CPU.
attn_peak_key attn_bench_point_peak_key(const attn_bench_point *pt);

// The roofline time of a point: the least time its work allows on a machine with FMA
// peak `peak_gflops` (GFLOP/s) and read bandwidth `bandwidth_gbs` (GB/s, 1 G = 1e9):
//     t_roof = max(flop / peak, bytes / bandwidth)          seconds
// i.e. the attainable rate min(peak, intensity × bandwidth), intensity = flop / bytes.
// *memory_bound (may be NULL) is set when the bandwidth term is the larger — intensity
// below the ridge point peak / bandwidth (decode) — and cleared when the FMA term is
// (prefill). Returns 0 (and clears *memory_bound) if either limit is unknown (<= 0).
// The %roofline counter is 100 · t_roof / measured time.
double attn_bench_roofline_seconds(double flop, double bytes, double peak_gflops,
                                   double bandwidth_gbs, bool *memory_bound);

// The Google Benchmark run callback; user is an attn_bench_state*.
void attn_bench_run_point(attn_gb_state *st, void *user);

// Frees the inputs kept between calls for the current point.
void attn_bench_release_buffers(void);
// Frees the cached reference of the last checked shape.
void attn_bench_release_reference(void);

#ifdef __cplusplus
}
#endif
