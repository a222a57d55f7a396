// SPDX-License-Identifier: MIT
// Timing and threading for the peak probes (peak.h), their table, and the scalar
// baseline loop.
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

// The probes of this architecture: the FP32 FMA rows first (scalar, then by width), then
// the low-precision units. Operations per instruction as counted in peak.h.
static const attn_peak_probe kProbes[] = {
    {ATTN_PEAK_FP32_FMA, 0, "mul + add (scalar)", 2, attn_peak_loop__scalar},
#if defined(__x86_64__) || defined(__i386__)
    {ATTN_PEAK_FP32_FMA, ATTN_ISA_AVX2, "vfmadd231ps ymm", 16, attn_peak_loop__avx2},
    {ATTN_PEAK_FP32_FMA, ATTN_ISA_AVX512F, "vfmadd231ps zmm", 32, attn_peak_loop__avx512},
    // 16 float32 lanes x 2 bf16 pairs x (multiply + add)
    {ATTN_PEAK_BF16_DOT, ATTN_ISA_AVX512BF16, "vdpbf16ps zmm", 64, attn_peak_loop__avx512bf16},
    // 32 binary16 lanes x (multiply + add)
    {ATTN_PEAK_FP16_FMA, ATTN_ISA_AVX512FP16, "vfmadd231ph zmm", 64, attn_peak_loop__avx512fp16},
    // 16 int32 lanes x 4 byte pairs x (multiply + add)
    {ATTN_PEAK_INT8_DOT, ATTN_ISA_AVX512VNNI, "vpdpbusd zmm", 128, attn_peak_loop__avx512vnni},
    // 8 int32 lanes x 4 byte pairs x (multiply + add), VEX-encoded
    {ATTN_PEAK_INT8_DOT, ATTN_ISA_AVXVNNI, "vpdpbusd ymm (vex)", 64, attn_peak_loop__avxvnni},
    // the same 32 products without VNNI: vpmaddubsw + vpmaddwd + vpaddd, named by the first
    {ATTN_PEAK_INT8_DOT, ATTN_ISA_AVX2, "vpmaddubsw ymm", 64, attn_peak_loop__avx2int8},
    // C[16x16] += A[16x32] B[32x16]: 16 x 16 x 32 x (multiply + add)
    {ATTN_PEAK_AMX_BF16, ATTN_ISA_AMXBF16, "tdpbf16ps", 16384, attn_peak_loop__amxbf16},
#endif
#if defined(__aarch64__)
    {ATTN_PEAK_FP32_FMA, ATTN_ISA_NEON, "fmla v.4s", 8, attn_peak_loop__neon},
    // 4 float32 lanes x 2 bf16 pairs x (multiply + add)
    {ATTN_PEAK_BF16_DOT, ATTN_ISA_NEON_BF16, "bfdot v.4s", 16, attn_peak_loop__neon_bf16},
    // 4 float32 lanes x (multiply + add) of the low binary16 halves
    {ATTN_PEAK_FP16_FMA, ATTN_ISA_NEON_FHM, "fmlal v.4s", 8, attn_peak_loop__neon_fhm},
    // 4 int32 lanes x 4 byte pairs x (multiply + add)
    {ATTN_PEAK_INT8_DOT, ATTN_ISA_NEON_DOTPROD, "sdot v.4s", 32, attn_peak_loop__neon_dotprod},
#endif
};

const attn_peak_probe *attn_peak_probes(size_t *count) {
  *count = sizeof kProbes / sizeof kProbes[0];
  return kProbes;
}

const attn_peak_probe *attn_peak_probe_find(attn_peak_unit unit, uint32_t isa) {
  for (size_t i = 0; i < sizeof kProbes / sizeof kProbes[0]; i++)
    if (kProbes[i].unit == unit && kProbes[i].isa == isa) return &kProbes[i];
  return NULL;
}

const char *attn_peak_unit_name(attn_peak_unit unit) {
  static const char *const names[ATTN_PEAK_UNIT_COUNT] = {"fp32-fma", "bf16-dot", "fp16-fma",
                                                          "int8-dot", "amx-bf16"};
  return (unsigned)unit < ATTN_PEAK_UNIT_COUNT ? names[unit] : "?";
}

typedef attn_peak_loop_fn peak_loop_fn;

static peak_loop_fn loop_for(attn_peak_unit unit, uint32_t isa) {
  const attn_peak_probe *probe = attn_peak_probe_find(unit, isa);
  if (!probe || (attn_cpu_features() & isa) != isa) return NULL;
  return probe->loop;
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
  return attn_peak_gops(ATTN_PEAK_FP32_FMA, isa, threads);
}

double attn_peak_gops_scaled(attn_peak_unit unit, uint32_t isa, int threads, double one, int cores,
                             int *busy) {
  double v = attn_peak_gops(unit, isa, threads);
  const double expect = ATTN_PEAK_SCALED_MIN * threads * one;
  const int scales = threads > 1 && threads <= cores;
  for (int i = 0; scales && i < 5 && v < expect; i++) {
    const double x = attn_peak_gops(unit, isa, threads);
    v = x > v ? x : v;
  }
  if (busy) *busy = scales && v < expect;
  return v;
}

double attn_peak_gops(attn_peak_unit unit, uint32_t isa, int threads) {
  const peak_loop_fn fn = loop_for(unit, isa);
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
