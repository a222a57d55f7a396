// SPDX-License-Identifier: MIT
// The MPI-free half of context parallelism (harness/mpi/cp_plan.h): shards partition the
// sequence; every chunk pair sees exactly the keys (and ALiBi distances) of the whole
// problem; zigzag balances causal work (and contiguous shards do not — the check can
// fail); the LSE merge; the time model's limits.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "mpi/cp_plan.h"
#include "test_util.h"

static void test_shards(void) {
  static const int64_t kSeqs[] = {1, 2, 3, 7, 8, 16, 31, 60, 97, 1000, 16384};
  for (size_t si = 0; si < sizeof kSeqs / sizeof kSeqs[0]; si++)
    for (int n = 1; n <= 8; n++)
      for (int zz = 0; zz <= 1; zz++) {
        const int64_t S = kSeqs[si];
        if (S < (zz ? 2 * n : n)) continue;
        unsigned char *seen = calloc((size_t)S, 1);
        int64_t lmin = S, lmax = 0;
        for (int r = 0; r < n; r++) {
          const cp_shard s = cp_shard_of(S, n, r, zz);
          EXPECT(s.count == (zz ? 2 : 1), "count %d", s.count);
          for (int c = 0; c < s.count; c++) {
            lmin = s.len[c] < lmin ? s.len[c] : lmin;
            lmax = s.len[c] > lmax ? s.len[c] : lmax;
            for (int64_t i = s.start[c]; i < s.start[c] + s.len[c]; i++)
              if (i >= 0 && i < S) seen[i]++;
          }
        }
        bool once = true;
        for (int64_t i = 0; i < S; i++) once &= seen[i] == 1;
        EXPECT(once, "S %lld, %d ranks, zigzag %d: rows not covered exactly once", (long long)S, n,
               zz);
        EXPECT(lmax - lmin <= 1 && lmin >= 1, "S %lld n %d zz %d: chunk lengths %lld..%lld",
               (long long)S, n, zz, (long long)lmin, (long long)lmax);
        free(seen);
      }
}

// For every global row, the union of the pairs' visible keys is the whole problem's range,
// and every pair with ALiBi measures distances from the whole problem's diagonal.
static void test_pairs_exact(void) {
  typedef struct variant {
    bool causal, window, alibi;
    int64_t left, right;
  } variant;
  static const variant kV[] = {{true, false, false, 0, 0}, {false, false, false, 0, 0},
                               {true, true, false, 9, 0},  {false, true, false, 4, 7},
                               {true, false, true, 0, 0},  {false, true, true, 30, -1}};
  for (size_t vi = 0; vi < sizeof kV / sizeof kV[0]; vi++)
    for (int n = 1; n <= 5; n++)
      for (int zz = 0; zz <= 1; zz++) {
        const int64_t S = 53;
        attn_problem w = attn_problem_make(1, 2, 1, S, S, 16, 16, kV[vi].causal);
        attn_options o = {.window = kV[vi].window,
                          .window_left = kV[vi].left,
                          .window_right = kV[vi].right,
                          .alibi_max_bias = kV[vi].alibi ? 8.0f : 0.0f};
        w.opts = &o;
        int64_t *count = calloc((size_t)S, sizeof(int64_t));
        bool ok = true;
        for (int qr = 0; qr < n; qr++)
          for (int kr = 0; kr < n; kr++) {
            const cp_shard qs = cp_shard_of(S, n, qr, zz), ks = cp_shard_of(S, n, kr, zz);
            for (int a = 0; a < qs.count; a++)
              for (int b = 0; b < ks.count; b++) {
                attn_problem p;
                attn_options po;
                const bool any = cp_pair_problem(&w, qs.start[a], qs.len[a], ks.start[b], ks.len[b],
                                                 NULL, &p, &po);
                for (int64_t i = 0; i < qs.len[a]; i++) {
                  int64_t lo, hi, glo, ghi;
                  attn_row_keys(&p, i, &lo, &hi);
                  attn_row_keys(&w, qs.start[a] + i, &glo, &ghi);
                  if (!any) ok &= lo == hi;
                  // the pair's keys are the whole row's keys inside this key chunk
                  const int64_t want_lo = glo > ks.start[b] ? glo : ks.start[b];
                  const int64_t want_hi =
                      ghi < ks.start[b] + ks.len[b] ? ghi : ks.start[b] + ks.len[b];
                  if (want_hi > want_lo)
                    ok &= lo + ks.start[b] == want_lo && hi + ks.start[b] == want_hi;
                  else
                    ok &= lo == hi;
                  count[qs.start[a] + i] += hi - lo;
                }
                if (any && kV[vi].alibi) ok &= attn_diag_offset(&p) == qs.start[a] - ks.start[b];
                ok &= attn_problem_validate(&p, NULL, 0);
              }
          }
        for (int64_t i = 0; i < S; i++) ok &= count[i] == attn_visible_keys(&w, i);
        EXPECT(ok, "variant %zu, %d ranks, zigzag %d: chunk pairs differ from the whole", vi, n,
               zz);
        free(count);
      }
}

