// SPDX-License-Identifier: MIT
// The tiled flash pass's fused option-scores + online-softmax step (fl_fin_softmax_row,
// kernels/flash/flash_opts.h) gives bitwise what it replaces, fl_fin_row then
// vs_online_softmax_row, for every ISA this CPU runs (fin_fused_body.h lists the cases).
// Usage: test_fin_fused [--quick]. Exit 77 when the CPU runs none of the ISAs.
#include <string.h>

#include "attn.h"
#include "test_util.h"

int fin_fused_avx2(const char *isa, int cases);
int fin_fused_avx512(const char *isa, int cases);
int fin_fused_neon(const char *isa, int cases);

int main(int argc, char **argv) {
  const int cases = argc > 1 && strcmp(argv[1], "--quick") == 0 ? 3000 : 20000;
  const uint32_t have = attn_cpu_features();
  int ran = 0;
#if defined(__x86_64__) || defined(__i386__)
  if (have & ATTN_ISA_AVX2) {
    ran++;
    const int f = fin_fused_avx2("avx2", cases);
    EXPECT(f == 0, "avx2: %d of %d cases differ", f, cases);
  }
  if (have & ATTN_ISA_AVX512F) {
    ran++;
    const int f = fin_fused_avx512("avx512", cases);
    EXPECT(f == 0, "avx512: %d of %d cases differ", f, cases);
  }
#endif
#if defined(__aarch64__)
  if (have & ATTN_ISA_NEON) {
    ran++;
    const int f = fin_fused_neon("neon", cases);
    EXPECT(f == 0, "neon: %d of %d cases differ", f, cases);
  }
#endif
  if (!ran) {
    printf("test_fin_fused: no SIMD ISA on this CPU, skipped\n");
    return TEST_SKIP;
  }
  return test_finish("test_fin_fused");
}
