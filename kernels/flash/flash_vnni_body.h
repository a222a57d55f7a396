// SPDX-License-Identifier: MIT
// flash_vnni_body.h — the INT8 compute mode (attn.h, "Compute modes") of the VNNI flash
// kernels, written once for any vector width: the plan, the per-thread scratch, the task
// loop, Q's quantization, the scores from integer block dots, the online softmax and P·V
// with V dequantized in registers. flash__avx512vnni (zmm, flash_avx512vnni.c),
// flash__avxvnni and flash__avx2int8 (ymm, flash_vnni_ymm.h) include it after their
// width's primitives.
//
// INT8 mode, one task of the flash plan (flash/flash_plan.h: the tasks, their key ranges
// and split-KV chunks are a function of the shape, never of the thread count):
//   Q̃ = Q8_0(Q), per row and 32-block (core/convert.h's rule, as the contract says):
//       d_q = f16(max|x|/127), q_t = rne(x_t/d_q) ∈ [−127, 127]; c_b = 128·Σ_t q_t
//   for each block of VN_KEYS keys, for each group of ≤ VN_RG rows (GQA: the heads of one
//   K/V group share every loaded K and V vector), VN_KG keys (one score vector) at a time:
//     I_b = Σ_t q_t·k_t  exactly, for each 32-block b (integer; below)
//     s = scale · Σ_b fma(I_b, f16(d_q)·f16(d_k), ·)   (f16·f16 is exact in float32)
//   per row: m' = max(m, max s), α = e^(m−m'), p = e^(s−m'), l' = α·l + Σ p (float32)
//   acc = α·acc + Σ_c w_c·v_c, w_c = p_c·f16(d_v)   (v_c the int8 values widened exactly
//                 in registers; one rounding of each product, as float32's p·v: fp32 FMA)
//   o = acc / l   (l = 0: the row saw no key, zeros), or the partial (acc, m, l) that
//                 flash_merge combines in chunk order under split-KV.
//
// The integer dot. vpdpbusd adds to each int32 lane Σ_{t<4} a_t·b_t with a unsigned and b
// signed bytes. Q8_0 values are signed on both sides, so K is offset: k + 128 ∈ [1, 255]
// is an unsigned byte (k XOR 0x80 in two's complement), and
//     Σ_t (k_t + 128)·q_t = Σ_t k_t·q_t + 128·Σ_t q_t = I_b + c_b,
// so I_b = (the vpdpbusd sum) − c_b, with c_b computed once per Q row and block. Every
// partial sum is exact in int32 (|·| ≤ 32·255·127 < 2^20); I_b ≤ 32·127² < 2^19 converts
// to float32 exactly. (The other form — |k| unsigned with k's sign moved onto q — needs one
// sign change per K vector and query row; the offset costs one XOR per K vector for
// all rows of the group, and one integer subtraction per row, block and key group. Without
// vpdpbusd, vpmaddubsw's int16 pairs would saturate on k + 128, so flash__avx2int8 takes
// the sign form: flash_vnni_ymm.h.)
// The binary16 scales of a key block's K and V rows are copied once per block (shared by
// all row groups) and widened a key group at a time.
//
// Paths: every task (decode rows and prefill rows alike) runs rows in groups of ≤ VN_RG
// over key blocks; causal rows see their own key counts (p = 0 past them). Options are not
// native (no ATTN_CAP_OPT_* bit): attn_kernel_run sends them to the portable path. Ragged
// and paged batches are (ATTN_CAP_LAYOUT_*): each key block's K and V rows are found
// through a table of byte offsets from the flash_io's K and V (vn_row_offsets), and the
// batch runs as flash_batch_run's work list (a ragged decode item's K/V heads together).
// Maths, bound and measurements: docs/low-precision-kernels.md.
//
// The including file has the vf_* mapping of its width (simd/vec_<isa>.h, through
// flash_avx512.h or flash_avx2.h; a key group is one float vector of scores, VN_KG = VF_W
// keys) and defines, before including this header, its key-group layout:
//   vn_vi_t              the integer vector (VF_W int32 lanes)
//   VN_KV_VECS           the vectors of a key group's block that vn_kload fills
//   vn_kload(k, ko, off, kv)  the key group's 32 bytes at `off` into each key's row (ko:
//                        the keys' byte offsets from k) in the VN_KV_VECS vectors kv[] (the
//                        layout's arrangement and form — offset: unsigned k + 128 — loaded
//                        once per block for the rows of a group)
//   vn_rowdot(kv, qs, corr)  lane c = I_b = Σ_t k_c,t·qs_t over the 32 bytes of a Q block,
//                        exactly (any order: the integer sum is exact); the offset form
//                        computes Σ_t (k_c,t + 128)·qs_t − corr with vpdpbusd, acc +
//                        Σ_{t<4} u8(a_4i+t)·s8(b_4i+t) per lane i, on kv
//   vn_scales_group(rows, ko, nb, n, d, ldd)  d[b·ldd + i] = the binary16 d of block b < nb
//                        of key i's row (at rows + ko[i]) for i < n ≤ VN_KG, 0 for n ≤ i < VN_KG
// and its budgets and names:
//   VN_PV_ACC            float accumulator vectors a P·V pass may hold (half the registers)
//   VN_BLOCK_DOTS        the name of the exported integer block dots (for the tests)
//   VN_F32_RUN, VN_F32_WORKSPACE   the entry point every other mode runs on
// and gets VN_RECORD(...), its kernel record on the static entry points below.
#pragma once

