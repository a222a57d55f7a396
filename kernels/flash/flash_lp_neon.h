// SPDX-License-Identifier: MIT
// flash_lp_neon.h — the driver shared by the NEON low-precision flash kernels
// (flash_neonbf16.c: BFDOT, flash_neonfhm.c: FMLAL, flash_neondot.c: SDOT). It runs one
// compute mode (attn.h, "Compute modes") over the flash plan (flash/flash_plan.h: the
// tasks, key ranges and split-KV chunks of every flash kernel); the mode file supplies the
// packed layouts and the two register-tile GEMMs. Maths, layouts and the error bound:
// docs/low-precision-kernels.md.
//
// One task (rows: the query rows of its heads, keys: its key range in tiles of tkv):
//   Q̂ = the mode's Q, packed once per task (lpm_pack_q)
//   for each K/V tile the task's rows see:
//     K̂, V̂ = the mode's K and V, packed once for all the rows (lpm_pack_kv)
//     per block of LP_ROW_BLOCK rows:
//       S = Q̂·K̂ᵀ             lpm_qk, LP_MR rows × LP_KEYS keys register tiles, fp32 sums
//       per row, fp32:  s = scale·S, m' = max(m, max s), α = e^(m − m'),
//                       p = e^(s − m'), l' = α·l + Σ p, acc ← α·acc
//       P̃ = the mode's p   lpm_round_p (the kernel's own rounding; l sums the unrounded p)
//       acc += P̃·V̂           lpm_pv, LP_MR rows × 16 columns, fp32 sums
//   O = acc / l (l = 0: the row saw no key, zeros), or the partial (acc, m, l) for
//   flash_merge under split-KV.
// Only the keys a row sees enter its softmax (its limit in the tile); the packers zero
// every padded key and column, so a padded p = 0 meets a zero V̂ row, never stale memory.
// Options are not native (the kernels have no ATTN_CAP_OPT_* bit), so a row's keys start
// at the tile's first one.
//
// The mode file defines LPM_MODE (its attn_compute) and LPM_P_BYTES (bytes of one P̃
// element) before including this header, and then these functions (declared below):
//   lpm_q_row_bytes(p)         bytes of one packed Q̂ row (a multiple of 16)
//   lpm_k_tile_bytes(p, tkv), lpm_v_tile_bytes(p, tkv, dvp)   packed tile sizes
//   lpm_pack_q(p, q_row, dst)  one Q row (head_dim_qk floats) → Q̂ row
//   lpm_pack_kv(p, k, v, nk, ncp, tkv, dvp, kc, kt, vt)
//                              nk stored K and V rows (kv_dtype) → K̂, V̂ for ncp keys
//                              (ncp a multiple of LP_KEYS, keys nk.. zero); kc: scratch of
//                              tkv·max(head_dim_qk, head_dim_v) floats
//   lpm_qk(p, qp, mr, kt, tkv, ncols, S, lds)   S[r][0..ncols) = Q̂[r]·K̂ᵀ, r < mr ≤ LP_MR
//   lpm_round_p(p_row, n, dst) n probabilities (n a multiple of LP_KEYS) → P̃ row
//   lpm_pv(pb, ldp, mr, vt, nkp, dvp, acc, lda) acc[r] += P̃[r][0..nkp)·V̂, r < mr
#pragma once

#include <math.h>
#include <string.h>

#include "core/attn_internal.h"
#include "flash/flash_plan.h"
#include "simd/vec_neon.h"  // first: kv_widen.h and flash_store.h map onto it
// clang-format off
#include "simd/kv_widen.h"
#include "flash/flash_store.h"
// clang-format on

#define LP_MR 4          // rows of both register tiles
#define LP_KEYS 16       // keys of the Q·Kᵀ tile; tkv and every padded key count a multiple
#define LP_ROW_BLOCK 32  // rows per Q·Kᵀ → softmax → P·V block (a multiple of LP_MR)
#define LP_INLINE static inline __attribute__((always_inline))

// The mode file's layouts and register tiles (see the top of this file).
static size_t lpm_q_row_bytes(const attn_problem *p);
static size_t lpm_k_tile_bytes(const attn_problem *p, int64_t tkv);
static size_t lpm_v_tile_bytes(const attn_problem *p, int64_t tkv, int64_t dvp);
static void lpm_pack_q(const attn_problem *p, const float *q, char *dst);
static void lpm_pack_kv(const attn_problem *p, const char *k, const char *v, int64_t nk,
                        int64_t ncp, int64_t tkv, int64_t dvp, float *kc, void *kt, void *vt);
