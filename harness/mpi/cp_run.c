// SPDX-License-Identifier: MIT
// cp_run.c — the strategies over MPI (cp_run.h, docs/mpi.md). Ring and zigzag rotate the
// packed K/V shards with non-blocking messages, double-buffered: while the kernel works on
// the shard in hand, the next one arrives. Allgather collects every shard once. Ulysses is
// in cp_ulysses.c. Every rank ends with its shard's output and LSE, gathered on rank 0.
#include "mpi/cp_run.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/convert.h"
#include "mpi/cp_ulysses.h"

bool cp_mpi_ok(int rc, const char *what, char *err, size_t err_len) {
  if (rc == MPI_SUCCESS) return true;
  char s[MPI_MAX_ERROR_STRING];
  int n = 0;
  MPI_Error_string(rc, s, &n);
  snprintf(err, err_len, "%s failed: %s", what, s);
  return false;
}

double cp_cpu_now(void) {
  struct timespec t;
  return clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t) == 0
             ? (double)t.tv_sec + 1e-9 * (double)t.tv_nsec
             : 0.0;
}

// ── Inputs ─────────────────────────────────────────────────────────────────────────────

static uint64_t mix64(uint64_t x) {  // the splitmix64 finaliser
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

float cp_input_value(uint64_t seed, int t, int64_t b, int64_t head, int64_t row, int64_t d) {
  uint64_t x = mix64(seed ^ ((uint64_t)t << 56));
  x = mix64(x ^ (uint64_t)b);
  x = mix64(x ^ (uint64_t)head);
  x = mix64(x ^ (uint64_t)row);
  x = mix64(x ^ (uint64_t)d);
  return (float)((double)(int64_t)(x >> 40) / (double)(1 << 23) - 1.0);  // 24 bits in [−1, 1)
}

void cp_fill(float *dst, uint64_t seed, int t, int64_t batch, int64_t heads, int64_t row0,
             int64_t rows, int64_t width) {
  for (int64_t b = 0; b < batch; b++)
    for (int64_t h = 0; h < heads; h++)
      for (int64_t r = 0; r < rows; r++, dst += width)
        for (int64_t d = 0; d < width; d++) dst[d] = cp_input_value(seed, t, b, h, row0 + r, d);
}

// ── A rank's data ──────────────────────────────────────────────────────────────────────

typedef struct rank_data {
  cp_shard sh;
  int64_t bh, bkv, dq, dv;
  size_t krow, vrow;         // stored bytes of a K row and a V row
  float *q[2];               // per chunk [B][H][len][Dq]
  float *ofin[2], *lfin[2];  // per chunk [B][H][len][Dv], [B][H][len]
  double *acc[2], *lacc[2];  // the merge accumulators (ring, zigzag)
  float *otmp, *ltmp;        // one kernel call's output and LSE
  unsigned char *kv[2];      // packed K/V shards: the one in hand and the next
  size_t kv_cap;
} rank_data;

// Packed K/V of a shard: [K chunk 0][K chunk 1][V chunk 0][V chunk 1], each [B·KVH][len] rows.
static size_t shard_bytes(const rank_data *rd, const cp_shard *s) {
  return (size_t)(rd->bkv * s->rows) * (rd->krow + rd->vrow);
}
static const unsigned char *shard_k(const rank_data *rd, const unsigned char *buf,
                                    const cp_shard *s, int c) {
  return buf + (size_t)(rd->bkv * (c ? s->len[0] : 0)) * rd->krow;
}
static const unsigned char *shard_v(const rank_data *rd, const unsigned char *buf,
                                    const cp_shard *s, int c) {
  return buf + (size_t)(rd->bkv * s->rows) * rd->krow +
         (size_t)(rd->bkv * (c ? s->len[0] : 0)) * rd->vrow;
}

static void rank_free(rank_data *rd) {
  for (int c = 0; c < 2; c++) {
    free(rd->q[c]), free(rd->ofin[c]), free(rd->lfin[c]), free(rd->acc[c]), free(rd->lacc[c]);
    free(rd->kv[c]);
  }
  free(rd->otmp), free(rd->ltmp);
}

// Allocates and fills the rank's shard: Q chunks, its packed K/V (stored as kv_dtype).
static bool rank_init(const cp_job *job, bool zigzag, rank_data *rd, char *err, size_t err_len) {
  const attn_problem *w = &job->whole;
  *rd = (rank_data){.sh = cp_shard_of(w->seq_q, job->ranks, job->rank, zigzag),
                    .bh = w->batch * w->heads,
                    .bkv = w->batch * w->kv_heads,
                    .dq = w->head_dim_qk,
                    .dv = w->head_dim_v,
                    .krow = attn_kv_row_bytes(w->kv_dtype, w->head_dim_qk),
                    .vrow = attn_kv_row_bytes(w->kv_dtype, w->head_dim_v)};
  int64_t maxlen = 0;
  for (int r = 0; r < job->ranks; r++) {
    const cp_shard s = cp_shard_of(w->seq_q, job->ranks, r, zigzag);
    const size_t b = shard_bytes(rd, &s);
    rd->kv_cap = b > rd->kv_cap ? b : rd->kv_cap;
    for (int c = 0; c < s.count; c++) maxlen = s.len[c] > maxlen ? s.len[c] : maxlen;
  }
  bool ok = (rd->kv[0] = malloc(rd->kv_cap)) && (rd->kv[1] = malloc(rd->kv_cap)) &&
            (rd->otmp = malloc((size_t)(rd->bh * maxlen * rd->dv) * sizeof(float))) &&
            (rd->ltmp = malloc((size_t)(rd->bh * maxlen) * sizeof(float)));
  for (int c = 0; ok && c < rd->sh.count; c++) {
    const int64_t len = rd->sh.len[c], s0 = rd->sh.start[c];
    const size_t rows = (size_t)(rd->bh * len);
    ok = (rd->q[c] = malloc(rows * (size_t)rd->dq * sizeof(float))) &&
         (rd->ofin[c] = malloc(rows * (size_t)rd->dv * sizeof(float))) &&
         (rd->lfin[c] = malloc(rows * sizeof(float))) &&
         (rd->acc[c] = calloc(rows * (size_t)rd->dv, sizeof(double))) &&
         (rd->lacc[c] = malloc(rows * sizeof(double)));
    if (!ok) break;
    for (size_t i = 0; i < rows; i++) rd->lacc[c][i] = -INFINITY;
    cp_fill(rd->q[c], job->seed, 0, w->batch, w->heads, s0, len, rd->dq);
    const size_t kvrows = (size_t)(rd->bkv * len);
    float *tmp = malloc(kvrows * (size_t)(rd->dq > rd->dv ? rd->dq : rd->dv) * sizeof(float));
    if (!(ok = tmp != NULL)) break;
    cp_fill(tmp, job->seed, 1, w->batch, w->kv_heads, s0, len, rd->dq);
    attn_quantize_rows(w->kv_dtype, tmp, kvrows, rd->dq,
                       (void *)shard_k(rd, rd->kv[0], &rd->sh, c));
    cp_fill(tmp, job->seed, 2, w->batch, w->kv_heads, s0, len, rd->dv);
    attn_quantize_rows(w->kv_dtype, tmp, kvrows, rd->dv,
                       (void *)shard_v(rd, rd->kv[0], &rd->sh, c));
    free(tmp);
  }
  if (!ok) snprintf(err, err_len, "rank %d: out of memory for its shard", job->rank);
  return ok;
}

// Query chunk a against keys [ko, ko + lk) at k, v (each [B·KVH][lk] stored rows): one kernel
// call with LSE, merged into the chunk's accumulator.
static bool run_pair(const cp_job *job, rank_data *rd, int a, int64_t ko, int64_t lk, const void *k,
                     const void *v, cp_result *res, char *err, size_t err_len) {
  attn_problem p;
  attn_options o;
  const int64_t qo = rd->sh.start[a], lq = rd->sh.len[a];
  if (!cp_pair_problem(&job->whole, qo, lq, ko, lk, rd->ltmp, &p, &o)) return true;
  char e[256];
  if (!attn_kernel_native(job->kernel, &p)) res->fallback = true;
  if (attn_kernel_call(job->kernel, &p, &job->exec, rd->q[a], k, v, rd->otmp, e, sizeof e) !=
      ATTN_OK) {
    snprintf(err, err_len, "rank %d: %s on rows [%lld, %lld) x keys [%lld, %lld): %s", job->rank,
             job->kernel->name, (long long)qo, (long long)(qo + lq), (long long)ko,
             (long long)(ko + lk), e);
    return false;
  }
  res->flops += attn_flops(&p);
  const int64_t rows = rd->bh * lq;
  if (job->fault_merge)  // test only: every partial weighs the same (a broken merge)
    for (int64_t i = 0; i < rows; i++) rd->ltmp[i] = rd->ltmp[i] == -INFINITY ? -INFINITY : 0.0f;
  cp_merge(rd->acc[a], rd->lacc[a], rd->otmp, rd->ltmp, rows, rd->dv);
  return true;
}

// The messages of ring step s alone (no compute): their full cost, for the hidden fraction.
static bool ring_alone(const cp_job *job, rank_data *rd, bool zz, cp_result *res, char *err,
                       size_t err_len) {
  const int n = job->ranks, r = job->rank;
  for (int s = 0; s + 1 < n; s++) {
    const cp_shard out = cp_shard_of(job->whole.seq_q, n, (r - s + n) % n, zz);
    const cp_shard in = cp_shard_of(job->whole.seq_q, n, (r - s - 1 + 2 * n) % n, zz);
    MPI_Request rq[2];
    if (!cp_mpi_ok(MPI_Barrier(job->comm), "MPI_Barrier", err, err_len)) return false;
    const double t0 = MPI_Wtime();
    if (!cp_mpi_ok(MPI_Irecv(rd->kv[1], (int)shard_bytes(rd, &in), MPI_BYTE, (r - 1 + n) % n, s,
                             job->comm, &rq[0]),
                   "MPI_Irecv", err, err_len) ||
        !cp_mpi_ok(MPI_Isend(rd->kv[0], (int)shard_bytes(rd, &out), MPI_BYTE, (r + 1) % n, s,
                             job->comm, &rq[1]),
                   "MPI_Isend", err, err_len) ||
        !cp_mpi_ok(MPI_Waitall(2, rq, MPI_STATUSES_IGNORE), "MPI_Waitall", err, err_len))
      return false;
    res->step[s].alone_s = MPI_Wtime() - t0;
  }
  return true;
}

// Test only: the rank sleeps (it runs nothing, as when another process has its core).
static void fault_stall(double seconds) {
  struct timespec t = {.tv_sec = (time_t)seconds,
                       .tv_nsec = (long)((seconds - (double)(time_t)seconds) * 1e9)};
  while (nanosleep(&t, &t) != 0) continue;
}

// Ring (contiguous shards) and zigzag: n steps; at step s the rank holds shard r − s.
static bool run_ring(const cp_job *job, rank_data *rd, bool zz, cp_result *res, char *err,
                     size_t err_len) {
  const int n = job->ranks, r = job->rank;
  if (!ring_alone(job, rd, zz, res, err, err_len)) return false;
  if (!cp_mpi_ok(MPI_Barrier(job->comm), "MPI_Barrier", err, err_len)) return false;
  const double t_start = MPI_Wtime();
  unsigned char *cur = rd->kv[0], *next = rd->kv[1];
  res->steps = n;
  for (int s = 0; s < n; s++) {
    const cp_shard ks = cp_shard_of(job->whole.seq_q, n, (r - s + n) % n, zz);
    const cp_shard in = cp_shard_of(job->whole.seq_q, n, (r - s - 1 + 2 * n) % n, zz);
    MPI_Request rq[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
    int done = 0;
    if (s + 1 < n) {
      res->comm_bytes += (double)shard_bytes(rd, &ks);
      if (!cp_mpi_ok(MPI_Irecv(next, (int)shard_bytes(rd, &in), MPI_BYTE, (r - 1 + n) % n, s,
                               job->comm, &rq[0]),
                     "MPI_Irecv", err, err_len) ||
          !cp_mpi_ok(MPI_Isend(cur, (int)shard_bytes(rd, &ks), MPI_BYTE, (r + 1) % n, s, job->comm,
                               &rq[1]),
                     "MPI_Isend", err, err_len))
        return false;
    }
    const double tc = MPI_Wtime(), cc = cp_cpu_now();
    if (s == 0 && job->fault_stall_s > 0) fault_stall(job->fault_stall_s);
    for (int a = 0; a < rd->sh.count; a++)
      for (int b = 0; b < ks.count; b++) {
        MPI_Testall(2, rq, &done, MPI_STATUSES_IGNORE);  // progress the transfer
        if (!run_pair(job, rd, a, ks.start[b], ks.len[b], shard_k(rd, cur, &ks, b),
                      shard_v(rd, cur, &ks, b), res, err, err_len))
          return false;
      }
    const double tw = MPI_Wtime(), cw = cp_cpu_now();
    if (!cp_mpi_ok(MPI_Waitall(2, rq, MPI_STATUSES_IGNORE), "MPI_Waitall", err, err_len))
      return false;
    res->step[s].compute_s = tw - tc;
    res->step[s].cpu_s = cw - cc;
    res->step[s].wait_s = MPI_Wtime() - tw;
    unsigned char *t = cur;
    cur = next, next = t;
  }
  res->total_s = MPI_Wtime() - t_start;
  return true;
}

// Allgather: every shard once (MPI_Allgatherv), laid out as the whole K and V, then one
// kernel call per query chunk against all keys.
static bool run_allgather(const cp_job *job, rank_data *rd, bool zz, cp_result *res, char *err,
                          size_t err_len) {
  const int n = job->ranks;
  const int64_t S = job->whole.seq_q;
  int *counts = malloc((size_t)n * sizeof(int)), *displs = malloc((size_t)n * sizeof(int));
  size_t total = 0;
  for (int i = 0; counts && displs && i < n; i++) {
    const cp_shard s = cp_shard_of(S, n, i, zz);
    counts[i] = (int)shard_bytes(rd, &s);
    displs[i] = (int)total;
    total += shard_bytes(rd, &s);
  }
  unsigned char *all = malloc(total), *kfull = malloc((size_t)(rd->bkv * S) * rd->krow);
  unsigned char *vfull = malloc((size_t)(rd->bkv * S) * rd->vrow);
  bool ok = counts && displs && all && kfull && vfull;
  if (!ok) snprintf(err, err_len, "rank %d: out of memory for the gathered K/V", job->rank);
  ok = ok && cp_mpi_ok(MPI_Barrier(job->comm), "MPI_Barrier", err, err_len);
  const double t_start = MPI_Wtime();
  ok = ok && cp_mpi_ok(MPI_Allgatherv(rd->kv[0], counts[job->rank], MPI_BYTE, all, counts, displs,
                                      MPI_BYTE, job->comm),
                       "MPI_Allgatherv", err, err_len);
  for (int i = 0; ok && i < n; i++) {  // shard i's chunks into their global rows
    const cp_shard s = cp_shard_of(S, n, i, zz);
    const unsigned char *base = all + displs[i];
    for (int c = 0; c < s.count; c++)
      for (int64_t x = 0; x < rd->bkv; x++) {
        memcpy(kfull + (size_t)(x * S + s.start[c]) * rd->krow,
               shard_k(rd, base, &s, c) + (size_t)(x * s.len[c]) * rd->krow,
               (size_t)s.len[c] * rd->krow);
        memcpy(vfull + (size_t)(x * S + s.start[c]) * rd->vrow,
               shard_v(rd, base, &s, c) + (size_t)(x * s.len[c]) * rd->vrow,
               (size_t)s.len[c] * rd->vrow);
      }
  }
  const double tc = MPI_Wtime(), cc = cp_cpu_now();
  res->steps = 1;
  res->step[0].wait_s = res->step[0].alone_s = tc - t_start;
  res->comm_bytes = (double)counts[job->rank] * (n - 1);
  for (int a = 0; ok && a < rd->sh.count; a++)
    ok = run_pair(job, rd, a, 0, S, kfull, vfull, res, err, err_len);
  res->step[0].compute_s = MPI_Wtime() - tc;
  res->step[0].cpu_s = cp_cpu_now() - cc;
  res->total_s = MPI_Wtime() - t_start;
  free(counts), free(displs), free(all), free(kfull), free(vfull);
  return ok;
}

// Rank 0 collects every rank's output and LSE into [B][H][S][Dv] and [B][H][S].
static bool gather(const cp_job *job, rank_data *rd, bool zz, cp_result *res, char *err,
                   size_t err_len) {
  const int n = job->ranks;
  const int64_t S = job->whole.seq_q, per_row = rd->dv + 1;
  const size_t mine = (size_t)(rd->bh * rd->sh.rows * per_row);
  if (mine > INT_MAX) {
    snprintf(err, err_len, "rank %d: its output (%zu floats) exceeds one MPI message", job->rank,
             mine);
    return false;
  }
  float *pack = malloc(mine * sizeof(float)), *all = NULL;
  int *counts = NULL, *displs = NULL;
  bool ok = pack != NULL;
  size_t at = 0;
  for (int c = 0; ok && c < rd->sh.count; c++) {
    memcpy(pack + at, rd->ofin[c], (size_t)(rd->bh * rd->sh.len[c] * rd->dv) * sizeof(float));
    at += (size_t)(rd->bh * rd->sh.len[c] * rd->dv);
  }
  for (int c = 0; ok && c < rd->sh.count; c++) {
    memcpy(pack + at, rd->lfin[c], (size_t)(rd->bh * rd->sh.len[c]) * sizeof(float));
    at += (size_t)(rd->bh * rd->sh.len[c]);
  }
  if (ok && job->rank == 0) {
    const size_t total = (size_t)(rd->bh * S * per_row);
    ok = (all = malloc(total * sizeof(float))) && (counts = malloc((size_t)n * sizeof(int))) &&
         (displs = malloc((size_t)n * sizeof(int))) &&
         (res->o = malloc((size_t)(rd->bh * S * rd->dv) * sizeof(float))) &&
         (res->lse = malloc((size_t)(rd->bh * S) * sizeof(float)));
    for (int i = 0, d = 0; ok && i < n; i++) {
      const cp_shard s = cp_shard_of(S, n, i, zz);
      counts[i] = (int)(rd->bh * s.rows * per_row);
      displs[i] = d;
      d += counts[i];
    }
  }
  if (!ok) snprintf(err, err_len, "rank %d: out of memory gathering the output", job->rank);
  ok = ok && cp_mpi_ok(MPI_Gatherv(pack, (int)mine, MPI_FLOAT, all, counts, displs, MPI_FLOAT, 0,
                                   job->comm),
                       "MPI_Gatherv", err, err_len);
  for (int i = 0; ok && job->rank == 0 && i < n; i++) {
    const cp_shard s = cp_shard_of(S, n, i, zz);
    const float *src = all + displs[i], *lsrc = src + rd->bh * s.rows * rd->dv;
    for (int c = 0; c < s.count; c++) {
      for (int64_t x = 0; x < rd->bh; x++) {
        memcpy(res->o + (size_t)((x * S + s.start[c]) * rd->dv), src + x * s.len[c] * rd->dv,
               (size_t)(s.len[c] * rd->dv) * sizeof(float));
        memcpy(res->lse + (size_t)(x * S + s.start[c]), lsrc + x * s.len[c],
               (size_t)s.len[c] * sizeof(float));
      }
      src += rd->bh * s.len[c] * rd->dv;
      lsrc += rd->bh * s.len[c];
    }
  }
  free(pack), free(all), free(counts), free(displs);
  return ok;
}

bool cp_run(const cp_job *job, cp_result *res, char *err, size_t err_len) {
  memset(res, 0, sizeof *res);
  const bool zz = cp_uses_zigzag(job->strategy, job->whole.causal);
  rank_data rd;
  bool ok = rank_init(job, zz, &rd, err, err_len);
  if (ok && job->strategy == CP_ULYSSES) {
    ok = cp_ulysses(job, rd.q[0], rd.kv[0], rd.ofin[0], rd.lfin[0], res, err, err_len);
  } else if (ok) {
    ok = job->strategy == CP_ALLGATHER ? run_allgather(job, &rd, zz, res, err, err_len)
                                       : run_ring(job, &rd, zz, res, err, err_len);
    for (int c = 0; ok && c < rd.sh.count; c++) {
      const size_t rows = (size_t)(rd.bh * rd.sh.len[c]);
      for (size_t i = 0; i < rows; i++) {  // rows that saw nothing: zeros and −inf
        rd.lfin[c][i] = (float)rd.lacc[c][i];
        for (int64_t d = 0; d < rd.dv; d++)
          rd.ofin[c][i * (size_t)rd.dv + (size_t)d] =
              (float)rd.acc[c][i * (size_t)rd.dv + (size_t)d];
      }
    }
  }
  for (int s = 0; ok && s < res->steps; s++) {
    res->compute_s += res->step[s].compute_s;
    res->cpu_s += res->step[s].cpu_s;
    res->comm_s += res->step[s].wait_s;
  }
  ok = ok && gather(job, &rd, zz, res, err, err_len);
  rank_free(&rd);
  return ok;
}

void cp_result_free(cp_result *res) {
  free(res->o), free(res->lse);
  res->o = res->lse = NULL;
}

// ── The probe ──────────────────────────────────────────────────────────────────────────

static int cmp_double(const void *a, const void *b) {
  const double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

// Median half round trip of `reps` ping-pongs of `bytes` between rank 0 and rank peer.
static bool pingpong(MPI_Comm comm, int me, int peer, void *buf, int bytes, int reps,
                     double *half_rtt, char *err, size_t err_len) {
  double t[64];
  for (int i = 0; i < reps; i++) {
    const double t0 = MPI_Wtime();
    int rc;
    if (me == 0) {
      rc = MPI_Send(buf, bytes, MPI_BYTE, peer, 99, comm);
      if (rc == MPI_SUCCESS) rc = MPI_Recv(buf, bytes, MPI_BYTE, peer, 99, comm, MPI_STATUS_IGNORE);
    } else {
      rc = MPI_Recv(buf, bytes, MPI_BYTE, 0, 99, comm, MPI_STATUS_IGNORE);
      if (rc == MPI_SUCCESS) rc = MPI_Send(buf, bytes, MPI_BYTE, 0, 99, comm);
    }
    if (!cp_mpi_ok(rc, "probe ping-pong", err, err_len)) return false;
    t[i] = (MPI_Wtime() - t0) / 2.0;
  }
  qsort(t, (size_t)reps, sizeof t[0], cmp_double);
  *half_rtt = t[reps / 2];
  return true;
}

// Bytes per second of a memcpy into memory mapped fresh for it (its pages fault in as they are
// written, as in the collectives' new buffers); the median of 3. glibc maps requests above
// its largest mmap threshold (32 MiB) fresh each time.
static double fresh_copy_rate(void) {
  enum { kCopy = 48 << 20 };
  unsigned char *src = malloc(kCopy);
  double t[3];
  if (!src) return 0.0;
  memset(src, 1, kCopy);
  for (int i = 0; i < 3; i++) {
    unsigned char *dst = malloc(kCopy);
    if (!dst) {
      free(src);
      return 0.0;
    }
    const double t0 = MPI_Wtime();
    memcpy(dst, src, kCopy);
    t[i] = MPI_Wtime() - t0;
    src[i] = dst[kCopy - 1 - i];  // keep the copy
    free(dst);
  }
  free(src);
  qsort(t, 3, sizeof t[0], cmp_double);
  return t[1] > 0 ? kCopy / t[1] : 0.0;
}

bool cp_probe(MPI_Comm comm, double *lat_s, double *bw_bytes_s, double *copy_bytes_s, char *err,
              size_t err_len) {
  int me, n;
  MPI_Comm_rank(comm, &me);
  MPI_Comm_size(comm, &n);
  enum { kBig = 4 << 20 };
  unsigned char *buf = calloc(kBig, 1);
  if (!buf) {
    snprintf(err, err_len, "rank %d: out of memory for the probe", me);
    return false;
  }
  bool ok = true;
  for (int peer = 1; ok && peer < n; peer++) {
    ok = cp_mpi_ok(MPI_Barrier(comm), "MPI_Barrier", err, err_len);
    if (!ok || (me != 0 && me != peer)) continue;
    double small = 0, big = 0;
    ok = pingpong(comm, me, peer, buf, 8, 50, &small, err, err_len) &&
         pingpong(comm, me, peer, buf, kBig, 9, &big, err, err_len);
    if (ok && me == 0) {
      lat_s[peer] = small;
      bw_bytes_s[peer] = (double)kBig / (big > small ? big - small : big);
    }
  }
  free(buf);
  double mine = fresh_copy_rate();
  return ok && cp_mpi_ok(MPI_Allreduce(&mine, copy_bytes_s, 1, MPI_DOUBLE, MPI_MIN, comm),
                         "MPI_Allreduce", err, err_len);
}
