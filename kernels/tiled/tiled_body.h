// SPDX-License-Identifier: MIT
// tiled_body.h — the single-thread SIMD attention kernel, written once over the vf_*
// mapping. A per-ISA translation unit includes its vec_<isa>.h, defines
//     TILED_ISA   AVX2, AVX512 or NEON: the register tile of tiled/tiled_tiles.h, as
//       TILED_MR    query rows per micro-tile (both GEMMs)
//       TILED_NRV   vectors of keys per packed K panel (Q·Kᵀ micro-tile = MR × NRV·VF_W)
//       TILED_NV    vectors of head_dim_v per P·V micro-tile step (MR × NV·VF_W)
//     TILED_DIRECT_ROWS     below this many query rows per K/V head (seq_q × group),
//                           skip packing K and use the direct Q·Kᵀ path (decode)
// includes this file and makes its record with TILED_KERNEL (at the end). It defines
// tiled_workspace() and tiled_run() for that record. Cache tiles come from attn_exec, or
// the one tile rule (core/tiles.h) where it leaves them 0.
//
// Algorithm, per (batch b, K/V head g):
//   pack K[b,g] into panels Kp[panel][d][KP] (KP = NRV·VF_W keys; zero-padded keys), so
//     the Q·Kᵀ micro-kernel loads whole vectors of keys for each d and broadcasts q[r][d];
//   pad V[b,g] rows to dv_pad = ⌈dv/VF_W⌉·VF_W columns (skipped when dv is a multiple of
//     VF_W: V is then read in place) — every vector load of V is whole and in bounds;
//   for each query head h of the group and each query tile (TQ rows):
//     pack the tile as Qp[block][d][MR] (zero rows pad the last block);
//     for each key tile (TKV keys, up to the last key the tile's last row may see):
//       for each MR-row block that sees any key of the tile (causal tiles skipped):
//         S = scale · Q_blk · K_tileᵀ            micro-kernel, MR × KP per panel
//         online-softmax update per row          vs_online_softmax_row (softmax.h)
//         acc = α·acc + P · V_tile               micro-kernel, MR × NV·VF_W per step
//     O = acc / l   (rows that saw no key: zeros), masked tail store.
// Few query rows per K/V head (decode, short prompts): packing K costs about as much as
// ~50 rows of Q·Kᵀ, so below TILED_DIRECT_ROWS rows the scores come from
// tiled_qk_direct instead — dot products with vectors along head_dim_qk, 4 keys at a
// time, read straight from K (masked tail loads).
// K/V of a low-precision type (p->kv_dtype: f16, bf16, q8_0; simd/kv_widen.h) are widened
// once per K/V head, exactly, where the float32 path reads them: K panel by panel into a
// TILED_KP-row scratch that is then packed (or, on the direct path, the whole head into
// a float32 copy of the head that tiled_qk_direct reads), V into the padded V rows. The
// loops after that are the float32 ones, so the output is bitwise the float32 kernel's on
// float32 copies of the stored values.
// No load or store touches memory outside the tensors or the workspace: tails in keys
// are padded inside the workspace, tails in head_dim_v use vf_store_partial, tails in
// head_dim_qk (direct path) use vf_load_partial.
#include <math.h>
#include <string.h>

#include "core/attn_internal.h"
#include "core/tiles.h"
#include "simd/kv_widen.h"
#include "tiled/tiled_tiles.h"

#define TILED_TILE_(ISA, what) TILED_##ISA##_##what
#define TILED_TILE(ISA, what) TILED_TILE_(ISA, what)  // TILED_ISA expanded first
#define TILED_MR TILED_TILE(TILED_ISA, MR)
#define TILED_NRV TILED_TILE(TILED_ISA, NRV)
#define TILED_NV TILED_TILE(TILED_ISA, NV)
_Static_assert(VF_W == TILED_TILE(TILED_ISA, LANES),
               "tiled_tiles.h: the vector width of the ISA's vec_<isa>.h");
// The micro-kernel's accumulator array: 16 rows × 8 vectors bounds every tile a tiled
// ISA file picks (tiled_tiles.h); the calls' constant mr and nv keep it in registers.
#define VK_MR_MAX 16
#define VK_NV_MAX 8
#define VK_PF_LOCALITY 3  // (the tiled kernels call the micro-kernel without its prefetch)
#include "simd/microkernel.h"

#define TILED_KP (TILED_NRV * VF_W)  // keys per packed K panel

