// SPDX-License-Identifier: MIT
// flash__avx512, register-tile variant 1 (flash_avx512.h): Q·Kᵀ 12 query rows × 32 keys, P·V 8 rows
// × 32 columns. The same body as flash_avx512.c with other register tiles; the record there calls
// these entry points for attn_exec.regtile = 1.
#include "flash/flash_avx512.h"

#define FL_QK_MR FL_RT1_QK_MR
#define FL_QK_NV FL_RT1_QK_NV
#define FL_PV_MR FL_RT1_PV_MR
#define FL_PV_NV FL_RT1_PV_NV
#define FL_RUN flash_avx512_12x32_run
#define FL_WORKSPACE flash_avx512_12x32_workspace
#include "flash/flash_body.h"