static double rank_flops(const attn_problem *w, int n, int r, bool zz) {
  double f = 0.0;
  const cp_shard q = cp_shard_of(w->seq_q, n, r, zz);
  for (int kr = 0; kr < n; kr++) {
    const cp_shard k = cp_shard_of(w->seq_q, n, kr, zz);
    for (int a = 0; a < q.count; a++)
      for (int b = 0; b < k.count; b++) {
        attn_problem p;
        attn_options o;
        if (cp_pair_problem(w, q.start[a], q.len[a], k.start[b], k.len[b], NULL, &p, &o))
          f += attn_flops(&p);
      }
  }
  return f;
}

static void test_balance(void) {
  const attn_problem w = attn_problem_make(1, 8, 8, 16384, 16384, 128, 128, true);
  for (int n = 2; n <= 8; n *= 2) {
    double lo[2] = {INFINITY, INFINITY}, hi[2] = {0, 0}, total = 0;
    for (int zz = 0; zz <= 1; zz++)
      for (int r = 0; r < n; r++) {
        const double f = rank_flops(&w, n, r, zz);
        lo[zz] = f < lo[zz] ? f : lo[zz];
        hi[zz] = f > hi[zz] ? f : hi[zz];
        if (zz) total += f;
      }
    EXPECT(fabs(total / attn_flops(&w) - 1.0) < 1e-12, "zigzag work %.6g != whole %.6g", total,
           attn_flops(&w));
    EXPECT(hi[1] / lo[1] - 1.0 <= 0.05, "%d ranks: zigzag imbalance %.4f", n, hi[1] / lo[1] - 1);
    EXPECT(hi[0] / lo[0] - 1.0 > 0.5, "%d ranks: contiguous imbalance only %.4f", n,
           hi[0] / lo[0] - 1);
  }
}

static void test_merge(void) {
  // two halves of a row with known sums: merge equals the softmax over all keys
  double acc[2] = {0, 0}, lacc[1] = {-INFINITY};
  const float o1[2] = {1.0f, 2.0f}, l1[1] = {0.5f}, o2[2] = {3.0f, -1.0f}, l2[1] = {1.5f};
  const float none[1] = {-INFINITY}, junk[2] = {1e30f, -1e30f};
  cp_merge(acc, lacc, o1, l1, 1, 2);
  cp_merge(acc, lacc, junk, none, 1, 2);  // a partial that saw nothing changes nothing
  cp_merge(acc, lacc, o2, l2, 1, 2);
  const double w1 = exp(0.5), w2 = exp(1.5);
  EXPECT(fabs(acc[0] - (w1 * 1 + w2 * 3) / (w1 + w2)) < 1e-12, "merged %.17g", acc[0]);
  EXPECT(fabs(acc[1] - (w1 * 2 - w2) / (w1 + w2)) < 1e-12, "merged %.17g", acc[1]);
  EXPECT(fabs(lacc[0] - log(w1 + w2)) < 1e-12, "lse %.17g", lacc[0]);
}

static void test_model(void) {
  attn_problem w = attn_problem_make(1, 8, 8, 4096, 4096, 128, 128, true);
  for (int s = 0; s < CP_STRATEGY_COUNT; s++) {
    cp_model_in in = {.strategy = (cp_strategy)s,
                      .whole = w,
                      .ranks = 4,
                      .flops_per_s = 1e11,
                      .latency_s = 0,
                      .bytes_per_s = 1e30};
    const cp_model_out fast = cp_model_predict(&in, NULL);
    EXPECT(fast.comm_s < 1e-9, "%s: comm %.3g at infinite bandwidth", cp_strategy_name(in.strategy),
           fast.comm_s);
    EXPECT(fast.total_s >= attn_flops(&w) / 4 / 1e11 * 0.999, "%s: faster than perfect split",
           cp_strategy_name(in.strategy));
    in.bytes_per_s = 1e6;  // 1 MB/s: communication dominates
    const cp_model_out slow = cp_model_predict(&in, NULL);
    EXPECT(slow.total_s > fast.total_s * 10, "%s: slow link %.3g vs fast %.3g",
           cp_strategy_name(in.strategy), slow.total_s, fast.total_s);
  }
}