// The register tiles, for the kernel record (attn.h).
#define TILED_RECORD_TILES                                                          \
  .vec_width = VF_W, .qk_rows = TILED_MR, .qk_cols = TILED_KP, .pv_rows = TILED_MR, \
  .pv_cols = TILED_NV * VF_W

typedef struct tiled_geom {
  int64_t tq, tkv;                    // cache tiles: multiples of TILED_MR and TILED_KP
  int64_t dv_pad;                     // head_dim_v rounded up to whole vectors
  int64_t skv_pad;                    // seq_kv rounded up to whole panels
  bool direct;                        // scores by tiled_qk_direct; K is not packed
  size_t kp, kw, vp, qp, acc, s, ml;  // region sizes in floats, each a multiple of 16 (64 B)
} tiled_geom;

static int64_t tiled_round_up(int64_t x, int64_t m) {
  return (x + m - 1) / m * m;
}
static size_t tiled_r16(int64_t n) {
  return (size_t)tiled_round_up(n, 16);
}

static tiled_geom tiled_geometry(const attn_problem *p, const attn_exec *e) {
  tiled_geom g;
  int rule_q, rule_kv;  // the one tile rule (core/tiles.h) where exec leaves them 0
  attn_tiles_resolve(p, e, &rule_q, &rule_kv);
  int64_t tq = rule_q, tkv = rule_kv;
  if (tq > p->seq_q) tq = p->seq_q;  // no bigger than needed
  if (tkv > p->seq_kv) tkv = p->seq_kv;
  g.tq = tiled_round_up(tq, TILED_MR);
  g.tkv = tiled_round_up(tkv, TILED_KP);
  g.dv_pad = tiled_round_up(p->head_dim_v, VF_W);
  g.skv_pad = tiled_round_up(p->seq_kv, TILED_KP);
  g.direct = p->seq_q * (p->heads / p->kv_heads) < TILED_DIRECT_ROWS;
  g.kp = g.direct ? 0 : tiled_r16(g.skv_pad * p->head_dim_qk);
  const bool typed = p->kv_dtype != ATTN_DTYPE_F32;
  // Widened K: the whole head for the direct path, one panel's rows for the packer.
  g.kw = !typed ? 0 : tiled_r16((g.direct ? p->seq_kv : TILED_KP) * p->head_dim_qk);
  g.vp = (typed || p->head_dim_v % VF_W) ? tiled_r16(p->seq_kv * g.dv_pad) : 0;
  g.qp = g.direct ? 0 : tiled_r16(g.tq * p->head_dim_qk);  // the direct path reads Q in place
  g.acc = tiled_r16(g.tq * g.dv_pad);
  g.s = tiled_r16(TILED_MR * g.tkv);
  g.ml = tiled_r16(2 * g.tq + TILED_MR);
  return g;
}

static size_t tiled_workspace(const attn_problem *p, const attn_exec *exec) {
  const tiled_geom g = tiled_geometry(p, exec);
  size_t floats = 0;  // saturating: attn_kernel_call then reports "cannot allocate"
  const size_t regions[] = {g.kp, g.kw, g.vp, g.qp, g.acc, g.s, g.ml};
  for (size_t i = 0; i < sizeof regions / sizeof regions[0]; i++)
    floats = attn_size_add_sat(floats, regions[i]);
  return attn_size_mul_sat(floats, sizeof(float));
}

// Qp[blk][d][MR] = Q[i0 + blk·MR + r][d]; rows past nq are zero.
static void tiled_pack_q(const float *qtile, int64_t nq, int64_t nq_pad, int64_t dqk, float *qp) {
  for (int64_t r0 = 0; r0 < nq_pad; r0 += TILED_MR) {
    float *blk = qp + r0 * dqk;
    for (int64_t r = 0; r < TILED_MR; r++) {
      if (r0 + r < nq) {
        const float *qrow = qtile + (r0 + r) * dqk;
        for (int64_t d = 0; d < dqk; d++) blk[d * TILED_MR + r] = qrow[d];
      } else {
        for (int64_t d = 0; d < dqk; d++) blk[d * TILED_MR + r] = 0.0f;
      }
    }
  }
}