static void lpm_qk(const attn_problem *p, const char *qp, int mr, const void *kt, int64_t tkv,
                   int64_t ncols, float *S, int64_t lds);
static void lpm_round_p(const float *s, int64_t n, char *dst);
static void lpm_pv(const char *pb, int64_t ldp, int mr, const void *vt, int64_t nkp, int64_t dvp,
                   float *acc, int64_t lda);

typedef struct lp_plan {
  flash_plan fp;  // tasks, tiles, split-KV (flash_plan_make with 16 lanes: dvp % 16 == 0)
  size_t qrb;     // bytes of one Q̂ row
  size_t off_qp, off_kt, off_vt, off_kc, off_s, off_pb, off_acc, off_m, off_l, off_lim;
  size_t scratch;  // bytes per thread (a multiple of 64)
} lp_plan;

// Calls TILE(M, ...) with M = mr (1 .. LP_MR) a compile-time constant, so that each row
// count gets its own fully unrolled register tile.
#define LP_DISPATCH_MR(mr, TILE, ...) \
  do {                                \
    switch (mr) {                     \
      case 4:                         \
        TILE(4, __VA_ARGS__);         \
        break;                        \
      case 3:                         \
        TILE(3, __VA_ARGS__);         \
        break;                        \
      case 2:                         \
        TILE(2, __VA_ARGS__);         \
        break;                        \
      default:                        \
        TILE(1, __VA_ARGS__);         \
        break;                        \
    }                                 \
  } while (0)

// The float32 accumulators of a register tile of mr rows × 16 columns: c[r][0 .. 16) at
// c + r·ldc, loaded (accumulate) or zeroed, and stored back.
LP_INLINE void lp_acc_load(const int mr, const int accumulate, const float *c, int64_t ldc,
                           float32x4_t acc[LP_MR][4]) {
  for (int r = 0; r < mr; r++)
    for (int x = 0; x < 4; x++) acc[r][x] = accumulate ? vld1q_f32(c + r * ldc + 4 * x) : vf_zero();
}
LP_INLINE void lp_acc_store(const int mr, float *c, int64_t ldc, float32x4_t acc[LP_MR][4]) {
  for (int r = 0; r < mr; r++)
    for (int x = 0; x < 4; x++) vst1q_f32(c + r * ldc + 4 * x, acc[r][x]);
}

// x[0 .. n) as two vectors (n ≤ 8; lanes past n and n ≤ 0 read as 0, no memory past n).
static inline void lp_load8(const float *x, int64_t n, float32x4_t *lo, float32x4_t *hi) {
  *lo = n >= 4 ? vld1q_f32(x) : vf_load_partial(x, n > 0 ? (int)n : 0);
  *hi = n >= 8 ? vld1q_f32(x + 4) : n > 4 ? vf_load_partial(x + 4, (int)n - 4) : vf_zero();
}

// nk stored rows of dim elements as float32 rows of stride dim: F32 rows as they are,
// other types widened exactly into kc (simd/kv_widen.h).
static inline const float *lp_kv_floats(const attn_problem *p, const char *rows, int64_t nk,
                                        int64_t dim, float *kc) {
  if (p->kv_dtype == ATTN_DTYPE_F32) return (const float *)rows;
  kv_widen_rows(p->kv_dtype, rows, attn_kv_row_bytes(p->kv_dtype, dim), nk, dim, kc, dim, dim);
  return kc;
}

static size_t lp_align64(size_t n) {
  return n > SIZE_MAX - 63 ? SIZE_MAX : (n + 63) & ~(size_t)63;
}

