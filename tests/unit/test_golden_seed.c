// SPDX-License-Identifier: MIT
// The seed article's worked example ("Life is short, eat dessert first",
// torch.manual_seed(123)) through every available kernel: self-attention, causal,
// 3-head multi-head (plain and causal) and cross-attention with a second input of
// another length and width. Golden outputs come from scripts/make_golden.py (PyTorch,
// float64, rounded once to float32) in tests/data/seed/.
//
// Tolerance: 1e-5 absolute. The values are O(1); the float32 projections (d_in <= 5)
// contribute at most ~5u relative to each score and value (u = 2^-24 ≈ 6e-8), the kernel's
// own error on six to eight keys is a few u, and the golden's rounding is u/2 — all
// two orders of magnitude below 1e-5. A wrong scale, mask or head order moves outputs by
// more than 1e-2 (the test below proves it for a missing scale).
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attn.h"
#include "forms/forms.h"
#include "io/npy.h"
#include "test_util.h"

#ifndef ATTN_GOLDEN_DIR
#error "ATTN_GOLDEN_DIR must point at tests/data/seed"
#endif

static const double kTol = 1e-5;

static npy_array load(const char *name, int ndim, const int64_t *shape) {
  char path[512], err[512];
  snprintf(path, sizeof path, "%s/%s.npy", ATTN_GOLDEN_DIR, name);
  npy_array a;
  if (!npy_read_f32(path, &a, err, sizeof err)) {
    fprintf(stderr, "cannot read golden data: %s\n", err);
    exit(1);
  }
  bool ok = a.ndim == ndim;
  for (int i = 0; ok && i < ndim; i++) ok = a.shape[i] == shape[i];
  if (!ok) {
    fprintf(stderr, "%s: unexpected shape\n", path);
    exit(1);
  }
  return a;
}

// Largest |out − golden| of one form through one kernel; < 0 on a kernel error.
static double form_error(const attn_kernel *k, const attn_forms_weights *w, const float *x_q,
                         int64_t seq_q, const float *x_kv, int64_t seq_kv, bool causal,
                         const npy_array *golden) {
  float *out = calloc(golden->count, sizeof *out);
  char err[256];
  const int rc =
      attn_forms_attention(k, NULL, w, x_q, seq_q, x_kv, seq_kv, causal, out, err, sizeof err);
  double worst = -1.0;
  if (rc == ATTN_OK) {
    worst = 0.0;
    for (size_t i = 0; i < golden->count; i++) {
      const double e = fabs((double)out[i] - (double)golden->data[i]);
      worst = isnan(e) ? INFINITY : fmax(worst, e);
    }
  } else {
    fprintf(stderr, "%s: %s\n", k->name, err);
  }
  free(out);
  return worst;
}

int main(void) {
  const int64_t s_x[] = {6, 3}, s_x2[] = {8, 5}, s_wq[] = {3, 2}, s_wv[] = {3, 4};
  const int64_t s_mhq[] = {3, 3, 2}, s_mhv[] = {3, 3, 4}, s_cwk[] = {5, 2}, s_cwv[] = {5, 4};
  const int64_t s_out[] = {6, 4}, s_mhout[] = {6, 12};
  npy_array x = load("x", 2, s_x), x2 = load("x2", 2, s_x2);
  npy_array wq = load("w_query", 2, s_wq), wk = load("w_key", 2, s_wq),
            wv = load("w_value", 2, s_wv);
  npy_array mq = load("mh_w_query", 3, s_mhq), mk = load("mh_w_key", 3, s_mhq);
  npy_array mv = load("mh_w_value", 3, s_mhv);
  npy_array cwk = load("cross_w_key", 2, s_cwk), cwv = load("cross_w_value", 2, s_cwv);
  npy_array self_out = load("self_out", 2, s_out), causal_out = load("causal_out", 2, s_out);
  npy_array cross_out = load("cross_out", 2, s_out);
  npy_array mh_out = load("multihead_out", 2, s_mhout);
  npy_array mhc_out = load("multihead_causal_out", 2, s_mhout);

  const attn_forms_weights single = {1, 3, 3, 2, 4, wq.data, wk.data, wv.data};
  const attn_forms_weights multi = {3, 3, 3, 2, 4, mq.data, mk.data, mv.data};
  const attn_forms_weights cross = {1, 3, 5, 2, 4, wq.data, cwk.data, cwv.data};

  size_t kernels = 0;
  for (size_t i = 0; i < attn_kernel_count(); i++) {
    const attn_kernel *k = attn_kernel_at(i);
    if (!attn_kernel_available(k, NULL, 0)) continue;
    kernels++;
    const struct {
      const char *form;
      double err;
    } r[] = {
        {"self", form_error(k, &single, x.data, 6, x.data, 6, false, &self_out)},
        {"causal", form_error(k, &single, x.data, 6, x.data, 6, true, &causal_out)},
        {"multi-head", form_error(k, &multi, x.data, 6, x.data, 6, false, &mh_out)},
        {"multi-head causal", form_error(k, &multi, x.data, 6, x.data, 6, true, &mhc_out)},
        {"cross", form_error(k, &cross, x.data, 6, x2.data, 8, false, &cross_out)},
    };
    for (size_t f = 0; f < sizeof r / sizeof r[0]; f++) {
      printf("%-18s %-18s max |err| %.3g\n", k->name, r[f].form, r[f].err);
      EXPECT(r[f].err >= 0 && r[f].err <= kTol, "%s %s: max |err| %.3g > %.1g", k->name, r[f].form,
             r[f].err, kTol);
    }
  }
  EXPECT(kernels >= 3, "only %zu kernels ran", kernels);

  // The comparison can fail: the seed example without the 1/sqrt(d_k) scale is far off.
  {
    // scale the query weights by sqrt(d_k) = sqrt(2): equivalent to dropping the scale
    float wq_unscaled[6];
    for (int i = 0; i < 6; i++) wq_unscaled[i] = wq.data[i] * sqrtf(2.0f);
    const attn_forms_weights bad = {1, 3, 3, 2, 4, wq_unscaled, wk.data, wv.data};
    const double e =
        form_error(attn_kernel_find("reference"), &bad, x.data, 6, x.data, 6, false, &self_out);
    EXPECT(e > 1e-2, "a missing scale changed the seed output by only %.3g", e);
  }

  npy_array *all[] = {&x,   &x2,  &wq,       &wk,         &wv,        &mq,     &mk,     &mv,
                      &cwk, &cwv, &self_out, &causal_out, &cross_out, &mh_out, &mhc_out};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) npy_free(all[i]);
  return test_finish("test_golden_seed");
}
