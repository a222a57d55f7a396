// SPDX-License-Identifier: MIT
// How the BF16 kernels run a problem (flash/flash_bf16_route.h).
#include "core/attn_internal.h"
#include "core/convert.h"
#include "flash/flash_avx512.h"
#include "flash/flash_bf16_route.h"

bool flash_bf16_decode_route(const attn_problem *p) {
  if (p->compute != ATTN_COMPUTE_BF16 || p->kv_dtype != ATTN_DTYPE_BF16) return false;
  return p->seq_q * (p->heads / p->kv_heads) <= FLASH_BF16_DECODE_ROWS;
}

// A ragged or paged batch the kernel's BF16 body does not read (dense problems only).
static bool gathered(const attn_problem *p) {
  return p->layout && p->layout->kind != ATTN_LAYOUT_DENSE;
}

// The decode route's F32 problem, and the bytes of its rounded Q (all of Q: a layout's
// packed tokens too).
static attn_problem route_problem(const attn_problem *p) {
  attn_problem f = *p;
  f.compute = ATTN_COMPUTE_F32;
  return f;
}

static size_t route_q_bytes(const attn_problem *p) {
  const size_t b = attn_size_mul_sat(attn_q_elems(p), sizeof(float));
  return b > SIZE_MAX - 63 ? SIZE_MAX : (b + 63) & ~(size_t)63;
}

size_t flash_bf16_kernel_workspace(const attn_kernel *self, const attn_problem *p,
                                   const attn_exec *exec, attn_workspace_fn body_workspace) {
  if (p->compute != ATTN_COMPUTE_BF16) return flash_avx512_workspace(p, exec);
  if (flash_bf16_decode_route(p)) {
    const attn_problem f = route_problem(p);
    return attn_size_add_sat(route_q_bytes(p), flash_avx512_workspace(&f, exec));
  }
  if (gathered(p)) return attn_layout_workspace(self, p, exec);
  return body_workspace(p, exec);
}

int flash_bf16_kernel_run(const attn_kernel *self, const attn_problem *p, const attn_exec *exec,
                          const float *q, const void *k, const void *v, float *o, void *workspace,
                          attn_kernel_fn body_run) {
  if (p->compute != ATTN_COMPUTE_BF16) return flash_avx512_run(p, exec, q, k, v, o, workspace);
  if (flash_bf16_decode_route(p)) {
    float *qr = workspace;
    attn_compute_round_q(ATTN_COMPUTE_BF16, q, attn_q_elems(p) / (size_t)p->head_dim_qk,
                         p->head_dim_qk, qr);
    const attn_problem f = route_problem(p);
    return flash_avx512_run(&f, exec, qr, k, v, o, (char *)workspace + route_q_bytes(p));
  }
  if (gathered(p)) {  // each sequence a dense problem: this kernel again, on its body
    attn_run_info info;
    return attn_layout_run(self, p, exec, q, k, v, o, workspace, &info);
  }
  return body_run(p, exec, q, k, v, o, workspace);
}
