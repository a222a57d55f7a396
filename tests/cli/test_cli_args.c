// SPDX-License-Identifier: MIT
// The shared option parser: forms (--x v, --x=v), strict numbers and ranges, lists,
// required/repeated/unknown options, flags with values, help, positionals, pass-through.
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/cli_args.h"
#include "test_util.h"

static int g_i;
static int64_t g_i64;
static double g_d;
static bool g_flag, g_d_given;
static const char *g_s;
static cli_list g_names, g_pass;
static cli_int_list g_ints;
static const char *g_pos[4];
static size_t g_npos;

static const cli_option kOpts[] = {
    {.name = "int", .kind = CLI_INT, .dest = &g_i, .min = 0, .max = 100, .help = "an int"},
    {.name = "big", .kind = CLI_INT64, .dest = &g_i64, .help = "an int64, full range"},
    {.name = "real",
     .kind = CLI_DOUBLE,
     .dest = &g_d,
     .given = &g_d_given,
     .fmin = -1,
     .fmax = 1,
     .help = "x"},
    {.name = "flag", .kind = CLI_FLAG, .dest = &g_flag, .help = "a flag"},
    {.name = "str", .kind = CLI_STRING, .dest = &g_s, .help = "a string"},
    {.name = "name", .kind = CLI_STRING_LIST, .dest = &g_names, .help = "names"},
    {.name = "ints", .kind = CLI_INT_LIST, .dest = &g_ints, .min = 1, .max = 8, .help = "ints"},
};

// Parses a NULL-terminated argument list (after the command name) with fresh state; the
// parser's own output (help on stdout, errors on stderr) goes to /dev/null meanwhile.
static cli_status parse_with(bool required_str, bool positional, const char *a0, ...) {
  g_i = -7;
  g_i64 = 0;
  g_d = 0;
  g_flag = g_d_given = false;
  g_s = NULL;
  memset(&g_names, 0, sizeof g_names);
  memset(&g_pass, 0, sizeof g_pass);
  memset(&g_ints, 0, sizeof g_ints);
  g_npos = 0;
  cli_option opts[sizeof kOpts / sizeof kOpts[0]];
  memcpy(opts, kOpts, sizeof opts);
  opts[4].required = required_str;
  char *argv[32] = {"cmd"};
  int argc = 1;
  va_list ap;
  va_start(ap, a0);
  for (const char *a = a0; a && argc < 31; a = va_arg(ap, const char *)) argv[argc++] = (char *)a;
  va_end(ap);
  const cli_spec spec = {
      .command = "cmd",
      .summary = "test",
      CLI_OPTIONS(opts),
      .positional = positional ? g_pos : NULL,
      .max_positional = 2,
      .n_positional = &g_npos,
      .passthrough_prefix = "benchmark_",
      .passthrough = &g_pass,
  };
  fflush(stdout);
  fflush(stderr);
  const int out = dup(1), err = dup(2), null = open("/dev/null", O_WRONLY);
  dup2(null, 1);
  dup2(null, 2);
  const cli_status st = cli_parse(&spec, argc, argv);
  fflush(stdout);
  fflush(stderr);
  dup2(out, 1);
  dup2(err, 2);
  close(out);
  close(err);
  close(null);
  return st;
}

#define OK(...) (parse_with(false, false, __VA_ARGS__, NULL) == CLI_OK)
#define ERR(...) (parse_with(false, false, __VA_ARGS__, NULL) == CLI_ERROR)

