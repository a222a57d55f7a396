// SPDX-License-Identifier: MIT
// `attnbench run` — one kernel on user-supplied tensors:
//     Q.npy [batch][heads][seq_q][head_dim_qk]      float32, C order
//     K.npy [batch][kv_heads][seq_kv][head_dim_qk]
//     V.npy [batch][kv_heads][seq_kv][head_dim_v]      (K and V float32, both '<f2' or
//  →  O.npy [batch][heads][seq_q][head_dim_v]       both bfloat16 '<V2'; Q any of the three)
// --kv-dtype f32|f16|bf16|q8_0 stores K and V as that type first (kernels/core/convert.h).
// --compute bf16|f16|int8 runs in that compute mode (attn.h; docs/precision.md); --dtype
// requires the files' type, --out-dtype writes O (and the LSE) as f32 (default), f16 or bf16.
// The problem is derived from the shapes, which must agree (messages name the arrays and
// dimensions). O is written atomically (fileio.h): on any error — including a non-finite
// output from finite inputs, unless --allow-nonfinite — no output file is created.
// Steps: options → kernel → output target → memory (file sizes) → read → problem →
// memory (full estimate) → compute → finite? → --check → write → report.
#define _POSIX_C_SOURCE 200809L
#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "attn.h"
#include "bench/serving.h"  // --kv-lens: the serving batch (docs/serving.md)
#include "check/check.h"
#include "cli/commands.h"
#include "cli/option_args.h"
#include "cli/run_output.h"  // O and the LSE as --out-dtype, written as one set
#include "common/cli_args.h"
#include "common/util.h"
#include "core/convert.h"
#include "io/fileio.h"
#include "io/npy.h"
#include "io/qkv_inputs.h"
#include "machine/placement.h"  // thread binding
#include "plugins/isolate.h"    // the in-process guard around a plug-in kernel
#include "resolve/resolve.h"    // the execution settings

typedef struct run_args {
  const char *kernel_name, *q_path, *k_path, *v_path, *out_path;
  bool causal, scale_given, quiet, verify, allow_nonfinite;
  double scale;
  exec_args x;                // execution settings (option_args.h; resolved by resolve.h)
  attn_settings settings;     // ... as resolved for the problem
  option_args opt;            // attention options (attn.h, "Attention variants"; option_args.h)
  const char *kv_dtype_name;  // --kv-dtype (NULL: as read)
  attn_dtype kv_dtype;
  const char *compute_name;  // --compute (NULL: f32)
  attn_compute compute;
  const char *dtype_name, *out_dtype_name;  // --dtype (NULL: any), --out-dtype (NULL: f32)
  attn_dtype dtype, out_dtype;
  double case_timeout;  // --case-timeout: a plug-in kernel's call limit (isolate.h's watch)
  bool case_timeout_given;
  // A serving batch (docs/serving.md): --kv-lens makes Q [total_q][heads][Dqk] and K, V
  // [total_kv][kv_heads][D] packed by tokens; --page-size > 0 pages K and V.
  const char *q_lens, *kv_lens, *page_order_name;
  int64_t page_size;
} run_args;

static int settle_args(run_args *a);

