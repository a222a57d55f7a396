// SPDX-License-Identifier: MIT
// The explicit diagonal offset (ATTN_ALIGN_OFFSET, attn.h "Alignment"): a problem cut into
// query chunks × key chunks, each chunk pair run with diag_offset = qo − ko and the partial
// outputs merged by log-sum-exp, gives the whole problem's output and LSE (within the
// checker's bound against the double reference of the whole problem) — for every kernel,
// under causal, a window, ALiBi, both, uneven chunk lengths. The same merge with offset 0
// (the chunks' top-left alignment) must fail: the checker sees a wrong chunk offset.
// Also: validation of the new alignment and its range, and which options it counts as used.
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "attn.h"
#include "check/check.h"
#include "test_util.h"

typedef struct chunking {
  int n;          // chunks
  int64_t at[5];  // chunk c covers [at[c], at[c + 1])
} chunking;

// Copies rows [r0, r0 + n) of every (batch, head) of a [bh][rows][width] float tensor.
static void slice(const float *src, int64_t bh, int64_t rows, int64_t width, int64_t r0, int64_t n,
                  float *dst) {
  for (int64_t x = 0; x < bh; x++)
    memcpy(dst + (size_t)(x * n * width), src + (size_t)((x * rows + r0) * width),
           (size_t)(n * width) * sizeof(float));
}

// Runs the whole problem as chunk pairs on kernel k and merges; wrong_offset uses off = 0
// for every pair. Writes o [B·H][S][Dv] and lse [B·H][S]. Returns false on a kernel error.
static bool run_chunked(const attn_kernel *k, const attn_problem *whole, const float *q,
                        const float *kk, const float *v, const chunking *ch, bool wrong_offset,
                        float *o, float *lse) {
  const int64_t bh = whole->batch * whole->heads, bkv = whole->batch * whole->kv_heads;
  const int64_t S = whole->seq_q, D = whole->head_dim_qk, Dv = whole->head_dim_v;
  double *acc = calloc((size_t)(bh * S * Dv), sizeof(double));
  double *l = malloc((size_t)(bh * S) * sizeof(double));
  for (int64_t i = 0; i < bh * S; i++) l[i] = -INFINITY;
  bool ok = true;
  for (int qc = 0; qc < ch->n && ok; qc++) {
    const int64_t qo = ch->at[qc], lq = ch->at[qc + 1] - qo;
    float *qs = malloc((size_t)(bh * lq * D) * sizeof(float));
    float *os = malloc((size_t)(bh * lq * Dv) * sizeof(float));
    float *ls = malloc((size_t)(bh * lq) * sizeof(float));
    slice(q, bh, S, D, qo, lq, qs);
    for (int kc = 0; kc < ch->n && ok; kc++) {
      const int64_t ko = ch->at[kc], lk = ch->at[kc + 1] - ko;
      float *ks = malloc((size_t)(bkv * lk * D) * sizeof(float));
      float *vs = malloc((size_t)(bkv * lk * Dv) * sizeof(float));
      slice(kk, bkv, S, D, ko, lk, ks);
      slice(v, bkv, S, Dv, ko, lk, vs);
      attn_options opt = *whole->opts;
      opt.align = ATTN_ALIGN_OFFSET;
      opt.diag_offset = wrong_offset ? 0 : qo - ko;
      opt.lse = ls;
      attn_problem p = *whole;
      p.seq_q = lq;
      p.seq_kv = lk;
      p.opts = &opt;
      char err[256];
      const attn_exec ex = {.threads = 2};
      if (attn_kernel_call(k, &p, &ex, qs, ks, vs, os, err, sizeof err) != ATTN_OK) {
        EXPECT(false, "%s: %s", k->name, err);
        ok = false;
      }
      for (int64_t x = 0; ok && x < bh; x++)
        for (int64_t r = 0; r < lq; r++) {  // O ← (e^L·O + e^l·o) / (e^L + e^l), L ← log(…)
          const double lp = ls[x * lq + r];
          double *L = &l[x * S + qo + r], *a = acc + (size_t)((x * S + qo + r) * Dv);
          if (lp == -INFINITY) continue;
          const double m = *L > lp ? *L : lp, wa = exp(*L - m), wb = exp(lp - m);
          for (int64_t d = 0; d < Dv; d++)
            a[d] = (wa * a[d] + wb * os[(x * lq + r) * Dv + d]) / (wa + wb);
          *L = m + log(wa + wb);
        }
      free(ks);
      free(vs);
    }
    free(qs);
    free(os);
    free(ls);
  }
  for (int64_t i = 0; i < bh * S * Dv; i++) o[i] = (float)acc[i];
  for (int64_t i = 0; i < bh * S; i++) lse[i] = (float)l[i];
  free(acc);
  free(l);
  return ok;
}

