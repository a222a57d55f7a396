// SPDX-License-Identifier: MIT
// kernel_speed — a small speed probe for single-thread kernels (docs/perf-tools.md; the
// benchmark with checks and result files is `attnbench bench`): for each selected kernel
// and shape it prints the median time of --reps runs, GFLOP/s (FLOPs = attn_flops:
// 4·B·H·Sq·Skv·D unmasked) and % of the measured single-thread FMA peak of the kernel's
// ISA (harness/peak), plus the fastest run's % of peak (useful on a shared, noisy machine).
//
//   build/kernel_speed [--reps N] [--causal] [--tile-q N] [--tile-kv N] [--seq N]...
//                      [--kv N] [--dim N]... [kernel...]
// --kv N sets seq_kv (default: seq_kv = seq), e.g. --seq 1 --kv 4096 for decode.
// Defaults: batch 1, 8 heads, seq 1024 and 2048, head_dim 64 and 128, non-causal, every
// available SIMD kernel. Timing is wall clock; results are not checked here (the tests
// and `attnbench check` do that). The machine may be shared, so each ISA's peak is
// measured before and after the kernel runs and the larger value is used (a peak measured
// under load would inflate "% peak"); the table is printed at the end.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "attn.h"
#include "peak.h"

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b) {
  const double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

// The ISA a kernel's speed is measured against: its widest required ISA (0 = scalar).
static uint32_t main_isa(uint32_t req) {
  if (req & ATTN_ISA_AVX512F) return ATTN_ISA_AVX512F;
  if (req & ATTN_ISA_AVX2) return ATTN_ISA_AVX2;
  if (req & ATTN_ISA_NEON) return ATTN_ISA_NEON;
  return 0;
}

static void fill(float *x, size_t n, unsigned seed) {
  for (size_t i = 0; i < n; i++) {
    seed = seed * 1664525u + 1013904223u;
    x[i] = (float)(seed >> 8) * 0x1p-23f - 1.0f;  // uniform [-1, 1)
  }
}

int main(int argc, char **argv) {
  int reps = 5;
  bool causal = false;
  attn_exec exec = {0};
  int64_t seqs[8], dims[8];
  size_t n_seq = 0, n_dim = 0, n_only = 0;
  int64_t seq_kv = 0;
  const char *only[32];
  for (int i = 1; i < argc; i++) {
    const bool has = i + 1 < argc;
    if (strcmp(argv[i], "--reps") == 0 && has)
      reps = atoi(argv[++i]);
    else if (strcmp(argv[i], "--causal") == 0)
      causal = true;
    else if (strcmp(argv[i], "--tile-q") == 0 && has)
      exec.tile_q = atoi(argv[++i]);
    else if (strcmp(argv[i], "--tile-kv") == 0 && has)
      exec.tile_kv = atoi(argv[++i]);
    else if (strcmp(argv[i], "--seq") == 0 && has && n_seq < 8)
      seqs[n_seq++] = atoll(argv[++i]);
    else if (strcmp(argv[i], "--kv") == 0 && has)
      seq_kv = atoll(argv[++i]);
    else if (strcmp(argv[i], "--dim") == 0 && has && n_dim < 8)
      dims[n_dim++] = atoll(argv[++i]);
    else if (argv[i][0] == '-') {
      fprintf(stderr,
              "kernel_speed: unknown option %s (see the comment at the top of "
              "tools/kernel_speed.c)\n",
              argv[i]);
      return 2;
    } else if (n_only < 32)
      only[n_only++] = argv[i];
  }
  if (reps < 1 || exec.tile_q < 0 || exec.tile_kv < 0) {
    fprintf(stderr, "kernel_speed: --reps must be >= 1 and tiles >= 0\n");
    return 2;
  }
  if (!n_seq) seqs[n_seq++] = 1024, seqs[n_seq++] = 2048;
  if (!n_dim) dims[n_dim++] = 64, dims[n_dim++] = 128;

  double peak[8] = {0};  // indexed by main_isa bit position + 1 (0 = scalar)
  enum { kMaxRows = 256 };
  struct {
    const char *kernel;
    char shape[64];
    double ms, gflops, best_gflops;
    int slot;
  } rows[kMaxRows];
  size_t n_rows = 0;
  for (size_t ki = 0; ki < attn_kernel_count(); ki++) {
    const attn_kernel *k = attn_kernel_at(ki);
    bool wanted = n_only == 0 ? k->required_isa != 0 : false;
    for (size_t j = 0; j < n_only; j++) wanted |= strcmp(only[j], k->name) == 0;
    if (!wanted) continue;
    char why[96];
    if (!attn_kernel_available(k, why, sizeof why)) {
      fprintf(stderr, "%-16s unavailable (%s)\n", k->name, why);
      continue;
    }
    const uint32_t isa = main_isa(k->required_isa);
    const int slot = isa ? __builtin_ctz(isa) + 1 : 0;
    if (peak[slot] == 0.0) peak[slot] = attn_peak_fma_gflops(isa, 1);
    for (size_t si = 0; si < n_seq; si++) {
      for (size_t di = 0; di < n_dim; di++) {
        const attn_problem p = attn_problem_make(1, 8, 8, seqs[si], seq_kv ? seq_kv : seqs[si],
                                                 dims[di], dims[di], causal);
        char err[256];
        if (!attn_problem_validate(&p, err, sizeof err)) {
          fprintf(stderr, "kernel_speed: %s\n", err);
          return 2;
        }
        const size_t nq = attn_q_elems(&p), nk = attn_k_elems(&p), nv = attn_v_elems(&p),
                     no = attn_o_elems(&p);
        float *q = malloc(nq * sizeof *q), *kk = malloc(nk * sizeof *kk),
              *v = malloc(nv * sizeof *v), *o = malloc(no * sizeof *o);
        const size_t ws_bytes = attn_kernel_workspace(k, &p, &exec);
        void *ws = ws_bytes ? aligned_alloc(64, (ws_bytes + 63) & ~(size_t)63) : NULL;
        if (!q || !kk || !v || !o || (ws_bytes && !ws)) {
          fprintf(stderr, "kernel_speed: out of memory\n");
          return 1;
        }
        fill(q, nq, 1), fill(kk, nk, 2), fill(v, nv, 3);
        double *t = malloc((size_t)reps * sizeof *t);
        k->run(&p, &exec, q, kk, v, o, ws);  // warm-up (page faults, clocks)
        for (int r = 0; r < reps; r++) {
          const double t0 = now();
          k->run(&p, &exec, q, kk, v, o, ws);
          t[r] = now() - t0;
        }
        qsort(t, (size_t)reps, sizeof *t, cmp_double);
        const double med = reps % 2 ? t[reps / 2] : 0.5 * (t[reps / 2 - 1] + t[reps / 2]);
        const double gflops = attn_flops(&p) / med * 1e-9;
        char shape[64];
        if (p.seq_kv == p.seq_q)
          snprintf(shape, sizeof shape, "B1 H8 S%lld D%lld%s", (long long)p.seq_q,
                   (long long)p.head_dim_qk, causal ? " causal" : "");
        else
          snprintf(shape, sizeof shape, "B1 H8 Sq%lld Skv%lld D%lld%s", (long long)p.seq_q,
                   (long long)p.seq_kv, (long long)p.head_dim_qk, causal ? " causal" : "");
        fprintf(stderr, "%-16s %-30s %10.2f ms %9.1f GFLOP/s\n", k->name, shape, med * 1e3, gflops);
        if (n_rows < kMaxRows) {
          rows[n_rows].kernel = k->name;
          memcpy(rows[n_rows].shape, shape, sizeof shape);
          rows[n_rows].ms = med * 1e3;
          rows[n_rows].gflops = gflops;
          rows[n_rows].best_gflops = attn_flops(&p) / t[0] * 1e-9;
          rows[n_rows].slot = slot;
          n_rows++;
        }
        free(t), free(ws), free(q), free(kk), free(v), free(o);
      }
    }
  }
  for (int slot = 0; slot < 8; slot++) {  // re-measure after the runs; keep the larger
    if (peak[slot] == 0.0) continue;
    const double again = attn_peak_fma_gflops(slot ? 1u << (slot - 1) : 0u, 1);
    if (again > peak[slot]) peak[slot] = again;
  }
  printf("%-16s %-28s %10s %9s %8s %12s\n", "kernel", "shape", "median ms", "GFLOP/s", "% peak",
         "best % peak");
  for (size_t r = 0; r < n_rows; r++)
    printf("%-16s %-28s %10.2f %9.1f %7.1f%% %11.1f%%\n", rows[r].kernel, rows[r].shape, rows[r].ms,
           rows[r].gflops, 100.0 * rows[r].gflops / peak[rows[r].slot],
           100.0 * rows[r].best_gflops / peak[rows[r].slot]);
  printf("peaks (1 thread, measured FMA GFLOP/s, max of before/after):");
  static const char *names[] = {"scalar", "avx2", "avx512f", "neon"};
  for (int s = 0; s < 4; s++)
    if (peak[s] > 0.0) printf(" %s %.1f", names[s], peak[s]);
  printf("\n");
  return 0;
}
