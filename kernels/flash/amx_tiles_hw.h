// SPDX-License-Identifier: MIT
// amx_tiles_hw.h — the tile layer of flash_amx_body.h on the AMX instructions. Include in
// a file compiled with -mamx-tile -mamx-bf16, before the body; tests/simd/amx_tiles_emu.h defines
// the same six operations in portable C (the tests' backend). Tile numbers are literal
// constants (the instructions encode them).
//   AMX_TILE_CONFIG(cfg)        LDTILECFG (cfg: const amx_tilecfg *, 64-byte operand)
//   AMX_TILE_RELEASE()          TILERELEASE (back to the init state)
//   AMX_TILE_ZERO(t)            TILEZERO
//   AMX_TILE_LOAD(t, base, ld)  TILELOADD: row r from base + r·ld bytes
//   AMX_TILE_STORE(t, base, ld) TILESTORED
//   AMX_TILE_DPBF16PS(c, a, b)  TDPBF16PS: C[m][n] += Σ_k a.bf16[m][2k]·b.bf16[k][2n] +
//                               a.bf16[m][2k+1]·b.bf16[k][2n+1] in float32
#pragma once

#include <immintrin.h>

#include "flash/amx_tilecfg.h"

#define AMX_TILE_CONFIG(cfg) _tile_loadconfig(cfg)
#define AMX_TILE_RELEASE() _tile_release()
#define AMX_TILE_ZERO(t) _tile_zero(t)
#define AMX_TILE_LOAD(t, base, ld) _tile_loadd(t, base, ld)
#define AMX_TILE_STORE(t, base, ld) _tile_stored(t, base, ld)
#define AMX_TILE_DPBF16PS(c, a, b) _tile_dpbf16ps(c, a, b)