#include <math.h>
#include <stddef.h>
#include <string.h>

#include "core/attn_internal.h"
#include "core/convert.h"
#include "flash/flash_batch.h"
#include "flash/flash_plan.h"
#include "flash/flash_store.h"
#include "simd/kv_widen.h"
#include "simd/softmax.h"

#define VN_INLINE static inline __attribute__((always_inline))
#define VN_RG 4           // rows per group (one K/V load serves them all)
#define VN_KG VF_W        // keys per key group: one vector of scores
#define VN_KEYS 64        // keys per online-softmax block; the plan's tile_kv multiple
#define VN_PF_LOCALITY 2  // K/V rows ahead requested into L2 ...
#define VN_PF_BLOCKS 1    // ... this many key blocks ahead (docs/design.md, "Tried and not kept")
// P·V passes: accumulator vectors per row for groups of ≤ 2 rows and of 3–4 rows (each
// within VN_PV_ACC), and for the columns left (whole vectors within a 32-block).
#define VN_PV_NV_FEW (VN_PV_ACC / 2)
#define VN_PV_NV_MANY (VN_PV_ACC / VN_RG)
#define VN_PV_NV_TAIL \
  (VN_PV_NV_MANY < ATTN_Q8_0_BLOCK / VF_W ? VN_PV_NV_MANY : ATTN_Q8_0_BLOCK / VF_W)
_Static_assert(VN_KEYS % VN_KG == 0, "VN_KEYS: whole key groups");
_Static_assert(VN_PF_BLOCKS == 1, "the next block's row offsets become the current ones");
_Static_assert(ATTN_Q8_0_BLOCK % (VN_PV_NV_TAIL * VF_W) == 0, "P·V tail: whole passes per block");

// The integer vector as int32 lanes (GCC vector extensions: lane-wise -, conversion).
typedef int32_t vn_i32_t __attribute__((vector_size(sizeof(vn_vi_t))));

// Every 64-byte line of [a, a + bytes), into L2 (bytes 0: none).
static inline void vn_prefetch(const char *a, size_t bytes) {
  const uintptr_t e = (uintptr_t)a + bytes;
  for (uintptr_t x = (uintptr_t)a & ~(uintptr_t)63; x < e; x += 64)
    __builtin_prefetch((const void *)x, 0, VN_PF_LOCALITY);
}

// Rows to request during a pass: n rows of rb bytes at base + o[i], or with o NULL one run
// of n·rb bytes at base (consecutive rows). base NULL: none.
typedef struct vn_pf {
  const char *base;
  const size_t *o;
  int64_t n;
  size_t rb;
} vn_pf;

// The x-th of nx slices of pf's rows (all of them over x < nx).
static inline void vn_prefetch_slice(const vn_pf *pf, int64_t x, int64_t nx) {
  if (!pf->base) return;
  if (!pf->o) {
    const size_t all = (size_t)pf->n * pf->rb;
    const size_t lo = all * (size_t)x / (size_t)nx, hi = all * (size_t)(x + 1) / (size_t)nx;
    vn_prefetch(pf->base + lo, hi - lo);
    return;
  }
  for (int64_t i = pf->n * x / nx; i < pf->n * (x + 1) / nx; i++)
    vn_prefetch(pf->base + pf->o[i], pf->rb);
}

// ── Scores ───────────────────────────────────────────────────────────────────────────
// dot[r] lane c = I_b over one 32-block (k: the key group's rows advanced to the block, ko
// their offsets; q: row r's block at q[r·nb], corr[r·ldc] its c_b for the offset form).
// The K vectors are loaded (and offset) once for the G rows.
VN_INLINE void vn_dots_block(const int G, const attn_block_q8_0 *q, int64_t nb, const int32_t *corr,
                             int64_t ldc, const char *k, const size_t *ko, vn_vi_t *dot) {
  vn_vi_t kv[VN_KV_VECS];
  vn_kload(k, ko, offsetof(attn_block_q8_0, qs), kv);
#pragma GCC unroll 4
  for (int r = 0; r < G; r++) dot[r] = vn_rowdot(kv, q[r * nb].qs, corr[r * ldc]);
}

// I_b as floats (exact: |I_b| < 2^19).
VN_INLINE vf_t vn_dot_float(vn_vi_t dot) {
  return __builtin_convertvector((vn_i32_t)dot, vf_t);
}

// ko[c] = byte offset of key min(c, nk − 1) (keys past nk repeat the last one: nothing
// past the block is read; their scores are masked by the softmax).
static void vn_key_offsets(int64_t nk, size_t krb, size_t *ko) {
  for (int64_t c = 0; c < VN_KG; c++) ko[c] = (size_t)(c < nk ? c : nk - 1) * krb;
}

