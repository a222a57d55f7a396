// SPDX-License-Identifier: MIT
// CPU identification (cpu_ident.h): cpuid on x86, /proc/cpuinfo on aarch64, and the
// table from (vendor, family, model, stepping) to a microarchitecture name.
#include "machine/cpu_ident.h"

#include <stdlib.h>
#include <string.h>

#include "attn.h"  // ATTN_ISA_*

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

typedef struct model_row {
  int lo, hi;  // model range, inclusive
  const char *name;
} model_row;

static const char *lookup(const model_row *rows, size_t n, int model) {
  for (size_t i = 0; i < n; i++)
    if (model >= rows[i].lo && model <= rows[i].hi) return rows[i].name;
  return NULL;
}
#define LOOKUP(rows, model) lookup(rows, sizeof rows / sizeof rows[0], model)

// AMD family 0x17 (Zen, Zen+, Zen 2), 0x19 (Zen 3, Zen 3+, Zen 4), 0x1A (Zen 5).
static const model_row kAmd17[] = {
    {0x08, 0x08, "Zen+"}, {0x18, 0x18, "Zen+"}, {0x00, 0x2f, "Zen"}, {0x30, 0xff, "Zen 2"}};
static const model_row kAmd19[] = {
    {0x00, 0x0f, "Zen 3"}, {0x10, 0x1f, "Zen 4"}, {0x20, 0x3f, "Zen 3"}, {0x40, 0x4f, "Zen 3+"},
    {0x50, 0x5f, "Zen 3"}, {0x60, 0x7f, "Zen 4"}, {0xa0, 0xaf, "Zen 4"}};

// Intel family 6: server cores, then client cores since Sandy Bridge.
static const model_row kIntel6[] = {
    {0x2d, 0x2d, "Sandy Bridge-EP"},
    {0x3e, 0x3e, "Ivy Bridge-EP"},
    {0x3f, 0x3f, "Haswell-EP"},
    {0x4f, 0x4f, "Broadwell-EP"},
    {0x56, 0x56, "Broadwell-DE"},
    {0x55, 0x55, "Skylake-SP"},  // refined by stepping below
    {0x6a, 0x6a, "Ice Lake-SP"},
    {0x6c, 0x6c, "Ice Lake-D"},
    {0x8f, 0x8f, "Sapphire Rapids"},
    {0xcf, 0xcf, "Emerald Rapids"},
    {0xad, 0xad, "Granite Rapids"},
    {0xae, 0xae, "Granite Rapids-D"},
    {0xaf, 0xaf, "Sierra Forest"},
    {0xb6, 0xb6, "Grand Ridge"},
    {0xdd, 0xdd, "Clearwater Forest"},
    {0x57, 0x57, "Knights Landing"},
    {0x85, 0x85, "Knights Mill"},
    {0x2a, 0x2a, "Sandy Bridge"},
    {0x3a, 0x3a, "Ivy Bridge"},
    {0x3c, 0x3c, "Haswell"},
    {0x45, 0x46, "Haswell"},
    {0x3d, 0x3d, "Broadwell"},
    {0x47, 0x47, "Broadwell"},
    {0x4e, 0x4e, "Skylake"},
    {0x5e, 0x5e, "Skylake"},
    {0x8e, 0x8e, "Kaby Lake / Coffee Lake"},
    {0x9e, 0x9e, "Kaby Lake / Coffee Lake"},
    {0xa5, 0xa6, "Comet Lake"},
    {0x66, 0x66, "Cannon Lake"},
    {0x7d, 0x7e, "Ice Lake"},
    {0x8c, 0x8d, "Tiger Lake"},
    {0xa7, 0xa7, "Rocket Lake"},
    {0x97, 0x97, "Alder Lake"},
    {0x9a, 0x9a, "Alder Lake"},
    {0xb7, 0xb7, "Raptor Lake"},
    {0xba, 0xba, "Raptor Lake"},
    {0xbf, 0xbf, "Raptor Lake"},
    {0xaa, 0xac, "Meteor Lake"},
    {0xbd, 0xbd, "Lunar Lake"},
    {0xc5, 0xc6, "Arrow Lake"},
    {0x5c, 0x5c, "Goldmont"},
    {0x5f, 0x5f, "Goldmont"},
    {0x7a, 0x7a, "Goldmont Plus"},
    {0x86, 0x86, "Tremont"},
    {0x96, 0x96, "Tremont"},
    {0x9c, 0x9c, "Tremont"},
};

