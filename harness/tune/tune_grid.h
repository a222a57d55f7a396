// SPDX-License-Identifier: MIT
// tune_grid.h — the candidates `attnbench tune` times (harness/cli/cmd_tune.c's header
// comment gives the search): the tile grid around the default tiles and the kv_split values
// around the default plan's split.
#pragma once

#include "attn.h"

enum { ATTN_TUNE_MAX_CANDIDATES = 16 };

// The tile grid around the default tiles rq x rkv: tile_q in {rq/2, rq, 3rq/2, 2rq},
// tile_kv in {rkv/2, rkv, 2rkv}, rounded to k's register-tile multiples and capped at the
// problem's lengths, duplicates (as the kernel clamps them) dropped; [0] is the default
// itself, the others nearest to it first. Returns the count.
int attn_tune_tile_candidates(const attn_kernel *k, const attn_problem *p, int rq, int rkv,
                              int cq[ATTN_TUNE_MAX_CANDIDATES], int ckv[ATTN_TUNE_MAX_CANDIDATES]);

// kv_split values for k on p at ex's tiles: 1, d/4, d/2, 2d, 4d around the default plan's
// chunk count d (flash_plan.h; 8 for a kernel whose split rule is not flash_plan's), within
// 1..ATTN_MAX_KV_SPLIT, d itself dropped: out[0 .. return).
int attn_tune_kv_split_candidates(const attn_kernel *k, const attn_problem *p, const attn_exec *ex,
                                  int out[8]);
