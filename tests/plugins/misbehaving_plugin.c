// SPDX-License-Identifier: MIT
// Plug-ins that load fine and misbehave when they run, one per MIS_<what> definition
// (tests/plugins/CMakeLists.txt builds each as mis_<what>.so, kernel "mis_<what>"), for
// tests/plugins/test_isolation.py. Each computes plain attention correctly in double
// (caps 0: every option case runs the shared fallback) except where it misbehaves:
//   MIS_EXIT0   exit(0) on the 7×7 cases
//   MIS_ABORT   abort() on the 7×7 cases
//   MIS_SEGV    a write to address 8 (unmapped) on the 7×7 cases
//   MIS_HANG    never returns on the 7×7 cases
//   MIS_FPTRAP  enables the divide-by-zero, invalid, overflow and underflow traps and
//               returns with them enabled (every call)
//   MIS_UPWARD  returns with the rounding mode FE_UPWARD (every call)
//   MIS_WRONG   uniform weights instead of the softmax (wrong wherever its code runs)
//   MIS_WSSEGV  its workspace() writes to address 8 on the 7×7 cases (before any call)
//   MIS_WSHANG  its workspace() never returns on the 7×7 cases
//   MIS_NANLSE  claims the LSE output (ATTN_CAP_OPT_LSE) and writes NaN there
#define _GNU_SOURCE
#include <fenv.h>
#include <math.h>
#include <stdlib.h>

#include "attn.h"

#define IS_7X7(p) ((p)->seq_q == 7 && (p)->seq_kv == 7)

static void misbehave(const attn_problem *p) {
#if defined(MIS_EXIT0)
  if (IS_7X7(p)) exit(0);
#elif defined(MIS_ABORT)
  if (IS_7X7(p)) abort();
#elif defined(MIS_SEGV)
  static volatile uintptr_t unmapped = 8;  // in the first page, never mapped
  if (IS_7X7(p)) *(volatile int *)unmapped = 1;
#elif defined(MIS_HANG)
  if (IS_7X7(p))
    for (volatile unsigned long spin = 0;; spin++) {
    }
#else
  (void)p;
#endif
}

// Bottom-right causal attention, row by row in double (F32 K/V: caps claims no type).
static int mis_run(const attn_problem *p, const attn_exec *exec, const float *q, const void *kv,
                   const void *vv, float *o, void *workspace) {
  (void)exec, (void)workspace;
  misbehave(p);
  const float *k = kv, *v = vv;
  const int64_t dqk = p->head_dim_qk, dv = p->head_dim_v, group = p->heads / p->kv_heads;
  double *acc = malloc((size_t)dv * sizeof *acc);
  if (!acc) return ATTN_ERR_NOMEM;
  for (int64_t b = 0; b < p->batch; b++) {
    for (int64_t h = 0; h < p->heads; h++) {
      const int64_t g = h / group;
      const float *kh = k + (size_t)((b * p->kv_heads + g) * p->seq_kv) * (size_t)dqk;
      const float *vh = v + (size_t)((b * p->kv_heads + g) * p->seq_kv) * (size_t)dv;
      for (int64_t i = 0; i < p->seq_q; i++) {
        const float *qi = q + (size_t)(((b * p->heads + h) * p->seq_q) + i) * (size_t)dqk;
        float *oi = o + (size_t)(((b * p->heads + h) * p->seq_q) + i) * (size_t)dv;
        const int64_t last = p->causal ? i + p->seq_kv - p->seq_q : p->seq_kv - 1;
        double m = -INFINITY, l = 0.0;
        for (int64_t j = 0; j <= last && j < p->seq_kv; j++) {
          double s = 0.0;
          for (int64_t t = 0; t < dqk; t++) s += (double)qi[t] * (double)kh[j * dqk + t];
          s *= (double)p->scale;
          if (s > m) m = s;
        }
        for (int64_t d = 0; d < dv; d++) acc[d] = 0.0;
        for (int64_t j = 0; j <= last && j < p->seq_kv; j++) {
          double s = 0.0;
          for (int64_t t = 0; t < dqk; t++) s += (double)qi[t] * (double)kh[j * dqk + t];
#if defined(MIS_WRONG)
          const double w = 1.0;
#else
          const double w = exp(s * (double)p->scale - m);
#endif
          l += w;
          for (int64_t d = 0; d < dv; d++) acc[d] += w * (double)vh[j * dv + d];
        }
        for (int64_t d = 0; d < dv; d++) oi[d] = l > 0.0 ? (float)(acc[d] / l) : 0.0f;
      }
    }
  }
  free(acc);
#if defined(MIS_NANLSE)
  if (p->opts && p->opts->lse)
    for (int64_t i = 0; i < p->batch * p->heads * p->seq_q; i++) p->opts->lse[i] = NAN;
#endif
#if defined(MIS_FPTRAP)
  feenableexcept(FE_DIVBYZERO | FE_INVALID | FE_OVERFLOW | FE_UNDERFLOW);
#elif defined(MIS_UPWARD)
  fesetround(FE_UPWARD);
#endif
  return ATTN_OK;
}

// The scratch a call needs: none, except where the size query itself misbehaves.
static size_t mis_workspace(const attn_problem *p, const attn_exec *exec) {
  (void)exec;
#if defined(MIS_WSSEGV)
  static volatile uintptr_t unmapped_ws = 8;
  if (IS_7X7(p)) *(volatile int *)unmapped_ws = 1;
#elif defined(MIS_WSHANG)
  if (IS_7X7(p))
    for (volatile unsigned long spin = 0;; spin++) {
    }
#else
  (void)p;
#endif
  return 0;
}

#if defined(MIS_NANLSE)
#define MIS_CAPS ATTN_CAP_OPT_LSE
#else
#define MIS_CAPS 0u
#endif

#define STR2(x) #x
#define STR(x) STR2(x)
static const attn_kernel kMis = {.name = "mis_" STR(MIS_NAME),
                                 .summary = "misbehaving test plug-in",
                                 .caps = MIS_CAPS,
                                 .run = mis_run,
                                 .workspace = mis_workspace};
static const attn_kernel *const kKernels[] = {&kMis};
static const attn_plugin kPlugin = {
    .abi_version = ATTN_PLUGIN_ABI_VERSION,
    .record_size = sizeof(attn_kernel),
    .count = 1,
    .kernels = kKernels,
};

const attn_plugin *attn_plugin_v1(void) {
  return &kPlugin;
}
