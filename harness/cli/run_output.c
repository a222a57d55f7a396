// SPDX-License-Identifier: MIT
// run_output.c — see run_output.h.
#include "cli/run_output.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/convert.h"
#include "io/npy.h"

size_t run_first_overflow(attn_dtype type, const void *stored, int64_t dim, const float *src,
                          size_t n) {
  for (size_t i = 0; i < n; i++)
    if (isfinite(src[i]) && !isfinite(attn_kv_elem(type, stored, dim, i))) return i;
  return SIZE_MAX;
}

// x[0 .. n) rounded to type (F16 or BF16) into h; false (message printed) when a finite
// value becomes ±inf, unless allow_nonfinite.
static bool round_half(attn_dtype type, bool allow_nonfinite, const char *what, const float *x,
                       size_t n, uint16_t *h) {
  attn_quantize_row(type, x, (int64_t)n, h);
  const size_t i = allow_nonfinite ? SIZE_MAX : run_first_overflow(type, h, 1, x, n);
  if (i == SIZE_MAX) return true;
  fprintf(stderr,
          "attnbench run: --out-dtype %s: %s value %g at flat index %zu overflows the type "
          "(it would be written as %cinf); nothing written (--out-dtype f32 keeps it; "
          "--allow-nonfinite writes it anyway)\n",
          attn_dtype_name(type), what, (double)x[i], i, x[i] < 0 ? '-' : '+');
  return false;
}

bool run_write_outputs(attn_dtype type, bool allow_nonfinite, const attn_output *out,
                       const float *o, int o_ndim, const int64_t *o_shape,
                       const attn_output *lse_out, const float *lse, int lse_ndim,
                       const int64_t *lse_shape) {
  const struct {
    const char *what;
    const attn_output *out;
    const float *x;
    int ndim;
    const int64_t *shape;
  } arr[2] = {{"O", out, o, o_ndim, o_shape}, {"LSE", lse_out, lse, lse_ndim, lse_shape}};
  const size_t n = lse_out ? 2 : 1;
  npy_out set[2];
  uint16_t *h[2] = {NULL, NULL};
  bool ok = true;
  for (size_t i = 0; i < n && ok; i++) {
    set[i] =
        (npy_out){.out = arr[i].out, .f32 = arr[i].x, .ndim = arr[i].ndim, .shape = arr[i].shape};
    if (type == ATTN_DTYPE_F32) continue;
    size_t count = 1;
    for (int d = 0; d < arr[i].ndim; d++) count *= (size_t)arr[i].shape[d];
    if (!(h[i] = malloc((count ? count : 1) * sizeof *h[i]))) {
      fprintf(stderr, "attnbench run: out of memory rounding %s to %s\n", arr[i].what,
              attn_dtype_name(type));
      ok = false;
      break;
    }
    ok = round_half(type, allow_nonfinite, arr[i].what, arr[i].x, count, h[i]);
    set[i].f32 = NULL, set[i].half = h[i], set[i].bf16 = type == ATTN_DTYPE_BF16;
  }
  char err[ATTN_OUT_PATH_MAX + 512];
  if (ok && !(ok = npy_write_set(set, n, err, sizeof err)))
    fprintf(stderr, "attnbench run: cannot write %s: %s\n", n == 2 ? "O and LSE" : "O", err);
  free(h[0]), free(h[1]);
  return ok;
}
