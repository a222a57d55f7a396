// SPDX-License-Identifier: MIT
// Run-time CPU feature detection. The binary is compiled for baseline x86-64 (or
// aarch64); only the per-ISA kernel files use wider instructions, and the registry
// offers them only when this says the CPU and OS support them.
#define _DEFAULT_SOURCE  // syscall() for the AMX permission request (glibc)
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attn.h"
#include "core/attn_internal.h"

// Why a unit the CPU has is not offered (e.g. the OS refused AMX tile state); "" if none.
static char g_note[192];

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#if defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#endif

static uint64_t read_xcr0(void) {
  uint32_t lo, hi;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return ((uint64_t)hi << 32) | lo;
}

// AMX-BF16: cpuid leaf 7 EDX bit 22 (AMX-BF16) and bit 24 (AMX-TILE); on Linux the
// per-process permission for the 8 KiB XTILEDATA state, requested with
// arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA = 18) and confirmed with
// ARCH_GET_XCOMP_PERM (without it the first tile instruction faults); then XCR0 bits 17
// (XTILECFG) and 18 (XTILEDATA), read after the request: the OS saves tile state. A CPU
// without the cpuid bits simply has no AMX (no note); any later failure leaves the unit
// out and g_note says why.
static bool amx_usable(uint32_t edx7) {
  const bool amx_bf16 = edx7 & (1u << 22), amx_tile = edx7 & (1u << 24);
  if (!amx_bf16 || !amx_tile) return false;
#if defined(__linux__) && defined(SYS_arch_prctl)
  enum { kGetXcompPerm = 0x1022, kReqXcompPerm = 0x1023, kXfeatureXtiledata = 18 };
  if (syscall(SYS_arch_prctl, kReqXcompPerm, kXfeatureXtiledata) != 0) {
    snprintf(g_note, sizeof g_note,
             "amx-bf16: the kernel refused tile data (arch_prctl(ARCH_REQ_XCOMP_PERM): %s)",
             strerror(errno));
    return false;
  }
  unsigned long long granted = 0;
  if (syscall(SYS_arch_prctl, kGetXcompPerm, &granted) != 0 ||
      !(granted & (1ull << kXfeatureXtiledata))) {
    snprintf(g_note, sizeof g_note,
             "amx-bf16: tile data not among the granted features (ARCH_GET_XCOMP_PERM)");
    return false;
  }
#else
  snprintf(g_note, sizeof g_note, "amx-bf16: no way to request tile data on this OS");
  return false;
#endif
  if ((read_xcr0() & 0x60000) != 0x60000) {
    snprintf(g_note, sizeof g_note, "amx-bf16: the OS does not enable tile state (XCR0)");
    return false;
  }
  return true;
}

static uint32_t detect(void) {
  unsigned a, b, c, d;
  uint32_t isa = 0;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return 0;
  const bool fma = c & (1u << 12), osxsave = c & (1u << 27), avx = c & (1u << 28);
  const unsigned c1 = c;  // leaf 1 ECX (F16C: bit 29)
  if (!osxsave || !avx) return 0;
  const uint64_t xcr0 = read_xcr0();
  const bool ymm_os = (xcr0 & 0x6) == 0x6;    // SSE + AVX state
  const bool zmm_os = (xcr0 & 0xe6) == 0xe6;  // + opmask, ZMM_Hi256, Hi16_ZMM
  if (__get_cpuid_max(0, NULL) < 7) return 0;
  __cpuid_count(7, 0, a, b, c, d);
  const bool avx2 = b & (1u << 5), avx512f = b & (1u << 16), avx512dq = b & (1u << 17);
  const bool avx512bw = b & (1u << 30), avx512vl = b & (1u << 31);
  const bool avx512fp16 = d & (1u << 23), avx512vnni = c & (1u << 11);
  const uint32_t edx7 = d;
  const bool f16c = ymm_os && (c1 & (1u << 29));
  unsigned a1 = 0, b1 = 0, c1b = 0, d1 = 0;
  if (a >= 1) __cpuid_count(7, 1, a1, b1, c1b, d1);  // a = max subleaf of leaf 7
  (void)b1, (void)c1b, (void)d1;
  const bool avx512bf16 = a1 & (1u << 5), avxvnni = a1 & (1u << 4);
  if (ymm_os && avx2 && fma) isa |= ATTN_ISA_AVX2;
  if (f16c) isa |= ATTN_ISA_F16C;
  if (zmm_os && avx512f && (isa & ATTN_ISA_AVX2)) isa |= ATTN_ISA_AVX512F;
  // The AVX-512 extensions count with F, DQ, BW and VL (their 256/512-bit forms, the
  // 16-bit element moves and the float reductions around them need those; every CPU with
  // one of the extensions has all four).
  const bool avx512_ext = (isa & ATTN_ISA_AVX512F) && avx512dq && avx512bw && avx512vl;
  if (avx512_ext && avx512bf16) isa |= ATTN_ISA_AVX512BF16;
  if (avx512_ext && avx512fp16) isa |= ATTN_ISA_AVX512FP16;
  if (avx512_ext && avx512vnni) isa |= ATTN_ISA_AVX512VNNI;
  if ((isa & ATTN_ISA_AVX2) && avxvnni) isa |= ATTN_ISA_AVXVNNI;
  // AMX tiles take bf16 operands from memory that the AVX-512 code around them converts.
  if ((isa & ATTN_ISA_AVX512BF16) && amx_usable(edx7)) isa |= ATTN_ISA_AMXBF16;
  return isa;
}
#elif defined(__aarch64__) && defined(__linux__)
#include <sys/auxv.h>
// The Linux arm64 hwcap bits (uapi asm/hwcap.h), spelled out for older headers.
enum {
  kHwcapAsimd = 1 << 1,
  kHwcapAsimddp = 1 << 20,   // SDOT/UDOT
  kHwcapAsimdfhm = 1 << 23,  // FMLAL/FMLSL
  kHwcap2Bf16 = 1 << 14,     // BFDOT, BFMMLA, BFCVT
};
static uint32_t detect(void) {
  const unsigned long hw = getauxval(AT_HWCAP), hw2 = getauxval(AT_HWCAP2);
  if (!(hw & kHwcapAsimd)) return 0;
  uint32_t isa = ATTN_ISA_NEON;
  if (hw & kHwcapAsimddp) isa |= ATTN_ISA_NEON_DOTPROD;
  if (hw & kHwcapAsimdfhm) isa |= ATTN_ISA_NEON_FHM;
  if (hw2 & kHwcap2Bf16) isa |= ATTN_ISA_NEON_BF16;
  return isa;
}
#elif defined(__aarch64__)
static uint32_t detect(void) {
  return ATTN_ISA_NEON;  // Advanced SIMD is mandatory on AArch64
}
#else
static uint32_t detect(void) {
  return 0;
}
#endif

