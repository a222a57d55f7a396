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

// Without AVX-VNNI: unavailable with the reason `list` prints, and refused by
// attn_kernel_call before any of its instructions run (O untouched).
static void refused(const attn_kernel *real) {
  char why[128], err[256];
  EXPECT(!attn_kernel_available(real, why, sizeof why) && strstr(why, "needs") &&
             strstr(why, "avxvnni"),
         "flash__avxvnni without AVX-VNNI: available, or the reason '%s' does not name avxvnni",
         why);
  attn_problem p = attn_problem_make(1, 2, 1, 1, 40, 32, 32, false);
  p.kv_dtype = ATTN_DTYPE_Q8_0, p.compute = ATTN_COMPUTE_INT8;
  float *q, o[64];
  void *ks, *vs;
  vnni_inputs(&p, &q, &ks, &vs);
  for (int i = 0; i < 64; i++) o[i] = kSentinel;
  const int rc = attn_kernel_call(real, &p, NULL, q, ks, vs, o, err, sizeof err);
  EXPECT(rc == ATTN_ERR_INVALID && strstr(err, "unavailable"), "refusal: %d '%s'", rc, err);
  for (int i = 0; i < 64; i++) EXPECT(o[i] == kSentinel, "refused call wrote O[%d]", i);
  free(q), free(ks), free(vs);
  printf("flash__avxvnni: %s, refused\n", why);
}

// On a CPU with both units: the kernel and its twin, bitwise, on every shape.
static void real_is_twin(const attn_kernel *real) {
  const int n = (int)(sizeof kVnniShapes / sizeof kVnniShapes[0]);
  for (int i = 0; i < n; i++) {
    char what[160];
    const attn_problem p = vnni_problem(&kVnniShapes[i], what, sizeof what);
    float *q;
    void *ks, *vs;
    vnni_inputs(&p, &q, &ks, &vs);
    const int split = kVnniShapes[i].kv_split;
    float *o1 = vnni_run_guarded(real, &p, 2, split, q, ks, vs, what);
    float *o2 = vnni_run_guarded(&flash_avxvnni_twin, &p, 2, split, q, ks, vs, what);
    EXPECT(memcmp(o1, o2, attn_o_elems(&p) * sizeof(float)) == 0, "%s: kernel and twin differ",
           what);
    free(q), free(ks), free(vs), free(o1), free(o2);
  }
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
    refused(real);
    return test_finish("test_flash_avxvnni --masked");
  }
  if (!has_real) refused(real);
  if (!has_real && !has_twin) {
    printf("test_flash_avxvnni: skipped (neither avxvnni nor avx512vnni)\n");
    return g_failures ? test_finish("test_flash_avxvnni") : TEST_SKIP;
  }
  if (has_twin) check_kernel(&flash_avxvnni_twin, flash_avxvnni_twin_block_dots, f32k, quick);
  if (has_real) check_kernel(real, flash_avxvnni_block_dots, f32k, quick);
  if (has_real && has_twin) real_is_twin(real);
  return test_finish("test_flash_avxvnni");
}
