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

// Without AVX2: unavailable with the reason `list` prints, and refused (O untouched).
static void refused(const attn_kernel *k) {
  char why[128], err[256];
  EXPECT(!attn_kernel_available(k, why, sizeof why) && strstr(why, "avx2"),
         "flash__avx2int8 without AVX2: available, or the reason '%s' does not name avx2", why);
  attn_problem p = attn_problem_make(1, 2, 1, 1, 40, 32, 32, false);
  p.kv_dtype = ATTN_DTYPE_Q8_0, p.compute = ATTN_COMPUTE_INT8;
  float *q, o[64];
  void *ks, *vs;
  vnni_inputs(&p, &q, &ks, &vs);
  for (int i = 0; i < 64; i++) o[i] = kSentinel;
  const int rc = attn_kernel_call(k, &p, NULL, q, ks, vs, o, err, sizeof err);
  EXPECT(rc == ATTN_ERR_INVALID && strstr(err, "unavailable"), "refusal: %d '%s'", rc, err);
  for (int i = 0; i < 64; i++) EXPECT(o[i] == kSentinel, "refused call wrote O[%d]", i);
  free(q), free(ks), free(vs);
  printf("flash__avx2int8: %s, refused\n", why);
}

// The sign form and the offset form compute the same integers: bitwise the same outputs
// as flash__avxvnni's code path (vnni: the kernel or its twin) on every shape.
static void same_as_vnni(const attn_kernel *k, const attn_kernel *vnni) {
  const int n = (int)(sizeof kVnniShapes / sizeof kVnniShapes[0]);
  for (int i = 0; i < n; i++) {
    char what[160];
    const attn_problem p = vnni_problem(&kVnniShapes[i], what, sizeof what);
    float *q;
    void *ks, *vs;
    vnni_inputs(&p, &q, &ks, &vs);
    const int split = kVnniShapes[i].kv_split;
    float *o1 = vnni_run_guarded(k, &p, 2, split, q, ks, vs, what);
    float *o2 = vnni_run_guarded(vnni, &p, 2, split, q, ks, vs, what);
    EXPECT(memcmp(o1, o2, attn_o_elems(&p) * sizeof(float)) == 0, "%s: %s and %s differ", what,
           k->name, vnni->name);
    free(q), free(ks), free(vs), free(o1), free(o2);
  }
  printf("%s: bitwise %s over %d shapes\n", k->name, vnni->name, n);
}

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
    refused(k);
    return test_finish("test_flash_avx2int8 --masked");
  }
  if (!attn_kernel_available(k, NULL, 0)) {
    refused(k);
    printf("test_flash_avx2int8: skipped (no avx2)\n");
    return g_failures ? test_finish("test_flash_avx2int8") : TEST_SKIP;
  }
  printf("%s:\n", k->name);
  vnni_block_dots(flash_avx2int8_block_dots, FLASH_VNNI_ROWS, FLASH_AVXVNNI_KEYS);
  vnni_checker_fails_bugs(flash_avx2int8_block_dots, FLASH_AVXVNNI_KEYS);
  vnni_shapes(k, quick);
  vnni_f32_mode(k, f32k);
  const attn_kernel *vnni = attn_kernel_find("flash__avxvnni");
  if (vnni && attn_kernel_available(vnni, NULL, 0))
    same_as_vnni(k, vnni);
  else if (attn_kernel_available(&flash_avxvnni_twin, NULL, 0))
    same_as_vnni(k, &flash_avxvnni_twin);
  else
    printf("flash__avx2int8: no AVX-VNNI or AVX512_VNNI here, the bitwise comparison skipped\n");
  return test_finish("test_flash_avx2int8");
}
