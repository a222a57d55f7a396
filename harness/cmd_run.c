// SPDX-License-Identifier: MIT
// `attnbench run` — one kernel on user-supplied tensors:
//     Q.npy [batch][heads][seq_q][head_dim_qk]      float32, C order
//     K.npy [batch][kv_heads][seq_kv][head_dim_qk]
//     V.npy [batch][kv_heads][seq_kv][head_dim_v]
//  →  O.npy [batch][heads][seq_q][head_dim_v]
// The problem is derived from the shapes, which must agree (messages name the arrays and
// dimensions). O is written atomically: on any error no output file is created.
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "attn.h"
#include "check/check.h"
#include "cli_args.h"
#include "commands.h"
#include "npy.h"
#include "placement.h"  // hwloc tiles + thread binding (flash helper)

// Prints the kernel names (available ones first) to stderr, for "unknown kernel" errors.
static void print_kernel_names(void) {
  fprintf(stderr, "available kernels:");
  for (size_t i = 0; i < attn_kernel_count(); i++)
    if (attn_kernel_available(attn_kernel_at(i), NULL, 0)) fprintf(stderr, " %s", attn_kernel_at(i)->name);
  fprintf(stderr, "\n");
  bool any = false;
  for (size_t i = 0; i < attn_kernel_count(); i++) {
    char why[96];
    if (attn_kernel_available(attn_kernel_at(i), why, sizeof why)) continue;
    fprintf(stderr, "%s %s (%s)", any ? "," : "unavailable on this CPU:", attn_kernel_at(i)->name, why);
    any = true;
  }
  if (any) fprintf(stderr, "\n");
}

typedef struct named_array {
  const char *what;    // "Q"
  const char *layout;  // "[batch][heads][seq_q][head_dim_qk]"
  const char *path;
  npy_array a;
} named_array;

static bool load(named_array *t) {
  char err[512], sb[400];
  if (!npy_read_f32(t->path, &t->a, err, sizeof err)) {
    fprintf(stderr, "attnbench run: %s: %s\n", t->what, err);
    return false;
  }
  if (t->a.ndim != 4) {
    fprintf(stderr, "attnbench run: %s (%s) must be 4-D %s, got %d-D shape %s\n", t->what, t->path,
            t->layout, t->a.ndim, npy_shape_string(t->a.ndim, t->a.shape, sb, sizeof sb));
    return false;
  }
  for (int d = 0; d < 4; d++) {
    if (t->a.shape[d] < 1) {
      fprintf(stderr, "attnbench run: %s (%s) has an empty dimension: shape %s %s\n", t->what, t->path,
              npy_shape_string(4, t->a.shape, sb, sizeof sb), t->layout);
      return false;
    }
  }
  // NaN/Inf inputs would silently give NaN outputs; refuse them instead.
  for (size_t i = 0; i < t->a.count; i++) {
    if (!isfinite(t->a.data[i])) {
      fprintf(stderr, "attnbench run: %s (%s) contains a non-finite value (%g) at flat index %zu\n", t->what,
              t->path, (double)t->a.data[i], i);
      return false;
    }
  }
  return true;
}

// Derives the problem from the three shapes; false (message printed) if they disagree.
static bool derive_problem(const named_array *q, const named_array *k, const named_array *v, bool causal,
                           attn_problem *p) {
  const int64_t *Q = q->a.shape, *K = k->a.shape, *V = v->a.shape;
  char sq[128], sk[128], sv[128];
  npy_shape_string(4, Q, sq, sizeof sq);
  npy_shape_string(4, K, sk, sizeof sk);
  npy_shape_string(4, V, sv, sizeof sv);
#define MISMATCH(...)                                                                  \
  do {                                                                                 \
    fprintf(stderr, "attnbench run: shape mismatch: " __VA_ARGS__);                    \
    fprintf(stderr, "\n  Q %s [batch][heads][seq_q][head_dim_qk]\n  K %s [batch][kv_heads][seq_kv][head_dim_qk]\n" \
                    "  V %s [batch][kv_heads][seq_kv][head_dim_v]\n", sq, sk, sv);     \
    return false;                                                                      \
  } while (0)
  if (K[0] != Q[0]) MISMATCH("K batch (dim 0) is %lld but Q batch is %lld", (long long)K[0], (long long)Q[0]);
  if (V[0] != Q[0]) MISMATCH("V batch (dim 0) is %lld but Q batch is %lld", (long long)V[0], (long long)Q[0]);
  if (V[1] != K[1])
    MISMATCH("V kv_heads (dim 1) is %lld but K kv_heads is %lld", (long long)V[1], (long long)K[1]);
  if (V[2] != K[2]) MISMATCH("V seq_kv (dim 2) is %lld but K seq_kv is %lld", (long long)V[2], (long long)K[2]);
  if (K[3] != Q[3])
    MISMATCH("K head_dim_qk (dim 3) is %lld but Q head_dim_qk is %lld", (long long)K[3], (long long)Q[3]);
  if (Q[1] % K[1] != 0)
    MISMATCH("Q heads (dim 1) = %lld is not a multiple of K/V kv_heads (dim 1) = %lld", (long long)Q[1],
             (long long)K[1]);
#undef MISMATCH
  *p = attn_problem_make(Q[0], Q[1], K[1], Q[2], K[2], Q[3], V[3], causal);
  char err[256];
  if (!attn_problem_validate(p, err, sizeof err)) {
    fprintf(stderr, "attnbench run: invalid problem: %s\n", err);
    return false;
  }
  return true;
}

