// SPDX-License-Identifier: MIT
// flash__avx512bf16 — the flash kernel on AVX512_BF16's `vdpbf16ps` for the BF16 compute
// mode (attn.h, "Compute modes"); every other mode runs flash__avx512's F32 path.
//
// BF16 mode, one task (the flash plan's split: flash/flash_plan.h, so the tasks, their
// key ranges and split-KV chunks are flash__avx512's and no number depends on the thread
// count):
//   Q̂ = bf16(Q), packed once per task in pairs along head_dim (register-tile panels)
//   for each K/V tile j (tkv keys) the task's rows can see:
//     K̂ = bf16(K) packed [dqk/2][keys][2], V̂ = bf16(V) packed [keys/2][dvp][2] — once per
//       call for every tile (bk_pack_all, before the tasks) when two or more tasks read
//       each K/V head (prefill: query blocks, GQA subgroups); else by the task itself
//     for each block of BK_ROW_BLOCK rows:
//       S = ±Q̂·K̂ᵀ                 vdpbf16ps, 8 rows × 48 keys register tiles, fp32 sums
//       per row: m' = max(m, c·max S), α = e^(m−m'), p = e^(c·S−m'), l' = α·l + Σ p (fp32)
//       P̃ = bf16(p) (nearest even, vcvtne2ps2bf16)
//       acc = α·acc + P̃·V̂           vdpbf16ps, 6 rows × 64 columns, fp32 sums
//   o = acc / l    (l sums the unrounded p; l = 0: the row saw no key, zeros)
// The scale's sign goes into Q̂ (bf16(−q) = −bf16(q): exact) and c = |scale| multiplies
// the fp32 scores inside the softmax's fma (Q is not pre-scaled: scale·q would be a second
// rounding of Q). Causal: tiles and register tiles past every row's limit are skipped, as
// in flash__avx512. The layouts, the error bound and the invariants:
// docs/low-precision-kernels.md.
// K/V of any stored type: F32 rows are rounded as they are packed; F16, BF16 and Q8_0 rows
// are first widened to float32 exactly (simd/kv_widen.h), then rounded (BF16: no change).
// Options are not native (no ATTN_CAP_OPT_* bit): attn_kernel_run sends them elsewhere.
// Which problems reach this body (dense, BF16 mode, not the decode route over a BF16
// cache): flash/flash_bf16_route.h.
#include <math.h>
#include <omp.h>
#include <string.h>

#include "core/attn_internal.h"
#include "flash/flash_avx512.h"
#include "flash/flash_bf16_route.h"
#include "flash/flash_plan.h"
#include "flash/flash_store.h"

// Register tiles (≤ 32 zmm: accumulators + B vectors + 1 broadcast) and the row block.
#define BK_QK_MR 8  // Q·Kᵀ: 8 rows × 3 vectors of 16 keys = 24 + 3 + 1
#define BK_QK_NV 3
#define BK_PV_MR 6  // P·V: 6 rows × 4 vectors of 16 columns = 24 + 4 + 1
#define BK_PV_NV 4
#define BK_ROW_BLOCK 48  // rows per Q·Kᵀ → softmax → P·V block (multiple of 8 and 6)
#define BK_PLAN_NR 48    // tile_kv a multiple of 48 keys (and so even)
#include "flash/flash_bf16_tiles.h"

// ── Plan and scratch ────────────────────────────────────────────────────────────────
typedef struct bk_plan {
  flash_plan fp;        // tasks, tiles, split-KV (flash_plan_make)
  int64_t dqk2, dqk2p;  // Q/K pairs per row, and rounded up to 16
  size_t off_qp, off_krows, off_kt, off_vt, off_s, off_pb, off_acc, off_m, off_l, off_alpha,
      off_lim, off_hi, off_kc;  // per-thread regions, in 4-byte units, each 64-byte aligned
  size_t scratch;               // 4-byte units per thread
  // Shared packing (bk_pack_all): K̂ and V̂ of every tile of every (batch, K/V head),
  // each tile kt[dqk2p][tkv] then vt[tkv/2][dvp] (u32 pairs), tile_u32 apart, packed
  // once after the tasks' workspace; packed = NULL while unset or when each K/V head has
  // a single reader (decode), whose task packs its own tiles.
  int shared;
  int64_t ntiles;          // tiles per (batch, K/V head): ceil(seq_kv / tkv)
  size_t tile_u32;         // u32 per packed tile
  const uint32_t *packed;  // the packed tiles (set by flash_bf16_run)
} bk_plan;

