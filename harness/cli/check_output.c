// SPDX-License-Identifier: MIT
// `attnbench check`'s report files (--junit, --json: check_report.h) and --o, the check of
// an output computed outside attnbench against the reference of its inputs.
#define _POSIX_C_SOURCE 200809L
#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/check_cmd.h"
#include "cli/commands.h"
#include "common/util.h"
#include "core/convert.h"  // --kv-dtype: 16-bit K/V files widened to float32
#include "io/npy.h"
#include "io/qkv_inputs.h"

bool check_prepare_reports(const check_options *o, const attn_input_file *inputs, size_t n_inputs,
                           reports *rp) {
  char err[ATTN_OUT_PATH_MAX + 512];
  rp->want_junit = o->junit_path != NULL;
  rp->want_json = o->json_path != NULL;
  if (rp->want_junit &&
      !attn_output_prepare(&rp->junit, o->junit_path, inputs, n_inputs, err, sizeof err)) {
    fprintf(stderr, "attnbench check: cannot write the JUnit report (--junit): %s\n", err);
    return false;
  }
  if (rp->want_json) {
    attn_input_file more[10];
    size_t n = 0;
    for (; n < n_inputs && n < 9; n++) more[n] = inputs[n];
    if (rp->want_junit) more[n++] = (attn_input_file){"JUnit report (--junit)", o->junit_path};
    if (!attn_output_prepare(&rp->json, o->json_path, more, n, err, sizeof err)) {
      fprintf(stderr, "attnbench check: cannot write the JSON report (--json): %s\n", err);
      return false;
    }
    if (rp->want_junit && attn_output_same(&rp->junit, &rp->json)) {
      fprintf(stderr, "attnbench check: --junit and --json name the same file (%s)\n",
              o->json_path);
      return false;
    }
  }
  return true;
}

// Writes the reports (after the closing line). False after a message.
bool check_write_reports(reports *rp, double seconds) {
  if (!rp->want_junit && !rp->want_json) return true;
  char err[ATTN_OUT_PATH_MAX + 512];
  bool ok = true;
  if (rp->recs.oom) {
    fprintf(stderr, "attnbench check: out of memory collecting the report; none written\n");
    return false;
  }
  // A signal while a report's temporary exists removes it (fileio.h) and writes nothing.
  attn_fileio_catch_signals("\nattnbench check: interrupted; no partial report left behind\n");
  if (rp->want_junit &&
      !check_report_write_junit(&rp->recs, &rp->junit, seconds, err, sizeof err)) {
    fprintf(stderr, "attnbench check: cannot write the JUnit report: %s\n", err);
    ok = false;
  }
  if (rp->want_json && !check_report_write_json(&rp->recs, &rp->json, seconds, err, sizeof err)) {
    fprintf(stderr, "attnbench check: cannot write the JSON report: %s\n", err);
    ok = false;
  }
  attn_fileio_release_signals();
  return ok;
}

// --kv-dtype: K and V as read (float32, or 16-bit files widened exactly) in *k32, *v32 (the
// float32 arrays themselves, or new ones), and p->kv_dtype the type they were stored as
// for O; the checker stores them so (attn_check_prepare_convert). False after a message.
static bool kv_to_f32(attn_problem *p, const named_array *k, const named_array *v, float **k32,
                      float **v32, const check_options *o) {
  const attn_dtype from = p->kv_dtype;
  if (from == ATTN_DTYPE_F32) {
    *k32 = k->a.data, *v32 = v->a.data;
  } else {
    *k32 = malloc(k->a.count * sizeof(float)), *v32 = malloc(v->a.count * sizeof(float));
    if (!*k32 || !*v32) {
      fprintf(stderr, "attnbench check: --kv-dtype: out of memory converting K and V\n");
      return false;
    }
    const size_t rows = (size_t)p->batch * (size_t)p->kv_heads * (size_t)p->seq_kv;
    attn_dequantize_rows(from, k->a.half, rows, p->head_dim_qk, *k32);
    attn_dequantize_rows(from, v->a.half, rows, p->head_dim_v, *v32);
  }
  p->kv_dtype = o->kv_dtype;
  char err[256];
  if (!attn_problem_check_field(p, ATTN_FIELD_KV_DTYPE, err, sizeof err)) {
    fprintf(stderr, "attnbench check: --kv-dtype %s: %s\n", o->kv_dtype_name, err);
    return false;
  }
  return true;
}

