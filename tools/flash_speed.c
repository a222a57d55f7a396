// SPDX-License-Identifier: MIT
// flash_speed — a small measurement tool for the parallel kernels (not a test: it
// asserts nothing about time). For each kernel × thread count it runs one warm-up call
// and `--reps` timed calls of the same problem and prints the median wall time,
// GFLOP/s (attn_flops: visible pairs only), GB/s of K and V read (both from the median),
// the fastest call (least disturbed by other load), and the peak RSS of the process. With
// --bandwidth it first runs the read-bandwidth probe.
// --rotate N keeps N separate copies of Q, K, V and O and gives each call the next one, so
// that data smaller than the last-level cache (MQA decode: 32 MiB of K+V against a 32 MiB
// L3) is not partly served from cache by the previous call: with N copies totalling well
// over the LLC, every call reads its K and V from DRAM, as a decode step of a real model
// (many layers' KV cache) does.
//
//   flash_speed --kernel flash__avx512 --threads 1,2 --seq 2048 --d 64 [--causal]
//   flash_speed --kernel flash__avx512 --threads 2 --seq-q 1 --seq 32768 --d 128 --kv-heads 1
//   flash_speed --kernel flash__avx512 --threads 2 --seq 16384 --d 64 --reps 1   (RSS)
// --kv-dtype f32,f16,bf16,q8_0 (a list; default f32) stores K and V in each type (converted
// from the same float32 data: round to nearest even, q8_0 per block) and, per kernel and
// thread count, times the types alternately — rep r runs every type once, in list order —
// so that a ratio between two types sees the same machine load. GB/s counts the bytes
// stored (attn_kv_row_bytes), "vs first" is the first variant's median over this one's.
// Options (attn.h, "Attention variants"): --window L (causal-style left window, right 0
// unless --window-right R), --softcap C, --alibi MAX_BIAS, --sinks (0.5 per head), --lse.
// With --ab every K/V type is timed twice, plain (A) and with the options (B), all
// variants alternated per rep (the order rotates every rep), and "vs first" gives the
// ratios: an A/B comparison under the same (noisy) machine load.
//   flash_speed --threads 2 --seq 2048 --d 64 --softcap 50 --ab --reps 11
// Q, K, V and O start on 64-byte boundaries, as `attnbench bench` allocates them; --offset B
// (0–60, a multiple of 4) puts each B bytes past one instead — e.g. 16, malloc's
// alignment — to measure what unaligned inputs cost.
// --regtile N runs register-tile variant N of each kernel (attn_exec.regtile; `attnbench list`
// shows them, rt=); an index the kernel does not have is an error (the warm-up call says why).
#include <errno.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "attn.h"
#include "core/convert.h"
#include "machine/peak/bandwidth.h"

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

// `bytes` at `off` bytes past a 64-byte boundary; *base is what to free (NULL: failed).
static void *alloc_at(size_t bytes, int off, void **base) {
  *base = aligned_alloc(64, (bytes + (size_t)off + 63) / 64 * 64);
  return *base ? (char *)*base + off : NULL;
}

// A whole decimal number in [lo, hi], or exit 2 with a message naming the option.
static long long number(const char *opt, const char *s, long long lo, long long hi) {
  char *end;
  errno = 0;
  const long long v = strtoll(s, &end, 10);
  if (errno || end == s || (*end && *end != ',') || v < lo || v > hi) {
    fprintf(stderr, "flash_speed: %s: '%s' is not an integer in [%lld, %lld]\n", opt, s, lo, hi);
    exit(2);
  }
  return v;
}

static int parse_list(const char *opt, const char *s, int *out, int cap) {
  int n = 0;
  for (;;) {
    if (n == cap) {
      fprintf(stderr, "flash_speed: %s: at most %d values\n", opt, cap);
      exit(2);
    }
    out[n++] = (int)number(opt, s, 0, 4096);
    const char *c = strchr(s, ',');
    if (!c) break;
    s = c + 1;
  }
  return n;
}

