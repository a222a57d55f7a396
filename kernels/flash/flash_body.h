// SPDX-License-Identifier: MIT
// flash_body.h — the FlashAttention-2-style kernel body, written once for every ISA.
// An ISA file (flash_avx512.c, flash_avx2.c, flash_neon.c, and the register-tile variants
// flash_<tiles>_<isa>.c) includes its SIMD mapping header (simd/vec_<isa>.h: vf_t, VF_W,
// vf_load, vf_fma, vf_exp, …), defines every parameter below (there are no defaults:
// what a kernel runs is written in its ISA file), then includes this file.
//   FL_QK_MR, FL_QK_NV     Q·Kᵀ register tile: MR query rows × NV vectors of keys
//   FL_PV_MR, FL_PV_NV     P·V register tile:  MR query rows × NV vectors of head_dim_v
//   FL_RUN, FL_WORKSPACE   names of the kernel's run / workspace functions
//   FL_LINKAGE             of FL_RUN / FL_WORKSPACE (static, or empty when another file
//                          of the kernel calls them)
//   FL_ROW_BLOCK           rows per Q·Kᵀ → softmax → P·V block: a common multiple of
//                          FL_QK_MR and FL_PV_MR
//   FL_PLAN_NR             the plan's tile_kv multiple
//   FL_DEC_ROWS            a number: tasks of fewer rows take the fused decode pass
//     A register-tile variant of a kernel (another file with other FL_QK_* / FL_PV_*)
//     keeps its default's FL_DEC_ROWS, FL_PLAN_NR and FL_ROW_BLOCK: then the plan, the
//     path of every task and each output element's FMA order (k, then key order, fixed
//     by the micro-kernel) are the default's, and so are the output bits.
//   VK_K_UNROLL, VK_PF_LOCALITY   the micro-kernel's k-loop unroll (simd/microkernel.h)
//                          and the next-tile prefetch's locality (simd/prefetch.h)
//   FL_DEC_KEYS1, FL_DEC_PF_V_PV(t, contiguous)   the fused decode rows' key interleave and V
//                          prefetch (flash_decode_rows.h)
//   FL_RV_W + fl_rv_t, fl_rv_zero/load/store/fma_bcast   the decode row vector (vf_t
//                          itself: flash/flash_rv_vf.h), FL_LANES_MAX_ROWS, FL_DEC_BLOCK —
//                          see flash_decode_lanes.h
// The pieces: the task split (flash_plan.h), the register-tile passes (flash_tiles.h,
// over the shared micro-kernel and packers of simd/microkernel.h), the decode paths
// (flash_decode_rows.h, flash_decode_lanes.h), the next-tile prefetch cursor
// (simd/prefetch.h); this file is the driver — one task (fl_task) in named steps, and the
// entry points.
//
// ── The algorithm (Dao 2023, FlashAttention-2; online softmax, Milakov & Gimelshein
// 2018) for one task (see flash/flash_plan.h) holding `rows` query rows:
//   Q̂ = scale·Q (packed once, row-major)                     resident for the task
//   for each K/V tile j (tkv keys) the task's rows can see:
//     K̂ᵀ[d][c] = K[j+c][d]  (packed once, shared by every row — GQA: by every head of
//                            the group; V is read in place, or copied when head_dim_v
//                            is not whole vectors)
//     for each block of FL_ROW_BLOCK rows (its scores stay in L1):
//       S = Q̂·K̂ᵀ                                      register tile FL_QK_MR × FL_QK_NV
//       per row: m' = max(m, max_c S), α = e^{m−m'}, P = e^{S−m'}, l' = α·l + Σ_c P
//       acc = α·acc + P·V   (α multiply skipped for a register tile whose max held)
//   o = acc / l   (l = 0 — the row saw no key — gives zeros)
// Prefetch: each micro-kernel inner-loop step asks for two lines of the next K/V tile
// (the K rows, then the V rows), spread over the tile's compute time.
// Causal: tiles wholly above the diagonal are never visited (the loop stops at the
// keys the task's last row sees); in tiles that cross it, each row's limit (lims) masks
// its scores and register tiles / row blocks past every row's limit are skipped.
// Decode-sized tasks skip the tiles: FL_RV_W..FL_LANES_MAX_ROWS rows (MQA/GQA decode) put
// the rows in vector lanes (fl_lanes); fewer than FL_QK_MR rows take one fused pass over the
// keys (fl_row_fused).
// Split-KV tasks store (acc, m, l) instead, merged by flash_merge in chunk order.
// K/V types (attn.h): f16, bf16 and q8_0 rows are read in their stored type and widened
// to float32 exactly (simd/kv_widen.h) — once per K/V tile while packing, per block in
// the decode lanes, in registers in the fused decode rows — so every path then runs its
// float32 arithmetic unchanged, accumulating in float32, and gives bitwise the output of
// float32 copies of the stored values.
#pragma once

#include <math.h>
#include <omp.h>
#include <string.h>

#include "core/attn_internal.h"
#include "flash/flash_batch.h"
#include "flash/flash_plan.h"
#include "flash/flash_store.h"
#include "simd/softmax.h"

