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
// --compute f32,bf16,f16,int8 (a list; default f32) sets attn_problem.compute: each K/V type
// runs in each mode, all alternated per rep as the types are ("vs first" is a ratio under the
// same load). A kernel without the mode's ATTN_CAP_COMPUTE_* bit runs as attn_kernel_run
// sends it. E.g. flash__avx512bf16 in f32 (flash__avx512's path) against bf16:
//   flash_speed --kernel flash__avx512bf16 --threads 2 --seq 2048 --d 128 --compute f32,bf16
// int8 needs q8_0 K/V: with q8_0 in the --kv-dtype list it runs on q8_0 only, so f32 decode
// and int8 decode are timed alternately in one process (their ratio under one load):
//   flash_speed --kernel flash__avx512vnni --threads 2 --heads 32 --kv-heads 8 --seq-q 1
//               --seq 16384 --d 128 --kv-dtype f32,q8_0 --compute f32,int8 --rotate 12
// --unit-peaks (x86-64 with AVX-512) first measures, per --threads value, the float32 FMA
// peak (vfmadd231ps zmm, 32 flops) and, with AVX512_BF16, the bf16 dot-product peak
// (vdpbf16ps zmm, 64 flops: 32 pair products and adds), 12 independent accumulators per
// thread, best of 5 rounds: the denominators of "% of the unit's peak".
#include <errno.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "attn.h"
#include "core/convert.h"
#include "machine/peak/hugemem.h"
#if defined(__x86_64__)
#include <immintrin.h>
#endif
#include "machine/peak/bandwidth.h"

