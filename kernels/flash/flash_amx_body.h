// SPDX-License-Identifier: MIT
// flash_amx_body.h — the BF16 compute mode (attn.h, "Compute modes") of flash__amxbf16
// on AMX tiles, written once over a six-operation tile layer: include after
// flash/amx_tiles_hw.h (the instructions: flash_amxbf16.c) or the tests' portable C
// emulation of the same semantics (tests/simd/amx_tiles_emu.h), which runs this very
// packing, tiling and softmax on a CPU without AMX. Portable C apart from the tile layer;
// defines amx_flash_bf16_workspace / amx_flash_bf16_run (static: one instance per file).
//
// The maths (layouts, shapes and bound: docs/low-precision-kernels.md, "AMX-BF16"):
//   TDPBF16PS C[16 × 16 fp32] += A[16 × 16 bf16 pairs] · B[16 pairs × 16 columns], every
//   product exact in fp32, every sum fp32. Both GEMMs reduce over pairs (VNNI layout):
//   S = Q̂·K̂ᵀ   A = Q̂ rows (32 consecutive dims = 16 pairs), B = K̂ packed per block of 16
//              keys as [16 dim pairs][16 keys][2]: pair k of key n = (K[n][2k], K[n][2k+1]);
//   acc += P̃·V̂ A = P̃ rows (32 keys = 16 pairs), B = V̂ packed per 32 keys and 16 columns
//              as [16 key pairs][16 columns][2]: (V[2j][e], V[2j+1][e]).
// One task = 16 rows (query positions of the heads of one K/V group, stacked head-major so
// that GQA decode fills the tile) against the keys they see, in blocks of 32 keys:
//   S = ±Q̂·K̂ᵀ (two 16 × 16 C tiles, the sign of the scale in Q̂: bf16(−q) = −bf16(q))
//   per row: m' = max(m, c·max S), α = e^(m − m'), p = e^(c·S − m'), l' = α·l + Σ p,
//            acc ← α·acc (fp32, c = |scale|, keys past the row's limit get p = 0)
//   P̃ = bf16(p) (nearest even: the mode's rounding of p, relative error ≤ 2^-8)
//   acc += P̃·V̂ (one C tile per 16 columns of V, loaded from and stored to acc)
//   O = acc / l (l = 0: the row saw no key, zeros).
// Tiles (palette 1, all 16 rows × 64 bytes): 0 Q̂, 1–2 K̂ halves, 3–4 S halves, 5 P̃,
// 6 V̂, 7 acc. K̂ and V̂ are packed once per problem (all tasks read them), Q̂ per task.
// Causal: key blocks past the last key any row of the task sees are skipped. No option is
// native: attn_kernel_run sends problems with options to the portable path.
#pragma once

#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <string.h>

#include "core/attn_internal.h"
#include "core/convert.h"
#include "flash/amx_tilecfg.h"

enum {
  AMXF_ROWS = 16,    // query rows per task (tile rows)
  AMXF_KEYS = 32,    // keys per block: 2 S tiles of 16 keys, 1 P̃ tile of 16 key pairs
  AMXF_DCHUNK = 32,  // head_dim_qk elements per Q̂ tile (16 pairs)
  AMXF_COLS = 16,    // head_dim_v columns per V̂ / acc tile
  AMXF_TILE_BYTES = AMX_MAX_ROWS * AMX_MAX_COLSB,
};

