// SPDX-License-Identifier: MIT
// stream_speed — flash decode's inner loops with everything else taken away, one thread
// (pin it: taskset -c 1). Not a test: it measures, so that a decode change can be reasoned
// about against what the core and its prefetchers do alone (docs/perf-tools.md). Two
// parts:
//   widening  K of each type in L1, each widened vector used by 4 query rows (flash
//             decode's G = 4 Q·Kᵀ groups): GFLOP/s and % of the measured FMA peak.
//   streams   two arrays (K, V) read in blocks with a fixed number of vector FMAs per line
//             read (--flop-per-byte), in flash decode's read orders, with and without a
//             software prefetch of the block ahead: GB/s, and how far the memory time hides
//             behind the arithmetic — overlap = (read-only + compute-only − both) /
//             min(read-only, compute-only): 1 = time is their maximum, 0 = their sum.
// usage: stream_speed [--isa avx2|avx512] [--mib 256] [--block-kib 16] [--row-bytes 512]
//                     [--flop-per-byte 2] [--trials 3]
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "attn.h"
#include "peak.h"
#include "perf_isa.h"
#include "ss_speed.h"

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static double parse_num(const char *opt, const char *s, double lo, double hi) {
  char *end;
  const double v = strtod(s, &end);
  if (*s == '\0' || *end != '\0' || !(v >= lo && v <= hi)) {
    fprintf(stderr, "stream_speed: %s needs a number in [%g, %g], got '%s'\n", opt, lo, hi, s);
    exit(2);
  }
  return v;
}

static volatile double g_sink;  // checksums go here, so no loop is optimised away

typedef struct isa_case {
  const char *name;
  uint32_t isa;
  const ss_speed_ops *ops;
} isa_case;

// Best of `trials` wall times of one stream pass.
static double time_stream(const ss_speed_ops *ops, const ss_stream_args *a, int trials) {
  double best = 1e30;
  for (int t = 0; t < trials; t++) {
    const double t0 = now_s();
    g_sink = ops->stream(a);
    const double dt = now_s() - t0;
    best = dt < best ? dt : best;
  }
  return best;
}

// The same arithmetic over one block held in cache, as many times as the arrays have
// blocks: the compute-only time of a pass.
static double time_compute(const ss_speed_ops *ops, const ss_stream_args *a, const char *hot,
                           int trials) {
  ss_stream_args h = *a;
  h.k = h.v = hot;
  h.bytes = a->block;
  h.prefetch = 0;
  const size_t nb = a->bytes / a->block;
  double best = 1e30;
  for (int t = 0; t < trials; t++) {
    double s = 0.0;
    const double t0 = now_s();
    for (size_t j = 0; j < nb; j++) s += ops->stream(&h);
    const double dt = now_s() - t0;
    g_sink = s;
    best = dt < best ? dt : best;
  }
  return best;
}

int main(int argc, char **argv) {
  const char *only = NULL;
  double mib = 256, block_kib = 16, row_bytes = 512, fpb = 2, trials = 3;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
      printf(
          "usage: stream_speed [--isa avx2|avx512] [--mib N] [--block-kib N] "
          "[--row-bytes N] [--flop-per-byte X] [--trials N]\n");
      return 0;
    }
    if (i + 1 >= argc) {
      fprintf(stderr, "stream_speed: %s needs a value (see --help)\n", argv[i]);
      return 2;
    }
    const char *o = argv[i], *val = argv[++i];
    if (!strcmp(o, "--isa"))
      only = val;
    else if (!strcmp(o, "--mib"))
      mib = parse_num(o, val, 1, 65536);
    else if (!strcmp(o, "--block-kib"))
      block_kib = parse_num(o, val, 1, 1024);
    else if (!strcmp(o, "--row-bytes"))
      row_bytes = parse_num(o, val, 128, 65536);
    else if (!strcmp(o, "--flop-per-byte"))
      fpb = parse_num(o, val, 0, 64);
    else if (!strcmp(o, "--trials"))
      trials = parse_num(o, val, 1, 100);
    else {
      fprintf(stderr, "stream_speed: unknown option '%s' (see --help)\n", o);
      return 2;
    }
  }
  const size_t block = (size_t)block_kib * 1024, rb = (size_t)row_bytes;
  if (rb % 128 || block % rb || (size_t)(mib * 1048576) < 2 * block) {
    fprintf(stderr,
            "stream_speed: --row-bytes must be a multiple of 128 that divides the "
            "block, and the arrays at least two blocks\n");
    return 2;
  }
  const size_t bytes = (size_t)(mib * 1048576) / block * block;
#if defined(__x86_64__) || defined(__i386__)
  const isa_case cases[] = {{"avx2", ATTN_ISA_AVX2, &ss_speed_avx2},
                            {"avx512", ATTN_ISA_AVX512F, &ss_speed_avx512}};
  const int ncases = 2;
#else
  const isa_case *cases = NULL;
  const int ncases = 0;
