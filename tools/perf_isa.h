// SPDX-License-Identifier: MIT
// perf_isa.h — which ISA sections a perf tool (microkernel_speed, stream_speed) runs.
#pragma once

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "attn.h"

// True if the section `name` (CPU feature bit isa) runs: --isa chose it or nothing, and
// the CPU has it (otherwise says so and returns false).
static inline int perf_isa_selected(const char *only, const char *name, uint32_t isa) {
  if (only && strcmp(only, name)) return 0;
  if (!(attn_cpu_features() & isa)) {
    printf("%s: not on this CPU, skipped\n", name);
    return 0;
  }
  return 1;
}
