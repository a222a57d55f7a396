// SPDX-License-Identifier: MIT
// option_args.h — the command-line options that several commands share, declared once.
//
// 1. The execution settings (exec_args; kernels/core/settings.h decides them):
//   --threads N  --tile-q N  --tile-kv N  --regtile N|NAME  --kv-split N  --bind cores|none
//   --tune-file FILE  --explain
// run and check take them all (ATTN_EXEC_ARGS_CLI), bench the same with a list of thread
// counts, tune --threads and --explain. exec_args_layer turns what was given into the
// resolver's command-line layer.
//
// 2. The attention-option flags (kernels/attn.h, "Attention variants") as one
// set of command-line options, shared by `attnbench run` (a kernel computes with them) and
// `attnbench check --o` (an output computed elsewhere is checked with them):
//   --window L,R  --align top-left|bottom-right  --softcap C  --alibi MAX_BIAS
//   --alibi-slopes S.npy  --sinks S.npy  --mask M.npy  --lse LSE.npy
// Parse with ATTN_OPTION_ARGS_CLI in the command's cli_option table, validate the values
// with option_args_validate (exit 2 on a bad value), and once the problem's shape is known
// read the arrays with option_args_load (exit 1 on a bad file or shape).
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "attn.h"
#include "core/settings.h"
#include "io/fileio.h"
#include "io/npy.h"

typedef struct exec_args {
  int threads, tile_q, tile_kv;  // 0 = not given
  const char *regtile;           // NULL = not given
  int kv_split;                  // with kv_split_given
  bool kv_split_given;
  const char *bind;       // --bind: "cores" or "none" (NULL = not given)
  const char *tune_file;  // --tune-file (tune/tunefile.h; NULL = not given)
  bool explain;           // --explain: print each setting and where it came from
} exec_args;

// clang-format off
#define ATTN_EXEC_THREADS_HELP                                                            \
  "threads for parallel kernels (0 = not given: OMP_NUM_THREADS, else one per physical " \
  "core of the CPU set)"
#define ATTN_EXEC_THREADS_OPTION(where_, kind_, help_)                                      \
  {.name = "threads", .kind = (kind_), .dest = (where_), .metavar = "N", .min = 0,          \
   .max = ATTN_MAX_THREADS, .help = (help_)}
#define ATTN_EXEC_TILE_OPTIONS(a)                                                          \
  {.name = "tile-q", .kind = CLI_INT, .dest = &(a)->tile_q, .metavar = "N", .min = 0,      \
   .max = ATTN_MAX_TILE,                                                                   \
   .help = "query rows per tile for tiled kernels (0 = not given: ATTNBENCH_TILE_Q, the "  \
           "tuning file, else the tile rule with this CPU's caches)"},                     \
  {.name = "tile-kv", .kind = CLI_INT, .dest = &(a)->tile_kv, .metavar = "N", .min = 0,    \
   .max = ATTN_MAX_TILE,                                                                   \
   .help = "key rows per tile for tiled kernels (0 = not given: ATTNBENCH_TILE_KV, the "   \
           "tuning file, else the tile rule with this CPU's caches)"}
#define ATTN_EXEC_VARIANT_OPTIONS(a)                                                       \
  {.name = "regtile", .kind = CLI_STRING, .dest = &(a)->regtile, .metavar = "N|NAME",      \
   .help = "register-tile variant of the kernel, by index or name (attnbench list: rt=; "  \
           "default: ATTNBENCH_REGTILE, the tuning file, else 0)"},                        \
  {.name = "kv-split", .kind = CLI_INT, .dest = &(a)->kv_split,                            \
   .given = &(a)->kv_split_given, .metavar = "N", .min = 0, .max = ATTN_MAX_KV_SPLIT,      \
   .help = "split-KV kernels: cut each task's keys into N chunks (1 = no split; 0 = the "  \
           "kernel's rule; default: ATTNBENCH_KV_SPLIT, the tuning file, else 0)"}
#define ATTN_EXEC_BIND_OPTION(a)                                                           \
  {.name = "bind", .kind = CLI_STRING, .dest = &(a)->bind, .metavar = "cores|none",        \
   .help = "bind OpenMP threads to cores of the inherited CPU set (default; not when "     \
           "OMP_PLACES/OMP_PROC_BIND is set) or leave placement alone"}
