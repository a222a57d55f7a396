// SPDX-License-Identifier: MIT
//
// cli_args.h — the one option parser every `attnbench <command>` uses, so all
// subcommands behave alike:
//   * long options only: `--name value` or `--name=value`; `-h`/`--help` prints the
//     generated help and the command exits 0;
//   * unknown options, missing values, values given to flags, repeated single-valued
//     options and missing required options are errors with a message naming the option;
//   * numbers are parsed strictly: the whole token must be a number (no trailing junk,
//     no empty string), integers in base 10 within [min, max], floats finite and within
//     [fmin, fmax]; out-of-range values name the allowed range.
//   * positional arguments are rejected unless the spec asks for them;
//   * optionally, options with a given prefix (e.g. --benchmark_*) pass through verbatim.
//
// Usage:
//   int threads = 0; bool verbose = false; cli_list kernels = {0};
//   const cli_option opts[] = {
//     {.name = "kernel", .kind = CLI_STRING_LIST, .dest = &kernels, .metavar = "NAME",
//      .help = "check only this kernel (repeatable)"},
//     {.name = "threads", .kind = CLI_INT, .dest = &threads, .min = 0, .max = ATTN_MAX_THREADS,
//     ...},
//   };
//   const cli_spec spec = {.command = "check", .summary = "...", CLI_OPTIONS(opts)};
//   int rc = cli_parse(&spec, argc, argv);
//   if (rc != CLI_OK) return cli_exit_code(rc);
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

// Exit codes shared by all subcommands (docs/cli.md).
enum {
  ATTNBENCH_EXIT_OK = 0,       // success (and `--help`)
  ATTNBENCH_EXIT_FAILURE = 1,  // the command ran and failed (bad input file, failed check)
  ATTNBENCH_EXIT_USAGE = 2,    // bad command line
};

typedef enum cli_kind {
  CLI_FLAG,         // dest: bool*; takes no value
  CLI_INT,          // dest: int*; strict base-10 integer in [min, max]
  CLI_INT64,        // dest: int64_t*; strict base-10 integer in [min, max]
  CLI_DOUBLE,       // dest: double*; strict finite float in [fmin, fmax]
  CLI_STRING,       // dest: const char** (points into argv)
  CLI_STRING_LIST,  // dest: cli_list*; repeatable, each occurrence appends one value
  CLI_INT_LIST,     // dest: cli_int_list*; repeatable, and each value may be a comma-
                    // separated list ("--threads 1,2,4" == "--threads 1 --threads 2,4");
                    // every item strict and within [min, max]
} cli_kind;

enum { CLI_LIST_MAX = 64 };

typedef struct cli_list {
  const char *items[CLI_LIST_MAX];  // point into argv
  size_t count;
} cli_list;

typedef struct cli_int_list {
  int64_t items[CLI_LIST_MAX];
  size_t count;
} cli_int_list;

typedef struct cli_option {
  const char *name;  // long name without the leading "--"
  cli_kind kind;
  void *dest;           // see cli_kind
  const char *metavar;  // value placeholder in help ("N", "PATH"); ignored for flags
  const char *help;     // one line
  bool required;        // error if not given
  bool *given;          // optional: set to true when the option appears
  int64_t min, max;     // CLI_INT/CLI_INT64 range (both 0 = the type's full range)
  double fmin, fmax;    // CLI_DOUBLE range (both 0 = any finite value)
} cli_option;

// The option table fields of a cli_spec from an array of cli_option (not a pointer).
#define CLI_OPTIONS(opts) .options = (opts), .n_options = sizeof(opts) / sizeof((opts)[0])

typedef struct cli_spec {
  const char *command;  // subcommand name, used in messages: "attnbench <command>: ..."
  const char *program;  // optional: the whole command name in messages and usage instead
                        // of "attnbench <command>" (a separate binary: "attnbench-mpi")
  const char *summary;  // one line under the usage line
  const char *epilog;   // optional text after the option list (examples, notes)
  const cli_option *options;
  size_t n_options;
  // Positional arguments: rejected unless positional != NULL, in which case up to
  // max_positional of them are stored (pointers into argv) and counted in *n_positional.
  const char **positional;
  size_t max_positional;
  size_t *n_positional;
  const char *positional_usage;  // e.g. "[FILE...]" for the usage line
  // Pass-through options: when passthrough != NULL, every argument that starts with
  // "--" + passthrough_prefix (e.g. "benchmark_" for Google Benchmark's flags) is stored
  // verbatim, in order, in *passthrough instead of being parsed. Such flags must carry
  // their value in the same token ("--benchmark_filter=flash").
  const char *passthrough_prefix;
  cli_list *passthrough;
} cli_spec;

typedef enum cli_status {
  CLI_OK = 0,     // parsed; the command should run
  CLI_HELP = 1,   // help was printed to stdout; the command should exit 0
  CLI_ERROR = 2,  // an error was printed to stderr; the command should exit 2
} cli_status;

// Parses argv[1..argc-1] (argv[0] is the subcommand name). Destinations of options that
// do not appear are left untouched, so initialise them to their defaults first.
cli_status cli_parse(const cli_spec *spec, int argc, char **argv);

// The exit code for a non-OK status: 0 for CLI_HELP, ATTNBENCH_EXIT_USAGE for CLI_ERROR.
int cli_exit_code(cli_status st);

// Prints the generated help (usage line, summary, options, epilog) to f.
void cli_print_help(const cli_spec *spec, FILE *f);

// Strict number parsers, also used for values read from files. Return false on
// junk, overflow or out-of-range values (no message; callers report).
bool cli_parse_i64(const char *s, int64_t min, int64_t max, int64_t *out);
bool cli_parse_double(const char *s, double *out);

#ifdef __cplusplus
}
#endif