#endif
  if (only && strcmp(only, "avx2") && strcmp(only, "avx512")) {
    fprintf(stderr, "stream_speed: --isa avx2 or avx512, got '%s'\n", only);
    return 2;
  }
  char *k = aligned_alloc(64, bytes), *v = aligned_alloc(64, bytes),
       *hot = aligned_alloc(64, block);
  void *kl = aligned_alloc(64, 1 << 14);  // widening: 4096 floats / 64 vectors of K
  if (!k || !v || !hot || !kl) {
    fprintf(stderr, "stream_speed: out of memory (2 × %.0f MiB)\n", mib);
    return 1;
  }
  for (size_t i = 0; i < bytes / 4; i++) ((float *)k)[i] = ((float *)v)[i] = 1.0f / 1024;
  for (size_t i = 0; i < block / 4; i++) ((float *)hot)[i] = 1.0f / 1024;
  int ran = 0;
  for (int ci = 0; ci < ncases; ci++) {
    const isa_case *c = &cases[ci];
    if (!perf_isa_selected(only, c->name, c->isa)) continue;
    ran = 1;
    const int w = c->ops->vec_width;
    const double peak = attn_peak_fma_gflops(c->isa, 1);
    printf("%s (%d lanes), 1 thread; FMA peak %.1f GFLOP/s (measured now)\n", c->name, w, peak);
    // Widening: 64 vectors of K in L1, enough passes for ~0.1 s at the peak.
    const int64_t n = 64;
    const int64_t reps = (int64_t)(peak * 1e9 * 0.1 / (2.0 * w * 4 * n));
    printf("  widening (K in L1, each widened vector used by 4 rows)        GFLOP/s  %% of peak\n");
    const attn_dtype types[] = {ATTN_DTYPE_F32, ATTN_DTYPE_F16, ATTN_DTYPE_BF16, ATTN_DTYPE_Q8_0};
    const char *tn[] = {"f32", "f16", "bf16", "q8_0"};
    for (int ti = 0; ti < 4; ti++) {
      const attn_dtype t = types[ti];
      if (t == ATTN_DTYPE_F32)
        for (int i = 0; i < 4096; i++) ((float *)kl)[i] = 1.0f / 1024;
      else if (t == ATTN_DTYPE_Q8_0)
        for (int b = 0; b < 4096 / ATTN_Q8_0_BLOCK; b++) {
          attn_block_q8_0 *q = (attn_block_q8_0 *)kl + b;
          q->d = 0x1400;  // binary16 2^-10
          for (int i = 0; i < ATTN_Q8_0_BLOCK; i++) q->qs[i] = (int8_t)(i % 7 - 3);
        }
      else
        for (int i = 0; i < 4096; i++)  // 2^-10 in binary16 and bfloat16
          ((uint16_t *)kl)[i] = t == ATTN_DTYPE_F16 ? 0x1400 : 0x3A80;
      double best = 1e30, chk = 0.0;
      for (int tr = 0; tr < (int)trials; tr++) {
        const double t0 = now_s();
        chk = c->ops->widen(t, kl, n, reps);
        const double dt = now_s() - t0;
        best = dt < best ? dt : best;
      }
      g_sink = chk;
      if (isnan(chk)) {
        printf("    %-5s needs F16C: skipped\n", tn[ti]);
        continue;
      }
      const double gf = 2.0 * w * 4.0 * (double)n * (double)reps / best / 1e9;  // 4 rows
      printf("    %-5s %60.1f  %8.0f%%\n", tn[ti], gf, 100.0 * gf / peak);
    }
    // Streams.
    const int fl = (int)(fpb * 64.0 / (2.0 * w) + 0.5);
    if (fl != 0 && fl != 2 && fl != 4 && fl != 8 && fl != 16) {
      fprintf(stderr,
              "stream_speed: --flop-per-byte %g is %d vector FMAs per line on %s; "
              "0, 2, 4, 8 or 16 are compiled in\n",
              fpb, fl, c->name);
      return 2;
    }
    printf(
        "  streams: K and V %.0f MiB each, %zu KiB blocks, rows of %zu B, %d FMAs per "
        "64-byte line (%.2f flop/B)\n",
        (double)bytes / 1048576, block / 1024, rb, fl, 2.0 * w * fl / 64.0);
    printf("    %-22s %-8s %9s %15s %11s %11s %9s\n", "read order", "prefetch", "GB/s",
           "reads only GB/s", "compute ms", "both ms", "overlap");
    const struct {
      const char *name;
      ss_pattern p;
      int krows;
    } pats[] = {{"front to back", SS_LINEAR, 1},
                {"V in half rows", SS_HALFROWS, 1},
                {"K 2 rows interleaved", SS_KROWS, 2},
                {"K 4 rows interleaved", SS_KROWS, 4},
                {"K 8 rows interleaved", SS_KROWS, 8}};
    for (int pi = 0; pi < 5; pi++)
      for (int pf = 0; pf < 2; pf++) {
        ss_stream_args a = {k, v, bytes, block, rb, pats[pi].p, pats[pi].krows, fl, pf};
        const double both = time_stream(c->ops, &a, (int)trials);
        ss_stream_args r = a;
        r.fma_line = 0;
        const double rd = time_stream(c->ops, &r, (int)trials);
        const double comp = time_compute(c->ops, &a, hot, (int)trials);
        const double mn = rd < comp ? rd : comp;
        const double ov = fl ? (rd + comp - both) / mn : 0.0;
        printf("    %-22s %-8s %9.1f %15.1f %11.2f %11.2f %8.0f%%\n", pats[pi].name,
               pf ? "L2" : "none", 2.0 * (double)bytes / both / 1e9, 2.0 * (double)bytes / rd / 1e9,
               comp * 1e3, both * 1e3, 100.0 * ov);
      }
  }
  free(k), free(v), free(hot), free(kl);
  if (!ran) {
    fprintf(stderr, "stream_speed: no x86 SIMD ISA to run on this CPU/build\n");
    return 1;
  }
  return 0;
}
