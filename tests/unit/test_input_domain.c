// SPDX-License-Identifier: MIT
// The input domain (attn.h, "Numerics contract"): attn_inputs_check refuses non-finite
// inputs, scores that could overflow float32 and a V accumulation that could, naming the
// quantity; every registered kernel refuses the same inputs through attn_kernel_call with
// ATTN_ERR_RANGE (no kernel ever sees them), and accepts inputs just inside the limits.
// Reproductions of out-of-domain inputs: Q (1,2,4,8) and K/V (1,2,5,8) with every Q and K element
// ±3e38; scale 1e38; V of ±3e38; scores that overflow to −inf, all equal.
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attn.h"
#include "test_util.h"

typedef struct inputs {
  attn_problem p;
  float *q, *k, *v, *o;
} inputs;

static float lcg_normalish(uint64_t *s) {  // deterministic values in (-2, 2)
  *s = *s * 6364136223846793005ull + 1442695040888963407ull;
  return (float)((double)(*s >> 11) / 9007199254740992.0 * 4.0 - 2.0);
}

// The reproductions' shape: Q (1,2,4,8), K and V (1,2,5,8), ordinary values.
static inputs make(void) {
  inputs x = {.p = attn_problem_make(1, 2, 2, 4, 5, 8, 8, false)};
  x.q = malloc(attn_q_elems(&x.p) * sizeof(float));
  x.k = malloc(attn_k_elems(&x.p) * sizeof(float));
  x.v = malloc(attn_v_elems(&x.p) * sizeof(float));
  x.o = malloc(attn_o_elems(&x.p) * sizeof(float));
  uint64_t s = 7;
  for (size_t i = 0; i < attn_q_elems(&x.p); i++) x.q[i] = lcg_normalish(&s);
  for (size_t i = 0; i < attn_k_elems(&x.p); i++) x.k[i] = lcg_normalish(&s);
  for (size_t i = 0; i < attn_v_elems(&x.p); i++) x.v[i] = lcg_normalish(&s);
  return x;
}

static void release(inputs *x) {
  free(x->q), free(x->k), free(x->v), free(x->o);
}

// Every available kernel through the registry gets `want` (and, for a refusal, an error
// message containing `text`).
static void every_kernel(const inputs *x, int want, const char *text, const char *what) {
  for (size_t i = 0; i < attn_kernel_count(); i++) {
    const attn_kernel *k = attn_kernel_at(i);
    if (!attn_kernel_available(k, NULL, 0)) continue;
    char err[256] = "";
    const int rc = attn_kernel_call(k, &x->p, NULL, x->q, x->k, x->v, x->o, err, sizeof err);
    EXPECT(rc == want, "%s: %s returned %d (want %d): %s", what, k->name, rc, want, err);
    if (want != ATTN_OK)
      EXPECT(strstr(err, text) != NULL, "%s: %s: message '%s' lacks '%s'", what, k->name, err,
             text);
    if (want == ATTN_OK) {
      size_t bad = 0;
      for (size_t e = 0; e < attn_o_elems(&x->p); e++) bad += !isfinite(x->o[e]);
      EXPECT(bad == 0, "%s: %s wrote %zu non-finite outputs from in-domain inputs", what, k->name,
             bad);
    }
  }
}

static void expect_range(const inputs *x, const char *text, const char *what) {
  char err[256] = "";
  const int rc = attn_inputs_check(&x->p, x->q, x->k, x->v, err, sizeof err);
  EXPECT(rc == ATTN_ERR_RANGE, "%s: attn_inputs_check returned %d (%s)", what, rc, err);
  EXPECT(strstr(err, text) != NULL, "%s: message '%s' lacks '%s'", what, err, text);
  every_kernel(x, ATTN_ERR_RANGE, text, what);
}

