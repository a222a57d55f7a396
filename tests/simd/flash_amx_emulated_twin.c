// SPDX-License-Identifier: MIT
// The test twin of flash__amxbf16 (flash_amx_emulated_twin.h): kernels/flash/flash_amx_body.h
// on the portable tile layer (amx_tiles_emu.h) instead of amx_tiles_hw.h, compiled with the
// kernel's AVX-512 and AVX512_BF16 flags (tests/simd/CMakeLists.txt).
#include "flash_amx_emulated_twin.h"

#include "amx_tiles_emu.h"
#include "flash/flash_amx_body.h"

const attn_kernel flash_amx_emulated_twin = {
    .name = "flash__amxbf16_emulated",
    .summary = "flash__amxbf16's BF16 body on emulated tiles (test backend)",
    .required_isa = ATTN_ISA_AVX512F | ATTN_ISA_AVX512BF16,
    .caps = ATTN_CAP_ALL_SHAPES | ATTN_CAP_THREADS | ATTN_CAP_KV_ALL | ATTN_CAP_COMPUTE_BF16,
    .workspace = amx_flash_bf16_workspace,
    .run = amx_flash_bf16_run,
};

void flash_amx_emulated_twin_swap_pairs(int on) {
  amx_emu_swap_pairs = on;
}

const double flash_amx_emulated_twin_exp2_rel = BK_EXP2_REL;

void flash_amx_emulated_twin_exp2(const float *x, float *y, size_t n) {
  const attn_fp_env env = attn_fp_env_enter();
  for (size_t i = 0; i < n; i += 16) _mm512_storeu_ps(y + i, bk_exp2(_mm512_loadu_ps(x + i)));
  attn_fp_env_leave(env);
}