// The scores of G rows against one key group: s[r·lds + c] = scale · Σ_b fma(I_b, d_q·d_k, ·),
// key c's row at k + ko[c]; pf: rows to request, a slice per block.
// corr[r·nb + b] = c_b, dq[r·nb + b] = f16(d_q) of row r's block b; dk[b·ldk + c] the
// binary16 d_k of key c's block b (vn_scales).
VN_INLINE void vn_qk(const int G, const attn_block_q8_0 *q, const float *dq, const int32_t *corr,
                     int64_t nb, const char *k, const size_t *ko, const uint16_t *dk, int64_t ldk,
                     float scale, float *s, int64_t lds, const vn_pf *pf) {
  vf_t acc[VN_RG];
#pragma GCC unroll 4
  for (int r = 0; r < G; r++) acc[r] = vf_zero();
  for (int64_t b = 0; b < nb; b++) {
    vn_prefetch_slice(pf, b, nb);  // spread over the blocks
    vn_vi_t dot[VN_RG];
    vn_dots_block(G, q + b, nb, corr + b, nb, k + (size_t)b * sizeof(attn_block_q8_0), ko, dot);
    const vf_t dkv = kv_w_f16(dk + b * ldk);
#pragma GCC unroll 4
    for (int r = 0; r < G; r++) {
      const vf_t sc = vf_mul(dkv, vf_set1(dq[r * nb + b]));  // exact
      acc[r] = vf_fma(vn_dot_float(dot[r]), sc, acc[r]);
    }
  }
#pragma GCC unroll 4
  for (int r = 0; r < G; r++) vf_store(s + r * lds, vf_mul(acc[r], vf_set1(scale)));
}

// The binary16 scales of nk keys' rows (nb blocks each; key c's row at base + o[c]) into
// d[b·VN_KEYS + c], zeros up to whole key groups: once per key block for all row groups,
// a key group at a time by the layout's vn_scales_group.
static void vn_scales(const char *base, const size_t *o, int64_t nb, int64_t nk, uint16_t *d) {
  for (int64_t c = 0; c < nk; c += VN_KG)
    vn_scales_group(base, o + c, nb, (int)(nk - c < VN_KG ? nk - c : VN_KG), d + c, VN_KEYS);
}

// c_b = 128·Σ_t q_t of one Q block (the offset's correction).
static int32_t vn_corr(const attn_block_q8_0 *blk) {
  int32_t sum = 0;
  for (int t = 0; t < ATTN_Q8_0_BLOCK; t++) sum += blk->qs[t];
  return 128 * sum;
}

// out[(r·nk + c)·nb + b] = I_b of row r and key c (nrows ≤ VN_RG, nk ≤ VN_KG), computed as
// the kernel computes it (the header of the including kernel declares it).
void VN_BLOCK_DOTS(int nrows, const attn_block_q8_0 *q, int64_t nb, const void *k, size_t krb,
                   int nk, int32_t *out) {
  size_t ko[VN_KG];
  vn_key_offsets(nk, krb, ko);
  for (int64_t b = 0; b < nb; b++) {
    const char *kb = (const char *)k + (size_t)b * sizeof(attn_block_q8_0);
    int32_t corr[VN_RG] = {0};
    for (int r = 0; r < nrows; r++) corr[r] = vn_corr(q + r * nb + b);
    vn_vi_t dot[VN_RG];
    switch (nrows) {  // each row count its own instance, as in the kernel
      case 1:
        vn_dots_block(1, q + b, nb, corr, 1, kb, ko, dot);
        break;
      case 2:
        vn_dots_block(2, q + b, nb, corr, 1, kb, ko, dot);
        break;
      case 3:
        vn_dots_block(3, q + b, nb, corr, 1, kb, ko, dot);
        break;
      default:
        vn_dots_block(4, q + b, nb, corr, 1, kb, ko, dot);
        break;
    }
    for (int r = 0; r < nrows; r++) {
      int32_t lane[VN_KG];
      const vn_i32_t x = (vn_i32_t)dot[r];
      memcpy(lane, &x, sizeof lane);
      for (int c = 0; c < nk; c++)
        out[((size_t)r * (size_t)nk + (size_t)c) * (size_t)nb + (size_t)b] = lane[c];
    }
  }
}