typedef struct amxf_plan {
  int64_t hpg, dqkp, dvp;     // heads per group; head dims rounded up to 32 / 16
  int64_t nkb, nch, nce;      // key blocks, Q̂ tiles per row block, V̂/acc column tiles
  int64_t row_blocks, tasks;  // row blocks per (batch, group), all tasks
  size_t kv_tiles;            // K̂ + V̂ tiles of one K/V head
  size_t packed, scratch;     // bytes: packed K̂/V̂ of the problem; scratch per thread
  size_t off_q, off_s, off_p, off_acc, off_m, off_l;  // scratch regions (64-byte aligned)
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
  pl->row_blocks = (pl->hpg * p->seq_q + AMXF_ROWS - 1) / AMXF_ROWS;
  pl->tasks = p->batch * p->kv_heads * pl->row_blocks;
  // Per key block: 2 K̂ tiles per Q̂ chunk, 1 V̂ tile per column chunk.
  pl->kv_tiles = attn_size_mul_sat((size_t)pl->nkb, (size_t)(2 * pl->nch + pl->nce));
  const size_t heads = attn_size_mul_sat((size_t)p->batch, (size_t)p->kv_heads);
  pl->packed = attn_size_mul_sat(attn_size_mul_sat(heads, pl->kv_tiles), AMXF_TILE_BYTES);
  size_t off = 0;
#define AMXF_REGION(field, bytes) pl->field = off, off = attn_size_add_sat(off, amxf_align64(bytes))
  AMXF_REGION(off_q, (size_t)AMXF_ROWS * (size_t)pl->dqkp * 2);
  AMXF_REGION(off_s, (size_t)AMXF_ROWS * AMXF_KEYS * 4);
  AMXF_REGION(off_p, (size_t)AMXF_ROWS * AMXF_KEYS * 2);
  AMXF_REGION(off_acc, (size_t)AMXF_ROWS * (size_t)pl->dvp * 4);
  AMXF_REGION(off_m, (size_t)AMXF_ROWS * 4);
  AMXF_REGION(off_l, (size_t)AMXF_ROWS * 4);
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
// The K̂/V̂ tiles of K/V head (b, g), key block kb: 2·nch K̂ tiles (chunk c, half h at
// 2c + h), then nce V̂ tiles.
static uint16_t *amxf_block_tiles(const amxf_plan *pl, void *packed, int64_t head, int64_t kb) {
  const size_t tile = (size_t)head * pl->kv_tiles + (size_t)kb * (size_t)(2 * pl->nch + pl->nce);
  return (uint16_t *)((char *)packed + tile * AMXF_TILE_BYTES);
}

// K̂: tile (c, h) row k, pair n = (K[key][d], K[key][d + 1]), key = j0 + 16h + n,
// d = 32c + 2k. V̂: tile e row j, pair n = (V[j0 + 2j][16e + n], V[j0 + 2j + 1][16e + n]).
static void amxf_pack_block(const attn_problem *p, const amxf_plan *pl, const float *kh,
                            const float *vh, int64_t kb, uint16_t *t) {
  const int64_t dqk = p->head_dim_qk, dv = p->head_dim_v, j0 = kb * AMXF_KEYS;
  const int64_t nk = p->seq_kv - j0 < AMXF_KEYS ? p->seq_kv - j0 : AMXF_KEYS;
  memset(t, 0, (size_t)(2 * pl->nch + pl->nce) * AMXF_TILE_BYTES);
  for (int64_t key = 0; key < nk; key++) {
    const float *kr = kh + (j0 + key) * dqk;
    const int64_t h = key / 16, n = key % 16;
    for (int64_t d = 0; d < dqk; d++) {
      const int64_t c = d / AMXF_DCHUNK, k = (d % AMXF_DCHUNK) / 2;
      t[(2 * c + h) * (AMXF_TILE_BYTES / 2) + k * 32 + 2 * n + (d & 1)] = attn_f32_to_bf16(kr[d]);
    }
  }
  uint16_t *vt = t + 2 * pl->nch * (AMXF_TILE_BYTES / 2);
  for (int64_t key = 0; key < nk; key++) {
    const float *vr = vh + (j0 + key) * dv;
    for (int64_t e = 0; e < dv; e++)
      vt[(e / AMXF_COLS) * (AMXF_TILE_BYTES / 2) + (key / 2) * 32 + 2 * (e % AMXF_COLS) +
         (key & 1)] = attn_f32_to_bf16(vr[e]);
  }
}

// ── One task ──────────────────────────────────────────────────────────────────────────
typedef struct amxf_task {
  int64_t b, g, r0, nrows;  // rows r0 .. r0 + nrows of the group's hpg·seq_q (head-major)
  int32_t hi[AMXF_ROWS];    // each row's key limit (keys [0, hi): no option is native)
  int64_t hi_max;
} amxf_task;

static amxf_task amxf_task_at(const attn_problem *p, const amxf_plan *pl, int64_t t) {
  amxf_task w;
  w.b = t / (p->kv_heads * pl->row_blocks);
  w.g = t / pl->row_blocks % p->kv_heads;
  w.r0 = t % pl->row_blocks * AMXF_ROWS;
  const int64_t total = pl->hpg * p->seq_q;
  w.nrows = total - w.r0 < AMXF_ROWS ? total - w.r0 : AMXF_ROWS;
  w.hi_max = 0;
  for (int64_t r = 0; r < AMXF_ROWS; r++) {
    int64_t lo = 0, hi = 0;
    if (r < w.nrows) attn_row_keys(p, (w.r0 + r) % p->seq_q, &lo, &hi);
    w.hi[r] = (int32_t)(lo < hi ? hi : 0);
    w.hi_max = w.hi[r] > w.hi_max ? w.hi[r] : w.hi_max;
  }
  return w;
}

// Q̂ rows: qa[r][d] = bf16(q) with the scale's sign; zero rows past nrows, dims past dqk.
static void amxf_pack_q(const attn_problem *p, const amxf_plan *pl, const amxf_task *w,
                        const float *q, uint16_t *qa) {
  const uint16_t sign = p->scale < 0.0f ? 0x8000u : 0u;
  memset(qa, 0, (size_t)AMXF_ROWS * (size_t)pl->dqkp * 2);
  for (int64_t r = 0; r < w->nrows; r++) {
    const int64_t row = w->r0 + r, h = w->g * pl->hpg + row / p->seq_q;
    const float *src = attn_q_head(p, q, w->b, h) + row % p->seq_q * p->head_dim_qk;
    for (int64_t d = 0; d < p->head_dim_qk; d++)
      qa[r * pl->dqkp + d] = (uint16_t)(attn_f32_to_bf16(src[d]) ^ sign);
  }
}

// The online softmax of one row against key block j0 (S row s, lim keys visible, lim ≥ 0):
// P̃ row pb, α applied to the acc row; (m, l) updated. lim = 0 leaves all but pb alone.
static void amxf_softmax_row(const float *s, int64_t lim, float c, float *m, float *l, uint16_t *pb,
                             float *acc, int64_t dvp) {
  memset(pb, 0, AMXF_KEYS * sizeof *pb);
  if (lim <= 0) return;
  float mx = -INFINITY;
  for (int64_t j = 0; j < lim; j++) mx = s[j] > mx ? s[j] : mx;
  const float cm = c * mx, m_new = cm > *m ? cm : *m;         // c ≥ 0: c·max s = max c·s
  const float alpha = m_new == *m ? 1.0f : expf(*m - m_new);  // e^(−∞) = 0 at first
  float sum = 0.0f;
  for (int64_t j = 0; j < lim; j++) {
    const float pj = expf(c * s[j] - m_new);
    sum += pj;
    pb[j] = attn_f32_to_bf16(pj);
  }
  *l = alpha * *l + sum;
  *m = m_new;
  if (alpha != 1.0f)
    for (int64_t e = 0; e < dvp; e++) acc[e] *= alpha;
}

static void amxf_task_run(const attn_problem *p, const amxf_plan *pl, int64_t t, const float *q,
                          void *packed, float *o, char *scratch) {
  const amxf_task w = amxf_task_at(p, pl, t);
  uint16_t *qa = (uint16_t *)(scratch + pl->off_q), *pb = (uint16_t *)(scratch + pl->off_p);
  float *S = (float *)(scratch + pl->off_s), *acc = (float *)(scratch + pl->off_acc);
  float *m = (float *)(scratch + pl->off_m), *l = (float *)(scratch + pl->off_l);
  const int64_t dvp = pl->dvp, head = w.b * p->kv_heads + w.g;
  const long ldq = (long)pl->dqkp * 2, ldacc = (long)dvp * 4;
  const float c = fabsf(p->scale);
  for (int r = 0; r < AMXF_ROWS; r++) m[r] = -INFINITY, l[r] = 0.0f;
  memset(acc, 0, (size_t)AMXF_ROWS * (size_t)dvp * sizeof *acc);
  amxf_pack_q(p, pl, &w, q, qa);
  for (int64_t kb = 0; kb * AMXF_KEYS < w.hi_max; kb++) {
    const uint16_t *kt = amxf_block_tiles(pl, packed, head, kb);
    const uint16_t *vt = kt + 2 * pl->nch * (AMXF_TILE_BYTES / 2);
    AMX_TILE_ZERO(3);
    AMX_TILE_ZERO(4);
    for (int64_t ch = 0; ch < pl->nch; ch++) {
      AMX_TILE_LOAD(0, qa + ch * AMXF_DCHUNK, ldq);
      AMX_TILE_LOAD(1, kt + (2 * ch) * (AMXF_TILE_BYTES / 2), AMX_MAX_COLSB);
      AMX_TILE_LOAD(2, kt + (2 * ch + 1) * (AMXF_TILE_BYTES / 2), AMX_MAX_COLSB);
      AMX_TILE_DPBF16PS(3, 0, 1);
      AMX_TILE_DPBF16PS(4, 0, 2);
    }
    AMX_TILE_STORE(3, S, AMXF_KEYS * 4);
    AMX_TILE_STORE(4, S + 16, AMXF_KEYS * 4);
    for (int64_t r = 0; r < AMXF_ROWS; r++) {
      const int64_t lim = w.hi[r] - kb * AMXF_KEYS;
      amxf_softmax_row(S + r * AMXF_KEYS, lim > AMXF_KEYS ? AMXF_KEYS : lim, c, &m[r], &l[r],
                       pb + r * AMXF_KEYS, acc + r * dvp, dvp);
    }
    AMX_TILE_LOAD(5, pb, AMXF_KEYS * 2);
    for (int64_t e = 0; e < pl->nce; e++) {
      AMX_TILE_LOAD(7, acc + e * AMXF_COLS, ldacc);
      AMX_TILE_LOAD(6, vt + e * (AMXF_TILE_BYTES / 2), AMX_MAX_COLSB);
      AMX_TILE_DPBF16PS(7, 5, 6);
      AMX_TILE_STORE(7, acc + e * AMXF_COLS, ldacc);
    }
  }
  for (int64_t r = 0; r < w.nrows; r++) {
    const int64_t row = w.r0 + r, h = w.g * pl->hpg + row / p->seq_q;
    float *orow = attn_o_head(p, o, w.b, h) + row % p->seq_q * p->head_dim_v;
    const float inv = l[r] > 0.0f ? 1.0f / l[r] : 0.0f;
    for (int64_t e = 0; e < p->head_dim_v; e++) orow[e] = acc[r * dvp + e] * inv;
  }
}

// ── Entry point (BF16 mode, F32 K/V: the record declares no ATTN_CAP_KV_* bit) ──────
static int amx_flash_bf16_run(const attn_problem *p, const attn_exec *exec, const float *q,
                              const void *kv, const void *vv, float *o, void *workspace) {
  ATTN_ASSERT_PRECONDITIONS(p, q, kv, vv, o);
  assert(p->compute == ATTN_COMPUTE_BF16 && p->kv_dtype == ATTN_DTYPE_F32);
  const float *k = (const float *)kv, *v = (const float *)vv;
  amxf_plan pl;
  amxf_plan_make(p, exec, &pl);
  char *packed = workspace, *scratch0 = packed + amxf_align64(pl.packed);
  const int64_t pack_units = p->batch * p->kv_heads * pl.nkb;
#pragma omp parallel num_threads(pl.threads)
  {
    const attn_fp_env env = attn_fp_env_enter();
#pragma omp for schedule(static)
    for (int64_t u = 0; u < pack_units; u++) {
      const int64_t head = u / pl.nkb, b = head / p->kv_heads, g = head % p->kv_heads;
      amxf_pack_block(p, &pl, attn_k_head(p, k, b, g), attn_v_head(p, v, b, g), u % pl.nkb,
                      amxf_block_tiles(&pl, packed, head, u % pl.nkb));
    }  // the implicit barrier: every task reads every packed block of its head
    _Alignas(64) amx_tilecfg cfg;
    amx_tilecfg_init(&cfg);
    for (int tile = 0; tile < AMX_TILES; tile++)
      amx_tilecfg_set(&cfg, tile, AMX_MAX_ROWS, AMX_MAX_COLSB);
    AMX_TILE_CONFIG(&cfg);
    char *scratch = scratch0 + (size_t)omp_get_thread_num() * pl.scratch;
#pragma omp for schedule(dynamic, 1)
    for (int64_t t = 0; t < pl.tasks; t++) amxf_task_run(p, &pl, t, q, packed, o, scratch);
    AMX_TILE_RELEASE();
    attn_fp_env_leave(env);
  }
  return ATTN_OK;
}