#if !defined(FL_QK_MR) || !defined(FL_QK_NV) || !defined(FL_PV_MR) || !defined(FL_PV_NV) || \
    !defined(FL_RUN) || !defined(FL_WORKSPACE) || !defined(FL_LINKAGE) ||                   \
    !defined(FL_ROW_BLOCK) || !defined(FL_PLAN_NR) || !defined(FL_DEC_ROWS) ||              \
    !defined(VK_K_UNROLL) || !defined(VK_PF_LOCALITY) || !defined(FL_DEC_KEYS1) ||          \
    !defined(FL_DEC_PF_V_PV) || !defined(FL_RV_W) || !defined(FL_LANES_MAX_ROWS) ||         \
    !defined(FL_DEC_BLOCK)
#error "flash_body.h: the ISA file defines every parameter listed at the top of this file"
#endif
#if FL_PV_MR < 4 || FL_PV_MR > 8 || FL_QK_MR > 16
#error "register tiles: 4 <= FL_PV_MR <= 8, FL_QK_MR <= 16"
#endif
#if FL_ROW_BLOCK % FL_QK_MR != 0 || FL_ROW_BLOCK % FL_PV_MR != 0
#error "FL_ROW_BLOCK: a common multiple of FL_QK_MR and FL_PV_MR"
#endif

#define FL_INLINE static inline __attribute__((always_inline))

// The register tiles, for the kernel record (attn.h).
#define FL_RECORD_TILES                                                                    \
  .vec_width = VF_W, .qk_rows = FL_QK_MR, .qk_cols = FL_QK_NV * VF_W, .pv_rows = FL_PV_MR, \
  .pv_cols = FL_PV_NV * VF_W

// The micro-kernel's accumulator arrays sized to this kernel's register tiles.
#define VK_MR_MAX (FL_QK_MR > FL_PV_MR ? FL_QK_MR : FL_PV_MR)
#define VK_NV_MAX (FL_QK_NV > FL_PV_NV ? FL_QK_NV : FL_PV_NV)
#include "flash/flash_tiles.h"
// FL_DEC_ROWS, a number: the decode paths size their row arrays by it, as FL_QK_MR.
#pragma push_macro("FL_QK_MR")
#undef FL_QK_MR
#define FL_QK_MR FL_DEC_ROWS
// The decode paths: fused rows (flash_decode_rows.h, which says how a task's path is
// chosen) ...
#include "flash/flash_decode_rows.h"
// ... and rows in vector lanes.
#include "flash/flash_decode_lanes.h"
#pragma pop_macro("FL_QK_MR")

// ── One task, in steps ───────────────────────────────────────────────────────────────
// The rows and keys of task t (row hh·nq + r = query head h0 + hh at position i0 + r).
typedef struct fl_rows {
  int64_t h0, hs;  // query heads h0 .. h0 + hs of the K/V group
  int64_t i0, nq;  // query positions i0 .. i0 + nq
  int64_t nrows;   // hs · nq
  int64_t kb, ke;  // keys [kb, ke): the task's chunk of its rows' key range (flash_task_keys)
} fl_rows;

static fl_rows fl_task_rows(const attn_problem *p, const flash_plan *pl, const flash_task *tk) {
  fl_rows w;
  const int64_t hpg = p->heads / p->kv_heads;
  w.h0 = tk->g * hpg + tk->sub * pl->heads_per_task;
  w.hs = hpg - tk->sub * pl->heads_per_task < pl->heads_per_task
             ? hpg - tk->sub * pl->heads_per_task
             : pl->heads_per_task;
  w.i0 = tk->qb * pl->tq;
  w.nq = p->seq_q - w.i0 < pl->tq ? p->seq_q - w.i0 : pl->tq;
  w.nrows = w.hs * w.nq;
  flash_task_keys(p, pl, tk, &w.kb, &w.ke);
  return w;
}

// The task's fl_fin (flash_opts.h) in *f, or NULL when its scores need nothing: no
// softcap, ALiBi, mask, or window with a bounded left side. slopes: heads_per_task floats.
static const fl_fin *fl_fin_setup(const attn_problem *p, const fl_rows *w, int64_t b, float *slopes,
                                  fl_fin *f) {
  const attn_options *o = p->opts;
  if (!o) return NULL;
  const uint32_t used = attn_problem_options_used(p);
  int64_t lo0, hi0;  // a bounded left side shows as a row whose keys start after 0
  attn_row_keys(p, p->seq_q - 1, &lo0, &hi0);
  *f = (fl_fin){.p = p,
                .i0 = w->i0,
                .nq = w->nq,
                .off = attn_diag_offset(p),
                .seq_kv = p->seq_kv,
                .window_lo = (used & ATTN_CAP_OPT_WINDOW) &&
                             o->window_left != ATTN_WINDOW_UNBOUNDED && lo0 > 0};
  if (o->softcap > 0.0f) f->softcap = o->softcap, f->inv_softcap = 1.0f / o->softcap;
  if (used & ATTN_CAP_OPT_ALIBI) {
    for (int64_t hh = 0; hh < w->hs; hh++) slopes[hh] = attn_alibi_slope(p, w->h0 + hh);
    f->slopes = slopes;
  }
  if (o->mask) {
    const size_t plane = (size_t)p->seq_q * (size_t)p->seq_kv;
    f->mask =
        o->mask + (o->mask_per_head ? ((size_t)b * (size_t)p->heads + (size_t)w->h0) * plane : 0);
    f->mask_head_stride = o->mask_per_head ? plane : 0;
  }
  f->scores = f->softcap > 0.0f || f->slopes || f->mask;
  return f->scores || f->window_lo ? f : NULL;
}

