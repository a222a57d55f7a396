// SPDX-License-Identifier: MIT
// flash_decode_lanes.h — the second of the flash kernels' two decode paths (the first,
// and how flash_body.h picks between them: flash_decode_rows.h): tasks of
// FL_RV_W..FL_LANES_MAX_ROWS rows (MQA/GQA decode) with the rows in vector lanes (fl_lanes).
// It keeps the online-softmax state (m, l, acc) of the FA2 loop and gives the same result
// contract as the tiled pass (acc, m, l per row; l = 0: no key seen).
// Included by flash_body.h only, after flash_decode_rows.h.
#pragma once

#include <float.h>
#include <string.h>

#include "flash/flash_opts.h"
#include "flash/flash_tiles.h"
#include "simd/kv_widen.h"

// ── Decode rows in vector lanes: FL_RV_W ≤ rows ≤ FL_LANES_MAX_ROWS (MQA / GQA decode) ──
// The heads of one K/V group at one position (MQA decode: 8 rows) share every K and V
// row. The tiled path packs K̂ᵀ per tile, and at 8 rows that transpose costs about a fifth
// of the task; the fused path's per-row dot products end in one horizontal sum per row
// and key. Here Q̂ is transposed instead, once per task (Q̂ᵀ[d][r], R = rows rounded up to
// whole row vectors of FL_RV_W lanes, padding rows 0), and K is read in place:
//   Sᵀ[c][·] = Σ_d K[c][d] · Q̂ᵀ[d][·]       one broadcast K element × one row vector
// FL_DEC_NK keys at a time (their accumulators stay in registers). The online softmax
// then runs lane-wise on Sᵀ (row r lives in lane r of every key's R floats: maxima and
// sums need no horizontal reductions), and P·V reads P̂ᵀ with column stride R. Each
// row's arithmetic is fixed by the shape alone (block boundaries, key order).
// The row vector (FL_RV_W lanes, fl_rv_t and fl_rv_zero/load/store/fma_bcast) is the ISA
// file's: vf_t itself (flash/flash_rv_vf.h) or a narrower one (flash_avx512.h: 8-lane
// __m256, so 8 rows fill one vector). So are FL_DEC_BLOCK, the keys per online-softmax
// block (and the prefetch distance), and FL_LANES_MAX_ROWS, the most rows this path takes
// (at most two row vectors; an ISA file may stop earlier).
#define FL_DEC_NK 8  // keys whose score row vectors are accumulated at once (one row vector)
#define FL_LANES_MAX_R (2 * FL_RV_W)
_Static_assert(FL_DEC_BLOCK <= FL_OPTS_MAX_KEYS, "fl_fin_lanes: a decode block's keys");
#if FL_LANES_MAX_ROWS < FL_RV_W || FL_LANES_MAX_ROWS > FL_LANES_MAX_R
#error "FL_LANES_MAX_ROWS: between FL_RV_W and 2·FL_RV_W"
#endif
// Q̂ᵀ (dqk × R floats) lives in the task's K̂ᵀ scratch (dqk × tkv, tkv ≥ FL_QK_NV·VF_W).
_Static_assert(FL_QK_NV *VF_W >= FL_LANES_MAX_R, "fl_lanes: Q̂ᵀ does not fit the K̂ᵀ scratch");
#define FL_LANES_W (FL_LANES_MAX_R > VF_W ? FL_LANES_MAX_R : VF_W)