// Parses the command line into *a. Returns -1 to go on, else the exit code.
static int parse_args(int argc, char **argv, run_args *a) {
  const cli_option opts[] = {
      {.name = "kernel",
       .kind = CLI_STRING,
       .dest = &a->kernel_name,
       .metavar = "NAME",
       .required = true,
       .help = "kernel to run (see `attnbench list`)"},
      ATTN_CASE_TIMEOUT_OPTION(&a->case_timeout, &a->case_timeout_given),
      {.name = "q",
       .kind = CLI_STRING,
       .dest = &a->q_path,
       .metavar = "Q.npy",
       .required = true,
       .help =
           "queries [batch][heads][seq_q][head_dim_qk]: float32, float16 or bfloat16 (--dtype)"},
      {.name = "k",
       .kind = CLI_STRING,
       .dest = &a->k_path,
       .metavar = "K.npy",
       .required = true,
       .help = "keys [batch][kv_heads][seq_kv][head_dim_qk], the type of V"},
      {.name = "v",
       .kind = CLI_STRING,
       .dest = &a->v_path,
       .metavar = "V.npy",
       .required = true,
       .help = "values [batch][kv_heads][seq_kv][head_dim_v], the type of K"},
      {.name = "out",
       .kind = CLI_STRING,
       .dest = &a->out_path,
       .metavar = "O.npy",
       .required = true,
       .help = "output, float32 [batch][heads][seq_q][head_dim_v] (written atomically)"},
      {.name = "causal",
       .kind = CLI_FLAG,
       .dest = &a->causal,
       .help = "bottom-right aligned causal mask: row i sees key j iff j <= i + seq_kv - seq_q"},
      {.name = "scale",
       .kind = CLI_DOUBLE,
       .dest = &a->scale,
       .given = &a->scale_given,
       .metavar = "S",
       .help = "score scale (default 1/sqrt(head_dim_qk))"},
      ATTN_KV_DTYPE_OPTION(&a->kv_dtype_name,
                           "store K and V as this type before the run (round to nearest even; "
                           "q8_0: blocks of 32, scale max|x|/127)"),
      ATTN_COMPUTE_OPTION(&a->compute_name, CLI_STRING,
                          "compute mode (docs/precision.md): bf16/f16 round Q, K and V to that "
                          "type (nearest, ties to even), int8 quantizes Q per 32-block against "
                          "q8_0 K (--kv-dtype q8_0); O stays float32"),
      {.name = "dtype",
       .kind = CLI_STRING,
       .dest = &a->dtype_name,
       .metavar = "f32|bf16|f16",
       .help = "the element type the Q, K and V files must hold: float32 '<f4', bfloat16 "
               "'<V2' (ml_dtypes) or float16 '<f2' (default: any of them, K and V alike; Q "
               "is widened to float32 exactly)"},
      {.name = "out-dtype",
       .kind = CLI_STRING,
       .dest = &a->out_dtype_name,
       .metavar = "f32|bf16|f16",
       .help = "write O (and LSE) as this type, rounded to nearest even (default f32)"},
      {.name = "check",
       .kind = CLI_FLAG,
       .dest = &a->verify,
       .help = "also compare O with the float64 reference (check tolerance); fail if outside"},
      {.name = "allow-nonfinite",
       .kind = CLI_FLAG,
       .dest = &a->allow_nonfinite,
       .help = "write O even if it holds NaN/Inf (default: refuse, exit 1)"},
      {.name = "quiet", .kind = CLI_FLAG, .dest = &a->quiet, .help = "print nothing on success"},
      {.name = "kv-lens",
       .kind = CLI_STRING,
       .dest = &a->kv_lens,
       .metavar = "LENS",
       .help = "a serving batch: the sequences' context lengths ('4096 4096 300', "
               "'longtail:32:4096:1'; docs/serving.md); Q, K, V, O are then packed by tokens "
               "([total][heads][dim])"},
      {.name = "q-lens",
       .kind = CLI_STRING,
       .dest = &a->q_lens,
       .metavar = "LENS",
       .help = "with --kv-lens: new tokens per sequence ('decode' (default), 'prefill:N:C', "
               "'512 1 1')"},
      {.name = "page-size",
       .kind = CLI_INT64,
       .dest = &a->page_size,
       .min = 0,
       .max = ATTN_MAX_PAGE_SIZE,
       .metavar = "N",
       .help = "with --kv-lens: store K and V in pages of N tokens (0 = ragged, the default)"},
      {.name = "page-order",
       .kind = CLI_STRING,
       .dest = &a->page_order_name,
       .metavar = "sequential|shuffled",
       .help = "with --page-size: the pages' order in the pool (default sequential)"},
      ATTN_EXEC_ARGS_CLI(&a->x),
      ATTN_OPTION_ARGS_CLI(&a->opt,
                           "also write the log-sum-exp of each row, float32 [batch][heads][seq_q]"),
  };
  const cli_spec spec = {
      .command = "run",
      .summary =
          "Run one kernel on Q, K, V from .npy files (float32, float16 or bfloat16; C order,\n"
          "4-D) and write O.\n"
          "The problem (batch, heads, kv_heads, seq_q, seq_kv, head_dim_qk, head_dim_v)\n"
          "is derived from the shapes. On any error nothing is written.",
      .epilog =
          "example:\n"
          "  attnbench run --kernel blocked --q q.npy --k k.npy --v v.npy --out o.npy "
          "--causal\n"
          "\nexit codes: 0 ok, 1 bad input file / kernel failure / refused (memory, "
          "non-finite O), 2 bad command line or unknown kernel",
      CLI_OPTIONS(opts),
  };
  const cli_status st = cli_parse(&spec, argc, argv);
  if (st != CLI_OK) return cli_exit_code(st);
  return settle_args(a);
}

// The checks and conversions of what parse_args read that cli_parse cannot make alone.
// Returns -1 to go on, else the exit code.
static int settle_args(run_args *a) {
  if (!attn_case_timeout_settle("run", &a->case_timeout, a->case_timeout_given))
    return ATTNBENCH_EXIT_USAGE;
  if (a->scale_given && !isfinite((float)a->scale)) {
    fprintf(stderr, "attnbench run: --scale %g does not fit in float32\n", a->scale);
    return ATTNBENCH_EXIT_USAGE;
  }
  const int rc = option_args_validate("run", &a->opt);
  if (rc != -1) return rc;
  if (!a->kv_lens && (a->q_lens || a->page_size || a->page_order_name)) {
    fprintf(stderr, "attnbench run: --q-lens, --page-size and --page-order need --kv-lens\n");
    return ATTNBENCH_EXIT_USAGE;
  }
  attn_page_order order;
  if (a->page_order_name && !attn_page_order_parse(a->page_order_name, &order)) {
    fprintf(stderr, "attnbench run: --page-order '%s': want sequential or shuffled\n",
            a->page_order_name);
    return ATTNBENCH_EXIT_USAGE;
  }
  if (a->page_order_name && a->page_size == 0) {
    fprintf(stderr,
            "attnbench run: --page-order orders the pages of a paged batch; give --page-size N "
            "(without it the batch is ragged)\n");
    return ATTNBENCH_EXIT_USAGE;
  }
  if (a->kv_lens && a->opt.mask_path) {
    fprintf(stderr, "attnbench run: --mask does not apply with --kv-lens (docs/serving.md)\n");
    return ATTNBENCH_EXIT_USAGE;
  }
  if (a->kv_dtype_name && !attn_kv_dtype_arg("run", a->kv_dtype_name, &a->kv_dtype))
    return ATTNBENCH_EXIT_USAGE;
  if (a->compute_name && !attn_compute_arg("run", a->compute_name, &a->compute))
    return ATTNBENCH_EXIT_USAGE;
  const char *const names[2] = {a->dtype_name, a->out_dtype_name};
  attn_dtype *const dst[2] = {&a->dtype, &a->out_dtype};
  for (int i = 0; i < 2; i++) {
    if (names[i] && (!attn_dtype_parse(names[i], dst[i]) || *dst[i] == ATTN_DTYPE_Q8_0)) {
      fprintf(stderr, "attnbench run: --%s '%s': want f32, bf16 or f16\n",
              i ? "out-dtype" : "dtype", names[i]);
      return ATTNBENCH_EXIT_USAGE;
    }
  }
  if (a->kv_lens && a->dtype_name && a->dtype != ATTN_DTYPE_F32) {
    fprintf(stderr, "attnbench run: --dtype %s: --kv-lens reads float32 packed files\n",
            a->dtype_name);
    return ATTNBENCH_EXIT_USAGE;
  }
  return exec_args_setup("run", &a->x);  // --bind, ATTNBENCH_*, the tuning file
}

