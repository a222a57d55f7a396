// SPDX-License-Identifier: MIT
// flash__avx512vnni in the INT8 compute mode (attn.h, "Compute modes";
// docs/low-precision-kernels.md), with the checks of vnni_check.h:
//   • its integer block dot products (vpdpbusd zmm with the +128 offset on K) equal the
//     contract's Σ_t q_t·k_t exactly, 1–4 rows, 1–16 keys, 1–5 blocks;
//   • the checker passes it natively over decode (MHA, GQA 2/3/4 rows, MQA 8), split-KV,
//     causal prefill, cross lengths, head dims 32–160 with head_dim_v ≠ head_dim_qk,
//     negative and tiny scale; 1 and 2 threads bitwise equal, nothing written past O;
//     F32 mode is flash__avx512's, bitwise;
//   • the checker can fail: test kernels on the same dots with K's bytes read unsigned or
//     every block scaled by block 0's d_k fail it.
// Without AVX512_VNNI: unavailable ("needs ... avx512vnni") and refused, then exit 77.
#include "flash/flash_vnni.h"
#include "vnni_check.h"

int main(int argc, char **argv) {
  const bool quick = argc > 1 && !strcmp(argv[1], "--quick");
  const attn_kernel *k = attn_kernel_find("flash__avx512vnni");
  const attn_kernel *f32k = attn_kernel_find("flash__avx512");
  EXPECT(k && f32k, "kernels not registered");
  if (!k || !f32k) return test_finish("test_flash_vnni");
  if (!(attn_cpu_features() & ATTN_ISA_AVX512VNNI)) {
    vnni_refused(k, "avx512vnni");
    printf("test_flash_vnni: skipped (no avx512vnni)\n");
    return g_failures ? test_finish("test_flash_vnni") : TEST_SKIP;
  }
  EXPECT(k->qk_rows == FLASH_VNNI_ROWS && k->qk_cols == FLASH_VNNI_KEYS,
         "flash__avx512vnni's Q·Kᵀ tile %dx%d is not its row and key group", k->qk_rows,
         k->qk_cols);
  vnni_block_dots(flash_avx512vnni_block_dots, FLASH_VNNI_ROWS, FLASH_VNNI_KEYS);
  vnni_checker_fails_bugs(flash_avx512vnni_block_dots, FLASH_VNNI_KEYS);
  vnni_shapes(k, quick);
  vnni_f32_mode(k, f32k);
  return test_finish("test_flash_vnni");
}