int main(void) {
  EXPECT(parse_with(false, false, NULL) == CLI_OK && g_i == -7, "no arguments: defaults untouched");
  EXPECT(OK("--int", "42") && g_i == 42, "--int 42");
  EXPECT(OK("--int=0") && g_i == 0, "--int=0");
  EXPECT(OK("--int", "+5") && g_i == 5, "--int +5");
  EXPECT(ERR("--int", "101"), "above max");
  EXPECT(ERR("--int", "-1"), "below min");
  EXPECT(ERR("--int", "4x"), "trailing junk");
  EXPECT(ERR("--int", " 4"), "leading blank");
  EXPECT(ERR("--int="), "empty value");
  EXPECT(ERR("--int", "0x10"), "hex");
  EXPECT(ERR("--int", "3.0"), "float for int");
  EXPECT(ERR("--int"), "missing value");
  EXPECT(ERR("--int", "--flag"), "value swallowed by the next option");
  EXPECT(ERR("--int", "1", "--int", "2"), "repeated single-valued option");
  EXPECT(OK("--big", "-9223372036854775808") && g_i64 == INT64_MIN, "int64 min");
  EXPECT(ERR("--big", "9223372036854775808"), "int64 overflow");
  EXPECT(OK("--real", "-0.5") && g_d == -0.5 && g_d_given,
         "--real -0.5 (negative value is not an option)");
  EXPECT(OK("--real=.25") && g_d == 0.25, ".25");
  EXPECT(OK("--real=1e-3") && g_d == 1e-3, "1e-3");
  EXPECT(OK("--flag") && !g_d_given, "given stays false when absent");
  EXPECT(ERR("--real", "2"), "double above fmax");
  EXPECT(ERR("--real", "nan"), "nan");
  EXPECT(ERR("--real", "inf"), "inf");
  EXPECT(ERR("--real", "0.5x"), "double junk");
  EXPECT(OK("--flag") && g_flag, "flag");
  EXPECT(ERR("--flag=1"), "flag with value");
  EXPECT(OK("--str", "a b") && g_s && strcmp(g_s, "a b") == 0, "string");
  EXPECT(OK("--str=--x") && strcmp(g_s, "--x") == 0, "string starting with -- via =");
  EXPECT(ERR("--str="), "empty string");
  EXPECT(OK("--name", "a", "--name=b") && g_names.count == 2 && strcmp(g_names.items[1], "b") == 0,
         "list");
  EXPECT(OK("--ints", "1,2", "--ints=8") && g_ints.count == 3 && g_ints.items[2] == 8, "int list");
  EXPECT(ERR("--ints", "1,,2"), "empty int-list item");
  EXPECT(ERR("--ints", "1,9"), "int-list item out of range");
  EXPECT(ERR("--ints", "1,"), "trailing comma");
  EXPECT(ERR("--nope"), "unknown option");
  EXPECT(ERR("--nope=3"), "unknown option with value");
  EXPECT(ERR("-x"), "short option");
  EXPECT(ERR("--in", "3"), "no prefix matching");
  EXPECT(ERR("stray"), "positional rejected");
  EXPECT(parse_with(false, true, "a", "--flag", "b", NULL) == CLI_OK && g_npos == 2 && g_flag,
         "positionals");
  EXPECT(parse_with(false, true, "a", "b", "c", NULL) == CLI_ERROR, "too many positionals");
  EXPECT(parse_with(false, true, "--", "--flag", NULL) == CLI_OK && g_npos == 1 && !g_flag,
         "-- ends options");
  EXPECT(parse_with(true, false, "--flag", NULL) == CLI_ERROR, "missing required option");
  EXPECT(parse_with(true, false, "--str", "x", NULL) == CLI_OK, "required option given");
  EXPECT(parse_with(true, false, "--nope", "--help", NULL) == CLI_HELP, "--help wins over errors");
  EXPECT(OK("-h") == false && parse_with(false, false, "-h", NULL) == CLI_HELP, "-h");
  EXPECT(OK("--benchmark_filter=x", "--flag", "--benchmark_repetitions=3") && g_pass.count == 2 &&
             strcmp(g_pass.items[1], "--benchmark_repetitions=3") == 0,
         "pass-through options kept verbatim and in order");
  EXPECT(cli_exit_code(CLI_HELP) == 0 && cli_exit_code(CLI_ERROR) == 2, "exit codes");
  int64_t v;
  EXPECT(cli_parse_i64("12", 0, 10, &v) == false, "cli_parse_i64 range");
  double dv;
  EXPECT(cli_parse_double("1e400", &dv) == false, "cli_parse_double overflow");
  EXPECT(cli_parse_double("1e-400", &dv) == true,
         "cli_parse_double underflow to 0/denormal is fine");

  return test_finish("test_cli_args");
}
