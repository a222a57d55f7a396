// SPDX-License-Identifier: MIT
// amx_tiles_emu.h — the tile layer of kernels/flash/flash_amx_body.h in portable C: the
// same six operations as kernels/flash/amx_tiles_hw.h with the semantics of the Intel SDM,
// so that the AMX kernel's packing, tiling and softmax run (and are checked) on any CPU.
// A test backend: the kernel itself is only ever built on the instructions.
//   LDTILECFG   palette 1 only; records rows × colsb per tile and zeroes every tile.
//   TILELOADD   rows[t] rows of colsb[t] bytes from base + r·stride; the rest of the tile 0.
//   TILESTORED  rows[t] rows of colsb[t] bytes to base + r·stride.
//   TDPBF16PS   C (M × N fp32) += A (M × K bf16 pairs) · B (K × N bf16 pairs):
//               for m, for k, for n: c[m][n] += f32(a[m][2k])·f32(b[k][2n]);
//                                    c[m][n] += f32(a[m][2k+1])·f32(b[k][2n+1])
//               — each product exact in float32 (8-bit significands), each sum rounded to
//               nearest even; bf16 inputs below FLT_MIN read as 0 (DAZ) and results below
//               FLT_MIN flush to 0 (FTZ), whatever MXCSR says. The shapes must agree
//               (rows[a] = M, rows[b] = K = colsb[a]/4, colsb[b] = colsb[c]), or the
//               instruction faults: here the program aborts with the reason.
// State is per thread (_Thread_local), as tile registers are.
// Fault injection for must-fail tests: amx_emu_swap_pairs = 1 swaps the two bf16 halves of
// every B pair in TDPBF16PS (a packer that interleaves the pairs the wrong way round).
#pragma once

#include <float.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "flash/amx_tilecfg.h"

typedef struct amx_emu_state {
  bool configured;
  amx_tilecfg cfg;
  unsigned char t[AMX_TILES][AMX_MAX_ROWS][AMX_MAX_COLSB];
} amx_emu_state;

static _Thread_local amx_emu_state amx_emu;
static int amx_emu_swap_pairs;  // fault injection (see above); set before any parallel region

static void amx_emu_fault(const char *what) {
  fprintf(stderr, "amx emulation: %s (the instruction would fault)\n", what);
  abort();
}

static void amx_emu_need(int t) {
  if (!amx_emu.configured) amx_emu_fault("tile instruction without LDTILECFG");
  if (t < 0 || t >= AMX_TILES || amx_emu.cfg.rows[t] == 0 || amx_emu.cfg.colsb[t] == 0)
    amx_emu_fault("tile not configured");
}

static void amx_emu_config(const amx_tilecfg *c) {
  if (c->palette != 1) amx_emu_fault("palette other than 1");
  for (int t = 0; t < 16; t++) {
    const bool used = t < AMX_TILES && c->rows[t] && c->colsb[t];
    if (t >= AMX_TILES && (c->rows[t] || c->colsb[t])) amx_emu_fault("tile 8..15 configured");
    if (used && (c->rows[t] > AMX_MAX_ROWS || c->colsb[t] > AMX_MAX_COLSB || c->colsb[t] % 4))
      amx_emu_fault("tile larger than 16 rows x 64 bytes");
  }
  amx_emu.cfg = *c;
  amx_emu.configured = true;
  memset(amx_emu.t, 0, sizeof amx_emu.t);
}

static void amx_emu_release(void) {
  amx_emu.configured = false;
  memset(amx_emu.t, 0, sizeof amx_emu.t);
}

static void amx_emu_zero(int t) {
  amx_emu_need(t);
  memset(amx_emu.t[t], 0, sizeof amx_emu.t[t]);
}

static void amx_emu_load(int t, const void *base, long stride) {
  amx_emu_need(t);
  memset(amx_emu.t[t], 0, sizeof amx_emu.t[t]);
  for (int r = 0; r < amx_emu.cfg.rows[t]; r++)
    memcpy(amx_emu.t[t][r], (const char *)base + (long)r * stride, amx_emu.cfg.colsb[t]);
}

static void amx_emu_store(int t, void *base, long stride) {
  amx_emu_need(t);
  for (int r = 0; r < amx_emu.cfg.rows[t]; r++)
    memcpy((char *)base + (long)r * stride, amx_emu.t[t][r], amx_emu.cfg.colsb[t]);
}

// bf16 element e of row r of tile t as float32, DAZ.
static float amx_emu_bf16(int t, int r, int e) {
  uint16_t h;
  memcpy(&h, &amx_emu.t[t][r][2 * e], sizeof h);
  if ((h & 0x7f80u) == 0) h &= 0x8000u;  // a subnormal (or zero) reads as ±0
  const uint32_t u = (uint32_t)h << 16;
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

static float amx_emu_ftz(float x) {
  return x > -FLT_MIN && x < FLT_MIN ? 0.0f * x : x;
}

static void amx_emu_dpbf16ps(int c, int a, int b) {
  amx_emu_need(c), amx_emu_need(a), amx_emu_need(b);
  const amx_tilecfg *g = &amx_emu.cfg;
  const int M = g->rows[c], N = g->colsb[c] / 4, K = g->colsb[a] / 4;
  if (g->rows[a] != M || g->rows[b] != K || g->colsb[b] != g->colsb[c])
    amx_emu_fault("tdpbf16ps shapes do not agree");
  const int lo = amx_emu_swap_pairs ? 1 : 0, hi = 1 - lo;
  for (int m = 0; m < M; m++) {
    float tmp[AMX_MAX_COLSB / 4];
    memcpy(tmp, amx_emu.t[c][m], (size_t)N * sizeof(float));
    for (int k = 0; k < K; k++)
      for (int n = 0; n < N; n++) {
        const float p0 = amx_emu_bf16(a, m, 2 * k) * amx_emu_bf16(b, k, 2 * n + lo);
        tmp[n] = amx_emu_ftz(tmp[n] + p0);
        const float p1 = amx_emu_bf16(a, m, 2 * k + 1) * amx_emu_bf16(b, k, 2 * n + hi);
        tmp[n] = amx_emu_ftz(tmp[n] + p1);
      }
    memcpy(amx_emu.t[c][m], tmp, (size_t)N * sizeof(float));
  }
}

#define AMX_TILE_CONFIG(cfg) amx_emu_config(cfg)
#define AMX_TILE_RELEASE() amx_emu_release()
#define AMX_TILE_ZERO(t) amx_emu_zero(t)
#define AMX_TILE_LOAD(t, base, ld) amx_emu_load(t, base, ld)
#define AMX_TILE_STORE(t, base, ld) amx_emu_store(t, base, ld)
#define AMX_TILE_DPBF16PS(c, a, b) amx_emu_dpbf16ps(c, a, b)