// The command line of --o: its inputs given, no flag that chooses kernels, cases or how a
// kernel runs (--o runs no kernel), a scale float32 holds. -1, else the exit code after a
// message.
static int given_output_usage(const check_options *o) {
  if (!o->q_path || !o->k_path || !o->v_path) {
    fprintf(stderr,
            "attnbench check: --o needs --q, --k and --v (the inputs O was computed from)\n");
    return ATTNBENCH_EXIT_USAGE;
  }
  // The flags that choose kernels, cases or how a kernel runs: --o runs no kernel.
  const struct {
    bool given;
    const char *flag;
  } kernel_flags[] = {{o->names.count > 0, "--kernel"},
                      {o->quick, "--quick"},
                      {o->filter != NULL, "--filter"},
                      {o->list_cases, "--list-cases"},
                      {o->allow_skips, "--allow-skips"},
                      {o->native_only, "--native-only"},
                      {o->x.threads != 0, "--threads"},
                      {o->x.tile_q != 0, "--tile-q"},
                      {o->x.tile_kv != 0, "--tile-kv"},
                      {o->x.regtile != NULL, "--regtile"},
                      {o->x.kv_split_given, "--kv-split"},
                      {o->x.bind != NULL, "--bind"},
                      {o->x.tune_file != NULL, "--tune-file"},
                      {o->x.explain, "--explain"},
                      {o->isolate_arg != NULL, "--isolate"},
                      {o->case_timeout_given, "--case-timeout"},
                      {o->progress, "--progress"}};
  for (size_t i = 0; i < sizeof kernel_flags / sizeof kernel_flags[0]; i++)
    if (kernel_flags[i].given) {
      fprintf(stderr,
              "attnbench check: --o checks one given output and runs no kernel; %s does not "
              "apply\n",
              kernel_flags[i].flag);
      return ATTNBENCH_EXIT_USAGE;
    }
  if (o->scale_given && !isfinite((float)o->scale)) {
    fprintf(stderr, "attnbench check: --scale %g does not fit in float32\n", o->scale);
    return ATTNBENCH_EXIT_USAGE;
  }
  return -1;
}

