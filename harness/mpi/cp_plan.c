// SPDX-License-Identifier: MIT
// cp_plan.c — sharding, chunk-pair problems, the LSE merge and the time model (cp_plan.h).
#include "mpi/cp_plan.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *const kStrategyNames[CP_STRATEGY_COUNT] = {"ring", "zigzag", "allgather",
                                                              "ulysses"};

const char *cp_strategy_name(cp_strategy s) {
  return (unsigned)s < CP_STRATEGY_COUNT ? kStrategyNames[s] : "?";
}

bool cp_strategy_parse(const char *s, cp_strategy *out) {
  for (int i = 0; i < CP_STRATEGY_COUNT; i++)
    if (strcmp(s, kStrategyNames[i]) == 0) {
      *out = (cp_strategy)i;
      return true;
    }
  return false;
}

int64_t cp_cut(int64_t total, int64_t n, int64_t i) {
  // total·i/n without overflow for total, n < 2^31·… : sizes here are < 2^40, n < 2^16
  return (int64_t)(((__int128)total * i) / n);
}

void cp_ulysses_kv_heads(int64_t heads, int64_t kv_heads, int n, int d, int64_t *k0, int64_t *k1) {
  const int64_t g = heads / kv_heads, h0 = cp_cut(heads, n, d), h1 = cp_cut(heads, n, d + 1);
  *k0 = h0 / g;
  *k1 = h1 > h0 ? (h1 - 1) / g + 1 : *k0;
}

cp_shard cp_shard_of(int64_t seq, int ranks, int rank, bool zigzag) {
  cp_shard sh = {0};
  if (!zigzag) {
    sh.count = 1;
    sh.start[0] = cp_cut(seq, ranks, rank);
    sh.len[0] = cp_cut(seq, ranks, rank + 1) - sh.start[0];
  } else {
    const int64_t n = 2 * (int64_t)ranks, c[2] = {rank, n - 1 - rank};
    sh.count = 2;
    for (int i = 0; i < 2; i++) {
      sh.start[i] = cp_cut(seq, n, c[i]);
      sh.len[i] = cp_cut(seq, n, c[i] + 1) - sh.start[i];
    }
  }
  sh.rows = sh.len[0] + sh.len[1];
  return sh;
}

bool cp_uses_zigzag(cp_strategy s, bool causal) {
  return s == CP_ZIGZAG || (s == CP_ALLGATHER && causal);
}

bool cp_pair_problem(const attn_problem *whole, int64_t qo, int64_t lq, int64_t ko, int64_t lk,
                     float *lse, attn_problem *p, attn_options *o) {
  *p = *whole;
  p->seq_q = lq;
  p->seq_kv = lk;
  *o = whole->opts ? *whole->opts : (attn_options){0};
  o->lse = lse;
  const bool alibi = o->alibi_slopes || o->alibi_max_bias > 0.0f;
  const bool window = o->window && (o->window_left >= 0 || o->window_right >= 0);
  const int64_t off = qo - ko + attn_diag_offset(whole);  // the whole problem's off is 0
  o->align = ATTN_ALIGN_OFFSET;
  o->diag_offset = off;
  if (!window && !alibi && p->causal) {
    if (ko + lk - 1 <= qo + attn_diag_offset(whole)) {  // every row sees every key
      p->causal = false;
      o->align = ATTN_ALIGN_BOTTOM_RIGHT;
    } else if (off == lk - lq) {  // the chunk's own bottom-right diagonal (equal chunks)
      o->align = ATTN_ALIGN_BOTTOM_RIGHT;
    }
  } else if (!window && !alibi) {  // no mask: every key
    o->align = ATTN_ALIGN_BOTTOM_RIGHT;
  }
  if (o->align == ATTN_ALIGN_BOTTOM_RIGHT) o->diag_offset = 0;
  const bool any = o->align != ATTN_ALIGN_BOTTOM_RIGHT || o->window || o->softcap != 0.0f ||
                   alibi || o->sinks || o->mask || o->lse;
  p->opts = any ? o : NULL;
  return attn_flops(p) > 0.0;
}