#define ATTN_EXEC_TUNE_FILE_HELP                                                           \
  "tuning file with tiles (and register-tile variant, kv_split) per kernel and shape "     \
  "class (default: $ATTNBENCH_TUNE_FILE, else the file for this CPU under "                \
  "$XDG_CONFIG_HOME/attnbench; 'none': no file)"
#define ATTN_EXEC_TUNE_FILE_OPTION(where_, help_)                                            \
  {.name = "tune-file", .kind = CLI_STRING, .dest = (where_), .metavar = "FILE",             \
   .help = (help_)}
#define ATTN_EXEC_EXPLAIN_OPTION(a)                                                        \
  {.name = "explain", .kind = CLI_FLAG, .dest = &(a)->explain,                             \
   .help = "print each execution setting (threads, bind, tiles, regtile, kv_split) and "   \
           "where it came from: command line > config > environment > tuning file > "      \
           "machine rule > kernel default"}
// --case-timeout SECONDS: how long one kernel call (check: one case in a worker, its
// preparation included) may take before a plug-in kernel is declared hung (isolate.h).
// d a double *, g a bool * set when given. Check with attn_case_timeout_settle.
#define ATTN_CASE_TIMEOUT_OPTION(d, g)                                                    \
  {                                                                                        \
    .name = "case-timeout", .kind = CLI_DOUBLE, .dest = (d), .given = (g),                 \
    .metavar = "SECONDS",                                                                  \
    .help = "a plug-in kernel's limit per case or call before it counts as hung "          \
            "(default 60)"                                                                 \
  }
// The default when not given; false (with one line on stderr) outside (0, 1e6] seconds.
bool attn_case_timeout_settle(const char *command, double *seconds, bool given);

// --compute MODE: the compute mode (attn.h, "Compute modes"; docs/precision.md), shared by
// run (CLI_STRING: one mode), check (CLI_STRING: only the cases of that mode) and bench
// (CLI_STRING_LIST: the modes replacing every sweep's `compute`). Parse each value with
// attn_compute_arg.
// clang-format off
#define ATTN_COMPUTE_OPTION(where_, kind_, help_)                                            {.name = "compute", .kind = (kind_), .dest = (where_), .metavar = "f32|bf16|f16|int8",      .help = (help_)}
// clang-format on
// The mode named s into *out; false after "attnbench <cmd>: --compute 'x': want …" on stderr.
bool attn_compute_arg(const char *cmd, const char *s, attn_compute *out);

// --kv-dtype TYPE: the type K and V are stored as (run: before the run; check --o: before
// O was computed), one CLI_STRING; parse it with attn_kv_dtype_arg.
// clang-format off
#define ATTN_KV_DTYPE_OPTION(where_, help_)                                                  {.name = "kv-dtype", .kind = CLI_STRING, .dest = (where_), .metavar = "f32|f16|bf16|q8_0", .help = (help_)}
// clang-format on
// The type named s into *out; false after "attnbench <cmd>: --kv-dtype 'x': want …" on stderr.
bool attn_kv_dtype_arg(const char *cmd, const char *s, attn_dtype *out);

// Every option of exec_args (run, check).
#define ATTN_EXEC_ARGS_CLI(a)                                                            \
  ATTN_EXEC_THREADS_OPTION(&(a)->threads, CLI_INT, ATTN_EXEC_THREADS_HELP),              \
      ATTN_EXEC_TILE_OPTIONS(a), ATTN_EXEC_VARIANT_OPTIONS(a), ATTN_EXEC_BIND_OPTION(a), \
      ATTN_EXEC_TUNE_FILE_OPTION(&(a)->tune_file, ATTN_EXEC_TUNE_FILE_HELP),             \
      ATTN_EXEC_EXPLAIN_OPTION(a)
// clang-format on

// The up-front checks of a command that runs kernels, after parsing: --bind's value (the
// mode is set for the process), the environment's settings (resolve/resolve.h), and
// loading the tuning file (tune/tunefile.h). Returns -1 to go on, else the exit code
// (2: a bad value; 1: a bad tuning file) after "attnbench <cmd>: …".
int exec_args_setup(const char *cmd, const exec_args *a);

// The command-line layer of the settings resolver from what was given.
void exec_args_layer(const exec_args *a, attn_setting_layer *cli);

