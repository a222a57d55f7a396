// SPDX-License-Identifier: MIT
// ss_speed.h — the per-ISA loops of stream_speed (ss_speed_body.h).
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "attn.h"

// How stream() reads a K block and a V block (rows of row_bytes bytes):
//   SS_LINEAR   each block front to back, one line after the other
//   SS_HALFROWS V as flash decode's P·V reads it: the first half of every row, then the
//               second half (two passes); K front to back
//   SS_KROWS    K as the Q·Kᵀ groups read it: krows rows at a time, a line of each in
//               turn (d order); V front to back
typedef enum ss_pattern { SS_LINEAR, SS_HALFROWS, SS_KROWS } ss_pattern;

typedef struct ss_stream_args {
  const char *k, *v;  // two arrays of `bytes` bytes each
  size_t bytes, block, row_bytes;
  ss_pattern pattern;
  int krows;     // SS_KROWS: rows read interleaved
  int fma_line;  // vector FMAs per 64-byte line read (independent chains; 0: reads only)
  int prefetch;  // software prefetch of the block ahead into L2, one line per line read
} ss_stream_args;

typedef struct ss_speed_ops {
  int vec_width;
  // reps passes over n vectors of K of type t (in L1), each widened vector used by 4
  // query vectors in independent FMAs (flash decode's G = 4 Q·Kᵀ groups). Returns a
  // checksum; NAN if the CPU lacks what type t needs.
  double (*widen)(attn_dtype t, const void *k, int64_t n, int64_t reps);
  // One pass over K and V in blocks, as args says. Returns a checksum.
  double (*stream)(const ss_stream_args *args);
} ss_speed_ops;

#if defined(__x86_64__) || defined(__i386__)
extern const ss_speed_ops ss_speed_avx2, ss_speed_avx512;
#endif