// CPU seconds of the process (every thread) or of the calling thread: unlike wall time,
// not stretched by other processes' use of the cores.
static double cpu_seconds(clockid_t clock) {
  struct timespec ts;
  clock_gettime(clock, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

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
  *base = attn_alloc_streamed(bytes + (size_t)off);  // huge pages as bench's inputs
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

// The command line.
typedef struct speed_args {
  const char *kernels[16];
  int nk, threads[8], nthreads, reps, bw, rotate, offset;
  int64_t batch, heads, kv_heads, seq, seq_q, d;
  attn_exec base;
  bool causal, ab, want_sinks, want_lse;
  attn_options opt;
  attn_dtype dts[ATTN_DTYPE_COUNT];
  int ndt;
  attn_compute cms[ATTN_COMPUTE_COUNT];
  int ncm, unit_peaks;
} speed_args;

static const char *const kComputeNames[ATTN_COMPUTE_COUNT] = {"f32", "bf16", "f16", "int8"};

// --compute's list into a->cms; false after a message.
static bool parse_computes(const char *v, speed_args *a) {
  a->ncm = 0;
  for (const char *s = v; *s;) {
    const size_t len = strcspn(s, ",");
    int found = -1;
    for (int c = 0; c < ATTN_COMPUTE_COUNT; c++)
      if (strlen(kComputeNames[c]) == len && !strncmp(s, kComputeNames[c], len)) found = c;
    if (found < 0 || a->ncm == ATTN_COMPUTE_COUNT) {
      fprintf(stderr, "flash_speed: --compute: '%s' is not a list of f32, bf16, f16, int8\n", v);
      return false;
    }
    a->cms[a->ncm++] = (attn_compute)found;
    s += len + (s[len] == ',');
  }
  return a->ncm > 0;
}

// --kv-dtype's list into a->dts; false after a message.
static bool parse_dtypes(const char *v, speed_args *a) {
  a->ndt = 0;
  for (const char *x = v; x;) {
    const char *c = strchr(x, ',');
    char name[16];
    const size_t len = c ? (size_t)(c - x) : strlen(x);
    snprintf(name, sizeof name, "%.*s", (int)(len < 15 ? len : 15), x);
    if (a->ndt == ATTN_DTYPE_COUNT || len > 15 || !attn_dtype_parse(name, &a->dts[a->ndt])) {
      fprintf(stderr, "flash_speed: --kv-dtype: '%s' is not a list of f32, f16, bf16, q8_0\n", v);
      return false;
    }
    a->ndt++;
    x = c ? c + 1 : NULL;
  }
  return true;
}

// Fills *a from argv (defaults first). -1, or the exit code after a message.
static int parse_args(int argc, char **argv, speed_args *a) {
  *a = (speed_args){.reps = 5,
                    .rotate = 1,
                    .batch = 1,
                    .heads = 8,
                    .seq = 2048,
                    .d = 64,
                    .dts = {ATTN_DTYPE_F32},
                    .ndt = 1,
                    .cms = {ATTN_COMPUTE_F32},
                    .ncm = 1};
  for (int i = 1; i < argc; i++) {
    const char *o = argv[i];
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(o, "--causal"))
      a->causal = true;
    else if (!strcmp(o, "--bandwidth"))
      a->bw = 1;
    else if (!strcmp(o, "--ab"))
      a->ab = true;
    else if (!strcmp(o, "--sinks"))
      a->want_sinks = true;
    else if (!strcmp(o, "--lse"))
      a->want_lse = true;
    else if (!strcmp(o, "--unit-peaks"))
      a->unit_peaks = 1;
    else if (!v) {
      fprintf(stderr, "flash_speed: %s needs a value\n", o);
      return 2;
    } else if (!strcmp(o, "--kernel") && a->nk < 16)
      a->kernels[a->nk++] = v, i++;
    else if (!strcmp(o, "--threads"))
      a->nthreads = parse_list(o, v, a->threads, 8), i++;
    else if (!strcmp(o, "--reps"))
      a->reps = (int)number(o, v, 1, 1000), i++;
    else if (!strcmp(o, "--rotate"))
      a->rotate = (int)number(o, v, 1, 64), i++;
    else if (!strcmp(o, "--offset")) {
      a->offset = (int)number(o, v, 0, 60), i++;
      if (a->offset % 4) {
        fprintf(stderr, "flash_speed: --offset %d is not a multiple of 4 (float alignment)\n",
                a->offset);
        return 2;
      }
    } else if (!strcmp(o, "--batch"))
      a->batch = number(o, v, 1, 1 << 20), i++;
    else if (!strcmp(o, "--heads"))
      a->heads = number(o, v, 1, 1 << 20), i++;
    else if (!strcmp(o, "--kv-heads"))
      a->kv_heads = number(o, v, 1, 1 << 20), i++;
    else if (!strcmp(o, "--seq"))
      a->seq = number(o, v, 1, 1 << 30), i++;
    else if (!strcmp(o, "--seq-q"))
      a->seq_q = number(o, v, 1, 1 << 30), i++;
    else if (!strcmp(o, "--d"))
      a->d = number(o, v, 1, 1 << 16), i++;
    else if (!strcmp(o, "--tile-q"))
      a->base.tile_q = (int)number(o, v, 0, 1 << 20), i++;
    else if (!strcmp(o, "--kv-dtype")) {
      if (!parse_dtypes(v, a)) return 2;
      i++;
    } else if (!strcmp(o, "--compute")) {
      if (!parse_computes(v, a)) return 2;
      i++;
    } else if (!strcmp(o, "--tile-kv"))
      a->base.tile_kv = (int)number(o, v, 0, 1 << 20), i++;
    else if (!strcmp(o, "--regtile"))
      a->base.regtile = (int)number(o, v, 0, 63), i++;
    else if (!strcmp(o, "--window"))
      a->opt.window = true, a->opt.window_left = number(o, v, 1, 1 << 30) - 1, i++;
    else if (!strcmp(o, "--window-right"))
      a->opt.window_right = number(o, v, 0, 1 << 30), i++;
    else if (!strcmp(o, "--softcap"))
      a->opt.softcap = (float)number(o, v, 1, 1 << 20), i++;
    else if (!strcmp(o, "--alibi"))
      a->opt.alibi_max_bias = (float)number(o, v, 1, 64), i++;
    else {
      fprintf(stderr, "flash_speed: unknown option %s\n", o);
      return 2;
    }
  }
  if (a->nk == 0) a->kernels[a->nk++] = "flash__avx512";
  if (a->nthreads == 0) a->threads[a->nthreads++] = 0;
  if (a->kv_heads == 0) a->kv_heads = a->heads;
  if (a->seq_q == 0) a->seq_q = a->seq;
  return -1;
}

// The variants timed alternately: each K/V type, plain and (--ab) with the options; without
// --ab every variant has the options (if any were given). pv[x] stores K/V as dts[vdt[x]].
enum { kMaxVariants = 2 * ATTN_DTYPE_COUNT * ATTN_COMPUTE_COUNT, kMaxCopies = 64 };
typedef struct speed_variants {
  attn_problem pv[kMaxVariants];
  int vdt[kMaxVariants], nv;
} speed_variants;

// The `rotate` copies of the inputs, for every K/V type (*b: what to free).
typedef struct speed_inputs {
  float *qs[kMaxCopies], *os[kMaxCopies];
  void *ks[ATTN_DTYPE_COUNT][kMaxCopies], *vs[ATTN_DTYPE_COUNT][kMaxCopies];
  void *qb[kMaxCopies], *ob[kMaxCopies], *kbs[ATTN_DTYPE_COUNT][kMaxCopies],
      *vbs[ATTN_DTYPE_COUNT][kMaxCopies];
  double kv_bytes[ATTN_DTYPE_COUNT];  // K and V as stored, per type
} speed_inputs;

// Allocates and fills the copies of in for p. False after a message (out of memory).
static bool make_inputs(const speed_args *a, const attn_problem *p, speed_inputs *in) {
  const int64_t d = a->d;
  const size_t krows = attn_k_elems(p) / (size_t)d, vrows = attn_v_elems(p) / (size_t)d;
  for (int di = 0; di < a->ndt; di++)
    in->kv_bytes[di] = (double)(krows + vrows) * (double)attn_kv_row_bytes(a->dts[di], d);
  float *kf = malloc(attn_k_elems(p) * sizeof(float)),
        *vf = malloc(attn_v_elems(p) * sizeof(float));
  if (!kf || !vf) {
    fprintf(stderr, "flash_speed: out of memory\n");
    return false;
  }
  for (int c = 0; c < a->rotate; c++) {
    in->qs[c] = alloc_at(attn_q_elems(p) * sizeof(float), a->offset, &in->qb[c]);
    in->os[c] = alloc_at(attn_o_elems(p) * sizeof(float), a->offset, &in->ob[c]);
    if (!in->qs[c] || !in->os[c]) {
      fprintf(stderr, "flash_speed: out of memory (copy %d of %d)\n", c + 1, a->rotate);
      return false;
    }
    fill(in->qs[c], attn_q_elems(p), 1), fill(kf, attn_k_elems(p), 2);
    fill(vf, attn_v_elems(p), 3);
    for (int di = 0; di < a->ndt; di++) {
      const size_t row = attn_kv_row_bytes(a->dts[di], d);
      in->ks[di][c] = alloc_at(krows * row, a->offset, &in->kbs[di][c]);
      in->vs[di][c] = alloc_at(vrows * row, a->offset, &in->vbs[di][c]);
      if (!in->ks[di][c] || !in->vs[di][c]) {
        fprintf(stderr, "flash_speed: out of memory (copy %d of %d)\n", c + 1, a->rotate);
        return false;
      }
      attn_quantize_rows(a->dts[di], kf, krows, d, in->ks[di][c]);
      attn_quantize_rows(a->dts[di], vf, vrows, d, in->vs[di][c]);
    }
    memset(in->os[c], 0, attn_o_elems(p) * sizeof(float));  // touched: no first-call faults
  }
  free(kf), free(vf);
  return true;
}

static void free_inputs(const speed_args *a, speed_inputs *in) {
  for (int c = 0; c < a->rotate; c++) {
    free(in->qb[c]), free(in->ob[c]);
    for (int di = 0; di < a->ndt; di++) free(in->kbs[di][c]), free(in->vbs[di][c]);
  }
}

// The problem line and the table's column heads.
static void print_header(const speed_args *a, const speed_variants *vs, const attn_problem *p) {
  char names[128];
  const char *opt_names =
      attn_option_names(attn_problem_options_used(&vs->pv[vs->nv - 1]), names, sizeof names);
  printf("B%lld H%lld KV%lld Sq%lld Skv%lld D%lld %s, %d reps (median)", (long long)p->batch,
         (long long)p->heads, (long long)p->kv_heads, (long long)p->seq_q, (long long)p->seq_kv,
         (long long)a->d, a->causal ? "causal" : "non-causal", a->reps);
  if (a->rotate > 1) printf(", %d rotating input copies", a->rotate);
  printf(", options %s%s", opt_names, a->ab ? " (B) vs none (A)" : "");
  if (a->offset) printf(", inputs %d bytes past 64-byte boundaries", a->offset);
  if (vs->nv > 1) printf(", variants timed alternately");
  printf("\n");
  printf("%-18s %-5s %-5s %-4s %3s %10s %10s %9s %9s %9s %9s %8s %10s %10s\n", "kernel", "kv",
         "mode", "opts", "T", "median ms", "min ms", "cpu ms", "GFLOP/s", "cpuGFLOP/s", "KV GB/s",
         "vs first", "RSS MiB", "in+out MiB");
}

// Times every variant of kr at `threads` threads (0: OpenMP's default) and prints one row
// per variant. 0, or the exit code after a message.
static int time_kernel(const attn_kernel *kr, int threads, const speed_args *a,
                       const speed_variants *vs, const speed_inputs *in, double io_mib) {
  const int nv = vs->nv, reps = a->reps, rotate = a->rotate;
  attn_exec ex = a->base;
  ex.threads = threads;
  static double t[kMaxVariants][1000], cpu[kMaxVariants][1000];
  void *ws[kMaxVariants] = {NULL};
  bool fb[kMaxVariants] = {false};
  char err[256];
  for (int x = 0; x < nv; x++) {
    const int di = vs->vdt[x];
    // The warm-up call goes through attn_kernel_call, which validates the problem and
    // every copy's inputs (an O(inputs) scan of the input domain) once; the timed calls
    // then run the kernel alone, on a workspace allocated once — as `attnbench bench`
    // times it.
    for (int c = 0; c < rotate; c++) {
      if (attn_kernel_call(kr, &vs->pv[x], &ex, in->qs[c], in->ks[di][c], in->vs[di][c], in->os[c],
                           err, sizeof err) != ATTN_OK) {
        fprintf(stderr, "flash_speed: %s: %s\n", kr->name, err);
        return 1;
      }
    }
    const size_t ws_bytes = attn_kernel_workspace(kr, &vs->pv[x], &ex);
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
      const int di = vs->vdt[x];
      const double t0 = omp_get_wtime(), c0 = cpu_seconds(CLOCK_PROCESS_CPUTIME_ID);
      attn_kernel_run(kr, &vs->pv[x], &ex, in->qs[c], in->ks[di][c], in->vs[di][c], in->os[c],
                      ws[x], &fb[x]);
      t[x][r] = omp_get_wtime() - t0;
      cpu[x][r] = cpu_seconds(CLOCK_PROCESS_CPUTIME_ID) - c0;
    }
  }
  double med0 = 0.0;
  for (int x = 0; x < nv; x++) {
    const int di = vs->vdt[x];
    const attn_problem *pv = &vs->pv[x];
    free(ws[x]);
    qsort(t[x], (size_t)reps, sizeof(double), cmp_double);
    qsort(cpu[x], (size_t)reps, sizeof(double), cmp_double);
    const double med = t[x][reps / 2];
    const int nt = threads ? threads : omp_get_max_threads();
    if (x == 0) med0 = med;
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("%-18s %-5s %-5s %-4s %3d %10.3f %10.3f %9.1f %9.1f %9.1f %9.1f %8.3f %10.1f %10.1f%s\n",
           kr->name, attn_dtype_name(a->dts[di]), kComputeNames[pv->compute],
           pv->opts && attn_problem_options_used(pv) ? "B" : "-", nt, med * 1e3, t[x][0] * 1e3,
           cpu[x][reps / 2] * 1e3, attn_flops(pv) / med / 1e9,
           attn_flops(pv) / (cpu[x][reps / 2] / nt) / 1e9, in->kv_bytes[di] / med / 1e9, med0 / med,
           (double)ru.ru_maxrss / 1024.0, io_mib + in->kv_bytes[di] / 1048576.0,
           fb[x] ? "  (portable fallback)" : "");
  }
  return 0;
}

