// SPDX-License-Identifier: MIT
// flash__avx2int8 in the INT8 compute mode (attn.h, "Compute modes";
// docs/low-precision-kernels.md): the VNNI kernels' body on plain AVX2, its integer dots in
// the sign form (vpabsb, vpsignb, vpmaddubsw, vpmaddwd). On any AVX2 CPU, the checks of
// vnni_check.h:
//   • the integer block dots equal the contract's Σ_t q_t·k_t exactly (1–4 rows, 1–8
//     keys, 1–5 blocks; K bytes −128 included, where vpsignb alone would be wrong and an
//     offset K would saturate vpmaddubsw);
//   • test kernels on those dots with K's bytes read unsigned or every block scaled by
//     block 0's d_k fail the checker, the same kernel without the bug passes;
//   • the checker passes the kernel natively over decode, split-KV, causal prefill, cross
//     lengths, head dims 32–160, negative and tiny scale; 1 and 2 threads bitwise equal,
//     nothing written past O;
//   • F32 mode is flash__avx2's, bitwise;
// and where flash__avxvnni's code path runs (the kernel on AVX-VNNI, or its test twin on
// AVX512_VNNI + VL), both give bitwise the same outputs: the same integers, the same float
// arithmetic after them. --masked (run under ATTNBENCH_ISA_MASK without avx2): the kernel
// is unavailable ("needs avx2") and attn_kernel_call refuses it, leaving O alone.
#include "flash/flash_vnni.h"
#include "flash_avxvnni_twin.h"
#include "vnni_check.h"

int main(int argc, char **argv) {
  bool quick = false, masked = false;
  for (int i = 1; i < argc; i++) {
    quick |= !strcmp(argv[i], "--quick");
    masked |= !strcmp(argv[i], "--masked");
  }
  const attn_kernel *k = attn_kernel_find("flash__avx2int8");
  const attn_kernel *f32k = attn_kernel_find("flash__avx2");
  EXPECT(k && f32k, "flash__avx2int8 or flash__avx2 not registered");
  if (!k || !f32k) return test_finish("test_flash_avx2int8");
  EXPECT(k->qk_cols == FLASH_AVXVNNI_KEYS && k->qk_rows == FLASH_VNNI_ROWS,
         "flash__avx2int8's Q·Kᵀ tile %dx%d is not its row and key group", k->qk_rows, k->qk_cols);
  if (masked) {
    EXPECT(!(attn_cpu_features() & ATTN_ISA_AVX2), "--masked: avx2 is not masked off");
    vnni_refused(k, "avx2");
    return test_finish("test_flash_avx2int8 --masked");
  }
  if (!attn_kernel_available(k, NULL, 0)) {
    vnni_refused(k, "avx2");
    printf("test_flash_avx2int8: skipped (no avx2)\n");
    return g_failures ? test_finish("test_flash_avx2int8") : TEST_SKIP;
  }
  printf("%s:\n", k->name);
  vnni_block_dots(flash_avx2int8_block_dots, FLASH_VNNI_ROWS, FLASH_AVXVNNI_KEYS);
  vnni_checker_fails_bugs(flash_avx2int8_block_dots, FLASH_AVXVNNI_KEYS);
  vnni_shapes(k, quick);
  vnni_f32_mode(k, f32k);
  const attn_kernel *vnni = attn_kernel_find("flash__avxvnni");
  // The sign form and the offset form compute the same integers: bitwise the outputs of
  // flash__avxvnni's code path (the kernel, or its twin on AVX512_VNNI).
  if (vnni && attn_kernel_available(vnni, NULL, 0))
    vnni_same_outputs(k, vnni);
  else if (attn_kernel_available(&flash_avxvnni_twin, NULL, 0))
    vnni_same_outputs(k, &flash_avxvnni_twin);
  else
    printf("flash__avx2int8: no AVX-VNNI or AVX512_VNNI here, the bitwise comparison skipped\n");
  return test_finish("test_flash_avx2int8");
}
