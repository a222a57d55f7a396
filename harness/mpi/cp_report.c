// SPDX-License-Identifier: MIT
// cp_report.c — timings collected on rank 0, the results JSON and the predictions
// (cp_report.h).
#include "mpi/cp_report.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "io/fileio.h"
#include "mpi/cp_plan.h"  // cp_uses_zigzag
#include "mpi/cp_ulysses.h"

bool cp_report_prepare(const char *out, const char *config, char *err, size_t err_len) {
  attn_output o;
  const attn_input_file in[1] = {{.what = "--config", .path = config}};
  return attn_output_prepare(&o, out, in, config ? 1 : 0, err, err_len);
}

// A growing string; on out of memory it keeps what it has and sets failed.
typedef struct jbuf {
  char *s;
  size_t len, cap;
  bool failed;
} jbuf;

static void jvappend(jbuf *b, const char *fmt, va_list ap0) {
  for (;;) {
    va_list ap;
    va_copy(ap, ap0);
    const size_t room = b->cap - b->len;
    const int w = vsnprintf(b->s ? b->s + b->len : NULL, b->s ? room : 0, fmt, ap);
    va_end(ap);
    if (w < 0) {
      b->failed = true;
      return;
    }
    if (b->s && (size_t)w < room) {
      b->len += (size_t)w;
      return;
    }
    const size_t cap = (b->cap + (size_t)w + 1) * 2;
    char *p = realloc(b->s, cap);
    if (!p) {
      b->failed = true;
      return;
    }
    b->s = p, b->cap = cap;
  }
}

static void jbuf_append(jbuf *b, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  jvappend(b, fmt, ap);
  va_end(ap);
}

static void jappend(cp_report *rep, const char *fmt, ...) {
  jbuf b = {rep->json, rep->json_len, rep->json_cap, false};
  va_list ap;
  va_start(ap, fmt);
  jvappend(&b, fmt, ap);
  va_end(ap);
  rep->json = b.s, rep->json_len = b.len, rep->json_cap = b.cap;
  rep->json_failed |= b.failed;
}

// s as the body of a JSON string (quotes, backslashes and control characters escaped),
// truncated to fit out (out_len >= 7).
static const char *jesc(const char *s, char *out, size_t out_len) {
  size_t o = 0;
  for (; *s && o + 7 < out_len; s++) {
    const unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\')
      out[o++] = '\\', out[o++] = (char)c;
    else if (c < 0x20)
      o += (size_t)snprintf(out + o, out_len - o, "\\u%04x", c);
    else
      out[o++] = (char)c;
  }
  out[o] = '\0';
  return out;
}

// x as a JSON number with `fmt` ("%.9g"), or null when it is not finite (JSON has no inf).
static const char *jnum(double x, const char *fmt, char out[40]) {
  if (!isfinite(x)) return "null";
  snprintf(out, 40, fmt, x);
  return out;
}

bool cp_report_begin(cp_report *rep, int rank, int ranks, bool quiet, double predict_latency_s,
                     char *err, size_t err_len) {
  memset(rep, 0, sizeof *rep);
  rep->rank = rank, rep->ranks = ranks, rep->quiet = quiet;
  rep->predict_latency_s = predict_latency_s;
  // The ranks time-share one machine's cores when they all share its memory; on several
  // machines the model gives every rank cores of its own (cores = 0).
  MPI_Comm node;
  int on_node = 1;
  if (!cp_mpi_ok(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node),
                 "MPI_Comm_split_type", err, err_len))
    return false;
  MPI_Comm_size(node, &on_node);
  MPI_Comm_free(&node);
  const long online = sysconf(_SC_NPROCESSORS_ONLN);
  rep->cores = on_node == ranks && online > 0 ? (int)online : 0;
  if (!cp_probe(MPI_COMM_WORLD, rep->lat_s, rep->bw, &rep->copy_bw, err, err_len)) return false;
  rep->lat_max = 0.0, rep->bw_min = INFINITY;
  for (int p = 1; p < ranks; p++) {
    rep->lat_max = rep->lat_s[p] > rep->lat_max ? rep->lat_s[p] : rep->lat_max;
    rep->bw_min = rep->bw[p] < rep->bw_min ? rep->bw[p] : rep->bw_min;
  }
  if (rank == 0 && !quiet && ranks > 1)
    printf(
        "probe: rank 0 <-> others: latency %.2f us (worst), bandwidth %.2f GB/s (worst); "
        "copy into fresh memory %.2f GB/s\n",
        rep->lat_max * 1e6, rep->bw_min / 1e9, rep->copy_bw / 1e9);
  return true;
}

// The predictions: N nodes, one rank each on cores of its own, at the run's calibrated rate.
enum { kPredictNodes = 2, kPredictLinks = 3 };
static const int kNodes[kPredictNodes] = {8, 64};
static const double kGbps[kPredictLinks] = {25, 100, 400};

