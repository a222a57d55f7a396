// SPDX-License-Identifier: MIT
// cp_ulysses.h — DeepSpeed-Ulysses over MPI (docs/mpi.md): all-to-all from sequence shards
// to head shards, the whole sequence attended per head shard, and all-to-all back.
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "mpi/cp_run.h"

// MPI call status → message; false on error.
bool cp_mpi_ok(int rc, const char *what, char *err, size_t err_len);

// The largest buffer (bytes) any rank's MPI_Alltoallv of Q, K, V, O or LSE sends or
// receives for the problem w on `ranks` ranks; an MPI count holds at most INT_MAX.
double cp_ulysses_max_buffer(const attn_problem *w, int ranks);

// The rank's contiguous shard (rows [start, start + rows) of cp_shard_of(…, false)): q
// [B][H][rows][Dq] float32, kv packed [K: B·KVH·rows stored rows][V: the same]; writes o
// [B][H][rows][Dv] and lse [B][H][rows]. Needs heads >= ranks (the caller checks).
bool cp_ulysses(const cp_job *job, const float *q, const unsigned char *kv, float *o, float *lse,
                cp_result *res, char *err, size_t err_len);