int main(void) {
  {  // ordinary inputs are inside
    inputs x = make();
    char err[256];
    EXPECT(attn_inputs_check(&x.p, x.q, x.k, x.v, err, sizeof err) == ATTN_OK,
           "ordinary inputs: %s", err);
    every_kernel(&x, ATTN_OK, "", "ordinary inputs");
    release(&x);
  }
  {  // non-finite elements, one per tensor, named with their coordinates
    const float bad[3] = {NAN, INFINITY, -INFINITY};
    for (int t = 0; t < 3; t++) {
      inputs x = make();
      float *a = t == 0 ? x.q : t == 1 ? x.k : x.v;
      a[8 * 5 + 3] = bad[t];  // [0][1][0][3] for K/V, [0][1][1][3] for Q
      const char *want = t == 0 ? "Q[0][1][1][3]" : t == 1 ? "K[0][1][0][3]" : "V[0][1][0][3]";
      expect_range(&x, want, want);
      release(&x);
    }
  }
  {  // every Q and K element ±3e38 (V ordinary): unchecked, kernels output zeros
    inputs x = make();
    for (size_t i = 0; i < attn_q_elems(&x.p); i++) x.q[i] = x.q[i] < 0 ? -3e38f : 3e38f;
    for (size_t i = 0; i < attn_k_elems(&x.p); i++) x.k[i] = x.k[i] < 0 ? -3e38f : 3e38f;
    expect_range(&x, "scores may overflow float32", "Q, K of +-3e38");
    release(&x);
  }
  {  // run --scale 1e38 on ordinary inputs
    inputs x = make();
    x.p.scale = 1e38f;
    expect_range(&x, "scores may overflow float32", "scale 1e38");
    x.p.scale = -1e38f;
    expect_range(&x, "scores may overflow float32", "scale -1e38");
    release(&x);
  }
  {  // scores that overflow to −inf in float32, all equal: q = (a…), k_j = (−a…)
    inputs x = make();
    x.p.scale = 1.0f;
    for (size_t i = 0; i < attn_q_elems(&x.p); i++) x.q[i] = 1e20f;
    for (size_t i = 0; i < attn_k_elems(&x.p); i++) x.k[i] = -1e20f;
    expect_range(&x, "scores may overflow float32", "scores -inf, all equal");
    release(&x);
  }
  {  // small scale does not hide an overflowing unscaled dot product: max(1, |scale|)
    inputs x = make();
    x.p.scale = 1e-30f;
    for (size_t i = 0; i < attn_q_elems(&x.p); i++) x.q[i] = 1e20f;
    for (size_t i = 0; i < attn_k_elems(&x.p); i++) x.k[i] = 1e20f;
    expect_range(&x, "scores may overflow float32", "tiny scale, huge Q.K");
    release(&x);
  }
  {  // V of ±3e38
    inputs x = make();
    for (size_t i = 0; i < attn_v_elems(&x.p); i++) x.v[i] = x.v[i] < 0 ? -3e38f : 3e38f;
    expect_range(&x, "V accumulation may overflow", "V of +-3e38");
    release(&x);
  }
  {  // just inside both limits: accepted, and every kernel gives finite output
    inputs x = make();
    x.p.scale = 1.0f;
    // ‖q_i‖ = ‖k_j‖ = sqrt(8)·a with a² · 8 = 0.9 · limit
    const float a = (float)sqrt(0.9 * ATTN_SCORE_LIMIT / 8.0);
    for (size_t i = 0; i < attn_q_elems(&x.p); i++) x.q[i] = x.q[i] < 0 ? -a : a;
    for (size_t i = 0; i < attn_k_elems(&x.p); i++) x.k[i] = x.k[i] < 0 ? -a : a;
    const float vm = (float)(0.9 * ATTN_VALUE_LIMIT / 5.0);
    for (size_t i = 0; i < attn_v_elems(&x.p); i++) x.v[i] = x.v[i] < 0 ? -vm : vm;
    char err[256];
    EXPECT(attn_inputs_check(&x.p, x.q, x.k, x.v, err, sizeof err) == ATTN_OK, "just inside: %s",
           err);
    every_kernel(&x, ATTN_OK, "", "just inside the limits");
    // and just outside each: row 0 of Q and of K 10% longer (0.9 · 1.21 > 1), one V 20% larger
    for (int t = 0; t < 8; t++) x.q[t] *= 1.1f, x.k[t] *= 1.1f;
    EXPECT(attn_inputs_check(&x.p, x.q, x.k, x.v, NULL, 0) == ATTN_ERR_RANGE,
           "score limit not enforced");
    for (int t = 0; t < 8; t++) x.q[t] /= 1.1f, x.k[t] /= 1.1f;
    EXPECT(attn_inputs_check(&x.p, x.q, x.k, x.v, NULL, 0) == ATTN_OK, "restored inputs refused");
    x.v[0] *= 1.2f;
    EXPECT(attn_inputs_check(&x.p, x.q, x.k, x.v, NULL, 0) == ATTN_ERR_RANGE,
           "value limit not enforced");
    release(&x);
  }
  {  // the score bound is per K/V group: huge rows that never meet are fine
    inputs x = make();
    x.p.scale = 1.0f;
    const float a = 1e18f;                        // ‖q‖·‖k‖ = 8e36 > limit if they met
    for (int t = 0; t < 8; t++) x.q[t] = a;       // head 0, row 0
    for (int t = 0; t < 8; t++) x.k[40 + t] = a;  // K/V head 1, row 0
    char err[256];
    EXPECT(attn_inputs_check(&x.p, x.q, x.k, x.v, err, sizeof err) == ATTN_OK, "separate heads: %s",
           err);
    // head 1, row 0 now meets the large key
    for (int t = 0; t < 8; t++) x.q[32 + t] = a;
    EXPECT(attn_inputs_check(&x.p, x.q, x.k, x.v, err, sizeof err) == ATTN_ERR_RANGE,
           "same head accepted");
    EXPECT(strstr(err, "K/V head 1") != NULL, "message names the head: %s", err);
    release(&x);
  }
  {  // invalid problem / NULL tensor: ATTN_ERR_INVALID, not RANGE
    inputs x = make();
    EXPECT(attn_inputs_check(&x.p, NULL, x.k, x.v, NULL, 0) == ATTN_ERR_INVALID, "NULL q");
    attn_problem bad = x.p;
    bad.kv_heads = 3;
    EXPECT(attn_inputs_check(&bad, x.q, x.k, x.v, NULL, 0) == ATTN_ERR_INVALID, "invalid problem");
    release(&x);
  }
  return test_finish("test_input_domain");
}
