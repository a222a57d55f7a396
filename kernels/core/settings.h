// SPDX-License-Identifier: MIT
// settings.h — the one resolver of how a kernel runs: every setting of attn_exec
// (threads, tile_q, tile_kv, regtile, kv_split) and the thread binding, each taken from
// the first source that gives it, in this order of precedence:
//
//   command line > config > environment > tuning file > machine rule > kernel default
//
// and a record of where each value came from (its source and what in it: "--tile-q",
// "ATTNBENCH_TILE_Q", "the tuning file's [flash__avx2 prefill d64]", "L1d 32 KiB, L2 1024
// KiB"). `attnbench run`, `check`, `bench`, `tune` (harness/resolve/resolve.h fills the
// layers from the command line, the config, the process environment, the active tuning
// file and hwloc) and the Python module (python/native: its call arguments are the
// command-line layer, the environment, and the machine read from Linux sysfs) all call
// attn_settings_resolve, so one problem on one machine gets one answer everywhere.
//
// The code here reads nothing itself: no environment (attn_settings_env takes the lookup
// function), no files, no topology. A layer is filled by the caller; the machine rule is
// attn_settings_machine, from numbers the caller found.
//
// A new setting is one more attn_setting value, a row in settings.c's field table, its
// default in attn_settings_resolve and (if it has one) its environment variable.
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "attn.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum attn_setting {
  ATTN_SETTING_THREADS = 0,  // attn_exec.threads (>= 1 once resolved)
  ATTN_SETTING_BIND,         // attn_bind_mode below
  ATTN_SETTING_TILE_Q,       // attn_exec.tile_q (>= 1 once resolved)
  ATTN_SETTING_TILE_KV,      // attn_exec.tile_kv (>= 1 once resolved)
  ATTN_SETTING_REGTILE,      // attn_exec.regtile: an index into the kernel's variants
  ATTN_SETTING_KV_SPLIT,     // attn_exec.kv_split (0 = the kernel's split rule)
  ATTN_SETTING_COUNT
} attn_setting;

// Sources, lowest precedence first.
typedef enum attn_source {
  ATTN_SOURCE_DEFAULT = 0,  // the kernel's own default
  ATTN_SOURCE_MACHINE,      // the machine rule (cores, cache sizes, binding support)
  ATTN_SOURCE_TUNE_FILE,    // the active tuning file's entry for (kernel, shape class)
  ATTN_SOURCE_ENV,          // ATTNBENCH_TILE_Q/_KV, ATTNBENCH_REGTILE/_KV_SPLIT, OMP_*
  ATTN_SOURCE_CONFIG,       // a bench sweep config
  ATTN_SOURCE_CLI,          // the command line (Python: the call's arguments)
  ATTN_SOURCE_COUNT
} attn_source;

// Where OpenMP threads run (harness/machine/placement.h does the binding).
typedef enum attn_bind_mode {
  ATTN_BIND_DEFAULT = 0,  // not a resolved value: "whatever the sources say"
  ATTN_BIND_CORES = 1,    // thread t → physical core t of the inherited CPU set
  ATTN_BIND_NONE = 2,     // nothing bound
  ATTN_BIND_OPENMP = 3,   // OMP_PLACES / OMP_PROC_BIND place the threads
} attn_bind_mode;

enum { ATTN_SETTING_UNSET = -1, ATTN_SETTING_WHAT = 80 };

// One source's values. value[f] == ATTN_SETTING_UNSET: the source does not give f. The
// register-tile variant is given by name or index as text (regtile[0] == '\0': not
// given), checked against the kernel when resolved. what[f]: what in the source gave it.
typedef struct attn_setting_layer {
  int value[ATTN_SETTING_COUNT];
  char regtile[32];
  char what[ATTN_SETTING_COUNT][ATTN_SETTING_WHAT];
} attn_setting_layer;

// Every source of one resolution, indexed by attn_source (the DEFAULT layer is ignored:
// attn_settings_resolve fills it).
typedef struct attn_setting_layers {
  attn_setting_layer layer[ATTN_SOURCE_COUNT];
} attn_setting_layers;

// The resolved settings: exec ready for attn_kernel_call (validated for the kernel),
// the binding mode, and per setting its source and what in the source gave it.
typedef struct attn_settings {
  attn_exec exec;
  attn_bind_mode bind;
  attn_source source[ATTN_SETTING_COUNT];
  char what[ATTN_SETTING_COUNT][ATTN_SETTING_WHAT];
} attn_settings;

// An empty layer (every value unset).
void attn_setting_layer_clear(attn_setting_layer *l);
void attn_setting_layers_clear(attn_setting_layers *ls);
// Sets field f of l to value (an integer; for ATTN_SETTING_REGTILE use
// attn_setting_layer_regtile), recording what gave it.
void attn_setting_layer_set(attn_setting_layer *l, attn_setting f, int value, const char *what);
// Sets the register-tile variant by name or index.
void attn_setting_layer_regtile(attn_setting_layer *l, const char *name_or_index, const char *what);
// Whether l gives f.
bool attn_setting_layer_has(const attn_setting_layer *l, attn_setting f);

