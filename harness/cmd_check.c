// SPDX-License-Identifier: MIT
// `attnbench check` — placeholder until the checker lands.
#include <stdio.h>

#include "cli_args.h"
#include "commands.h"

int cmd_check(int argc, char **argv) {
  const cli_spec spec = {.command = "check", .summary = "Check kernels against the float64 reference."};
  const cli_status st = cli_parse(&spec, argc, argv);
  if (st != CLI_OK) return cli_exit_code(st);
  fprintf(stderr, "attnbench check: not implemented yet\n");
  return ATTNBENCH_EXIT_FAILURE;
}