static size_t bk_align16(size_t n) {
  return n > SIZE_MAX - 15 ? SIZE_MAX : (n + 15) & ~(size_t)15;
}

static void bk_plan_make(const attn_problem *p, const attn_exec *exec, bk_plan *bp) {
  flash_plan *pl = &bp->fp;
  flash_plan_make(p, exec, 16, BK_PLAN_NR, pl);
  bp->dqk2 = (p->head_dim_qk + 1) / 2;
  bp->dqk2p = (bp->dqk2 + 15) / 16 * 16;
  const size_t rows = (size_t)pl->rows, tk = (size_t)pl->tkv, dvp = (size_t)pl->dvp;
  const size_t d2 = (size_t)bp->dqk2p, blk = BK_ROW_BLOCK;
  const size_t kcw = (size_t)(p->head_dim_qk > p->head_dim_v ? p->head_dim_qk : p->head_dim_v);
  size_t off = 0;
#define BK_REGION(field, units) bp->field = off, off = attn_size_add_sat(off, bk_align16(units))
  BK_REGION(off_qp, attn_size_mul_sat(rows, d2));
  BK_REGION(off_krows, 16 * d2);
  BK_REGION(off_kt, attn_size_mul_sat(d2, tk));
  BK_REGION(off_vt, attn_size_mul_sat(tk / 2 + 1, dvp));
  BK_REGION(off_s, blk * tk);
  BK_REGION(off_pb, blk * tk / 2 + 16);
  BK_REGION(off_acc, attn_size_mul_sat(rows, dvp));
  BK_REGION(off_m, rows);
  BK_REGION(off_l, rows);
  BK_REGION(off_alpha, rows);
  BK_REGION(off_lim, rows);
  BK_REGION(off_hi, attn_size_mul_sat(rows, 2));
  BK_REGION(off_kc, p->kv_dtype == ATTN_DTYPE_F32 ? 0 : attn_size_mul_sat(tk, kcw));
#undef BK_REGION
  bp->scratch = off;
  pl->scratch_floats = off;  // flash_workspace_bytes: threads × scratch + partials
  bp->shared = pl->qblocks * pl->subgroups > 1 && pl->nsplit == 1;
  bp->ntiles = (p->seq_kv + pl->tkv - 1) / pl->tkv;
  bp->tile_u32 = d2 * tk + tk / 2 * dvp;  // tk a multiple of 48: every tile 64-byte aligned
  bp->packed = NULL;
}

// Bytes of the shared packed tiles (0 without sharing) and where they start in the
// workspace: after flash_run_tasks' part, on a 64-byte boundary.
static size_t bk_shared_bytes(const attn_problem *p, const bk_plan *bp) {
  if (!bp->shared) return 0;
  const size_t heads = attn_size_mul_sat((size_t)p->batch, (size_t)p->kv_heads);
  return attn_size_mul_sat(attn_size_mul_sat(heads, (size_t)bp->ntiles), bp->tile_u32 * 4);
}

static size_t bk_shared_offset(const bk_plan *bp, int threads) {
  const size_t tasks = flash_workspace_bytes(&bp->fp, threads);
  return tasks > SIZE_MAX - 63 ? SIZE_MAX : (tasks + 63) & ~(size_t)63;
}

