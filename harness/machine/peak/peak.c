// SPDX-License-Identifier: MIT
// Timing and threading for the FMA peak probe (peak.h), plus the scalar baseline loop.
#include "peak.h"

#include <omp.h>
#include <time.h>

#include "attn.h"

// Scalar baseline: PEAK_CHAINS chains of acc = acc·b + c as a separate multiply and add
// (baseline x86-64 has no FMA), 2 FLOPs each. volatile b keeps the compiler from
// folding or vectorising across iterations' constants.
uint64_t attn_peak_loop__scalar(uint64_t iters, float *sink) {
  volatile float vb = 1.0f - 0x1p-20f, vc = 0x1p-20f;
  const float b = vb, c = vc;
  float acc[PEAK_CHAINS];
  for (int i = 0; i < PEAK_CHAINS; i++) acc[i] = 1.0f + (float)i * 0x1p-10f;
  for (uint64_t it = 0; it < iters; it++) {
#pragma GCC unroll 16
    for (int i = 0; i < PEAK_CHAINS; i++) acc[i] = acc[i] * b + c;
  }
  float s = 0.0f;
  for (int i = 0; i < PEAK_CHAINS; i++) s += acc[i];
  *sink = s;
  return iters * PEAK_CHAINS * 2u;
}

typedef uint64_t (*peak_loop_fn)(uint64_t, float *);

static peak_loop_fn loop_for(uint32_t isa) {
  if (isa == 0) return attn_peak_loop__scalar;
  if ((attn_cpu_features() & isa) != isa) return NULL;
#if defined(__x86_64__) || defined(__i386__)
  if (isa == ATTN_ISA_AVX2) return attn_peak_loop__avx2;
  if (isa == ATTN_ISA_AVX512F) return attn_peak_loop__avx512;
#endif
#if defined(__aarch64__)
  if (isa == ATTN_ISA_NEON) return attn_peak_loop__neon;
#endif
  return NULL;
}

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

// Wall-clock seconds for `threads` threads each running fn(iters) between two barriers;
// *flops = total FLOPs.
static double timed_run(peak_loop_fn fn, uint64_t iters, int threads, double *flops) {
  double t0 = 0.0, t1 = 0.0, total = 0.0;
  static volatile float sink_all;  // keeps every thread's result alive
#pragma omp parallel num_threads(threads) reduction(+ : total)
  {
    float sink;
#pragma omp barrier
#pragma omp master
    t0 = now();
    total += (double)fn(iters, &sink);
#pragma omp barrier
#pragma omp master
    t1 = now();
#pragma omp critical
    sink_all = sink_all + sink;  // after the timed region
  }
  *flops = total;
  return t1 - t0;
}

int attn_peak_threads(int threads, char *err, size_t err_len) {
  // attn_exec_check's rule: 0 <= threads <= ATTN_MAX_THREADS, and for 0 the OpenMP
  // default (OMP_NUM_THREADS) too. A parallel region of 100000 threads crashes libgomp.
  const attn_exec ex = {.threads = threads < 0 ? 0 : threads};
  if (attn_exec_check(&ex, err, err_len) != ATTN_OK) return 0;
  return ex.threads > 0 ? ex.threads : omp_get_max_threads();
}

double attn_peak_fma_gflops(uint32_t isa, int threads) {
  const peak_loop_fn fn = loop_for(isa);
  if (!fn) return 0.0;
  threads = attn_peak_threads(threads, NULL, 0);
  if (threads == 0) return 0.0;  // above the thread cap: never enter the parallel region
  // Calibrate to ~20 ms per run (also warms up the clocks), then keep the best of 12
  // (~0.25 s). On a shared VM a sibling vCPU is sometimes taken away for a moment; a
  // window of a quarter second rarely falls entirely inside such a gap (with 5 runs, one
  // run of scripts/parallel-figures once reported the 1-thread figure for 2 threads).
  uint64_t iters = 1u << 16;
  double flops, t = timed_run(fn, iters, threads, &flops);
  while (t < 0.02 && iters < (1ull << 40)) {
    iters *= 2;
    t = timed_run(fn, iters, threads, &flops);
  }
  double best = flops / t;
  for (int rep = 0; rep < 12; rep++) {
    t = timed_run(fn, iters, threads, &flops);
    if (flops / t > best) best = flops / t;
  }
  return best * 1e-9;
}