static void lp_plan_make(const attn_problem *p, const attn_exec *exec, lp_plan *lp) {
  flash_plan *pl = &lp->fp;
  flash_plan_make(p, exec, 16, LP_KEYS, pl);
  lp->qrb = lpm_q_row_bytes(p);
  const size_t rows = (size_t)pl->rows, tk = (size_t)pl->tkv, dvp = (size_t)pl->dvp;
  const size_t kcw = (size_t)(p->head_dim_qk > p->head_dim_v ? p->head_dim_qk : p->head_dim_v);
  size_t off = 0;
#define LP_REGION(field, bytes) lp->field = off, off = attn_size_add_sat(off, lp_align64(bytes))
  LP_REGION(off_qp, attn_size_mul_sat(rows, lp->qrb));
  LP_REGION(off_kt, lpm_k_tile_bytes(p, pl->tkv));
  LP_REGION(off_vt, lpm_v_tile_bytes(p, pl->tkv, pl->dvp));
  LP_REGION(off_kc, attn_size_mul_sat(attn_size_mul_sat(tk, kcw), sizeof(float)));
  LP_REGION(off_s, LP_ROW_BLOCK * tk * sizeof(float));
  LP_REGION(off_pb, LP_ROW_BLOCK * tk * LPM_P_BYTES);
  LP_REGION(off_acc, attn_size_mul_sat(attn_size_mul_sat(rows, dvp), sizeof(float)));
  LP_REGION(off_m, rows * sizeof(float));
  LP_REGION(off_l, rows * sizeof(float));
  LP_REGION(off_lim, rows * sizeof(int32_t));
#undef LP_REGION
  lp->scratch = off;
  pl->scratch_floats = off / sizeof(float);  // flash_workspace_bytes: threads × scratch + partials
}

// The rows of one task: heads h0 .. h0+hs of its group at positions i0 .. i0+nq; row
// r is head h0 + r / nq at position i0 + r % nq. Keys [kb, ke).
typedef struct lp_rows {
  int64_t h0, hs, i0, nq, nrows, kb, ke;
} lp_rows;

static lp_rows lp_task_rows(const attn_problem *p, const flash_plan *pl, const flash_task *tk) {
  const int64_t per_group = p->heads / p->kv_heads;
  const int64_t first = tk->sub * pl->heads_per_task, rest = per_group - first;
  const int64_t i0 = tk->qb * pl->tq, nq = p->seq_q - i0 < pl->tq ? p->seq_q - i0 : pl->tq;
  lp_rows w = {.h0 = tk->g * per_group + first,
               .hs = rest < pl->heads_per_task ? rest : pl->heads_per_task,
               .i0 = i0,
               .nq = nq};
  w.nrows = w.hs * w.nq;
  flash_task_keys(p, pl, tk, &w.kb, &w.ke);
  return w;
}

// lims[r] = how many keys of the tile [j0, j0 + n) row r sees (its keys start at 0: no
// option is native), the same for every head of the task.
static int64_t lp_limits(const attn_problem *p, const lp_rows *w, int64_t j0, int64_t n,
                         int32_t *lims) {
  int64_t most = 0;
  for (int64_t pos = 0; pos < w->nq; pos++) {
    int64_t lo, hi;
    attn_row_keys(p, w->i0 + pos, &lo, &hi);
    int64_t lim = lo >= hi ? 0 : hi - j0;
    lim = lim < 0 ? 0 : lim > n ? n : lim;
    most = lim > most ? lim : most;
    for (int64_t hh = 0; hh < w->hs; hh++) lims[hh * w->nq + pos] = (int32_t)lim;
  }
  return most;
}

static int64_t lp_most(const int32_t *lims, int64_t r, int64_t n) {
  int64_t most = 0;
  for (int64_t i = r; i < r + n; i++) most = lims[i] > most ? lims[i] : most;
  return most;
}

static int64_t lp_round_up(int64_t n, int64_t to) {
  return (n + to - 1) / to * to;
}

// The online-softmax update of one row over s[0 .. lim): s ← p = e^(scale·s − m'), zeros
// in [lim, npad); (m, l) updated; returns α = e^(m − m'). lim = 0 keeps (m, l), α = 1.
static float lp_softmax_row(float *s, int64_t lim, int64_t npad, float scale, float *m, float *l) {
  if (lim == 0) {
    memset(s, 0, (size_t)npad * sizeof *s);
    return 1.0f;
  }
  const vf_t vs = vf_set1(scale);
  vf_t mx = vf_set1(-INFINITY);
  int64_t j = 0;
  for (; j + VF_W <= lim; j += VF_W) {
    const vf_t x = vf_mul(vf_load(s + j), vs);
    vf_store(s + j, x);
    mx = vf_max(mx, x);
  }
  float top = vf_hmax(mx);
  for (int64_t t = j; t < lim; t++) {
    s[t] *= scale;
    top = s[t] > top ? s[t] : top;
  }
  const float m_new = top > *m ? top : *m;
  const float alpha = m_new == *m ? 1.0f : expf(*m - m_new);  // e^(−∞) = 0 on the first tile
  const vf_t vm = vf_set1(m_new);
  vf_t sum = vf_zero();
  for (j = 0; j + VF_W <= lim; j += VF_W) {
    const vf_t e = vf_exp(vf_sub(vf_load(s + j), vm));
    vf_store(s + j, e);
    sum = vf_add(sum, e);
  }
  if (j < lim) {
    const int n = (int)(lim - j);
    const vf_t e = vf_exp(vf_sub(vf_load_partial(s + j, n), vm));
    vf_store_partial(s + j, e, n);
    sum = vf_add(sum, vf_load_partial(s + j, n));  // the lanes past lim are not summed
  }
  memset(s + lim, 0, (size_t)(npad - lim) * sizeof *s);
  *l = alpha * *l + vf_hsum(sum);
  *m = m_new;
  return alpha;
}

