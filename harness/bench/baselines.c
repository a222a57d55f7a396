// SPDX-License-Identifier: MIT
// External baselines for `attnbench bench` (--export-inputs, --baselines): the sweep's
// inputs are exported first (bench/inputs.h); after the sweep, scripts/bench-baselines
// (Python, outside this binary: the core needs no Python) runs each external baseline on
// those very files and adds it to the results file. The script is looked up in order:
// $ATTNBENCH_BENCH_BASELINES; <dir of this binary>/../share/attnbench/scripts/
// bench-baselines (an installed attnbench); ATTNBENCH_SOURCE_DIR/scripts/bench-baselines
// (the source tree this binary was built from).
#define _POSIX_C_SOURCE 200809L
#include "bench/baselines.h"

#include <errno.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench/inputs.h"
#include "common/cli_args.h"  // exit codes
#include "io/fileio.h"
#include "machine/placement.h"

#ifndef ATTNBENCH_SOURCE_DIR
#define ATTNBENCH_SOURCE_DIR ""
#endif

static bool is_file(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

static bool self_exe(char *buf, size_t len) {
  const ssize_t n = readlink("/proc/self/exe", buf, len - 1);
  if (n <= 0) return false;
  buf[n] = '\0';
  return true;
}

// Returns false after a message naming every place looked at.
static bool find_baselines_script(char *buf, size_t len) {
  char tried[3][ATTN_OUT_PATH_MAX + 64];
  int n = 0;
  const char *env = getenv("ATTNBENCH_BENCH_BASELINES");
  if (env && *env) {
    snprintf(buf, len, "%s", env);
    if (is_file(buf)) return true;
    fprintf(stderr, "attnbench bench: ATTNBENCH_BENCH_BASELINES=%s is not a file\n", env);
    return false;
  }
  char exe[ATTN_OUT_PATH_MAX];
  if (self_exe(exe, sizeof exe)) {
    char *slash = strrchr(exe, '/');
    if (slash) *slash = '\0';
    snprintf(tried[n++], sizeof tried[0], "%s/../share/attnbench/scripts/bench-baselines", exe);
  }
  if (ATTNBENCH_SOURCE_DIR[0])
    snprintf(tried[n++], sizeof tried[0], "%s/scripts/bench-baselines", ATTNBENCH_SOURCE_DIR);
  for (int i = 0; i < n; i++) {
    const size_t n_chars = strlen(tried[i]);
    if (n_chars < len && is_file(tried[i])) {
      memcpy(buf, tried[i], n_chars + 1);
      return true;
    }
  }
  fprintf(stderr,
          "attnbench bench: --baselines: cannot find scripts/bench-baselines (looked at %s%s%s); "
          "set ATTNBENCH_BENCH_BASELINES to its path\n",
          n > 0 ? tried[0] : "nothing", n > 1 ? " and " : "", n > 1 ? tried[1] : "");
  return false;
}

// The script being waited for, and the first SIGTERM or SIGHUP that reached this process
// meanwhile (0: none).
static volatile sig_atomic_t g_child;  // a pid_t
static volatile sig_atomic_t g_forwarded, g_sent;

// SIGTERM or SIGHUP while the script runs (async-signal-safe; any thread may take it): the
// first is passed on as SIGINT, which the script treats as Ctrl-C (it records the points it
// has timed and ends); a second kills it. The waiting thread then cleans up as usual, so
// the script never outlives this process or the inputs it reads.
// One that arrives before the script's pid is known is passed on by spawn_wait once it is.
static void forward_to_child(int sig) {
  const pid_t child = (pid_t)g_child;
  if (g_forwarded) {
    if (child > 0) kill(child, SIGKILL);
    return;
  }
  g_forwarded = sig;
  if (child > 0) g_sent = 1, kill(child, SIGINT);
}

// Runs argv (argv[0] found on PATH) and waits. Returns its exit status, or -1 after a
// message if it could not be started or did not exit normally. *stopped_by: the SIGTERM or
// SIGHUP passed on to it meanwhile (0: none).
static int spawn_wait(char *const argv[], int *stopped_by) {
  fflush(stdout);
  fflush(stderr);
  pid_t pid;
  extern char **environ;
  *stopped_by = 0;
  // The sweep pinned this thread to one core (placement.h); the child would inherit that
  // and run every framework's threads on it.
  (void)attn_placement_unbind();
  // Ctrl-C reaches the script too (the terminal's process group): it records what it has
  // and ends, and this process, ignoring SIGINT meanwhile, then cleans up as usual.
  // SIGTERM and SIGHUP, which may reach this process alone, are passed on
  // (forward_to_child). The script starts with the default actions whatever this process
  // has installed.
  posix_spawnattr_t attr;
  sigset_t dflt;
  sigemptyset(&dflt);
  sigaddset(&dflt, SIGINT), sigaddset(&dflt, SIGTERM), sigaddset(&dflt, SIGHUP);
  posix_spawnattr_init(&attr);
  posix_spawnattr_setsigdefault(&attr, &dflt);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGDEF);
  struct sigaction ign, fwd, old[3];
  static const int kSigs[3] = {SIGINT, SIGTERM, SIGHUP};
  memset(&ign, 0, sizeof ign);
  ign.sa_handler = SIG_IGN;
  sigemptyset(&ign.sa_mask);
  memset(&fwd, 0, sizeof fwd);
  fwd.sa_handler = forward_to_child;
  sigemptyset(&fwd.sa_mask);
  sigaddset(&fwd.sa_mask, SIGTERM), sigaddset(&fwd.sa_mask, SIGHUP);
  g_child = 0, g_forwarded = 0, g_sent = 0;
  sigaction(SIGINT, &ign, &old[0]);
  sigaction(SIGTERM, &fwd, &old[1]);
  sigaction(SIGHUP, &fwd, &old[2]);
  const int err = posix_spawnp(&pid, argv[0], NULL, &attr, argv, environ);
  posix_spawnattr_destroy(&attr);
  int status = 0, werr = 0;
  if (err == 0) {
    g_child = pid;
    if (g_forwarded && !g_sent) g_sent = 1, kill(pid, SIGINT);  // arrived while spawning
    while (waitpid(pid, &status, 0) < 0 && (werr = errno) == EINTR) werr = 0;
    g_child = 0;
  }
  for (int i = 0; i < 3; i++) sigaction(kSigs[i], &old[i], NULL);
  *stopped_by = g_forwarded;
  if (err != 0) {
    fprintf(stderr, "attnbench bench: cannot start %s: %s\n", argv[0], strerror(err));
    return -1;
  }
  if (werr != 0) {
    fprintf(stderr, "attnbench bench: waiting for %s: %s\n", argv[1], strerror(werr));
    return -1;
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (*stopped_by) return -1;  // killed by the second signal: the caller says so
  fprintf(stderr, "attnbench bench: %s was killed by signal %d\n", argv[1],
          WIFSIGNALED(status) ? WTERMSIG(status) : 0);
  return -1;
}

// "python3 SCRIPT ARGS… [--venv DIR] [--require] [--baselines LIST]" into argv (LIST
// omitted for "all").
// *stopped_by as spawn_wait's.
static int run_script(const attn_baselines_run *br, const char *const *args, size_t n_args,
                      int *stopped_by) {
  const char *list = br->list;
  char *argv[20];
  size_t n = 0;
  argv[n++] = "python3";
  argv[n++] = (char *)br->script;
  for (size_t i = 0; i < n_args && n < 12; i++) argv[n++] = (char *)args[i];
  if (br->venv) {
    argv[n++] = "--venv";
    argv[n++] = (char *)br->venv;
  }
  if (br->require) argv[n++] = "--require";
  if (strcmp(list, "all") != 0) {
    argv[n++] = "--baselines";
    argv[n++] = (char *)list;
  }
  argv[n] = NULL;
  return spawn_wait(argv, stopped_by);
}

// The script was stopped by SIGTERM or SIGHUP passed on to it (spawn_wait): the message,
// and the exit code of a process ended by that signal.
static int stopped(int sig, const char *when) {
  fprintf(stderr, "attnbench bench: %s %s\n", sig == SIGTERM ? "SIGTERM" : "SIGHUP", when);
  return 128 + sig;
}

// Before the sweep: the script, this binary, the pre-flight (Python environment and each
// named baseline installed), the export. Returns -1 to go on, else the exit code.
int attn_baselines_prepare(attn_baselines_run *br, const attn_bench_plan *plan) {
  if (br->list) {
    if (!find_baselines_script(br->script, sizeof br->script)) return ATTNBENCH_EXIT_USAGE;
    if (!self_exe(br->exe, sizeof br->exe)) {
      fprintf(stderr, "attnbench bench: --baselines: cannot resolve /proc/self/exe\n");
      return ATTNBENCH_EXIT_FAILURE;
    }
    // 0: ready; 3: nothing installed and none named (a note says how to install them).
    const char *args[] = {"--preflight"};
    int sig = 0;
    const int rc = run_script(br, args, 1, &sig);
    if (sig) return stopped(sig, "before the sweep");
    if (rc != 0 && rc != 3) {
      fprintf(stderr, "attnbench bench: --baselines %s: not ready (see above); nothing was run\n",
              br->list);
      return ATTNBENCH_EXIT_FAILURE;
    }
    br->ready = rc == 0;
  }
  if (!br->export_dir && !br->ready) return -1;
  if (br->export_dir) {
    snprintf(br->dir, sizeof br->dir, "%s", br->export_dir);
  } else {
    const char *tmp = getenv("TMPDIR");
    snprintf(br->dir, sizeof br->dir, "%s/attnbench-inputs.XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(br->dir)) {
      fprintf(stderr, "attnbench bench: cannot create a directory for the inputs (%s): %s\n",
              br->dir, strerror(errno));
      return ATTNBENCH_EXIT_FAILURE;
    }
    br->temporary = true;
    attn_fileio_live_dir(br->dir);  // removed by a signal's handler or a kernel's crash too
  }
  char err[ATTN_OUT_PATH_MAX + 512];
  if (!attn_bench_export_inputs(plan, br->dir, err, sizeof err)) {
    fprintf(stderr, "attnbench bench: --export-inputs: %s\n", err);
    if (br->temporary) attn_fileio_remove_live_dir();
    return ATTNBENCH_EXIT_FAILURE;
  }
  if (!br->quiet) fprintf(stderr, "inputs of %zu points -> %s/index.json\n", plan->count, br->dir);
  return -1;
}

// After the sweep: the baselines into the results file. Returns the script's verdict
// (0 ok, 1 something failed).
int attn_baselines_finish(attn_baselines_run *br, const char *out) {
  int rc = ATTNBENCH_EXIT_OK;
  if (br->ready && out && is_file(out)) {
    const char *args[] = {out, "--inputs", br->dir, "--attnbench", br->exe};
    int sig = 0;
    const int st = run_script(br, args, 5, &sig);
    rc = sig         ? stopped(sig,
                               "while the baselines ran; the results file keeps the points "
                                       "written so far")
         : st == 0   ? ATTNBENCH_EXIT_OK
         : st == 130 ? 130
                     : ATTNBENCH_EXIT_FAILURE;
  } else if (br->list && !br->ready) {  // 'all' with nothing installed: said at the end too
    fprintf(stderr,
            "baselines: none ran (none installed; the notes before the sweep say why; "
            "scripts/setup-baselines installs them)\n");
  }
  if (br->temporary) attn_fileio_remove_live_dir();
  return rc;
}

void attn_baselines_discard(attn_baselines_run *br) {
  if (br->temporary) attn_fileio_remove_live_dir();
}
