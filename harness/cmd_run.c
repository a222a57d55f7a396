// SPDX-License-Identifier: MIT
// `attnbench run` — placeholder until .npy I/O lands.
#include <stdio.h>

#include "cli_args.h"
#include "commands.h"

int cmd_run(int argc, char **argv) {
  const cli_spec spec = {.command = "run", .summary = "Run one kernel on .npy inputs."};
  const cli_status st = cli_parse(&spec, argc, argv);
  if (st != CLI_OK) return cli_exit_code(st);
  fprintf(stderr, "attnbench run: not implemented yet\n");
  return ATTNBENCH_EXIT_FAILURE;
}
