// SPDX-License-Identifier: MIT
// flash_speed — a small measurement tool for the parallel kernels (not a test: it
// asserts nothing about time). For each kernel × thread count it runs one warm-up call
// and `--reps` timed calls of the same problem and prints the median wall time,
// GFLOP/s (attn_flops: visible pairs only), GB/s of K and V read (both from the median),
// the fastest call (least disturbed by other load), and the peak RSS of the process. With --bandwidth it first runs the read-bandwidth probe.
//
//   flash_speed --kernel flash__avx512 --threads 1,2 --seq 2048 --d 64 [--causal]
//   flash_speed --kernel flash__avx512 --threads 2 --seq-q 1 --seq 32768 --d 128 --kv-heads 1
//   flash_speed --kernel flash__avx512 --threads 2 --seq 16384 --d 64 --reps 1   (RSS)
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "attn.h"
#include "peak/bandwidth.h"

static int cmp_double(const void *a, const void *b) {
  const double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static void fill(float *x, size_t n, uint64_t seed) {
  uint64_t s = seed * 0x9e3779b97f4a7c15ull + 1;
  for (size_t i = 0; i < n; i++) {
    s ^= s << 13, s ^= s >> 7, s ^= s << 17;
    x[i] = (float)((double)(s >> 11) * (2.0 / 9007199254740992.0) - 1.0);
  }
}

static int parse_list(const char *s, int *out, int cap) {
  int n = 0;
  while (*s && n < cap) {
    out[n++] = atoi(s);
    const char *c = strchr(s, ',');
    if (!c) break;
    s = c + 1;
  }
  return n;
}

int main(int argc, char **argv) {
  const char *kernels[16];
  int nk = 0, threads[8] = {0}, nthreads = 0, reps = 5, bw = 0;
  int64_t batch = 1, heads = 8, kv_heads = 0, seq = 2048, seq_q = 0, d = 64;
  attn_exec base = {0};
  bool causal = false;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "--causal")) causal = true;
    else if (!strcmp(a, "--bandwidth")) bw = 1;
    else if (!v) {
      fprintf(stderr, "flash_speed: %s needs a value\n", a);
      return 2;
    } else if (!strcmp(a, "--kernel") && nk < 16) kernels[nk++] = v, i++;
    else if (!strcmp(a, "--threads")) nthreads = parse_list(v, threads, 8), i++;
    else if (!strcmp(a, "--reps")) reps = atoi(v), i++;
    else if (!strcmp(a, "--batch")) batch = atoll(v), i++;
    else if (!strcmp(a, "--heads")) heads = atoll(v), i++;
    else if (!strcmp(a, "--kv-heads")) kv_heads = atoll(v), i++;
    else if (!strcmp(a, "--seq")) seq = atoll(v), i++;
    else if (!strcmp(a, "--seq-q")) seq_q = atoll(v), i++;
    else if (!strcmp(a, "--d")) d = atoll(v), i++;
    else if (!strcmp(a, "--tile-q")) base.tile_q = atoi(v), i++;
    else if (!strcmp(a, "--tile-kv")) base.tile_kv = atoi(v), i++;
    else {
      fprintf(stderr, "flash_speed: unknown option %s\n", a);
      return 2;
    }
  }
  if (nk == 0) kernels[nk++] = "flash__avx512";
  if (nthreads == 0) threads[nthreads++] = 0;
  if (reps < 1 || reps > 1000) reps = 5;
  if (kv_heads == 0) kv_heads = heads;
  if (seq_q == 0) seq_q = seq;

  if (bw) {
    attn_bandwidth b;
    if (attn_bandwidth_read(0, 0, 0, &b) == 0)
      printf("read bandwidth: %.1f GB/s best, %.1f median (%d threads, %zu MiB, %s)\n",
             b.best_gbs, b.median_gbs, b.threads, b.bytes >> 20, b.ok ? "verified" : "SUM MISMATCH");
  }

  attn_problem p = attn_problem_make(batch, heads, kv_heads, seq_q, seq, d, d, causal);
  char err[256];
  if (!attn_problem_validate(&p, err, sizeof err)) {
    fprintf(stderr, "flash_speed: %s\n", err);
    return 2;
  }
  float *q = malloc(attn_q_elems(&p) * sizeof(float));
  float *k = malloc(attn_k_elems(&p) * sizeof(float));
  float *v = malloc(attn_v_elems(&p) * sizeof(float));
  float *o = malloc(attn_o_elems(&p) * sizeof(float));
  if (!q || !k || !v || !o) {
    fprintf(stderr, "flash_speed: out of memory\n");
    return 1;
  }
  fill(q, attn_q_elems(&p), 1), fill(k, attn_k_elems(&p), 2), fill(v, attn_v_elems(&p), 3);
  const double flops = attn_flops(&p);
  const double kv_bytes = (double)(attn_k_elems(&p) + attn_v_elems(&p)) * sizeof(float);
  const double io_mib =
      (double)(attn_q_elems(&p) + attn_k_elems(&p) + attn_v_elems(&p) + attn_o_elems(&p)) *
      4.0 / 1048576.0;
  printf("B%lld H%lld KV%lld Sq%lld Skv%lld D%lld %s, %d reps (median)\n", (long long)batch,
         (long long)heads, (long long)kv_heads, (long long)seq_q, (long long)seq, (long long)d,
         causal ? "causal" : "non-causal", reps);
  printf("%-16s %3s %10s %10s %9s %9s %10s %10s\n", "kernel", "T", "median ms", "min ms",
         "GFLOP/s", "KV GB/s", "RSS MiB", "in+out MiB");
  for (int ki = 0; ki < nk; ki++) {
    const attn_kernel *kr = attn_kernel_find(kernels[ki]);
    if (!kr || !attn_kernel_available(kr, NULL, 0)) {
      fprintf(stderr, "flash_speed: kernel %s not found or not available\n", kernels[ki]);
      return 2;
    }
    for (int ti = 0; ti < nthreads; ti++) {
      attn_exec ex = base;
      ex.threads = threads[ti];
      double t[1000];
      if (attn_kernel_call(kr, &p, &ex, q, k, v, o, err, sizeof err) != ATTN_OK) {
        fprintf(stderr, "flash_speed: %s: %s\n", kr->name, err);
        return 1;
      }
      for (int r = 0; r < reps; r++) {
        const double t0 = omp_get_wtime();
        attn_kernel_call(kr, &p, &ex, q, k, v, o, err, sizeof err);
        t[r] = omp_get_wtime() - t0;
      }
      qsort(t, (size_t)reps, sizeof(double), cmp_double);
      const double med = t[reps / 2];
      struct rusage ru;
      getrusage(RUSAGE_SELF, &ru);
      printf("%-16s %3d %10.3f %10.3f %9.1f %9.1f %10.1f %10.1f\n", kr->name,
             threads[ti] ? threads[ti] : omp_get_max_threads(), med * 1e3, t[0] * 1e3, flops / med / 1e9,
             kv_bytes / med / 1e9, (double)ru.ru_maxrss / 1024.0, io_mib);
    }
  }
  free(q), free(k), free(v), free(o);
  return 0;
}