int main(int argc, char **argv) {
  const char *kernels[16];
  int nk = 0, threads[8] = {0}, nthreads = 0, reps = 5, bw = 0, rotate = 1, offset = 0;
  int64_t batch = 1, heads = 8, kv_heads = 0, seq = 2048, seq_q = 0, d = 64;
  attn_exec base = {0};
  bool causal = false, ab = false, want_sinks = false, want_lse = false;
  attn_options opt = {0};
  attn_dtype dts[ATTN_DTYPE_COUNT] = {ATTN_DTYPE_F32};
  int ndt = 1;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "--causal"))
      causal = true;
    else if (!strcmp(a, "--bandwidth"))
      bw = 1;
    else if (!strcmp(a, "--ab"))
      ab = true;
    else if (!strcmp(a, "--sinks"))
      want_sinks = true;
    else if (!strcmp(a, "--lse"))
      want_lse = true;
    else if (!v) {
      fprintf(stderr, "flash_speed: %s needs a value\n", a);
      return 2;
    } else if (!strcmp(a, "--kernel") && nk < 16)
      kernels[nk++] = v, i++;
    else if (!strcmp(a, "--threads"))
      nthreads = parse_list(a, v, threads, 8), i++;
    else if (!strcmp(a, "--reps"))
      reps = (int)number(a, v, 1, 1000), i++;
    else if (!strcmp(a, "--rotate"))
      rotate = (int)number(a, v, 1, 64), i++;
    else if (!strcmp(a, "--offset")) {
      offset = (int)number(a, v, 0, 60), i++;
      if (offset % 4) {
        fprintf(stderr, "flash_speed: --offset %d is not a multiple of 4 (float alignment)\n",
                offset);
        return 2;
      }
    } else if (!strcmp(a, "--batch"))
      batch = number(a, v, 1, 1 << 20), i++;
    else if (!strcmp(a, "--heads"))
      heads = number(a, v, 1, 1 << 20), i++;
    else if (!strcmp(a, "--kv-heads"))
      kv_heads = number(a, v, 1, 1 << 20), i++;
    else if (!strcmp(a, "--seq"))
      seq = number(a, v, 1, 1 << 30), i++;
    else if (!strcmp(a, "--seq-q"))
      seq_q = number(a, v, 1, 1 << 30), i++;
    else if (!strcmp(a, "--d"))
      d = number(a, v, 1, 1 << 16), i++;
    else if (!strcmp(a, "--tile-q"))
      base.tile_q = (int)number(a, v, 0, 1 << 20), i++;
    else if (!strcmp(a, "--kv-dtype")) {
      ndt = 0;
      for (const char *x = v; x;) {
        const char *c = strchr(x, ',');
        char name[16];
        const size_t len = c ? (size_t)(c - x) : strlen(x);
        snprintf(name, sizeof name, "%.*s", (int)(len < 15 ? len : 15), x);
        if (ndt == ATTN_DTYPE_COUNT || len > 15 || !attn_dtype_parse(name, &dts[ndt])) {
          fprintf(stderr, "flash_speed: --kv-dtype: '%s' is not a list of f32, f16, bf16, q8_0\n",
                  v);
          return 2;
        }
        ndt++;
        x = c ? c + 1 : NULL;
      }
      i++;
    } else if (!strcmp(a, "--tile-kv"))
      base.tile_kv = (int)number(a, v, 0, 1 << 20), i++;
    else if (!strcmp(a, "--regtile"))
      base.regtile = (int)number(a, v, 0, 63), i++;
    else if (!strcmp(a, "--window"))
      opt.window = true, opt.window_left = number(a, v, 1, 1 << 30) - 1, i++;
    else if (!strcmp(a, "--window-right"))
      opt.window_right = number(a, v, 0, 1 << 30), i++;
    else if (!strcmp(a, "--softcap"))
      opt.softcap = (float)number(a, v, 1, 1 << 20), i++;
    else if (!strcmp(a, "--alibi"))
      opt.alibi_max_bias = (float)number(a, v, 1, 64), i++;
    else {
      fprintf(stderr, "flash_speed: unknown option %s\n", a);
      return 2;
    }
  }
  if (nk == 0) kernels[nk++] = "flash__avx512";
  if (nthreads == 0) threads[nthreads++] = 0;
  if (kv_heads == 0) kv_heads = heads;
  if (seq_q == 0) seq_q = seq;

  if (bw) {
    attn_bandwidth b;
    if (attn_bandwidth_read(0, 0, 0, &b) == 0)
      printf("read bandwidth: %.1f GB/s best, %.1f median (%d threads, %zu MiB, %s)\n", b.best_gbs,
             b.median_gbs, b.threads, b.bytes >> 20, b.ok ? "verified" : "SUM MISMATCH");
  }

  attn_problem p = attn_problem_make(batch, heads, kv_heads, seq_q, seq, d, d, causal);
  float *sinks = malloc((size_t)heads * sizeof(float));
  float *lse = malloc((size_t)(batch * heads * seq_q) * sizeof(float));
  if (!sinks || !lse) {
    fprintf(stderr, "flash_speed: out of memory\n");
    return 1;
  }
  for (int64_t h = 0; h < heads; h++) sinks[h] = 0.5f;
  if (want_sinks) opt.sinks = sinks;
  if (want_lse) opt.lse = lse;
  // The variants timed alternately: each K/V type, plain and (--ab) with the options; without
  // --ab every variant has the options (if any were given).
  enum { kMaxVariants = 2 * ATTN_DTYPE_COUNT };
  attn_problem pv[kMaxVariants];
  int vdt[kMaxVariants], nv = 0;
  for (int di = 0; di < ndt; di++)
    for (int b = 0; b < (ab ? 2 : 1); b++) {
      pv[nv] = p;
      pv[nv].kv_dtype = dts[di];
      pv[nv].opts = !ab || b ? &opt : NULL;
      vdt[nv++] = di;
    }
  char err[256];
  for (int x = 0; x < nv; x++) {
    if (!attn_problem_validate(&pv[x], err, sizeof err)) {
      fprintf(stderr, "flash_speed: %s\n", err);
      return 2;
    }
  }
  const size_t krows = attn_k_elems(&p) / (size_t)d, vrows = attn_v_elems(&p) / (size_t)d;
  float *qs[64], *os[64];
  void *ks[ATTN_DTYPE_COUNT][64], *vs[ATTN_DTYPE_COUNT][64];
  void *qb[64], *ob[64], *kbs[ATTN_DTYPE_COUNT][64], *vbs[ATTN_DTYPE_COUNT][64];  // to free
  double kv_bytes[ATTN_DTYPE_COUNT];
  for (int di = 0; di < ndt; di++)
    kv_bytes[di] = (double)(krows + vrows) * (double)attn_kv_row_bytes(dts[di], d);
  float *kf = malloc(attn_k_elems(&p) * sizeof(float)),
        *vf = malloc(attn_v_elems(&p) * sizeof(float));
  if (!kf || !vf) {
    fprintf(stderr, "flash_speed: out of memory\n");
    return 1;
  }
  for (int c = 0; c < rotate; c++) {
    qs[c] = alloc_at(attn_q_elems(&p) * sizeof(float), offset, &qb[c]);
    os[c] = alloc_at(attn_o_elems(&p) * sizeof(float), offset, &ob[c]);
    if (!qs[c] || !os[c]) {
      fprintf(stderr, "flash_speed: out of memory (copy %d of %d)\n", c + 1, rotate);
      return 1;
    }
    fill(qs[c], attn_q_elems(&p), 1), fill(kf, attn_k_elems(&p), 2);
    fill(vf, attn_v_elems(&p), 3);
    for (int di = 0; di < ndt; di++) {
      ks[di][c] = alloc_at(krows * attn_kv_row_bytes(dts[di], d), offset, &kbs[di][c]);
      vs[di][c] = alloc_at(vrows * attn_kv_row_bytes(dts[di], d), offset, &vbs[di][c]);
      if (!ks[di][c] || !vs[di][c]) {
        fprintf(stderr, "flash_speed: out of memory (copy %d of %d)\n", c + 1, rotate);
        return 1;
      }
      attn_quantize_rows(dts[di], kf, krows, d, ks[di][c]);
      attn_quantize_rows(dts[di], vf, vrows, d, vs[di][c]);
    }
    memset(os[c], 0, attn_o_elems(&p) * sizeof(float));  // touched: no first-call faults
  }
  free(kf), free(vf);
  char names[128];
  const char *opt_names =
      attn_option_names(attn_problem_options_used(&pv[nv - 1]), names, sizeof names);
  double io_mib = (double)(attn_q_elems(&p) + attn_o_elems(&p)) * 4.0 / 1048576.0;
  printf("B%lld H%lld KV%lld Sq%lld Skv%lld D%lld %s, %d reps (median)", (long long)batch,
         (long long)heads, (long long)kv_heads, (long long)seq_q, (long long)seq, (long long)d,
         causal ? "causal" : "non-causal", reps);
  if (rotate > 1) printf(", %d rotating input copies", rotate);
  printf(", options %s%s", opt_names, ab ? " (B) vs none (A)" : "");
  if (offset) printf(", inputs %d bytes past 64-byte boundaries", offset);
  if (nv > 1) printf(", variants timed alternately");
  printf("\n");
  printf("%-16s %-5s %-4s %3s %10s %10s %9s %9s %8s %10s %10s\n", "kernel", "kv", "opts", "T",
         "median ms", "min ms", "GFLOP/s", "KV GB/s", "vs first", "RSS MiB", "in+out MiB");
  for (int ki = 0; ki < nk; ki++) {
    const attn_kernel *kr = attn_kernel_find(kernels[ki]);
    if (!kr || !attn_kernel_available(kr, NULL, 0)) {
      fprintf(stderr, "flash_speed: kernel %s not found or not available\n", kernels[ki]);
      return 2;
    }
    for (int ti = 0; ti < nthreads; ti++) {
      attn_exec ex = base;
      ex.threads = threads[ti];
      static double t[kMaxVariants][1000];
      void *ws[kMaxVariants] = {NULL};
      bool fb[kMaxVariants] = {false};
      for (int x = 0; x < nv; x++) {
        const int di = vdt[x];
        // The warm-up call goes through attn_kernel_call, which validates the problem and
        // every copy's inputs (an O(inputs) scan of the input domain) once; the timed calls
        // then run the kernel alone, on a workspace allocated once — as `attnbench bench`
        // times it.
        for (int c = 0; c < rotate; c++) {
          if (attn_kernel_call(kr, &pv[x], &ex, qs[c], ks[di][c], vs[di][c], os[c], err,
                               sizeof err) != ATTN_OK) {
            fprintf(stderr, "flash_speed: %s: %s\n", kr->name, err);
            return 1;
          }
        }
        const size_t ws_bytes = attn_kernel_workspace(kr, &pv[x], &ex);
        ws[x] = ws_bytes ? aligned_alloc(64, (ws_bytes + 63) & ~(size_t)63) : NULL;
        if (ws_bytes && !ws[x]) {
          fprintf(stderr, "flash_speed: %s: cannot allocate %zu bytes of workspace\n", kr->name,
                  ws_bytes);
          return 1;
        }
      }
      for (int r = 0; r < reps; r++) {
        const int c = (r + 1) % rotate;  // the warm-up call used copy 0
        for (int y = 0; y < nv; y++) {
          const int x = (y + r) % nv;  // the order rotates: no variant always runs first
          const int di = vdt[x];
          const double t0 = omp_get_wtime();
          attn_kernel_run(kr, &pv[x], &ex, qs[c], ks[di][c], vs[di][c], os[c], ws[x], &fb[x]);
          t[x][r] = omp_get_wtime() - t0;
        }
      }
      double med0 = 0.0;
      for (int x = 0; x < nv; x++) {
        const int di = vdt[x];
        free(ws[x]);
        qsort(t[x], (size_t)reps, sizeof(double), cmp_double);
        const double med = t[x][reps / 2];
        if (x == 0) med0 = med;
        struct rusage ru;
        getrusage(RUSAGE_SELF, &ru);
        printf("%-16s %-5s %-4s %3d %10.3f %10.3f %9.1f %9.1f %8.3f %10.1f %10.1f%s\n", kr->name,
               attn_dtype_name(dts[di]),
               pv[x].opts && attn_problem_options_used(&pv[x]) ? "B" : "-",
               threads[ti] ? threads[ti] : omp_get_max_threads(), med * 1e3, t[x][0] * 1e3,
               attn_flops(&pv[x]) / med / 1e9, kv_bytes[di] / med / 1e9, med0 / med,
               (double)ru.ru_maxrss / 1024.0, io_mib + kv_bytes[di] / 1048576.0,
               fb[x] ? "  (portable fallback)" : "");
      }
    }
  }
  for (int c = 0; c < rotate; c++) {
    free(qb[c]), free(ob[c]);
    for (int di = 0; di < ndt; di++) free(kbs[di][c]), free(vbs[di][c]);
  }
  free(sinks), free(lse);
  return 0;
}
