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

// The first of n values stored as type (rows of dim elements; binary16/bfloat16: any dim)
// that is not finite although its float32 source src was: an overflow of the type's range
// (binary16 |x| ≥ 65520, a q8_0 block with max|x|/127 above 65504), or SIZE_MAX.
size_t run_first_overflow(attn_dtype type, const void *stored, int64_t dim, const float *src,
                          size_t n);

// Writes o (o_ndim dims o_shape) to out and, when lse_out is not NULL, lse to lse_out, as
// type (F32, F16 or BF16). A finite value that the type rounds to ±inf (binary16:
// |x| ≥ 65520) is refused, naming it, unless allow_nonfinite. False (message printed on
// stderr) on any failure: then neither target has changed.
bool run_write_outputs(attn_dtype type, bool allow_nonfinite, const attn_output *out,
                       const float *o, int o_ndim, const int64_t *o_shape,
                       const attn_output *lse_out, const float *lse, int lse_ndim,
                       const int64_t *lse_shape);
