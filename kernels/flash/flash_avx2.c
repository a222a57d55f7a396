// SPDX-License-Identifier: MIT
// flash__avx2 — OpenMP FlashAttention-2-style kernel, AVX2 + FMA (8 lanes). The
// algorithm is flash/flash_body.h and the task split flash/flash_plan.h; this file only
// picks the default register tiles for 16 ymm registers:
//   Q·Kᵀ: 6 query rows × 16 keys = 12 accumulators (+2 K vectors, 1 broadcast)
//   P·V:  6 query rows × 16 columns = 12 accumulators (+2 V vectors, 1 broadcast)
// and holds the record, whose entry points dispatch on attn_exec.regtile to this
// instance or another variant's (flash_<tiles>_avx2.c; the list: flash_avx2.h).
#include "flash/flash_avx2.h"

#define FL_QK_MR FL_RT0_QK_MR
#define FL_QK_NV FL_RT0_QK_NV
#define FL_PV_MR FL_RT0_PV_MR
#define FL_PV_NV FL_RT0_PV_NV
#define FL_RUN flash_avx2_run
#define FL_WORKSPACE flash_avx2_workspace
#include "flash/flash_body.h"

#define FL_RT(i, name) \
  { name, FL_RT##i##_QK_MR, FL_RT##i##_QK_NV *VF_W, FL_RT##i##_PV_MR, FL_RT##i##_PV_NV *VF_W }
static const attn_regtile kRegtiles[] = {FL_RT(0, "6x16/6x16"), FL_RT(1, "4x24/4x24"),
                                         FL_RT(2, "3x32/6x16")};
#undef FL_RT
static const attn_workspace_fn kWorkspace[] = {flash_avx2_workspace, flash_avx2_4x24_workspace,
                                               flash_avx2_3x32_workspace};
static const attn_kernel_fn kRun[] = {flash_avx2_run, flash_avx2_4x24_run, flash_avx2_3x32_run};
enum { kVariants = sizeof kRegtiles / sizeof kRegtiles[0] };
_Static_assert(sizeof kRun / sizeof kRun[0] == kVariants, "one entry point per variant");

static int variant(const attn_exec *exec) {
  return exec ? exec->regtile : 0;
}

static size_t flash_avx2_workspace_any(const attn_problem *p, const attn_exec *exec) {
  const int i = variant(exec);
  return kWorkspace[i >= 0 && i < kVariants ? i : 0](p, exec);
}

static int flash_avx2_run_any(const attn_problem *p, const attn_exec *exec, const float *q,
                              const void *k, const void *v, float *o, void *workspace) {
  const int i = variant(exec);
  if (i < 0 || i >= kVariants) return ATTN_ERR_INVALID;  // attn_kernel_exec_check says why
  return kRun[i](p, exec, q, k, v, o, workspace);
}

const attn_kernel attn_kernel_flash__avx2 = {
    .name = "flash__avx2",
    .summary =
        "OpenMP FlashAttention-2 style, AVX2 6x16 QK^T / 6x16 PV tiles (2 more variants), "
        "GQA-shared packed K/V, causal/window tile skipping, split-KV decode, every option and "
        "f16/bf16/q8_0 K/V native, ragged and paged batches in place",
    .required_isa = ATTN_ISA_AVX2,
    .caps = ATTN_CAP_ALL_SHAPES | ATTN_CAP_THREADS | ATTN_CAP_KV_SPLIT | ATTN_CAP_OPT_ALL |
            ATTN_CAP_KV_ALL | ATTN_CAP_LAYOUT_ALL,
    .workspace = flash_avx2_workspace_any,
    .run = flash_avx2_run_any,
    FL_RECORD_TILES,
    .regtile_count = kVariants,
    .regtiles = kRegtiles,
};