// The model's time of run s on `nodes` nodes at `gbps` Gb/s; NaN where the shape does not
// fit, by cp_run_validate's rule (Ulysses needs heads >= ranks; every rank a row of the
// sequence, two where the shards are zigzag: cp_uses_zigzag).
static double predict_nodes(const cp_report_run_sum *s, int nodes, double gbps, double latency_s) {
  const int64_t need =
      cp_uses_zigzag(s->spec.strategy, s->spec.causal) ? 2 * (int64_t)nodes : nodes;
  if ((s->spec.strategy == CP_ULYSSES && s->spec.heads < nodes) || s->spec.seq < need) return NAN;
  cp_model_in mi = {.strategy = s->spec.strategy,
                    .whole = s->whole,
                    .ranks = nodes,
                    .flops_per_s = s->rate,
                    .latency_s = latency_s,
                    .bytes_per_s = gbps * 1e9 / 8.0,
                    .threads = s->spec.threads,
                    .cores = 0,
                    .copy_bytes_per_s = s->copy_bw};
  if (mi.whole.opts) mi.whole.opts = &s->opts;
  return cp_model_predict(&mi, NULL).total_s;
}

// Per rank: total, compute, exposed comm, flops, bytes, CPU, fallback (0/1), then steps ×
// (compute, wait, alone, CPU).
enum { kHead = 7, kStep = 4 };

static void json_run(cp_report *rep, const cp_run_spec *r, const cp_job *job, const double *all,
                     int steps, bool fallback, const char *verdict, const attn_check_result *cr,
                     const cp_report_run_sum *sum, const cp_model_out *m) {
  const double measured = sum->measured_s;
  const int n = rep->ranks, per = kHead + kStep * steps;
  double wmin = INFINITY, wmax = 0.0;
  for (int i = 0; i < n; i++) {
    wmin = all[i * per + 3] < wmin ? all[i * per + 3] : wmin;
    wmax = all[i * per + 3] > wmax ? all[i * per + 3] : wmax;
  }
  const double tokens = (double)(r->seq * r->batch);
  char win[64] = "none";
  if (r->window) {
    char side[2][24];
    const int64_t v[2] = {r->window_left, r->window_right};
    for (int i = 0; i < 2; i++)
      if (v[i] == ATTN_WINDOW_UNBOUNDED)
        snprintf(side[i], sizeof side[i], "inf");
      else
        snprintf(side[i], sizeof side[i], "%lld", (long long)v[i]);
    snprintf(win, sizeof win, "%s:%s", side[0], side[1]);
  }
  char f[9][40], name[6 * sizeof r->name + 1], kernel[6 * sizeof r->kernel + 1];
  const bool checked = strcmp(verdict, "off") != 0;  // no error figures without a check
  jappend(rep,
          "%s\n    {\"name\": \"%s\", \"strategy\": \"%s\", \"kernel\": \"%s\", \"fallback\": "
          "%s, \"threads\": %d, \"batch\": %lld, \"heads\": %lld, \"kv_heads\": %lld, "
          "\"seq_len\": %lld, \"head_dim\": %lld, \"head_dim_v\": %lld, \"causal\": %s, "
          "\"window\": \"%s\", \"alibi\": %g, \"softcap\": %g, \"kv_dtype\": \"%s\", \"lse\": %s,\n"
          "     \"check\": \"%s\", \"max_abs_err\": %s, \"worst_ratio\": %s,\n     \"time_s\": %s, "
          "\"tokens_per_s\": %s, \"gflops\": %s, \"work_imbalance\": %s, \"model_time_s\": %s, "
          "\"model_error\": %s, \"model_rate_flops_per_s\": %s,\n     \"predictions\": [",
          rep->n_runs ? "," : "", jesc(r->name, name, sizeof name), cp_strategy_name(r->strategy),
          jesc(r->kernel, kernel, sizeof kernel), fallback ? "true" : "false", r->threads,
          (long long)r->batch, (long long)r->heads, (long long)r->kv_heads, (long long)r->seq,
          (long long)r->head_dim, (long long)r->head_dim_v, r->causal ? "true" : "false", win,
          (double)r->alibi, (double)r->softcap, attn_dtype_name(r->kv_dtype),
          r->lse ? "true" : "false", verdict,
          checked ? jnum(cr->max_abs_err, "%.6g", f[0]) : "null",
          checked ? jnum(cr->worst_ratio, "%.6g", f[1]) : "null", jnum(measured, "%.9g", f[2]),
          jnum(tokens / measured, "%.6g", f[3]),
          jnum(attn_flops(&job->whole) / measured / 1e9, "%.6g", f[4]),
          jnum(wmin > 0 ? wmax / wmin - 1.0 : 0.0, "%.6g", f[5]), jnum(m->total_s, "%.9g", f[6]),
          jnum(m->total_s / measured - 1.0, "%.4g", f[7]), jnum(sum->rate, "%.6g", f[8]));
  for (int a = 0, first = 1; a < kPredictNodes; a++)
    for (int b = 0; b < kPredictLinks; b++) {
      const double t = predict_nodes(sum, kNodes[a], kGbps[b], rep->predict_latency_s);
      if (!isfinite(t)) continue;
      jappend(rep, "%s{\"nodes\": %d, \"gbps\": %g, \"latency_s\": %.6g, \"time_s\": %.9g}",
              first ? "" : ", ", kNodes[a], kGbps[b], rep->predict_latency_s, t);
      first = 0;
    }
  jappend(rep, "],\n     \"ranks\": [");
  for (int i = 0; i < n; i++) {
    const double *x = all + i * per;
    double alone = 0.0, wait = 0.0;
    for (int s = 0; s < steps; s++)
      wait += x[kHead + kStep * s + 1], alone += x[kHead + kStep * s + 2];
    const double hidden = alone > 0 ? fmax(0.0, fmin(1.0, 1.0 - wait / alone)) : 1.0;
    char v[8][40];
    jappend(rep,
            "%s\n      {\"rank\": %d, \"total_s\": %s, \"compute_s\": %s, \"compute_cpu_s\": %s, "
            "\"comm_exposed_s\": %s, \"comm_alone_s\": %s, \"hidden_fraction\": %s, \"flops\": "
            "%s, \"bytes_sent\": %s, \"fallback\": %s, \"steps\": [",
            i ? "," : "", i, jnum(x[0], "%.9g", v[0]), jnum(x[1], "%.9g", v[1]),
            jnum(x[5], "%.9g", v[2]), jnum(x[2], "%.9g", v[3]), jnum(alone, "%.9g", v[4]),
            jnum(hidden, "%.4g", v[5]), jnum(x[3], "%.6g", v[6]), jnum(x[4], "%.6g", v[7]),
            x[6] != 0.0 ? "true" : "false");
    for (int s = 0; s < steps; s++) {
      const double *t = x + kHead + kStep * s;
      char u[4][40];
      jappend(rep, "%s{\"compute_s\": %s, \"cpu_s\": %s, \"wait_s\": %s, \"alone_s\": %s}",
              s ? ", " : "", jnum(t[0], "%.9g", u[0]), jnum(t[3], "%.9g", u[1]),
              jnum(t[1], "%.9g", u[2]), jnum(t[2], "%.9g", u[3]));
    }
    jappend(rep, "]}");
  }
  jappend(rep, "]}");
}