// Sᵀ[c][x·FL_RV_W ..] for keys c < nk (nk ≤ FL_DEC_NK / nrv), row vectors x < nrv.
FL_INLINE void fl_lanes_qk_micro(int nrv, int nk, const float *qt, int64_t R, const float *k,
                                 int64_t dqk, float *st, vk_pf *pf) {
  fl_rv_t s[2][FL_DEC_NK];
#pragma GCC unroll 2
  for (int x = 0; x < nrv; x++)
#pragma GCC unroll 16
    for (int c = 0; c < nk; c++) s[x][c] = fl_rv_zero();
  for (int64_t d = 0; d < dqk; d++) {
    const fl_rv_t q0 = fl_rv_load(qt + d * R);
    const fl_rv_t q1 = nrv > 1 ? fl_rv_load(qt + d * R + FL_RV_W) : q0;
    if ((d & 3) == 3) vk_pf_step_l2(pf);
#pragma GCC unroll 16
    for (int c = 0; c < nk; c++) {
      s[0][c] = fl_rv_fma_bcast(k + c * dqk + d, q0, s[0][c]);
      if (nrv > 1) s[1][c] = fl_rv_fma_bcast(k + c * dqk + d, q1, s[1][c]);
    }
  }
#pragma GCC unroll 2
  for (int x = 0; x < nrv; x++)
#pragma GCC unroll 16
    for (int c = 0; c < nk; c++) fl_rv_store(st + c * R + x * FL_RV_W, s[x][c]);
}

