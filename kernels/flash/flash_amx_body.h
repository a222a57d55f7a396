// SPDX-License-Identifier: MIT
// flash_amx_body.h — the BF16 compute mode (attn.h, "Compute modes") of flash__amxbf16
// on AMX tiles, written once over a six-operation tile layer: include after
// flash/amx_tiles_hw.h (the instructions: flash_amxbf16.c) or the tests' portable C
// emulation of the same semantics (tests/simd/amx_tiles_emu.h), which runs this very
// packing, tiling and softmax on a CPU without AMX. Include in a file compiled with
// AVX-512 (F, BW, VL) and AVX512_BF16: the packers and the softmax pass are
// flash__avx512bf16's (flash/flash_bf16_round.h). Defines
// amx_flash_bf16_workspace / amx_flash_bf16_run (static: one instance per file).
//
// The maths (layouts, shapes and bound: docs/low-precision-kernels.md, "flash__amxbf16"):
//   TDPBF16PS C[16 × 16 fp32] += A[16 × 16 bf16 pairs] · B[16 pairs × 16 columns], every
//   product exact in fp32, every sum fp32. Both GEMMs reduce over pairs (VNNI layout):
//   S = Q̂·K̂ᵀ   A = Q̂ rows (32 consecutive dims = 16 pairs), B = 16 rows of K̂ packed
//              [dqkp/2 pairs][32 keys] per block of 32 keys: pair k of key n at row k;
//   acc += P̃·V̂ A = P̃ rows (32 keys = 16 pairs), B = V̂ packed [16 key pairs][dvp] per
//              block of 32 keys: (V[2j][e], V[2j+1][e]) at row j, column e.
// One task = up to 32 rows (two row tiles; query positions of the heads of one K/V
// group, stacked head-major so that GQA decode fills a tile) against the keys they see,
// one span of up to AMXF_SPAN keys at a time (FlashAttention's outer loop on blocks big
// enough that the per-span rescale and the row reductions are a small part):
//   S = ±Q̂·K̂ᵀ over the span (C tiles stored to S; the sign of the scale is in Q̂)
//   per row: t = max S, m' = max(m, c·t), α = 2^(m₂ − m₂'), p = 2^(c₂·S − m₂'),
//            l' = α·l + Σ p, P̃ = bf16(p) (the mode's rounding of p, ≤ 2^-8 relative)
//            — bk_row_max / bk_exp_round, c = |scale|, keys past the row's limit p = 0
//   acc ← α·acc (AVX-512, rows whose α ≠ 1), then acc += P̃·V̂ (acc tiles loaded from
//   and stored to the task's acc rows once per span)
//   O = acc / l (l = 0: the row saw no key, zeros).
// Tiles (palette 1, all 16 rows × 64 bytes): 0–1 A (Q̂ or P̃ of row tiles 0, 1), 2–3 B
// (K̂ of keys 0–15 / 16–31, or V̂ of two column tiles), 4–7 C (row tile i, half h at
// 4 + 2i + h). K̂ and V̂ are packed once per problem (every task of the head reads them),
// Q̂ per task. Causal: spans and 32-key blocks past the last key any row of the task
// sees are skipped. No option is native: attn_kernel_run sends problems with options to
// the portable path.
#pragma once

#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <string.h>

#include "core/attn_internal.h"
#include "core/convert.h"
#include "flash/amx_tilecfg.h"
#include "flash/flash_bf16_round.h"

enum {
  AMXF_ROWS = 16,       // rows of a tile
  AMXF_TASK_ROWS = 32,  // query rows per task: two row tiles
  AMXF_KEYS = 32,       // keys per packed block: 2 K̂ column halves, 16 V̂ key pairs
  AMXF_DCHUNK = 32,     // head_dim_qk elements per Q̂ / K̂ tile (16 pairs)
  AMXF_COLS = 16,       // head_dim_v columns per V̂ / acc tile
  AMXF_SPAN = 256,      // keys per softmax step (S and P̃ rows), a multiple of AMXF_KEYS
};

