// SPDX-License-Identifier: MIT
// peak.h — the measured peak of each compute unit of this machine: the FP32 FMA per ISA
// and the low-precision units (BF16 and INT8 dot products, FP16 FMA, AMX-BF16 tiles) —
// the yardsticks for "% of peak" in attnbench reports.
//
// Each ISA has a throughput loop (fma_peak_<isa>.c, compiled with only that ISA's flags)
// running PEAK_CHAINS independent multiply-add chains on whole registers: enough chains
// to cover FMA latency × FMA ports on current cores (4–5 cycles × 2 ports = 8–10
// in flight), so the loop is bound by FMA throughput, not latency. FLOPs = 2 per lane per
// FMA. threads > 1 run the loop on that many OpenMP threads at once and time them
// together (wall clock between barriers). The other units' loops (attn_peak_probes) follow
// the same rule with their instruction and their own operation count per instruction.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "attn.h"

#ifdef __cplusplus
extern "C" {
#endif

enum { PEAK_CHAINS = 12 };

// Measured FP32 FMA throughput in GFLOP/s for `isa` (one ATTN_ISA_* bit, or 0 for the
// scalar baseline: separate multiply and add, 2 FLOPs) on `threads` threads (0 = every
// thread OpenMP offers). Best of several ~20 ms runs. Returns 0 if the CPU lacks isa or
// it is not compiled into this build.
// Also 0, without measuring, when the thread count (threads, or the OpenMP default for
// threads <= 0) exceeds ATTN_MAX_THREADS (attn.h; attn_peak_threads says why).
double attn_peak_fma_gflops(uint32_t isa, int threads);

// The thread count the probes run with: threads, or the OpenMP default for threads <= 0.
// 0 and a one-line message in err (may be NULL) when that exceeds ATTN_MAX_THREADS.
int attn_peak_threads(int threads, char *err, size_t err_len);

// The compute units a point can be judged by. Operations count like FLOPs: one multiply
// and one add per product accumulated, whatever the element type (an INT8 dot-product
// "op" is a multiply or an add of 8-bit products in 32-bit sums).
typedef enum attn_peak_unit {
  ATTN_PEAK_FP32_FMA = 0,  // float32 FMA (vfmadd231ps, fmla): 2 per lane
  ATTN_PEAK_BF16_DOT = 1,  // bf16 pair dot products into float32 (vdpbf16ps, bfdot)
  ATTN_PEAK_FP16_FMA = 2,  // binary16 products (vfmadd231ph; fmlal widening into float32)
  ATTN_PEAK_INT8_DOT = 3,  // 8-bit dot products into int32 (vpdpbusd, sdot; AVX2's
                           // vpmaddubsw + vpmaddwd + vpaddd)
  ATTN_PEAK_AMX_BF16 = 4,  // AMX bf16 tile products into float32 (tdpbf16ps)
} attn_peak_unit;
#define ATTN_PEAK_UNIT_COUNT 5

// "fp32-fma", "bf16-dot", "fp16-fma", "int8-dot", "amx-bf16" ("?" out of range).
const char *attn_peak_unit_name(attn_peak_unit unit);

typedef uint64_t (*attn_peak_loop_fn)(uint64_t iters, float *sink);

// One probe: a unit as one instruction of one ISA.
typedef struct attn_peak_probe {
  attn_peak_unit unit;
  uint32_t isa;             // the ATTN_ISA_* bit the instruction needs (0: any CPU)
  const char *instruction;  // e.g. "vdpbf16ps zmm"
  int ops_per_instruction;  // e.g. 64 = 16 lanes x 2 bf16 pairs x (multiply + add)
  attn_peak_loop_fn loop;
} attn_peak_probe;

// The probes of this build's architecture, in display order (FP32 FMA rows first).
const attn_peak_probe *attn_peak_probes(size_t *count);
// The probe of (unit, isa), or NULL if this build has none.
const attn_peak_probe *attn_peak_probe_find(attn_peak_unit unit, uint32_t isa);

// Measured throughput of (unit, isa) in G operations/s on `threads` threads, as
// attn_peak_fma_gflops; 0 if the build has no such probe, the CPU lacks isa
// (attn_cpu_features, so ATTNBENCH_ISA_MASK hides units) or threads is above the cap.
double attn_peak_gops(attn_peak_unit unit, uint32_t isa, int threads);

// The same on `threads` threads for a unit whose 1-thread peak is `one`. On threads ≤ cores
// (physical cores) the units are private, so the figure should be about threads × one; far
// below that another process held a core while it was measured: measure again, up to 5
// times (the best kept). *busy (may be NULL) = 1 when it stays below ATTN_PEAK_SCALED_MIN of
// threads × one (the figure then understates the machine and overstates any % of it), else 0.
#define ATTN_PEAK_SCALED_MIN 0.8
double attn_peak_gops_scaled(attn_peak_unit unit, uint32_t isa, int threads, double one, int cores,
                             int *busy);

// The unit whose peak a point is judged by, and on which ISA.
typedef struct attn_peak_key {
  attn_peak_unit unit;
  uint32_t isa;  // ATTN_ISA_* bit of the probe (0 = scalar FP32)
} attn_peak_key;

// The one rule for "% of peak" (docs/benchmarking.md). cpu_isa is attn_cpu_features().
//   F32   FP32 FMA of the kernel's ISA: its best required bit (AVX-512F over AVX2, NEON),
//         or for a kernel that requires none, the CPU's best.
//   BF16  kernel native (ATTN_CAP_COMPUTE_BF16): AMX-BF16 if it requires AMX, else the
//         BF16 dot product (avx512bf16 on an AVX-512 kernel, neon-bf16 on a NEON one) if
//         the CPU has it; otherwise FP32 FMA (F32 on rounded copies).
//   F16   kernel native and requiring the FP16 unit (avx512fp16, neon-fhm): FP16;
//         otherwise FP32 FMA (a native kernel without the unit converts exactly to fp32).
//   INT8  kernel native: the INT8 dot product of its class — avx512vnni (zmm) for an
//         AVX-512 kernel, neon-dotprod for NEON — if the CPU has it; otherwise FP32 FMA.
//         An AVX2 kernel: avxvnni (VEX vpdpbusd ymm) if it requires AVX-VNNI (FP32 FMA on
//         a CPU without: it cannot run there), else AVX2's vpmaddubsw + vpmaddwd, which
//         every AVX2 CPU has; a kernel that requires no ISA takes the CPU's best of the two.
attn_peak_key attn_peak_unit_for(const attn_kernel *k, const attn_problem *p, uint32_t cpu_isa);

// The per-ISA loops: run `iters` iterations of PEAK_CHAINS dependent FMAs each and return
// the FLOPs done; *sink receives a value that depends on every chain (defeats dead-code
// elimination).
uint64_t attn_peak_loop__scalar(uint64_t iters, float *sink);
// The other units' loops return operations as counted above.
#if defined(__x86_64__) || defined(__i386__)
uint64_t attn_peak_loop__avx2(uint64_t iters, float *sink);
uint64_t attn_peak_loop__avx512(uint64_t iters, float *sink);
uint64_t attn_peak_loop__avx512bf16(uint64_t iters, float *sink);
uint64_t attn_peak_loop__avx512fp16(uint64_t iters, float *sink);
uint64_t attn_peak_loop__avx512vnni(uint64_t iters, float *sink);
uint64_t attn_peak_loop__avxvnni(uint64_t iters, float *sink);
uint64_t attn_peak_loop__avx2int8(uint64_t iters, float *sink);
uint64_t attn_peak_loop__amxbf16(uint64_t iters, float *sink);
#endif
#if defined(__aarch64__)
uint64_t attn_peak_loop__neon(uint64_t iters, float *sink);
uint64_t attn_peak_loop__neon_bf16(uint64_t iters, float *sink);
uint64_t attn_peak_loop__neon_dotprod(uint64_t iters, float *sink);
uint64_t attn_peak_loop__neon_fhm(uint64_t iters, float *sink);
#endif

#ifdef __cplusplus
}
#endif
