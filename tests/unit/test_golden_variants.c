// SPDX-License-Identifier: MIT
// Golden data for the attention options (tests/data/variants, written by
// scripts/make_golden_variants.py: an independent NumPy float64 implementation of
// attn.h's "Attention variants" formulas, rounded once to float32).
//   1. The reference kernel matches the golden O and LSE within 1e-6·(1 + |golden|):
//      both are float64 rounded once (≤ 1 ulp ≈ 1.2e-7 relative apart), and the inputs,
//      slopes (powers of two here), sinks and mask are the same float32 values; −inf LSE
//      and the zero rows of rows that see nothing must match exactly.
//   2. The golden data depends on each case's options: the reference without them is
//      more than 1e-3 away (so step 1 cannot pass with an option ignored).
//   3. Every available kernel passes the checker on the golden inputs, O and LSE.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attn.h"
#include "check/check.h"
#include "io/npy.h"
#include "test_util.h"

#ifndef ATTN_GOLDEN_VARIANTS_DIR
#error "ATTN_GOLDEN_VARIANTS_DIR must point at tests/data/variants"
#endif

static bool load(const char *c, const char *what, npy_array *a, bool required) {
  char path[512], err[600];
  snprintf(path, sizeof path, "%s/%s_%s.npy", ATTN_GOLDEN_VARIANTS_DIR, c, what);
  if (npy_read_f32(path, a, err, sizeof err)) return true;
  if (required) EXPECT(false, "cannot read golden data: %s", err);
  return false;
}

// max over elements of |x − g| / (1 + |g|); inf when −inf/zero patterns differ.
static double worst(const float *x, const float *g, size_t n) {
  double w = 0.0;
  for (size_t i = 0; i < n; i++) {
    if (isinf(g[i]) || isinf(x[i])) {
      if (x[i] != g[i]) return INFINITY;
      continue;
    }
    const double e = fabs((double)x[i] - (double)g[i]) / (1.0 + fabs((double)g[i]));
    if (!(e <= w)) w = e;
  }
  return w;
}

static void run_case(const char *name) {
  npy_array prm = {0}, q = {0}, k = {0}, v = {0}, out = {0}, lse = {0}, slopes = {0}, sinks = {0},
            mask = {0};
  if (!load(name, "params", &prm, true) || prm.count != 19 || !load(name, "q", &q, true) ||
      !load(name, "k", &k, true) || !load(name, "v", &v, true) || !load(name, "out", &out, true) ||
      !load(name, "lse", &lse, true)) {
    EXPECT(false, "%s: incomplete golden data", name);
    return;
  }
  const float *P = prm.data;
  attn_problem p = attn_problem_make((int64_t)P[0], (int64_t)P[1], (int64_t)P[2], (int64_t)P[3],
                                     (int64_t)P[4], (int64_t)P[5], (int64_t)P[6], P[7] != 0);
  p.scale = P[18];
  attn_options o = {.align = P[8] != 0 ? ATTN_ALIGN_TOP_LEFT : ATTN_ALIGN_BOTTOM_RIGHT,
                    .window = P[9] != 0,
                    .window_left = (int64_t)P[10],
                    .window_right = (int64_t)P[11],
                    .softcap = P[12],
                    .alibi_max_bias = P[13],
                    .mask_per_head = P[17] != 0};
  if (P[14] != 0 && load(name, "slopes", &slopes, true)) o.alibi_slopes = slopes.data;
  if (P[15] != 0 && load(name, "sinks", &sinks, true)) o.sinks = sinks.data;
  if (P[16] != 0 && load(name, "mask", &mask, true)) o.mask = mask.data;
  const size_t n_o = attn_o_elems(&p), n_l = (size_t)(p.batch * p.heads * p.seq_q);
  EXPECT(out.count == n_o && lse.count == n_l && q.count == attn_q_elems(&p), "%s: shapes", name);
  float *o_ref = malloc(n_o * sizeof(float)), *l_ref = malloc(n_l * sizeof(float));
  char err[256];
  // 1. the reference against NumPy
  o.lse = l_ref;
  p.opts = &o;
  const attn_kernel *ref = attn_kernel_find("reference");
  EXPECT(attn_kernel_call(ref, &p, NULL, q.data, k.data, v.data, o_ref, err, sizeof err) == ATTN_OK,
         "%s: %s", name, err);
  const double wo = worst(o_ref, out.data, n_o), wl = worst(l_ref, lse.data, n_l);
  EXPECT(wo <= 1e-6 && wl <= 1e-6, "%s: reference vs NumPy: O %.3g, LSE %.3g (limit 1e-6)", name,
         wo, wl);
  size_t inf_rows = 0;
  for (size_t i = 0; i < n_l; i++) inf_rows += lse.data[i] == -INFINITY;
  // 2. sensitivity: without the options the reference is far from the golden
  attn_problem plain = p;
  plain.opts = NULL;
  plain.causal = false;
  EXPECT(attn_kernel_call(ref, &plain, NULL, q.data, k.data, v.data, o_ref, err, sizeof err) ==
                 ATTN_OK &&
             worst(o_ref, out.data, n_o) > 1e-3,
         "%s: the golden output does not depend on the options", name);
  // 3. every available kernel passes the checker on these inputs (O and LSE)
  attn_check_prepared *pc = attn_check_prepare_inputs(&p, q.data, k.data, v.data, err, sizeof err);
  EXPECT(pc != NULL, "%s: prepare: %s", name, err);
  size_t ran = 0;
  for (size_t i = 0; pc && i < attn_kernel_count(); i++) {
    const attn_kernel *kk = attn_kernel_at(i);
    if (!attn_kernel_available(kk, NULL, 0)) continue;
    attn_check_result r;
    EXPECT(attn_check_kernel(kk, pc, NULL, &r), "%s: kernel %s: %s %s", name, kk->name,
           attn_check_verdict_name(r.verdict), r.message);
    ran++;
  }
  printf("%-9s O %.2g LSE %.2g (vs NumPy), %zu rows see nothing, %zu kernels pass\n", name, wo, wl,
         inf_rows, ran);
  attn_check_prepared_free(pc);
  free(o_ref);
  free(l_ref);
  npy_array *all[] = {&prm, &q, &k, &v, &out, &lse, &slopes, &sinks, &mask};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) npy_free(all[i]);
}

int main(void) {
  const char *cases[] = {"gemma", "gptoss", "alibi", "maskhead", "mixed"};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) run_case(cases[i]);
  return test_finish("test_golden_variants");
}