bool cp_report_run(cp_report *rep, const cp_run_spec *r, const cp_job *job, const cp_result *res,
                   const char *verdict, const attn_check_result *cr, char *err, size_t err_len) {
  const int n = rep->ranks, steps = res->steps, per = kHead + kStep * steps;
  double *mine = malloc((size_t)per * sizeof(double));
  double *all = rep->rank == 0 ? malloc((size_t)(per * n) * sizeof(double)) : NULL;
  if (!mine || (rep->rank == 0 && !all)) {
    free(mine), free(all);
    snprintf(err, err_len, "rank %d: out of memory for the report", rep->rank);
    return false;
  }
  mine[0] = res->total_s, mine[1] = res->compute_s, mine[2] = res->comm_s;
  mine[3] = res->flops, mine[4] = res->comm_bytes, mine[5] = res->cpu_s;
  mine[6] = res->fallback ? 1.0 : 0.0;
  for (int s = 0; s < steps; s++) {
    double *t = mine + kHead + kStep * s;
    t[0] = res->step[s].compute_s, t[1] = res->step[s].wait_s;
    t[2] = res->step[s].alone_s, t[3] = res->step[s].cpu_s;
  }
  const bool ok =
      cp_mpi_ok(MPI_Gather(mine, per, MPI_DOUBLE, all, per, MPI_DOUBLE, 0, MPI_COMM_WORLD),
                "MPI_Gather", err, err_len);
  if (ok && rep->rank == 0 && rep->n_runs < CP_MAX_RUNS) {
    // each rank's run time: the CPU time of its compute over its threads (the model's T)
    double measured = 0.0, *run = malloc((size_t)n * sizeof(double));
    bool fallback = false;  // any rank ran the portable path instead of the kernel
    for (int i = 0; i < n; i++) {
      fallback |= all[i * per + 6] != 0.0;
      measured = all[i * per] > measured ? all[i * per] : measured;
      if (run) run[i] = all[i * per + 5] / (r->threads > 0 ? r->threads : 1);
    }
    cp_report_run_sum *sum = &rep->runs[rep->n_runs];
    *sum = (cp_report_run_sum){.spec = *r,
                               .whole = job->whole,
                               .opts = job->opts,
                               .measured_s = measured,
                               .copy_bw = rep->copy_bw};
    if (sum->whole.opts) sum->whole.opts = &sum->opts;
    cp_model_in mi = {.strategy = r->strategy,
                      .whole = sum->whole,
                      .ranks = n,
                      .latency_s = rep->lat_max,
                      .bytes_per_s = isfinite(rep->bw_min) ? rep->bw_min : 1e30,
                      .threads = r->threads,
                      .cores = rep->cores,
                      .copy_bytes_per_s = rep->copy_bw};
    const double rate = run ? cp_model_calibrate(&mi, run) : NAN;
    free(run);
    sum->rate = isfinite(rate) && rate > 0 ? rate : 1.0;
    mi.flops_per_s = sum->rate;
    const cp_model_out m = cp_model_predict(&mi, NULL);
    json_run(rep, r, job, all, steps, fallback, verdict, cr, sum, &m);
    rep->n_runs++;
    if (!rep->quiet || strcmp(verdict, "fail") == 0)
      printf("%-40s %-5s %10.4f s %12.0f tok/s  model %.4f s (%+.0f%%)%s%s%s\n", r->name, verdict,
             measured, (double)(r->seq * r->batch) / measured, m.total_s,
             100.0 * (m.total_s / measured - 1.0),
             fallback ? "  fallback (portable path, not the kernel's)" : "",
             cr->message[0] ? "  " : "", cr->message);
  }
  free(mine), free(all);
  return ok;
}