// Q̂ = scale·Q for the task's rows, row-major (dqk floats per row): the decode paths.
static void fl_load_q(const attn_problem *p, const fl_rows *w, const flash_io *io, float *qs) {
  const int64_t dqk = p->head_dim_qk;
  const float scale = p->scale;
  for (int64_t hh = 0; hh < w->hs; hh++)
    for (int64_t r = 0; r < w->nq; r++) {
      const float *src = io->q + (w->h0 + hh) * io->q_hs + (w->i0 + r) * io->q_is;
      float *dst = qs + (hh * w->nq + r) * dqk;
      for (int64_t x = 0; x < dqk; x++) dst[x] = scale * src[x];
    }
}

// Q̂ = scale·Q for the tiled pass, in the panels its Q·Kᵀ register tiles read: the rows go
// in blocks of FL_ROW_BLOCK and each block in register tiles of FL_QK_MR rows (the last
// one narrower), as fl_tiled_pass_t and fl_qk_tile walk them; a tile of mr rows starting
// at row R holds Q̂[R + i][k] at qs[R·dqk + k·mr + i] — the same floats in the same place
// as the row-major layout, transposed within each tile. The micro-kernel then broadcasts
// A from one pointer (A[i][k] = a[i + k·mr]) instead of one address register per row.
static void fl_load_q_panels(const attn_problem *p, const fl_rows *w, const flash_io *io,
                             float *qs) {
  const int64_t dqk = p->head_dim_qk, nrows = w->nrows;
  const float scale = p->scale;
  for (int64_t r0 = 0; r0 < nrows; r0 += FL_ROW_BLOCK) {
    const int64_t nb = nrows - r0 < FL_ROW_BLOCK ? nrows - r0 : FL_ROW_BLOCK;
    for (int64_t r = r0; r < r0 + nb; r += FL_QK_MR) {
      const int64_t mr = r0 + nb - r < FL_QK_MR ? r0 + nb - r : FL_QK_MR;
      float *panel = qs + r * dqk;
      for (int64_t i = 0; i < mr; i++) {  // row r + i: head hh, position i0 + pos
        const int64_t hh = (r + i) / w->nq, pos = (r + i) % w->nq;
        const float *src = io->q + (w->h0 + hh) * io->q_hs + (w->i0 + pos) * io->q_is;
        for (int64_t k = 0; k < dqk; k++) panel[k * mr + i] = scale * src[k];
      }
    }
  }
}

// lims[row] = the end of the keys of [j0, j0 + n) that the row sees: hi(row) − j0 in
// [0, n] (attn_row_keys), 0 when it sees none of them; los[row] (los != NULL) = their
// start lo(row) − j0 in [0, lims[row]) (0 with no key).
// The bounds depend on the position only (every head of the task has the same), and
// lo(i), hi(i) are nondecreasing in i (diagonals: causal, window): when the task's first
// and last positions both see all of [j0, j0 + n), every row does (lim n, start 0).
static void fl_row_limits(const attn_problem *p, const fl_rows *w, int64_t j0, int64_t n,
                          int32_t *lims, int32_t *los) {
  int64_t lo0, hi0, lo1, hi1;
  attn_row_keys(p, w->i0, &lo0, &hi0);
  attn_row_keys(p, w->i0 + w->nq - 1, &lo1, &hi1);
  if (lo1 <= j0 && hi0 >= j0 + n) {
    for (int64_t row = 0; row < w->nrows; row++) lims[row] = (int32_t)n;
    if (los) memset(los, 0, (size_t)w->nrows * sizeof *los);
    return;
  }
  // Each of lo, hi grows by 0 or 1 from one position to the next (a clamped diagonal, and
  // hi ≥ lo), so an end that grew by nq − 1 over the task grew by 1 at every step, and one
  // that did not grow is constant: then no row needs attn_row_keys.
  const int64_t last = w->nq - 1, dlo = lo1 - lo0, dhi = hi1 - hi0;
  const bool linear = (dlo == 0 || dlo == last) && (dhi == 0 || dhi == last);
  for (int64_t r = 0; r < w->nq; r++) {
    int64_t lo = lo0 + (dlo ? r : 0), hi = hi0 + (dhi ? r : 0);
    if (!linear) attn_row_keys(p, w->i0 + r, &lo, &hi);
    int64_t lim = hi - j0, start = lo - j0 < 0 ? 0 : lo - j0;
    lim = lim > n ? n : lim < 0 ? 0 : lim;
    if (start >= lim) lim = 0, start = 0;
    for (int64_t hh = 0; hh < w->hs; hh++) {  // row hh·nq + r: position i0 + r
      lims[hh * w->nq + r] = (int32_t)lim;
      if (los) los[hh * w->nq + r] = (int32_t)start;
    }
  }
}

// ── K/V rows of a ragged or paged sequence (flash_io) ───────────────────────────────
// Keys [j, j + *len) of K/V head g, *len ≤ n: one run of rows io->k_rs, io->v_rs bytes
// apart from the returned K row and *vr — to the end of j's page with pages, else all n.
FL_INLINE const char *fl_kv_run(const flash_io *io, int64_t g, int64_t j, int64_t n,
                                const char **vr, int64_t *len) {
  if (!io->pt) {
    *len = n;
    *vr = io->v + (size_t)g * io->v_gs + (size_t)j * io->v_rs;
    return io->k + (size_t)g * io->k_gs + (size_t)j * io->k_rs;
  }
  const size_t page = (size_t)io->pt[j / io->ps], slot = (size_t)(j % io->ps);
  *len = io->ps - (int64_t)slot < n ? io->ps - (int64_t)slot : n;
  *vr = io->v + page * io->v_page + (size_t)g * io->v_gs + slot * io->v_rs;
  return io->k + page * io->k_page + (size_t)g * io->k_gs + slot * io->k_rs;
}