// ── Unit peaks: 12 independent accumulators per thread, `iters` steps ─────────────────
#if defined(__x86_64__)
enum { kPeakAcc = 12 };
__attribute__((target("avx512f"))) static double peak_fma(long iters, const float *in) {
  __m512 acc[kPeakAcc];
  const __m512 a = _mm512_loadu_ps(in), b = _mm512_loadu_ps(in + 16);
  for (int i = 0; i < kPeakAcc; i++) acc[i] = _mm512_set1_ps((float)i);
  for (long it = 0; it < iters; it++)
#pragma GCC unroll 12
    for (int i = 0; i < kPeakAcc; i++) acc[i] = _mm512_fmadd_ps(a, b, acc[i]);
  float sum = 0.0f;
  for (int i = 0; i < kPeakAcc; i++) sum += _mm512_reduce_add_ps(acc[i]);
  return (double)sum;
}
__attribute__((target("avx512f,avx512bf16"))) static double peak_bf16(long iters, const float *in) {
  __m512 acc[kPeakAcc];
  const __m512bh a = _mm512_cvtne2ps_pbh(_mm512_loadu_ps(in), _mm512_loadu_ps(in + 16));
  const __m512bh b = _mm512_cvtne2ps_pbh(_mm512_loadu_ps(in + 16), _mm512_loadu_ps(in));
  for (int i = 0; i < kPeakAcc; i++) acc[i] = _mm512_set1_ps((float)i);
  for (long it = 0; it < iters; it++)
#pragma GCC unroll 12
    for (int i = 0; i < kPeakAcc; i++) acc[i] = _mm512_dpbf16_ps(acc[i], a, b);
  float sum = 0.0f;
  for (int i = 0; i < kPeakAcc; i++) sum += _mm512_reduce_add_ps(acc[i]);
  return (double)sum;
}
// GFLOP/s of `threads` threads running the FMA or bf16 loop (flops per instruction), best
// of 5 rounds: by wall time (*wall), and as the sum over threads of each one's flops per
// second of its own CPU time (returned; what the threads reach while on a core, which
// other load does not lower — the denominator for flash_speed's cpuGFLOP/s).
static double peak_rate(int threads, int bf16, double flops, double *wall) {
  static float in[32];
  for (int i = 0; i < 32; i++) in[i] = 1e-3f * (float)(i + 1);
  const long iters = 20000000 / kPeakAcc;
  const double per_thread = flops * kPeakAcc * (double)iters;
  double best = 0.0, best_cpu = 0.0, sink = 0.0;
  for (int round = 0; round < 5; round++) {
    double cpu_rate = 0.0;
    const double t0 = omp_get_wtime();
#pragma omp parallel num_threads(threads) reduction(+ : sink, cpu_rate)
    {
      const double c0 = cpu_seconds(CLOCK_THREAD_CPUTIME_ID);
      sink += bf16 ? peak_bf16(iters, in) : peak_fma(iters, in);
      cpu_rate += per_thread / (cpu_seconds(CLOCK_THREAD_CPUTIME_ID) - c0) / 1e9;
    }
    const double rate = per_thread * threads / (omp_get_wtime() - t0) / 1e9;
    best = rate > best ? rate : best;
    best_cpu = cpu_rate > best_cpu ? cpu_rate : best_cpu;
  }
  *wall = sink == 12345.0 ? 0.0 : best;  // sink read: the loops are not dead code
  return best_cpu;
}
#endif

