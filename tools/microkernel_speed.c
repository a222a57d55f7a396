// SPDX-License-Identifier: MIT
// microkernel_speed — the register-tile micro-kernel (simd/microkernel.h) and the online
// softmax's exponential loop (simd/softmax.h) timed alone, data in L1, on this core: the
// measured counterpart of llvm-mca's prediction (scripts/mca-microkernel, docs/mca.md).
// A measurement tool, not a test (it asserts nothing about time).
//
// Per ISA the 1-thread FMA peak is measured before and after (harness/peak; the larger
// counts). A tile's speed is given as % of that peak: the fraction of the FMA bound the
// micro-kernel reaches, which is llvm-mca's "eff" column. B is read two ways: as a
// contiguous panel (ldb = the tile's width) and with the flash kernels' K̂ᵀ row stride of
// tile_kv floats (--ldb, default 128: 512 B, so one tile's k rows share 1/8 of L1's sets).
// The exponential loop's cost is given in FMA slots per vector: its time per vector of
// scores × the peak / (2·VF_W) — the vector FMAs the core could have issued meanwhile.
// One vector of scores costs 2·D vector FMAs of Q·Kᵀ and P·V at head dim D, so the
// softmax's share at D is slots / (2·D); on a core with two FMA pipes slots / 2 is cycles.
//
//   microkernel_speed [--isa avx2|avx512] [--nk 64,128] [--ldb 128] [--trials 7]
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "attn.h"
#include "mk_speed.h"
#include "peak.h"
#include "perf_isa.h"

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void fill(float *x, size_t n, unsigned seed) {
  for (size_t i = 0; i < n; i++) x[i] = (float)((i * 2654435761u + seed) % 1000) / 1000.0f - 0.5f;
}

static long parse_pos(const char *opt, const char *s) {
  char *end;
  const long v = strtol(s, &end, 10);
  if (*s == '\0' || *end != '\0' || v <= 0 || v > 4096) {
    fprintf(stderr, "microkernel_speed: %s needs a whole number in 1..4096, got '%s'\n", opt, s);
    exit(2);
  }
  return v;
}

typedef struct isa_case {
  const char *name;
  uint32_t isa;
  const mk_speed_ops *ops;
  int tiles[3][2];
  int ntiles;
} isa_case;

