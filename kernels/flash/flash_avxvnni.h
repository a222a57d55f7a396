// SPDX-License-Identifier: MIT
// flash_avxvnni.h — what flash__avxvnni (flash_avxvnni.c) exposes besides its record: the
// integer block dot products of its INT8 path, so that a test compares them with the
// contract's exact integer sums. Plain C declarations (no intrinsics): callable from any
// file, on a CPU with AVX-VNNI only (attn_cpu_features()).
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "attn.h"

#ifdef __cplusplus
extern "C" {
#endif

// The most query rows and keys flash_avxvnni_block_dots takes at once (the INT8 path's
// row group and key group: one ymm of scores).
#define FLASH_AVXVNNI_ROWS 4
#define FLASH_AVXVNNI_KEYS 8

// out[(r·nk + c)·nb + b] = Σ_t q[r·nb + b].qs[t] · K_c[b].qs[t] (t < 32) for rows
// r < nrows ≤ FLASH_AVXVNNI_ROWS, keys c < nk ≤ FLASH_AVXVNNI_KEYS and blocks b < nb: q
// holds nrows rows of nb Q8_0 blocks, key c's row of nb blocks is at k + c·krb bytes.
// Computed with the VEX vpdpbusd exactly as the kernel does (the scales d are not read).
void flash_avxvnni_block_dots(int nrows, const attn_block_q8_0 *q, int64_t nb, const void *k,
                              size_t krb, int nk, int32_t *out);

#ifdef __cplusplus
}
#endif