// AVX-512 with 8-row vectors: Sᵀ from head_dim pairs (FL_LANES_PAIRS). One zmm holds the
// 8 rows twice, lane 2r + j = row r at the even (j = 0) or odd (j = 1) element of a pair:
//   Q̂ᵀ₂[d/2][2r + j] = Q̂[r][d + j]          (d even; built once per task)
//   a_c[2r + j] += K[c][d + j] · Q̂ᵀ₂[d/2][2r + j]   one 64-bit broadcast of K[c][d..d+1]
// so one broadcast and one 16-lane FMA do the work of two 8-lane ones (half the loads and
// µops per flop of fl_lanes_qk_micro), and Sᵀ[c][r] = a_c[2r] + a_c[2r + 1]: the even and
// the odd elements each summed in d order, then added (fixed by the shape). Used when
// head_dim is even (a pair never reads past a K row); odd head_dim takes fl_lanes_qk_micro.
#if defined(__AVX512F__) && FL_RV_W == 8 && FL_LANES_MAX_ROWS == 8
#define FL_LANES_PAIRS 1
#define FL_LANES_PAIR_NK 16  // keys per call: 16 accumulators of 32 zmm registers
// The Sᵀ rows of keys c, c + 1 (accumulators a, b): a's rows 0–7, then b's rows 0–7.
FL_INLINE __m512 fl_lanes_pair_sums(__m512 a, __m512 b) {
  // Per 128-bit lane L (rows 2L, 2L + 1): [a r2L, a r2L+1, b r2L, b r2L+1] ...
  const __m512 z = _mm512_add_ps(_mm512_shuffle_ps(a, b, 0x88), _mm512_shuffle_ps(a, b, 0xDD));
  // ... then the 64-bit pairs of a before those of b.
  const __m512i ix = _mm512_set_epi64(7, 5, 3, 1, 6, 4, 2, 0);
  return _mm512_castpd_ps(_mm512_permutexvar_pd(ix, _mm512_castps_pd(z)));
}
// Sᵀ[c][0..8) and Sᵀ[c + 1][0..8) into st[0 .. 16); one key (a alone) into st[0 .. 8).
FL_INLINE void fl_lanes_pair_store2(__m512 a, __m512 b, float *st) {
  _mm512_storeu_ps(st, fl_lanes_pair_sums(a, b));
}
FL_INLINE void fl_lanes_pair_store1(__m512 a, float *st) {
  _mm256_storeu_ps(st, _mm512_castps512_ps256(fl_lanes_pair_sums(a, a)));
}
// Sᵀ[c][0..8) for keys c < nk ≤ FL_LANES_PAIR_NK (K row c at k + c·dqk, dqk even).
FL_INLINE void fl_lanes_qk_pairs(int nk, const float *qt2, const float *k, int64_t dqk, float *st,
                                 vk_pf *pf) {
  __m512 a[FL_LANES_PAIR_NK];
#pragma GCC unroll 16
  for (int c = 0; c < nk; c++) a[c] = _mm512_setzero_ps();
  for (int64_t d = 0; d < dqk; d += 2) {
    const __m512 q = _mm512_loadu_ps(qt2 + d * 8);
    vk_pf_step_l2(pf);  // 2 lines per 16 keys × 2 elements: fl_lanes_qk_micro's rate
#pragma GCC unroll 16
    for (int c = 0; c < nk; c++) {
      double kk;
      memcpy(&kk, k + c * dqk + d, sizeof kk);  // K[c][d], K[c][d + 1]
      a[c] = _mm512_fmadd_ps(_mm512_castpd_ps(_mm512_set1_pd(kk)), q, a[c]);
    }
  }
  int c = 0;
#pragma GCC unroll 8
  for (; c + 2 <= nk; c += 2) fl_lanes_pair_store2(a[c], a[c + 1], st + c * 8);
  if (c < nk) fl_lanes_pair_store1(a[c], st + c * 8);
}
#elif defined(__AVX2__) && !defined(__AVX512F__)
// AVX2: the 16 lanes of a pair are two ymm (rows 0–3 and 4–7), so each 64-bit broadcast
// feeds two 8-lane FMAs (one per ymm FMA before); 6 keys: 12 accumulators, 2 Q̂ᵀ₂ halves
// and the broadcast in 16 registers.
#define FL_LANES_PAIRS 1
#define FL_LANES_PAIR_NK 6
// Sᵀ[c][0..8) of one key from its halves a (rows 0–3) and b (rows 4–7): per 128-bit lane
// the adjacent sums [r0 r1 r4 r5 | r2 r3 r6 r7], then the 64-bit pairs in row order.
FL_INLINE void fl_lanes_pair_store1(__m256 a, __m256 b, float *st) {
  const __m256 z = _mm256_hadd_ps(a, b);
  _mm256_storeu_ps(st, _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(z), 0xD8)));
}
FL_INLINE void fl_lanes_qk_pairs(int nk, const float *qt2, const float *k, int64_t dqk, float *st,
                                 vk_pf *pf) {
  __m256 a[FL_LANES_PAIR_NK][2];
#pragma GCC unroll 8
  for (int c = 0; c < nk; c++) a[c][0] = a[c][1] = _mm256_setzero_ps();
  for (int64_t d = 0; d < dqk; d += 2) {
    const __m256 q0 = _mm256_loadu_ps(qt2 + d * 8), q1 = _mm256_loadu_ps(qt2 + d * 8 + 8);
    if ((d & 3) == 2) vk_pf_step_l2(pf);  // fl_lanes_qk_micro's rate per key and element
#pragma GCC unroll 8
    for (int c = 0; c < nk; c++) {
      double k2;
      memcpy(&k2, k + c * dqk + d, sizeof k2);  // K[c][d], K[c][d + 1]
      const __m256 kk = _mm256_castpd_ps(_mm256_set1_pd(k2));
      a[c][0] = _mm256_fmadd_ps(kk, q0, a[c][0]);
      a[c][1] = _mm256_fmadd_ps(kk, q1, a[c][1]);
    }
  }
#pragma GCC unroll 8
  for (int c = 0; c < nk; c++) fl_lanes_pair_store1(a[c][0], a[c][1], st + c * 8);
}
#else
#define FL_LANES_PAIRS 0
#endif

// The online-softmax update (see softmax.h) of one block, lane-wise: st holds Sᵀ[c][r]
// for c < nk, r < R, then −∞ up to n_flat (a multiple of VF_W); P̂ᵀ replaces it.
// m, l, alpha: R entries. A row that has seen no key yet subtracts 0 instead of its
// max −∞, so e^(−∞ − 0) = 0 gives P = 0, α = 0 on a zero acc and l = 0: never NaN.
// All in registers: vector i of st covers lanes (i·VF_W ..) mod R. R ≥ VF_W: R / VF_W
// phases, each vector's lanes distinct rows. R = VF_W / 2 (AVX-512, 8-lane row vectors):
// lanes j and j + R are row j; the block max and sum combine the two halves (max, and
// one add: the same value as the scalar sum 0 + s_j + s_{j+R}).
#if defined(__AVX512F__) && FL_RV_W == 8  // (VF_W is an enum: not usable in #if)
#define FL_LANES_HALF 1
#else
#define FL_LANES_HALF 0
#endif
#if FL_LANES_HALF
_Static_assert(2 * FL_RV_W == VF_W && FL_LANES_MAX_ROWS == FL_RV_W,
               "fl_lanes_softmax: rows fill one or two halves of a vector");
