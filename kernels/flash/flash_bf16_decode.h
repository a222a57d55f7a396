// SPDX-License-Identifier: MIT
// flash_bf16_decode.h — the BF16 compute mode's decode route, shared by the BF16 kernels
// (flash__avx512bf16, flash__amxbf16): a problem whose K/V heads are each read by a few
// query rows, over a cache stored as BF16, runs flash__avx512's F32 path on bf16(Q) and
// the stored K/V. The BF16 kernels' own paths pack K̂ and V̂ into pair tiles before
// their dot products; with few rows per K/V head that packing (a transpose of every K
// row, read back once) costs more than the arithmetic it feeds, and decode is bound by
// reading the cache, not by a multiplier.
// The answer is the mode's (attn.h, "Compute modes"): Q rounded to bfloat16 (nearest
// even), K and V as stored (already bfloat16), every product of two bfloat16 values
// exact in float32, every sum float32; p is not rounded, which the mode allows. It is
// bitwise attn_kernel_run's F32 emulation of the mode on flash__avx512 (test_flash_bf16).
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "attn.h"

// Most query rows per K/V head (seq_q · heads / kv_heads) the route takes: up to here the
// F32 path over the stored BF16 rows was the faster of the two on every decode shape
// measured (docs/design.md, "The BF16 mode's decode route").
#define FLASH_BF16_DECODE_ROWS 32

// True if p takes the route: BF16 mode, BF16 K/V, a dense batch, at most
// FLASH_BF16_DECODE_ROWS query rows per K/V head.
bool flash_bf16_decode_route(const attn_problem *p);
// Its workspace: the rounded Q (64-byte multiple) and flash__avx512's F32 workspace.
size_t flash_bf16_decode_workspace(const attn_problem *p, const attn_exec *exec);
// Runs it (p must take the route).
int flash_bf16_decode_run(const attn_problem *p, const attn_exec *exec, const float *q,
                          const void *k, const void *v, float *o, void *workspace);
