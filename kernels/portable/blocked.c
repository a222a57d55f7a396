// SPDX-License-Identifier: MIT
// blocked — float32, cache-blocked over query tiles (tile_q rows) and key tiles
// (tile_kv rows), plain C. A query tile's running softmax state stays resident while
// key/value tiles stream past it (online softmax, Milakov & Gimelshein 2018):
//     m' = max(m, max_j s_j)               running row maximum
//     α  = exp(m − m')                     rescales what was accumulated under m
//     l' = α·l + Σ_j exp(s_j − m')         running normaliser
//     acc' = α·acc + Σ_j exp(s_j − m')·v_j
// and o = acc / l after the last tile. Key tiles that no row of the query tile can see
// (causal, window: outside the band of attn_row_keys) are skipped. Every option of attn.h
// is native: scores pass through attn_score_finish, a sink is added to l at the end
// (attn_denominator), LSE = m + log l. K and V of any type are read natively: each key tile
// of K and V is converted (exactly, core/convert.h) to float32 once per query tile. This
// is also the shared portable fallback path (attn_kernel_run) for kernels without an
// option natively.
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "core/attn_internal.h"
#include "core/convert.h"
#include "core/tiles.h"

// Tiles from exec, or the one tile rule (core/tiles.h) where exec leaves them 0, clamped
// to the problem: no tile is larger than seq_q rows or seq_kv keys, so the workspace never
// exceeds what the problem itself needs.
static void tiles(const attn_problem *p, const attn_exec *exec, int64_t *tq, int64_t *tkv) {
  int rq = 0, rkv = 0;
  attn_tiles_resolve(p, exec, &rq, &rkv);
  *tq = rq;
  *tkv = rkv;
  if (*tq > p->seq_q) *tq = p->seq_q;
  if (*tkv > p->seq_kv) *tkv = p->seq_kv;
}

static size_t blocked_workspace(const attn_problem *p, const attn_exec *exec) {
  int64_t tq, tkv;
  tiles(p, exec, &tq, &tkv);
  // S[tq][tkv], m[tq], l[tq], acc[tq][dv]; a converted K/V tile [tkv][dqk + dv] unless F32
  size_t floats = attn_size_add_sat(attn_size_add_sat(attn_size_mul_sat((size_t)tq, (size_t)tkv),
                                                      attn_size_mul_sat(2, (size_t)tq)),
                                    attn_size_mul_sat((size_t)tq, (size_t)p->head_dim_v));
  if (p->kv_dtype != ATTN_DTYPE_F32)
    floats = attn_size_add_sat(
        floats, attn_size_mul_sat((size_t)tkv, (size_t)(p->head_dim_qk + p->head_dim_v)));
  return attn_size_mul_sat(floats, sizeof(float));
}

