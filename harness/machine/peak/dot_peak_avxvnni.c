// SPDX-License-Identifier: MIT
// The AVX-VNNI INT8 dot-product throughput loop (peak.h): the VNNI body
// (dot_peak_vnni_body.h) on the VEX-encoded vpdpbusd ymm (the form of AVX2-class cores
// without AVX-512). Compiled with AVX2 + AVX-VNNI only, so the compiler cannot pick the
// EVEX form; the {vex} prefix (%{vex%} in an asm template) says so to the assembler too.
#include <immintrin.h>

#define VNNI_T __m256i
#define VNNI_INSN "%{vex%} vpdpbusd"
#define VNNI_LOOP attn_peak_loop__avxvnni
#include "dot_peak_vnni_body.h"
