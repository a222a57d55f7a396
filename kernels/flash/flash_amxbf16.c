// SPDX-License-Identifier: MIT
// flash__amxbf16 — the flash kernel on AMX-BF16 tiles (TDPBF16PS) for the BF16 compute
// mode (attn.h, "Compute modes"); every other mode runs flash__avx512's F32 path (an AMX
// CPU has AVX-512). The BF16 body, its tiles and layouts: flash/flash_amx_body.h, here
// instantiated on the instructions (flash/amx_tiles_hw.h); the tests run the same body on
// a portable emulation of the tiles (tests/simd/test_flash_amx_emulated.c). Offered only
// where attn_cpu_features() reports ATTN_ISA_AMXBF16: the CPU has AMX-TILE and AMX-BF16,
// the OS enables tile state and (Linux) granted this process XTILEDATA
// (ARCH_REQ_XCOMP_PERM, kernels/core/cpu_features.c); elsewhere `list` says "needs
// amx-bf16". Compiled with -mamx-tile -mamx-bf16 and AVX-512 flags (kernels/CMakeLists.txt),
// only when the compiler has them.
// K/V of any stored type are read as stored (the packing widens and rounds them). Which
// problems reach the AMX body (dense, BF16 mode, not the decode route over a BF16 cache):
// flash/flash_bf16_route.h. Options go to the portable path (no ATTN_CAP_OPT_*).
#include "flash/amx_tiles_hw.h"
#include "flash/flash_amx_body.h"
#include "flash/flash_avx512.h"
#include "flash/flash_bf16_route.h"

extern const attn_kernel attn_kernel_flash__amxbf16;

static size_t flash_amx_workspace(const attn_problem *p, const attn_exec *exec) {
  return flash_bf16_kernel_workspace(&attn_kernel_flash__amxbf16, p, exec,
                                     amx_flash_bf16_workspace);
}

static int flash_amx_run(const attn_problem *p, const attn_exec *exec, const float *q,
                         const void *k, const void *v, float *o, void *workspace) {
  return flash_bf16_kernel_run(&attn_kernel_flash__amxbf16, p, exec, q, k, v, o, workspace,
                               amx_flash_bf16_run);
}

const attn_kernel attn_kernel_flash__amxbf16 = {
    .name = "flash__amxbf16",
    .summary =
        "BF16 compute mode on AMX tiles (tdpbf16ps): VNNI-pair bf16 K/V packed once, "
        "32-row tasks on 2x2 C tiles over 256-key spans, AVX-512 base-2 softmax, fp32 "
        "sums, P rounded to bf16; F32 mode is flash__avx512's",
    .required_isa = ATTN_ISA_AVX512F | ATTN_ISA_AVX512BF16 | ATTN_ISA_AMXBF16,
    .caps = ATTN_CAP_ALL_SHAPES | ATTN_CAP_THREADS | ATTN_CAP_KV_ALL | ATTN_CAP_LAYOUT_ALL |
            ATTN_CAP_COMPUTE_BF16,
    .workspace = flash_amx_workspace,
    .run = flash_amx_run,
    .vec_width = 16,
    .qk_rows = AMXF_TASK_ROWS,
    .qk_cols = AMXF_KEYS,
    .pv_rows = AMXF_TASK_ROWS,
    .pv_cols = 2 * AMXF_COLS,
};
