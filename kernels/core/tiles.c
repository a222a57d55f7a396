// SPDX-License-Identifier: MIT
// The tile-size rule; the reasoning is in tiles.h.
#include "core/tiles.h"

#include <stdlib.h>

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
  const size_t d = (size_t)p->head_dim_qk, dv = (size_t)p->head_dim_v;
  size_t tkv = (l2 / 4) / (f * (d + dv));
  const size_t panel = l1d / (f * 64);  // tile_kv × 64 floats of V in L1d
  if (tkv > panel) tkv = panel;
  tkv = clamp_round(tkv, 32, 512, 32);
  // Resident per task: Q̂ (tq·D) + S/P (tq·tkv) + acc (tq·Dv) + K̂ᵀ and V̂ (tkv·(D+Dv)).
  const size_t half = l2 / 2, kv_tile = f * tkv * (d + dv);
  size_t tq = half > kv_tile ? (half - kv_tile) / (f * (d + tkv + dv)) : 0;
  tq = clamp_round(tq, 8, 256, 8);
  *tile_q = (int)tq;
  *tile_kv = (int)tkv;
}

// A positive integer from the environment variable `name`; 0 if unset or malformed
// (the harness reports malformed values; kernels just ignore them).
static int env_tile(const char *name) {
  const char *s = getenv(name);
  if (!s || !*s) return 0;
  char *end;
  const long v = strtol(s, &end, 10);
  return (*end == '\0' && v > 0 && v <= (1L << 20)) ? (int)v : 0;
}

void attn_tiles_resolve(const attn_problem *p, const attn_exec *exec, int *tile_q, int *tile_kv) {
  int tq, tkv;
  attn_tiles_for_caches(p, 0, 0, &tq, &tkv);
  const int eq = env_tile("ATTNBENCH_TILE_Q"), ekv = env_tile("ATTNBENCH_TILE_KV");
  *tile_q = exec && exec->tile_q > 0 ? exec->tile_q : eq > 0 ? eq : tq;
  *tile_kv = exec && exec->tile_kv > 0 ? exec->tile_kv : ekv > 0 ? ekv : tkv;
}
