// SPDX-License-Identifier: MIT
// The read-bandwidth probe (see bandwidth.h). The inner loop uses 16-byte vectors at
// the baseline ISA: at 2 loads per cycle that is far above any memory bandwidth, so
// the bound is memory, not the core.
#include "bandwidth.h"

#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "attn.h"
#include "hugemem.h"  // the same pages as a bench point's inputs

static int cmp_double(const void *a, const void *b) {
  const double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

// The read patterns a pass tries, each summing x[0..n) with four independent chains of
// 4-float vectors (GCC/Clang vector extension — SSE2 on x86-64, NEON on aarch64), so each
// vectorises at any -O level. Which one reads fastest depends on the machine's hardware
// prefetchers: one sequential stream suits some (a summing two-stream probe on an AMD Zen 4
// core lost a quarter of its rate once prefetcht0 was added), and on others a software
// request 8 KiB ahead into L2 reads a quarter to a third more than the plain stream
// (Intel Emerald Rapids under KVM, 1 and 2 threads; docs/parallel.md). A pass reports the
// fastest, so the probe is the best of what these simple loops get — the limit a decode
// kernel is scored against.
typedef float v4f __attribute__((vector_size(16)));
enum { BW_PREFETCH_AHEAD = 8192 / sizeof(float) };  // floats ahead of the reads

static inline v4f load4(const float *p) {
  v4f v;
  memcpy(&v, p, sizeof v);
  return v;
}

static float reduce4(v4f a, v4f b, v4f c, v4f d, const float *restrict x, size_t i, size_t n) {
  const v4f s = (a + b) + (c + d);
  float t = s[0] + s[1] + s[2] + s[3];
  for (; i < n; i++) t += x[i];
  return t;
}

// One stream, front to back.
static float sum_stream(const float *restrict x, size_t n) {
  v4f a = {0}, b = {0}, c = {0}, d = {0};
  size_t i = 0;
  for (; i + 16 <= n; i += 16)
    a += load4(x + i), b += load4(x + i + 4), c += load4(x + i + 8), d += load4(x + i + 12);
  return reduce4(a, b, c, d, x, i, n);
}

// The same with each 64-byte line requested into L2 BW_PREFETCH_AHEAD floats before it is
// read (within the slice: nothing past it is touched).
static float sum_prefetched(const float *restrict x, size_t n) {
  v4f a = {0}, b = {0}, c = {0}, d = {0};
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    if (i + BW_PREFETCH_AHEAD < n) __builtin_prefetch(x + i + BW_PREFETCH_AHEAD, 0, 2);
    a += load4(x + i), b += load4(x + i + 4), c += load4(x + i + 8), d += load4(x + i + 12);
  }
  return reduce4(a, b, c, d, x, i, n);
}

// Two streams, the slice's halves read alternately 32 bytes at a time (as a decode kernel
// reads K and V).
static float sum_two_streams(const float *restrict x, size_t n) {
  const size_t h = n / 2;
  const float *restrict y = x + h;
  v4f a = {0}, b = {0}, c = {0}, d = {0};
  size_t i = 0;
  for (; i + 8 <= h; i += 8)
    a += load4(x + i), b += load4(x + i + 4), c += load4(y + i), d += load4(y + i + 4);
  return reduce4(a, b, c, d, x, i, h) + sum_stream(y + i, n - h - i);
}

typedef float bw_sum_fn(const float *restrict x, size_t n);
static bw_sum_fn *const kPatterns[] = {sum_stream, sum_prefetched, sum_two_streams};
static const char *const kPatternNames[] = {"stream", "prefetched", "two streams"};
enum { BW_PATTERNS = sizeof kPatterns / sizeof kPatterns[0] };

// The thread count a probe runs with (threads, or the OpenMP default for 0), or -2 when it
// exceeds the cap (attn.h; attn_exec_check also covers the OpenMP default for 0: a
// parallel region of OMP_NUM_THREADS=100000 threads crashes libgomp).
static int probe_threads(int threads) {
  const attn_exec ex = {.threads = threads > 0 ? threads : 0};
  if (attn_exec_check(&ex, NULL, 0) != ATTN_OK) return -2;
  return threads > 0 ? threads : omp_get_max_threads();
}

