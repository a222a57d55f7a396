// SPDX-License-Identifier: MIT
// run_output.h — what `attnbench run` writes (docs/cli.md): O and, when asked, the LSE, as
// the --out-dtype type — float32, or binary16 / bfloat16 rounded to nearest even — and as
// one set, both files or neither (attn_output_write_set).
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "attn.h"
#include "io/fileio.h"

// Before any work: O's path (and the LSE's, when lse_path is not NULL) as outputs
// (fileio.h) that are none of the inputs and not one file. False after a message.
bool run_prepare_outputs(const char *out_path, const char *lse_path, const attn_input_file *inputs,
                         size_t n_inputs, attn_output *out, attn_output *lse_out);

// Inputs are finite (run refuses others), so a NaN/Inf in O, or a NaN/+inf in the LSE
// (n_lse values, NULL when not asked for; -inf is a row that sees no key), is the kernel's
// doing. Returns false (nothing to be written) unless every value is one the contract
// allows or allow (--allow-nonfinite) is set; each finding is printed, naming kernel.
bool run_outputs_allowed(const char *kernel, const attn_problem *p, const float *o,
                         const float *lse, size_t n_lse, bool allow);

// The first of n values stored as type (rows of dim elements; binary16/bfloat16: any dim)
// that is not finite although its float32 source src was: an overflow of the type's range
// (binary16 |x| ≥ 65520, a q8_0 block with max|x|/127 above 65504), or SIZE_MAX.
size_t run_first_overflow(attn_dtype type, const void *stored, int64_t dim, const float *src,
                          size_t n);

// True when the n values src stored as type in `stored` (rows of dim) are all finite
// where src is; else false after "--kv-dtype NAME: WHAT value X at flat index I overflows
// the type (...)" (the one message of run's --kv-dtype, dense and serving).
bool run_kv_stored_whole(const char *kv_name, const char *what, attn_dtype type, const void *stored,
                         int64_t dim, const float *src, size_t n);

// Writes o (o_ndim dims o_shape) to out and, when lse_out is not NULL, lse to lse_out, as
// type (F32, F16 or BF16). A finite value that the type rounds to ±inf (binary16:
// |x| ≥ 65520) is refused, naming it, unless allow_nonfinite. False (message printed on
// stderr) on any failure: then neither target has changed. *o_rounding (when not NULL)
// is the largest |stored - o| over O's finite values: what the file adds to the float32
// O that --check judged: half an ulp, 0 for F32, at most 2^-8 |o| for BF16 and 2^-11 |o|
// for F16 normals.
bool run_write_outputs(attn_dtype type, bool allow_nonfinite, const attn_output *out,
                       const float *o, int o_ndim, const int64_t *o_shape,
                       const attn_output *lse_out, const float *lse, int lse_ndim,
                       const int64_t *lse_shape, double *o_rounding);

// The --check line's note on an --out-dtype file ("" for F32): the verdict is the float32
// O's, and the file rounds it by `rounding` (run_write_outputs) at most.
void run_rounding_note(attn_dtype type, double rounding, char *buf, size_t len);