static int blocked_run(const attn_problem *p, const attn_exec *exec, const float *q, const void *k,
                       const void *v, float *o, void *workspace) {
  ATTN_ASSERT_PRECONDITIONS(p, q, k, v, o);
  const attn_dtype type = p->kv_dtype;
  int64_t TQ, TKV;
  tiles(p, exec, &TQ, &TKV);
  attn_fp_env env = attn_fp_env_enter();
  float *S = workspace;
  float *m = S + TQ * TKV;
  float *l = m + TQ;
  float *acc = l + TQ;
  const int64_t dqk = p->head_dim_qk, dv = p->head_dim_v;
  float *ktile = NULL, *vtile = NULL;  // the converted K/V tiles (not F32)
  if (type != ATTN_DTYPE_F32) ktile = acc + TQ * dv, vtile = ktile + TKV * dqk;
  const size_t krow_bytes = attn_kv_row_bytes(type, dqk), vrow_bytes = attn_kv_row_bytes(type, dv);
  const float scale = p->scale;

  for (int64_t b = 0; b < p->batch; b++) {
    for (int64_t h = 0; h < p->heads; h++) {
      const attn_head_view hd = attn_head_at(p, q, k, v, o, b, h);
      const char *kh = hd.k, *vh = hd.v;  // K/V rows by their byte size
      const attn_head_opts ho = attn_head_opts_of(p, b, h);
      for (int64_t i0 = 0; i0 < p->seq_q; i0 += TQ) {
        const int64_t nq = (p->seq_q - i0 < TQ) ? p->seq_q - i0 : TQ;
        for (int64_t r = 0; r < nq; r++) {
          m[r] = -INFINITY;
          l[r] = 0.0f;
        }
        memset(acc, 0, (size_t)(nq * dv) * sizeof *acc);
        // Key ranges move right with the row: the first row starts the tile's band,
        // the last row ends it; nothing outside [kv_begin, kv_end) is read.
        int64_t kv_begin, kv_end, unused;
        attn_row_keys(p, i0, &kv_begin, &unused);
        attn_row_keys(p, i0 + nq - 1, &unused, &kv_end);
        if (kv_end < kv_begin) kv_end = kv_begin;
        for (int64_t j0 = kv_begin; j0 < kv_end; j0 += TKV) {
          const int64_t nk = (kv_end - j0 < TKV) ? kv_end - j0 : TKV;
          // K and V rows [j0, j0 + nk) as float32: in place, or converted into the tiles
          const char *ks = kh + (size_t)j0 * krow_bytes, *vs = vh + (size_t)j0 * vrow_bytes;
          const float *kt = ktile, *vt = vtile;
          if (type == ATTN_DTYPE_F32) {
            kt = (const float *)ks, vt = (const float *)vs;
          } else {
            attn_dequantize_rows(type, ks, (size_t)nk, dqk, ktile);
            attn_dequantize_rows(type, vs, (size_t)nk, dv, vtile);
          }
          // S = scale · Q_tile · K_tileᵀ, masked entries = −∞
          for (int64_t r = 0; r < nq; r++) {
            const float *qrow = hd.q + (i0 + r) * dqk;
            int64_t lo, hi;  // keys row r sees: columns [lo − j0, hi − j0) of this tile
            attn_row_keys(p, i0 + r, &lo, &hi);
            const int64_t c_lo = lo - j0 > 0 ? (lo - j0 < nk ? lo - j0 : nk) : 0;
            const int64_t c_hi = hi - j0 < nk ? (hi - j0 > c_lo ? hi - j0 : c_lo) : nk;
            for (int64_t c = 0; c < c_lo; c++) S[r * TKV + c] = -INFINITY;
            for (int64_t c = c_hi; c < nk; c++) S[r * TKV + c] = -INFINITY;
            for (int64_t c = c_lo; c < c_hi; c++) {
              const int64_t j = j0 + c;
              float dot = 0.0f;
              const float *krow = kt + c * dqk;
              for (int64_t d = 0; d < dqk; d++) dot += qrow[d] * krow[d];
              S[r * TKV + c] =
                  ho.finish ? attn_score_finish(&ho, dot * scale, i0 + r, j) : dot * scale;
            }
          }
          // online softmax update and acc += P · V_tile
          for (int64_t r = 0; r < nq; r++) {
            float *srow = S + r * TKV;
            float tile_max = -INFINITY;
            for (int64_t c = 0; c < nk; c++) tile_max = fmaxf(tile_max, srow[c]);
            if (tile_max == -INFINITY) continue;  // row sees nothing in this tile
            const float m_new = fmaxf(m[r], tile_max);
            const float alpha = expf(m[r] - m_new);  // exp(−∞) = 0 on the first tile
            float sum = 0.0f;
            for (int64_t c = 0; c < nk; c++) {
              srow[c] = expf(srow[c] - m_new);
              sum += srow[c];
            }
            l[r] = alpha * l[r] + sum;
            m[r] = m_new;
            float *arow = acc + r * dv;
            for (int64_t d = 0; d < dv; d++) arow[d] *= alpha;
            for (int64_t c = 0; c < nk; c++) {
              const float pc = srow[c];
              const float *vrow = vt + c * dv;
              for (int64_t d = 0; d < dv; d++) arow[d] += pc * vrow[d];
            }
          }
        }
        for (int64_t r = 0; r < nq; r++) {
          float *orow = hd.o + (i0 + r) * dv;
          if (ho.lse) ho.lse[i0 + r] = attn_row_lse(l[r], m[r]);
          // l == 0: no visible key; a sink joins the denominator (attn_denominator)
          const float inv = l[r] > 0.0f ? 1.0f / attn_denominator(&ho, l[r], m[r]) : 0.0f;
          for (int64_t d = 0; d < dv; d++) orow[d] = acc[r * dv + d] * inv;
        }
      }
    }
  }
  attn_fp_env_leave(env);
  return ATTN_OK;
}

const attn_kernel attn_kernel_blocked = {
    .name = "blocked",
    .summary =
        "float32 plain C, query x key cache tiles (tile_q/tile_kv: the tile rule), online softmax",
    .required_isa = 0,
    .caps = ATTN_CAP_ALL_SHAPES | ATTN_CAP_OPT_ALL | ATTN_CAP_KV_ALL,
    .workspace = blocked_workspace,
    .run = blocked_run,
    .vec_width = 1,  // scalar C, no register tile
};

// The shared portable path for problems with options a kernel lacks (attn_kernel_run):
// this kernel with its default tiles.
size_t attn_fallback_workspace(const attn_problem *p) {
  static const attn_exec kDefault = {0};
  return blocked_workspace(p, &kDefault);
}
int attn_fallback_run(const attn_problem *p, const float *q, const void *k, const void *v, float *o,
                      void *workspace) {
  static const attn_exec kDefault = {0};
  return blocked_run(p, &kDefault, q, k, v, o, workspace);
}
