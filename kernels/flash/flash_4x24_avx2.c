// SPDX-License-Identifier: MIT
// flash__avx2, register-tile variant 1 (flash_avx2.h): Q·Kᵀ 4 query rows × 24 keys, P·V 4 rows × 24
// columns. The same body as flash_avx2.c with other register tiles; the record there calls these
// entry points for attn_exec.regtile = 1.
#include "flash/flash_avx2.h"

#define FL_QK_MR FL_RT1_QK_MR
#define FL_QK_NV FL_RT1_QK_NV
#define FL_PV_MR FL_RT1_PV_MR
#define FL_PV_NV FL_RT1_PV_NV
#define FL_RUN flash_avx2_4x24_run
#define FL_WORKSPACE flash_avx2_4x24_workspace
#include "flash/flash_body.h"
