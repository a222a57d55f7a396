// SPDX-License-Identifier: MIT
// flash__avxvnni in the INT8 compute mode (attn.h, "Compute modes";
// docs/low-precision-kernels.md). Its VEX `vpdpbusd ymm` faults on CPUs without AVX-VNNI,
// which include the AVX-512 ones (Zen 4, Ice Lake); there the test twin
// (flash_avxvnni_twin.c: the same body and ymm primitives, the EVEX form of the one
// dot-product instruction) runs the kernel's code path. On whichever of the two the CPU
// runs, the checks of vnni_check.h:
//   • the integer block dots equal the contract's Σ_t q_t·k_t exactly (1–4 rows, 1–8
//     keys, 1–5 blocks);
//   • test kernels on those dots with K's bytes read unsigned or every block scaled by
//     block 0's d_k fail the checker, the same kernel without the bug passes;
//   • the checker passes the kernel natively over decode (MHA, GQA 2/3/4 rows, MQA 8),
//     split-KV, causal prefill, cross lengths with rows that see nothing, head dims
//     32–160 with head_dim_v ≠ head_dim_qk, negative and tiny scale; 1 and 2 threads
//     bitwise equal, nothing written past O;
//   • F32 mode is flash__avx2's, bitwise;
// and: the twin's record is flash__avxvnni's but for its entry points and unit; without
// AVX-VNNI the kernel is unavailable ("needs avxvnni", as `attnbench list` says) and
// attn_kernel_call refuses it, leaving O alone; with both units the kernel and the twin
// give bitwise the same outputs. --masked (run under ATTNBENCH_ISA_MASK without the
// avxvnni bit): only the refusal. Exit 77 when the CPU has neither unit.
#include "flash/flash_vnni.h"
#include "flash_avxvnni_twin.h"
#include "vnni_check.h"

// The twin is the kernel's record with other entry points and the EVEX unit.
static void twin_matches_record(const attn_kernel *real) {
  const attn_kernel *t = &flash_avxvnni_twin;
  EXPECT(t->caps == real->caps && t->vec_width == real->vec_width && t->qk_rows == real->qk_rows &&
             t->qk_cols == real->qk_cols && t->pv_rows == real->pv_rows &&
             t->pv_cols == real->pv_cols && t->regtile_count == real->regtile_count,
         "the twin's capabilities or tiles differ from flash__avxvnni's");
  EXPECT((t->required_isa & ~(uint32_t)ATTN_ISA_AVX512VNNI) ==
             (real->required_isa & ~(uint32_t)ATTN_ISA_AVXVNNI),
         "the twin requires 0x%x, flash__avxvnni 0x%x: more than the unit differs",
         (unsigned)t->required_isa, (unsigned)real->required_isa);
  EXPECT(real->qk_cols == FLASH_AVXVNNI_KEYS && real->qk_rows == FLASH_VNNI_ROWS,
         "flash__avxvnni's Q·Kᵀ tile %dx%d is not its row and key group", real->qk_rows,
         real->qk_cols);
}

// Every check of vnni_check.h on one kernel (the real one or the twin) and its dots.
static void check_kernel(const attn_kernel *k, flash_vnni_dots_fn *dots, const attn_kernel *f32k,
                         bool quick) {
  printf("%s:\n", k->name);
  vnni_block_dots(dots, FLASH_VNNI_ROWS, FLASH_AVXVNNI_KEYS);
  vnni_checker_fails_bugs(dots, FLASH_AVXVNNI_KEYS);
  vnni_shapes(k, quick);
  vnni_f32_mode(k, f32k);
}

int main(int argc, char **argv) {
  bool quick = false, masked = false;
  for (int i = 1; i < argc; i++) {
    quick |= !strcmp(argv[i], "--quick");
    masked |= !strcmp(argv[i], "--masked");
  }
  const attn_kernel *real = attn_kernel_find("flash__avxvnni");
  const attn_kernel *f32k = attn_kernel_find("flash__avx2");
  EXPECT(real && f32k, "flash__avxvnni or flash__avx2 not registered");
  if (!real || !f32k) return test_finish("test_flash_avxvnni");
  twin_matches_record(real);
  const bool has_real = attn_kernel_available(real, NULL, 0);
  const bool has_twin = attn_kernel_available(&flash_avxvnni_twin, NULL, 0);
  if (masked) {
    EXPECT(!(attn_cpu_features() & ATTN_ISA_AVXVNNI), "--masked: avxvnni is not masked off");
    vnni_refused(real, "avxvnni");
    return test_finish("test_flash_avxvnni --masked");
  }
  if (!has_real) vnni_refused(real, "avxvnni");
  if (!has_real && !has_twin) {
    printf("test_flash_avxvnni: skipped (neither avxvnni nor avx512vnni)\n");
    return g_failures ? test_finish("test_flash_avxvnni") : TEST_SKIP;
  }
  if (has_twin) check_kernel(&flash_avxvnni_twin, flash_avxvnni_twin_block_dots, f32k, quick);
  if (has_real) check_kernel(real, flash_avxvnni_block_dots, f32k, quick);
  if (has_real && has_twin) vnni_same_outputs(real, &flash_avxvnni_twin);
  return test_finish("test_flash_avxvnni");
}