// K and V as the kernel gets them (stored as p->kv_dtype), and the float32 values they
// were stored from when --kv-dtype converted them (for --check's storage error).
typedef struct kv_tensors {
  const void *k, *v;       // the stored K and V
  const float *k32, *v32;  // the float32 source of a conversion; NULL otherwise
  void *owned[4];          // buffers made here (freed by kv_free)
} kv_tensors;

static void kv_free(kv_tensors *t) {
  for (int i = 0; i < 4; i++) free(t->owned[i]);
  memset(t, 0, sizeof *t);
}

// Applies --kv-dtype to K and V as read (float32, or float16 from '<f2'): sets p->kv_dtype
// and fills *t. False (message printed) if the problem refuses the type (q8_0 head dims)
// or a value overflows it.
static bool store_kv(const run_args *a, attn_problem *p, const npy_array *k, const npy_array *v,
                     kv_tensors *t) {
  memset(t, 0, sizeof *t);
  const attn_dtype from = p->kv_dtype;  // F32, or F16 from '<f2' files
  t->k = k->half ? (const void *)k->half : (const void *)k->data;
  t->v = v->half ? (const void *)v->half : (const void *)v->data;
  if (!a->kv_dtype_name || a->kv_dtype == from) return true;
  const size_t rows = (size_t)p->batch * (size_t)p->kv_heads * (size_t)p->seq_kv;
  if (from == ATTN_DTYPE_F32) {
    t->k32 = k->data, t->v32 = v->data;
  } else {  // float16 files: their values, exactly, as float32
    float *k32 = malloc(k->count * sizeof(float)), *v32 = malloc(v->count * sizeof(float));
    t->owned[0] = k32, t->owned[1] = v32;
    if (!k32 || !v32) {
      fprintf(stderr, "attnbench run: --kv-dtype: out of memory converting K and V\n");
      return false;
    }
    attn_dequantize_rows(from, k->half, rows, p->head_dim_qk, k32);
    attn_dequantize_rows(from, v->half, rows, p->head_dim_v, v32);
    t->k32 = k32, t->v32 = v32;
  }
  p->kv_dtype = a->kv_dtype;
  char err[256];
  if (!attn_problem_check_field(p, ATTN_FIELD_KV_DTYPE, err, sizeof err)) {
    fprintf(stderr, "attnbench run: --kv-dtype %s: %s\n", a->kv_dtype_name, err);
    return false;
  }
  if (p->kv_dtype == ATTN_DTYPE_F32) {
    t->k = t->k32, t->v = t->v32;
    return true;
  }
  void *ks = malloc(attn_k_bytes(p)), *vs = malloc(attn_v_bytes(p));
  t->owned[2] = ks, t->owned[3] = vs;
  if (!ks || !vs) {
    fprintf(stderr, "attnbench run: --kv-dtype: out of memory storing K and V\n");
    return false;
  }
  attn_quantize_rows(p->kv_dtype, t->k32, rows, p->head_dim_qk, ks);
  attn_quantize_rows(p->kv_dtype, t->v32, rows, p->head_dim_v, vs);
  t->k = ks, t->v = vs;
  const struct {
    const char *what;
    const void *x;
    const float *src;
    int64_t dim;
    size_t n;
  } kv[2] = {{"K", ks, t->k32, p->head_dim_qk, attn_k_elems(p)},
             {"V", vs, t->v32, p->head_dim_v, attn_v_elems(p)}};
  for (int i = 0; i < 2; i++)
    if (!run_kv_stored_whole(a->kv_dtype_name, kv[i].what, p->kv_dtype, kv[i].x, kv[i].dim,
                             kv[i].src, kv[i].n))
      return false;
  return true;
}