// ── P·V: V dequantized in registers ──────────────────────────────────────────────────
// acc_r[e0 .. e0 + VF_W·NV) += Σ_{c < nk} w_r,c,b · v_c (v_c the int8 values of key c's V
// row, widened exactly; b the block of the column) for the G rows, with
// w_r,c,b = p_r,c · f16(d_v,c,b) at w[(b·VN_RG + r)·VN_KEYS + c] (vn_pv). Each V vector is
// widened once for the group. A pass of VF_W·NV columns starts at a multiple of its width:
// within one block when the width is ≤ 32, at a block's start when it is more, so column
// vector x is in block e0/32 + VF_W·x/32 either way, and every weight of key c lies at a
// compile-time distance from w + (e0/32)·VN_RG·VN_KEYS + c (no per-row, per-vector offsets
// held in registers or spilled).
// Key c's V row at v + vo[c]; pfv (NULL: none): the next block's V rows, row c at
// v + pfv[c], one prefetched per key.
// The float32 model of P·V holds: the value f16(d_v)·v is exact, and its product with p
// is rounded once (in w; the FMA with the integer v is then exact up to its one rounding
// of the sum), as fl(p·v) followed by an addition would be. p past a row's visible keys is
// 0 and adds nothing.
VN_INLINE void vn_pv_pass(const int G, const int NV, const float *w, const char *v,
                          const size_t *vo, size_t vrb, int64_t nk, int64_t e0, float *acc,
                          int64_t dvp, const size_t *pfv) {
  vf_t o[VN_RG][VN_PV_NV_FEW];
#pragma GCC unroll 4
  for (int r = 0; r < G; r++)
#pragma GCC unroll 8
    for (int x = 0; x < NV; x++) o[r][x] = vf_load(acc + r * dvp + e0 + VF_W * x);
  const float *wc = w + e0 / ATTN_Q8_0_BLOCK * VN_RG * VN_KEYS;  // key c's weights: wc[c + ·]
  for (int64_t c = 0; c < nk; c++) {
    if (pfv) vn_prefetch(v + pfv[c], vrb);  // row c of the next block's V
    const attn_block_q8_0 *vr = (const attn_block_q8_0 *)(v + vo[c]);
    vf_t vv[VN_PV_NV_FEW];
#pragma GCC unroll 8
    for (int x = 0; x < NV; x++) {  // column e: element e % 32 of block e / 32
      const int64_t e = e0 + VF_W * x;
      vv[x] = kv_w_i8(vr[e / ATTN_Q8_0_BLOCK].qs + e % ATTN_Q8_0_BLOCK);
    }
#pragma GCC unroll 4
    for (int r = 0; r < G; r++)
#pragma GCC unroll 8
      for (int x = 0; x < NV; x++) {
        const int bx = VF_W * x / ATTN_Q8_0_BLOCK;  // the block past e0's (a constant)
        o[r][x] = vf_fma(vf_set1(wc[(bx * VN_RG + r) * VN_KEYS + c]), vv[x], o[r][x]);
      }
  }
#pragma GCC unroll 4
  for (int r = 0; r < G; r++)
#pragma GCC unroll 8
    for (int x = 0; x < NV; x++) vf_store(acc + r * dvp + e0 + VF_W * x, o[r][x]);
}

// P·V over all of head_dim_v (a multiple of 32): acc_r ← α_r·acc_r for the rows whose
// maximum grew (α ≠ 1: rare after a row's first blocks), w = p·d_v per row, block and key (a
// key group per vector; dvs from vn_scales), then passes of VN_PV_NV_FEW (≤ 2 rows) or
// VN_PV_NV_MANY (3–4 rows) vectors per row (later passes reread the block's V rows from
// L1), the rest VN_PV_NV_TAIL vectors at a time.
VN_INLINE void vn_pv(const int G, const float *s, int64_t lds, const uint16_t *dvs, float *w,
                     const float *alpha, const char *v, const size_t *vo, size_t vrb, int64_t dv,
                     int64_t nk, float *acc, int64_t dvp, const size_t *pfv) {
  const int64_t nbv = dv / ATTN_Q8_0_BLOCK, nkp = (nk + VN_KG - 1) / VN_KG * VN_KG;
  for (int r = 0; r < G; r++)
    if (alpha[r] != 1.0f) vs_scale_store(acc + r * dvp, acc + r * dvp, dv, alpha[r]);
  for (int64_t b = 0; b < nbv; b++)
    for (int64_t c = 0; c < nkp; c += VN_KG) {
      const vf_t d = kv_w_f16(dvs + b * VN_KEYS + c);  // widened once for the group's rows
#pragma GCC unroll 4
      for (int r = 0; r < G; r++)
        vf_store(w + (b * VN_RG + r) * VN_KEYS + c, vf_mul(vf_load(s + r * lds + c), d));
    }
  const int nv = G <= 2 ? VN_PV_NV_FEW : VN_PV_NV_MANY;
  int64_t e0 = 0;
  for (; e0 + VF_W * nv <= dv; e0 += VF_W * nv) {
    const size_t *pf = e0 == 0 ? pfv : NULL;  // the first pass prefetches
    if (nv == VN_PV_NV_FEW)
      vn_pv_pass(G, VN_PV_NV_FEW, w, v, vo, vrb, nk, e0, acc, dvp, pf);
    else
      vn_pv_pass(G, VN_PV_NV_MANY, w, v, vo, vrb, nk, e0, acc, dvp, pf);
  }
  for (; e0 < dv; e0 += VF_W * VN_PV_NV_TAIL)
    vn_pv_pass(G, VN_PV_NV_TAIL, w, v, vo, vrb, nk, e0, acc, dvp, e0 == 0 ? pfv : NULL);
}

// ── Plan and scratch ─────────────────────────────────────────────────────────────────
// Heads together (ragged decode, as flash_body.h's fl_task_group): a ragged token's K/V
// heads lie side by side, so one head at a time reads a slice of each token and leaves the
// rest to later passes. A decode item of a batch holds up to VN_GROUP_MAX K/V heads
// (vn_plan_seq); a ragged one runs them over each key block in turn (keys outer, heads
// inner), each head with its own state, a paged one one after the other (vn_batch_item: a
// page already holds a head's rows consecutively). A head's arithmetic is its one-head
// task's, block for block, so the output does not depend on the grouping.
#define VN_GROUP_MAX 16  // K/V heads at most in one item
#define VN_GROUP_ROWS 8  // plans of fewer rows per task (decode) group their heads
typedef struct vn_plan {
  flash_plan fp;  // tasks, split-KV (flash_plan_make); fp.scratch_floats = ours
  int64_t nb;     // Q8_0 blocks per Q/K row
  // Per-thread scratch: the key block's scales and weights, shared by the heads, then one
  // state block per head of an item (head_floats apart; offsets within head 0's).
  size_t off_dk, off_dv, off_w, head_floats;
  size_t off_qb, off_dq, off_corr, off_acc, off_m, off_l, off_lim;
} vn_plan;