typedef struct amxf_plan {
  int64_t hpg, dqkp, dvp;     // heads per group; head dims rounded up to 32 / 16
  int64_t nkb, nch, nce;      // 32-key blocks, Q̂ chunks per row, V̂/acc column tiles
  int64_t row_blocks, tasks;  // 32-row blocks per (batch, group), all tasks
  size_t block_bytes;         // one packed 32-key block: K̂ then V̂
  size_t packed, scratch;     // bytes: packed K̂/V̂ of the problem; scratch per thread
  size_t off_q, off_s, off_p, off_acc, off_rows, off_kc, off_cfg;  // scratch (64-aligned)
  int threads;
} amxf_plan;

static size_t amxf_align64(size_t n) {
  return n > SIZE_MAX - 63 ? SIZE_MAX : (n + 63) & ~(size_t)63;
}

static void amxf_plan_make(const attn_problem *p, const attn_exec *exec, amxf_plan *pl) {
  pl->hpg = p->heads / p->kv_heads;
  pl->dqkp = (p->head_dim_qk + AMXF_DCHUNK - 1) / AMXF_DCHUNK * AMXF_DCHUNK;
  pl->dvp = (p->head_dim_v + AMXF_COLS - 1) / AMXF_COLS * AMXF_COLS;
  pl->nkb = (p->seq_kv + AMXF_KEYS - 1) / AMXF_KEYS;
  pl->nch = pl->dqkp / AMXF_DCHUNK;
  pl->nce = pl->dvp / AMXF_COLS;
  pl->row_blocks = (pl->hpg * p->seq_q + AMXF_TASK_ROWS - 1) / AMXF_TASK_ROWS;
  pl->tasks = p->batch * p->kv_heads * pl->row_blocks;
  // K̂: dqkp/2 pair rows × 32 keys × 4 bytes; V̂: 16 key-pair rows × dvp × 4 bytes.
  pl->block_bytes = (size_t)(pl->dqkp + pl->dvp) * 64;
  const size_t heads = attn_size_mul_sat((size_t)p->batch, (size_t)p->kv_heads);
  pl->packed = attn_size_mul_sat(attn_size_mul_sat(heads, (size_t)pl->nkb), pl->block_bytes);
  size_t off = 0;
#define AMXF_REGION(field, bytes) pl->field = off, off = attn_size_add_sat(off, amxf_align64(bytes))
  AMXF_REGION(off_q, (size_t)AMXF_TASK_ROWS * (size_t)pl->dqkp * 2);
  AMXF_REGION(off_s, (size_t)AMXF_TASK_ROWS * AMXF_SPAN * 4);
  AMXF_REGION(off_p, (size_t)AMXF_TASK_ROWS * AMXF_SPAN * 2);
  AMXF_REGION(off_acc, (size_t)AMXF_TASK_ROWS * (size_t)pl->dvp * 4);
  AMXF_REGION(off_rows, (size_t)16 * (size_t)pl->dqkp * 2);  // bk_pack_k's row-form pairs
  const size_t kcw = (size_t)(p->head_dim_qk > p->head_dim_v ? p->head_dim_qk : p->head_dim_v);
  AMXF_REGION(off_kc, p->kv_dtype == ATTN_DTYPE_F32 ? 0 : (size_t)AMXF_KEYS * kcw * 4);
  AMXF_REGION(off_cfg, sizeof(amx_tilecfg));  // LDTILECFG's operand, not on the stack
#undef AMXF_REGION
  pl->scratch = off;
  pl->threads = attn_exec_threads(exec);
}

static size_t amx_flash_bf16_workspace(const attn_problem *p, const attn_exec *exec) {
  amxf_plan pl;
  amxf_plan_make(p, exec, &pl);
  return attn_size_add_sat(amxf_align64(pl.packed),
                           attn_size_mul_sat((size_t)pl.threads, pl.scratch));
}