// --dtype: every file holds that type. False (message printed) otherwise.
static bool files_have_dtype(const run_args *a, const named_array *const t[3]) {
  if (!a->dtype_name) return true;
  for (int i = 0; i < 3; i++) {
    const attn_dtype d = qkv_file_dtype(t[i]);
    if (d == a->dtype) continue;
    fprintf(stderr, "attnbench run: --dtype %s: %s (%s) holds %s\n", a->dtype_name, t[i]->what,
            t[i]->path, attn_dtype_name(d));
    return false;
  }
  return true;
}

// The kernel by name, available on this CPU. Returns -1 to go on, else the exit code.
static int find_kernel(const char *name, const attn_kernel **out) {
  const attn_kernel *kernel = attn_kernel_find(name);
  if (!kernel) {
    attn_report_unknown_kernel("run", name);
    return ATTNBENCH_EXIT_USAGE;
  }
  char why[96];
  if (!attn_kernel_available(kernel, why, sizeof why)) {
    fprintf(stderr, "attnbench run: kernel '%s' is unavailable on this CPU (%s); ", kernel->name,
            why);
    attn_print_kernel_names(stderr);
    fputc('\n', stderr);
    return ATTNBENCH_EXIT_FAILURE;
  }
  *out = kernel;
  return -1;
}

// Before any work: --out (and --lse) are files we may replace, none of the files the
// command reads (Q, K, V, the options' arrays, the tuning file).
static bool prepare_outputs(const run_args *a, attn_output *out, attn_output *lse_out) {
  attn_input_file inputs[8] = {
      {"Q input (--q)", a->q_path}, {"K input (--k)", a->k_path}, {"V input (--v)", a->v_path}};
  const size_t n = option_args_inputs(&a->opt, &a->x, inputs, 3, 8);
  return run_prepare_outputs(a->out_path, a->opt.lse_path, inputs, n, out, lse_out);
}

// Before reading: the input files alone (and, with --check, the reference's copies of
// them) must fit; the full estimate follows once the shapes are known.
static bool files_fit(const run_args *a, uint64_t budget) {
  const char *paths[3] = {a->q_path, a->k_path, a->v_path};
  uint64_t need = 0;
  for (int i = 0; i < 3; i++) {
    struct stat st;
    if (stat(paths[i], &st) == 0 && S_ISREG(st.st_mode))
      need = attn_bytes_add(need, (uint64_t)st.st_size);
  }
  if (a->verify) need = attn_bytes_mul(need, 2);
  char msg[160];
  if (!attn_memory_refused(need, budget, msg, sizeof msg)) return true;
  fprintf(stderr, "attnbench run: refused: reading Q, K and V%s %s; nothing was read\n",
          a->verify ? " (and the --check reference's copies)" : "", msg);
  return false;
}

// Once the problem is known, before O, the workspace and the reference are allocated.
static bool problem_fits(const attn_kernel *k, const attn_problem *p, const run_args *a,
                         uint64_t budget) {
  // A plug-in's workspace() is its code too: guarded and watched as its call (compute).
  const bool guard = attn_kernel_guard_enter("run", k, NULL, a->case_timeout);
  attn_kernel_guard_call_begin();
  const uint64_t need = attn_run_bytes(k, p, &a->settings.exec, a->verify);
  attn_kernel_guard_call_end();
  attn_kernel_guard_leave(guard);
  char msg[160];
  if (!attn_memory_refused(need, budget, msg, sizeof msg)) return true;
  fprintf(stderr,
          "attnbench run: refused: this run (Q, K, V, O, %s's workspace%s) %s; nothing was "
          "computed\n",
          k->name, a->verify ? ", the --check reference" : "", msg);
  return false;
}

// The settings of kernel on p (resolve.h: command line > environment > tuning file >
// machine rule > kernel default), printed with --explain. Returns -1 to go on, else the
// exit code (attn_resolve_exit_code).
static int settle(const attn_kernel *kernel, const attn_problem *p, run_args *a) {
  char err[512];
  attn_setting_layer cli;
  exec_args_layer(&a->x, &cli);
  attn_setting_fault fault;
  if (attn_resolve(kernel, p, &cli, NULL, 0, &a->settings, &fault, err, sizeof err) != 0) {
    fprintf(stderr, "attnbench run: %s\n", err);
    return attn_resolve_exit_code(&fault);
  }
  if (a->x.explain) attn_resolve_print(stdout, kernel, p, &a->settings);
  return -1;
}

// Binding, the kernel call. On success *seconds is the call's wall time.
static bool compute(const attn_kernel *kernel, const attn_problem *p, const attn_exec *exec,
                    const float *q, const void *k, const void *v, float *o, double timeout,
                    double *seconds, char *binding, size_t binding_len) {
  char err[512];
  // OpenMP threads placed by the resolved mode (report printed by report()).
  attn_placement_bind(exec->threads, binding, binding_len);
  // A plug-in that ends the process (exit(), a crash) or hangs past --case-timeout: its
  // name, exit 1, no output (isolate.h, the in-process guard and its watch).
  const bool guard = attn_kernel_guard_enter("run", kernel, NULL, timeout);
  const double t0 = attn_now_seconds();
  const int krc = attn_kernel_call_watched(kernel, p, exec, q, k, v, o, err, sizeof err);
  *seconds = attn_now_seconds() - t0;
  attn_kernel_guard_leave(guard);
  if (krc != ATTN_OK) {
    fprintf(stderr, "attnbench run: %s\n", err);
    return false;
  }
  return true;
}