// The next per-thread region of `floats` floats: its offset, and *end moved past it rounded
// up to 64 bytes (saturating: an absurd size then fails to allocate).
static size_t vn_region(size_t *end, size_t floats) {
  const size_t at = *end, padded = floats > SIZE_MAX - 15 ? SIZE_MAX : (floats + 15) & ~(size_t)15;
  *end = attn_size_add_sat(*end, padded);
  return at;
}

// The scratch regions of vp->fp's tasks (vp->fp made, or chunked, already) for items of
// vp->fp.kv_group heads.
static void vn_plan_regions(const attn_problem *p, vn_plan *vp) {
  flash_plan *pl = &vp->fp;
  vp->nb = p->head_dim_qk / ATTN_Q8_0_BLOCK;
  const size_t rows = (size_t)pl->rows, rb = attn_size_mul_sat(rows, (size_t)vp->nb);
  const size_t nbv = (size_t)(p->head_dim_v / ATTN_Q8_0_BLOCK);
  size_t end = 0;
  vp->off_dk = vn_region(&end, (size_t)vp->nb * VN_KEYS / 2);  // binary16 d_k of a key block
  vp->off_dv = vn_region(&end, nbv * VN_KEYS / 2);             // ... and d_v
  vp->off_w = vn_region(&end, VN_RG * nbv * VN_KEYS);          // P·V weights of a row group
  const size_t head0 = end;
  vp->off_qb = vn_region(&end, attn_size_mul_sat(rb, sizeof(attn_block_q8_0)) / sizeof(float) + 1);
  vp->off_dq = vn_region(&end, rb);
  vp->off_corr = vn_region(&end, rb);
  vp->off_acc = vn_region(&end, attn_size_mul_sat(rows, (size_t)pl->dvp));
  vp->off_m = vn_region(&end, rows);
  vp->off_l = vn_region(&end, rows);
  vp->off_lim = vn_region(&end, rows);
  vp->head_floats = end - head0;
  // flash_workspace_bytes: threads × scratch + partials
  pl->scratch_floats = attn_size_add_sat(
      head0, attn_size_mul_sat((size_t)(pl->kv_group > 1 ? pl->kv_group : 1), vp->head_floats));
}

static void vn_plan_make(const attn_problem *p, const attn_exec *exec, vn_plan *vp) {
  flash_plan_make(p, exec, VF_W, VN_KEYS, &vp->fp);
  vn_plan_regions(p, vp);
}

// The plan of one ragged or paged sequence (flash_plan_fn of flash_batch.h): the same
// tasks, with decode rows' K/V heads grouped into items of ≤ VN_GROUP_MAX (balanced).
static void vn_plan_seq(const attn_problem *p, const attn_exec *exec, flash_plan *pl) {
  vn_plan vp;
  flash_plan_make(p, exec, VF_W, VN_KEYS, &vp.fp);
  if (vp.fp.rows < VN_GROUP_ROWS && p->kv_heads > 1) {
    const int64_t groups = (p->kv_heads + VN_GROUP_MAX - 1) / VN_GROUP_MAX;
    vp.fp.kv_group = (p->kv_heads + groups - 1) / groups;
  }
  vn_plan_regions(p, &vp);
  *pl = vp.fp;
}

// ── One task ─────────────────────────────────────────────────────────────────────────
// One task's rows and keys, and where its state lives.
typedef struct vn_task_view {
  int64_t t, b;                   // the task, its batch entry
  int64_t h0, hs, i0, nq, nrows;  // heads h0 .. h0 + hs at positions i0 .. i0 + nq
  int64_t kb, ke;                 // the task's keys (flash_task_keys)
  attn_block_q8_0 *qb;            // Q̃ per row and block
  float *dq, *acc, *m, *l;        // f16(d_q) per row and block; acc, m, l per row
  int32_t *corr, *lim;            // c_b per row and block; each row's visible keys from kb
} vn_task_view;

// Task t's rows and keys, its state in the head block at st (the plan's offsets).
static vn_task_view vn_view(const attn_problem *p, const vn_plan *vp, int64_t t, float *st) {
  const flash_plan *pl = &vp->fp;
  const flash_task tk = flash_task_at(p, pl, t);
  const int64_t hpg = p->heads / p->kv_heads;
  vn_task_view w = {.t = t, .b = tk.b};
  w.h0 = tk.g * hpg + tk.sub * pl->heads_per_task;
  w.hs = hpg - tk.sub * pl->heads_per_task;
  w.hs = w.hs < pl->heads_per_task ? w.hs : pl->heads_per_task;
  w.i0 = tk.qb * pl->tq;
  w.nq = p->seq_q - w.i0 < pl->tq ? p->seq_q - w.i0 : pl->tq;
  w.nrows = w.hs * w.nq;
  flash_task_keys(p, pl, &tk, &w.kb, &w.ke);
  w.qb = (attn_block_q8_0 *)st;  // st: the head block, at off_qb
  w.dq = st + (vp->off_dq - vp->off_qb), w.corr = (int32_t *)(st + (vp->off_corr - vp->off_qb));
  w.acc = st + (vp->off_acc - vp->off_qb), w.m = st + (vp->off_m - vp->off_qb);
  w.l = st + (vp->off_l - vp->off_qb), w.lim = (int32_t *)(st + (vp->off_lim - vp->off_qb));
  return w;
}