void cp_report_predict(const cp_report *rep, FILE *f) {
  fprintf(f,
          "model: time for N nodes (one rank each, this run's calibrated compute rate), "
          "latency %.1f us\n",
          rep->predict_latency_s * 1e6);
  fprintf(f, "%-40s %6s %12s %12s %12s\n", "run", "nodes", "25 Gb/s", "100 Gb/s", "400 Gb/s");
  for (size_t i = 0; i < rep->n_runs; i++)
    for (int a = 0; a < kPredictNodes; a++) {
      fprintf(f, "%-40s %6d", rep->runs[i].spec.name, kNodes[a]);
      for (int b = 0; b < kPredictLinks; b++) {
        const double t = predict_nodes(&rep->runs[i], kNodes[a], kGbps[b], rep->predict_latency_s);
        if (isfinite(t))
          fprintf(f, " %10.4f s", t);
        else
          fprintf(f, " %12s", "n/a");
      }
      fputc('\n', f);
    }
}

bool cp_report_write(const cp_report *rep, const char *out, char *err, size_t err_len) {
  char ver[MPI_MAX_LIBRARY_VERSION_STRING + 1] = "", vesc[6 * sizeof ver + 1];
  int vlen = 0;
  MPI_Get_library_version(ver, &vlen);
  ver[vlen >= 0 && vlen < (int)sizeof ver ? vlen : (int)sizeof ver - 1] = '\0';
  char *nl = strpbrk(ver, ",\n");  // the library's name and version: its first line or phrase
  if (nl) *nl = '\0';
  jbuf head = {0};
  jbuf_append(&head,
              "{\n  \"context\": {\"tool\": \"attnbench-mpi\", \"ranks\": %d, \"mpi\": \"%s\", "
              "\"shared_cores\": %d, \"fresh_copy_bytes_per_s\": %.6g, \"probe\": [",
              rep->ranks, jesc(ver, vesc, sizeof vesc), rep->cores, rep->copy_bw);
  for (int p = 1; p < rep->ranks; p++) {
    char a[40], b[40];
    jbuf_append(&head, "%s{\"peer\": %d, \"latency_s\": %s, \"bandwidth_bytes_per_s\": %s}",
                p > 1 ? ", " : "", p, jnum(rep->lat_s[p], "%.6g", a), jnum(rep->bw[p], "%.6g", b));
  }
  jbuf_append(&head, "]},\n  \"runs\": [");
  if (head.failed || !head.s || rep->json_failed) {
    free(head.s);
    snprintf(err, err_len, "%s: out of memory for the results", out);
    return false;
  }
  static const char tail[] = "\n  ]\n}\n";
  const attn_buf parts[3] = {{head.s, head.len},
                             {rep->json ? rep->json : "", rep->json ? rep->json_len : 0},
                             {tail, sizeof tail - 1}};
  const bool ok = attn_write_file_atomic(out, parts, 3, err, err_len);
  free(head.s);
  return ok;
}

void cp_report_free(cp_report *rep) {
  free(rep->json);
  rep->json = NULL;
}