// --check: the same per-element tolerance as `attnbench check`; a failure writes nothing.
// With K/V converted by --kv-dtype the reference also runs on the float32 K/V: the storage
// error (*storage, *storage_ratio; *has_storage) is what the type costs (check.h).
static bool verify_output(const attn_kernel *kernel, const attn_problem *p, const float *q,
                          const kv_tensors *kv, const float *o, const float *lse,
                          attn_check_result *cr, double *storage, double *storage_ratio,
                          bool *has_storage) {
  char err[512];
  attn_check_prepared *pc =
      kv->k32 && p->kv_dtype != ATTN_DTYPE_F32
          ? attn_check_prepare_convert(p, q, kv->k32, kv->v32, err, sizeof err)
          : attn_check_prepare_inputs(p, q, kv->k, kv->v, err, sizeof err);
  if (!pc) {
    fprintf(stderr, "attnbench run: --check: cannot compute the reference: %s\n", err);
    return false;
  }
  *has_storage = attn_check_storage_error(pc, storage, storage_ratio);
  attn_check_output_lse(pc, o, lse, cr);  // with the compute mode's error (cr->has_compute)
  attn_check_prepared_free(pc);
  if (cr->verdict == ATTN_CHECK_INCONCLUSIVE) {  // no verdict is not a pass: exit 1
    fprintf(stderr, "attnbench run: check: inconclusive (%s); O not written\n", cr->message);
    return false;
  }
  if (cr->pass) return true;
  fprintf(stderr,
          "attnbench run: --check FAILED for %s: max abs err %.3g, max rel err %.3g, err/tol %.3g "
          "(worst at flat index %zu): %s; O not written\n",
          kernel->name, cr->max_abs_err, cr->max_rel_err, cr->worst_ratio, cr->worst_index,
          cr->message[0] ? cr->message : "outside tolerance");
  return false;
}

// The storage error line of --check with a --kv-dtype conversion (check.h).
static void report_storage(const attn_problem *p, double storage, double ratio) {
  printf("storage error (K/V as %s vs float32 K/V, float64 reference): max abs %.3g, %.3g x tol\n",
         attn_dtype_name(p->kv_dtype), storage, ratio);
}

// The compute-error line of --check in a compute mode other than f32 (check.h).
static void report_compute(const attn_check_result *cr) {
  if (cr->has_compute)
    printf("compute error (%s inputs vs float32, float64 reference): max abs %.3g, rel %.3g\n",
           attn_compute_name(cr->compute), cr->compute_abs_err, cr->compute_rel_err);
}

static void report(const attn_kernel *kernel, const attn_problem *p, const run_args *a,
                   double seconds, const char *binding, const attn_check_result *cr,
                   double rounding) {
  if (a->quiet) return;
  const int64_t o_shape[4] = {p->batch, p->heads, p->seq_q, p->head_dim_v};
  char sb[128], kv[40] = "";
  int kw = 0;
  if (p->kv_dtype != ATTN_DTYPE_F32)
    kw = snprintf(kv, sizeof kv, " kv=%s", attn_dtype_name(p->kv_dtype));
  if (p->compute != ATTN_COMPUTE_F32 && kw >= 0 && (size_t)kw < sizeof kv)
    snprintf(kv + kw, sizeof kv - (size_t)kw, " compute=%s", attn_compute_name(p->compute));
  printf(
      "%s: B=%lld H=%lld KVH=%lld Sq=%lld Skv=%lld Dqk=%lld Dv=%lld%s%s scale=%g -> %s %s "
      "(one call, %.3f ms wall; not a benchmark)\n",
      kernel->name, (long long)p->batch, (long long)p->heads, (long long)p->kv_heads,
      (long long)p->seq_q, (long long)p->seq_kv, (long long)p->head_dim_qk,
      (long long)p->head_dim_v, kv, p->causal ? " causal" : "", (double)p->scale, a->out_path,
      npy_shape_string(4, o_shape, sb, sizeof sb), seconds * 1e3);
  if (kernel->caps & ATTN_CAP_THREADS)
    printf("threads: %s; tiles: tile_q %d, tile_kv %d; regtile %d (%s); kv_split %d\n", binding,
           a->settings.exec.tile_q, a->settings.exec.tile_kv, a->settings.exec.regtile,
           attn_kernel_regtile(kernel, a->settings.exec.regtile).name, a->settings.exec.kv_split);
  if (a->verify) {
    char note[160];
    run_rounding_note(a->out_dtype, rounding, note, sizeof note);
    printf(
        "check: pass (max abs err %.3g, max rel err %.3g, err/tol %.3g vs the float64 "
        "reference)%s\n",
        cr->max_abs_err, cr->max_rel_err, cr->worst_ratio, note);
  }
  if (a->verify) report_compute(cr);
}

// ── --kv-lens: a serving batch (docs/serving.md) ────────────────────────────────────