void cp_merge(double *acc, double *lacc, const float *o_part, const float *lse_part, int64_t rows,
              int64_t dv) {
  for (int64_t r = 0; r < rows; r++) {
    const double l = lse_part[r];
    if (l == -INFINITY) continue;
    double *a = acc + r * dv;
    const float *x = o_part + r * dv;
    if (lacc[r] == -INFINITY) {
      for (int64_t d = 0; d < dv; d++) a[d] = x[d];
      lacc[r] = l;
      continue;
    }
    const double m = lacc[r] > l ? lacc[r] : l;
    const double wa = exp(lacc[r] - m), wb = exp(l - m), inv = 1.0 / (wa + wb);
    for (int64_t d = 0; d < dv; d++) a[d] = (wa * a[d] + wb * (double)x[d]) * inv;
    lacc[r] = m + log(wa + wb);
  }
}

// ── The model ──────────────────────────────────────────────────────────────────────────

static double pair_flops(const attn_problem *whole, int64_t qo, int64_t lq, int64_t ko,
                         int64_t lk) {
  attn_problem p;
  attn_options o;
  return cp_pair_problem(whole, qo, lq, ko, lk, NULL, &p, &o) ? attn_flops(&p) : 0.0;
}

// Flops of rank r's query chunks against shard s's key chunks.
static double shard_flops(const attn_problem *w, const cp_shard *q, const cp_shard *k) {
  double f = 0.0;
  for (int a = 0; a < q->count; a++)
    for (int b = 0; b < k->count; b++)
      f += pair_flops(w, q->start[a], q->len[a], k->start[b], k->len[b]);
  return f;
}

static double kv_row_bytes(const attn_problem *w) {
  return (double)attn_kv_row_bytes(w->kv_dtype, w->head_dim_qk) +
         (double)attn_kv_row_bytes(w->kv_dtype, w->head_dim_v);
}

double cp_share_makespan(const double *work, int n, int threads, int cores, double *finish) {
  const int t = threads > 0 ? threads : 1;
  double last = 0.0;
  if (cores <= 0 || (int64_t)n * t <= cores) {  // no sharing: every job at full speed
    for (int i = 0; i < n; i++) {
      if (finish) finish[i] = work[i];
      last = work[i] > last ? work[i] : last;
    }
    return last;
  }
  int *order = malloc((size_t)n * sizeof(int));
  if (!order) return NAN;
  for (int i = 0; i < n; i++) {  // insertion sort by work: n is a rank count
    int j = i;
    for (; j > 0 && work[order[j - 1]] > work[i]; j--) order[j] = order[j - 1];
    order[j] = i;
  }
  // Every unfinished job advances at the same rate, so all share one progress figure: the
  // jobs end in order of work, job order[i] after (work − progress) / rate more seconds.
  double now = 0.0, progress = 0.0;
  for (int i = 0; i < n; i++) {
    const int k = n - i;  // jobs still running
    const double rate = fmin(1.0, (double)cores / ((double)k * t));
    now += (work[order[i]] - progress) / rate;
    progress = work[order[i]];
    if (finish) finish[order[i]] = now;
  }
  free(order);
  return now;
}

// One phase in which every rank computes work[r] seconds (on cores of its own): its wall
// time under time sharing, added to rank_busy; returns the phase's makespan.
static double share_phase(const cp_model_in *in, const double *work, double *finish,
                          double *rank_busy) {
  const double m = cp_share_makespan(work, in->ranks, in->threads, in->cores, finish);
  for (int r = 0; r < in->ranks; r++) rank_busy[r] += finish[r];
  return m;
}

// Seconds to write `bytes` into freshly allocated memory at the probed copy rate (0: free).
static double fresh_copy_s(const cp_model_in *in, double bytes) {
  return in->copy_bytes_per_s > 0.0 ? bytes / in->copy_bytes_per_s : 0.0;
}