// ── Register-tile dispatch: each (rows, vectors) its own unrolled instance ──────────
static void bk_qk_any(int mr, int nv, const uint32_t *a, const uint32_t *b, int64_t ldb,
                      int64_t nkp, float *s, int64_t lds) {
#define BK_QK_CASE(M)                      \
  case M:                                  \
    if (nv == 3)                           \
      bk_qk(M, 3, a, b, ldb, nkp, s, lds); \
    else if (nv == 2)                      \
      bk_qk(M, 2, a, b, ldb, nkp, s, lds); \
    else                                   \
      bk_qk(M, 1, a, b, ldb, nkp, s, lds); \
    break;
  switch (mr) {
    BK_QK_CASE(1)
    BK_QK_CASE(2)
    BK_QK_CASE(3)
    BK_QK_CASE(4)
    BK_QK_CASE(5)
    BK_QK_CASE(6)
    BK_QK_CASE(7)
    BK_QK_CASE(8)
    default:
      break;
  }
#undef BK_QK_CASE
}

static void bk_pv_any(int mr, int nv, int scaled, const float *alpha, const uint16_t *p,
                      int64_t ldp, const uint32_t *vb, int64_t ldv, int64_t nkp, float *c,
                      int64_t ldc) {
#define BK_PV_CASE(M)                                           \
  case M:                                                       \
    if (nv == 4)                                                \
      bk_pv(M, 4, scaled, alpha, p, ldp, vb, ldv, nkp, c, ldc); \
    else if (nv == 3)                                           \
      bk_pv(M, 3, scaled, alpha, p, ldp, vb, ldv, nkp, c, ldc); \
    else if (nv == 2)                                           \
      bk_pv(M, 2, scaled, alpha, p, ldp, vb, ldv, nkp, c, ldc); \
    else                                                        \
      bk_pv(M, 1, scaled, alpha, p, ldp, vb, ldv, nkp, c, ldc); \
    break;
  switch (mr) {
    BK_PV_CASE(1)
    BK_PV_CASE(2)
    BK_PV_CASE(3)
    BK_PV_CASE(4)
    BK_PV_CASE(5)
    BK_PV_CASE(6)
    default:
      break;
  }
#undef BK_PV_CASE
}

static int64_t bk_max_lim(const int32_t *lims, int64_t r, int64_t n) {
  int64_t mx = 0;
  for (int64_t i = r; i < r + n; i++) mx = lims[i] > mx ? lims[i] : mx;
  return mx;
}

// K̂ and V̂ of keys [j0, j0 + n) of one K/V head (K rows at kh, V rows at vh, stored
// type p->kv_dtype) into kt (ldkt tkv) and vt; krows and kc are the thread's scratch.
static void bk_pack_tile(const attn_problem *p, const bk_plan *bp, const char *kh, const char *vh,
                         int64_t j0, int64_t n, uint32_t *krows, float *kc, uint32_t *kt,
                         uint32_t *vt) {
  const int64_t dqk = p->head_dim_qk, dv = p->head_dim_v, dvp = bp->fp.dvp;
  const attn_dtype ty = p->kv_dtype;
  const size_t krb = attn_kv_row_bytes(ty, dqk), vrb = attn_kv_row_bytes(ty, dv);
  const char *kj = kh + (size_t)j0 * krb, *vj = vh + (size_t)j0 * vrb;
  const int64_t ncp = (n + 15) / 16 * 16;
  bk_pack_kv(ty, kj, krb, vj, vrb, n, ncp, dqk, dv, dvp, krows, kc, kt, bp->fp.tkv, vt);
}

// K/V rows of (batch b, K/V head g).
static size_t bk_head_row(const attn_problem *p, int64_t b, int64_t g) {
  return ((size_t)b * (size_t)p->kv_heads + (size_t)g) * (size_t)p->seq_kv;
}