// Row hh·nq + pos is query head h0 + hh at position i0 + pos (its row where io says): Q̃
// quantized per block with its scale as a float and its correction c_b; lim = the keys
// from kb the row sees.
static void vn_load_q(const attn_problem *p, const vn_plan *vp, const vn_task_view *w,
                      const flash_io *io) {
  const int64_t dqk = p->head_dim_qk, nb = vp->nb;
  for (int64_t row = 0; row < w->nrows; row++) {
    const int64_t hh = row / w->nq, pos = row % w->nq;
    attn_quantize_q8_0_row(io->q + (w->h0 + hh) * io->q_hs + (w->i0 + pos) * io->q_is, dqk,
                           w->qb + row * nb);
    for (int64_t x = 0; x < nb; x++) {
      w->dq[row * nb + x] = attn_f16_to_f32(w->qb[row * nb + x].d);
      w->corr[row * nb + x] = vn_corr(w->qb + row * nb + x);
    }
    int64_t lo, hi;  // no option is native: lo = 0, hi the causal limit
    attn_row_keys(p, w->i0 + pos, &lo, &hi);
    const int64_t n = lo >= hi ? 0 : hi - w->kb;
    w->lim[row] = (int32_t)(n < 0 ? 0 : n > w->ke - w->kb ? w->ke - w->kb : n);
  }
}

// The byte offsets from io->k and io->v of keys j0 .. j0 + n − 1 (n ≥ 1) of K/V head g —
// one run of consecutive rows per page with pages, one run without — into ko[c] and vo[c],
// and copies of the last up to VN_KEYS (key groups past n read the last key again).
static void vn_row_offsets(const flash_io *io, int64_t g, int64_t j0, int64_t n, size_t *ko,
                           size_t *vo) {
  for (int64_t c = 0; c < n;) {
    const int64_t j = j0 + c;
    int64_t len = n - c;
    size_t kr = (size_t)g * io->k_gs, vr = (size_t)g * io->v_gs;
    if (io->pt) {
      const size_t page = (size_t)io->pt[j / io->ps], slot = (size_t)(j % io->ps);
      len = io->ps - (int64_t)slot < len ? io->ps - (int64_t)slot : len;
      kr += page * io->k_page + slot * io->k_rs, vr += page * io->v_page + slot * io->v_rs;
    } else {
      kr += (size_t)j * io->k_rs, vr += (size_t)j * io->v_rs;
    }
    for (int64_t x = 0; x < len; x++)
      ko[c + x] = kr + (size_t)x * io->k_rs, vo[c + x] = vr + (size_t)x * io->v_rs;
    c += len;
  }
  for (int64_t c = n; c < VN_KEYS; c++) ko[c] = ko[n - 1], vo[c] = vo[n - 1];
}

// One key block of a task: keys [j, j + nk) of the task's range, row c of K at
// k + ko[c] and of V at v + vo[c], their scales (vn_scales), the P·V weights' scratch, and
// the next block's rows to prefetch (kon, von; NULL: none).
typedef struct vn_block {
  const char *k, *v;
  const size_t *ko, *vo, *kon, *von;
  int64_t j, nk;
  const uint16_t *dk, *dv;
  float *w;
} vn_block;

// One group of G rows over a key block: scores, online softmax, P·V.
VN_INLINE void vn_group(const int G, const attn_problem *p, const vn_plan *vp,
                        const attn_block_q8_0 *qb, const float *dq, const int32_t *corr,
                        const int32_t *lim, const vn_block *kb, float *acc, float *m, float *l) {
  const int64_t nb = vp->nb, dv = p->head_dim_v, dvp = vp->fp.dvp, nk = kb->nk;
  const size_t krb = attn_kv_row_bytes(ATTN_DTYPE_Q8_0, p->head_dim_qk);
  const size_t vrb = attn_kv_row_bytes(ATTN_DTYPE_Q8_0, dv);
  float s[VN_RG * VN_KEYS] __attribute__((aligned(64)));
  float alpha[VN_RG];
  int64_t n[VN_RG], nmax = 0;
  for (int r = 0; r < G; r++) {
    const int64_t x = lim[r] - kb->j;
    n[r] = x < 0 ? 0 : x > nk ? nk : x;
    nmax = n[r] > nmax ? n[r] : nmax;
  }
  if (nmax == 0) return;  // causal: no row of the group sees these keys
  const int64_t ncol = (nmax + VN_KG - 1) / VN_KG * VN_KG;
  for (int64_t c = 0; c < ncol; c += VN_KG) {
    // The next block's K rows of these keys, spread over the blocks of the dots: one run
    // when they are consecutive (dense, or within a page), else row by row.
    vn_pf pf = {NULL, NULL, VN_KG, krb};
    if (kb->kon) {
      const size_t *o = kb->kon + c;
      pf.base = kb->k + o[0];
      if (o[VN_KG - 1] - o[0] != (size_t)(VN_KG - 1) * krb) pf.base = kb->k, pf.o = o;
    }
    vn_qk(G, qb, dq, corr, nb, kb->k, kb->ko + c, kb->dk + c, VN_KEYS, p->scale, s + c, VN_KEYS,
          &pf);
  }
  for (int r = 0; r < G; r++)
    alpha[r] = vs_online_softmax_row(s + r * VN_KEYS, n[r], ncol, &m[r], &l[r]);
  vn_pv(G, s, VN_KEYS, kb->dv, kb->w, alpha, kb->v, kb->vo, vrb, dv, nmax, acc, dvp, kb->von);
}