// The rows of one K/V head of a ragged or paged sequence, for the tiled pass: each tile's
// rows are staged, K then V, into stage (tkv rows of each; fl_plan_seq sizes it) — the
// copy the tile's packing makes anyway, read from the pages in place.
typedef struct fl_kv_rows {
  const flash_io *io;
  int64_t g;
  char *stage;
} fl_kv_rows;

static void fl_stage_tile(const fl_kv_rows *src, int64_t j0, int64_t nk, size_t krb, size_t vrb,
                          int64_t tkv) {
  char *kd = src->stage, *vd = src->stage + (size_t)tkv * krb;
  for (int64_t j = j0; j < j0 + nk;) {
    const char *vr;
    int64_t len;
    const char *kr = fl_kv_run(src->io, src->g, j, j0 + nk - j, &vr, &len);
    const size_t at = (size_t)(j - j0);
    if (src->io->k_rs == krb && src->io->v_rs == vrb) {  // one page: consecutive rows
      memcpy(kd + at * krb, kr, (size_t)len * krb);
      memcpy(vd + at * vrb, vr, (size_t)len * vrb);
    } else {  // ragged: the head's rows are kv_heads rows apart
      for (int64_t x = 0; x < len; x++) {
        memcpy(kd + (at + (size_t)x) * krb, kr + (size_t)x * src->io->k_rs, krb);
        memcpy(vd + (at + (size_t)x) * vrb, vr + (size_t)x * src->io->v_rs, vrb);
      }
    }
    j += len;
  }
}

// The FA2 loop over the task's K/V tiles (≥ FL_QK_MR rows): pack K̂ᵀ, V̂ in place or
// padded, then row blocks of FL_ROW_BLOCK rows run Q·Kᵀ → softmax → P·V back to back,
// so their scores (FL_ROW_BLOCK × tkv floats) never leave L1; K̂ᵀ and V̂ come from L2.
// K and V rows are kh, vh + key · krb, vrb bytes of type t: a type other than F32 is
// widened once per tile (K into kc, then packed; V into vs, padded), so the loops below
// run on float32 exactly as for F32 copies of the stored values.
FL_INLINE void fl_tiled_pass_t(const attn_dtype t, const attn_problem *p, const flash_plan *pl,
                               const fl_rows *w, const char *kh, size_t krb, const char *vh,
                               size_t vrb, const float *qs, float *kt, float *vs, float *kc,
                               float *S, float *acc, float *m, float *l, float *alpha,
                               int32_t *lims, const fl_fin *fin, int32_t *los,
                               const fl_kv_rows *src) {
  const int64_t dqk = p->head_dim_qk, dv = p->head_dim_v, dvp = pl->dvp, tkv = pl->tkv;
  const int64_t nrows = w->nrows, ke = w->ke;
  const bool scored = fin && fin->scores;  // else fin is a window alone (or NULL)
  for (int64_t j0 = w->kb; j0 < ke; j0 += tkv) {
    const int64_t nk = ke - j0 < tkv ? ke - j0 : tkv;
    const int64_t ncol = (nk + VF_W - 1) / VF_W * VF_W;
    fl_row_limits(p, w, j0, nk, lims, los);  // keys each row sees in this tile (< nk: diagonal)
    const char *kj = kh + (size_t)j0 * krb, *vj = vh + (size_t)j0 * vrb;
    // The next tile's K and V, requested a line at a time by the micro-kernels below.
    int64_t nn = ke - j0 - tkv < tkv ? ke - j0 - tkv : tkv;  // ≤ 0: last tile
    if (src) {  // pages or ragged rows: the tile's rows staged, K then V (fl_stage_tile)
      fl_stage_tile(src, j0, nk, krb, vrb, tkv);
      kj = src->stage, vj = src->stage + (size_t)tkv * krb, nn = 0;
    }
    vk_pf pf = vk_pf_rows(kj + (size_t)tkv * krb, vj + (size_t)tkv * vrb, nn, krb, vrb);
    const float *vt;  // V̂: in place, or a padded or aligned copy, or widened
    if (t == ATTN_DTYPE_F32) {
      vt = vk_aligned_v((const float *)vj, nk, dv, dvp, vs);
    } else {
      kv_widen_rows(t, vj, vrb, nk, dv, vs, dvp, dvp);
      vt = vs;
    }
    {  // K̂ᵀ: tkv keys per d row; columns [nk, ncol) zero so their scores are finite.
      const int64_t ncq = (nk + FL_QK_NV * VF_W - 1) / (FL_QK_NV * VF_W) * (FL_QK_NV * VF_W);
      const int64_t ncp = ncq < tkv ? ncq : tkv;
      if (t == ATTN_DTYPE_F32) {
        vk_pack_kt((const float *)kj, nk, ncp, dqk, kt, tkv);
      } else {
        kv_widen_rows(t, kj, krb, nk, dqk, kc, dqk, dqk);
        vk_pack_kt(kc, nk, ncp, dqk, kt, tkv);
      }
    }
    for (int64_t r0 = 0; r0 < nrows; r0 += FL_ROW_BLOCK) {
      const int64_t nb = nrows - r0 < FL_ROW_BLOCK ? nrows - r0 : FL_ROW_BLOCK;
      if (fl_max_lim(lims, r0, nb) == 0) continue;  // causal: block sees nothing here
      float *sb = S + r0 * tkv;
      fl_qk_tile(nb, ncol, qs + r0 * dqk, dqk, kt, tkv, sb, lims + r0, los ? los + r0 : NULL, &pf);
      // The softmax in two passes over the block's rows: every row's tile max (kept in
      // alpha for the moment), then every row's exponentials, sums and α, so one row's
      // max → exp dependency hides behind the others (lim 0: P = 0, α = 1, (m, l) kept).
      // With score options the passes also finish the option scores (flash_opts.h); a
      // window alone only starts each row at its first key, los[row] (fl_row_limits).
      for (int64_t row = r0; row < r0 + nb; row++)
        alpha[row] = scored && lims[row] > 0
                         ? fl_fin_softmax_pass(fin, row, S + row * tkv, j0, lims[row], ncol,
                                               &m[row], &l[row], 1, 0.0f)
                         : fl_span_softmax_pass(S + row * tkv, los ? los[row] : 0, lims[row], ncol,
                                                &m[row], &l[row], 1, 0.0f);
      for (int64_t row = r0; row < r0 + nb; row++)
        alpha[row] = scored && lims[row] > 0
                         ? fl_fin_softmax_pass(fin, row, S + row * tkv, j0, lims[row], ncol,
                                               &m[row], &l[row], 2, alpha[row])
                         : fl_span_softmax_pass(S + row * tkv, los ? los[row] : 0, lims[row], ncol,
                                                &m[row], &l[row], 2, alpha[row]);
      fl_pv_tile(nb, sb, tkv, 1, vt, dvp, acc + r0 * dvp, dvp, alpha + r0, lims + r0,
                 los ? los + r0 : NULL, &pf);
    }
  }
}