// Shared packing: every tile of every (batch, K/V head), all of its keys, into bp->packed
// (the layout in bk_plan), in parallel before the tasks. Keys a task's rows do not see
// are then packed too: their scores are never read and their p is 0 (finite V: attn.h's
// input domain), as for keys past a row's limit within a tile.
static void bk_pack_all(const attn_problem *p, const bk_plan *bp, int threads, const void *k,
                        const void *v, float *ws, uint32_t *packed) {
  const int64_t items = p->batch * p->kv_heads * bp->ntiles, tkv = bp->fp.tkv;
  const size_t krb = attn_kv_row_bytes(p->kv_dtype, p->head_dim_qk);
  const size_t vrb = attn_kv_row_bytes(p->kv_dtype, p->head_dim_v);
#pragma omp parallel num_threads(threads)
  {
    float *scratch = ws + (size_t)omp_get_thread_num() * bp->scratch;
    uint32_t *krows = (uint32_t *)(scratch + bp->off_krows);
#pragma omp for schedule(dynamic, 1)
    for (int64_t it = 0; it < items; it++) {
      const int64_t head = it / bp->ntiles, j0 = it % bp->ntiles * tkv;
      const size_t row = bk_head_row(p, head / p->kv_heads, head % p->kv_heads);
      uint32_t *kt = packed + (size_t)it * bp->tile_u32;
      const int64_t n = p->seq_kv - j0 < tkv ? p->seq_kv - j0 : tkv;
      bk_pack_tile(p, bp, (const char *)k + row * krb, (const char *)v + row * vrb, j0, n, krows,
                   scratch + bp->off_kc, kt, kt + (size_t)bp->dqk2p * (size_t)tkv);
    }
  }
}

// ── One task ─────────────────────────────────────────────────────────────────────────
typedef struct bk_rows {
  int64_t h0, hs, i0, nq, nrows, kb, ke;  // as flash_body.h's fl_rows
} bk_rows;

static bk_rows bk_task_rows(const attn_problem *p, const flash_plan *pl, const flash_task *tk) {
  bk_rows w;
  const int64_t hpg = p->heads / p->kv_heads, left = hpg - tk->sub * pl->heads_per_task;
  w.h0 = tk->g * hpg + tk->sub * pl->heads_per_task;
  w.hs = left < pl->heads_per_task ? left : pl->heads_per_task;
  w.i0 = tk->qb * pl->tq;
  w.nq = p->seq_q - w.i0 < pl->tq ? p->seq_q - w.i0 : pl->tq;
  w.nrows = w.hs * w.nq;
  flash_task_keys(p, pl, tk, &w.kb, &w.ke);
  return w;
}

// Q̂ = sign(scale)·bf16(Q) in pairs, in the panels the Q·Kᵀ tiles read: rows in blocks of
// BK_ROW_BLOCK, each in tiles of BK_QK_MR rows (the last narrower); the tile of mr rows
// at row R holds row R + i's pair k at qp[R·dqk2p + k·mr + i]. A tile's rows are rounded
// into tmp (16 rows of dqk2p pairs; rows ≥ mr unused), then each 16 × 16 block of pairs
// is transposed in registers and its first mr lanes stored per pair k.
static void bk_load_q(const attn_problem *p, const bk_plan *bp, const bk_rows *w, int64_t b,
                      const float *q, uint32_t *qp, uint32_t *tmp) {
  const int64_t dqk = p->head_dim_qk, d2 = bp->dqk2, d2p = bp->dqk2p, nrows = w->nrows;
  const __m512i sign = _mm512_set1_epi32(p->scale < 0.0f ? (int)0x80008000u : 0);  // exact
  uint32_t tr[16 * 16] __attribute__((aligned(64)));
  for (int64_t r0 = 0; r0 < nrows; r0 += BK_ROW_BLOCK) {
    const int64_t nb = nrows - r0 < BK_ROW_BLOCK ? nrows - r0 : BK_ROW_BLOCK;
    for (int64_t r = r0; r < r0 + nb; r += BK_QK_MR) {
      const int64_t mr = r0 + nb - r < BK_QK_MR ? r0 + nb - r : BK_QK_MR;
      const __mmask16 lanes = (__mmask16)((1u << mr) - 1u);
      uint32_t *panel = qp + r * d2p;
      for (int64_t i = 0; i < mr; i++) {
        const int64_t hh = (r + i) / w->nq, pos = (r + i) % w->nq;
        const float *src = attn_q_head(p, q, b, w->h0 + hh) + (w->i0 + pos) * dqk;
        for (int64_t d = 0; d < 2 * d2p; d += 32) {
          const int64_t left = dqk - d;
          const __m512i pairs = bk_round_pairs(src + d, left <= 0    ? 0
                                                        : left >= 32 ? 32
                                                                     : (int)left);
          _mm512_storeu_si512(tmp + i * d2p + d / 2, _mm512_xor_si512(pairs, sign));
        }
      }
      for (int64_t k0 = 0; k0 < d2; k0 += 16) {
        vf_transpose_block((const float *)(tmp + k0), d2p, (float *)tr, 16);
        for (int64_t k = k0; k < d2 && k < k0 + 16; k++)
          _mm512_mask_storeu_epi32(panel + k * mr, lanes, _mm512_load_si512(tr + (k - k0) * 16));
      }
    }
  }
}

