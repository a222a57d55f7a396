// SPDX-License-Identifier: MIT
// CPU identification (harness/cpu_ident.h): the cpuid leaf-1 arithmetic on known
// signatures, the microarchitecture table, the aarch64 /proc/cpuinfo reader on synthetic
// text, and — on x86 Linux — that this CPU's cpuid agrees with the kernel's /proc/cpuinfo;
// the kernel library's vendor and model tests (attn_cpu_vendor_amd, attn_cpu_intel_model,
// behind built-in defaults of the flash kernels' decode) agree with cpuid's identification.
#define _POSIX_C_SOURCE 200809L  // fmemopen
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/attn_internal.h"
#include "machine/cpu_ident.h"

static int failures;
#define EXPECT(c)                                                            \
  do {                                                                       \
    if (!(c)) {                                                              \
      fprintf(stderr, "%s:%d: EXPECT(%s) failed\n", __FILE__, __LINE__, #c); \
      failures++;                                                            \
    }                                                                        \
  } while (0)

static void expect_uarch(const char *vendor, int family, int model, int stepping,
                         const char *want) {
  const char *got = attn_cpu_uarch(vendor, family, model, stepping);
  if (strcmp(got, want) != 0) {
    fprintf(stderr, "%s family %#x model %#x stepping %d: got '%s', want '%s'\n", vendor, family,
            model, stepping, got, want);
    failures++;
  }
}

static void test_leaf1(void) {
  int f, m, s;
  attn_cpu_decode_leaf1(0x00a10f11u, &f, &m, &s);  // EPYC 9004 (Genoa)
  EXPECT(f == 0x19 && m == 0x11 && s == 1);
  attn_cpu_decode_leaf1(0x00830f10u, &f, &m, &s);  // EPYC 7002 (Rome)
  EXPECT(f == 0x17 && m == 0x31 && s == 0);
  attn_cpu_decode_leaf1(0x000806f8u, &f, &m, &s);  // Xeon 4th gen (Sapphire Rapids)
  EXPECT(f == 6 && m == 0x8f && s == 8);
  attn_cpu_decode_leaf1(0x00050657u, &f, &m, &s);  // Cascade Lake-SP
  EXPECT(f == 6 && m == 0x55 && s == 7);
  attn_cpu_decode_leaf1(0x00000f41u, &f, &m, &s);  // Pentium 4: family 0xF, no extension
  EXPECT(f == 0xf && m == 4 && s == 1);
  attn_cpu_decode_leaf1(0x000306c3u, &f, &m, &s);  // Haswell
  EXPECT(f == 6 && m == 0x3c && s == 3);
  attn_cpu_decode_leaf1(0x00010543u, &f, &m, &s);  // family 5: the extended model is not added
  EXPECT(f == 5 && m == 4 && s == 3);
}

static void test_table(void) {
  expect_uarch("AuthenticAMD", 0x17, 0x01, 2, "Zen");
  expect_uarch("AuthenticAMD", 0x17, 0x08, 2, "Zen+");
  expect_uarch("AuthenticAMD", 0x17, 0x31, 0, "Zen 2");
  expect_uarch("AuthenticAMD", 0x17, 0x71, 0, "Zen 2");
  expect_uarch("AuthenticAMD", 0x19, 0x01, 1, "Zen 3");
  expect_uarch("AuthenticAMD", 0x19, 0x21, 0, "Zen 3");
  expect_uarch("AuthenticAMD", 0x19, 0x44, 1, "Zen 3+");
  expect_uarch("AuthenticAMD", 0x19, 0x11, 1, "Zen 4");
  expect_uarch("AuthenticAMD", 0x19, 0x61, 2, "Zen 4");
  expect_uarch("AuthenticAMD", 0x19, 0xa0, 1, "Zen 4");
  expect_uarch("AuthenticAMD", 0x1a, 0x02, 1, "Zen 5");
  expect_uarch("AuthenticAMD", 0x10, 0x02, 1, "unknown");
  expect_uarch("GenuineIntel", 6, 0x55, 4, "Skylake-SP");
  expect_uarch("GenuineIntel", 6, 0x55, 7, "Cascade Lake-SP");
  expect_uarch("GenuineIntel", 6, 0x55, 11, "Cooper Lake");
  expect_uarch("GenuineIntel", 6, 0x6a, 6, "Ice Lake-SP");
  expect_uarch("GenuineIntel", 6, 143, 8, "Sapphire Rapids");
  expect_uarch("GenuineIntel", 6, 207, 2, "Emerald Rapids");
  expect_uarch("GenuineIntel", 6, 0xad, 1, "Granite Rapids");
  expect_uarch("GenuineIntel", 6, 167, 1, "Rocket Lake");
  expect_uarch("GenuineIntel", 6, 0x4f, 1, "Broadwell-EP");
  expect_uarch("GenuineIntel", 6, 0x01, 1, "unknown");
  expect_uarch("GenuineIntel", 0x19, 0x11, 1, "unknown");  // an Intel family is not AMD's
  expect_uarch("AuthenticAMD", 6, 143, 8, "unknown");      // nor the other way round
  expect_uarch("ARM", 8, 0xd0c, 1, "Neoverse N1");
  expect_uarch("ARM", 8, 0xd40, 1, "Neoverse V1");
  expect_uarch("ARM", 8, 0xd4f, 0, "Neoverse V2");
  expect_uarch("unknown", -1, -1, -1, "unknown");
  expect_uarch(NULL, 6, 143, 8, "unknown");
}

static void test_cpuinfo_parse(void) {
  static const char text[] =
      "processor\t: 0\nBogoMIPS\t: 50.00\nFeatures\t: fp asimd evtstrm aes pmull\n"
      "CPU implementer\t: 0x41\nCPU architecture: 8\nCPU variant\t: 0x3\nCPU part\t: 0xd0c\n"
      "CPU revision\t: 1\n\nprocessor\t: 1\nCPU implementer\t: 0x51\nCPU part\t: 0x001\n";
  FILE *f = fmemopen((void *)text, sizeof text - 1, "r");
  EXPECT(f != NULL);
  if (!f) return;
  attn_cpu_ident id;
  memset(&id, 0, sizeof id);
  EXPECT(attn_cpu_ident_parse_cpuinfo(f, &id));
  fclose(f);
  EXPECT(strcmp(id.vendor, "ARM") == 0);  // the first CPU's block, not the second's
  EXPECT(id.family == 8 && id.model == 0xd0c && id.variant == 3 && id.stepping == 1);
  EXPECT(strcmp(attn_cpu_uarch(id.vendor, id.family, id.model, id.stepping), "Neoverse N1") == 0);
  char buf[96];
  attn_cpu_ident_format(&id, buf, sizeof buf);
  EXPECT(strcmp(buf, "ARM arch 8 part 0xd0c r3p1") == 0);
  static const char x86[] = "processor\t: 0\nvendor_id\t: GenuineIntel\ncpu family\t: 6\n";
  f = fmemopen((void *)x86, sizeof x86 - 1, "r");
  EXPECT(f && !attn_cpu_ident_parse_cpuinfo(f, &id));  // no CPU implementer: not aarch64
  if (f) fclose(f);
}

// The AMX floor: a VM reporting a client model without AMX on an AMX host.
static void test_classify(void) {
  attn_cpu_ident id = {.vendor = "GenuineIntel",
                       .family = 6,
                       .model = 167,
                       .stepping = 1,
                       .variant = -1,
                       .hypervisor = true,
                       .amx = true};
  attn_cpu_ident_classify(&id);
  EXPECT(strcmp(id.uarch, "Sapphire Rapids or later (AMX)") == 0);
  EXPECT(strstr(id.note, "model 167 is Rocket Lake") != NULL);
  id.model = 143;  // the real thing: no note
  attn_cpu_ident_classify(&id);
  EXPECT(strcmp(id.uarch, "Sapphire Rapids") == 0 && id.note[0] == '\0');
  id.model = 167;
  id.amx = false;  // a real Rocket Lake
  attn_cpu_ident_classify(&id);
  EXPECT(strcmp(id.uarch, "Rocket Lake") == 0 && id.note[0] == '\0');
  attn_cpu_ident amd = {.vendor = "AuthenticAMD",
                        .family = 0x19,
                        .model = 0x11,
                        .stepping = 1,
                        .variant = -1,
                        .hypervisor = true};
  attn_cpu_ident_classify(&amd);
  EXPECT(strcmp(amd.uarch, "Zen 4") == 0 && amd.note[0] == '\0');
  char buf[96];
  attn_cpu_ident_format(&amd, buf, sizeof buf);
  EXPECT(strcmp(buf, "AuthenticAMD family 25 model 17 stepping 1") == 0);
}

// The kernel's /proc/cpuinfo has the same fields, decoded by Linux: they must agree.
static void test_this_cpu(void) {
  const attn_cpu_ident *id = attn_cpu_ident_get();
  EXPECT(id->uarch[0] != '\0');
  EXPECT(attn_cpu_vendor_amd() == (strcmp(id->vendor, "AuthenticAMD") == 0));
  const bool intel6 = strcmp(id->vendor, "GenuineIntel") == 0 && id->family == 6;
  EXPECT(attn_cpu_intel_model((unsigned)id->model) == (intel6 && id->model > 0));
  EXPECT(!attn_cpu_intel_model((unsigned)id->model + 1));
#if defined(__x86_64__) && defined(__linux__)
  FILE *f = fopen("/proc/cpuinfo", "r");
  if (!f) return;
  char line[4096], vendor[32] = "";
  int family = -1, model = -1, stepping = -1;
  while (fgets(line, sizeof line, f) && !(line[0] == '\n' && family >= 0)) {
    const char *v = strchr(line, ':');
    if (!v) continue;
    v++;
    if (strncmp(line, "vendor_id", 9) == 0) sscanf(v, "%31s", vendor);
    if (strncmp(line, "cpu family", 10) == 0) family = atoi(v);
    if (strncmp(line, "model\t", 6) == 0) model = atoi(v);
    if (strncmp(line, "stepping", 8) == 0) stepping = atoi(v);
  }
  fclose(f);
  printf("this CPU: %s family %d model %d stepping %d -> %s\n", id->vendor, id->family, id->model,
         id->stepping, id->uarch);
  EXPECT(strcmp(vendor, id->vendor) == 0);
  EXPECT(family == id->family);
  EXPECT(model == id->model);
  EXPECT(stepping == id->stepping);
#endif
}

// The units each known core has (attn_cpu_uarch_isa): what `info` names as not exposed
// when a hypervisor masks them.
static void test_uarch_units(void) {
  const uint32_t emr = attn_cpu_uarch_isa("Emerald Rapids");
  EXPECT((emr & (ATTN_ISA_AMXBF16 | ATTN_ISA_AVX512BF16 | ATTN_ISA_AVX512FP16)) ==
         (ATTN_ISA_AMXBF16 | ATTN_ISA_AVX512BF16 | ATTN_ISA_AVX512FP16));
  EXPECT(emr == attn_cpu_uarch_isa("Sapphire Rapids"));
  const uint32_t zen4 = attn_cpu_uarch_isa("Zen 4"), zen5 = attn_cpu_uarch_isa("Zen 5");
  EXPECT((zen4 & ATTN_ISA_AVX512BF16) && !(zen4 & ATTN_ISA_AVXVNNI) && !(zen4 & ATTN_ISA_AMXBF16));
  EXPECT(zen5 == (zen4 | ATTN_ISA_AVXVNNI));
  EXPECT(!(attn_cpu_uarch_isa("Cascade Lake-SP") & ATTN_ISA_AVX512BF16));
  EXPECT(!(attn_cpu_uarch_isa("Alder Lake") & ATTN_ISA_AVX512F));
  EXPECT(attn_cpu_uarch_isa("Zen 3") == 0 && attn_cpu_uarch_isa("unknown") == 0);
  EXPECT(attn_cpu_uarch_isa(NULL) == 0);
}

int main(void) {
  test_leaf1();
  test_uarch_units();
  test_table();
  test_cpuinfo_parse();
  test_classify();
  test_this_cpu();
  if (failures) {
    fprintf(stderr, "test_cpu_ident: %d failure(s)\n", failures);
    return 1;
  }
  printf("test_cpu_ident: cpuid decoding, the uarch table and the cpuinfo reader agree\n");
  return 0;
}