// A packed 3-D tensor [tokens][heads][dim] of float32 from path; false (message) if not.
static bool load_packed(const char *what, const char *path, int64_t tokens, npy_array *a) {
  char err[ATTN_OUT_PATH_MAX + 256];
  if (!npy_read_f32(path, a, err, sizeof err)) {
    fprintf(stderr, "attnbench run: %s: %s\n", what, err);
    return false;
  }
  bool finite = true;
  for (size_t i = 0; i < a->count && finite; i++) finite = isfinite(a->data[i]);
  if (a->ndim == 3 && a->shape[0] == tokens && a->shape[1] > 0 && a->shape[2] > 0 && finite)
    return true;
  fprintf(stderr,
          "attnbench run: %s %s: want a finite float32 [%lld][heads][dim] array packed by "
          "tokens (the lengths' total), got %d-D with %lld rows%s\n",
          what, path, (long long)tokens, a->ndim, (long long)(a->ndim ? a->shape[0] : 0),
          finite ? "" : " and a non-finite element");
  return false;
}

// K or V rows (packed by tokens, float32) stored as p's type into the layout's tensor:
// the packed rows themselves (ragged) or the pages of the pool (paged; unused slots 0).
// NULL after a message: out of memory, or a finite value the type cannot hold (as the
// dense path's store_kv refuses it).
static void *store_layout_kv(const attn_problem *p, const float *x, int64_t dim, const char *what,
                             const char *kv_name) {
  const attn_layout *l = p->layout;
  const size_t row = attn_kv_row_bytes(p->kv_dtype, dim);
  const size_t rows = (size_t)l->cu_seqlens_kv[p->batch] * (size_t)p->kv_heads;
  const size_t bytes = dim == p->head_dim_qk ? attn_k_bytes(p) : attn_v_bytes(p);
  char *packed = malloc(rows * row + 1), *out = calloc(1, bytes + 1);
  if (!packed || !out) {
    free(packed), free(out);
    fprintf(stderr, "attnbench run: out of memory storing %s\n", what);
    return NULL;
  }
  attn_quantize_rows(p->kv_dtype, x, rows, dim, packed);
  if (!run_kv_stored_whole(kv_name, what, p->kv_dtype, packed, dim, x, rows * (size_t)dim)) {
    free(packed), free(out);
    return NULL;
  }
  if (l->kind == ATTN_LAYOUT_RAGGED) {
    free(out);
    return packed;
  }
  for (int64_t b = 0; b < p->batch; b++)
    for (int64_t t = 0; t < attn_layout_kv_len(p, b); t++)
      for (int64_t g = 0; g < p->kv_heads; g++) {
        const size_t page = (size_t)l->page_table[b * l->pages_per_seq + t / l->page_size];
        const size_t slot = (page * (size_t)p->kv_heads + (size_t)g) * (size_t)l->page_size +
                            (size_t)(t % l->page_size);
        const size_t src =
            ((size_t)l->cu_seqlens_kv[b] + (size_t)t) * (size_t)p->kv_heads + (size_t)g;
        memcpy(out + slot * row, packed + src * row, row);
      }
  free(packed);
  return out;
}