// The rows of one task over key block kb, in groups of ≤ VN_RG rows (the first prefetches
// the next block); the block's scales first.
static void vn_task_block(const attn_problem *p, const vn_plan *vp, const vn_task_view *w,
                          vn_block *kb, const size_t *kon, const size_t *von) {
  const int64_t nb = vp->nb, dvp = vp->fp.dvp;
  vn_scales(kb->k, kb->ko, nb, kb->nk, (uint16_t *)kb->dk);
  vn_scales(kb->v, kb->vo, p->head_dim_v / ATTN_Q8_0_BLOCK, kb->nk, (uint16_t *)kb->dv);
  for (int64_t r0 = 0; r0 < w->nrows; r0 += VN_RG) {
    const int64_t gr = w->nrows - r0 < VN_RG ? w->nrows - r0 : VN_RG;
    kb->kon = r0 == 0 ? kon : NULL, kb->von = r0 == 0 ? von : NULL;
#define VN_GROUP(G)                                                                        \
  vn_group(G, p, vp, w->qb + r0 * nb, w->dq + r0 * nb, w->corr + r0 * nb, w->lim + r0, kb, \
           w->acc + r0 * dvp, w->m + r0, w->l + r0)
    switch (gr) {
      case 1:
        VN_GROUP(1);
        break;
      case 2:
        VN_GROUP(2);
        break;
      case 3:
        VN_GROUP(3);
        break;
      default:
        VN_GROUP(4);
        break;
    }
#undef VN_GROUP
  }
}

// ng tasks with the same rows and keys of K/V heads g0 .. g0 + ng − 1 (their rows where io
// says; one task: ng = 1): VN_KEYS keys at a time, every head's rows over each block. The
// row offsets are head g0's: head g0 + x reads at x·k_gs (x·v_gs) bytes past them.
static void vn_tasks_keys(const attn_problem *p, const vn_plan *vp, const vn_task_view *w,
                          int64_t ng, const flash_io *io, int64_t g0, float *scratch) {
  const int64_t kbeg = w[0].kb, nkeys = w[0].ke - w[0].kb;
  size_t off[2][2][VN_KEYS];  // [this, next block][K, V] row offsets (vn_row_offsets)
  int cur = 0;
  vn_block kb = {.dk = (const uint16_t *)(scratch + vp->off_dk),
                 .dv = (const uint16_t *)(scratch + vp->off_dv),
                 .w = scratch + vp->off_w};
  vn_row_offsets(io, g0, kbeg, nkeys < VN_KEYS ? nkeys : VN_KEYS, off[0][0], off[0][1]);
  for (int64_t j = 0; j < nkeys; j += VN_KEYS) {
    kb.j = j;
    kb.nk = nkeys - j < VN_KEYS ? nkeys - j : VN_KEYS;
    kb.ko = off[cur][0], kb.vo = off[cur][1];
    // The next block's offsets: requested VN_PF_BLOCKS ahead when it is a whole one, and
    // this block's successor's either way.
    const int64_t jn = j + VN_KEYS, nn = nkeys - jn < VN_KEYS ? nkeys - jn : VN_KEYS;
    if (nn > 0) vn_row_offsets(io, g0, kbeg + jn, nn, off[!cur][0], off[!cur][1]);
    const bool pf = nn == VN_KEYS;
    for (int64_t x = 0; x < ng; x++) {
      kb.k = io->k + (size_t)x * io->k_gs, kb.v = io->v + (size_t)x * io->v_gs;
      vn_task_block(p, vp, &w[x], &kb, pf ? off[!cur][0] : NULL, pf ? off[!cur][1] : NULL);
    }
    cur = !cur;
  }
}