// Processor sharing: three equal jobs on two cores take 3/2 of one; a short job frees its
// share for the others; without sharing the makespan is the longest job.
static void test_share(void) {
  const double eq[3] = {1, 1, 1}, mixed[3] = {0.1, 2, 0.1};
  double fin[3];
  EXPECT(fabs(cp_share_makespan(eq, 3, 1, 2, fin) - 1.5) < 1e-12 && fabs(fin[1] - 1.5) < 1e-12,
         "3 equal jobs on 2 cores: %.17g", fin[1]);
  // all three at 2/3 until the short ones end (0.1 / (2/3) = 0.15), then the long one alone
  EXPECT(fabs(cp_share_makespan(mixed, 3, 1, 2, fin) - (0.15 + 1.9)) < 1e-12 &&
             fabs(fin[0] - 0.15) < 1e-12 && fabs(fin[2] - 0.15) < 1e-12,
         "mixed jobs: %.17g %.17g %.17g", fin[0], fin[1], fin[2]);
  EXPECT(cp_share_makespan(mixed, 3, 1, 0, fin) == 2.0 && fin[0] == 0.1, "no sharing");
  EXPECT(cp_share_makespan(eq, 3, 2, 6, NULL) == 1.0, "3 ranks x 2 threads fit 6 cores");
  EXPECT(fabs(cp_share_makespan(eq, 3, 2, 4, NULL) - 1.5) < 1e-12, "3 x 2 threads on 4 cores");
}

// The model's zigzag prediction for a problem small enough to write out: S = 64 on 2 ranks
// is 4 chunks of 16; rank 0 holds chunks {0, 3}, rank 1 {1, 2}. Step 0 (own keys): two
// diagonal blocks and one full block per rank; step 1: two full blocks per rank. With
// t_msg = α + 33 rows · (K + V row bytes) / β (the largest shard plus one row):
//   own cores:    max(2d + f, t_msg) + 2f                      (d, f: block times at R)
//   2 ranks on 1 core (time sharing): max(2·(2d + f), t_msg) + 2·2f
static void test_model_formula(void) {
  const double R = 2e9, alpha = 3e-6;
  attn_problem w = attn_problem_make(1, 1, 1, 64, 64, 16, 16, true);
  const attn_problem full = attn_problem_make(1, 1, 1, 16, 16, 16, 16, false);
  const attn_problem diag = attn_problem_make(1, 1, 1, 16, 16, 16, 16, true);
  const double f = attn_flops(&full) / R, d = attn_flops(&diag) / R;
  const double kv_bytes = 33.0 * 2 * 16 * sizeof(float);
  for (int slow = 0; slow <= 1; slow++)
    for (int cores = 0; cores <= 1; cores++) {
      const double beta = slow ? kv_bytes / (10 * (2 * d + f)) : 1e12;  // slow: t_msg dominates
      const cp_model_in in = {.strategy = CP_ZIGZAG,
                              .whole = w,
                              .ranks = 2,
                              .flops_per_s = R,
                              .latency_s = alpha,
                              .bytes_per_s = beta,
                              .threads = 1,
                              .cores = cores};
      const double share = cores ? 2.0 : 1.0, t_msg = alpha + kv_bytes / beta;
      const double want = fmax(share * (2 * d + f), t_msg) + share * 2 * f;
      double rc[2];
      const cp_model_out m = cp_model_predict(&in, rc);
      EXPECT(fabs(m.total_s / want - 1) < 1e-12, "slow %d cores %d: model %.17g, formula %.17g",
             slow, cores, m.total_s, want);
      EXPECT(fabs(rc[0] / (share * (2 * d + 3 * f)) - 1) < 1e-12, "rank 0 compute %.17g", rc[0]);
      EXPECT(fabs(m.comm_s - fmax(0, t_msg - share * (2 * d + f))) < 1e-15, "comm %.17g", m.comm_s);
      // calibrating on the time each rank ran (its work, 2d + 3f, shared or not) gives
      // back the rate; the shared wall times would not
      const double run[2] = {2 * d + 3 * f, 2 * d + 3 * f};
      EXPECT(fabs(cp_model_calibrate(&in, run) / R - 1) < 1e-12, "calibrated %.17g",
             cp_model_calibrate(&in, run));
    }
}

