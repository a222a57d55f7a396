// SPDX-License-Identifier: MIT
// flash__avx2, register-tile variant 2 (flash_avx2.h): Q·Kᵀ 3 query rows × 32 keys, P·V 6 rows × 16
// columns. The same body as flash_avx2.c with other register tiles; the record there calls these
// entry points for attn_exec.regtile = 2.
#include "flash/flash_avx2.h"

// The k loop not unrolled here: with flash_avx2.h's 4× unroll, gcc keeps one of the 3×4
// Q·Kᵀ tile's 12 accumulators on the stack (a store-to-load chain per k step;
// docs/design.md). Same FMA order, same bits.
#undef VK_K_UNROLL
#define VK_K_UNROLL 1

#define FL_QK_MR FL_RT2_QK_MR
#define FL_QK_NV FL_RT2_QK_NV
#define FL_PV_MR FL_RT2_PV_MR
#define FL_PV_NV FL_RT2_PV_NV
#define FL_RUN flash_avx2_3x32_run
#define FL_WORKSPACE flash_avx2_3x32_workspace
#include "flash/flash_body.h"
