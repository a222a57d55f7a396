// SPDX-License-Identifier: MIT
// flash_variants.h — the entry points of the register-tile variants of flash__avx2 and
// flash__avx512: each defined by one flash_body.h instance (flash_<isa>.c for the default,
// flash_<tiles>_<isa>.c for another; their tiles: flash_avx2.h, flash_avx512.h), dispatched
// on attn_exec.regtile by the kernel record in flash_<isa>.c. Plain C prototypes.
#pragma once

#include <stddef.h>

#include "attn.h"

// flash__avx2 (flash_avx2.h)
size_t flash_avx2_workspace(const attn_problem *p, const attn_exec *exec);
int flash_avx2_run(const attn_problem *p, const attn_exec *exec, const float *q, const void *k,
                   const void *v, float *o, void *workspace);
size_t flash_avx2_4x24_workspace(const attn_problem *p, const attn_exec *exec);
int flash_avx2_4x24_run(const attn_problem *p, const attn_exec *exec, const float *q, const void *k,
                        const void *v, float *o, void *workspace);
size_t flash_avx2_3x32_workspace(const attn_problem *p, const attn_exec *exec);
int flash_avx2_3x32_run(const attn_problem *p, const attn_exec *exec, const float *q, const void *k,
                        const void *v, float *o, void *workspace);

// flash__avx512 (flash_avx512.h)
size_t flash_avx512_workspace(const attn_problem *p, const attn_exec *exec);
int flash_avx512_run(const attn_problem *p, const attn_exec *exec, const float *q, const void *k,
                     const void *v, float *o, void *workspace);
size_t flash_avx512_12x32_workspace(const attn_problem *p, const attn_exec *exec);
int flash_avx512_12x32_run(const attn_problem *p, const attn_exec *exec, const float *q,
                           const void *k, const void *v, float *o, void *workspace);
size_t flash_avx512_6x64_workspace(const attn_problem *p, const attn_exec *exec);
int flash_avx512_6x64_run(const attn_problem *p, const attn_exec *exec, const float *q,
                          const void *k, const void *v, float *o, void *workspace);
