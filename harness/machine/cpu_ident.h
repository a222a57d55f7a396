// SPDX-License-Identifier: MIT
// cpu_ident.h — which CPU this is, for comparing results across machines: vendor,
// family, model, stepping and the microarchitecture they imply.
//
// x86: cpuid leaf 0 (vendor) and leaf 1 (family/model/stepping with the extended fields
// folded in as the vendors' manuals define them: family = base + extended when base is
// 0xF; model = base + (extended << 4) when the family is 6 or >= 0xF), the hypervisor bit
// (leaf 1 ECX bit 31) and AMX-TILE (leaf 7 EDX bit 24). aarch64: /proc/cpuinfo's "CPU
// implementer" (vendor), "CPU architecture" (family), "CPU part" (model), "CPU variant"
// and "CPU revision" (stepping).
//
// Under a hypervisor the brand string may be generic ("AMD EPYC", "Intel(R) Xeon(R)
// Processor") and the model may not be the host's: a VM on a Sapphire Rapids host has
// been seen reporting family 6 model 167 (Rocket Lake, a client core without AMX). So
// an Intel CPU whose model names a core without AMX but which has AMX is reported as
// "Sapphire Rapids or later (AMX)", with a note saying what the model number claimed.
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct attn_cpu_ident {
  char vendor[32];  // "AuthenticAMD", "GenuineIntel", "HygonGenuine"; aarch64 "ARM", "Apple", ...
  int family;       // -1 unknown (aarch64: the architecture, e.g. 8)
  int model;        // -1 unknown (aarch64: the part number, e.g. 0xd0c)
  int stepping;     // -1 unknown (aarch64: the revision)
  int variant;      // aarch64 "CPU variant"; -1 elsewhere
  bool hypervisor;  // x86: running under a hypervisor (cpuid says so)
  bool amx;         // x86: AMX-TILE
  char uarch[64];   // "Zen 4", "Sapphire Rapids", "Neoverse N1", ... or "unknown"
  char note[192];   // why uarch differs from what the model number alone implies ("" if not)
} attn_cpu_ident;

// This CPU (computed once; never fails: unknown fields are -1 / "unknown").
const attn_cpu_ident *attn_cpu_ident_get(void);

// The microarchitecture a (vendor, family, model, stepping) implies, from a small table
// (AMD Zen 1–5, Intel server cores Sandy Bridge-EP … Granite Rapids and the client cores
// since Haswell, Arm Neoverse/Cortex parts, ...); "unknown" otherwise.
const char *attn_cpu_uarch(const char *vendor, int family, int model, int stepping);

// The ATTN_ISA_* bits (attn.h) every part of microarchitecture `uarch` has natively, for
// the cores whose low-precision units are known (Intel server cores Cascade Lake …
// Diamond Rapids, Alder/Raptor Lake, AMD Zen 4 and Zen 5); 0 for any other name. Under a
// hypervisor the CPU may offer fewer (cpuid masks them): `info` names those.
uint32_t attn_cpu_uarch_isa(const char *uarch);

// This CPU's units that its core has (attn_cpu_uarch_isa) but a hypervisor's cpuid does
// not offer: 0 when not under a hypervisor, under ATTNBENCH_ISA_MASK (the mask, not the
// hypervisor, narrows the set), and without AMX when the OS withholds its tile data
// (attn_cpu_features_note says so instead).
uint32_t attn_cpu_units_not_exposed(void);

// Sets uarch (and note) from the other fields: the table, then the AMX rule above.
void attn_cpu_ident_classify(attn_cpu_ident *id);

// x86 cpuid leaf 1 EAX -> displayed family, model, stepping.
void attn_cpu_decode_leaf1(unsigned eax, int *family, int *model, int *stepping);

// Fills vendor/family/model/stepping/variant from /proc/cpuinfo text (the aarch64
// fields above; the first CPU's). Returns false if it has no "CPU implementer".
bool attn_cpu_ident_parse_cpuinfo(FILE *f, attn_cpu_ident *id);

// "GenuineIntel family 6 model 143 stepping 8" (aarch64: "ARM arch 8 part 0xd0c r3p1").
void attn_cpu_ident_format(const attn_cpu_ident *id, char *buf, size_t len);

#ifdef __cplusplus
}
#endif
