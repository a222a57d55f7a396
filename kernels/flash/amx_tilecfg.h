// SPDX-License-Identifier: MIT
// amx_tilecfg.h — the 64-byte LDTILECFG operand (palette 1) shared by the two tile layers
// (kernels/flash/amx_tiles_hw.h: the instructions; tests/simd/amx_tiles_emu.h: portable C
// with the same semantics, the tests' backend).
// Palette 1 has 8 tiles of at most 16 rows × 64 bytes; a tile's rows and bytes per row
// (colsb) are fixed by the configuration, unused tiles are 0 × 0 and reserved bytes 0.
#pragma once

#include <stdint.h>
#include <string.h>

enum { AMX_TILES = 8, AMX_MAX_ROWS = 16, AMX_MAX_COLSB = 64 };

typedef struct amx_tilecfg {
  uint8_t palette, start_row, reserved[14];
  uint16_t colsb[16];
  uint8_t rows[16];
} amx_tilecfg;
_Static_assert(sizeof(amx_tilecfg) == 64, "LDTILECFG reads 64 bytes");

// A palette-1 configuration with every tile 0 × 0.
static inline void amx_tilecfg_init(amx_tilecfg *c) {
  memset(c, 0, sizeof *c);
  c->palette = 1;
}

// Tile t gets rows × colsb bytes (rows ≤ 16, colsb ≤ 64).
static inline void amx_tilecfg_set(amx_tilecfg *c, int t, int rows, int colsb) {
  c->rows[t] = (uint8_t)rows;
  c->colsb[t] = (uint16_t)colsb;
}