// ng tasks of K/V heads t0's head .. + ng − 1 (flash_batch_head_task; ng = 1: task t0
// alone) with the same rows and keys: quantize their Q rows, run their keys, then write
// each O = acc / l (l = 0: zeros) or, under split-KV, its partial (acc, m, l)
// (flash_store_rows). lio: where the rows of a ragged or paged sequence live (NULL: batch
// entry b of the dense q, k, v, o).
static void vn_tasks(const attn_problem *p, const vn_plan *vp, int64_t t0, int64_t ng,
                     const float *q, const void *k, const void *v, float *o, const flash_io *lio,
                     float *scratch, float *partials) {
  const flash_plan *pl = &vp->fp;
  vn_task_view w[VN_GROUP_MAX];
  for (int64_t x = 0; x < ng; x++) {
    const int64_t t = ng > 1 ? flash_batch_head_task(pl, t0, x) : t0;
    w[x] = vn_view(p, vp, t, scratch + vp->off_qb + (size_t)x * vp->head_floats);
    for (int64_t row = 0; row < w[x].nrows; row++) w[x].m[row] = -INFINITY, w[x].l[row] = 0.0f;
    memset(w[x].acc, 0, (size_t)(w[x].nrows * pl->dvp) * sizeof(float));
  }
  const flash_io io = lio ? *lio : flash_io_dense(p, w[0].b, q, k, v, o);
  if (w[0].kb < w[0].ke) {
    for (int64_t x = 0; x < ng; x++) vn_load_q(p, vp, &w[x], &io);
    vn_tasks_keys(p, vp, w, ng, &io, flash_task_at(p, pl, t0).g, scratch);
  }
  for (int64_t x = 0; x < ng; x++)
    flash_store_rows(p, pl, &io, w[x].h0, w[x].hs, w[x].i0, w[x].nq, w[x].b, w[x].t, w[x].acc,
                     w[x].m, w[x].l, partials);
}

// A dense problem's task (flash_task_fn; kplan: the vn_plan).
static void vn_task(const attn_problem *p, const void *kplan, int64_t t, const float *q,
                    const void *k, const void *v, float *o, float *scratch, float *partials) {
  vn_tasks(p, kplan, t, 1, q, k, v, o, NULL, scratch, partials);
}

// An item of a ragged or paged batch (flash_item_fn), on the sequence's plan and the
// regions it implies: a ragged sequence's ng heads' tasks together; a paged one's one after
// the other, each over all its keys (a page holds a head's rows consecutively, and there
// heads together measured 0.89–0.92 of this speed; ragged heads together 1.04–1.07 of one
// at a time: docs/design.md).
static void vn_batch_item(const flash_seq *sq, int64_t t0, int64_t ng, float *scratch,
                          float *partials, const void *ctx) {
  (void)ctx;
  vn_plan vp = {.fp = sq->pl};
  vn_plan_regions(&sq->p, &vp);
  if (!sq->io.pt) {
    vn_tasks(&sq->p, &vp, t0, ng, NULL, NULL, NULL, NULL, &sq->io, scratch, partials);
    return;
  }
  for (int64_t x = 0; x < ng; x++)
    vn_tasks(&sq->p, &vp, ng > 1 ? flash_batch_head_task(&sq->pl, t0, x) : t0, 1, NULL, NULL, NULL,
             NULL, &sq->io, scratch, partials);
}

// ── Entry points ─────────────────────────────────────────────────────────────────────
// INT8 on the tasks above (every task, then under split-KV each base task's merge in
// chunk order by flash_run_tasks, or for a ragged or paged batch one work list over its
// sequences' tasks, flash_batch_run: each number depends on the plan only); every other
// mode on VN_F32_RUN.
static size_t vn_entry_workspace(const attn_problem *p, const attn_exec *exec) {
  vn_plan vp;
  if (p->compute != ATTN_COMPUTE_INT8) return VN_F32_WORKSPACE(p, exec);
  if (p->layout) return flash_batch_workspace(p, exec, vn_plan_seq, flash_threads(exec));
  vn_plan_make(p, exec, &vp);
  return flash_workspace_bytes(&vp.fp, flash_threads(exec));
}

static int vn_entry_run(const attn_problem *p, const attn_exec *exec, const float *q, const void *k,
                        const void *v, float *o, void *workspace) {
  ATTN_ASSERT_PRECONDITIONS(p, q, k, v, o);
  if (p->compute != ATTN_COMPUTE_INT8) return VN_F32_RUN(p, exec, q, k, v, o, workspace);
  if (p->layout)
    return flash_batch_run(p, exec, vn_plan_seq, vn_batch_item, NULL, q, k, v, o, workspace);
  vn_plan vp;
  vn_plan_make(p, exec, &vp);
  return flash_run_tasks(p, &vp.fp, flash_threads(exec), vn_task, &vp, q, k, v, o, workspace);
}

// The kernel record (an initializer): name, summary and required ISA bits as given; the
// entry points above; the capabilities (INT8 natively on q8_0 K/V; every shape, threads,
// split-KV; K/V types as the F32 path reads them); the Q·Kᵀ register tile a row group × a
// key group, the P·V tile a row group of 3–4 × its pass.
#define VN_RECORD(kname, ksummary, isa)                                                    \
  {                                                                                        \
    .name = kname, .summary = ksummary, .required_isa = isa, .run = vn_entry_run,          \
    .workspace = vn_entry_workspace,                                                       \
    .caps = ATTN_CAP_ALL_SHAPES | ATTN_CAP_THREADS | ATTN_CAP_KV_SPLIT | ATTN_CAP_KV_ALL | \
            ATTN_CAP_COMPUTE_INT8 | ATTN_CAP_LAYOUT_ALL,                                   \
    .vec_width = VF_W, .qk_rows = VN_RG, .qk_cols = VN_KG, .pv_rows = VN_RG,               \
    .pv_cols = VN_PV_NV_MANY * VF_W,                                                       \
  }