int attn_bandwidth_prepare(size_t bytes, int threads, attn_bandwidth_buffer *buf) {
  memset(buf, 0, sizeof *buf);
  if (bytes == 0) bytes = (size_t)1 << 30;
  const int nt = probe_threads(threads);
  if (nt < 0) return nt;
  const size_t n = bytes / sizeof(float);
  float *x = attn_alloc_streamed(n * sizeof(float));
  if (!x) return -1;
    // Fill with 1/64 (exact in float; every partial sum of a slice stays exactly
    // representable below 2^24·(1/64), so sums are exact and can be checked).
#pragma omp parallel num_threads(nt)
  {
    const int t = omp_get_thread_num(), T = omp_get_num_threads();
    const size_t lo = n * (size_t)t / (size_t)T, hi = n * (size_t)(t + 1) / (size_t)T;
    for (size_t i = lo; i < hi; i++) x[i] = 1.0f / 64.0f;
  }
  buf->x = x;
  buf->n = n;
  return 0;
}

void attn_bandwidth_release(attn_bandwidth_buffer *buf) {
  free(buf->x);
  memset(buf, 0, sizeof *buf);
}

int attn_bandwidth_measure(const attn_bandwidth_buffer *buf, int threads, int passes,
                           attn_bandwidth *out) {
  if (passes <= 0) passes = 7;
  if (passes > 64) passes = 64;
  const int nt = probe_threads(threads);
  if (nt < 0) return nt;
  if (!buf->x) return -1;
  const float *x = buf->x;
  const size_t n = buf->n;
  double gbs[64];
  int best_pattern = 0;
  double best = 0.0;
  int ok = 1;
  for (int p = 0; p < passes; p++) {
    gbs[p] = 0.0;
    for (int pat = 0; pat < BW_PATTERNS; pat++) {  // every pattern reads the whole buffer
      bw_sum_fn *const sum = kPatterns[pat];
      double total = 0.0;
      const double t0 = omp_get_wtime();
#pragma omp parallel num_threads(nt) reduction(+ : total)
      {
        const int t = omp_get_thread_num(), T = omp_get_num_threads();
        const size_t lo = n * (size_t)t / (size_t)T, hi = n * (size_t)(t + 1) / (size_t)T;
        // Chunks of 1 Mi floats keep each partial sum exact (≤ 2^20/64 = 2^14 < 2^24 ulp).
        for (size_t c = lo; c < hi; c += (size_t)1 << 20) {
          const size_t len = hi - c < ((size_t)1 << 20) ? hi - c : ((size_t)1 << 20);
          total += (double)sum(x + c, len);
        }
      }
      const double dt = omp_get_wtime() - t0;
      if (fabs(total - (double)n / 64.0) > 1.0 / 128.0) ok = 0;  // exact: half an element
      const double g = (double)(n * sizeof(float)) / dt / 1e9;
      if (g > gbs[p]) gbs[p] = g;
      if (g > best) best = g, best_pattern = pat;
    }
  }
  double sorted[64];
  memcpy(sorted, gbs, (size_t)passes * sizeof(double));
  qsort(sorted, (size_t)passes, sizeof(double), cmp_double);
  out->best_gbs = sorted[passes - 1];
  out->median_gbs = sorted[passes / 2];
  out->bytes = n * sizeof(float);
  out->threads = nt;
  out->passes = passes;
  out->ok = ok;
  out->pattern = kPatternNames[best_pattern];
  return 0;
}

int attn_bandwidth_read(size_t bytes, int threads, int passes, attn_bandwidth *out) {
  attn_bandwidth_buffer buf;
  const int rc = attn_bandwidth_prepare(bytes, threads, &buf);
  if (rc != 0) return rc;
  const int m = attn_bandwidth_measure(&buf, threads, passes, out);
  attn_bandwidth_release(&buf);
  return m;
}
