// SPDX-License-Identifier: MIT
// cp_ulysses.c — Ulysses (cp_ulysses.h). Rank d owns query heads [cut(H, N, d), cut(H, N,
// d + 1)) and the K/V heads they read (a K/V head may go to several ranks under GQA).
#include "mpi/cp_ulysses.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct heads_of {
  int64_t h0[CP_MAX_STEPS], h1[CP_MAX_STEPS];  // per rank: [h0, h1) of the tensor's heads
} heads_of;

// Rank d's query heads in qh and the K/V heads they read in kh (cp_ulysses_kv_heads).
static void ulysses_heads(const attn_problem *w, int n, heads_of *qh, heads_of *kh) {
  for (int d = 0; d < n; d++) {
    qh->h0[d] = cp_cut(w->heads, n, d), qh->h1[d] = cp_cut(w->heads, n, d + 1);
    cp_ulysses_kv_heads(w->heads, w->kv_heads, n, d, &kh->h0[d], &kh->h1[d]);
  }
}

double cp_ulysses_max_buffer(const attn_problem *w, int ranks) {
  static heads_of qh, kh;  // per rank (large: static; validation runs one run at a time)
  ulysses_heads(w, ranks, &qh, &kh);
  const double B = (double)w->batch, S = (double)w->seq_q;
  const double qrow = 4.0 * (double)w->head_dim_qk, orow = 4.0 * (double)w->head_dim_v;
  const double krow = (double)attn_kv_row_bytes(w->kv_dtype, w->head_dim_qk);
  const double vrow = (double)attn_kv_row_bytes(w->kv_dtype, w->head_dim_v);
  double q_all = 0.0, kv_all = 0.0, worst = 0.0;  // head copies over all ranks
  for (int d = 0; d < ranks; d++)
    q_all += (double)(qh.h1[d] - qh.h0[d]), kv_all += (double)(kh.h1[d] - kh.h0[d]);
  for (int d = 0; d < ranks; d++) {
    const double rows = (double)cp_shard_of(w->seq_q, ranks, d, false).len[0];
    const double nq = (double)(qh.h1[d] - qh.h0[d]), nkv = (double)(kh.h1[d] - kh.h0[d]);
    // to heads: send this rank's rows of every rank's heads, receive all rows of its heads;
    // back (O, LSE): the reverse
    const double b[] = {B * q_all * rows * qrow, B * nq * S * qrow,        B * kv_all * rows * krow,
                        B * nkv * S * krow,      B * kv_all * rows * vrow, B * nkv * S * vrow,
                        B * q_all * rows * orow, B * nq * S * orow,        B * q_all * rows * 4.0,
                        B * nq * S * 4.0};
    for (size_t i = 0; i < sizeof b / sizeof b[0]; i++) worst = b[i] > worst ? b[i] : worst;
  }
  return worst;
}