cp_model_out cp_model_predict(const cp_model_in *in, double *rank_compute_s) {
  cp_model_out out = {0};
  const attn_problem *w = &in->whole;
  const int n = in->ranks;
  const int64_t S = w->seq_q;
  const bool zz = cp_uses_zigzag(in->strategy, w->causal);
  const double kv_row = kv_row_bytes(w) * (double)(w->batch * w->kv_heads);
  const int64_t max_rows = cp_shard_of(S, n, 0, zz).rows + 1;  // shards differ by ≤ 2 rows
  double *work = calloc((size_t)n, sizeof(double)), *fin = calloc((size_t)n, sizeof(double));
  double *busy = calloc((size_t)n, sizeof(double));
  if (!work || !fin || !busy) {
    free(work), free(fin), free(busy);
    return (cp_model_out){NAN, NAN, NAN};
  }
  if (in->strategy == CP_RING || in->strategy == CP_ZIGZAG) {
    const double t_msg = in->latency_s + (double)max_rows * kv_row / in->bytes_per_s;
    for (int s = 0; s < n; s++) {
      for (int r = 0; r < n; r++) {
        const cp_shard q = cp_shard_of(S, n, r, zz), k = cp_shard_of(S, n, (r - s + n) % n, zz);
        work[r] = shard_flops(w, &q, &k) / in->flops_per_s;
      }
      double step = share_phase(in, work, fin, busy);
      if (s < n - 1 && t_msg > step) {
        out.comm_s += t_msg - step;
        step = t_msg;
      }
      out.total_s += step;
    }
  } else if (in->strategy == CP_ALLGATHER) {
    // the ring all-gather, then every shard received into a new buffer and copied into the
    // whole K and V (two fresh writes of all S rows)
    out.comm_s = (n - 1) * (in->latency_s + (double)max_rows * kv_row / in->bytes_per_s) +
                 fresh_copy_s(in, 2.0 * (double)S * kv_row);
    const cp_shard all = {.count = 1, .start = {0}, .len = {S}, .rows = S};
    for (int r = 0; r < n; r++) {
      const cp_shard q = cp_shard_of(S, n, r, zz);
      work[r] = shard_flops(w, &q, &all) / in->flops_per_s;
    }
    out.total_s = out.comm_s + share_phase(in, work, fin, busy);
  } else {  // Ulysses: Q, K, V in and O out by all-to-all; rank r's heads over the sequence
    attn_problem part = *w;
    part.kv_heads = w->kv_heads >= n ? (w->kv_heads + n - 1) / n : 1;
    for (int r = 0; r < n; r++) {
      part.heads = cp_cut(w->heads, n, r + 1) - cp_cut(w->heads, n, r);
      work[r] = attn_flops(&part) / in->flops_per_s;
    }
    // a K/V head whose group is split between ranks goes to each of them: the K/V bytes
    // are those of every rank's K/V head copies (the all-to-alls' send counts)
    int64_t kv_copies = 0;
    for (int r = 0; r < n; r++) {
      int64_t k0, k1;
      cp_ulysses_kv_heads(w->heads, w->kv_heads, n, r, &k0, &k1);
      kv_copies += k1 - k0;
    }
    const double q_row =
        4.0 * (double)(w->head_dim_qk + w->head_dim_v) * (double)(w->batch * w->heads);
    const double kv_copy_row = kv_row_bytes(w) * (double)(w->batch * kv_copies);
    const double bytes = (double)max_rows * (q_row + kv_copy_row) * (double)(n - 1) / (double)n;
    // each way packed, received and unpacked into new buffers: three fresh writes of a
    // rank's share of Q, K, V and O
    out.comm_s = 2.0 * (n - 1) * in->latency_s + bytes / in->bytes_per_s +
                 fresh_copy_s(in, 3.0 * (double)max_rows * (q_row + kv_copy_row));
    out.total_s = out.comm_s + share_phase(in, work, fin, busy);
  }
  for (int r = 0; r < n; r++) {
    out.compute_s = busy[r] > out.compute_s ? busy[r] : out.compute_s;
    if (rank_compute_s) rank_compute_s[r] = busy[r];
  }
  free(work), free(fin), free(busy);
  return out;
}

double cp_model_calibrate(const cp_model_in *in, const double *measured_run_s) {
  cp_model_in unit = *in;
  unit.flops_per_s = 1.0;
  unit.cores = 0;  // the work itself: every rank on cores of its own
  double *pred = malloc((size_t)in->ranks * sizeof(double)), sp = 0.0, sm = 0.0;
  if (!pred) return NAN;
  cp_model_predict(&unit, pred);
  for (int r = 0; r < in->ranks; r++) sp += pred[r], sm += measured_run_s[r];
  free(pred);
  return sm > 0.0 ? sp / sm : NAN;
}