// ── Packing (bf16, nearest even; zeros past every edge) ──────────────────────────────
// Packed block kb of K/V head `head`: K̂ (u32 [dqkp/2][32]) then V̂ (u32 [16][dvp]).
static uint32_t *amxf_block(const amxf_plan *pl, void *packed, int64_t head, int64_t kb) {
  const size_t block = (size_t)head * (size_t)pl->nkb + (size_t)kb;
  return (uint32_t *)((char *)packed + block * pl->block_bytes);
}

// K̂ row k, column n = pair k of key j0 + n; V̂ row j, column e = (V[j0 + 2j][e],
// V[j0 + 2j + 1][e]). Keys past seq_kv and columns past head_dim_v are zero. kh, vh: the
// head's rows as stored (p->kv_dtype; bk_pack_kv widens them in kc).
static void amxf_pack_block(const attn_problem *p, const amxf_plan *pl, const char *kh,
                            const char *vh, int64_t kb, uint32_t *blk, uint32_t *rows, float *kc) {
  const int64_t dqk = p->head_dim_qk, dv = p->head_dim_v, j0 = kb * AMXF_KEYS;
  const int64_t nk = p->seq_kv - j0 < AMXF_KEYS ? p->seq_kv - j0 : AMXF_KEYS;
  const attn_dtype ty = p->kv_dtype;
  const size_t krb = attn_kv_row_bytes(ty, dqk), vrb = attn_kv_row_bytes(ty, dv);
  const char *kj = kh + (size_t)j0 * krb, *vj = vh + (size_t)j0 * vrb;
  uint32_t *vt = blk + pl->dqkp / 2 * AMXF_KEYS;
  bk_pack_kv(ty, kj, krb, vj, vrb, nk, AMXF_KEYS, dqk, dv, pl->dvp, rows, kc, blk, AMXF_KEYS, vt);
  const int64_t pairs = (nk + 1) / 2;  // bk_pack_v writes the pairs that hold a key
  memset(vt + pairs * pl->dvp, 0, (size_t)((AMXF_KEYS / 2 - pairs) * pl->dvp) * sizeof *vt);
}

// ── One task ──────────────────────────────────────────────────────────────────────────
typedef struct amxf_task {
  int64_t b, g, r0, nrows;     // rows r0 .. r0 + nrows of the group's hpg·seq_q (head-major)
  int32_t hi[AMXF_TASK_ROWS];  // each row's key limit (keys [0, hi): no option is native)
  int64_t hi_max;
} amxf_task;

static amxf_task amxf_task_at(const attn_problem *p, const amxf_plan *pl, int64_t t) {
  amxf_task w;
  w.b = t / (p->kv_heads * pl->row_blocks);
  w.g = t / pl->row_blocks % p->kv_heads;
  w.r0 = t % pl->row_blocks * AMXF_TASK_ROWS;
  const int64_t total = pl->hpg * p->seq_q;
  w.nrows = total - w.r0 < AMXF_TASK_ROWS ? total - w.r0 : AMXF_TASK_ROWS;
  w.hi_max = 0;
  for (int64_t r = 0; r < AMXF_TASK_ROWS; r++) {
    int64_t lo = 0, hi = 0;
    if (r < w.nrows) attn_row_keys(p, (w.r0 + r) % p->seq_q, &lo, &hi);
    w.hi[r] = (int32_t)(lo < hi ? hi : 0);
    w.hi_max = w.hi[r] > w.hi_max ? w.hi[r] : w.hi_max;
  }
  return w;
}

