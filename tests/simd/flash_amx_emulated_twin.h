// SPDX-License-Identifier: MIT
// flash_amx_emulated_twin.h — flash__amxbf16's BF16 body (kernels/flash/flash_amx_body.h)
// instantiated on the portable tile emulation (amx_tiles_emu.h) in
// flash_amx_emulated_twin.c, a file compiled with the kernel's AVX-512 and AVX512_BF16
// flags (the body's packers and softmax are flash__avx512bf16's): the kernel's packing,
// tiling and softmax, run without AMX on any CPU with AVX512_BF16. Test-only: not in the
// registry. Plain C declarations.
#pragma once

#include "attn.h"

// The body's record: BF16 compute mode only, required_isa AVX512F | AVX512BF16.
extern const attn_kernel flash_amx_emulated_twin;

// Fault injection: on = 1 makes the emulated TDPBF16PS read every B pair the wrong way
// round (amx_tiles_emu.h, amx_emu_swap_pairs). Set outside any parallel region.
void flash_amx_emulated_twin_swap_pairs(int on);

// bk_exp2 (flash/flash_bf16_round.h, the BF16 softmax's 2^x) on x[0 .. n) (n a multiple of
// 16) into y, in the kernels' FP environment (attn_fp_env_enter: FTZ, nearest); and its
// documented relative error bound, BK_EXP2_REL.
void flash_amx_emulated_twin_exp2(const float *x, float *y, size_t n);
extern const double flash_amx_emulated_twin_exp2_rel;
