// SPDX-License-Identifier: MIT
// flash__avx512 — OpenMP FlashAttention-2-style kernel, AVX-512F (16 lanes). The
// algorithm is flash/flash_body.h and the task split flash/flash_plan.h; this file only
// picks the default register tiles for 32 zmm registers:
//   Q·Kᵀ: 8 query rows × 48 keys = 24 accumulators (+3 K vectors, 1 broadcast): 11 loads
//         per 24 FMAs (why not 8×32: docs/design.md)
//   P·V:  6 query rows × 64 columns = 24 accumulators (+4 V vectors, 1 broadcast)
// and holds the record, whose entry points dispatch on attn_exec.regtile to this
// instance or another variant's (flash_<tiles>_avx512.c; the list: flash_avx512.h).
#include "flash/flash_avx512.h"

#define FL_QK_MR FL_RT0_QK_MR
#define FL_QK_NV FL_RT0_QK_NV
#define FL_PV_MR FL_RT0_PV_MR
#define FL_PV_NV FL_RT0_PV_NV
#define FL_RUN flash_avx512_run
#define FL_WORKSPACE flash_avx512_workspace
#include "flash/flash_body.h"

#define FL_RT(i, name) \
  { name, FL_RT##i##_QK_MR, FL_RT##i##_QK_NV *VF_W, FL_RT##i##_PV_MR, FL_RT##i##_PV_NV *VF_W }
static const attn_regtile kRegtiles[] = {FL_RT(0, "8x48/6x64"), FL_RT(1, "12x32/8x32"),
                                         FL_RT(2, "6x64/8x48")};
#undef FL_RT
static const attn_workspace_fn kWorkspace[] = {flash_avx512_workspace, flash_avx512_12x32_workspace,
                                               flash_avx512_6x64_workspace};
static const attn_kernel_fn kRun[] = {flash_avx512_run, flash_avx512_12x32_run,
                                      flash_avx512_6x64_run};
enum { kVariants = sizeof kRegtiles / sizeof kRegtiles[0] };
_Static_assert(sizeof kRun / sizeof kRun[0] == kVariants, "one entry point per variant");

static int variant(const attn_exec *exec) {
  return exec ? exec->regtile : 0;
}

static size_t flash_avx512_workspace_any(const attn_problem *p, const attn_exec *exec) {
  const int i = variant(exec);
  return kWorkspace[i >= 0 && i < kVariants ? i : 0](p, exec);
}

static int flash_avx512_run_any(const attn_problem *p, const attn_exec *exec, const float *q,
                                const void *k, const void *v, float *o, void *workspace) {
  const int i = variant(exec);
  if (i < 0 || i >= kVariants) return ATTN_ERR_INVALID;  // attn_kernel_exec_check says why
  return kRun[i](p, exec, q, k, v, o, workspace);
}

const attn_kernel attn_kernel_flash__avx512 = {
    .name = "flash__avx512",
    .summary =
        "OpenMP FlashAttention-2 style, AVX-512F 8x48 QK^T / 6x64 PV tiles (2 more variants), "
        "GQA-shared packed K/V, causal/window tile skipping, split-KV decode, every option and "
        "f16/bf16/q8_0 K/V native, ragged and paged batches in place",
    .required_isa = ATTN_ISA_AVX512F,
    .caps = ATTN_CAP_ALL_SHAPES | ATTN_CAP_THREADS | ATTN_CAP_KV_SPLIT | ATTN_CAP_OPT_ALL |
            ATTN_CAP_KV_ALL | ATTN_CAP_LAYOUT_ALL,
    .workspace = flash_avx512_workspace_any,
    .run = flash_avx512_run_any,
    FL_RECORD_TILES,
    .regtile_count = kVariants,
    .regtiles = kRegtiles,
};