// Q̂ rows: qa[r][d] = bf16(q) with the scale's sign (bf16(−q) = −bf16(q)), rows < tr
// (a multiple of 16); zero rows past nrows, dims past dqk.
static void amxf_pack_q(const attn_problem *p, const amxf_plan *pl, const amxf_task *w, int64_t tr,
                        const float *q, uint16_t *qa) {
  const __m512i sign = _mm512_set1_epi32(p->scale < 0.0f ? (int)0x80008000u : 0);
  for (int64_t r = 0; r < tr; r++) {
    uint16_t *dst = qa + r * pl->dqkp;
    if (r >= w->nrows) {
      memset(dst, 0, (size_t)pl->dqkp * sizeof *dst);
      continue;
    }
    const int64_t row = w->r0 + r, h = w->g * pl->hpg + row / p->seq_q;
    const float *src = attn_q_head(p, q, w->b, h) + row % p->seq_q * p->head_dim_qk;
    for (int64_t d = 0; d < pl->dqkp; d += AMXF_DCHUNK) {
      const int64_t left = p->head_dim_qk - d;
      const __m512i pairs = bk_round_pairs(src + d, left >= 32 ? 32 : (int)left);
      _mm512_storeu_si512(dst + d, _mm512_xor_si512(pairs, sign));
    }
  }
}

// S rows [0, 16·mr) × keys [0, 32·nsb) of the span starting at block kb0 (row stride
// AMXF_SPAN floats). mr (1 or 2) is a compile-time constant: tile numbers are immediates.
BK_INLINE void amxf_qk(const int mr, const amxf_plan *pl, void *packed, int64_t head, int64_t kb0,
                       int64_t nsb, const uint16_t *qa, float *S) {
  const long ldq = (long)pl->dqkp * 2, lds = AMXF_SPAN * 4, ldk = AMXF_KEYS * 4;
  for (int64_t sb = 0; sb < nsb; sb++) {
    const uint32_t *kt = amxf_block(pl, packed, head, kb0 + sb);
    AMX_TILE_ZERO(4);
    AMX_TILE_ZERO(5);
    if (mr == 2) {
      AMX_TILE_ZERO(6);
      AMX_TILE_ZERO(7);
    }
    for (int64_t ch = 0; ch < pl->nch; ch++) {
      AMX_TILE_LOAD(2, kt + ch * 16 * AMXF_KEYS, ldk);
      AMX_TILE_LOAD(3, kt + ch * 16 * AMXF_KEYS + 16, ldk);
      AMX_TILE_LOAD(0, qa + ch * AMXF_DCHUNK, ldq);
      AMX_TILE_DPBF16PS(4, 0, 2);
      AMX_TILE_DPBF16PS(5, 0, 3);
      if (mr == 2) {
        AMX_TILE_LOAD(1, qa + AMXF_ROWS * pl->dqkp + ch * AMXF_DCHUNK, ldq);
        AMX_TILE_DPBF16PS(6, 1, 2);
        AMX_TILE_DPBF16PS(7, 1, 3);
      }
    }
    float *s = S + sb * AMXF_KEYS;
    AMX_TILE_STORE(4, s, lds);
    AMX_TILE_STORE(5, s + 16, lds);
    if (mr == 2) {
      AMX_TILE_STORE(6, s + AMXF_ROWS * AMXF_SPAN, lds);
      AMX_TILE_STORE(7, s + AMXF_ROWS * AMXF_SPAN + 16, lds);
    }
  }
}

