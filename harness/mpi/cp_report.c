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
#include "mpi/cp_ulysses.h"

bool cp_report_prepare(const char *out, const char *config, char *err, size_t err_len) {
  attn_output o;
  const attn_input_file in[1] = {{.what = "--config", .path = config}};
  return attn_output_prepare(&o, out, in, config ? 1 : 0, err, err_len);
}

static void jappend(cp_report *rep, const char *fmt, ...) {
  for (;;) {
    va_list ap;
    va_start(ap, fmt);
    const size_t room = rep->json_cap - rep->json_len;
    const int w =
        vsnprintf(rep->json ? rep->json + rep->json_len : NULL, rep->json ? room : 0, fmt, ap);
    va_end(ap);
    if (w < 0) return;
    if (rep->json && (size_t)w < room) {
      rep->json_len += (size_t)w;
      return;
    }
    const size_t cap = (rep->json_cap + (size_t)w + 1) * 2;
    char *p = realloc(rep->json, cap);
    if (!p) return;
    rep->json = p, rep->json_cap = cap;
  }
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
// fit (Ulysses needs heads >= ranks; zigzag shards need seq >= 2·ranks).
static double predict_nodes(const cp_report_run_sum *s, int nodes, double gbps, double latency_s) {
  if ((s->spec.strategy == CP_ULYSSES && s->spec.heads < nodes) || s->spec.seq < 2 * nodes)
    return NAN;
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

// Per rank: total, compute, exposed comm, flops, bytes, CPU, then steps × (compute, wait,
// alone, CPU).
enum { kHead = 6, kStep = 4 };

static void json_run(cp_report *rep, const cp_run_spec *r, const cp_job *job, const double *all,
                     int steps, const char *verdict, const attn_check_result *cr,
                     const cp_report_run_sum *sum, const cp_model_out *m) {
  const double measured = sum->measured_s;
  const int n = rep->ranks, per = kHead + kStep * steps;
  double wmin = INFINITY, wmax = 0.0;
  for (int i = 0; i < n; i++) {
    wmin = all[i * per + 3] < wmin ? all[i * per + 3] : wmin;
    wmax = all[i * per + 3] > wmax ? all[i * per + 3] : wmax;
  }
  const double tokens = (double)(r->seq * r->batch);
  char win[64] = "none", err_s[64] = "null", ratio_s[64] = "null";
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
  if (strcmp(verdict, "off") != 0) {  // no error figures without a check
    snprintf(err_s, sizeof err_s, "%.6g", cr->max_abs_err);
    snprintf(ratio_s, sizeof ratio_s, "%.6g", cr->worst_ratio);
  }
  jappend(rep,
          "%s\n    {\"name\": \"%s\", \"strategy\": \"%s\", \"kernel\": \"%s\", \"threads\": %d, "
          "\"batch\": %lld, \"heads\": %lld, \"kv_heads\": %lld, \"seq_len\": %lld, "
          "\"head_dim\": %lld, \"head_dim_v\": %lld, \"causal\": %s, \"window\": \"%s\", "
          "\"alibi\": %g, \"softcap\": %g, \"kv_dtype\": \"%s\", \"lse\": %s,\n     \"check\": "
          "\"%s\", \"max_abs_err\": %s, \"worst_ratio\": %s,\n     \"time_s\": %.9g, "
          "\"tokens_per_s\": %.6g, \"gflops\": %.6g, \"work_imbalance\": %.6g, "
          "\"model_time_s\": %.9g, \"model_error\": %.4g, \"model_rate_flops_per_s\": %.6g,\n     "
          "\"predictions\": [",
          rep->n_runs ? "," : "", r->name, cp_strategy_name(r->strategy), r->kernel, r->threads,
          (long long)r->batch, (long long)r->heads, (long long)r->kv_heads, (long long)r->seq,
          (long long)r->head_dim, (long long)r->head_dim_v, r->causal ? "true" : "false", win,
          (double)r->alibi, (double)r->softcap, attn_dtype_name(r->kv_dtype),
          r->lse ? "true" : "false", verdict, err_s, ratio_s, measured, tokens / measured,
          attn_flops(&job->whole) / measured / 1e9, wmin > 0 ? wmax / wmin - 1.0 : 0.0, m->total_s,
          m->total_s / measured - 1.0, sum->rate);
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
    jappend(rep,
            "%s\n      {\"rank\": %d, \"total_s\": %.9g, \"compute_s\": %.9g, \"compute_cpu_s\": "
            "%.9g, \"comm_exposed_s\": %.9g, \"comm_alone_s\": %.9g, \"hidden_fraction\": %.4g, "
            "\"flops\": %.6g, \"bytes_sent\": %.6g, \"steps\": [",
            i ? "," : "", i, x[0], x[1], x[5], x[2], alone, hidden, x[3], x[4]);
    for (int s = 0; s < steps; s++) {
      const double *t = x + kHead + kStep * s;
      jappend(rep, "%s{\"compute_s\": %.9g, \"cpu_s\": %.9g, \"wait_s\": %.9g, \"alone_s\": %.9g}",
              s ? ", " : "", t[0], t[3], t[1], t[2]);
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
    for (int i = 0; i < n; i++) {
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
    json_run(rep, r, job, all, steps, verdict, cr, sum, &m);
    rep->n_runs++;
    if (!rep->quiet || strcmp(verdict, "fail") == 0)
      printf("%-40s %-5s %10.4f s %12.0f tok/s  model %.4f s (%+.0f%%)%s%s\n", r->name, verdict,
             measured, (double)(r->seq * r->batch) / measured, m.total_s,
             100.0 * (m.total_s / measured - 1.0), cr->message[0] ? "  " : "", cr->message);
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
  char head[1024];
  char ver[MPI_MAX_LIBRARY_VERSION_STRING];
  int vlen = 0;
  MPI_Get_library_version(ver, &vlen);
  for (int i = 0; i < vlen; i++)
    if (ver[i] == '"' || ver[i] == '\\' || (unsigned char)ver[i] < 0x20) ver[i] = ' ';
  char *nl = strchr(ver, ',');
  if (nl) *nl = '\0';
  int w =
      snprintf(head, sizeof head,
               "{\n  \"context\": {\"tool\": \"attnbench-mpi\", \"ranks\": %d, \"mpi\": \"%s\", "
               "\"shared_cores\": %d, \"fresh_copy_bytes_per_s\": %.6g, \"probe\": [",
               rep->ranks, ver, rep->cores, rep->copy_bw);
  for (int p = 1; p < rep->ranks && w > 0 && (size_t)w < sizeof head - 128; p++)
    w += snprintf(head + w, sizeof head - (size_t)w,
                  "%s{\"peer\": %d, \"latency_s\": %.6g, \"bandwidth_bytes_per_s\": %.6g}",
                  p > 1 ? ", " : "", p, rep->lat_s[p], rep->bw[p]);
  snprintf(head + w, sizeof head - (size_t)w, "]},\n  \"runs\": [");
  static const char tail[] = "\n  ]\n}\n";
  const attn_buf parts[3] = {{head, strlen(head)},
                             {rep->json ? rep->json : "", rep->json ? rep->json_len : 0},
                             {tail, sizeof tail - 1}};
  return attn_write_file_atomic(out, parts, 3, err, err_len);
}

void cp_report_free(cp_report *rep) {
  free(rep->json);
  rep->json = NULL;
}