// One instance per K/V type (t a constant in each, so the F32 one is the float32 loop).
#define FL_TILED_INSTANCE(name, T)                                                                 \
  static void name(const attn_problem *p, const flash_plan *pl, const fl_rows *w, const char *kh,  \
                   size_t krb, const char *vh, size_t vrb, const float *qs, float *kt, float *vs,  \
                   float *kc, float *S, float *acc, float *m, float *l, float *alpha,              \
                   int32_t *lims, const fl_fin *fin, int32_t *los, const fl_kv_rows *src) {        \
    fl_tiled_pass_t(T, p, pl, w, kh, krb, vh, vrb, qs, kt, vs, kc, S, acc, m, l, alpha, lims, fin, \
                    los, src);                                                                     \
  }
FL_TILED_INSTANCE(fl_tiled_pass, ATTN_DTYPE_F32)
FL_TILED_INSTANCE(fl_tiled_pass_f16, ATTN_DTYPE_F16)
FL_TILED_INSTANCE(fl_tiled_pass_bf16, ATTN_DTYPE_BF16)
FL_TILED_INSTANCE(fl_tiled_pass_q8_0, ATTN_DTYPE_Q8_0)
#undef FL_TILED_INSTANCE

// The task's result (flash/flash_store.h): its split-KV partial, or O (and LSE if asked).
static void fl_store(const attn_problem *p, const flash_plan *pl, const fl_rows *w, int64_t b,
                     int64_t t, const float *acc, const float *m, const float *l,
                     const flash_io *io, float *partials) {
  flash_store_rows(p, pl, io, w->h0, w->hs, w->i0, w->nq, b, t, acc, m, l, partials);
}

// ── The fused decode rows over a task's keys (fewer than FL_DEC_ROWS rows) ──────────
// K/V rows are read in place: one run of keys io->k_rs apart (dense, ragged), or one run
// per page, the online-softmax state carried from run to run.
//
// Heads together (ragged and paged decode; flash_batch.h). In these layouts a K/V head's
// rows are not one stream: a ragged token's heads lie side by side (a head's rows are
// kv_heads rows apart) and a page holds every head's rows of its tokens. One head at a
// time reads a slice of every token or page and leaves the rest to later passes: short
// runs the hardware prefetchers do not follow, each DRAM page opened once per head. So a
// decode item of such a batch runs kv_group heads (fl_plan_seq) keys outer, heads inner:
// per run of keys — to the page's end, or FL_GROUP_RUN tokens without pages — every
// head's fused pass over the run, its last block prefetching the first block of what runs
// next (fl_dec_next: the next head's rows of the run, after the last head the first
// head's rows of the next run) — one block ahead in the order of the reads, as a dense
// pass prefetches its own next block. A head's
// arithmetic is its one-head task's, run for run: the fused pass carries (m, l, acc)
// across runs and FL_GROUP_RUN is whole decode blocks, so a ragged head sees the same
// blocks either way and the output does not depend on the grouping.
#define FL_GROUP_RUN FL_ROW_KEYS  // tokens per run without pages (whole FL_KV_FUSED_KEYS)
#define FL_GROUP_MAX 16           // K/V heads at most in one item (fl_head arrays)
_Static_assert(FL_GROUP_RUN % FL_KV_FUSED_KEYS == 0, "FL_GROUP_RUN: whole fused blocks");

