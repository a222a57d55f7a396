// SPDX-License-Identifier: MIT
// flash_bf16_route.h — how the BF16 kernels (flash__avx512bf16, flash__amxbf16) run a
// problem, one rule for both; each passes its own BF16 body (dense problems only):
//   F32 mode (and F16/INT8, which reach them as F32)  flash__avx512's F32 path;
//   BF16 mode, the decode route (below)               flash__avx512's F32 path on bf16(Q);
//   BF16 mode, a ragged or paged batch otherwise      each sequence gathered into a dense
//                                                     problem for the body (core/
//                                                     layout_gather.c, as attn_kernel_run
//                                                     gathers for a kernel without the
//                                                     layout's bit);
//   BF16 mode otherwise                               the kernel's body.
// Both kernels declare the layout bits, so the first two read ragged and paged batches
// in place.
//
// The decode route: K/V stored as BF16 and each K/V head read by at most
// FLASH_BF16_DECODE_ROWS query rows (seq_q · heads / kv_heads; for a layout, seq_q is its
// longest sequence's q_len). The BF16 bodies pack K̂ and V̂ into pair tiles before their
// dot products; with few rows per K/V head that packing (a transpose of every K row, read
// back once) costs more than the arithmetic it feeds, and decode is bound by reading the
// cache, not by a multiplier. The answer is the mode's (attn.h, "Compute modes"): Q rounded
// to bfloat16 (nearest even), K and V as stored (already bfloat16), every product of two
// bfloat16 values exact in float32, every sum float32; p is not rounded, which the mode
// allows. It is bitwise attn_kernel_run's F32 emulation of the mode on flash__avx512
// (test_flash_bf16).
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "attn.h"

// Most query rows per K/V head the decode route takes: up to here the F32 path over the
// stored BF16 rows was the faster on every decode shape measured (docs/low-precision-
// kernels.md, "The BF16 mode's decode route").
#define FLASH_BF16_DECODE_ROWS 32

// True if p takes the decode route.
bool flash_bf16_decode_route(const attn_problem *p);

// A BF16 kernel's workspace and run, by the rule above; self is the kernel's record,
// body_* its BF16 body.
size_t flash_bf16_kernel_workspace(const attn_kernel *self, const attn_problem *p,
                                   const attn_exec *exec, attn_workspace_fn body_workspace);
int flash_bf16_kernel_run(const attn_kernel *self, const attn_problem *p, const attn_exec *exec,
                          const float *q, const void *k, const void *v, float *o, void *workspace,
                          attn_kernel_fn body_run);
