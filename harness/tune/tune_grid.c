// SPDX-License-Identifier: MIT
// tune_grid.c — see tune_grid.h.
#include "tune/tune_grid.h"

#include <math.h>
#include <stdbool.h>
#include <string.h>

#include "flash/flash_plan.h"  // the default split of flash__* (kv_split candidates)
#include "tune/tunefile.h"     // attn_tune_round_tile

int attn_tune_tile_candidates(const attn_kernel *k, const attn_problem *p, int rq, int rkv,
                              int cq[ATTN_TUNE_MAX_CANDIDATES], int ckv[ATTN_TUNE_MAX_CANDIDATES]) {
  const int sq = k->qk_rows > k->pv_rows ? k->qk_rows : k->pv_rows;
  const int step_q = sq > 0 ? sq : 8, step_kv = k->qk_cols > 0 ? k->qk_cols : 32;
  int n = 0;
  cq[n] = rq, ckv[n] = rkv, n++;  // exactly the default's tiles, as run/bench would use them
  static const int fq[] = {2, 4, 6, 8}, fkv[] = {2, 4, 8};  // quarters: 1/2, 1, 3/2, 2
  for (size_t i = 0; i < sizeof fq / sizeof fq[0]; i++)
    for (size_t j = 0; j < sizeof fkv / sizeof fkv[0]; j++) {
      const int q = attn_tune_round_tile((int64_t)rq * fq[i] / 4, step_q, p->seq_q);
      const int kv = attn_tune_round_tile((int64_t)rkv * fkv[j] / 4, step_kv, p->seq_kv);
      bool dup = false;
      for (int m = 0; m < n; m++) {
        // the rule's own tiles may not be register-tile multiples: compare clamped sizes
        const int mq = cq[m] < p->seq_q ? cq[m] : (int)p->seq_q;
        const int mkv = ckv[m] < p->seq_kv ? ckv[m] : (int)p->seq_kv;
        const int qq = q < p->seq_q ? q : (int)p->seq_q;
        const int kk = kv < p->seq_kv ? kv : (int)p->seq_kv;
        dup |= mq == qq && mkv == kk;
      }
      if (!dup && n < ATTN_TUNE_MAX_CANDIDATES) cq[n] = q, ckv[n] = kv, n++;
    }
  // Nearest to the rule first (|log2 q/r_q| + |log2 kv/r_kv|), so a short budget tries
  // the neighbours of the rule's choice before the corners of the grid.
  double dist[ATTN_TUNE_MAX_CANDIDATES];
  for (int i = 0; i < n; i++)
    dist[i] = fabs(log2((double)cq[i] / rq)) + fabs(log2((double)ckv[i] / rkv));
  for (int i = 2; i < n; i++)  // insertion sort of [1, n); [0] stays the rule
    for (int j = i; j > 1 && dist[j] < dist[j - 1]; j--) {
      const double td = dist[j];
      const int tq = cq[j], tkv = ckv[j];
      dist[j] = dist[j - 1], cq[j] = cq[j - 1], ckv[j] = ckv[j - 1];
      dist[j - 1] = td, cq[j - 1] = tq, ckv[j - 1] = tkv;
    }
  return n;
}

int attn_tune_kv_split_candidates(const attn_kernel *k, const attn_problem *p, const attn_exec *ex,
                                  int out[8]) {
  int d = 8;  // a kernel whose split rule is not flash_plan.h's
  if (!strncmp(k->name, "flash__", 7) && k->vec_width > 0 && k->qk_cols > 0) {
    flash_plan pl;
    const attn_exec e0 = {.tile_q = ex->tile_q, .tile_kv = ex->tile_kv};
    flash_plan_make(p, &e0, k->vec_width, k->qk_cols, &pl);
    d = (int)(pl.nsplit < ATTN_MAX_KV_SPLIT ? pl.nsplit : ATTN_MAX_KV_SPLIT);
  }
  const int64_t want[] = {1, d / 4, d / 2, 2 * (int64_t)d, 4 * (int64_t)d};
  int n = 0;
  for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
    const int64_t v = want[i];
    if (v < 1 || v > ATTN_MAX_KV_SPLIT || v == d) continue;
    bool dup = false;
    for (int j = 0; j < n; j++) dup |= out[j] == v;
    if (!dup) out[n++] = (int)v;
  }
  return n;
}