static void print_unit_peaks(int threads) {
  const int t = threads ? threads : omp_get_max_threads();
#if defined(__x86_64__)
  const uint32_t isa = attn_cpu_features();
  if (!(isa & ATTN_ISA_AVX512F)) {
    printf("unit peaks: needs avx512f\n");
    return;
  }
  double wall;
  const double fma = peak_rate(t, 0, 32.0, &wall);
  printf("unit peaks, %d threads (wall / per CPU-second): vfmadd231ps zmm %.1f / %.1f GFLOP/s", t,
         wall, fma);
  if (isa & ATTN_ISA_AVX512BF16) {
    const double bf = peak_rate(t, 1, 64.0, &wall);
    printf(", vdpbf16ps zmm %.1f / %.1f GFLOP/s\n", wall, bf);
  } else
    printf(", vdpbf16ps: needs avx512bf16\n");
#else
  printf("unit peaks (%d threads): x86-64 only\n", t);
#endif
}

int main(int argc, char **argv) {
  static speed_args a;
  int rc = parse_args(argc, argv, &a);
  if (rc >= 0) return rc;

  if (a.bw) {
    attn_bandwidth b;
    if (attn_bandwidth_read(0, 0, 0, &b) == 0)
      printf("read bandwidth: %.1f GB/s best, %.1f median (%d threads, %zu MiB, %s)\n", b.best_gbs,
             b.median_gbs, b.threads, b.bytes >> 20, b.ok ? "verified" : "SUM MISMATCH");
  }

  if (a.unit_peaks)
    for (int ti = 0; ti < a.nthreads; ti++) print_unit_peaks(a.threads[ti]);

  attn_problem p =
      attn_problem_make(a.batch, a.heads, a.kv_heads, a.seq_q, a.seq, a.d, a.d, a.causal);
  float *sinks = malloc((size_t)a.heads * sizeof(float));
  float *lse = malloc((size_t)(a.batch * a.heads * a.seq_q) * sizeof(float));
  if (!sinks || !lse) {
    fprintf(stderr, "flash_speed: out of memory\n");
    return 1;
  }
  for (int64_t h = 0; h < a.heads; h++) sinks[h] = 0.5f;
  if (a.want_sinks) a.opt.sinks = sinks;
  if (a.want_lse) a.opt.lse = lse;
  static speed_variants vs;
  // int8 with q8_0 in the type list: the q8_0 types only (the header; as bench's config does).
  bool any_q8 = false;
  for (int di = 0; di < a.ndt; di++) any_q8 |= a.dts[di] == ATTN_DTYPE_Q8_0;
  for (int di = 0; di < a.ndt; di++)
    for (int ci = 0; ci < a.ncm; ci++)
      for (int b = 0; b < (a.ab ? 2 : 1); b++) {
        if (any_q8 && a.cms[ci] == ATTN_COMPUTE_INT8 && a.dts[di] != ATTN_DTYPE_Q8_0) continue;
        vs.pv[vs.nv] = p;
        vs.pv[vs.nv].kv_dtype = a.dts[di];
        vs.pv[vs.nv].compute = a.cms[ci];
        vs.pv[vs.nv].opts = !a.ab || b ? &a.opt : NULL;
        vs.vdt[vs.nv++] = di;
      }
  char err[256];
  for (int x = 0; x < vs.nv; x++) {
    if (!attn_problem_validate(&vs.pv[x], err, sizeof err)) {
      fprintf(stderr, "flash_speed: %s\n", err);
      return 2;
    }
  }
  static speed_inputs in;
  if (!make_inputs(&a, &p, &in)) return 1;
  const double io_mib = (double)(attn_q_elems(&p) + attn_o_elems(&p)) * 4.0 / 1048576.0;
  print_header(&a, &vs, &p);
  for (int ki = 0; ki < a.nk; ki++) {
    const attn_kernel *kr = attn_kernel_find(a.kernels[ki]);
    if (!kr || !attn_kernel_available(kr, NULL, 0)) {
      fprintf(stderr, "flash_speed: kernel %s not found or not available\n", a.kernels[ki]);
      return 2;
    }
    for (int ti = 0; ti < a.nthreads; ti++)
      if ((rc = time_kernel(kr, a.threads[ti], &a, &vs, &in, io_mib)) != 0) return rc;
  }
  free_inputs(&a, &in);
  free(sinks), free(lse);
  return 0;
}
