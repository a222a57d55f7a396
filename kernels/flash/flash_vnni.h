// SPDX-License-Identifier: MIT
// flash_vnni.h — what the VNNI flash kernels expose besides their records: the integer
// block dot products of their INT8 paths, so that a test compares them with the contract's
// exact integer sums. flash__avx512vnni (flash_avx512vnni.c, vpdpbusd zmm),
// flash__avxvnni (flash_avxvnni.c, VEX vpdpbusd ymm) and flash__avx2int8
// (flash_int8_avx2.c, vpmaddubsw + vpmaddwd) define them, all on flash_vnni_body.h. Plain C
// declarations (no intrinsics): callable from any file, each on a CPU where its kernel is available
// (attn_kernel_available) only.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "attn.h"

#ifdef __cplusplus
extern "C" {
#endif

// The query rows of a row group (both kernels) and the keys of a key group (one vector of
// scores: 16 on zmm, 8 on ymm) — the most the block dots take at once.
#define FLASH_VNNI_ROWS 4
#define FLASH_VNNI_KEYS 16
#define FLASH_AVXVNNI_KEYS 8

// out[(r·nk + c)·nb + b] = Σ_t q[r·nb + b].qs[t] · K_c[b].qs[t] (t < 32) for rows
// r < nrows ≤ FLASH_VNNI_ROWS, keys c < nk ≤ the kernel's key group and blocks b < nb: q
// holds nrows rows of nb Q8_0 blocks, key c's row of nb blocks is at k + c·krb bytes.
// Computed with the kernel's vpdpbusd exactly as the kernel does (the scales d are not read).
typedef void flash_vnni_dots_fn(int nrows, const attn_block_q8_0 *q, int64_t nb, const void *k,
                                size_t krb, int nk, int32_t *out);
flash_vnni_dots_fn flash_avx512vnni_block_dots;  // nk ≤ FLASH_VNNI_KEYS
flash_vnni_dots_fn flash_avxvnni_block_dots;     // nk ≤ FLASH_AVXVNNI_KEYS
flash_vnni_dots_fn flash_avx2int8_block_dots;    // nk ≤ FLASH_AVXVNNI_KEYS (the sign form)

#ifdef __cplusplus
}
#endif