// ends[r] = the end of query row i0 + r's keys (attn_row_keys' hi; 0 when it sees none),
// once per task. No option is native, so every row's keys start at 0 (lo is 0).
static void bk_row_ends(const attn_problem *p, const bk_rows *w, int64_t *ends) {
  for (int64_t r = 0; r < w->nq; r++) {
    int64_t lo, hi;
    attn_row_keys(p, w->i0 + r, &lo, &hi);
    ends[r] = lo >= hi ? 0 : hi;
  }
}

// lims[row] = the keys of [j0, j0 + n) row sees, from the tile start: end − j0 clamped to
// [0, n], for each of the task's heads.
static void bk_row_limits(const bk_rows *w, const int64_t *ends, int64_t j0, int64_t n,
                          int32_t *lims) {
  for (int64_t r = 0; r < w->nq; r++) {
    const int64_t lim = ends[r] - j0 > n ? n : ends[r] - j0 < 0 ? 0 : ends[r] - j0;
    for (int64_t hh = 0; hh < w->hs; hh++) lims[hh * w->nq + r] = (int32_t)lim;
  }
}

// One block of nb rows (r0..) against the packed tile: S, the softmax, P̃, acc.
static void bk_block(const attn_problem *p, const bk_plan *bp, int64_t r0, int64_t nb,
                     const uint32_t *qp, const uint32_t *kt, const uint32_t *vt, float *S,
                     uint16_t *pb, float *acc, float *m, float *l, float *alpha,
                     const int32_t *lims) {
  const int64_t tkv = bp->fp.tkv, dvp = bp->fp.dvp, d2 = bp->dqk2, d2p = bp->dqk2p;
  const int64_t ncb = (bk_max_lim(lims, r0, nb) + 15) / 16 * 16;
  for (int64_t c = 0; c < ncb; c += BK_QK_NV * 16) {
    const int64_t left = (ncb - c) / 16;
    const int nv = (int)(left < BK_QK_NV ? left : BK_QK_NV);
    for (int64_t r = r0; r < r0 + nb; r += BK_QK_MR) {
      const int64_t mr = r0 + nb - r < BK_QK_MR ? r0 + nb - r : BK_QK_MR;
      if (c >= bk_max_lim(lims, r, mr)) continue;  // causal: no row of the tile sees these
      bk_qk_any((int)mr, nv, qp + r * d2p, kt + c, tkv, d2, S + (r - r0) * tkv + c, tkv);
    }
  }
  // The softmax in two passes over the rows (one row's max → exp latency hides behind
  // the others'): each row's max over the keys it sees, then p rounded to bf16, α, (m, l)
  // (zeros past the row's limit); lim 0 keeps (m, l) with α = 1 and p = 0.
  const float cs = fabsf(p->scale);
  for (int64_t row = r0; row < r0 + nb; row++)
    alpha[row] = bk_row_max(S + (row - r0) * tkv, lims[row]);
  for (int64_t row = r0; row < r0 + nb; row++)
    alpha[row] = bk_exp_round(S + (row - r0) * tkv, lims[row], ncb, cs, alpha[row], &m[row],
                              &l[row], pb + (row - r0) * tkv);
  // P̃·V̂: equal register tiles of at most BK_PV_MR rows, each over the key pairs up to
  // its rows' last visible key (p = 0 beyond, and for the padding key of an odd count).
  const int64_t ntiles = (nb + BK_PV_MR - 1) / BK_PV_MR;
  for (int64_t g = 0, r = r0; g < ntiles; g++) {
    const int mr = (int)(nb / ntiles + (g < nb % ntiles));
    const int64_t nkp = (bk_max_lim(lims, r, mr) + 1) / 2;
    int any = 0;
    for (int rr = 0; rr < mr; rr++) any |= alpha[r + rr] != 1.0f;
    if (nkp > 0 || any)
      for (int64_t e = 0; e < dvp; e += BK_PV_NV * 16) {
        const int64_t left = (dvp - e) / 16;
        const int nv = (int)(left < BK_PV_NV ? left : BK_PV_NV);
        bk_pv_any(mr, nv, any, alpha + r, pb + (r - r0) * tkv, tkv, vt + e, dvp, nkp,
                  acc + r * dvp + e, dvp);
      }
    r += mr;
  }
}

