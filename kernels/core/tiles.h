// SPDX-License-Identifier: MIT
// tiles.h — the one tile rule: cache sizes → tile_q / tile_kv, for every tiled kernel
// (tiled__*, omp__*, flash__*).
//
// Kernels cannot ask hwloc for cache sizes (kernels/ depends on libc, libm and OpenMP
// only), and they read no environment. The harness reads hwloc's per-core L1d and L2
// sizes and ATTNBENCH_TILE_Q / ATTNBENCH_TILE_KV once (harness/placement.h) and fills
// attn_exec.tile_q / tile_kv with attn_tiles_for_caches() where the user did not set them.
// A kernel that gets tile sizes of 0 (a direct API call) resolves them with
// attn_tiles_resolve(), i.e. the rule with l1d = l2 = 0, which means "assume 32 KiB L1d,
// 1 MiB L2" — so the kernel default and the harness default agree on such a machine.
// Kernels round the tiles to their register tiles.
//
// The rule (sizes in bytes: float32 elements, except the packed K and V tiles, whose
// elements take 2 bytes in the BF16 and F16 compute modes; D = head_dim_qk, Dv = head_dim_v):
//   tile_kv: the packed K tile (D × tile_kv) plus the packed V tile (tile_kv × Dv) take
//            at most a quarter of L2, and one P·V column panel (tile_kv × 64 elements)
//            fits in L1d, so the panel that the P·V micro-kernel streams stays in L1
//            (a 16-bit panel fits twice the keys of a float32 one).
//            Rounded down to a multiple of 32 (the widest register tile), within [32, 512].
//   tile_q:  everything a task keeps resident — pre-scaled Q (tile_q × D), the score/P
//            block (tile_q × tile_kv), the output accumulator (tile_q × Dv) and the
//            packed K/V tile (tile_kv × (D + Dv)) — takes at most half of L2; the other
//            half is left for the K/V rows streaming in to be packed. Rounded down to a
//            multiple of 8, within [8, 256] (256 rows per task still gives 8 tasks per
//            head at seq 2048, enough to balance 2–16 threads).
// The measurements behind it are in docs/design.md.
#pragma once

#include <stddef.h>

#include "attn.h"

#ifdef __cplusplus
extern "C" {
#endif

// Default cache sizes assumed when the caller passes 0.
#define ATTN_TILES_DEFAULT_L1D ((size_t)32 * 1024)
#define ATTN_TILES_DEFAULT_L2 ((size_t)1024 * 1024)

// Tile sizes for problem p on a core with l1d / l2 bytes of per-core cache (0 = default).
void attn_tiles_for_caches(const attn_problem *p, size_t l1d, size_t l2, int *tile_q, int *tile_kv);

// The tiles a kernel uses: exec's where set (> 0), else the rule with the default caches.
void attn_tiles_resolve(const attn_problem *p, const attn_exec *exec, int *tile_q, int *tile_kv);

#ifdef __cplusplus
}
#endif
