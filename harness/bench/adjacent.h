// SPDX-License-Identifier: MIT
// adjacent.h — the bandwidth probe `attnbench bench` runs next to each timed run of a
// memory-bound point (bench/point.c), so that the point's % of bandwidth compares it with
// what memory delivered at that moment.
#pragma once

#ifdef __cplusplus
extern "C" {
#endif

// The adjacent probe: read bandwidth in GB/s with `threads` threads, the best of `passes`
// reads of a buffer of several times the last-level cache (≥ 256 MiB, allocated and
// filled on the first call, kept until attn_bench_release_adjacent_probe). Not memoised:
// bench runs it right before and right after each timed run of a memory-bound point, so
// that the point's % of bandwidth compares it with what memory delivered at that moment
// (a shared machine's bandwidth drifts by tens of percent over a sweep). 0 if unavailable.
double attn_bench_adjacent_bandwidth(int threads, int passes);
void attn_bench_release_adjacent_probe(void);

#ifdef __cplusplus
}
#endif