// Kp[panel][d][KP] = K[panel·KP + c][d] (vk_pack_kt per panel); keys past seq_kv are
// zero (their scores are masked before use). K rows are kh + key · krb bytes of type t;
// a type other than F32 is widened a panel at a time into kw (KP rows) first.
static void tiled_pack_k(attn_dtype t, const char *kh, size_t krb, int64_t skv, int64_t skv_pad,
                         int64_t dqk, float *kw, float *kp) {
  for (int64_t j0 = 0; j0 < skv_pad; j0 += TILED_KP) {
    const int64_t nk = skv - j0 < TILED_KP ? skv - j0 : TILED_KP;  // j0 < skv: ≥ 1 key
    const float *src = (const float *)(kh + (size_t)j0 * krb);
    if (t != ATTN_DTYPE_F32) {
      kv_widen_rows(t, kh + (size_t)j0 * krb, krb, nk, dqk, kw, dqk, dqk);
      src = kw;
    }
    vk_pack_kt(src, nk, TILED_KP, dqk, kp + j0 * dqk, TILED_KP);
  }
}

// s[r][0..KP) = scale · Σ_d qp[d][r] · kp[d][0..KP)  for r < MR (row stride lds): the
// micro-kernel with A = the packed Q block (ars 1, aks MR), B = one K panel.
static inline void tiled_qk_panel(const float *qp, const float *kp, int64_t dqk, const float *scale,
                                  float *s, int64_t lds) {
  vk_tile(TILED_MR, TILED_NRV, VK_INIT_ZERO, NULL, qp, 1, TILED_MR, kp, TILED_KP, dqk, s, lds,
          scale, 0, NULL);
}

// s[r][0..kb) = scale · Σ_d q[r][d] · k[j][d]  for r < nrows, from unpacked Q rows (stride
// dqk) and K rows (stride dqk, kb of them). Four keys at a time share each Q load; a
// last group with fewer than four keys repeats key 0 of the group (in bounds; discarded).
static void tiled_qk_direct(const float *restrict q, int64_t nrows, const float *restrict kt,
                            int64_t kb, int64_t dqk, float scale, float *restrict s, int64_t lds) {
  const int64_t d_full = dqk / VF_W * VF_W;
  const int tail = (int)(dqk - d_full);
  for (int64_t r = 0; r < nrows; r++) {
    const float *qr = q + r * dqk;
    for (int64_t j = 0; j < kb; j += 4) {
      const float *k0 = kt + j * dqk;
      const float *k1 = j + 1 < kb ? k0 + dqk : k0;
      const float *k2 = j + 2 < kb ? k0 + 2 * dqk : k0;
      const float *k3 = j + 3 < kb ? k0 + 3 * dqk : k0;
      vf_t a0 = vf_zero(), a1 = vf_zero(), a2 = vf_zero(), a3 = vf_zero();
      for (int64_t d = 0; d < d_full; d += VF_W) {
        const vf_t qv = vf_load(qr + d);
        a0 = vf_fma(qv, vf_load(k0 + d), a0);
        a1 = vf_fma(qv, vf_load(k1 + d), a1);
        a2 = vf_fma(qv, vf_load(k2 + d), a2);
        a3 = vf_fma(qv, vf_load(k3 + d), a3);
      }
      if (tail) {
        const vf_t qv = vf_load_partial(qr + d_full, tail);  // zero lanes past dqk
        a0 = vf_fma(qv, vf_load_partial(k0 + d_full, tail), a0);
        a1 = vf_fma(qv, vf_load_partial(k1 + d_full, tail), a1);
        a2 = vf_fma(qv, vf_load_partial(k2 + d_full, tail), a2);
        a3 = vf_fma(qv, vf_load_partial(k3 + d_full, tail), a3);
      }
      float *sr = s + r * lds + j;
      sr[0] = vf_hsum(a0) * scale;
      if (j + 1 < kb) sr[1] = vf_hsum(a1) * scale;
      if (j + 2 < kb) sr[2] = vf_hsum(a2) * scale;
      if (j + 3 < kb) sr[3] = vf_hsum(a3) * scale;
    }
  }
}