typedef struct option_args {
  const char *window, *align, *slopes_path, *sinks_path, *mask_path, *lse_path;
  double softcap, alibi;
  bool softcap_given, alibi_given;
} option_args;

// The eight cli_option initialisers for the fields of *(a) (an option_args*); lse_help is
// the command's help for --lse (run writes the LSE, check reads it).
// clang-format off
#define ATTN_OPTION_ARGS_CLI(a, lse_help)                                                    \
  {.name = "window", .kind = CLI_STRING, .dest = &(a)->window, .metavar = "L,R",             \
   .help = "sliding window: row i sees j iff -L <= j-(i+off) <= R; 'inf' = unbounded"},      \
  {.name = "align", .kind = CLI_STRING, .dest = &(a)->align,                                 \
   .metavar = "top-left|bottom-right",                                                       \
   .help = "diagonal of causal/window/ALiBi: off = 0 or seq_kv-seq_q (default)"},            \
  {.name = "softcap", .kind = CLI_DOUBLE, .dest = &(a)->softcap,                             \
   .given = &(a)->softcap_given, .metavar = "C",                                             \
   .help = "logit soft-cap: s <- C*tanh(s/C) after scaling (C > 0)"},                        \
  {.name = "alibi", .kind = CLI_DOUBLE, .dest = &(a)->alibi, .given = &(a)->alibi_given,     \
   .metavar = "MAX_BIAS", .help = "ALiBi with the standard slopes for max_bias (> 0)"},      \
  {.name = "alibi-slopes", .kind = CLI_STRING, .dest = &(a)->slopes_path,                    \
   .metavar = "S.npy", .help = "ALiBi with explicit slopes, float32 [heads]"},               \
  {.name = "sinks", .kind = CLI_STRING, .dest = &(a)->sinks_path, .metavar = "S.npy",        \
   .help = "attention sinks, float32 [heads] logits in each row's denominator"},             \
  {.name = "mask", .kind = CLI_STRING, .dest = &(a)->mask_path, .metavar = "M.npy",          \
   .help = "additive mask, float32 [seq_q][seq_kv] or [batch][heads][seq_q][seq_kv]"},       \
  {.name = "lse", .kind = CLI_STRING, .dest = &(a)->lse_path, .metavar = "LSE.npy",          \
   .help = (lse_help)}
// clang-format on

// Validates the values given: window syntax, alignment name, softcap and max_bias > 0 and
// admitted as float32 by the problem's rules (ATTN_FIELD_SOFTCAP, ATTN_FIELD_ALIBI), not
// both --alibi and --alibi-slopes. The one check of these fields on the command-line path.
// Returns -1 to go on, else the exit code (2) after a message "attnbench <cmd>: …".
int option_args_validate(const char *cmd, const option_args *a);

// The options for problem p (the arrays read into the given holders, which the caller
// npy_free's; o->lse is left NULL — the caller owns that buffer). False (message printed)
// on a bad file or shape, or a mask the problem refuses (ATTN_FIELD_MASK).
bool option_args_load(const char *cmd, const option_args *a, const attn_problem *p, attn_options *o,
                      npy_array *slopes, npy_array *sinks, npy_array *mask);

// The files a command reads besides Q, K and V, for its outputs' "not an input" check
// (fileio.h): the options' arrays (--alibi-slopes, --sinks, --mask) and, when x is not NULL,
// the tuning file exec_args_setup read (tunefile.h: --tune-file, $ATTNBENCH_TUNE_FILE or
// the default). Appends to in[n .. cap) and returns the new count.
size_t option_args_inputs(const option_args *a, const exec_args *x, attn_input_file *in, size_t n,
                          size_t cap);

// --scale S: sets p->scale to S as float32 and checks it (ATTN_FIELD_SCALE). False after
// "attnbench <cmd>: --scale S: <reason>" (a subnormal scale). Where run and check --o
// set the scale: its one check on their path.
bool scale_arg_apply(const char *cmd, double scale, attn_problem *p);
// Sets p->compute and checks that field (ATTN_FIELD_COMPUTE: int8 needs q8_0 K/V, so call it
// after kv_dtype is set); false after a one-line message naming --compute.
bool compute_arg_apply(const char *cmd, attn_compute mode, attn_problem *p);
