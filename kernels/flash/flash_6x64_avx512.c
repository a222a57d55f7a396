// SPDX-License-Identifier: MIT
// flash__avx512, register-tile variant 2 (flash_avx512.h): Q·Kᵀ 6 query rows × 64 keys, P·V 8 rows
// × 48 columns. The same body as flash_avx512.c with other register tiles; the record there calls
// these entry points for attn_exec.regtile = 2.
#include "flash/flash_avx512.h"

#define FL_QK_MR FL_RT2_QK_MR
#define FL_QK_NV FL_RT2_QK_NV
#define FL_PV_MR FL_RT2_PV_MR
#define FL_PV_NV FL_RT2_PV_NV
#define FL_RUN flash_avx512_6x64_run
#define FL_WORKSPACE flash_avx512_6x64_workspace
#include "flash/flash_body.h"
