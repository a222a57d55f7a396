// SPDX-License-Identifier: MIT
// flash_avxvnni_twin.h — the test twin of flash__avxvnni (flash_avxvnni_twin.c): the same
// INT8 body on the same ymm primitives (kernels/flash/flash_vnni_ymm.h), with the dot
// product in its EVEX form (AVX512_VNNI + AVX512VL, `_mm256_dpbusd_epi32`) instead of the
// VEX form of AVX-VNNI — the same sums on the same registers, so the twin runs the
// kernel's code path on CPUs that have AVX-512 VNNI but not AVX-VNNI (Zen 4, Ice Lake,
// Cascade Lake). Test-only: not in the registry. Plain C declarations.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "attn.h"
#include "flash/flash_vnni.h"

// flash__avxvnni's record (capabilities, tiles, F32 path on flash__avx2) with the twin's
// entry points and required_isa AVX2 | F16C | AVX512VNNI.
extern const attn_kernel flash_avxvnni_twin;

// flash_avxvnni_block_dots (kernels/flash/flash_vnni.h) on the twin's dots.
flash_vnni_dots_fn flash_avxvnni_twin_block_dots;