// Parses ATTNBENCH_ISA_MASK strictly: unset or empty → *present = false; otherwise the
// whole string must be an unsigned number (strtoull base 0: decimal, 0x hex, 0 octal)
// that fits in 32 bits — no sign, spaces or trailing characters.
static bool parse_mask(bool *present, uint32_t *mask) {
  const char *s = getenv("ATTNBENCH_ISA_MASK");
  *present = s && *s;
  *mask = 0;
  if (!*present) return true;
  if (!isdigit((unsigned char)s[0])) return false;  // rejects '-', '+', spaces
  char *end;
  errno = 0;
  const unsigned long long v = strtoull(s, &end, 0);
  if (errno || *end || v > UINT32_MAX) return false;
  *mask = (uint32_t)v;
  return true;
}

bool attn_isa_mask_check(char *err, size_t err_len) {
  bool present;
  uint32_t mask;
  if (parse_mask(&present, &mask)) return true;
  if (err && err_len)
    snprintf(err, err_len,
             "ATTNBENCH_ISA_MASK=%s: expected an unsigned number of at most 32 bits (decimal "
             "or 0x hex, e.g. 0 or 0x1)",
             getenv("ATTNBENCH_ISA_MASK"));
  return false;
}

uint32_t attn_cpu_features(void) {
  static int cached = -1;  // benign race: every thread computes the same value
  if (cached < 0) {
    uint32_t isa = detect();
    bool present;
    uint32_t mask;
    if (!parse_mask(&present, &mask))
      isa = 0;  // malformed: never enable more than asked
    else if (present)
      isa &= mask;
    cached = (int)isa;
  }
  return (uint32_t)cached;
}

const char *attn_cpu_features_note(void) {
  (void)attn_cpu_features();  // detection fills the note
  return g_note;
}

// The CPU's vendor and, for Intel family 6, its display model, read once (benign race, as
// attn_cpu_features): bit 0 AMD, bits 8.. the Intel model (0 otherwise).
static unsigned cpu_vendor_model(void) {
  static int cached = -1;
  if (cached < 0) {
    unsigned id = 0;
#if defined(__x86_64__) || defined(__i386__)
    unsigned a, b, c, d;
    if (__get_cpuid(0, &a, &b, &c, &d)) {
      char v[13];
      memcpy(v, &b, 4), memcpy(v + 4, &d, 4), memcpy(v + 8, &c, 4);  // EBX, EDX, ECX
      v[12] = '\0';
      if (strcmp(v, "AuthenticAMD") == 0)
        id = 1;
      else if (strcmp(v, "GenuineIntel") == 0 && __get_cpuid(1, &a, &b, &c, &d) &&
               ((a >> 8) & 0xf) == 6)
        id = (((a >> 4) & 0xf) | ((a >> 12) & 0xf0)) << 8;  // model + extended model
    }
#endif
    cached = (int)id;
  }
  return (unsigned)cached;
}

bool attn_cpu_intel_model(unsigned model) {
  const unsigned m = cpu_vendor_model() >> 8;
  return m != 0 && m == model;
}

bool attn_cpu_vendor_amd(void) {
  return cpu_vendor_model() & 1u;
}

const char *attn_isa_names(uint32_t isa, char *buf, size_t buf_len) {
  static const struct {
    uint32_t bit;
    const char *name;
  } names[] = {{ATTN_ISA_AVX2, "avx2"},
               {ATTN_ISA_AVX512F, "avx512f"},
               {ATTN_ISA_NEON, "neon"},
               {ATTN_ISA_F16C, "f16c"},
               {ATTN_ISA_AVX512BF16, "avx512bf16"},
               {ATTN_ISA_AVX512FP16, "avx512fp16"},
               {ATTN_ISA_AVX512VNNI, "avx512vnni"},
               {ATTN_ISA_AVXVNNI, "avxvnni"},
               {ATTN_ISA_AMXBF16, "amx-bf16"},
               {ATTN_ISA_NEON_BF16, "neon-bf16"},
               {ATTN_ISA_NEON_DOTPROD, "neon-dotprod"},
               {ATTN_ISA_NEON_FHM, "neon-fhm"}};
  if (!buf || !buf_len) return "";
  buf[0] = '\0';
  size_t used = 0;
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    if (!(isa & names[i].bit)) continue;
    int n = snprintf(buf + used, buf_len - used, "%s%s", used ? " " : "", names[i].name);
    if (n < 0 || (size_t)n >= buf_len - used) break;
    used += (size_t)n;
  }
  if (!used) snprintf(buf, buf_len, "none");
  return buf;
}