FL_INLINE vf_t fl_lanes_swap_halves(vf_t v) {
  return _mm512_shuffle_f32x4(v, v, 0x4E);
}
FL_INLINE vf_t fl_lanes_load_rep(const float *p) {  // p[0..R) in both halves
  const vf_t x = _mm512_castps256_ps512(_mm256_loadu_ps(p));
  return _mm512_shuffle_f32x4(x, x, 0x44);
}
#endif
// The wr ≤ VF_W lanes of v that are distinct rows.
FL_INLINE void fl_lanes_store_rows(float *p, vf_t v, int wr) {
  if (wr == VF_W)
    vf_store(p, v);
  else
    vf_store_partial(p, v, wr);
}
static void fl_lanes_softmax(float *st, int64_t n_flat, int64_t R, float *m, float *l,
                             float *alpha) {
  enum { NPH = FL_LANES_W / VF_W };
  const int nph = R > VF_W ? (int)(R / VF_W) : 1;
  const int wr = R < VF_W ? (int)R : VF_W;  // lanes of a phase that are distinct rows
  vf_t mx[NPH], ms[NPH], sum[NPH];
  for (int ph = 0; ph < nph; ph++) mx[ph] = vf_set1(-INFINITY), sum[ph] = vf_zero();
  for (int64_t x = 0, ph = 0; x < n_flat; x += VF_W, ph = ph + 1 == nph ? 0 : ph + 1)
    mx[ph] = vf_max(mx[ph], vf_load(st + x));
  for (int ph = 0; ph < nph; ph++) {
    vf_t mo;
#if FL_LANES_HALF
    if (R < VF_W) {
      mx[ph] = vf_max(mx[ph], fl_lanes_swap_halves(mx[ph]));
      mo = fl_lanes_load_rep(m);
    } else
#endif
      mo = vf_load(m + ph * VF_W);
    const vf_t mn = vf_max(mx[ph], mo);                  // m' = max(m, block max)
    ms[ph] = vf_select_lt(mn, -FLT_MAX, vf_zero(), mn);  // −∞ (no key yet): 0
    fl_lanes_store_rows(alpha + ph * VF_W, vf_exp(vf_sub(mo, ms[ph])), wr);  // α = e^(m − m')
    fl_lanes_store_rows(m + ph * VF_W, mn, wr);
  }
  for (int64_t x = 0, ph = 0; x < n_flat; x += VF_W, ph = ph + 1 == nph ? 0 : ph + 1) {
    const vf_t p = vf_exp(vf_sub(vf_load(st + x), ms[ph]));
    vf_store(st + x, p);
    sum[ph] = vf_add(sum[ph], p);
  }
  for (int ph = 0; ph < nph; ph++) {
    vf_t sm = sum[ph], lo, al;
#if FL_LANES_HALF
    if (R < VF_W) {
      sm = vf_add(sm, fl_lanes_swap_halves(sm));
      lo = fl_lanes_load_rep(l), al = fl_lanes_load_rep(alpha);
    } else
#endif
      lo = vf_load(l + ph * VF_W), al = vf_load(alpha + ph * VF_W);
    fl_lanes_store_rows(l + ph * VF_W, vf_add(vf_mul(al, lo), sm), wr);  // l' = α·l + Σ p
  }
}

