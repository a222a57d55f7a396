// SPDX-License-Identifier: MIT
// example_kernel.c — a complete kernel plug-in (docs/plugins.md): one attention kernel
// in portable C and the one exported entry point, attn_plugin_v1.
//
// The kernel, for each batch b, query head h (K/V head g = h / (heads / kv_heads)) and
// query row i, streams over the visible keys j < attn_visible_keys(p, i) keeping the
// running maximum m, the sum l = Σ e^(s_j − m) and the accumulator acc = Σ e^(s_j − m)·v_j
// (rescaled by e^(m_old − m) when m grows), with s_j = scale · q_i·k_j; then
// o_i = acc / l, or 0 for a row that sees no key (attn.h). One pass, O(head_dim_v) state.
#include <math.h>
#include <stddef.h>

#include "attn.h"

// acc: head_dim_v floats of workspace.
static size_t example_workspace(const attn_problem *p, const attn_exec *exec) {
  (void)exec;
  return (size_t)p->head_dim_v * sizeof(float);
}

static int example_run(const attn_problem *p, const attn_exec *exec, const float *q, const void *kv,
                       const void *vv, float *o, void *workspace) {
  (void)exec;
  // float32 K/V only (caps has no ATTN_CAP_KV_* bit): attn_kernel_run converts the others
  const float *k = (const float *)kv, *v = (const float *)vv;
  float *acc = workspace;
  const attn_fp_env env = attn_fp_env_enter();
  const size_t dqk = (size_t)p->head_dim_qk, dv = (size_t)p->head_dim_v;
  const int64_t group = p->heads / p->kv_heads;
  for (int64_t b = 0; b < p->batch; b++)
    for (int64_t h = 0; h < p->heads; h++) {
      const int64_t g = h / group;
      const float *qh = q + (size_t)(b * p->heads + h) * (size_t)p->seq_q * dqk;
      const float *kh = k + (size_t)(b * p->kv_heads + g) * (size_t)p->seq_kv * dqk;
      const float *vh = v + (size_t)(b * p->kv_heads + g) * (size_t)p->seq_kv * dv;
      float *oh = o + (size_t)(b * p->heads + h) * (size_t)p->seq_q * dv;
      for (int64_t i = 0; i < p->seq_q; i++) {
        const float *qi = qh + (size_t)i * dqk;
        float *oi = oh + (size_t)i * dv;
        const int64_t n = attn_visible_keys(p, i);
        float m = -INFINITY, l = 0.0f;
        for (size_t d = 0; d < dv; d++) acc[d] = 0.0f;
        for (int64_t j = 0; j < n; j++) {
          const float *kj = kh + (size_t)j * dqk, *vj = vh + (size_t)j * dv;
          float s = 0.0f;
          for (size_t t = 0; t < dqk; t++) s += qi[t] * kj[t];
          s *= p->scale;
          if (s > m) {                    // rescale the running sums to the new maximum
            const float r = expf(m - s);  // e^-inf = 0 on the first key
            l *= r;
            for (size_t d = 0; d < dv; d++) acc[d] *= r;
            m = s;
          }
          const float e = expf(s - m);
          l += e;
          for (size_t d = 0; d < dv; d++) acc[d] += e * vj[d];
        }
        for (size_t d = 0; d < dv; d++) oi[d] = n > 0 ? acc[d] / l : 0.0f;
      }
    }
  attn_fp_env_leave(env);
  return ATTN_OK;
}

// The record, the plug-in table and the entry point are the same few lines in every
// plug-in (and in the built-in records, e.g. kernels/portable/naive.c): this file spells
// them out on purpose, so that it stays a complete, self-contained template to copy.
// Fields left out are zero: required_isa 0 (portable C runs on any CPU), no register-tile
// variants.
static const attn_kernel kExample = {
    // "<what>__<isa>": unique among the built-in kernels and every loaded plug-in
    .name = "example__scalar",
    .summary = "example plug-in: one-pass online softmax in portable C (examples/)",
    .run = example_run,              // the entry point attn_kernel_call reaches
    .workspace = example_workspace,  // its scratch bytes (the caller allocates them)
    // what this code handles itself; any other option reaches it through the fallbacks
    .caps = ATTN_CAP_CAUSAL | ATTN_CAP_CROSS | ATTN_CAP_DV_NE_DQK,
    .vec_width = 1,  // float lanes per vector: scalar C
};

static const attn_kernel *const kKernels[] = {&kExample};

static const attn_plugin kPlugin = {
    .abi_version = ATTN_PLUGIN_ABI_VERSION,
    .record_size = sizeof(attn_kernel),
    .count = sizeof kKernels / sizeof kKernels[0],
    .kernels = kKernels,
};

// The entry point attnbench looks up (ATTN_PLUGIN_ENTRY); the only exported symbol.
__attribute__((visibility("default"))) const attn_plugin *attn_plugin_v1(void) {
  return &kPlugin;
}