// The contiguous causal ring on 2 ranks (S = 64, halves of 32): step 0 each rank its own
// diagonal block d; step 1 rank 1 the full block f, rank 0 nothing (it waits f). The time
// is d + f. Rank 0 may lose its core for part of its slack without changing the time; its
// run time stays d, so the rate and the prediction stay right. Calibrating on its wall
// time instead (d + f/2 here) would lower the rate and raise the prediction by the ratio
// of the sums, (2d + 1.5f) / (2d + f).
static void test_model_calibrate_ring(void) {
  const double R = 5e9;
  const attn_problem w = attn_problem_make(1, 2, 2, 64, 64, 16, 16, true);
  const attn_problem full = attn_problem_make(1, 2, 2, 32, 32, 16, 16, false);
  const attn_problem diag = attn_problem_make(1, 2, 2, 32, 32, 16, 16, true);
  const double f = attn_flops(&full) / R, d = attn_flops(&diag) / R;
  cp_model_in in = {.strategy = CP_RING,
                    .whole = w,
                    .ranks = 2,
                    .latency_s = 0,
                    .bytes_per_s = 1e30,
                    .threads = 1,
                    .cores = 2};
  const double run[2] = {d, d + f}, wall[2] = {d + f / 2, d + f};
  in.flops_per_s = cp_model_calibrate(&in, run);
  EXPECT(fabs(in.flops_per_s / R - 1) < 1e-12, "ring: rate %.17g, want %.17g", in.flops_per_s, R);
  EXPECT(fabs(cp_model_predict(&in, NULL).total_s / (d + f) - 1) < 1e-12, "ring: time %.17g",
         cp_model_predict(&in, NULL).total_s);
  in.flops_per_s = cp_model_calibrate(&in, wall);
  const double up = (2 * d + 1.5 * f) / (2 * d + f);
  EXPECT(fabs(cp_model_predict(&in, NULL).total_s / ((d + f) * up) - 1) < 1e-12,
         "ring on wall times: %.17g, want %.17g", cp_model_predict(&in, NULL).total_s,
         (d + f) * up);
}

// The collectives' local copies: allgather writes all S rows of K and V twice into new
// buffers, Ulysses a rank's share (the largest shard + 1 row) of Q, K, V and O three times;
// at γ bytes/s that adds exactly bytes/γ to the prediction.
static void test_model_copies(void) {
  const attn_problem w = attn_problem_make(1, 4, 2, 96, 96, 16, 8, true);
  const double kv_row = 2.0 * (16 + 8) * sizeof(float), q_row = 4.0 * (16 + 8) * sizeof(float);
  const double gamma = 1e8, want[2] = {2.0 * 96 * kv_row, 3.0 * (48 + 1) * (q_row + kv_row)};
  const cp_strategy st[2] = {CP_ALLGATHER, CP_ULYSSES};
  for (int i = 0; i < 2; i++) {
    cp_model_in in = {.strategy = st[i],
                      .whole = w,
                      .ranks = 2,
                      .flops_per_s = 1e9,
                      .latency_s = 1e-6,
                      .bytes_per_s = 1e9,
                      .threads = 1};
    const double base = cp_model_predict(&in, NULL).total_s;
    in.copy_bytes_per_s = gamma;
    const double with = cp_model_predict(&in, NULL).total_s;
    EXPECT(fabs((with - base) / (want[i] / gamma) - 1) < 1e-9, "%s: copies add %.17g, want %.17g",
           cp_strategy_name(st[i]), with - base, want[i] / gamma);
  }
}

// Ulysses with a K/V group split across ranks: H 4, KVH 1 on 4 ranks sends the one K/V head to
// every rank, so the model's bytes count four K/V copies, not one.
static void test_model_ulysses_gqa(void) {
  const attn_problem w = attn_problem_make(1, 4, 1, 64, 64, 16, 16, false);
  const cp_model_in in = {.strategy = CP_ULYSSES,
                          .whole = w,
                          .ranks = 4,
                          .flops_per_s = 1e9,
                          .latency_s = 0.0,
                          .bytes_per_s = 1e9,
                          .threads = 1};
  const double q_row = 4.0 * (16 + 16) * 4, kv_row = 4.0 * (16 + 16) * 4 /* copies */;
  const double want = (16 + 1) * (q_row + kv_row) * 3.0 / 4.0 / 1e9;
  const double got = cp_model_predict(&in, NULL).comm_s;
  EXPECT(fabs(got / want - 1) < 1e-12, "ulysses GQA comm %.17g, want %.17g", got, want);
}

int main(void) {
  test_shards();
  test_pairs_exact();
  test_balance();
  test_merge();
  test_model();
  test_share();
  test_model_formula();
  test_model_calibrate_ring();
  test_model_copies();
  test_model_ulysses_gqa();
  return test_finish("test_cp_plan");
}