// acc rows [0, 16·mr) += P̃·V̂ over the span's nsb blocks from kb0: per pair of column
// tiles, the acc tiles are loaded once, accumulate every block, and are stored once.
BK_INLINE void amxf_pv(const int mr, const amxf_plan *pl, void *packed, int64_t head, int64_t kb0,
                       int64_t nsb, const uint16_t *P, float *acc) {
  const int64_t dvp = pl->dvp;
  const long ldp = AMXF_SPAN * 2, ldacc = (long)dvp * 4, ldv = (long)dvp * 4;
  const int64_t voff = pl->dqkp / 2 * AMXF_KEYS;  // V̂ after K̂ in a block (u32)
  for (int64_t e = 0; e < pl->nce; e += 2) {
    const int two = e + 1 < pl->nce;
    float *a0 = acc + e * AMXF_COLS, *a1 = a0 + AMXF_ROWS * dvp;
    AMX_TILE_LOAD(4, a0, ldacc);
    if (two) AMX_TILE_LOAD(5, a0 + AMXF_COLS, ldacc);
    if (mr == 2) {
      AMX_TILE_LOAD(6, a1, ldacc);
      if (two) AMX_TILE_LOAD(7, a1 + AMXF_COLS, ldacc);
    }
    for (int64_t sb = 0; sb < nsb; sb++) {
      const uint32_t *vt = amxf_block(pl, packed, head, kb0 + sb) + voff + e * AMXF_COLS;
      AMX_TILE_LOAD(0, P + sb * AMXF_KEYS, ldp);
      AMX_TILE_LOAD(2, vt, ldv);
      AMX_TILE_DPBF16PS(4, 0, 2);
      if (two) {
        AMX_TILE_LOAD(3, vt + AMXF_COLS, ldv);
        AMX_TILE_DPBF16PS(5, 0, 3);
      }
      if (mr == 2) {
        AMX_TILE_LOAD(1, P + AMXF_ROWS * AMXF_SPAN + sb * AMXF_KEYS, ldp);
        AMX_TILE_DPBF16PS(6, 1, 2);
        if (two) AMX_TILE_DPBF16PS(7, 1, 3);
      }
    }
    AMX_TILE_STORE(4, a0, ldacc);
    if (two) AMX_TILE_STORE(5, a0 + AMXF_COLS, ldacc);
    if (mr == 2) {
      AMX_TILE_STORE(6, a1, ldacc);
      if (two) AMX_TILE_STORE(7, a1 + AMXF_COLS, ldacc);
    }
  }
}

// The span's softmax over rows [0, tr): P̃ rows written (zeros past each row's limit and
// up to npad), (m, l) updated, acc rows rescaled by α where α ≠ 1. Two passes over the
// rows, as flash__avx512bf16's: every row's maximum first, so that one row's reduction
// and the exp pass that waits on it overlap with the other rows' work.
static void amxf_softmax_span(const amxf_task *w, int64_t tr, int64_t j0, int64_t nk, int64_t npad,
                              float c, const float *S, uint16_t *P, float *m, float *l, float *acc,
                              int64_t dvp) {
  int64_t lim[AMXF_TASK_ROWS];
  float t[AMXF_TASK_ROWS];
  for (int64_t r = 0; r < tr; r++) {
    const int64_t left = w->hi[r] - j0;
    lim[r] = left <= 0 ? 0 : left > nk ? nk : left;
    t[r] = bk_row_max(S + r * AMXF_SPAN, lim[r]);
  }
  for (int64_t r = 0; r < tr; r++) {
    const float alpha =
        bk_exp_round(S + r * AMXF_SPAN, lim[r], npad, c, t[r], &m[r], &l[r], P + r * AMXF_SPAN);
    if (alpha != 1.0f) {
      const __m512 va = _mm512_set1_ps(alpha);
      float *a = acc + r * dvp;
      for (int64_t e = 0; e < dvp; e += 16)
        _mm512_storeu_ps(a + e, _mm512_mul_ps(va, _mm512_loadu_ps(a + e)));
    }
  }
}