// The machine rule into l: threads = cores (when > 0: the physical cores this process may
// run on), tile_q / tile_kv from the per-core cache sizes l1d / l2 (bytes; when either is
// known, by core/tiles.h's rule), bind = cores when can_bind. Values the machine does not
// know stay unset (the kernel default applies).
void attn_settings_machine(attn_setting_layer *l, const attn_problem *p, size_t l1d, size_t l2,
                           int cores, bool can_bind);

// The environment layer, read through get (getenv, or a test's table; NULL result or ""
// = unset): ATTNBENCH_TILE_Q, ATTNBENCH_TILE_KV (1 .. 2^20), ATTNBENCH_REGTILE (a variant
// name or index), ATTNBENCH_KV_SPLIT (0 .. ATTN_MAX_KV_SPLIT), OMP_NUM_THREADS (threads =
// the OpenMP default it sets), OMP_PLACES / OMP_PROC_BIND (bind = openmp). Returns 0, or
// −1 with "NAME=value: expected ..." in err for a malformed value.
typedef const char *(*attn_settings_getenv)(const char *name);
int attn_settings_env(attn_setting_layer *l, attn_settings_getenv get, char *err, size_t err_len);

// Which value a resolution could not use, and its source.
typedef struct attn_setting_fault {
  attn_setting field;
  attn_source source;
} attn_setting_fault;

// Resolves the settings of kernel k (NULL: no kernel — regtile 0) on problem p from the
// layers (the DEFAULT layer is filled here: the OpenMP default thread count, the tile
// rule with the assumed 32 KiB / 1 MiB caches, variant 0, the split rule, not bound).
// Then checks the result once (attn_kernel_exec_check; attn_exec_check without k).
// Returns 0, or −1 with a one-line message in err and, if fault is not NULL, the value at
// fault and its source in *fault: a register-tile variant k does not have ("--regtile
// '9x9': kernel flash__avx2 has no such register-tile variant (0..2: ...)"), a thread
// count above ATTN_MAX_THREADS ("threads = 100000 (environment: OMP_NUM_THREADS) exceeds
// the cap of 1024; ..."), another value outside attn_exec_check's ranges.
int attn_settings_resolve(const attn_kernel *k, const attn_problem *p,
                          const attn_setting_layers *layers, attn_settings *s,
                          attn_setting_fault *fault, char *err, size_t err_len);

// Names: "threads", "bind", "tile_q", "tile_kv", "regtile", "kv_split"; "command line",
// "config", "environment", "tuning file", "machine rule", "kernel default"; "cores",
// "none", "openmp".
const char *attn_setting_name(attn_setting f);
const char *attn_source_name(attn_source s);
const char *attn_bind_mode_name(attn_bind_mode m);

// Setting f's value as text ("64", "cores", "1 (12x32/8x32)" for a variant of k).
const char *attn_settings_value(const attn_settings *s, const attn_kernel *k, attn_setting f,
                                char *buf, size_t len);
// Setting f's provenance: "environment (ATTNBENCH_TILE_Q)".
const char *attn_settings_provenance(const attn_settings *s, attn_setting f, char *buf, size_t len);
// Every setting, one per line: "  tile_q   = 64  from environment (ATTNBENCH_TILE_Q)\n".
// Returns the characters needed (as snprintf).
int attn_settings_explain(const attn_settings *s, const attn_kernel *k, char *buf, size_t len);
// Every setting on one line (results files): "threads=2 [command line: --threads];
// tile_q=64 [environment: ATTNBENCH_TILE_Q]; ...". Returns buf.
const char *attn_settings_line(const attn_settings *s, const attn_kernel *k, char *buf, size_t len);

// Value parsers shared by every source that gives these settings as text.
// A tile: 0 when value is NULL or empty, else decimal digits giving 1 .. 2^20. Returns 0,
// or −1 with "NAME=value: expected a positive integer (at most 1048576)" in err.
int attn_settings_parse_tile(const char *name, const char *value, int *tile, char *err,
                             size_t err_len);
// kv_split: −1 when value is NULL or empty, else a whole number 0..ATTN_MAX_KV_SPLIT.
// Returns 0, or −1 with "NAME=value: expected ..." in err.
int attn_settings_parse_kv_split(const char *name, const char *value, int *kv_split, char *err,
                                 size_t err_len);
// True if value can name a register-tile variant: 1..31 characters of [A-Za-z0-9/_.-].
bool attn_settings_regtile_syntax(const char *value);
// The index of k's variant named value, or given as its index ("0".."N−1"); −1 with
// "<what> 'value': kernel K has no such register-tile variant (0..N−1: names)" in err.
int attn_settings_regtile_index(const attn_kernel *k, const char *value, const char *what,
                                char *err, size_t err_len);

#ifdef __cplusplus
}
#endif
