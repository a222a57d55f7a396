// SPDX-License-Identifier: MIT
// peak.h — the measured FP32 FMA peak of this machine, per ISA (the yardstick for
// "% of peak" in attnbench reports).
//
// Each ISA has a throughput loop (fma_peak_<isa>.c, compiled with only that ISA's flags)
// running PEAK_CHAINS independent multiply-add chains on whole registers: enough chains
// to cover FMA latency × FMA ports on current cores (4–5 cycles × 2 ports = 8–10
// in flight), so the loop is bound by FMA throughput, not latency. FLOPs = 2 per lane per
// FMA. threads > 1 run the loop on that many OpenMP threads at once and time them
// together (wall clock between barriers).
#pragma once

#include <stddef.h>
#include <stdint.h>

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

// The per-ISA loops: run `iters` iterations of PEAK_CHAINS dependent FMAs each and return
// the FLOPs done; *sink receives a value that depends on every chain (defeats dead-code
// elimination).
uint64_t attn_peak_loop__scalar(uint64_t iters, float *sink);
#if defined(__x86_64__) || defined(__i386__)
uint64_t attn_peak_loop__avx2(uint64_t iters, float *sink);
uint64_t attn_peak_loop__avx512(uint64_t iters, float *sink);
#endif
#if defined(__aarch64__)
uint64_t attn_peak_loop__neon(uint64_t iters, float *sink);
#endif

#ifdef __cplusplus
}
#endif