// Arm Ltd parts (implementer 0x41).
static const model_row kArm[] = {
    {0xd03, 0xd03, "Cortex-A53"},  {0xd04, 0xd04, "Cortex-A35"},  {0xd05, 0xd05, "Cortex-A55"},
    {0xd07, 0xd07, "Cortex-A57"},  {0xd08, 0xd08, "Cortex-A72"},  {0xd09, 0xd09, "Cortex-A73"},
    {0xd0a, 0xd0a, "Cortex-A75"},  {0xd0b, 0xd0b, "Cortex-A76"},  {0xd0c, 0xd0c, "Neoverse N1"},
    {0xd0d, 0xd0d, "Cortex-A77"},  {0xd40, 0xd40, "Neoverse V1"}, {0xd41, 0xd41, "Cortex-A78"},
    {0xd44, 0xd44, "Cortex-X1"},   {0xd46, 0xd46, "Cortex-A510"}, {0xd47, 0xd47, "Cortex-A710"},
    {0xd48, 0xd48, "Cortex-X2"},   {0xd49, 0xd49, "Neoverse N2"}, {0xd4a, 0xd4a, "Neoverse E1"},
    {0xd4f, 0xd4f, "Neoverse V2"}, {0xd80, 0xd80, "Cortex-A520"}, {0xd81, 0xd81, "Cortex-A720"},
    {0xd82, 0xd82, "Cortex-X4"},   {0xd84, 0xd84, "Neoverse V3"}, {0xd8e, 0xd8e, "Neoverse N3"},
};

// aarch64 implementer codes -> vendor names.
static const model_row kImplementers[] = {
    {0x41, 0x41, "ARM"},     {0x42, 0x42, "Broadcom"},  {0x43, 0x43, "Cavium"},
    {0x46, 0x46, "Fujitsu"}, {0x48, 0x48, "HiSilicon"}, {0x4e, 0x4e, "NVIDIA"},
    {0x50, 0x50, "APM"},     {0x51, 0x51, "Qualcomm"},  {0x61, 0x61, "Apple"},
    {0xc0, 0xc0, "Ampere"},
};

const char *attn_cpu_uarch(const char *vendor, int family, int model, int stepping) {
  const char *r = NULL;
  if (!vendor || family < 0 || model < 0) return "unknown";
  if (strcmp(vendor, "AuthenticAMD") == 0) {
    if (family == 0x17)
      r = LOOKUP(kAmd17, model);
    else if (family == 0x19)
      r = LOOKUP(kAmd19, model);
    else if (family == 0x1a)
      r = "Zen 5";
    else if (family == 0x15)
      r = "Bulldozer family";
  } else if (strcmp(vendor, "HygonGenuine") == 0) {
    if (family == 0x18) r = "Zen (Hygon Dhyana)";
  } else if (strcmp(vendor, "GenuineIntel") == 0) {
    if (family == 6) {
      r = LOOKUP(kIntel6, model);
      // model 0x55 is three server generations, told apart by the stepping
      if (model == 0x55 && stepping >= 10)
        r = "Cooper Lake";
      else if (model == 0x55 && stepping >= 5)
        r = "Cascade Lake-SP";
    } else if (family == 0x13 && model == 0x01) {
      r = "Diamond Rapids";
    }
  } else if (strcmp(vendor, "ARM") == 0) {
    r = LOOKUP(kArm, model);
  } else if (strcmp(vendor, "Ampere") == 0) {
    if (model == 0xac3 || model == 0xac4) r = "AmpereOne";
  } else if (strcmp(vendor, "Fujitsu") == 0) {
    if (model == 0x001) r = "A64FX";
  } else if (strcmp(vendor, "HiSilicon") == 0) {
    if (model == 0xd01) r = "TaiShan v110";
  } else if (strcmp(vendor, "Apple") == 0) {
    r = "Apple silicon";
  }
  return r ? r : "unknown";
}