// One K/V head's share of a fused decode: its rows, task, state and option finishing.
typedef struct fl_head {
  fl_rows w;
  int64_t g, t;
  float *qs, *acc, *m, *l;
  const fl_fin *fin;
} fl_head;
// Floats of one head's block of the group region (fl_plan_seq, fl_task_group): Q̂, acc,
// m, l, ALiBi slopes and its fl_fin, each rounded up to 16 floats (64 bytes).
#define FL_A16(n) (((size_t)(n) + 15) & ~(size_t)15)
#define FL_GRP_STRIDE(rows, dqk, dvp, hpt)                                            \
  (FL_A16((rows) * (dqk)) + FL_A16((rows) * (dvp)) + 2 * FL_A16(rows) + FL_A16(hpt) + \
   FL_A16((sizeof(fl_fin) + sizeof(float) - 1) / sizeof(float)))

// Heads hd[0..ng) over their keys (every head's rows have the same positions and keys:
// hd[0].w's), lims and kc the task's scratch.
static void fl_task_fused(const attn_problem *p, const flash_plan *pl, fl_head *hd, int64_t ng,
                          const flash_io *io, int32_t *lims, float *kc) {
  const attn_dtype ty = p->kv_dtype;
  const int64_t dqk = p->head_dim_qk, dv = p->head_dim_v, dvp = pl->dvp;
  const fl_rows *w = &hd[0].w;
  const int64_t cap = !io->pt && ng > 1 ? FL_GROUP_RUN : INT64_MAX;  // run length without pages
  for (int64_t j = w->kb; j < w->ke;) {
    int64_t n = w->ke - j < cap ? w->ke - j : cap;
    if (io->pt && io->ps - j % io->ps < n) n = io->ps - j % io->ps;  // to the page's end
    const int64_t jn = j + n, nn0 = w->ke - jn < cap ? w->ke - jn : cap;
    fl_row_limits(p, w, j, n, lims, NULL);
    for (int64_t x = 0; x < ng; x++) {
      const fl_head *h = &hd[x];
      const char *vb;
      int64_t len;
      const char *kb = fl_kv_run(io, h->g, j, n, &vb, &len);
      // What runs next, its first block prefetched by this pass's last: the next head's
      // rows of this run, after the last head the first head's of the next run.
      fl_dec_next nx = {NULL, NULL, 0};
      if (x + 1 < ng)
        nx.k = fl_kv_run(io, hd[x + 1].g, j, n, &nx.v, &nx.n);
      else if (nn0 > 0)
        nx.k = fl_kv_run(io, hd[0].g, jn, nn0, &nx.v, &nx.n);
      if (ty == ATTN_DTYPE_F32)
        fl_dec_f32(w->nrows, h->qs, dqk, kb, io->k_rs, vb, io->v_rs, dv, dvp, n, lims, h->acc, h->m,
                   h->l, h->fin, j, &nx);
      // Typed rows: the same pass widening in registers (fl_dec_typed), else through
      // float32 scratch per block.
      else if (!fl_dec_typed(ty, w->nrows, h->qs, dqk, kb, io->k_rs, vb, io->v_rs, dv, dvp, n, lims,
                             h->acc, h->m, h->l, h->fin, j, &nx))
        fl_row_fused_typed(ty, w->nrows, h->qs, dqk, kb, io->k_rs, vb, io->v_rs, dv, dvp, n, lims,
                           kc, kc + pl->kc_keys * dqk, h->acc, h->m, h->l, h->fin, j);
    }
    j = jn;
  }
}

