// SPDX-License-Identifier: MIT
// The AMX-BF16 tile throughput loop (peak.h): tdpbf16ps C[16x16 fp32] += A[16x32 bf16] ·
// B[32x16 bf16 in pairs], 16·16·32 multiply-adds per instruction. Compiled with only AMX's
// flags; run only where attn_cpu_features() reports ATTN_ISA_AMXBF16 (the OS has granted
// tile data to the process). AMX has 8 tile registers: 6 independent accumulators (C) and
// one A and one B tile — more than the instruction's latency / throughput needs (the
// PEAK_CHAINS rule of the vector loops cannot apply). A holds (x, −x) pairs and B (y, y),
// so each product adds 0 and the accumulators stay at zero.
#include <immintrin.h>
#include <string.h>

#include "peak.h"

enum { kRows = 16, kColBytes = 64 };

typedef struct tile_config {  // the 64-byte ldtilecfg operand, palette 1
  uint8_t palette, start_row, reserved[14];
  uint16_t colsb[16];
  uint8_t rows[16];
} tile_config;

uint64_t attn_peak_loop__amxbf16(uint64_t iters, float *sink) {
  _Alignas(64) tile_config cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.palette = 1;
  for (int t = 0; t < 8; t++) cfg.rows[t] = kRows, cfg.colsb[t] = kColBytes;
  _Alignas(64) uint16_t a[kRows * 32], b[kRows * 32];
  _Alignas(64) float c[kRows * 16];
  for (int i = 0; i < kRows * 32; i++) {
    a[i] = (i & 1) ? 0xbd80 : 0x3d80;  // bf16 −1/16 and 1/16
    b[i] = 0x3e00;                     // bf16 1/8
  }
  memset(c, 0, sizeof c);
  _tile_loadconfig(&cfg);
  _tile_loadd(0, c, kColBytes);
  _tile_loadd(1, c, kColBytes);
  _tile_loadd(2, c, kColBytes);
  _tile_loadd(3, c, kColBytes);
  _tile_loadd(4, c, kColBytes);
  _tile_loadd(5, c, kColBytes);
  _tile_loadd(6, a, kColBytes);
  _tile_loadd(7, b, kColBytes);
  for (uint64_t it = 0; it < iters; it++) {
    _tile_dpbf16ps(0, 6, 7);
    _tile_dpbf16ps(1, 6, 7);
    _tile_dpbf16ps(2, 6, 7);
    _tile_dpbf16ps(3, 6, 7);
    _tile_dpbf16ps(4, 6, 7);
    _tile_dpbf16ps(5, 6, 7);
  }
  float s = 0.0f;
  _tile_stored(0, c, kColBytes);
  for (int i = 0; i < kRows * 16; i++) s += c[i];
  _tile_stored(5, c, kColBytes);
  for (int i = 0; i < kRows * 16; i++) s += c[i];
  _tile_release();
  *sink = s;
  return iters * 6u * 16384u;  // 16 x 16 x 32 x (multiply + add) per tdpbf16ps
}