// acc[0 .. n) *= a.
static void lp_scale_row(float *acc, int64_t n, float a) {
  const vf_t va = vf_set1(a);
  for (int64_t e = 0; e < n; e += VF_W) vf_store(acc + e, vf_mul(vf_load(acc + e), va));
}

// One block of nb rows (r0 ..) against the packed tile: S, the softmax, P̃, acc.
static void lp_block(const attn_problem *p, const lp_plan *lp, int64_t r0, int64_t nb,
                     const char *qp, const void *kt, const void *vt, float *S, char *pb, float *acc,
                     float *m, float *l, const int32_t *lims) {
  const int64_t tkv = lp->fp.tkv, dvp = lp->fp.dvp;
  const int64_t ncb = lp_round_up(lp_most(lims, r0, nb), LP_KEYS);
  for (int64_t r = r0; r < r0 + nb; r += LP_MR) {
    const int mr = (int)(r0 + nb - r < LP_MR ? r0 + nb - r : LP_MR);
    const int64_t ncols = lp_round_up(lp_most(lims, r, mr), LP_KEYS);
    if (ncols > 0)  // causal: no row of the tile sees a key here otherwise
      lpm_qk(p, qp + (size_t)r * lp->qrb, mr, kt, tkv, ncols, S + (r - r0) * tkv, tkv);
  }
  for (int64_t row = r0; row < r0 + nb; row++) {
    float *s = S + (row - r0) * tkv;
    const float alpha = lp_softmax_row(s, lims[row], ncb, p->scale, &m[row], &l[row]);
    if (alpha != 1.0f) lp_scale_row(acc + row * dvp, dvp, alpha);
    lpm_round_p(s, ncb, pb + (size_t)((row - r0) * tkv) * LPM_P_BYTES);
  }
  for (int64_t r = r0; r < r0 + nb; r += LP_MR) {
    const int mr = (int)(r0 + nb - r < LP_MR ? r0 + nb - r : LP_MR);
    const int64_t nkp = lp_round_up(lp_most(lims, r, mr), LP_KEYS);
    if (nkp > 0)
      lpm_pv(pb + (size_t)((r - r0) * tkv) * LPM_P_BYTES, tkv, mr, vt, nkp, dvp, acc + r * dvp,
             dvp);
  }
}