// One task (flash_task_fn; kplan: the bk_plan).
static void bk_task(const attn_problem *p, const void *kplan, int64_t t, const float *q,
                    const void *k, const void *v, float *o, float *scratch, float *partials) {
  const bk_plan *bp = kplan;
  const flash_plan *pl = &bp->fp;
  const flash_task tk = flash_task_at(p, pl, t);
  const bk_rows w = bk_task_rows(p, pl, &tk);
  const int64_t dqk = p->head_dim_qk, dv = p->head_dim_v, dvp = pl->dvp, tkv = pl->tkv;
  uint32_t *qp = (uint32_t *)(scratch + bp->off_qp), *krows = (uint32_t *)(scratch + bp->off_krows);
  uint32_t *kt = (uint32_t *)(scratch + bp->off_kt), *vt = (uint32_t *)(scratch + bp->off_vt);
  uint16_t *pb = (uint16_t *)(scratch + bp->off_pb);
  float *S = scratch + bp->off_s, *acc = scratch + bp->off_acc, *kc = scratch + bp->off_kc;
  float *m = scratch + bp->off_m, *l = scratch + bp->off_l, *alpha = scratch + bp->off_alpha;
  int32_t *lims = (int32_t *)(scratch + bp->off_lim);
  int64_t *ends = (int64_t *)(scratch + bp->off_hi);
  const size_t krb = attn_kv_row_bytes(p->kv_dtype, dqk), vrb = attn_kv_row_bytes(p->kv_dtype, dv);
  const size_t head = bk_head_row(p, tk.b, tk.g);
  const char *kh = (const char *)k + head * krb, *vh = (const char *)v + head * vrb;
  const uint32_t *tiles = bp->packed ? bp->packed + (size_t)(tk.b * p->kv_heads + tk.g) *
                                                        (size_t)bp->ntiles * bp->tile_u32
                                     : NULL;

  for (int64_t row = 0; row < w.nrows; row++) m[row] = -INFINITY, l[row] = 0.0f;
  memset(acc, 0, (size_t)(w.nrows * dvp) * sizeof(float));
  if (w.kb < w.ke) bk_load_q(p, bp, &w, tk.b, q, qp, krows);
  bk_row_ends(p, &w, ends);
  for (int64_t j0 = w.kb; j0 < w.ke; j0 += tkv) {
    const int64_t nk = w.ke - j0 < tkv ? w.ke - j0 : tkv;
    bk_row_limits(&w, ends, j0, nk, lims);
    const int64_t nvis = bk_max_lim(lims, 0, w.nrows);  // keys any row sees in this tile
    if (nvis == 0) continue;
    const uint32_t *ktj = kt, *vtj = vt;
    if (tiles && j0 % tkv == 0) {  // packed before the tasks (tasks start on a tile)
      ktj = tiles + (size_t)(j0 / tkv) * bp->tile_u32;
      vtj = ktj + (size_t)bp->dqk2p * (size_t)tkv;
    } else {
      bk_pack_tile(p, bp, kh, vh, j0, nvis, krows, kc, kt, vt);
    }
    for (int64_t r0 = 0; r0 < w.nrows; r0 += BK_ROW_BLOCK) {
      const int64_t nb = w.nrows - r0 < BK_ROW_BLOCK ? w.nrows - r0 : BK_ROW_BLOCK;
      if (bk_max_lim(lims, r0, nb) == 0) continue;  // causal: the block sees nothing here
      bk_block(p, bp, r0, nb, qp, ktj, vtj, S, pb, acc, m, l, alpha, lims);
    }
  }
  // Its result: the split-KV partial or O = acc / l (options are not native: no LSE, sinks).
  const flash_io io = flash_io_dense(p, tk.b, NULL, NULL, NULL, o);
  flash_store_rows(p, pl, &io, w.h0, w.hs, w.i0, w.nq, tk.b, t, acc, m, l, partials);
}

