// SPDX-License-Identifier: MIT
// option_args.h — the attention-option flags (kernels/attn.h, "Attention variants") as one
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
#include "io/npy.h"

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

// Validates the values given (window syntax, alignment name, softcap and max_bias > 0 and
// finite in float32, not both --alibi and --alibi-slopes). Returns -1 to go on, else the
// exit code (2) after a message "attnbench <cmd>: …".
int option_args_validate(const char *cmd, const option_args *a);

// The options for problem p (the arrays read into the given holders, which the caller
// npy_free's; o->lse is left NULL — the caller owns that buffer). False (message printed)
// on a bad file or shape.
bool option_args_load(const char *cmd, const option_args *a, const attn_problem *p, attn_options *o,
                      npy_array *slopes, npy_array *sinks, npy_array *mask);