// acc[0..nrows) = α·acc + P · V over all nvec vectors of head_dim_v: the micro-kernel
// (init α·acc) with A = P (row-major, stride lds), B = V rows (stride ldv), in register
// tiles of (TILED_MR, TILED_NV) for full row blocks, and (1, TILED_NV1) and (1, 1) row
// by row for a partial block (decode, tails): only its real rows are computed.
enum { TILED_NV1 = 8 };
static void tiled_pv_block(const float *p, int64_t lds, int64_t nk, const float *v, int64_t ldv,
                           float *acc, int64_t ldacc, const float *alpha, int64_t nrows,
                           int64_t nvec) {
  int64_t c = 0;
  if (nrows == TILED_MR) {
    for (; c + TILED_NV <= nvec; c += TILED_NV)
      vk_tile(TILED_MR, TILED_NV, VK_INIT_SCALED, alpha, p, lds, 1, v + c * VF_W, ldv, nk,
              acc + c * VF_W, ldacc, NULL, 0, NULL);
    for (; c < nvec; c++)
      vk_tile(TILED_MR, 1, VK_INIT_SCALED, alpha, p, lds, 1, v + c * VF_W, ldv, nk, acc + c * VF_W,
              ldacc, NULL, 0, NULL);
    return;
  }
  for (int64_t r = 0; r < nrows; r++) {  // a partial block: only its real rows
    const float *pr = p + r * lds;
    float *ar = acc + r * ldacc;
    for (c = 0; c + TILED_NV1 <= nvec; c += TILED_NV1)
      vk_tile(1, TILED_NV1, VK_INIT_SCALED, alpha + r, pr, lds, 1, v + c * VF_W, ldv, nk,
              ar + c * VF_W, ldacc, NULL, 0, NULL);
    for (; c < nvec; c++)
      vk_tile(1, 1, VK_INIT_SCALED, alpha + r, pr, lds, 1, v + c * VF_W, ldv, nk, ar + c * VF_W,
              ldacc, NULL, 0, NULL);
  }
}

// One query tile (rows i0 .. i0+nq) of head h against the packed K/V of its group.
static void tiled_query_tile(const attn_problem *p, const tiled_geom *g, const float *qh,
                             const float *kh, const float *kp, const float *vbase, int64_t ldv,
                             float *oh, int64_t i0, int64_t nq, float *ws_q, float *acc, float *s,
                             float *m, float *l, float *alpha) {
  const int64_t dqk = p->head_dim_qk, dv = p->head_dim_v, dv_pad = g->dv_pad;
  const int64_t nq_pad = tiled_round_up(nq, TILED_MR);
  const int64_t nvec = dv_pad / VF_W;
  if (!g->direct) tiled_pack_q(qh + i0 * dqk, nq, nq_pad, dqk, ws_q);
  for (int64_t r = 0; r < nq_pad; r++) {
    m[r] = -INFINITY;
    l[r] = 0.0f;
  }
  memset(acc, 0, (size_t)(nq_pad * dv_pad) * sizeof(float));

  // The last row sees the most keys; nothing past that is touched.
  const int64_t kv_end = attn_visible_keys(p, i0 + nq - 1);
  for (int64_t j0 = 0; j0 < kv_end; j0 += g->tkv) {
    const int64_t nk = kv_end - j0 < g->tkv ? kv_end - j0 : g->tkv;
    for (int64_t r0 = 0; r0 < nq_pad; r0 += TILED_MR) {
      const int64_t last = (r0 + TILED_MR < nq ? r0 + TILED_MR : nq) - 1;
      int64_t kb = attn_visible_keys(p, i0 + last) - j0;  // keys of the tile the block sees
      if (kb > nk) kb = nk;
      if (kb <= 0) continue;  // causal: the whole block is masked here; state unchanged
      const int64_t nrows = nq - r0 < TILED_MR ? nq - r0 : TILED_MR;  // real rows
      const int64_t kb_pad = tiled_round_up(kb, VF_W);

      // S = scale · Q_blk · K_tileᵀ over whole panels (j0 is a multiple of KP), or
      // directly from K for the block's real rows (rows past nq are masked below).
      if (g->direct) {
        tiled_qk_direct(qh + (i0 + r0) * dqk, nrows, kh + j0 * dqk, kb, dqk, p->scale, s, g->tkv);
      } else {
        const float *qblk = ws_q + r0 * dqk;
        for (int64_t c0 = 0; c0 < kb; c0 += TILED_KP)
          tiled_qk_panel(qblk, kp + (j0 + c0) * dqk, dqk, &p->scale, s + c0, g->tkv);
      }

      // Row-wise online softmax of the real rows (rows past nq are never read).
      for (int64_t r = 0; r < nrows; r++) {
        int64_t n = attn_visible_keys(p, i0 + r0 + r) - j0;
        n = n < 0 ? 0 : (n > kb ? kb : n);
        alpha[r] = vs_online_softmax_row(s + r * g->tkv, n, kb_pad, &m[r0 + r], &l[r0 + r]);
      }

      // acc = α·acc + P · V[j0 .. j0+kb) for the block's real rows.
      tiled_pv_block(s, g->tkv, kb, vbase + j0 * ldv, ldv, acc + r0 * dv_pad, dv_pad, alpha, nrows,
                     nvec);
    }
  }
  for (int64_t r = 0; r < nq; r++) {
    const float inv = l[r] > 0.0f ? 1.0f / l[r] : 0.0f;  // l = 0: the row saw no key
    vs_scale_store(oh + (i0 + r) * dv, acc + r * dv_pad, dv, inv);
  }
}