// Rows [0, nrows) of a task over its keys [0, nkeys); row r sees keys [0, vis[r]).
// qt: dqk·R floats of scratch; vs: blk·dvp floats, used when dv is not whole vectors.
// K and V rows are kb, vb + key · krb, vrb bytes of type t; a type other than F32 is
// widened per block (K into kc, blk·dqk floats; V into vs, padded), exactly. fin (NULL:
// none) finishes each row's block scores (flash_opts.h); key 0 here is key kabs of the head.
FL_INLINE void fl_lanes_t(const attn_dtype t, int64_t nrows, const float *qs, int64_t dqk,
                          const char *kb, size_t krb, const char *vb, size_t vrb, int64_t dv,
                          int64_t dvp, int64_t nkeys, int64_t blk, const int32_t *vis, float *qt,
                          float *vs, float *kc, float *acc, float *m, float *l, const fl_fin *fin,
                          int64_t kabs) {
  const int nrv = nrows > FL_RV_W ? 2 : 1;
  const int64_t R = nrv * FL_RV_W;
  float st[FL_DEC_BLOCK * FL_LANES_MAX_R + VF_W] __attribute__((aligned(64)));
  float lm[FL_LANES_MAX_R], ll[FL_LANES_MAX_R], alpha[FL_LANES_MAX_R];
  int32_t bl[FL_LANES_MAX_R];
  if (blk > FL_DEC_BLOCK) blk = FL_DEC_BLOCK;
  const int pairs = FL_LANES_PAIRS && nrv == 1 && dqk % 2 == 0;
  // Q̂ᵀ[d][r], or with pairs Q̂ᵀ₂ (fl_lanes_qk_pairs): element d of row r at lane 2r + (d & 1)
  // of the pair's vector, (d & ~1)·R floats in.
  for (int64_t d = 0; d < dqk; d++)
    for (int64_t r = 0; r < R; r++)
      qt[pairs ? (d & ~1) * R + 2 * r + (d & 1) : d * R + r] = r < nrows ? qs[r * dqk + d] : 0.0f;
  int64_t vmin = nkeys;  // keys every row sees
  for (int64_t r = 0; r < nrows; r++) vmin = vis[r] < vmin ? vis[r] : vmin;
  for (int64_t r = 0; r < R; r++) lm[r] = -INFINITY, ll[r] = 0.0f;
  const int step = FL_DEC_NK / nrv;
  for (int64_t j0 = 0; j0 < nkeys; j0 += blk) {
    const int64_t nk = nkeys - j0 < blk ? nkeys - j0 : blk;
    const char *kjb = kb + (size_t)j0 * krb, *vjb = vb + (size_t)j0 * vrb;
    const float *kj = (const float *)kjb;
    if (t != ATTN_DTYPE_F32) {
      kv_widen_rows(t, kjb, krb, nk, dqk, kc, dqk, dqk);
      kj = kc;
    }
    // The next block's K and V, requested into L2 a little at a time: two lines per four
    // d steps of the Q·Kᵀ loop, then two per key step of the P·V loops (spread over the
    // block's whole compute time, not in a burst that fills the miss queue).
    const int64_t pj = j0 + blk;                             // first key of the next block
    const int64_t nn = nkeys - pj < blk ? nkeys - pj : blk;  // ≤ 0: nothing left
    vk_pf pf = vk_pf_rows(kb + (size_t)pj * krb, vb + (size_t)pj * vrb, nn, krb, vrb);
    int64_t c = 0;
#if FL_LANES_PAIRS
    if (pairs) {
      // head_dim 64 and 128 as constants: the K rows at fixed offsets from one pointer
      // (otherwise one pointer per key, more than the general registers)
      for (; c + FL_LANES_PAIR_NK <= nk; c += FL_LANES_PAIR_NK) {
        const float *kc0 = kj + c * dqk;
        float *sc = st + c * R;
        if (dqk == 128)
          fl_lanes_qk_pairs(FL_LANES_PAIR_NK, qt, kc0, 128, sc, &pf);
        else if (dqk == 64)
          fl_lanes_qk_pairs(FL_LANES_PAIR_NK, qt, kc0, 64, sc, &pf);
        else
          fl_lanes_qk_pairs(FL_LANES_PAIR_NK, qt, kc0, dqk, sc, &pf);
      }
      if (FL_LANES_PAIR_NK > 4 && c + 4 <= nk)  // AVX2's 64-key blocks: 10 × 6 + 4
        fl_lanes_qk_pairs(4, qt, kj + c * dqk, dqk, st + c * R, &pf), c += 4;
      for (; c + 2 <= nk; c += 2) fl_lanes_qk_pairs(2, qt, kj + c * dqk, dqk, st + c * R, &pf);
      if (c < nk) fl_lanes_qk_pairs(1, qt, kj + c * dqk, dqk, st + c * R, &pf), c++;
    }
#endif
    if (nrv == 1)
      for (; c + step <= nk; c += step)
        fl_lanes_qk_micro(1, FL_DEC_NK, qt, R, kj + c * dqk, dqk, st + c * R, &pf);
    else
      for (; c + step <= nk; c += step)
        fl_lanes_qk_micro(2, FL_DEC_NK / 2, qt, R, kj + c * dqk, dqk, st + c * R, &pf);
    for (; c < nk; c++) fl_lanes_qk_micro(nrv, 1, qt, R, kj + c * dqk, dqk, st + c * R, &pf);
    for (int64_t r = 0; r < nrows; r++) {  // keys of this block row r sees; mask the rest
      int64_t n = vis[r] - j0;
      n = n < 0 ? 0 : n > nk ? nk : n;
      if (fin && n > 0) n = fl_fin_lanes(fin, r, st, R, kabs + j0, n);  // options
      bl[r] = (int32_t)n;
      if (j0 + nk > vmin || fin)
        for (int64_t cc = n; cc < nk; cc++) st[cc * R + r] = -INFINITY;
    }
    const int64_t n_flat = (nk * R + VF_W - 1) / VF_W * VF_W;
    for (int64_t x = nk * R; x < n_flat; x++) st[x] = -INFINITY;
    fl_lanes_softmax(st, n_flat, R, lm, ll, alpha);
    const float *vt;
    if (t == ATTN_DTYPE_F32) {
      vt = vk_pad_v((const float *)vjb, nk, dv, dvp, vs);
    } else {
      kv_widen_rows(t, vjb, vrb, nk, dv, vs, dvp, dvp);
      vt = vs;
    }
    fl_pv_tile_inline(nrows, st, 1, R, vt, dvp, acc, dvp, alpha, bl, NULL, &pf);
  }
  for (int64_t r = 0; r < nrows; r++) m[r] = lm[r], l[r] = ll[r];
}

