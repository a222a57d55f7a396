// SPDX-License-Identifier: MIT
// Kernel plug-ins: shared objects exporting attn_plugin_v1 (attn.h, docs/plugins.md).
#define _DEFAULT_SOURCE  // realpath (with _POSIX_C_SOURCE: strdup, stat)
#define _POSIX_C_SOURCE 200809L
#include "plugins/plugins.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "attn.h"
#include "common/cli_args.h"
#include "io/fileio.h"
#include "plugins/isolate.h"

int attn_plugin_load(const char *path, double timeout_s, char *err, size_t err_len) {
  struct stat st;
  if (!path || !*path) {
    snprintf(err, err_len, "plug-in path is empty");
    return -1;
  }
  if (stat(path, &st) != 0) {
    snprintf(err, err_len, "plug-in %s: no such file", path);
    return -1;
  }
  if (!S_ISREG(st.st_mode)) {
    snprintf(err, err_len, "plug-in %s: not a regular file", path);
    return -1;
  }
  // dlopen searches the library path for names without a '/'; a plug-in is a file.
  char *file = NULL;
  if (!strchr(path, '/')) {
    file = malloc(strlen(path) + 3);
    if (!file) {
      snprintf(err, err_len, "plug-in %s: out of memory", path);
      return -1;
    }
    memcpy(file, "./", 2);
    memcpy(file + 2, path, strlen(path) + 1);
  }
  // Loading runs the plug-in's code (library constructors, then its entry point): one
  // that crashes, calls exit() or does not return within timeout_s there ends the command
  // with the plug-in's path named (isolate.h, the in-process guard and its watch), never a
  // bare signal or a silent hang.
  attn_plugin_guard_arm(path);
  attn_kernel_guard_watch(timeout_s);
  attn_kernel_guard_call_begin();
  void *h = dlopen(file ? file : path, RTLD_NOW | RTLD_LOCAL);
  attn_kernel_guard_call_end();
  attn_kernel_guard_disarm();
  free(file);
  if (!h) {
    const char *why = dlerror();
    snprintf(err, err_len, "plug-in %s: cannot load it as a shared object: %s", path,
             why ? why : "unknown error");
    return -1;
  }
  dlerror();
  void *sym = dlsym(h, ATTN_PLUGIN_ENTRY);
  if (!sym) {
    snprintf(err, err_len, "plug-in %s: no entry point %s() (see docs/plugins.md)", path,
             ATTN_PLUGIN_ENTRY);
    dlclose(h);
    return -1;
  }
  attn_plugin_entry_fn entry;
  memcpy(&entry, &sym, sizeof entry);  // object pointer -> function pointer (POSIX)
  // The registry records the absolute path (for `list`); messages use the path as given.
  char *abs = realpath(path, NULL);
  char why[448];
  attn_plugin_guard_arm(path);
  attn_kernel_guard_call_begin();
  const attn_plugin *plugin = entry();
  attn_kernel_guard_call_end();
  attn_kernel_guard_disarm();
  const int rc = attn_registry_add(plugin, abs ? abs : path, why, sizeof why);
  free(abs);
  if (rc != ATTN_OK) {
    // why starts "plug-in <abs path>: "; restate it with the path the user gave.
    const char *detail = strstr(why, ": ");
    snprintf(err, err_len, "plug-in %s: %s", path, detail ? detail + 2 : why);
    dlclose(h);
    return -1;
  }
  // No output of this process may replace the library (fileio.h).
  if (!attn_fileio_add_process_input("plug-in library (--plugin or ATTNBENCH_PLUGINS)", path)) {
    snprintf(err, err_len, "plug-in %s: too many plug-ins, or the file is gone after loading",
             path);
    return -1;
  }
  return 0;  // stays loaded: the registry points into it
}

// The command's --case-timeout SECONDS (or --case-timeout=SECONDS) before "--", if it
// reads as a limit in (0, ATTN_ISOLATE_MAX_TIMEOUT]; otherwise the default. Loading comes before
// the command parses its options, so a bad value is refused later by the command itself.
static double load_timeout(int argc, char **argv) {
  double t = ATTN_ISOLATE_DEFAULT_TIMEOUT;
  for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++) {
    const char *v = NULL;
    if (strcmp(argv[i], "--case-timeout") == 0 && i + 1 < argc)
      v = argv[i + 1];
    else if (strncmp(argv[i], "--case-timeout=", 15) == 0)
      v = argv[i] + 15;
    char *end = NULL;
    const double x = v ? strtod(v, &end) : 0.0;
    if (v && end != v && !*end && x > 0.0 && x <= ATTN_ISOLATE_MAX_TIMEOUT) t = x;
  }
  return t;
}

int attn_plugins_from_args(int *argc, char **argv) {
  const char *paths[CLI_LIST_MAX];
  size_t n = 0;
  int out = 1;
  bool rest = false;
  const double timeout = load_timeout(*argc, argv);
  for (int i = 1; i < *argc; i++) {
    const char *a = argv[i];
    if (!rest && strcmp(a, "--") == 0) rest = true;
    const char *value = NULL;
    if (!rest && strcmp(a, "--plugin") == 0) {
      if (i + 1 >= *argc) {
        fprintf(stderr, "attnbench: --plugin needs a value (PATH of a plug-in .so)\n");
        return ATTNBENCH_EXIT_USAGE;
      }
      value = argv[++i];
    } else if (!rest && strncmp(a, "--plugin=", 9) == 0) {
      value = a + 9;
    } else {
      argv[out++] = argv[i];
      continue;
    }
    if (!*value) {
      fprintf(stderr, "attnbench: --plugin needs a value (PATH of a plug-in .so)\n");
      return ATTNBENCH_EXIT_USAGE;
    }
    if (n == CLI_LIST_MAX) {
      fprintf(stderr, "attnbench: more than %d --plugin options\n", CLI_LIST_MAX);
      return ATTNBENCH_EXIT_USAGE;
    }
    paths[n++] = value;
  }
  argv[out] = NULL;
  *argc = out;

  char err[512];
  const char *env = getenv("ATTNBENCH_PLUGINS");
  if (env && *env) {
    char *list = strdup(env);
    if (!list) {
      fprintf(stderr, "attnbench: out of memory reading ATTNBENCH_PLUGINS\n");
      return ATTNBENCH_EXIT_FAILURE;
    }
    for (char *s = list, *next; s; s = next) {
      next = strchr(s, ':');
      if (next) *next++ = '\0';
      if (!*s) continue;
      if (attn_plugin_load(s, timeout, err, sizeof err) != 0) {
        fprintf(stderr, "attnbench: %s (from ATTNBENCH_PLUGINS)\n", err);
        free(list);
        return ATTNBENCH_EXIT_FAILURE;
      }
    }
    free(list);  // the registry copied the origins
  }
  for (size_t i = 0; i < n; i++) {
    if (attn_plugin_load(paths[i], timeout, err, sizeof err) != 0) {
      fprintf(stderr, "attnbench: %s\n", err);
      return ATTNBENCH_EXIT_FAILURE;
    }
  }
  return ATTNBENCH_EXIT_OK;
}