int main(int argc, char **argv) {
  const char *only = NULL;
  long ldb_flash = 128, trials = 7;
  long nks[8] = {64, 128};
  int nnk = 2;
  for (int i = 1; i < argc; i++) {
    if (i + 1 >= argc) {
      fprintf(stderr, "microkernel_speed: %s needs a value (options: --isa --nk --ldb --trials)\n",
              argv[i]);
      return 2;
    }
    if (!strcmp(argv[i], "--isa")) {
      only = argv[++i];
    } else if (!strcmp(argv[i], "--ldb")) {
      ldb_flash = parse_pos("--ldb", argv[++i]);
    } else if (!strcmp(argv[i], "--trials")) {
      trials = parse_pos("--trials", argv[++i]);
    } else if (!strcmp(argv[i], "--nk")) {
      nnk = 0;
      char *list = argv[++i];
      for (char *t = strtok(list, ","); t && nnk < 8; t = strtok(NULL, ","))
        nks[nnk++] = parse_pos("--nk", t);
    } else {
      fprintf(stderr, "microkernel_speed: unknown option '%s'\n", argv[i]);
      return 2;
    }
  }
#if defined(__x86_64__) || defined(__i386__)
  const isa_case cases[] = {
      {"avx2", ATTN_ISA_AVX2, &mk_speed_avx2, {{6, 2}, {4, 3}, {3, 4}}, 3},
      {"avx512", ATTN_ISA_AVX512F, &mk_speed_avx512, {{8, 3}, {6, 4}, {0, 0}}, 2},
  };
  const int ncases = 2;
#else
  const isa_case *cases = NULL;
  const int ncases = 0;
#endif
  int ran = 0;
  for (int ci = 0; ci < ncases; ci++) {
    const isa_case *c = &cases[ci];
    if (!perf_isa_selected(only, c->name, c->isa)) continue;
    ran = 1;
    const double peak0 = attn_peak_fma_gflops(c->isa, 1);
    const int w = c->ops->vec_width;
    long maxnk = 0;
    for (int k = 0; k < nnk; k++) maxnk = nks[k] > maxnk ? nks[k] : maxnk;
    const size_t bfl = (size_t)maxnk * (size_t)(ldb_flash > 64 ? ldb_flash : 64);
    float *a = aligned_alloc(64, 64 * 4096 * sizeof(float));
    float *b = aligned_alloc(64, ((bfl + 15) / 16 * 16) * sizeof(float));
    float *cc = aligned_alloc(64, 8 * 64 * sizeof(float));
    float *s = aligned_alloc(64, 4096 * sizeof(float)),
          *src = aligned_alloc(64, 4096 * sizeof(float));
    if (!a || !b || !cc || !s || !src) {
      fprintf(stderr, "microkernel_speed: out of memory\n");
      return 1;
    }
    fill(a, 64 * 4096, 1), fill(b, bfl, 2), memset(cc, 0, 8 * 64 * sizeof(float));
    for (int j = 0; j < 4096; j++) src[j] = -(float)(j % 97) * 0.173f;  // scores − max ≤ 0
    double res[3][8][2][2];  // tile × nk × layout × init → GFLOP/s (best trial)
    for (int ti = 0; ti < c->ntiles; ti++)
      for (int k = 0; k < nnk; k++)
        for (int lay = 0; lay < 2; lay++)
          for (int ld = 0; ld < 2; ld++) {
            const int mr = c->tiles[ti][0], nv = c->tiles[ti][1];
            const int64_t ldb = lay ? ldb_flash : nv * w, nk = nks[k];
            if (lay && ldb < nv * w) {
              res[ti][k][lay][ld] = 0;
              continue;
            }
            const int64_t reps = (int64_t)(2e8 / (2.0 * mr * nv * w * nk)) + 1;
            double best = 0;
            for (long t = 0; t < trials; t++) {
              const double t0 = now();
              if (c->ops->tile(mr, nv, a, b, ldb, nk, cc, reps, ld) != 0) {
                fprintf(stderr,
                        "microkernel_speed: tile %dx%d is not compiled in (mk_speed_body.h)\n", mr,
                        nv);
                return 1;
              }
              const double gf = 2.0 * mr * nv * w * nk * (double)reps / (now() - t0) / 1e9;
              best = gf > best ? gf : best;
            }
            res[ti][k][lay][ld] = best;
          }
    const int64_t npad = 128, ereps = 200000;
    double ebest = 1e30;
    float sink = 0;
    for (long t = 0; t < trials; t++) {
      const double t0 = now();
      sink += c->ops->exp_rows(s, src, npad, ereps);
      const double dt = (now() - t0) / ((double)ereps * (double)(npad / w));
      ebest = dt < ebest ? dt : ebest;
    }
    const double peak1 = attn_peak_fma_gflops(c->isa, 1);
    const double peak = peak0 > peak1 ? peak0 : peak1;
    printf("%s: 1-thread FMA peak %.1f GFLOP/s (before %.1f, after %.1f); best of %ld trials\n",
           c->name, peak, peak0, peak1, trials);
    printf("  %-6s %5s  %-22s %-22s\n", "tile", "k", "B panel: zero / load",
           "B strided: zero / load");
    for (int ti = 0; ti < c->ntiles; ti++)
      for (int k = 0; k < nnk; k++) {
        char tl[16];
        snprintf(tl, sizeof tl, "%dx%d", c->tiles[ti][0], c->tiles[ti][1]);
        printf("  %-6s %5ld  %5.1f%% / %5.1f%%        %5.1f%% / %5.1f%%\n", tl, nks[k],
               100 * res[ti][k][0][0] / peak, 100 * res[ti][k][0][1] / peak,
               100 * res[ti][k][1][0] / peak, 100 * res[ti][k][1][1] / peak);
      }
    const double slots = ebest * peak * 1e9 / (2.0 * w);
    printf(
        "  softmax exp loop (row of %ld scores, in L1): %.2f ns per vector = %.1f FMA slots"
        " (share vs the GEMMs: %.0f%% at D64, %.0f%% at D128)%s\n",
        (long)npad, ebest * 1e9, slots, 100 * slots / 128, 100 * slots / 256,
        sink == 12345.0f ? " " : "");
    free(a), free(b), free(cc), free(s), free(src);
  }
  if (!ran) printf("microkernel_speed: no x86 SIMD ISA to time on this CPU/build\n");
  return 0;
}