// One task (flash_task_fn; kplan: the lp_plan; its regions are byte offsets into scratch).
static void lp_task(const attn_problem *p, const void *kplan, int64_t t, const float *q,
                    const void *k, const void *v, float *o, float *scratch_floats,
                    float *partials) {
  const lp_plan *lp = kplan;
  const flash_plan *pl = &lp->fp;
  char *scratch = (char *)scratch_floats;
  const flash_task tk = flash_task_at(p, pl, t);
  const lp_rows w = lp_task_rows(p, pl, &tk);
  const int64_t dqk = p->head_dim_qk, dvp = pl->dvp, tkv = pl->tkv;
  char *qp = scratch + lp->off_qp, *pb = scratch + lp->off_pb;
  void *kt = scratch + lp->off_kt, *vt = scratch + lp->off_vt;
  float *kc = (float *)(scratch + lp->off_kc), *S = (float *)(scratch + lp->off_s);
  float *acc = (float *)(scratch + lp->off_acc), *m = (float *)(scratch + lp->off_m);
  float *l = (float *)(scratch + lp->off_l);
  int32_t *lims = (int32_t *)(scratch + lp->off_lim);
  const size_t krb = attn_kv_row_bytes(p->kv_dtype, dqk);
  const size_t vrb = attn_kv_row_bytes(p->kv_dtype, p->head_dim_v);
  const size_t head = ((size_t)tk.b * (size_t)p->kv_heads + (size_t)tk.g) * (size_t)p->seq_kv;
  const char *kh = (const char *)k + head * krb, *vh = (const char *)v + head * vrb;

  for (int64_t row = 0; row < w.nrows; row++) m[row] = -INFINITY, l[row] = 0.0f;
  memset(acc, 0, (size_t)(w.nrows * dvp) * sizeof(float));
  if (w.kb < w.ke)
    for (int64_t row = 0; row < w.nrows; row++) {
      const int64_t hh = row / w.nq, pos = row % w.nq;
      lpm_pack_q(p, attn_q_head(p, q, tk.b, w.h0 + hh) + (w.i0 + pos) * dqk,
                 qp + (size_t)row * lp->qrb);
    }
  for (int64_t j0 = w.kb; j0 < w.ke; j0 += tkv) {
    const int64_t nk = w.ke - j0 < tkv ? w.ke - j0 : tkv;
    const int64_t nvis = lp_limits(p, &w, j0, nk, lims);  // keys any row sees in the tile
    if (nvis == 0) continue;
    lpm_pack_kv(p, kh + (size_t)j0 * krb, vh + (size_t)j0 * vrb, nvis, lp_round_up(nvis, LP_KEYS),
                tkv, dvp, kc, kt, vt);
    for (int64_t r0 = 0; r0 < w.nrows; r0 += LP_ROW_BLOCK) {
      const int64_t nb = w.nrows - r0 < LP_ROW_BLOCK ? w.nrows - r0 : LP_ROW_BLOCK;
      if (lp_most(lims, r0, nb) > 0) lp_block(p, lp, r0, nb, qp, kt, vt, S, pb, acc, m, l, lims);
    }
  }
  // Its result: the split-KV partial or O = acc / l (options are not native: no LSE, sinks).
  const flash_io io = flash_io_dense(p, tk.b, NULL, NULL, NULL, o);
  flash_store_rows(p, pl, &io, w.h0, w.hs, w.i0, w.nq, tk.b, t, acc, m, l, partials);
}

static size_t lp_workspace(const attn_problem *p, const attn_exec *exec) {
  lp_plan lp;
  lp_plan_make(p, exec, &lp);
  return flash_workspace_bytes(&lp.fp, flash_threads(exec));
}

static int lp_run(const attn_problem *p, const attn_exec *exec, const float *q, const void *k,
                  const void *v, float *o, void *workspace) {
  ATTN_ASSERT_PRECONDITIONS(p, q, k, v, o);
  lp_plan lp;
  lp_plan_make(p, exec, &lp);
  return flash_run_tasks(p, &lp.fp, flash_threads(exec), lp_task, &lp, q, k, v, o, workspace);
}

// ── The kernel's entry points: the mode LPM_MODE here, every other mode (F32) on
// flash__neon's path, bitwise.
extern const attn_kernel attn_kernel_flash__neon;

static size_t lp_kernel_workspace(const attn_problem *p, const attn_exec *exec) {
  if (p->compute != LPM_MODE) return attn_kernel_flash__neon.workspace(p, exec);
  return lp_workspace(p, exec);
}

static int lp_kernel_run(const attn_problem *p, const attn_exec *exec, const float *q,
                         const void *k, const void *v, float *o, void *workspace) {
  if (p->compute != LPM_MODE) return attn_kernel_flash__neon.run(p, exec, q, k, v, o, workspace);
  return lp_run(p, exec, q, k, v, o, workspace);
}

// A NEON low-precision kernel's record: its name, summary, ISA bit (besides NEON), mode
// bit and Q·Kᵀ tile width are its own; the entry points, the other tiles and the caps are
// shared — K/V of every type in both modes (F32 mode: flash__neon's).
#define LP_RECORD(kname, ksummary, isa_bit, mode_cap, qk_tile_cols)                                \
  {                                                                                                \
    .name = kname, .summary = ksummary, .required_isa = ATTN_ISA_NEON | (isa_bit),                 \
    .caps =                                                                                        \
        ATTN_CAP_ALL_SHAPES | ATTN_CAP_THREADS | ATTN_CAP_KV_SPLIT | ATTN_CAP_KV_ALL | (mode_cap), \
    .workspace = lp_kernel_workspace, .run = lp_kernel_run, .vec_width = VF_W, .qk_rows = LP_MR,   \
    .qk_cols = (qk_tile_cols), .pv_rows = LP_MR, .pv_cols = 16                                     \
  }
