// SPDX-License-Identifier: MIT
// Test-only kernels that run the compute modes themselves (ATTN_CAP_COMPUTE_ALL): one
// honest, and three with a precision bug each that the checker must catch. Scalar C, one
// row at a time, no options (a problem with options takes the shared fallback).
#pragma once

#include "attn.h"

// The honest kernel: Q, K, V rounded as the mode says (INT8: Q8_0 Q in 32-element blocks,
// integer block dot products scaled by f16(d_q)·f16(d_k)), p rounded to the mode's type
// (BF16, F16), every sum in float32.
extern const attn_kernel lowprec_honest;
// Rounds p to binary16 in every mode that rounds p (BF16 asks for bfloat16: p below
// binary16's range underflows where bfloat16 keeps it).
extern const attn_kernel lowprec_p_f16;
// Accumulates P·V (and the normaliser) in bfloat16: each partial sum rounded to bfloat16.
extern const attn_kernel lowprec_acc_bf16;
// INT8: quantizes Q in 64-element blocks (one scale per two of K's 32-element blocks).
extern const attn_kernel lowprec_q_block64;