// Moves rows between [B][Htot][rows of this rank] (sequence shard) and [B][nh][S] (head
// shard) layouts; to_heads selects the direction. rb = bytes per row.
// *sent grows by the bytes this rank sends to other ranks.
static bool exchange(const cp_job *job, bool to_heads, const unsigned char *src, unsigned char *dst,
                     size_t rb, int64_t htot, const heads_of *ho, double *sent, char *err,
                     size_t err_len) {
  const int n = job->ranks, me = job->rank;
  const int64_t B = job->whole.batch, S = job->whole.seq_q;
  const int64_t my_rows = cp_shard_of(S, n, me, false).len[0], nh_me = ho->h1[me] - ho->h0[me];
  int *sc = malloc((size_t)n * sizeof(int)), *sd = malloc((size_t)n * sizeof(int));
  int *rc = malloc((size_t)n * sizeof(int)), *rd = malloc((size_t)n * sizeof(int));
  size_t st = 0, rt = 0;
  bool ok = sc && sd && rc && rd;
  for (int d = 0; ok && d < n; d++) {
    const int64_t rows_d = cp_shard_of(S, n, d, false).len[0], nh_d = ho->h1[d] - ho->h0[d];
    // to_heads: send my rows of d's heads, receive d's rows of my heads; back: the reverse
    const size_t s_bytes = (size_t)(B * (to_heads ? nh_d * my_rows : nh_me * rows_d)) * rb;
    const size_t r_bytes = (size_t)(B * (to_heads ? nh_me * rows_d : nh_d * my_rows)) * rb;
    if (st + s_bytes > INT_MAX || rt + r_bytes > INT_MAX) {
      snprintf(err, err_len, "rank %d: an all-to-all exceeds %d bytes (use more ranks)", me,
               INT_MAX);
      ok = false;
      break;
    }
    sc[d] = (int)s_bytes, sd[d] = (int)st, rc[d] = (int)r_bytes, rd[d] = (int)rt;
    st += s_bytes, rt += r_bytes;
    if (d != me) *sent += (double)s_bytes;
  }
  unsigned char *sbuf = ok ? malloc(st ? st : 1) : NULL, *rbuf = ok ? malloc(rt ? rt : 1) : NULL;
  if (ok && !(ok = sbuf && rbuf)) snprintf(err, err_len, "rank %d: out of memory", me);
  for (int d = 0; ok && d < n; d++) {  // pack for d
    const cp_shard rows_d = cp_shard_of(S, n, d, false);
    const int64_t start_d = rows_d.start[0];
    unsigned char *p = sbuf + sd[d];
    for (int64_t b = 0; b < B; b++) {
      if (to_heads) {
        for (int64_t h = ho->h0[d]; h < ho->h1[d]; h++, p += (size_t)my_rows * rb)
          memcpy(p, src + (size_t)((b * htot + h) * my_rows) * rb, (size_t)my_rows * rb);
      } else {
        for (int64_t h = 0; h < nh_me; h++, p += (size_t)rows_d.len[0] * rb)
          memcpy(p, src + (size_t)((b * nh_me + h) * S + start_d) * rb, (size_t)rows_d.len[0] * rb);
      }
    }
  }
  ok = ok && cp_mpi_ok(MPI_Alltoallv(sbuf, sc, sd, MPI_BYTE, rbuf, rc, rd, MPI_BYTE, job->comm),
                       "MPI_Alltoallv", err, err_len);
  for (int s = 0; ok && s < n; s++) {  // unpack from s
    const cp_shard rows_s = cp_shard_of(S, n, s, false);
    const unsigned char *p = rbuf + rd[s];
    for (int64_t b = 0; b < B; b++) {
      if (to_heads) {
        for (int64_t h = 0; h < nh_me; h++, p += (size_t)rows_s.len[0] * rb)
          memcpy(dst + (size_t)((b * nh_me + h) * S + rows_s.start[0]) * rb, p,
                 (size_t)rows_s.len[0] * rb);
      } else {
        for (int64_t h = ho->h0[s]; h < ho->h1[s]; h++, p += (size_t)my_rows * rb)
          memcpy(dst + (size_t)((b * htot + h) * my_rows) * rb, p, (size_t)my_rows * rb);
      }
    }
  }
  free(sc), free(sd), free(rc), free(rd), free(sbuf), free(rbuf);
  return ok;
}

// The whole sequence for query heads [h0, h1) (all batches): one call when the range holds
// whole K/V groups, else one call per (batch, group) with the group's heads in range.
static bool attend(const cp_job *job, const heads_of *qh, const heads_of *kh, const float *q,
                   const unsigned char *k, const unsigned char *v, float *out, float *lse,
                   cp_result *res, char *err, size_t err_len) {
  const attn_problem *w = &job->whole;
  const int me = job->rank;
  const int64_t g = w->heads / w->kv_heads, h0 = qh->h0[me], h1 = qh->h1[me], nh = h1 - h0;
  const int64_t k0 = kh->h0[me], nkv = kh->h1[me] - k0, S = w->seq_q;
  const size_t krow = attn_kv_row_bytes(w->kv_dtype, w->head_dim_qk);
  const size_t vrow = attn_kv_row_bytes(w->kv_dtype, w->head_dim_v);
  float *slopes = malloc((size_t)nh * sizeof(float));
  if (!slopes) {
    snprintf(err, err_len, "rank %d: out of memory", me);
    return false;
  }
  for (int64_t h = 0; h < nh; h++) slopes[h] = attn_alibi_slope(w, h0 + h);
  const bool alibi = w->opts && (w->opts->alibi_max_bias > 0.0f || w->opts->alibi_slopes);
  const bool whole_groups = h0 % g == 0 && h1 % g == 0;
  bool ok = true;
  for (int64_t b = 0; ok && b < (whole_groups ? 1 : w->batch); b++)
    for (int64_t kv = k0; ok && kv < k0 + nkv; kv += whole_groups ? nkv : 1) {
      const int64_t hs = whole_groups ? h0 : (kv * g > h0 ? kv * g : h0);
      const int64_t he = whole_groups ? h1 : ((kv + 1) * g < h1 ? (kv + 1) * g : h1);
      attn_options o = w->opts ? *w->opts : (attn_options){0};
      attn_problem p = *w;
      p.batch = whole_groups ? w->batch : 1;
      p.heads = he - hs;
      p.kv_heads = whole_groups ? nkv : 1;
      o.lse = lse + (size_t)((b * nh + hs - h0) * S);
      if (alibi) o.alibi_max_bias = 0.0f, o.alibi_slopes = slopes + (hs - h0);
      p.opts = &o;
      const size_t qrow = (size_t)((b * nh + hs - h0) * S),
                   krow_i = (size_t)((b * nkv + kv - k0) * S);
      char e[256];
      const double t0 = MPI_Wtime(), c0 = cp_cpu_now();
      if (!attn_kernel_native(job->kernel, &p)) res->fallback = true;
      if (attn_kernel_call(job->kernel, &p, &job->exec, q + qrow * (size_t)w->head_dim_qk,
                           k + krow_i * krow, v + krow_i * vrow, out + qrow * (size_t)w->head_dim_v,
                           e, sizeof e) != ATTN_OK) {
        snprintf(err, err_len, "rank %d: %s on heads [%lld, %lld): %s", me, job->kernel->name,
                 (long long)hs, (long long)he, e);
        ok = false;
      }
      res->step[0].compute_s += MPI_Wtime() - t0;
      res->step[0].cpu_s += cp_cpu_now() - c0;
      res->flops += attn_flops(&p);
    }
  free(slopes);
  return ok;
}