static void test_chunks(void) {
  static const chunking kChunks[] = {
      {2, {0, 35, 70}}, {3, {0, 23, 47, 70}}, {4, {0, 9, 35, 36, 70}}};
  typedef struct variant {
    bool causal, window, alibi;
  } variant;
  static const variant kVariants[] = {
      {true, false, false}, {true, true, false}, {true, false, true},
      {false, true, true},  {true, true, true},
  };
  int wrong_caught = 0, wrong_runs = 0;
  for (size_t vi = 0; vi < sizeof kVariants / sizeof kVariants[0]; vi++) {
    const variant *va = &kVariants[vi];
    attn_problem p = attn_problem_make(1, 4, 2, 70, 70, 32, 24, va->causal);
    float lse_store[4 * 70];
    attn_options opt = {.window = va->window,
                        .window_left = 11,
                        .window_right = va->causal ? 0 : 6,
                        .alibi_max_bias = va->alibi ? 8.0f : 0.0f,
                        .lse = lse_store};
    p.opts = &opt;
    const size_t nq = attn_q_elems(&p), nk = attn_k_elems(&p), nv = attn_v_elems(&p);
    float *q = malloc(nq * sizeof(float)), *kk = malloc(nk * sizeof(float));
    float *v = malloc(nv * sizeof(float)), *o = malloc(attn_o_elems(&p) * sizeof(float));
    float *lse = malloc(4 * 70 * sizeof(float));
    const attn_check_case cs = {.problem = p, .dist = ATTN_DIST_NORMAL, .seed = 77 + vi};
    attn_check_fill(&cs, q, kk, v);
    char err[256];
    attn_check_prepared *pc = attn_check_prepare_inputs(&p, q, kk, v, err, sizeof err);
    EXPECT(pc != NULL, "prepare: %s", err);
    for (size_t ki = 0; pc && ki < attn_kernel_count(); ki++) {
      const attn_kernel *k = attn_kernel_at(ki);
      if (!attn_kernel_available(k, NULL, 0)) continue;
      for (size_t c = 0; c < sizeof kChunks / sizeof kChunks[0]; c++) {
        attn_check_result r;
        if (!run_chunked(k, &p, q, kk, v, &kChunks[c], false, o, lse)) continue;
        EXPECT(attn_check_output_lse(pc, o, lse, &r), "%s variant %zu, %d chunks: %s", k->name, vi,
               kChunks[c].n, r.message);
        if (c == 1 && run_chunked(k, &p, q, kk, v, &kChunks[c], true, o, lse)) {
          wrong_runs++;
          wrong_caught += !attn_check_output_lse(pc, o, lse, &r);
        }
      }
    }
    attn_check_prepared_free(pc);
    free(q), free(kk), free(v), free(o), free(lse);
  }
  EXPECT(wrong_runs > 0 && wrong_caught == wrong_runs,
         "a wrong chunk offset (0) passed the checker in %d of %d runs", wrong_runs - wrong_caught,
         wrong_runs);
}

static void test_validation(void) {
  attn_problem p = attn_problem_make(1, 2, 2, 8, 12, 16, 16, true);
  attn_options o = {.align = ATTN_ALIGN_OFFSET, .diag_offset = ATTN_DIAG_OFFSET_MAX};
  p.opts = &o;
  char err[256];
  EXPECT(attn_problem_validate(&p, err, sizeof err), "2^60 refused: %s", err);
  o.diag_offset = -ATTN_DIAG_OFFSET_MAX;
  EXPECT(attn_problem_validate(&p, err, sizeof err), "-2^60 refused: %s", err);
  o.diag_offset = ATTN_DIAG_OFFSET_MAX + 1;
  EXPECT(!attn_problem_validate(&p, err, sizeof err) && strstr(err, "diag_offset"),
         "2^60 + 1 accepted or unclear: %s", err);
  o.diag_offset = INT64_MIN;
  EXPECT(!attn_problem_validate(&p, err, sizeof err), "INT64_MIN accepted");
  o.align = (attn_align)3;
  EXPECT(!attn_problem_validate(&p, err, sizeof err) && strstr(err, "offset (2)"),
         "align 3 accepted or unclear: %s", err);
  // options used: an offset equal to bottom-right's, or with nothing it places, is no option
  o.align = ATTN_ALIGN_OFFSET;
  o.diag_offset = 4;  // seq_kv − seq_q
  EXPECT(!(attn_problem_options_used(&p) & ATTN_CAP_OPT_OFFSET), "bottom-right offset counted");
  EXPECT(attn_diag_offset(&p) == 4, "diag offset %lld", (long long)attn_diag_offset(&p));
  o.diag_offset = -3;
  EXPECT(attn_problem_options_used(&p) & ATTN_CAP_OPT_OFFSET, "offset -3 not counted");
  EXPECT(attn_diag_offset(&p) == -3, "diag offset %lld", (long long)attn_diag_offset(&p));
  int64_t lo, hi;
  attn_row_keys(&p, 5, &lo, &hi);  // row 5 sees keys j <= 5 − 3 = 2
  EXPECT(lo == 0 && hi == 3, "row 5 with offset -3 sees [%lld, %lld)", (long long)lo,
         (long long)hi);
  attn_row_keys(&p, 1, &lo, &hi);
  EXPECT(lo == 0 && hi == 0, "row 1 with offset -3 sees [%lld, %lld)", (long long)lo,
         (long long)hi);
  p.causal = false;
  EXPECT(!(attn_problem_options_used(&p) & ATTN_CAP_OPT_OFFSET), "offset without mask counted");
  char names[128];
  EXPECT(strcmp(attn_option_names(ATTN_CAP_OPT_OFFSET, names, sizeof names), "offset") == 0,
         "name %s", names);
}

int main(void) {
  test_validation();
  test_chunks();
  return test_finish("test_diag_offset");
}
