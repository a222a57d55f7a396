// SPDX-License-Identifier: MIT
//
// util.h — small pieces every `attnbench` command shares, written once:
//   * the clock (attn_now_seconds);
//   * the "unknown kernel 'X'; available kernels: …" message;
//   * the memory estimate of a run, a check and a bench point, and the refusal rule
//     (need > 80% of the memory budget = available memory, capped by
//     ATTNBENCH_MEMORY_LIMIT), the available memory itself and the byte format ("1.5 GiB");
//   * the scan for non-finite output elements (`run` refuses to write them).
// Output files are fileio.h's.
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "attn.h"

#ifdef __cplusplus
extern "C" {
#endif

// Seconds on the monotonic clock (for durations only).
double attn_now_seconds(void);

// Writes "available kernels: a b c; unavailable on this CPU: d (needs avx512f), …" (no
// newline) to f.
void attn_print_kernel_names(FILE *f);
// "attnbench <command>: unknown kernel '<name>'; available kernels: …" + newline on stderr.
void attn_report_unknown_kernel(const char *command, const char *name);

// ── memory ──────────────────────────────────────────────────────────────────────────
// Bytes of memory a new allocation can use now: MemAvailable from /proc/meminfo, lowered
// to the cgroup memory limit's headroom when one is set. 0 if unknown.
uint64_t attn_available_memory(void);
// "1.5 GiB", "32 KiB", ...
const char *attn_format_bytes(uint64_t bytes, char *buf, size_t len);
// Byte arithmetic that saturates at UINT64_MAX instead of wrapping.
uint64_t attn_bytes_add(uint64_t a, uint64_t b);
uint64_t attn_bytes_mul(uint64_t a, uint64_t b);
// Bytes of Q, K, V and O of p (float32). Saturates at UINT64_MAX instead of wrapping.
uint64_t attn_tensor_bytes(const attn_problem *p);
// Bytes a check of shape c holds: copies of Q, K, V, the reference output (float) and
// the tolerance (double); with a kernel k also the guarded output and k's workspace
// (attn_check_kernel); a ragged or paged c twice that (each sequence's own case besides).
// k == NULL: comparing an output computed elsewhere (`run --check`).
uint64_t attn_check_bytes(const attn_problem *c, const attn_kernel *k, const attn_exec *exec);
// `run`: Q, K, V, O, the kernel's workspace and, with check, the reference.
uint64_t attn_run_bytes(const attn_kernel *k, const attn_problem *p, const attn_exec *exec,
                        bool check);

// The memory attnbench may use: available memory (attn_available_memory: MemAvailable,
// capped by the cgroup limit), capped by ATTNBENCH_MEMORY_LIMIT (bytes, or with a K, M, G
// or T suffix, powers of 1024) when set. 0 = unknown (nothing is refused). False (err
// says why) if ATTNBENCH_MEMORY_LIMIT is malformed.
bool attn_memory_budget(uint64_t *bytes, char *err, size_t err_len);
// The refusal rule shared by run, check and bench: need > 80% of budget (budget 0:
// never). When refused, msg gets "needs X of memory, Y available (limit: 80% of
// available)" and true is returned.
bool attn_memory_refused(uint64_t need, uint64_t budget, char *msg, size_t len);

// ── output values ───────────────────────────────────────────────────────────────────
typedef struct attn_nonfinite {
  size_t index;        // flat index into O
  int64_t b, h, i, d;  // sequence b's query i, head h, element d
  int64_t token;       // a serving batch's packed row (O[token][h][d]); -1 for dense
  float value;
} attn_nonfinite;
// Finds the first NaN or ±Inf in O of problem p ([batch][heads][seq_q][head_dim_v], or a
// serving batch's [total_q][heads][head_dim_v]: its token is found in cu_seqlens_q).
// Returns false if every element is finite.
bool attn_first_nonfinite(const attn_problem *p, const float *o, attn_nonfinite *where);

#ifdef __cplusplus
}
#endif
