// SPDX-License-Identifier: MIT
// attn_peak_unit_for (harness/machine/peak/peak.h): which unit's peak a point is judged
// by, for kernels of every class (declared here, and the registered INT8 kernels of x86),
// every compute mode and CPUs with and without each unit (cpu_isa given, so every case
// runs on any machine).
#include <stdio.h>

#include "attn.h"
#include "peak.h"
#include "test_util.h"

enum {
  kAvx2 = ATTN_ISA_AVX2,
  kAvx512 = ATTN_ISA_AVX2 | ATTN_ISA_AVX512F,
  kZen4 = kAvx512 | ATTN_ISA_AVX512BF16 | ATTN_ISA_AVX512VNNI,
  kSpr = kZen4 | ATTN_ISA_AVX512FP16 | ATTN_ISA_AMXBF16 | ATTN_ISA_AVXVNNI,
  kAdl = kAvx2 | ATTN_ISA_AVXVNNI,
  kNeonAll = ATTN_ISA_NEON | ATTN_ISA_NEON_BF16 | ATTN_ISA_NEON_DOTPROD | ATTN_ISA_NEON_FHM,
};

static attn_peak_key unit_for(const attn_kernel *k, attn_compute mode, uint32_t cpu) {
  const attn_problem p = {.compute = mode};
  return attn_peak_unit_for(k, &p, cpu);
}

#define EXPECT_UNIT(k, mode, cpu, want_unit, want_isa)                                       \
  do {                                                                                       \
    const attn_peak_key got_ = unit_for(k, mode, cpu);                                       \
    EXPECT(got_.unit == (want_unit) && got_.isa == (uint32_t)(want_isa),                     \
           "%s, compute %d, cpu 0x%x: unit %s isa 0x%x (want %s isa 0x%x)", (k)->name, mode, \
           (unsigned)(cpu), attn_peak_unit_name(got_.unit), (unsigned)got_.isa,              \
           attn_peak_unit_name(want_unit), (unsigned)(want_isa));                            \
  } while (0)