void attn_cpu_decode_leaf1(unsigned eax, int *family, int *model, int *stepping) {
  const int base_family = (int)((eax >> 8) & 0xf), ext_family = (int)((eax >> 20) & 0xff);
  const int base_model = (int)((eax >> 4) & 0xf), ext_model = (int)((eax >> 16) & 0xf);
  *family = base_family == 0xf ? base_family + ext_family : base_family;
  *model = base_family == 6 || base_family == 0xf ? base_model + (ext_model << 4) : base_model;
  *stepping = (int)(eax & 0xf);
}

// "0x41" / "65" / "0xd0c" -> number; -1 if not a number.
static int parse_num(const char *s) {
  char *end = NULL;
  const long v = strtol(s, &end, 0);
  return end != s && v >= 0 && v <= 0xfffff ? (int)v : -1;
}

bool attn_cpu_ident_parse_cpuinfo(FILE *f, attn_cpu_ident *id) {
  char line[512];
  int impl = -1, arch = -1, part = -1, var = -1, rev = -1;
  while (fgets(line, sizeof line, f)) {
    char *colon = strchr(line, ':');
    if (!colon) {
      if (impl >= 0 && line[0] == '\n') break;  // end of the first CPU's block
      continue;
    }
    const char *val = colon + 1;
    while (*val == ' ' || *val == '\t') val++;
    int *dst = NULL;
    if (strncmp(line, "CPU implementer", 15) == 0)
      dst = &impl;
    else if (strncmp(line, "CPU architecture", 16) == 0)
      dst = &arch;
    else if (strncmp(line, "CPU variant", 11) == 0)
      dst = &var;
    else if (strncmp(line, "CPU part", 8) == 0)
      dst = &part;
    else if (strncmp(line, "CPU revision", 12) == 0)
      dst = &rev;
    if (dst && *dst < 0) *dst = parse_num(val);
  }
  if (impl < 0) return false;
  const char *vendor = LOOKUP(kImplementers, impl);
  if (vendor)
    snprintf(id->vendor, sizeof id->vendor, "%s", vendor);
  else
    snprintf(id->vendor, sizeof id->vendor, "implementer 0x%02x", impl);
  id->family = arch;
  id->model = part;
  id->stepping = rev;
  id->variant = var;
  return true;
}

void attn_cpu_ident_format(const attn_cpu_ident *id, char *buf, size_t len) {
  if (id->variant >= 0)  // aarch64
    snprintf(buf, len, "%s arch %d part 0x%03x r%dp%d", id->vendor, id->family, id->model,
             id->variant, id->stepping);
  else
    snprintf(buf, len, "%s family %d model %d stepping %d", id->vendor, id->family, id->model,
             id->stepping);
}

uint32_t attn_cpu_uarch_isa(const char *uarch) {
  enum {
    kAvx512 = ATTN_ISA_AVX2 | ATTN_ISA_F16C | ATTN_ISA_AVX512F,
    kAmxCore = kAvx512 | ATTN_ISA_AVX512VNNI | ATTN_ISA_AVX512BF16 | ATTN_ISA_AVX512FP16 |
               ATTN_ISA_AVXVNNI | ATTN_ISA_AMXBF16,
  };
  static const struct {
    const char *name;
    uint32_t isa;
  } kUnits[] = {
      {"Cascade Lake-SP", kAvx512 | ATTN_ISA_AVX512VNNI},
      {"Cooper Lake", kAvx512 | ATTN_ISA_AVX512VNNI | ATTN_ISA_AVX512BF16},
      {"Ice Lake-SP", kAvx512 | ATTN_ISA_AVX512VNNI},
      {"Ice Lake-D", kAvx512 | ATTN_ISA_AVX512VNNI},
      {"Sapphire Rapids", kAmxCore},
      {"Emerald Rapids", kAmxCore},
      {"Granite Rapids", kAmxCore},
      {"Granite Rapids-D", kAmxCore},
      {"Diamond Rapids", kAmxCore},
      {"Alder Lake", ATTN_ISA_AVX2 | ATTN_ISA_F16C | ATTN_ISA_AVXVNNI},
      {"Raptor Lake", ATTN_ISA_AVX2 | ATTN_ISA_F16C | ATTN_ISA_AVXVNNI},
      {"Zen 4", kAvx512 | ATTN_ISA_AVX512VNNI | ATTN_ISA_AVX512BF16},
      {"Zen 5", kAvx512 | ATTN_ISA_AVX512VNNI | ATTN_ISA_AVX512BF16 | ATTN_ISA_AVXVNNI},
  };
  for (size_t i = 0; uarch && i < sizeof kUnits / sizeof kUnits[0]; i++)
    if (strcmp(uarch, kUnits[i].name) == 0) return kUnits[i].isa;
  return 0;
}

