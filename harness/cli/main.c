// SPDX-License-Identifier: MIT
// attnbench — entry point: `attnbench <command> [options]`. The command table is
// generated from commands.def; each command lives in harness/cmd_<name>.c. The global
// option --plugin (and ATTNBENCH_PLUGINS) is handled here, before dispatch (plugins.h).
#include <stdio.h>
#include <string.h>

#include "attn.h"
#include "cli/commands.h"
#include "common/cli_args.h"
#include "common/util.h"
#include "io/npy.h"
#include "plugins/plugins.h"

#ifndef ATTNBENCH_VERSION
#define ATTNBENCH_VERSION "unknown"
#endif

typedef struct command {
  const char *name;
  const char *help;
  int (*run)(int argc, char **argv);
} command;

static const command kCommands[] = {
#define ATTN_COMMAND(name, help) {#name, help, cmd_##name},
#include "cli/commands.def"
#undef ATTN_COMMAND
};
enum { kNumCommands = sizeof kCommands / sizeof kCommands[0] };

static void usage(FILE *f) {
  fprintf(f,
          "usage: attnbench <command> [options]\n"
          "       attnbench <command> --help\n\n"
          "CPU attention kernels: correctness checks and benchmarks.\n\ncommands:\n");
  for (int i = 0; i < kNumCommands; i++)
    fprintf(f, "  %-10s %s\n", kCommands[i].name, kCommands[i].help);
  fprintf(f,
          "\nglobal options (any command):\n"
          "  --plugin PATH      load kernels from a plug-in shared object (repeatable; also\n"
          "                     ATTNBENCH_PLUGINS=a.so:b.so); see docs/plugins.md\n");
  fprintf(f, "\nexit codes: 0 success, 1 failure (bad input, failed check), 2 bad command line\n");
}

static const command *find(const char *name) {
  for (int i = 0; i < kNumCommands; i++)
    if (strcmp(kCommands[i].name, name) == 0) return &kCommands[i];
  return NULL;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    usage(stderr);
    return ATTNBENCH_EXIT_USAGE;
  }
  const char *name = argv[1];
  if (strcmp(name, "--help") == 0 || strcmp(name, "-h") == 0 || strcmp(name, "help") == 0) {
    if (strcmp(name, "help") == 0 && argc >= 3) {  // `attnbench help run` == `attnbench run --help`
      const command *c = find(argv[2]);
      if (!c) {
        fprintf(stderr, "attnbench: unknown command '%s'\n\n", argv[2]);
        usage(stderr);
        return ATTNBENCH_EXIT_USAGE;
      }
      static char help_flag[] = "--help";
      char *help_argv[] = {argv[2], help_flag, NULL};
      return c->run(2, help_argv);
    }
    usage(stdout);
    return ATTNBENCH_EXIT_OK;
  }
  if (strcmp(name, "--version") == 0) {
    printf("attnbench %s\n", ATTNBENCH_VERSION);
    return ATTNBENCH_EXIT_OK;
  }
  const command *c = find(name);
  // The environment is checked once, before any command: a malformed ISA mask is a bad
  // command line (exit 2), not a silent "0" or "everything".
  char env_err[256];
  if (c && !attn_isa_mask_check(env_err, sizeof env_err)) {
    fprintf(stderr, "attnbench: %s\n", env_err);
    return ATTNBENCH_EXIT_USAGE;
  }
  if (!c) {
    fprintf(stderr, "attnbench: unknown command '%s'\n\n", name);
    usage(stderr);
    return ATTNBENCH_EXIT_USAGE;
  }
  // Plug-ins join the registry before any command runs (docs/plugins.md): every command
  // then sees their kernels exactly like the built-ins. --plugin is taken out of argv here.
  int rc = attn_plugins_from_args(&argc, argv);
  if (rc != ATTNBENCH_EXIT_OK) return rc;
  // A .npy streamed through a pipe may not announce more data than the memory rule allows
  // (util.h; a malformed ATTNBENCH_MEMORY_LIMIT is reported by the commands that use it).
  uint64_t budget = 0;
  char budget_err[256];
  if (attn_memory_budget(&budget, budget_err, sizeof budget_err))
    npy_set_stream_limit(budget / 5 * 4);
  return c->run(argc - 1, argv + 1);
}
