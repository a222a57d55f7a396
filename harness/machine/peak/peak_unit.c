// SPDX-License-Identifier: MIT
// Which unit's peak a benchmark point is judged by (peak.h, attn_peak_unit_for): the one
// place that maps a kernel and its problem's compute mode to a compute unit.
#include "peak.h"

// The FP32 FMA ISA of a kernel: its best required bit, or for kernels that require none
// (portable C; OpenBLAS dispatches at run time) the CPU's best. AVX-512F over AVX2; NEON
// stands alone.
static uint32_t fp32_isa(const attn_kernel *k, uint32_t cpu_isa) {
  const uint32_t isa = k->required_isa ? k->required_isa : cpu_isa;
  if (isa & ATTN_ISA_AVX512F) return ATTN_ISA_AVX512F;
  if (isa & ATTN_ISA_AVX2) return ATTN_ISA_AVX2;
  return isa & ATTN_ISA_NEON;
}

static bool has(uint32_t cpu_isa, uint32_t bit) {
  return (cpu_isa & bit) == bit;
}

// The unit of a kernel that runs `mode` natively, or FP32 FMA (unit 0) when it has none.
static attn_peak_key native_unit(const attn_kernel *k, attn_compute mode, uint32_t base,
                                 uint32_t cpu_isa) {
  const attn_peak_key fp32 = {ATTN_PEAK_FP32_FMA, base};
  const uint32_t req = k->required_isa;
  switch (mode) {
    case ATTN_COMPUTE_BF16:
      if ((req & ATTN_ISA_AMXBF16) && has(cpu_isa, ATTN_ISA_AMXBF16))
        return (attn_peak_key){ATTN_PEAK_AMX_BF16, ATTN_ISA_AMXBF16};
      if (base == ATTN_ISA_AVX512F && has(cpu_isa, ATTN_ISA_AVX512BF16))
        return (attn_peak_key){ATTN_PEAK_BF16_DOT, ATTN_ISA_AVX512BF16};
      if (base == ATTN_ISA_NEON && has(cpu_isa, ATTN_ISA_NEON_BF16))
        return (attn_peak_key){ATTN_PEAK_BF16_DOT, ATTN_ISA_NEON_BF16};
      return fp32;
    case ATTN_COMPUTE_F16:  // only a kernel built on the FP16 unit uses it
      if ((req & ATTN_ISA_AVX512FP16) && has(cpu_isa, ATTN_ISA_AVX512FP16))
        return (attn_peak_key){ATTN_PEAK_FP16_FMA, ATTN_ISA_AVX512FP16};
      if ((req & ATTN_ISA_NEON_FHM) && has(cpu_isa, ATTN_ISA_NEON_FHM))
        return (attn_peak_key){ATTN_PEAK_FP16_FMA, ATTN_ISA_NEON_FHM};
      return fp32;
    case ATTN_COMPUTE_INT8:
      if (base == ATTN_ISA_AVX512F && has(cpu_isa, ATTN_ISA_AVX512VNNI))
        return (attn_peak_key){ATTN_PEAK_INT8_DOT, ATTN_ISA_AVX512VNNI};
      if (base == ATTN_ISA_AVX2) {  // VEX vpdpbusd where required (or, for a kernel that
                                    // requires no ISA, present); else vpmaddubsw's
        if ((req & ATTN_ISA_AVXVNNI) || (!req && has(cpu_isa, ATTN_ISA_AVXVNNI)))
          return has(cpu_isa, ATTN_ISA_AVXVNNI)
                     ? (attn_peak_key){ATTN_PEAK_INT8_DOT, ATTN_ISA_AVXVNNI}
                     : fp32;
        return (attn_peak_key){ATTN_PEAK_INT8_DOT, ATTN_ISA_AVX2};
      }
      if (base == ATTN_ISA_NEON && has(cpu_isa, ATTN_ISA_NEON_DOTPROD))
        return (attn_peak_key){ATTN_PEAK_INT8_DOT, ATTN_ISA_NEON_DOTPROD};
      return fp32;
    default:
      return fp32;
  }
}

attn_peak_key attn_peak_unit_for(const attn_kernel *k, const attn_problem *p, uint32_t cpu_isa) {
  const uint32_t base = fp32_isa(k, cpu_isa);
  const attn_compute mode = p ? p->compute : ATTN_COMPUTE_F32;
  static const uint32_t kCap[ATTN_COMPUTE_COUNT] = {0, ATTN_CAP_COMPUTE_BF16, ATTN_CAP_COMPUTE_F16,
                                                    ATTN_CAP_COMPUTE_INT8};
  // F32, an unknown mode, or a mode the kernel lacks (it runs in F32 on rounded copies).
  if ((unsigned)mode >= ATTN_COMPUTE_COUNT || mode == ATTN_COMPUTE_F32 || !(k->caps & kCap[mode]))
    return (attn_peak_key){ATTN_PEAK_FP32_FMA, base};
  return native_unit(k, mode, base, cpu_isa);
}