// One task: its rows and keys, the online-softmax state reset, Q̂, then the pass its row
// count calls for — rows in lanes (FL_RV_W..FL_LANES_MAX_ROWS, contiguous K/V rows), one
// fused pass (fewer than FL_QK_MR), or the tiled FA2 loop — and the result. (The path
// depends on the plan's rows and the layout only: never on the thread count or the K/V
// type.) K and V are of type p->kv_dtype: rows of attn_kv_row_bytes bytes. lio: where the
// rows of a ragged or paged sequence live (NULL: batch entry tk.b of the dense q, k, v, o).
static void fl_task(const attn_problem *p, const flash_plan *pl, int64_t t, const float *q,
                    const void *k, const void *v, float *o, const flash_io *lio, float *scratch,
                    float *partials) {
  const flash_task tk = flash_task_at(p, pl, t);
  const fl_rows w = fl_task_rows(p, pl, &tk);
  const flash_io io = lio ? *lio : flash_io_dense(p, tk.b, q, k, v, o);
  const int64_t dqk = p->head_dim_qk, dv = p->head_dim_v, dvp = pl->dvp;
  float *qs = scratch + pl->off_q, *kt = scratch + pl->off_kt, *vs = scratch + pl->off_v;
  float *S = scratch + pl->off_s, *acc = scratch + pl->off_acc;
  float *m = scratch + pl->off_m, *l = scratch + pl->off_l, *alpha = scratch + pl->off_alpha;
  float *kc = scratch + pl->off_kc;  // typed K/V only
  int32_t *lims = (int32_t *)(scratch + pl->off_lim);
  fl_fin *fin_store = (fl_fin *)(scratch + pl->off_fin);  // fl_plan: not on the stack
  const fl_fin *fin = fl_fin_setup(p, &w, tk.b, scratch + pl->off_slope, fin_store);
  int32_t *los = fin && fin->window_lo ? (int32_t *)(scratch + pl->off_lo) : NULL;
  const attn_dtype ty = p->kv_dtype;
  const size_t krb = attn_kv_row_bytes(ty, dqk), vrb = attn_kv_row_bytes(ty, dv);
  const bool dense = flash_io_contiguous(&io, krb, vrb);
  const char *kh = io.k + (size_t)tk.g * io.k_gs, *vh = io.v + (size_t)tk.g * io.v_gs;
  // pages or ragged rows: the tiled pass stages each tile (fl_plan_seq sized the stage)
  const fl_kv_rows src = {&io, tk.g, (char *)(scratch + pl->off_stage)};

  for (int64_t row = 0; row < w.nrows; row++) m[row] = -INFINITY, l[row] = 0.0f;
  memset(acc, 0, (size_t)(w.nrows * dvp) * sizeof(float));
  if (w.kb < w.ke) {
    const int lanes = dense && w.nrows >= FL_RV_W && w.nrows <= FL_LANES_MAX_ROWS;
    const int fused = !lanes && w.nrows < FL_DEC_ROWS;
    const int64_t nkeys = w.ke - w.kb;
    const char *kb = kh + (size_t)w.kb * krb, *vb = vh + (size_t)w.kb * vrb;
    if (lanes || fused) {  // decode paths: row-major Q̂, each row's keys from kb on
      fl_load_q(p, &w, &io, qs);
      fl_row_limits(p, &w, w.kb, nkeys, lims, NULL);
    } else {  // the tiled pass: Q̂ in its register-tile panels
      fl_load_q_panels(p, &w, &io, qs);
    }
    if (lanes) {
      if (ty == ATTN_DTYPE_F32)
        fl_lanes(w.nrows, qs, dqk, (const float *)kb, (const float *)vb, dv, dvp, nkeys, pl->tkv,
                 lims, kt, vs, acc, m, l, fin, w.kb);
      else
        fl_lanes_typed(ty, w.nrows, qs, dqk, kb, krb, vb, vrb, dv, dvp, nkeys, pl->tkv, lims, kt,
                       vs, kc, acc, m, l, fin, w.kb);
    } else if (fused) {
      fl_head hd = {.w = w, .g = tk.g, .t = t, .qs = qs, .acc = acc, .m = m, .l = l, .fin = fin};
      fl_task_fused(p, pl, &hd, 1, &io, lims, kc);
    } else {
      const fl_kv_rows *sp = dense ? NULL : &src;
      switch (ty) {
        case ATTN_DTYPE_F16:
          fl_tiled_pass_f16(p, pl, &w, kh, krb, vh, vrb, qs, kt, vs, kc, S, acc, m, l, alpha, lims,
                            fin, los, sp);
          break;
        case ATTN_DTYPE_BF16:
          fl_tiled_pass_bf16(p, pl, &w, kh, krb, vh, vrb, qs, kt, vs, kc, S, acc, m, l, alpha, lims,
                             fin, los, sp);
          break;
        case ATTN_DTYPE_Q8_0:
          fl_tiled_pass_q8_0(p, pl, &w, kh, krb, vh, vrb, qs, kt, vs, kc, S, acc, m, l, alpha, lims,
                             fin, los, sp);
          break;
        default:
          fl_tiled_pass(p, pl, &w, kh, krb, vh, vrb, qs, kt, vs, kc, S, acc, m, l, alpha, lims, fin,
                        los, sp);
          break;
      }
    }
  }
  fl_store(p, pl, &w, tk.b, t, acc, m, l, &io, partials);
}

// The item of heads t, …, flash_batch_head_task(pl, t, ng − 1) of a ragged or paged
// sequence (pl->kv_group > 1: decode rows), heads together (fl_task_fused); each head's
// state in its block of the group region, then each head's result (fl_store).
static void fl_task_group(const attn_problem *p, const flash_plan *pl, int64_t t, int64_t ng,
                          const flash_io *io, float *scratch, float *partials) {
  const int64_t rows = pl->rows, dqk = p->head_dim_qk, dvp = pl->dvp;
  fl_head hd[FL_GROUP_MAX];
  int64_t b = 0, kb = 0, ke = 0;  // every head's batch entry and keys (hd[0]'s)
  for (int64_t x = 0; x < ng && x < FL_GROUP_MAX; x++) {
    fl_head *h = &hd[x];
    h->t = flash_batch_head_task(pl, t, x);
    const flash_task tk = flash_task_at(p, pl, h->t);
    b = tk.b;
    h->w = fl_task_rows(p, pl, &tk);
    h->g = tk.g;
    if (x == 0) kb = h->w.kb, ke = h->w.ke;
    float *st = scratch + pl->off_grp + (size_t)x * pl->grp_stride;
    h->qs = st, h->acc = st + FL_A16(rows * dqk), h->m = h->acc + FL_A16(rows * dvp);
    h->l = h->m + FL_A16(rows);
    float *slopes = h->l + FL_A16(rows);
    // the fl_fin in the scratch, not in this frame (no 64-byte-aligned stack slot for it)
    h->fin = fl_fin_setup(p, &h->w, tk.b, slopes, (fl_fin *)(slopes + FL_A16(pl->heads_per_task)));
    for (int64_t row = 0; row < h->w.nrows; row++) h->m[row] = -INFINITY, h->l[row] = 0.0f;
    memset(h->acc, 0, (size_t)(h->w.nrows * dvp) * sizeof(float));
    if (h->w.kb < h->w.ke) fl_load_q(p, &h->w, io, h->qs);
  }
  if (kb < ke)
    fl_task_fused(p, pl, hd, ng, io, (int32_t *)(scratch + pl->off_lim), scratch + pl->off_kc);
  for (int64_t x = 0; x < ng; x++)
    fl_store(p, pl, &hd[x].w, b, hd[x].t, hd[x].acc, hd[x].m, hd[x].l, io, partials);
}

