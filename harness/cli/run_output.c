// SPDX-License-Identifier: MIT
// run_output.c — see run_output.h.
#include "cli/run_output.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "common/util.h"  // attn_first_nonfinite
#include "core/convert.h"
#include "io/npy.h"

// The first LSE value a kernel may not write: NaN or +inf (-inf is a row that sees no
// key). SIZE_MAX when there is none.
static size_t first_bad_lse(const float *lse, size_t n) {
  for (size_t i = 0; lse && i < n; i++)
    if (isnan(lse[i]) || lse[i] == INFINITY) return i;
  return SIZE_MAX;
}

bool run_outputs_allowed(const char *kernel, const attn_problem *p, const float *o,
                         const float *lse, size_t n_lse, bool allow) {
  const size_t bad = first_bad_lse(lse, n_lse);
  if (bad != SIZE_MAX)
    fprintf(stderr,
            "attnbench run: %s%s: %s produced an LSE of %g at flat index %zu from finite inputs "
            "(a row's LSE is finite, or -inf when it sees no key)%s\n",
            allow ? "note" : "refused", allow ? " (--allow-nonfinite)" : "", kernel,
            (double)lse[bad], bad,
            allow ? "; written anyway" : "; nothing written (--allow-nonfinite writes it)");
  if (bad != SIZE_MAX && !allow) return false;
  attn_nonfinite nf;
  if (!attn_first_nonfinite(p, o, &nf)) return true;
  char at[160];
  if (nf.token >= 0)  // a serving batch: O is packed by tokens
    snprintf(at, sizeof at, "O[%lld][%lld][%lld] (sequence %lld, query %lld)", (long long)nf.token,
             (long long)nf.h, (long long)nf.d, (long long)nf.b, (long long)nf.i);
  else
    snprintf(at, sizeof at, "O[%lld][%lld][%lld][%lld]", (long long)nf.b, (long long)nf.h,
             (long long)nf.i, (long long)nf.d);
  fprintf(stderr,
          "attnbench run: %s%s: %s produced a non-finite output from finite inputs: "
          "%s = %g (flat index %zu)%s\n",
          allow ? "note" : "refused", allow ? " (--allow-nonfinite)" : "", kernel, at,
          (double)nf.value, nf.index,
          allow ? "; O is written anyway" : "; O not written (--allow-nonfinite writes it)");
  return allow;
}

size_t run_first_overflow(attn_dtype type, const void *stored, int64_t dim, const float *src,
                          size_t n) {
  for (size_t i = 0; i < n; i++)
    if (isfinite(src[i]) && !isfinite(attn_kv_elem(type, stored, dim, i))) return i;
  return SIZE_MAX;
}

bool run_kv_stored_whole(const char *kv_name, const char *what, attn_dtype type, const void *stored,
                         int64_t dim, const float *src, size_t n) {
  const size_t bad = run_first_overflow(type, stored, dim, src, n);
  if (bad == SIZE_MAX) return true;
  fprintf(stderr,
          "attnbench run: --kv-dtype %s: %s value %g at flat index %zu overflows the type "
          "(f16 holds |x| <= 65504; a q8_0 block needs max|x|/127 <= 65504)\n",
          kv_name, what, (double)src[bad], bad);
  return false;
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
                       const int64_t *lse_shape, double *o_rounding) {
  if (o_rounding) *o_rounding = 0.0;
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
    for (size_t j = 0; ok && i == 0 && o_rounding && j < count; j++) {
      const double x = arr[i].x[j], r = attn_kv_elem(type, h[i], 1, j);
      if (isfinite(x) && isfinite(r) && fabs(r - x) > *o_rounding) *o_rounding = fabs(r - x);
    }
    set[i].f32 = NULL, set[i].half = h[i], set[i].bf16 = type == ATTN_DTYPE_BF16;
  }
  char err[ATTN_OUT_PATH_MAX + 512];
  if (ok && !(ok = npy_write_set(set, n, err, sizeof err)))
    fprintf(stderr, "attnbench run: cannot write %s: %s\n", n == 2 ? "O and LSE" : "O", err);
  free(h[0]), free(h[1]);
  return ok;
}

void run_rounding_note(attn_dtype type, double rounding, char *buf, size_t len) {
  if (type == ATTN_DTYPE_F32) {
    snprintf(buf, len, "%s", "");
    return;
  }
  // Round to nearest even: half a unit in the last place, 2^-(mantissa bits + 1) of |x|.
  snprintf(buf, len,
           "; the verdict is the float32 O's: the %s file rounds it by up to %.3g "
           "(at most 2^-%d |O| per value%s)",
           attn_dtype_name(type), rounding, type == ATTN_DTYPE_BF16 ? 8 : 11,
           type == ATTN_DTYPE_F16 ? ", 2^-25 below 2^-14" : "");
}

bool run_prepare_outputs(const char *out_path, const char *lse_path, const attn_input_file *inputs,
                         size_t n_inputs, attn_output *out, attn_output *lse_out) {
  char err[ATTN_OUT_PATH_MAX + 512];
  if (!attn_output_prepare(out, out_path, inputs, n_inputs, err, sizeof err)) {
    fprintf(stderr, "attnbench run: cannot write O: %s\n", err);
    return false;
  }
  if (!lse_path) return true;
  if (!attn_output_prepare(lse_out, lse_path, inputs, n_inputs, err, sizeof err)) {
    fprintf(stderr, "attnbench run: cannot write LSE: %s\n", err);
    return false;
  }
  if (attn_output_same(out, lse_out)) {
    fprintf(stderr, "attnbench run: --out and --lse name the same file (%s); give each its own\n",
            lse_path);
    return false;
  }
  return true;
}
