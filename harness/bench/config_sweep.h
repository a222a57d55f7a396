// SPDX-License-Identifier: MIT
// The parsed form of a sweep config, shared by its reader (config.c: inih handlers,
// cross-key validation) and its expansion into points (config_expand.c, which also holds
// attn_bench_plan_load: read, count, expand). Private to harness/bench/config*.c; the
// interface is bench/config.h.
#ifndef ATTNBENCH_BENCH_CONFIG_SWEEP_H
#define ATTNBENCH_BENCH_CONFIG_SWEEP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "bench/config.h"

enum { kMaxValues = 64, kMaxSweeps = 64, kMaxKeys = 1024, kMaxKernels = 64 };
enum { kMaxServing = 16, kServingText = 96 };  // serving keys: items per list, item length

typedef struct ilist {
  int64_t v[kMaxValues];
  int n;      // 0: not given (or given empty)
  bool seen;  // key present in the section
} ilist;

// The option keys (attention variants): each a list of values, every value an
// attn_bench_opts with only that key's fields set (the rest zero), swept like the others.
enum { kOptAlign, kOptWindow, kOptSoftcap, kOptAlibi, kOptSinks, kOptMask, kOptLse, kOptKeys };

typedef struct olist {
  attn_bench_opts v[kMaxValues];
  int n;  // 0: not given (or given empty): the one value "none"
} olist;

typedef struct sweep {
  char name[48];
  const attn_kernel *kernels[kMaxKernels];
  int nk;
  ilist batch, heads, kv_heads, d_model, head_dim, head_dim_v, seq_len, seq_kv, causal, threads;
  int repetitions;
  double min_time;
  bool cold_inputs;
  char regtile[32];  // "" = not given
  int kv_split;      // with kv_split_given
  bool kv_split_given;
  unsigned single_given;  // bit i: single-value key i given (config.c, second_value)
  olist opts[kOptKeys];   // indexed by kOpt*
  attn_dtype kv_dtypes[ATTN_DTYPE_COUNT];  // kv_dtype list (kv_dtype_key); empty: f32 only
  int n_kv_dtypes;
  // A serving sweep (config_serving.c, bench/serving.h): kv_lens given. Each list swept.
  // Each item with its blanks canonical (one space between lengths) and the line it is on;
  // no two items of a list describe the same lengths (config_serving_validate).
  char q_lens[kMaxServing][kServingText], kv_lens[kMaxServing][kServingText];
  int q_line[kMaxServing], kv_line[kMaxServing];
  int n_q_lens, n_kv_lens;
  int64_t page_sizes[kMaxServing];  // 0 = ragged
  int n_page_sizes;
  int page_orders[2];  // attn_page_order values
  int n_page_orders;
  attn_compute computes[ATTN_COMPUTE_COUNT];  // compute list (compute_key); empty: f32 only
  int n_computes;
} sweep;

// A key's line and its continuation lines (indented lines after it, each its own handler
// call): cont_line[cont0 .. cont0 + ncont) of the parse_ctx, in file order.
typedef struct key_line {
  char section[48];
  char key[32];
  int line;
  int cont0, ncont;
  int calls;  // handler calls for the key so far
} key_line;

// Continuation lines recorded per file; a key's continuation lines past them are reported
// at the key's line.
enum { kMaxContinuations = 4096 };

typedef struct parse_ctx {
  const char *path;
  sweep *sweeps;
  int nsweeps;
  key_line keys[kMaxKeys];
  int nkeys;
  int cont_line[kMaxContinuations];
  int nconts;
  int err_line;  // first semantic error (0: none)
  char err[512];
} parse_ctx;

// The points so far plus an open-addressing hash set of their names (indices into pts,
// SIZE_MAX = empty slot; the table is kept at most half full), so that dropping a point
// already produced by another sweep costs O(1) instead of a scan of every point.
typedef struct plan_builder {
  attn_bench_point *pts;
  size_t n, cap;
  struct attn_serving_batch **batches;  // the serving points' layouts (moved to the plan)
  size_t nbatches;
  size_t *slots;
  size_t nslots;  // a power of two, >= 2 * cap
  // Points of the sweep being expanded that an earlier sweep planned with other
  // repetitions or min_time (they keep the earlier sweep's), the first described, for a
  // note on `notes` (may be NULL).
  FILE *notes;
  size_t conflicts;
  char conflict[ATTN_BENCH_NAME_MAX + 256];
  size_t compute_skipped;  // points an int8 compute mode skipped (K/V not q8_0)
} plan_builder;

// Bounded copy that always terminates dst (truncating long names is fine here).
void config_copy_str(char *dst, size_t n, const char *src);
// The line of key in section (key NULL: of the section's first key); 0 if absent.
int config_line_of(const parse_ctx *c, const char *section, const char *key);
// Records the first semantic error; returns 0 (inih's "handler failed").
int config_fail(parse_ctx *c, int line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

// "PATH:LINE: msg" (line 0: "PATH: msg") into err.
void config_format_error(const parse_ctx *c, int line, const char *msg, char *err, size_t len);
// Reads and parses path into c (c->sweeps set by the caller) and validates every sweep;
// false with "PATH:LINE: why" in err. The first half of attn_bench_plan_load (config.c).
// On success *text is the file's text (NUL-terminated, the caller's to free).
bool config_read(const char *path, const attn_bench_overrides *ov, parse_ctx *c, char **text,
                 char *err, size_t err_len);

// The number of combinations of a sweep's option lists, and combination `index`.
size_t config_option_combinations(const sweep *s);
attn_bench_opts config_option_combination(const sweep *s, size_t index);
// Number of points a sweep expands to before duplicates are dropped, saturated at
// limit + 1.
size_t config_sweep_points(const sweep *s, const attn_bench_overrides *ov, size_t limit);
// Serving sweeps (config_serving.c): the keys q_lens, kv_lens, page_size, page_order
// (returns −1 for another key, else the handler's result); their cross-key rules; the
// number of serving combinations (1 for another sweep); combination `index` built into
// *out (allocated, owned by the caller: attn_bench_plan) with its name suffix.
int config_serving_key(parse_ctx *c, sweep *s, int line, const char *key, const char *value);
bool config_serving_validate(parse_ctx *c, sweep *s);
size_t config_serving_combinations(const sweep *s);
// The line of combination `index`'s q_lens item (q) or kv_lens item (!q); 0 for a dense sweep.
int config_serving_line(const sweep *s, size_t index, bool q);
bool config_serving_batch(parse_ctx *c, const sweep *s, size_t index,
                          struct attn_serving_batch **out, char *suffix, size_t suffix_len);

// Appends the points of s (validated) to b; false with the error in c.
bool config_expand(parse_ctx *c, const sweep *s, const attn_bench_overrides *ov, plan_builder *b);

#endif
