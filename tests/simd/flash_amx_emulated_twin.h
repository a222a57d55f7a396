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