// The float32 instance (K and V rows of dqk and dv floats) and the typed one.
static void fl_lanes(int64_t nrows, const float *qs, int64_t dqk, const float *k, const float *v,
                     int64_t dv, int64_t dvp, int64_t nkeys, int64_t blk, const int32_t *vis,
                     float *qt, float *vs, float *acc, float *m, float *l, const fl_fin *fin,
                     int64_t kabs) {
  fl_lanes_t(ATTN_DTYPE_F32, nrows, qs, dqk, (const char *)k, (size_t)dqk * sizeof(float),
             (const char *)v, (size_t)dv * sizeof(float), dv, dvp, nkeys, blk, vis, qt, vs, NULL,
             acc, m, l, fin, kabs);
}
static void fl_lanes_typed(attn_dtype t, int64_t nrows, const float *qs, int64_t dqk,
                           const char *kb, size_t krb, const char *vb, size_t vrb, int64_t dv,
                           int64_t dvp, int64_t nkeys, int64_t blk, const int32_t *vis, float *qt,
                           float *vs, float *kc, float *acc, float *m, float *l, const fl_fin *fin,
                           int64_t kabs) {
  fl_lanes_t(t, nrows, qs, dqk, kb, krb, vb, vrb, dv, dvp, nkeys, blk, vis, qt, vs, kc, acc, m, l,
             fin, kabs);
}