static void amxf_task_run(const attn_problem *p, const amxf_plan *pl, int64_t t, const float *q,
                          void *packed, float *o, char *scratch) {
  const amxf_task w = amxf_task_at(p, pl, t);
  uint16_t *qa = (uint16_t *)(scratch + pl->off_q), *P = (uint16_t *)(scratch + pl->off_p);
  float *S = (float *)(scratch + pl->off_s), *acc = (float *)(scratch + pl->off_acc);
  const int64_t dvp = pl->dvp, head = w.b * p->kv_heads + w.g;
  const int mr = w.nrows > AMXF_ROWS ? 2 : 1;
  const int64_t tr = (int64_t)mr * AMXF_ROWS;
  const float c = fabsf(p->scale);
  float m[AMXF_TASK_ROWS], l[AMXF_TASK_ROWS];
  for (int r = 0; r < AMXF_TASK_ROWS; r++) m[r] = -INFINITY, l[r] = 0.0f;
  memset(acc, 0, (size_t)(tr * dvp) * sizeof *acc);
  amxf_pack_q(p, pl, &w, tr, q, qa);
  for (int64_t j0 = 0; j0 < w.hi_max; j0 += AMXF_SPAN) {
    const int64_t nk = w.hi_max - j0 < AMXF_SPAN ? w.hi_max - j0 : AMXF_SPAN;
    const int64_t nsb = (nk + AMXF_KEYS - 1) / AMXF_KEYS, kb0 = j0 / AMXF_KEYS;
    if (mr == 2)
      amxf_qk(2, pl, packed, head, kb0, nsb, qa, S);
    else
      amxf_qk(1, pl, packed, head, kb0, nsb, qa, S);
    amxf_softmax_span(&w, tr, j0, nk, nsb * AMXF_KEYS, c, S, P, m, l, acc, dvp);
    if (mr == 2)
      amxf_pv(2, pl, packed, head, kb0, nsb, P, acc);
    else
      amxf_pv(1, pl, packed, head, kb0, nsb, P, acc);
  }
  for (int64_t r = 0; r < w.nrows; r++) {
    const int64_t row = w.r0 + r, h = w.g * pl->hpg + row / p->seq_q;
    float *orow = attn_o_head(p, o, w.b, h) + row % p->seq_q * p->head_dim_v;
    const float inv = l[r] > 0.0f ? 1.0f / l[r] : 0.0f;
    for (int64_t e = 0; e < p->head_dim_v; e++) orow[e] = acc[r * dvp + e] * inv;
  }
}

// ── Entry point (BF16 mode, K/V of any stored type) ─────────────────────────────────
static int amx_flash_bf16_run(const attn_problem *p, const attn_exec *exec, const float *q,
                              const void *k, const void *v, float *o, void *workspace) {
  ATTN_ASSERT_PRECONDITIONS(p, q, k, v, o);
  assert(p->compute == ATTN_COMPUTE_BF16);
  amxf_plan pl;
  amxf_plan_make(p, exec, &pl);
  char *packed = workspace, *scratch0 = packed + amxf_align64(pl.packed);
  const int64_t pack_units = p->batch * p->kv_heads * pl.nkb;
#pragma omp parallel num_threads(pl.threads)
  {
    const attn_fp_env env = attn_fp_env_enter();
    char *scratch = scratch0 + (size_t)omp_get_thread_num() * pl.scratch;
    uint32_t *rows = (uint32_t *)(scratch + pl.off_rows);
#pragma omp for schedule(static)
    for (int64_t u = 0; u < pack_units; u++) {
      const int64_t head = u / pl.nkb, b = head / p->kv_heads, g = head % p->kv_heads;
      amxf_pack_block(p, &pl, attn_kv_head(p, k, b, g, p->head_dim_qk),
                      attn_kv_head(p, v, b, g, p->head_dim_v), u % pl.nkb,
                      amxf_block(&pl, packed, head, u % pl.nkb), rows,
                      (float *)(scratch + pl.off_kc));
    }  // the implicit barrier: every task reads every packed block of its head
    amx_tilecfg *cfg = (amx_tilecfg *)(scratch + pl.off_cfg);
    amx_tilecfg_init(cfg);
    for (int tile = 0; tile < AMX_TILES; tile++)
      amx_tilecfg_set(cfg, tile, AMX_MAX_ROWS, AMX_MAX_COLSB);
    AMX_TILE_CONFIG(cfg);
#pragma omp for schedule(dynamic, 1)
    for (int64_t t = 0; t < pl.tasks; t++) amxf_task_run(p, &pl, t, q, packed, o, scratch);
    AMX_TILE_RELEASE();
    attn_fp_env_leave(env);
  }
  return ATTN_OK;
}