uint32_t attn_cpu_units_not_exposed(void) {
  const attn_cpu_ident *id = attn_cpu_ident_get();
  const char *mask = getenv("ATTNBENCH_ISA_MASK");
  if (!id->hypervisor || (mask && *mask)) return 0;
  uint32_t hidden = attn_cpu_uarch_isa(id->uarch) & ~attn_cpu_features();
  if (strncmp(attn_cpu_features_note(), "amx-bf16", 8) == 0) hidden &= ~(uint32_t)ATTN_ISA_AMXBF16;
  return hidden;
}

static bool has_amx(const char *uarch) {
  return (attn_cpu_uarch_isa(uarch) & ATTN_ISA_AMXBF16) != 0;
}

static void identify(attn_cpu_ident *id) {
  memset(id, 0, sizeof *id);
  snprintf(id->vendor, sizeof id->vendor, "unknown");
  id->family = id->model = id->stepping = id->variant = -1;
#if defined(__x86_64__) || defined(__i386__)
  unsigned a, b, c, d;
  if (__get_cpuid(0, &a, &b, &c, &d)) {
    const unsigned max_leaf = a;
    char v[13];
    memcpy(v, &b, 4);
    memcpy(v + 4, &d, 4);
    memcpy(v + 8, &c, 4);
    v[12] = '\0';
    snprintf(id->vendor, sizeof id->vendor, "%s", v);
    if (max_leaf >= 1 && __get_cpuid(1, &a, &b, &c, &d)) {
      attn_cpu_decode_leaf1(a, &id->family, &id->model, &id->stepping);
      id->hypervisor = (c >> 31) & 1u;
    }
    if (max_leaf >= 7) {
      __cpuid_count(7, 0, a, b, c, d);
      id->amx = (d >> 24) & 1u;
    }
  }
#else
  FILE *f = fopen("/proc/cpuinfo", "r");
  if (f) {
    (void)attn_cpu_ident_parse_cpuinfo(f, id);
    fclose(f);
  }
#endif
  attn_cpu_ident_classify(id);
}

void attn_cpu_ident_classify(attn_cpu_ident *id) {
  id->note[0] = '\0';
  snprintf(id->uarch, sizeof id->uarch, "%s",
           attn_cpu_uarch(id->vendor, id->family, id->model, id->stepping));
  // A hypervisor may report another model than the host's; AMX is a floor.
  if (id->amx && strcmp(id->vendor, "GenuineIntel") == 0 && !has_amx(id->uarch)) {
    snprintf(id->note, sizeof id->note,
             "cpuid model %d is %s, which has no AMX, but this CPU has AMX-TILE%s: reported "
             "as Sapphire Rapids or later",
             id->model, id->uarch, id->hypervisor ? " (under a hypervisor)" : "");
    snprintf(id->uarch, sizeof id->uarch, "Sapphire Rapids or later (AMX)");
  }
}

const attn_cpu_ident *attn_cpu_ident_get(void) {
  static attn_cpu_ident id;
  static bool done;
  if (!done) {
    identify(&id);
    done = true;
  }
  return &id;
}
