// SPDX-License-Identifier: MIT
// The tile-size rule; the reasoning is in tiles.h.
#include "core/tiles.h"

static size_t clamp_round(size_t x, size_t lo, size_t hi, size_t mult) {
  if (x > hi) x = hi;
  x -= x % mult;
  return x < lo ? lo : x;
}

void attn_tiles_for_caches(const attn_problem *p, size_t l1d, size_t l2, int *tile_q,
                           int *tile_kv) {
  if (l1d == 0) l1d = ATTN_TILES_DEFAULT_L1D;
  if (l2 == 0) l2 = ATTN_TILES_DEFAULT_L2;
  const size_t f = sizeof(float);
  // Bytes of a packed K̂/V̂ element: BF16 and F16 modes pack 16-bit values.
  const size_t e = p->compute == ATTN_COMPUTE_BF16 || p->compute == ATTN_COMPUTE_F16 ? 2 : f;
  const size_t d = (size_t)p->head_dim_qk, dv = (size_t)p->head_dim_v;
  size_t tkv = (l2 / 4) / (e * (d + dv));
  const size_t panel = l1d / (e * 64);  // tile_kv × 64 elements of V̂ in L1d
  if (tkv > panel) tkv = panel;
  tkv = clamp_round(tkv, 32, 512, 32);
  // Resident per task: Q̂ (tq·D) + S/P (tq·tkv) + acc (tq·Dv) + K̂ᵀ and V̂ (tkv·(D+Dv)).
  const size_t half = l2 / 2, kv_tile = e * tkv * (d + dv);
  size_t tq = half > kv_tile ? (half - kv_tile) / (f * (d + tkv + dv)) : 0;
  tq = clamp_round(tq, 8, 256, 8);
  *tile_q = (int)tq;
  *tile_kv = (int)tkv;
}

void attn_tiles_resolve(const attn_problem *p, const attn_exec *exec, int *tile_q, int *tile_kv) {
  int tq, tkv;
  attn_tiles_for_caches(p, 0, 0, &tq, &tkv);
  *tile_q = exec && exec->tile_q > 0 ? exec->tile_q : tq;
  *tile_kv = exec && exec->tile_kv > 0 ? exec->tile_kv : tkv;
}