// `run --kv-lens`: the batch from the lengths, Q/K/V packed by tokens, K/V paged when
// asked, the kernel, --check against the per-sequence reference, O [total_q][heads][Dv]
// and LSE [heads][total_q]. Returns the exit code.
static int run_layout(run_args *a, const attn_kernel *kernel, uint64_t budget,
                      const attn_output *out, const attn_output *lse_out) {
  int rc = ATTNBENCH_EXIT_FAILURE;
  char err[ATTN_OUT_PATH_MAX + 512];
  int64_t *kvl = malloc(ATTN_SERVING_MAX_SEQS * sizeof *kvl), *ql = NULL, n = 0;
  attn_serving_batch batch = {0};
  npy_array q = {0}, k = {0}, v = {0}, slopes = {0}, sinks = {0}, mask = {0};
  void *ks = NULL, *vs = NULL;
  float *o = NULL, *lse = NULL;
  attn_page_order order = ATTN_PAGE_SEQUENTIAL;
  if (a->page_order_name) attn_page_order_parse(a->page_order_name, &order);
  if (!kvl || !attn_serving_kv_lens(a->kv_lens, kvl, ATTN_SERVING_MAX_SEQS, &n, err, sizeof err) ||
      !(ql = malloc((size_t)n * sizeof *ql)) ||
      !attn_serving_q_lens(a->q_lens ? a->q_lens : "decode", n, ql, err, sizeof err)) {
    fprintf(stderr, "attnbench run: %s\n", kvl ? err : "out of memory");
    rc = ATTNBENCH_EXIT_USAGE;
    goto done;
  }
  // The files hold the tokens the lengths claim before the batch's tables (sized from the
  // lengths) are built: lengths the files do not have cost nothing.
  int64_t tq = 0, tk = 0;  // ≤ ATTN_SERVING_MAX_SEQS · 2^30 = 2^42 each: no overflow
  for (int64_t b = 0; b < n; b++) tq += ql[b], tk += kvl[b];
  if (!load_packed("Q", a->q_path, tq, &q) || !load_packed("K", a->k_path, tk, &k) ||
      !load_packed("V", a->v_path, tk, &v))
    goto done;
  if (!attn_serving_build(ql, kvl, n, a->page_size, order, 1, &batch, err, sizeof err)) {
    fprintf(stderr, "attnbench run: %s\n", err);
    rc = ATTNBENCH_EXIT_USAGE;
    goto done;
  }
  if (k.shape[1] != v.shape[1] || q.shape[2] != k.shape[2]) {
    fprintf(stderr,
            "attnbench run: Q, K, V disagree: K/V heads %lld and %lld, Q and K dims "
            "%lld and %lld\n",
            (long long)k.shape[1], (long long)v.shape[1], (long long)q.shape[2],
            (long long)k.shape[2]);
    goto done;
  }
  attn_problem p =
      attn_problem_make(1, q.shape[1], k.shape[1], 1, 1, q.shape[2], v.shape[2], a->causal);
  attn_problem_set_layout(&p, &batch.layout, n);
  if (a->scale_given) p.scale = (float)a->scale;
  p.kv_dtype = a->kv_dtype_name ? a->kv_dtype : ATTN_DTYPE_F32;
  attn_options opts;
  err[0] = '\0';
  if (!compute_arg_apply("run", a->compute, &p)) goto done;
  if (!attn_problem_validate(&p, err, sizeof err) ||
      !option_args_load("run", &a->opt, &p, &opts, &slopes, &sinks, &mask)) {
    if (err[0]) fprintf(stderr, "attnbench run: %s\n", err);
    goto done;
  }
  const size_t n_lse = (size_t)tq * (size_t)p.heads;
  if (a->opt.lse_path && !(lse = malloc(n_lse * sizeof *lse))) goto oom;
  opts.lse = lse;
  p.opts = &opts;
  if (!attn_problem_validate(&p, err, sizeof err)) {
    fprintf(stderr, "attnbench run: %s\n", err);
    goto done;
  }
  const int src = settle(kernel, &p, a);
  if (src >= 0) {
    rc = src;
    goto done;
  }
  attn_placement_use_mode(a->settings.bind);
  // The whole estimate (the K/V pools included: pages × page_size tokens) before the pools
  // are stored.
  if (!problem_fits(kernel, &p, a, budget)) goto done;
  if (!(ks = store_layout_kv(&p, k.data, p.head_dim_qk, "K", a->kv_dtype_name)) ||
      !(vs = store_layout_kv(&p, v.data, p.head_dim_v, "V", a->kv_dtype_name)))
    goto done;
  if (!(o = malloc(attn_o_elems(&p) * sizeof *o))) goto oom;
  char binding[512];
  double seconds = 0;
  attn_check_result cr = {0};
  double storage = 0, ratio = 0;
  bool has_storage = false;
  const kv_tensors kv = {.k = ks, .v = vs};
  if (!compute(kernel, &p, &a->settings.exec, q.data, ks, vs, o, a->case_timeout, &seconds, binding,
               sizeof binding) ||
      !run_outputs_allowed(kernel->name, &p, o, lse, n_lse, a->allow_nonfinite) ||
      (a->verify &&
       !verify_output(kernel, &p, q.data, &kv, o, lse, &cr, &storage, &ratio, &has_storage)))
    goto done;
  const int64_t o_shape[3] = {tq, p.heads, p.head_dim_v}, lse_shape[2] = {p.heads, tq};
  double rounding = 0.0;
  char note[160];
  if (!run_write_outputs(a->out_dtype, a->allow_nonfinite, out, o, 3, o_shape, lse ? lse_out : NULL,
                         lse, 2, lse_shape, &rounding))
    goto done;
  run_rounding_note(a->out_dtype, rounding, note, sizeof note);
  if (!a->quiet)
    printf(
        "%s: %lld sequences (%lld query tokens, %lld keys, %s%s) H=%lld KVH=%lld Dqk=%lld "
        "Dv=%lld%s%s%s%s%s -> %s (one call, %.3f ms wall; not a benchmark)%s%s\n",
        kernel->name, (long long)n, (long long)tq, (long long)tk,
        p.layout->kind == ATTN_LAYOUT_PAGED ? "paged, " : "ragged",
        p.layout->kind == ATTN_LAYOUT_PAGED ? attn_page_order_name(order) : "", (long long)p.heads,
        (long long)p.kv_heads, (long long)p.head_dim_qk, (long long)p.head_dim_v,
        p.kv_dtype != ATTN_DTYPE_F32 ? " kv=" : "",
        p.kv_dtype != ATTN_DTYPE_F32 ? attn_dtype_name(p.kv_dtype) : "", p.causal ? " causal" : "",
        p.compute ? " compute=" : "", p.compute ? attn_compute_name(p.compute) : "", a->out_path,
        seconds * 1e3, a->verify ? "; check: pass" : "", a->verify ? note : "");
  if (!a->quiet && a->verify) report_compute(&cr);
  rc = ATTNBENCH_EXIT_OK;
  goto done;
oom:
  fprintf(stderr, "attnbench run: out of memory\n");
done:
  free(kvl), free(ql), free(ks), free(vs), free(o), free(lse);
  npy_free(&q), npy_free(&k), npy_free(&v);
  npy_free(&slopes), npy_free(&sinks), npy_free(&mask);
  attn_serving_free(&batch);
  return rc;
}