// ── Entry points ─────────────────────────────────────────────────────────────────────
// The plan, plus for K/V types other than F32 the widened-rows region (kc): the keys of
// the widest block any path widens at once (a tile, a fused block, a lanes block), as
// head_dim_qk floats of K then head_dim_v floats of V per key.
static void fl_plan(const attn_problem *p, const attn_exec *exec, flash_plan *pl) {
  flash_plan_make(p, exec, VF_W, FL_PLAN_NR, pl);
  // The task's fl_fin lives in the scratch, not in fl_task's frame: GCC gives that local a
  // 64-byte-aligned slot and clears it with an aligned zmm store, which faults in
  // AddressSanitizer's fake frames (detect_stack_use_after_return: 32-byte aligned).
  pl->off_fin = pl->scratch_floats;
  pl->scratch_floats = attn_size_add_sat(pl->scratch_floats, (sizeof(fl_fin) + 63) / 64 * 16);
  pl->off_kc = pl->scratch_floats;
  pl->kc_keys = 0;
  if (p->kv_dtype != ATTN_DTYPE_F32) {
    int64_t kk = pl->tkv > FL_KV_FUSED_KEYS ? pl->tkv : FL_KV_FUSED_KEYS;
    kk = kk > FL_DEC_BLOCK ? kk : FL_DEC_BLOCK;
    pl->kc_keys = kk;
    const size_t f = attn_size_mul_sat((size_t)kk, (size_t)(p->head_dim_qk + p->head_dim_v));
    pl->scratch_floats =
        attn_size_add_sat(pl->scratch_floats, attn_size_add_sat(f, 15) & ~(size_t)15);
  }
}

// The plan of one ragged or paged sequence (flash_batch.h): fl_plan plus the staged tile of
// the tiled pass (tkv rows of K and of V as stored).
static void fl_plan_seq(const attn_problem *p, const attn_exec *exec, flash_plan *pl) {
  fl_plan(p, exec, pl);
  if (pl->rows < FL_DEC_ROWS && p->kv_heads > 1) {  // decode rows: heads together (fl_task_fused)
    const int64_t groups = (p->kv_heads + FL_GROUP_MAX - 1) / FL_GROUP_MAX;
    pl->kv_group = (p->kv_heads + groups - 1) / groups;
    pl->grp_stride = FL_GRP_STRIDE((size_t)pl->rows, (size_t)p->head_dim_qk, (size_t)pl->dvp,
                                   (size_t)pl->heads_per_task);
    pl->off_grp = pl->scratch_floats;
    pl->scratch_floats = attn_size_add_sat(pl->scratch_floats,
                                           attn_size_mul_sat((size_t)pl->kv_group, pl->grp_stride));
  }
  const size_t bytes =
      attn_size_mul_sat((size_t)pl->tkv, attn_kv_row_bytes(p->kv_dtype, p->head_dim_qk) +
                                             attn_kv_row_bytes(p->kv_dtype, p->head_dim_v));
  pl->off_stage = pl->scratch_floats;
  pl->scratch_floats = attn_size_add_sat(
      pl->scratch_floats, attn_size_add_sat(bytes / sizeof(float) + 1, 15) & ~(size_t)15);
}

FL_LINKAGE size_t FL_WORKSPACE(const attn_problem *p, const attn_exec *exec) {
  if (p->layout) return flash_batch_workspace(p, exec, fl_plan_seq, flash_threads(exec));
  flash_plan pl;
  fl_plan(p, exec, &pl);
  return flash_workspace_bytes(&pl, flash_threads(exec));
}

// An item of a ragged or paged batch (flash_item_fn): heads together or one task.
static void fl_batch_item(const flash_seq *sq, int64_t t0, int64_t ng, float *scratch,
                          float *partials, const void *ctx) {
  (void)ctx;
  if (ng > 1)
    fl_task_group(&sq->p, &sq->pl, t0, ng, &sq->io, scratch, partials);
  else
    fl_task(&sq->p, &sq->pl, t0, NULL, NULL, NULL, NULL, &sq->io, scratch, partials);
}

// A dense problem's task (flash_task_fn; kplan: the flash_plan).
static void fl_task_dense(const attn_problem *p, const void *kplan, int64_t t, const float *q,
                          const void *k, const void *v, float *o, float *scratch, float *partials) {
  fl_task(p, kplan, t, q, k, v, o, NULL, scratch, partials);
}

FL_LINKAGE int FL_RUN(const attn_problem *p, const attn_exec *exec, const float *q, const void *k,
                      const void *v, float *o, void *workspace) {
  ATTN_ASSERT_PRECONDITIONS(p, q, k, v, o);
  if (p->layout)  // one work list over every sequence's tasks (flash_batch.h)
    return flash_batch_run(p, exec, fl_plan_seq, fl_batch_item, NULL, q, k, v, o, workspace);
  flash_plan pl;
  fl_plan(p, exec, &pl);
  return flash_run_tasks(p, &pl, flash_threads(exec), fl_task_dense, &pl, q, k, v, o, workspace);
}