static int tiled_run(const attn_problem *p, const attn_exec *exec, const float *q, const void *kv,
                     const void *vv, float *o, void *workspace) {
  ATTN_ASSERT_PRECONDITIONS(p, q, kv, vv, o);
  assert(workspace != NULL);
  const tiled_geom g = tiled_geometry(p, exec);
  float *kp = workspace;
  float *kw = kp + g.kp;
  float *vp = kw + g.kw;
  float *qp = vp + g.vp;
  float *acc = qp + g.qp;
  float *s = acc + g.acc;
  float *m = s + g.s;
  float *l = m + g.tq;
  float *alpha = l + g.tq;
  const attn_fp_env env = attn_fp_env_enter();
  const int64_t group = p->heads / p->kv_heads;
  for (int64_t b = 0; b < p->batch; b++) {
    for (int64_t kvh = 0; kvh < p->kv_heads; kvh++) {
      // Packed (and widened) once per K/V head and reused by every query head of its
      // group (GQA).
      const attn_dtype t = p->kv_dtype;
      const size_t krb = attn_kv_row_bytes(t, p->head_dim_qk);
      const size_t vrb = attn_kv_row_bytes(t, p->head_dim_v);
      const char *kb = attn_kv_head(p, kv, b, kvh, p->head_dim_qk);
      const char *vb = attn_kv_head(p, vv, b, kvh, p->head_dim_v);
      const float *kh = (const float *)kb;  // the direct path's K rows (float32)
      if (!g.direct) {
        tiled_pack_k(t, kb, krb, p->seq_kv, g.skv_pad, p->head_dim_qk, kw, kp);
      } else if (t != ATTN_DTYPE_F32) {
        kv_widen_rows(t, kb, krb, p->seq_kv, p->head_dim_qk, kw, p->head_dim_qk, p->head_dim_qk);
        kh = kw;
      }
      // V rows padded to whole vectors (or V in place when dv is whole vectors); a type
      // other than F32 widened into the padded rows.
      const float *vbase = vp;
      if (t == ATTN_DTYPE_F32)
        vbase = vk_pad_v((const float *)vb, p->seq_kv, p->head_dim_v, g.dv_pad, vp);
      else
        kv_widen_rows(t, vb, vrb, p->seq_kv, p->head_dim_v, vp, g.dv_pad, g.dv_pad);
      for (int64_t h = kvh * group; h < (kvh + 1) * group; h++) {
        const float *qh = attn_q_head(p, q, b, h);
        float *oh = attn_o_head(p, o, b, h);
        for (int64_t i0 = 0; i0 < p->seq_q; i0 += g.tq) {
          const int64_t nq = p->seq_q - i0 < g.tq ? p->seq_q - i0 : g.tq;
          tiled_query_tile(p, &g, qh, kh, kp, vbase, g.dv_pad, oh, i0, nq, qp, acc, s, m, l, alpha);
        }
      }
    }
  }
  attn_fp_env_leave(env);
  return ATTN_OK;
}

// The record of tiled__<isa> (attn.h): its name, summary and required ISA flag (ATTN_ISA_*);
// every shape and K/V type (widened per head), the tiles above.
#define TILED_KERNEL(isa, isa_flag, summary_text)    \
  const attn_kernel attn_kernel_tiled__##isa = {     \
      .name = "tiled__" #isa,                        \
      .summary = summary_text,                       \
      .required_isa = isa_flag,                      \
      .caps = ATTN_CAP_ALL_SHAPES | ATTN_CAP_KV_ALL, \
      .workspace = tiled_workspace,                  \
      .run = tiled_run,                              \
      TILED_RECORD_TILES,                            \
  }