int cmd_run(int argc, char **argv) {
  run_args a = {0};
  int rc = parse_args(argc, argv, &a);
  if (rc >= 0) return rc;
  const attn_kernel *kernel = NULL;
  if ((rc = find_kernel(a.kernel_name, &kernel)) >= 0) return rc;
  uint64_t budget = 0;
  char err[ATTN_OUT_PATH_MAX + 512];
  if (!attn_memory_budget(&budget, err, sizeof err)) {
    fprintf(stderr, "attnbench run: %s\n", err);
    return ATTNBENCH_EXIT_USAGE;
  }
  // From here on a signal removes any temporary (and writes no partial O).
  attn_fileio_catch_signals("\nattnbench run: interrupted; no partial output left behind\n");
  rc = ATTNBENCH_EXIT_FAILURE;
  named_array q = {"Q", "[batch][heads][seq_q][head_dim_qk]", a.q_path, {0}, ATTN_DTYPE_F32};
  named_array k = {"K", "[batch][kv_heads][seq_kv][head_dim_qk]", a.k_path, {0}, ATTN_DTYPE_F32};
  named_array v = {"V", "[batch][kv_heads][seq_kv][head_dim_v]", a.v_path, {0}, ATTN_DTYPE_F32};
  float *o = NULL, *lse = NULL;
  npy_array slopes = {0}, sinks = {0}, mask = {0};
  kv_tensors kv = {0};
  attn_options opts;
  attn_problem p;
  attn_output out, lse_out;
  if (!prepare_outputs(&a, &out, &lse_out) || !files_fit(&a, budget)) goto done;
  if (a.kv_lens) {  // a serving batch: its own path (run_layout)
    rc = run_layout(&a, kernel, budget, &out, a.opt.lse_path ? &lse_out : NULL);
    goto done;
  }
  if (!qkv_load("run", &q) || !qkv_load_kv("run", &k) || !qkv_load_kv("run", &v) ||
      !files_have_dtype(&a, (const named_array *const[3]){&q, &k, &v}) ||
      !qkv_derive_problem("run", &q, &k, &v, a.causal, &p) || !store_kv(&a, &p, &k.a, &v.a, &kv))
    goto done;
  if (a.scale_given && !scale_arg_apply("run", a.scale, &p)) goto done;
  if (!compute_arg_apply("run", a.compute, &p)) goto done;
  if (!option_args_load("run", &a.opt, &p, &opts, &slopes, &sinks, &mask)) goto done;
  const size_t n_lse = (size_t)p.batch * (size_t)p.heads * (size_t)p.seq_q;
  if (a.opt.lse_path && !(lse = malloc(n_lse * sizeof *lse))) {
    fprintf(stderr, "attnbench run: out of memory for LSE (%zu floats)\n", n_lse);
    goto done;
  }
  opts.lse = lse;
  p.opts = &opts;
  // Each field was checked once, where it was set: the sizes and heads from the shapes
  // (qkv_derive_problem), kv_dtype (store_kv), the scale (scale_arg_apply), the options
  // (option_args_validate, option_args_load). attn_kernel_call checks the whole problem
  // again as its contract's guard.
  assert(attn_problem_validate(&p, NULL, 0));
  {
    const int src = settle(kernel, &p, &a);  // the one resolution of the settings
    if (src >= 0) {
      rc = src;
      goto done;
    }
  }
  attn_placement_use_mode(a.settings.bind);
  if (!problem_fits(kernel, &p, &a, budget)) goto done;
  const size_t o_elems = attn_o_elems(&p);
  o = malloc(o_elems * sizeof *o);
  if (!o) {
    fprintf(stderr, "attnbench run: out of memory for O (%zu floats)\n", o_elems);
    goto done;
  }
  char binding[512];
  double seconds = 0;
  attn_check_result cr = {0};
  double storage = 0, storage_ratio = 0;
  bool has_storage = false;
  if (!compute(kernel, &p, &a.settings.exec, q.a.data, kv.k, kv.v, o, a.case_timeout, &seconds,
               binding, sizeof binding) ||
      !run_outputs_allowed(kernel->name, &p, o, lse, n_lse, a.allow_nonfinite) ||
      (a.verify && !verify_output(kernel, &p, q.a.data, &kv, o, lse, &cr, &storage, &storage_ratio,
                                  &has_storage)))
    goto done;
  const int64_t o_shape[4] = {p.batch, p.heads, p.seq_q, p.head_dim_v};
  const int64_t lse_shape[3] = {p.batch, p.heads, p.seq_q};
  double rounding = 0.0;
  if (!run_write_outputs(a.out_dtype, a.allow_nonfinite, &out, o, 4, o_shape, lse ? &lse_out : NULL,
                         lse, 3, lse_shape, &rounding))
    goto done;
  report(kernel, &p, &a, seconds, binding, &cr, rounding);
  if (has_storage && !a.quiet) report_storage(&p, storage, storage_ratio);
  rc = ATTNBENCH_EXIT_OK;
done:
  attn_fileio_release_signals();
  free(o);
  free(lse);
  npy_free(&slopes);
  npy_free(&sinks);
  npy_free(&mask);
  kv_free(&kv);
  npy_free(&q.a);
  npy_free(&k.a);
  npy_free(&v.a);
  return rc;
}