static double now_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int cmd_run(int argc, char **argv) {
  const char *kernel_name = NULL, *q_path = NULL, *k_path = NULL, *v_path = NULL, *out_path = NULL;
  bool causal = false, scale_given = false, quiet = false, verify = false;
  double scale = 0.0;
  attn_exec exec = {0};
  const cli_option opts[] = {
      {.name = "kernel", .kind = CLI_STRING, .dest = &kernel_name, .metavar = "NAME", .required = true,
       .help = "kernel to run (see `attnbench list`)"},
      {.name = "q", .kind = CLI_STRING, .dest = &q_path, .metavar = "Q.npy", .required = true,
       .help = "queries, float32 [batch][heads][seq_q][head_dim_qk]"},
      {.name = "k", .kind = CLI_STRING, .dest = &k_path, .metavar = "K.npy", .required = true,
       .help = "keys, float32 [batch][kv_heads][seq_kv][head_dim_qk]"},
      {.name = "v", .kind = CLI_STRING, .dest = &v_path, .metavar = "V.npy", .required = true,
       .help = "values, float32 [batch][kv_heads][seq_kv][head_dim_v]"},
      {.name = "out", .kind = CLI_STRING, .dest = &out_path, .metavar = "O.npy", .required = true,
       .help = "output, float32 [batch][heads][seq_q][head_dim_v] (written atomically)"},
      {.name = "causal", .kind = CLI_FLAG, .dest = &causal,
       .help = "bottom-right aligned causal mask: row i sees key j iff j <= i + seq_kv - seq_q"},
      {.name = "scale", .kind = CLI_DOUBLE, .dest = &scale, .given = &scale_given, .metavar = "S",
       .help = "score scale (default 1/sqrt(head_dim_qk))"},
      {.name = "threads", .kind = CLI_INT, .dest = &exec.threads, .metavar = "N", .min = 0, .max = 4096,
       .help = "threads for parallel kernels (0 = OpenMP default)"},
      {.name = "tile-q", .kind = CLI_INT, .dest = &exec.tile_q, .metavar = "N", .min = 0, .max = 1 << 20,
       .help = "query rows per tile for tiled kernels (0 = kernel default)"},
      {.name = "tile-kv", .kind = CLI_INT, .dest = &exec.tile_kv, .metavar = "N", .min = 0, .max = 1 << 20,
       .help = "key rows per tile for tiled kernels (0 = kernel default)"},
      {.name = "check", .kind = CLI_FLAG, .dest = &verify,
       .help = "also compare O with the float64 reference (check tolerance); fail if outside"},
      {.name = "quiet", .kind = CLI_FLAG, .dest = &quiet, .help = "print nothing on success"},
  };
  const cli_spec spec = {
      .command = "run",
      .summary = "Run one kernel on Q, K, V from .npy files (float32, C order, 4-D) and write O.\n"
                 "The problem (batch, heads, kv_heads, seq_q, seq_kv, head_dim_qk, head_dim_v)\n"
                 "is derived from the shapes. On any error nothing is written.",
      .epilog = "example:\n"
                "  attnbench run --kernel blocked --q q.npy --k k.npy --v v.npy --out o.npy --causal\n"
                "\nexit codes: 0 ok, 1 bad input file / kernel failure, 2 bad command line or unknown kernel",
      .options = opts,
      .n_options = sizeof opts / sizeof opts[0],
  };
  const cli_status st = cli_parse(&spec, argc, argv);
  if (st != CLI_OK) return cli_exit_code(st);
  if (attn_placement_env_bad("run", &exec)) return ATTNBENCH_EXIT_USAGE;  // ATTNBENCH_TILE_*

  const attn_kernel *kernel = attn_kernel_find(kernel_name);
  if (!kernel) {
    fprintf(stderr, "attnbench run: unknown kernel '%s'\n", kernel_name);
    print_kernel_names();
    return ATTNBENCH_EXIT_USAGE;
  }
  char why[96];
  if (!attn_kernel_available(kernel, why, sizeof why)) {
    fprintf(stderr, "attnbench run: kernel '%s' is unavailable on this CPU (%s)\n", kernel->name, why);
    print_kernel_names();
    return ATTNBENCH_EXIT_FAILURE;
  }
  if (scale_given && !isfinite((float)scale)) {
    fprintf(stderr, "attnbench run: --scale %g does not fit in float32\n", scale);
    return ATTNBENCH_EXIT_USAGE;
  }

  int rc = ATTNBENCH_EXIT_FAILURE;
  named_array q = {"Q", "[batch][heads][seq_q][head_dim_qk]", q_path, {0}};
  named_array k = {"K", "[batch][kv_heads][seq_kv][head_dim_qk]", k_path, {0}};
  named_array v = {"V", "[batch][kv_heads][seq_kv][head_dim_v]", v_path, {0}};
  float *o = NULL;
  attn_problem p;
  if (!load(&q) || !load(&k) || !load(&v) || !derive_problem(&q, &k, &v, causal, &p)) goto done;
  if (scale_given) p.scale = (float)scale;

  const size_t o_elems = attn_o_elems(&p);
  o = malloc(o_elems * sizeof *o);
  if (!o) {
    fprintf(stderr, "attnbench run: out of memory for O (%zu floats)\n", o_elems);
    goto done;
  }
  char err[512];
  // Placement: tiles from hwloc's cache sizes unless --tile-q/--tile-kv or ATTNBENCH_TILE_*
  // set them; OpenMP threads bound to physical cores (report printed below).
  if (attn_placement_tiles(&p, &exec, err, sizeof err) != 0) {
    fprintf(stderr, "attnbench run: %s\n", err);
    goto done;
  }
  char binding[512];
  attn_placement_bind(exec.threads, binding, sizeof binding);
  const double t0 = now_seconds();
  const int krc = attn_kernel_call(kernel, &p, &exec, q.a.data, k.a.data, v.a.data, o, err, sizeof err);
  const double t1 = now_seconds();
  if (krc != ATTN_OK) {
    fprintf(stderr, "attnbench run: %s\n", err);
    goto done;
  }
  // --check: the same per-element tolerance as `attnbench check`; a failure writes nothing.
  attn_check_result cr = {0};
  if (verify) {
    attn_check_prepared *pc = attn_check_prepare_inputs(&p, q.a.data, k.a.data, v.a.data, err, sizeof err);
    if (!pc) {
      fprintf(stderr, "attnbench run: --check: cannot compute the reference: %s\n", err);
      goto done;
    }
    attn_check_output(pc, o, &cr);
    attn_check_prepared_free(pc);
    if (!cr.pass) {
      fprintf(stderr,
              "attnbench run: --check FAILED for %s: max abs err %.3g, max rel err %.3g, err/tol %.3g "
              "(worst at flat index %zu): %s; O not written\n",
              kernel->name, cr.max_abs_err, cr.max_rel_err, cr.worst_ratio, cr.worst_index,
              cr.message[0] ? cr.message : "outside tolerance");
      goto done;
    }
  }
  const int64_t o_shape[4] = {p.batch, p.heads, p.seq_q, p.head_dim_v};
  if (!npy_write_f32(out_path, o, 4, o_shape, err, sizeof err)) {
    fprintf(stderr, "attnbench run: cannot write O: %s\n", err);
    goto done;
  }
  if (!quiet) {
    char sb[128];
    printf("%s: B=%lld H=%lld KVH=%lld Sq=%lld Skv=%lld Dqk=%lld Dv=%lld%s scale=%g -> %s %s "
           "(one call, %.3f ms wall; not a benchmark)\n",
           kernel->name, (long long)p.batch, (long long)p.heads, (long long)p.kv_heads, (long long)p.seq_q,
           (long long)p.seq_kv, (long long)p.head_dim_qk, (long long)p.head_dim_v, p.causal ? " causal" : "",
           (double)p.scale, out_path, npy_shape_string(4, o_shape, sb, sizeof sb), (t1 - t0) * 1e3);
  }
  if (!quiet && (kernel->caps & ATTN_CAP_THREADS))
    printf("threads: %s; tiles: tile_q %d, tile_kv %d\n", binding, exec.tile_q, exec.tile_kv);
  if (verify && !quiet)
    printf("check: pass (max abs err %.3g, max rel err %.3g, err/tol %.3g vs the float64 reference)\n",
           cr.max_abs_err, cr.max_rel_err, cr.worst_ratio);
  rc = ATTNBENCH_EXIT_OK;
done:
  free(o);
  npy_free(&q.a);
  npy_free(&k.a);
  npy_free(&v.a);
  return rc;
}