// --o: an output computed outside attnbench (PyTorch, ONNX Runtime, the user's own code)
// against the float64 reference of its inputs, with the same per-element bound and the
// same three verdicts as every kernel. One pair: "check: pass|FAIL|inconclusive (…)" and
// the usual closing line; in the reports its suite is "output" and its case the O path.
int check_given_output(const check_options *o) {
  const int usage = given_output_usage(o);
  if (usage >= 0) return usage;
  attn_input_file inputs[8] = {{"Q input (--q)", o->q_path},
                               {"K input (--k)", o->k_path},
                               {"V input (--v)", o->v_path},
                               {"output checked (--o)", o->o_path},
                               {"LSE checked (--lse)", o->opt.lse_path}};
  const size_t n_inputs = option_args_inputs(&o->opt, NULL, inputs, o->opt.lse_path ? 5 : 4, 8);
  reports rp = {0};
  if (!check_prepare_reports(o, inputs, n_inputs, &rp)) return ATTNBENCH_EXIT_FAILURE;
  int rc = ATTNBENCH_EXIT_FAILURE;
  named_array q = {"Q", "[batch][heads][seq_q][head_dim_qk]", o->q_path, {0}, ATTN_DTYPE_F32};
  named_array k = {"K", "[batch][kv_heads][seq_kv][head_dim_qk]", o->k_path, {0}, ATTN_DTYPE_F32};
  named_array v = {"V", "[batch][kv_heads][seq_kv][head_dim_v]", o->v_path, {0}, ATTN_DTYPE_F32};
  npy_array out = {0}, lse = {0}, slopes = {0}, sinks = {0}, mask = {0};
  float *k32 = NULL, *v32 = NULL;  // --kv-dtype from '<f2'/bf16 files: their values as float32
  attn_check_prepared *pc = NULL;
  attn_problem p;
  attn_options opts;
  char err[ATTN_OUT_PATH_MAX + 512], sb[400];
  if (!qkv_load("check", &q) || !qkv_load_kv("check", &k) || !qkv_load_kv("check", &v) ||
      !qkv_derive_problem("check", &q, &k, &v, o->causal, &p))
    goto done;
  if (o->scale_given && !scale_arg_apply("check", o->scale, &p)) goto done;
  if (o->kv_dtype_name && o->kv_dtype != p.kv_dtype && !kv_to_f32(&p, &k, &v, &k32, &v32, o))
    goto done;
  if (!compute_arg_apply("check", o->compute, &p)) goto done;  // F32 unless --compute
  if (!option_args_load("check", &o->opt, &p, &opts, &slopes, &sinks, &mask)) goto done;
  if (o->opt.lse_path) {
    if (!npy_read_f32(o->opt.lse_path, &lse, err, sizeof err)) {
      fprintf(stderr, "attnbench check: --lse: %s\n", err);
      goto done;
    }
    const int64_t lw[3] = {p.batch, p.heads, p.seq_q};
    if (lse.ndim != 3 || memcmp(lse.shape, lw, sizeof lw) != 0) {
      char wb[128];
      fprintf(stderr,
              "attnbench check: --lse %s has shape %s; Q makes it %s [batch][heads][seq_q]\n",
              o->opt.lse_path, npy_shape_string(lse.ndim, lse.shape, sb, sizeof sb),
              npy_shape_string(3, lw, wb, sizeof wb));
      goto done;
    }
    opts.lse = lse.data;  // marks the LSE as wanted; the check reads it as given
  }
  p.opts = &opts;
  // Each field was checked where it was set (as in `run`); the reference's preparation
  // checks the whole problem again as the library's guard.
  assert(attn_problem_validate(&p, NULL, 0));
  if (!npy_read_f32(o->o_path, &out, err, sizeof err)) {
    fprintf(stderr, "attnbench check: O: %s\n", err);
    goto done;
  }
  const int64_t want[4] = {p.batch, p.heads, p.seq_q, p.head_dim_v};
  if (out.ndim != 4 || memcmp(out.shape, want, sizeof want) != 0) {
    char wb[128];
    fprintf(stderr,
            "attnbench check: O (%s) has shape %s; Q, K and V make it %s "
            "[batch][heads][seq_q][head_dim_v]\n",
            o->o_path, npy_shape_string(out.ndim, out.shape, sb, sizeof sb),
            npy_shape_string(4, want, wb, sizeof wb));
    goto done;
  }
  const double t0 = attn_now_seconds();
  pc = k32 ? attn_check_prepare_convert(&p, q.a.data, k32, v32, err, sizeof err)
           : attn_check_prepare_inputs(&p, q.a.data, k.a.half ? (const void *)k.a.half : k.a.data,
                                       v.a.half ? (const void *)v.a.half : v.a.data, err,
                                       sizeof err);
  if (!pc) {
    fprintf(stderr, "attnbench check: cannot compute the reference: %s\n", err);
    goto done;
  }
  attn_check_result r;
  attn_check_output_lse(pc, out.data, o->opt.lse_path ? lse.data : NULL, &r);
  const double dt = attn_now_seconds() - t0;
  const char *verdict = r.verdict == ATTN_CHECK_PASS   ? "pass"
                        : r.verdict == ATTN_CHECK_FAIL ? "FAIL"
                                                       : "inconclusive";
  char mode_err[80] = "";  // the mode's own error against FP32, as the matrix's lines show it
  if (r.has_compute)
    snprintf(mode_err, sizeof mode_err, "; %s vs f32 rel err %.3g", attn_compute_name(r.compute),
             r.compute_rel_err);
  printf(
      "check: %s (max abs err %.3g, max rel err %.3g, err/tol %.3g, worst at flat index "
      "%zu%s%s%s)\n",
      verdict, r.max_abs_err, r.max_rel_err, r.worst_ratio, r.worst_index, mode_err,
      r.message[0] ? "; " : "", r.message);
  double storage, storage_ratio;
  if (attn_check_storage_error(pc, &storage, &storage_ratio))
    printf(
        "storage error (K/V as %s vs float32 K/V, float64 reference): max abs %.3g, %.3g x tol\n",
        attn_dtype_name(p.kv_dtype), storage, storage_ratio);
  printf("%d passed, %d failed, %d inconclusive, 0 skipped, 0 fallback\n",
         r.verdict == ATTN_CHECK_PASS, r.verdict == ATTN_CHECK_FAIL,
         r.verdict == ATTN_CHECK_INCONCLUSIVE);
  fflush(stdout);
  const check_verdict cv = r.verdict == ATTN_CHECK_PASS   ? CHECK_PASS
                           : r.verdict == ATTN_CHECK_FAIL ? CHECK_FAIL
                                                          : CHECK_INCONCLUSIVE;
  const char *reason = r.message[0] ? r.message : attn_check_verdict_name(r.verdict);
  if (rp.want_junit || rp.want_json)
    check_report_add(&rp.recs, "output", o->o_path, cv, CHECK_CODE_NONE,
                     cv == CHECK_PASS ? NULL : reason, r.max_abs_err, r.max_rel_err, r.worst_ratio,
                     dt);
  if (rp.want_junit || rp.want_json)
    check_report_set_compute(&rp.recs, attn_compute_name(r.compute),
                             r.has_compute ? r.compute_rel_err : NAN);
  const bool written = check_write_reports(&rp, dt);
  rc = r.verdict == ATTN_CHECK_PASS && written ? ATTNBENCH_EXIT_OK : ATTNBENCH_EXIT_FAILURE;
done:
  check_report_free(&rp.recs);
  attn_check_prepared_free(pc);
  if (k32 != k.a.data) free(k32), free(v32);
  npy_free(&out);
  npy_free(&lse);
  npy_free(&slopes);
  npy_free(&sinks);
  npy_free(&mask);
  npy_free(&q.a);
  npy_free(&k.a);
  npy_free(&v.a);
  return rc;
}
