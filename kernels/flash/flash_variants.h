// SPDX-License-Identifier: MIT
// flash_variants.h — the entry points of the register-tile variants of flash__avx2 and
// flash__avx512: each defined by one flash_body.h instance (flash_<isa>.c for the default,
// flash_<tiles>_<isa>.c for another; their tiles: flash_avx2.h, flash_avx512.h), dispatched
// on attn_exec.regtile by the kernel record in flash_<isa>.c. Plain C prototypes.
#pragma once

#include <stddef.h>

#include "attn.h"

// The kernel record's entry-point types (attn.h's attn_workspace_fn and attn_kernel_fn point
// to functions of these types), so each line below declares several entry points.
typedef size_t flash_workspace_t(const attn_problem *p, const attn_exec *exec);
typedef int flash_run_t(const attn_problem *p, const attn_exec *exec, const float *q, const void *k,
                        const void *v, float *o, void *workspace);

// flash__avx2: the default 6x16/6x16, 4x24/4x24, 3x32/6x16 (flash_avx2.h).
flash_workspace_t flash_avx2_workspace, flash_avx2_4x24_workspace, flash_avx2_3x32_workspace;
flash_run_t flash_avx2_run, flash_avx2_4x24_run, flash_avx2_3x32_run;

// flash__avx512: the default 8x48/6x64, 12x32/8x32, 6x64/8x48 (flash_avx512.h).
flash_workspace_t flash_avx512_workspace, flash_avx512_12x32_workspace, flash_avx512_6x64_workspace;
flash_run_t flash_avx512_run, flash_avx512_12x32_run, flash_avx512_6x64_run;