int main(void) {
  const uint32_t all = ATTN_CAP_COMPUTE_ALL;
  const attn_kernel portable = {.name = "portable"};  // no ISA, no native mode
  const attn_kernel portable_native = {.name = "portable_native", .caps = all};
  const attn_kernel f32_avx512 = {.name = "f32__avx512", .required_isa = kAvx512};
  const attn_kernel lp_avx512 = {.name = "lp__avx512", .required_isa = kAvx512, .caps = all};
  const attn_kernel lp_avx2 = {.name = "lp__avx2", .required_isa = kAvx2, .caps = all};
  const attn_kernel amx = {.name = "bf16__amx",
                           .required_isa = kAvx512 | ATTN_ISA_AVX512BF16 | ATTN_ISA_AMXBF16,
                           .caps = ATTN_CAP_COMPUTE_BF16};
  const attn_kernel fp16 = {.name = "f16__avx512fp16",
                            .required_isa = kAvx512 | ATTN_ISA_AVX512FP16,
                            .caps = ATTN_CAP_COMPUTE_F16};
  const attn_kernel neon = {.name = "lp__neon", .required_isa = ATTN_ISA_NEON, .caps = all};
  const attn_kernel neon_fhm = {.name = "f16__neon_fhm",
                                .required_isa = ATTN_ISA_NEON | ATTN_ISA_NEON_FHM,
                                .caps = ATTN_CAP_COMPUTE_F16};

  // F32: FP32 FMA of the kernel's ISA; a kernel without one takes the CPU's best.
  EXPECT_UNIT(&f32_avx512, ATTN_COMPUTE_F32, kZen4, ATTN_PEAK_FP32_FMA, ATTN_ISA_AVX512F);
  EXPECT_UNIT(&lp_avx2, ATTN_COMPUTE_F32, kZen4, ATTN_PEAK_FP32_FMA, ATTN_ISA_AVX2);
  EXPECT_UNIT(&portable, ATTN_COMPUTE_F32, kZen4, ATTN_PEAK_FP32_FMA, ATTN_ISA_AVX512F);
  EXPECT_UNIT(&portable, ATTN_COMPUTE_F32, kAvx2, ATTN_PEAK_FP32_FMA, ATTN_ISA_AVX2);
  EXPECT_UNIT(&portable, ATTN_COMPUTE_F32, 0, ATTN_PEAK_FP32_FMA, 0);
  EXPECT_UNIT(&portable, ATTN_COMPUTE_F32, kNeonAll, ATTN_PEAK_FP32_FMA, ATTN_ISA_NEON);

  // A mode the kernel does not declare runs in F32 on rounded copies: FP32 FMA.
  for (int m = ATTN_COMPUTE_BF16; m <= ATTN_COMPUTE_INT8; m++) {
    EXPECT_UNIT(&f32_avx512, (attn_compute)m, kSpr, ATTN_PEAK_FP32_FMA, ATTN_ISA_AVX512F);
    EXPECT_UNIT(&portable, (attn_compute)m, kSpr, ATTN_PEAK_FP32_FMA, ATTN_ISA_AVX512F);
  }

  // BF16: the dot product where the CPU has it; AMX only for a kernel that requires it.
  EXPECT_UNIT(&lp_avx512, ATTN_COMPUTE_BF16, kZen4, ATTN_PEAK_BF16_DOT, ATTN_ISA_AVX512BF16);
  EXPECT_UNIT(&lp_avx512, ATTN_COMPUTE_BF16, kSpr, ATTN_PEAK_BF16_DOT, ATTN_ISA_AVX512BF16);
  EXPECT_UNIT(&lp_avx512, ATTN_COMPUTE_BF16, kAvx512, ATTN_PEAK_FP32_FMA, ATTN_ISA_AVX512F);
  EXPECT_UNIT(&lp_avx2, ATTN_COMPUTE_BF16, kZen4, ATTN_PEAK_FP32_FMA, ATTN_ISA_AVX2);
  EXPECT_UNIT(&amx, ATTN_COMPUTE_BF16, kSpr, ATTN_PEAK_AMX_BF16, ATTN_ISA_AMXBF16);
  EXPECT_UNIT(&amx, ATTN_COMPUTE_BF16, kZen4, ATTN_PEAK_BF16_DOT, ATTN_ISA_AVX512BF16);
  EXPECT_UNIT(&amx, ATTN_COMPUTE_F32, kSpr, ATTN_PEAK_FP32_FMA, ATTN_ISA_AVX512F);
  EXPECT_UNIT(&portable_native, ATTN_COMPUTE_BF16, kZen4, ATTN_PEAK_BF16_DOT, ATTN_ISA_AVX512BF16);

  // F16: only a kernel built on the FP16 unit is judged by it.
  EXPECT_UNIT(&fp16, ATTN_COMPUTE_F16, kSpr, ATTN_PEAK_FP16_FMA, ATTN_ISA_AVX512FP16);
  EXPECT_UNIT(&lp_avx512, ATTN_COMPUTE_F16, kSpr, ATTN_PEAK_FP32_FMA, ATTN_ISA_AVX512F);
  EXPECT_UNIT(&neon_fhm, ATTN_COMPUTE_F16, kNeonAll, ATTN_PEAK_FP16_FMA, ATTN_ISA_NEON_FHM);
  EXPECT_UNIT(&neon, ATTN_COMPUTE_F16, kNeonAll, ATTN_PEAK_FP32_FMA, ATTN_ISA_NEON);

  // INT8: the VNNI form of the kernel's class; none on the CPU -> FP32 FMA. An AVX2 kernel
  // that does not require AVX-VNNI: AVX2's vpmaddubsw unit, with or without VNNI next to
  // it; a kernel that requires no ISA: the CPU's best.
  EXPECT_UNIT(&lp_avx512, ATTN_COMPUTE_INT8, kZen4, ATTN_PEAK_INT8_DOT, ATTN_ISA_AVX512VNNI);
  EXPECT_UNIT(&lp_avx512, ATTN_COMPUTE_INT8, kAvx512, ATTN_PEAK_FP32_FMA, ATTN_ISA_AVX512F);
  EXPECT_UNIT(&lp_avx2, ATTN_COMPUTE_INT8, kAdl, ATTN_PEAK_INT8_DOT, ATTN_ISA_AVX2);
  EXPECT_UNIT(&lp_avx2, ATTN_COMPUTE_INT8, kZen4, ATTN_PEAK_INT8_DOT, ATTN_ISA_AVX2);
  EXPECT_UNIT(&lp_avx2, ATTN_COMPUTE_INT8, kAvx2, ATTN_PEAK_INT8_DOT, ATTN_ISA_AVX2);
  EXPECT_UNIT(&portable_native, ATTN_COMPUTE_INT8, kAdl, ATTN_PEAK_INT8_DOT, ATTN_ISA_AVXVNNI);
  EXPECT_UNIT(&portable_native, ATTN_COMPUTE_INT8, kAvx2, ATTN_PEAK_INT8_DOT, ATTN_ISA_AVX2);

  // The registered INT8 kernels: flash__avxvnni (an AVX2 kernel) is judged by the VEX
  // vpdpbusd ymm where the CPU has AVX-VNNI — even next to AVX-512 — and by AVX2's FP32 FMA
  // without it; flash__avx512vnni by the zmm form; flash__avx2int8 by vpmaddubsw on every
  // CPU, VNNI or not; every probe exists in x86 builds.
#if defined(__x86_64__) || defined(__i386__)
  const attn_kernel *avxvnni = attn_kernel_find("flash__avxvnni");
  const attn_kernel *avx512vnni = attn_kernel_find("flash__avx512vnni");
  const attn_kernel *avx2int8 = attn_kernel_find("flash__avx2int8");
  EXPECT(avxvnni && avx512vnni && avx2int8,
         "flash__avxvnni, flash__avx512vnni and flash__avx2int8 are registered");
  if (avx2int8) {
    EXPECT_UNIT(avx2int8, ATTN_COMPUTE_INT8, kAvx2 | ATTN_ISA_F16C, ATTN_PEAK_INT8_DOT,
                ATTN_ISA_AVX2);
    EXPECT_UNIT(avx2int8, ATTN_COMPUTE_INT8, kSpr, ATTN_PEAK_INT8_DOT, ATTN_ISA_AVX2);
    EXPECT_UNIT(avx2int8, ATTN_COMPUTE_F32, kSpr, ATTN_PEAK_FP32_FMA, ATTN_ISA_AVX2);
    EXPECT(attn_peak_probe_find(ATTN_PEAK_INT8_DOT, ATTN_ISA_AVX2) != NULL,
           "the int8-dot probe of AVX2 is built");
  }
  if (avxvnni && avx512vnni) {
    const uint32_t adl = kAdl | ATTN_ISA_F16C;
    EXPECT_UNIT(avxvnni, ATTN_COMPUTE_INT8, adl, ATTN_PEAK_INT8_DOT, ATTN_ISA_AVXVNNI);
    EXPECT_UNIT(avxvnni, ATTN_COMPUTE_INT8, kSpr, ATTN_PEAK_INT8_DOT, ATTN_ISA_AVXVNNI);
    EXPECT_UNIT(avxvnni, ATTN_COMPUTE_INT8, kZen4, ATTN_PEAK_FP32_FMA, ATTN_ISA_AVX2);
    EXPECT_UNIT(avxvnni, ATTN_COMPUTE_F32, adl, ATTN_PEAK_FP32_FMA, ATTN_ISA_AVX2);
    EXPECT_UNIT(avx512vnni, ATTN_COMPUTE_INT8, kSpr, ATTN_PEAK_INT8_DOT, ATTN_ISA_AVX512VNNI);
    EXPECT(attn_peak_probe_find(ATTN_PEAK_INT8_DOT, ATTN_ISA_AVXVNNI) != NULL &&
               attn_peak_probe_find(ATTN_PEAK_INT8_DOT, ATTN_ISA_AVX512VNNI) != NULL,
           "the int8-dot probes of both VNNI forms are built");
  }
#endif

  // aarch64: BFDOT, SDOT where HWCAP says so.
  EXPECT_UNIT(&neon, ATTN_COMPUTE_BF16, kNeonAll, ATTN_PEAK_BF16_DOT, ATTN_ISA_NEON_BF16);
  EXPECT_UNIT(&neon, ATTN_COMPUTE_INT8, kNeonAll, ATTN_PEAK_INT8_DOT, ATTN_ISA_NEON_DOTPROD);
  EXPECT_UNIT(&neon, ATTN_COMPUTE_BF16, ATTN_ISA_NEON, ATTN_PEAK_FP32_FMA, ATTN_ISA_NEON);
  EXPECT_UNIT(&neon, ATTN_COMPUTE_INT8, ATTN_ISA_NEON, ATTN_PEAK_FP32_FMA, ATTN_ISA_NEON);

  // Every key the rule returns for a present unit has a probe in some build: x86 or arm.
  const attn_peak_key k = unit_for(&lp_avx512, ATTN_COMPUTE_BF16, kZen4);
#if defined(__x86_64__) || defined(__i386__)
  EXPECT(attn_peak_probe_find(k.unit, k.isa) != NULL, "the bf16 key has a probe here");
#else
  (void)k;
#endif
  // An out-of-range mode is judged as F32 (validation refuses it before any run).
  EXPECT_UNIT(&lp_avx512, (attn_compute)ATTN_COMPUTE_COUNT, kZen4, ATTN_PEAK_FP32_FMA,
              ATTN_ISA_AVX512F);
  return test_finish("test_peak_unit_for");
}
