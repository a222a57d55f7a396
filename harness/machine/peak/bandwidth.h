// SPDX-License-Identifier: MIT
// bandwidth.h — STREAM-like read-bandwidth probe: every thread sums its slice of a
// buffer far larger than the last-level cache (vectorised sum, 4 independent chains),
// repeated; the best and the median pass are reported in GB/s (1 GB = 1e9 bytes). A pass
// reads the buffer once in each of three patterns (one stream; one stream with software
// prefetch into L2; two interleaved streams) and counts the fastest: which pattern the
// hardware prefetchers favour differs between CPUs.
// Like STREAM it validates its own result (the sum of a known fill) and drops nothing
// silently: the first pass (page faults were taken at fill time) is timed like the rest.
// Depends on libc and OpenMP only.
#pragma once

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct attn_bandwidth {
  double best_gbs;    // fastest pass
  double median_gbs;  // median pass
  size_t bytes;       // buffer size
  int threads;        // threads that read
  int passes;
  int ok;               // 1 if the sums matched the fill (the probe measured real reads)
  const char *pattern;  // the read pattern of the fastest pass ("stream", "prefetched", ...)
} attn_bandwidth;

// Reads a buffer of `bytes` (0 = 1 GiB) with `threads` OpenMP threads (0 = OpenMP
// default), `passes` times (0 = 7). Threads touch (first-touch) their own slice, so the
// pages live near the thread that reads them. Returns 0, -1 if the allocation fails, or
// -2 (nothing run) if the thread count — threads, or the OpenMP default for 0 — exceeds
// ATTN_MAX_THREADS (attn.h).
int attn_bandwidth_read(size_t bytes, int threads, int passes, attn_bandwidth *out);

// The same in steps, for a caller that probes again and again (attnbench bench, next to
// each repetition of a memory-bound point) without paying the allocation and fill each
// time: prepare allocates `bytes` (0 = 1 GiB) and fills it with `threads` threads (0 =
// the OpenMP default; returns 0, -1 when the allocation fails, -2 over the thread cap);
// measure reads it `passes` times (0 = 7) with `threads` threads (returns 0, -1 for a
// buffer that was not prepared, -2 over the thread cap); release frees it (and may be
// called on a buffer prepare failed on).
typedef struct attn_bandwidth_buffer {
  float *x;
  size_t n;  // floats
} attn_bandwidth_buffer;
int attn_bandwidth_prepare(size_t bytes, int threads, attn_bandwidth_buffer *buf);
int attn_bandwidth_measure(const attn_bandwidth_buffer *buf, int threads, int passes,
                           attn_bandwidth *out);
void attn_bandwidth_release(attn_bandwidth_buffer *buf);

#ifdef __cplusplus
}
#endif