// ── Entry points ─────────────────────────────────────────────────────────────────────
// The BF16 body (flash/flash_bf16_route.h: a dense problem in BF16 mode).
static size_t bk_workspace(const attn_problem *p, const attn_exec *exec) {
  bk_plan bp;
  bk_plan_make(p, exec, &bp);
  const int threads = flash_threads(exec);
  const size_t shared = bk_shared_bytes(p, &bp);
  return shared ? attn_size_add_sat(bk_shared_offset(&bp, threads), shared)
                : flash_workspace_bytes(&bp.fp, threads);
}

static int bk_run(const attn_problem *p, const attn_exec *exec, const float *q, const void *k,
                  const void *v, float *o, void *workspace) {
  ATTN_ASSERT_PRECONDITIONS(p, q, k, v, o);
  bk_plan bp;
  bk_plan_make(p, exec, &bp);
  const int threads = flash_threads(exec);
  if (bp.shared) {
    uint32_t *packed = (uint32_t *)((char *)workspace + bk_shared_offset(&bp, threads));
    bk_pack_all(p, &bp, threads, k, v, workspace, packed);
    bp.packed = packed;
  }
  return flash_run_tasks(p, &bp.fp, threads, bk_task, &bp, q, k, v, o, workspace);
}

extern const attn_kernel attn_kernel_flash__avx512bf16;

static size_t flash_bf16_workspace(const attn_problem *p, const attn_exec *exec) {
  return flash_bf16_kernel_workspace(&attn_kernel_flash__avx512bf16, p, exec, bk_workspace);
}

static int flash_bf16_run(const attn_problem *p, const attn_exec *exec, const float *q,
                          const void *k, const void *v, float *o, void *workspace) {
  return flash_bf16_kernel_run(&attn_kernel_flash__avx512bf16, p, exec, q, k, v, o, workspace,
                               bk_run);
}

const attn_kernel attn_kernel_flash__avx512bf16 = {
    .name = "flash__avx512bf16",
    .summary =
        "flash__avx512 with the BF16 compute mode on vdpbf16ps: pair-packed bf16 K/V "
        "tiles, 8x48 QK^T / 6x64 PV, fp32 softmax and sums, P rounded to bf16; F32 "
        "mode is flash__avx512's",
    .required_isa = ATTN_ISA_AVX512F | ATTN_ISA_AVX512BF16,
    .caps = ATTN_CAP_ALL_SHAPES | ATTN_CAP_THREADS | ATTN_CAP_KV_SPLIT | ATTN_CAP_KV_ALL |
            ATTN_CAP_LAYOUT_ALL | ATTN_CAP_COMPUTE_BF16,
    .workspace = flash_bf16_workspace,
    .run = flash_bf16_run,
    .vec_width = 16,
    .qk_rows = BK_QK_MR,
    .qk_cols = BK_QK_NV * 16,
    .pv_rows = BK_PV_MR,
    .pv_cols = BK_PV_NV * 16,
};