bool cp_ulysses(const cp_job *job, const float *q, const unsigned char *kv, float *o, float *lse,
                cp_result *res, char *err, size_t err_len) {
  const attn_problem *w = &job->whole;
  const int n = job->ranks, me = job->rank;
  const int64_t S = w->seq_q, B = w->batch;
  const int64_t my_rows = cp_shard_of(S, n, me, false).len[0];
  static heads_of qh, kh;  // per rank (large: static, one run at a time)
  ulysses_heads(w, n, &qh, &kh);
  const int64_t nh = qh.h1[me] - qh.h0[me], nkv = kh.h1[me] - kh.h0[me];
  const size_t krow = attn_kv_row_bytes(w->kv_dtype, w->head_dim_qk);
  const size_t vrow = attn_kv_row_bytes(w->kv_dtype, w->head_dim_v);
  const size_t qb = (size_t)w->head_dim_qk * sizeof(float),
               ob = (size_t)w->head_dim_v * sizeof(float);
  float *ql = malloc((size_t)(B * nh * S) * qb), *ol = malloc((size_t)(B * nh * S) * ob);
  float *ll = malloc((size_t)(B * nh * S) * sizeof(float));
  unsigned char *kl = malloc((size_t)(B * nkv * S) * krow),
                *vl = malloc((size_t)(B * nkv * S) * vrow);
  bool ok = ql && ol && ll && kl && vl;
  if (!ok) snprintf(err, err_len, "rank %d: out of memory for its head shard", me);
  res->steps = 1;
  ok = ok && cp_mpi_ok(MPI_Barrier(job->comm), "MPI_Barrier", err, err_len);
  const double t_start = MPI_Wtime();
  const unsigned char *ks = kv, *vs = kv + (size_t)(B * w->kv_heads * my_rows) * krow;
  double *sent = &res->comm_bytes;  // counted from the all-to-alls' send counts
  ok = ok &&
       exchange(job, true, (const unsigned char *)q, (unsigned char *)ql, qb, w->heads, &qh, sent,
                err, err_len) &&
       exchange(job, true, ks, kl, krow, w->kv_heads, &kh, sent, err, err_len) &&
       exchange(job, true, vs, vl, vrow, w->kv_heads, &kh, sent, err, err_len);
  const double t_in = MPI_Wtime() - t_start;
  ok = ok && attend(job, &qh, &kh, ql, kl, vl, ol, ll, res, err, err_len);
  const double t_back = MPI_Wtime();
  ok = ok &&
       exchange(job, false, (const unsigned char *)ol, (unsigned char *)o, ob, w->heads, &qh, sent,
                err, err_len) &&
       exchange(job, false, (const unsigned char *)ll, (unsigned char *)lse, sizeof(float),
                w->heads, &qh, sent, err, err_len);
  res->total_s = MPI_Wtime() - t_start;
  res->step[0].wait_s = res->step[0].alone_s = t_in + (MPI_Wtime() - t_back);
  free(ql), free(ol), free(ll), free(kl), free(vl);
  return ok;
}
