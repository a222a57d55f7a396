// SPDX-License-Identifier: MIT
// Kernels in a forked child (isolate.h). Record framing: every record is preceded by an
// 8-byte header {magic, size}; the completion record is a header with size 0.
#define _GNU_SOURCE  // on_exit: the status a kernel passed to exit()
#include "plugins/isolate.h"

#include <errno.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif
#include <time.h>
#include <unistd.h>

#include "io/fileio.h"

enum { kMagic = 0x61747477, kMaxRecord = 4096 - 8 };

typedef struct rec_header {
  uint32_t magic, size;
} rec_header;

bool attn_isolate_parse(const char *s, attn_isolate_mode *mode) {
  if (!s) return false;
  if (strcmp(s, "plugins") == 0)
    *mode = ATTN_ISOLATE_PLUGINS;
  else if (strcmp(s, "all") == 0)
    *mode = ATTN_ISOLATE_ALL;
  else if (strcmp(s, "none") == 0)
    *mode = ATTN_ISOLATE_NONE;
  else
    return false;
  return true;
}

bool attn_isolate_wanted(attn_isolate_mode mode, const attn_kernel *k) {
  return mode == ATTN_ISOLATE_ALL || (mode == ATTN_ISOLATE_PLUGINS && attn_kernel_origin(k));
}

// write() all of buf; false when the pipe is gone.
static bool write_all(int fd, const void *buf, size_t n) {
  const char *p = buf;
  while (n) {
    const ssize_t w = write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w, n -= (size_t)w;
  }
  return true;
}

void attn_worker_send(int fd, const void *rec, size_t size) {
  char buf[kMaxRecord + sizeof(rec_header)];
  if (size > kMaxRecord) _exit(3);  // a caller bug: never a silent truncation
  const rec_header h = {kMagic, (uint32_t)size};
  memcpy(buf, &h, sizeof h);
  memcpy(buf + sizeof h, rec, size);
  if (!write_all(fd, buf, sizeof h + size)) _exit(4);  // the parent has gone
}

// In a worker, exit() from a kernel ends the process at once with the kernel's status:
// the parent's exit handlers (and a leak checker's, which would change the status) are
// not the worker's to run.
static void worker_on_exit(int status, void *arg) {
  (void)arg;
  _exit(status);
}

bool attn_worker_start(attn_worker *w, void (*fn)(void *arg, int fd), void *arg, char *err,
                       size_t err_len) {
  *w = (attn_worker){.pid = -1, .fd = -1};
  int fds[2];
  if (pipe(fds) != 0) {
    snprintf(err, err_len, "cannot create a pipe for a kernel worker: %s", strerror(errno));
    return false;
  }
  fflush(stdout);
  fflush(stderr);
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) {
    snprintf(err, err_len, "cannot fork a kernel worker: %s", strerror(errno));
    close(fds[0]);
    close(fds[1]);
    return false;
  }
  if (pid == 0) {
    close(fds[0]);
    // A worker never outlives the command: a command killed while its kernel hangs takes
    // the worker with it (Linux: the parent-death signal, sent when the forking thread
    // ends — workers are forked by the command's main thread; a parent that went away
    // between fork and prctl is seen by getppid). Elsewhere a worker's next send finds
    // the pipe gone and ends it.
#ifdef __linux__
    prctl(PR_SET_PDEATHSIG, SIGKILL);
#endif
    if (getppid() != parent) _exit(4);
    // The parent's clean-up handlers (temporary outputs, locks) are the parent's: a
    // signal to the worker just ends it, and the parent reports it.
    attn_fileio_release_signals();
    signal(SIGPIPE, SIG_DFL);
    on_exit(worker_on_exit, NULL);
    fn(arg, fds[1]);
    const rec_header done = {kMagic, 0};
    fflush(stdout);
    fflush(stderr);
    _exit(write_all(fds[1], &done, sizeof done) ? 0 : 4);
  }
  close(fds[1]);
  w->pid = pid;
  w->fd = fds[0];
  return true;
}

// Reads exactly n bytes before the deadline (monotonic seconds). 1 ok, 0 EOF, -1 timeout.
static int read_until(int fd, void *buf, size_t n, double deadline) {
  char *p = buf;
  while (n) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    const double left = deadline - ((double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec);
    if (left <= 0) return -1;
    struct pollfd pfd = {.fd = fd, .events = POLLIN};
    const int pr = poll(&pfd, 1, left > 1e6 ? 1000000000 : (int)ceil(left * 1000.0));
    if (pr < 0 && errno == EINTR) continue;
    if (pr == 0) return -1;
    if (pr < 0) return 0;
    const ssize_t r = read(fd, p, n);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return 0;
    p += r, n -= (size_t)r;
  }
  return 1;
}

int attn_worker_read(attn_worker *w, void *rec, size_t size, double timeout_s) {
  if (w->done || w->fd < 0) return 0;
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  const double deadline = (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec + timeout_s;
  rec_header h;
  int rc = read_until(w->fd, &h, sizeof h, deadline);
  if (rc == 1 && (h.magic != kMagic || (h.size != 0 && h.size != size))) rc = 0;  // garbage
  if (rc == 1 && h.size == 0) {
    w->done = true;
    return 0;
  }
  if (rc == 1) rc = read_until(w->fd, rec, size, deadline);
  if (rc < 0) {
    w->timed_out = true;
    kill(w->pid, SIGKILL);
  }
  return rc;
}

// "SIGSEGV" for the usual signals, NULL for others (async-signal-safe: a table lookup).
static const char *signal_abbrev(int sig) {
  static const struct {
    int sig;
    const char *name;
  } kNames[] = {{SIGSEGV, "SIGSEGV"}, {SIGBUS, "SIGBUS"},   {SIGILL, "SIGILL"},
                {SIGFPE, "SIGFPE"},   {SIGABRT, "SIGABRT"}, {SIGKILL, "SIGKILL"},
                {SIGTERM, "SIGTERM"}, {SIGINT, "SIGINT"},   {SIGTRAP, "SIGTRAP"},
                {SIGSYS, "SIGSYS"},   {SIGPIPE, "SIGPIPE"}, {SIGXCPU, "SIGXCPU"}};
  for (size_t i = 0; i < sizeof kNames / sizeof kNames[0]; i++)
    if (kNames[i].sig == sig) return kNames[i].name;
  return NULL;
}

// "SIGSEGV", or "signal N".
static void signal_name(int sig, char *buf, size_t len) {
  const char *a = signal_abbrev(sig);
  if (a)
    snprintf(buf, len, "%s", a);
  else
    snprintf(buf, len, "signal %d", sig);
}

bool attn_worker_end(attn_worker *w, double timeout_s, char *why, size_t why_len) {
  if (w->pid <= 0) return false;
  if (!w->done) kill(w->pid, SIGKILL);  // a worker that stopped early may still run
  int status = 0;
  while (waitpid(w->pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (w->fd >= 0) close(w->fd);
  w->fd = -1;
  w->pid = -1;
  if (w->done) return true;
  if (w->timed_out) {
    snprintf(why, why_len, "timed out after %g s (killed; --case-timeout sets the limit)",
             timeout_s);
  } else if (WIFSIGNALED(status)) {
    char name[32];
    signal_name(WTERMSIG(status), name, sizeof name);
    if (WTERMSIG(status) == SIGKILL)
      snprintf(why, why_len, "killed by %s (ended the process without completing)", name);
    else
      snprintf(why, why_len, "killed by %s (%s)", name, strsignal(WTERMSIG(status)));
  } else if (WIFEXITED(status)) {
    snprintf(why, why_len, "called exit(%d): the kernel ended the process", WEXITSTATUS(status));
  } else {
    snprintf(why, why_len, "ended abnormally (wait status 0x%x)", (unsigned)status);
  }
  return false;
}

// ── the in-process guard ────────────────────────────────────────────────────────────

static volatile sig_atomic_t g_armed;
static char g_guard_prefix[4096];  // "attnbench run: kernel mis_exit0" (and check's case text)
static const char *g_guard_outcome = "; nothing written, temporaries and lock removed\n";
static const char *g_guard_exit_note = " (the kernel ended the process)";
static const int kGuardSignals[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT};

static void guard_write(const char *s) {
  (void)!write(STDERR_FILENO, s, strlen(s));
}

static void guard_on_signal(int sig) {  // async-signal-safe calls only
  const char *name = signal_abbrev(sig);
  guard_write(g_guard_prefix);
  guard_write(" was killed by ");
  guard_write(name ? name : "a signal");
  guard_write(g_guard_outcome);
  attn_fileio_remove_live();
  _exit(1);
}

static void guard_on_exit(int status, void *arg) {
  (void)arg;
  if (!g_armed) return;
  char msg[96];
  snprintf(msg, sizeof msg, " called exit(%d)", status);
  guard_write(g_guard_prefix);
  guard_write(msg);
  guard_write(g_guard_exit_note);
  guard_write(g_guard_outcome);
  attn_fileio_remove_live();
  _exit(1);
}

// The handlers in place before the guard was armed (a plug-in's own, a sanitizer's):
// disarming puts them back.
static struct sigaction g_saved[sizeof kGuardSignals / sizeof kGuardSignals[0]];
static bool g_saved_set;

// Arms the guard: messages are prefix + what happened + exit_note (exit() only) + outcome.
static void guard_arm(const char *outcome, const char *exit_note) {
  static bool registered;
  if (!registered) registered = on_exit(guard_on_exit, NULL) == 0;
  g_guard_outcome = outcome;
  g_guard_exit_note = exit_note;
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = guard_on_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESETHAND | SA_NODEFER;
  for (size_t i = 0; i < sizeof kGuardSignals / sizeof kGuardSignals[0]; i++)
    sigaction(kGuardSignals[i], &sa, g_saved_set ? NULL : &g_saved[i]);
  g_saved_set = true;
  g_armed = 1;
}

void attn_kernel_guard_arm(const char *command, const char *kernels) {
  snprintf(g_guard_prefix, sizeof g_guard_prefix, "attnbench %s: kernel %s", command, kernels);
  // bench saves its results file after every point (atomic replace), so it keeps the
  // points finished before the kernel ended the process.
  guard_arm(strcmp(command, "bench") == 0
                ? "; the results file keeps the points finished before (if any), "
                  "temporaries and lock removed\n"
                : "; nothing written, temporaries and lock removed\n",
            " (the kernel ended the process)");
}

void attn_plugin_guard_arm(const char *path) {
  snprintf(g_guard_prefix, sizeof g_guard_prefix, "attnbench: plug-in %s", path);
  guard_arm(" while being loaded (in a library constructor or " ATTN_PLUGIN_ENTRY
            "()); no command ran\n",
            "");
}

void attn_kernel_guard_disarm(void) {
  g_armed = 0;
  for (size_t i = 0; g_saved_set && i < sizeof kGuardSignals / sizeof kGuardSignals[0]; i++)
    sigaction(kGuardSignals[i], &g_saved[i], NULL);
  g_saved_set = false;
}

// ── the in-process hang watch ───────────────────────────────────────────────────────
// g_call_seq is odd while a bracketed call runs; the watcher remembers the odd value it
// first saw and when, and ends the command once that same call has run timeout_s seconds.

static atomic_ulong g_call_seq;
static _Atomic double g_watch_timeout;  // seconds; 0: no watch

void attn_kernel_guard_call_begin(void) {
  atomic_fetch_add_explicit(&g_call_seq, 1, memory_order_relaxed);
}

void attn_kernel_guard_call_end(void) {
  atomic_fetch_add_explicit(&g_call_seq, 1, memory_order_relaxed);
}

bool attn_kernel_guard_enter(const char *command, const attn_kernel *k, const char *who,
                             double timeout_s) {
  if (!attn_kernel_origin(k)) return false;
  fflush(stdout);
  attn_kernel_guard_arm(command, who ? who : k->name);
  attn_kernel_guard_watch(timeout_s);
  return true;
}

void attn_kernel_guard_leave(bool armed) {
  if (armed) attn_kernel_guard_disarm();
}

int attn_kernel_call_watched(const attn_kernel *k, const attn_problem *p, const attn_exec *exec,
                             const float *q, const void *kk, const void *v, float *o, char *err,
                             size_t err_len) {
  attn_kernel_guard_call_begin();
  const int rc = attn_kernel_call(k, p, exec, q, kk, v, o, err, err_len);
  attn_kernel_guard_call_end();
  return rc;
}

size_t attn_kernel_workspace_watched(const attn_kernel *k, const attn_problem *p,
                                     const attn_exec *exec) {
  attn_kernel_guard_call_begin();
  const size_t bytes = attn_kernel_workspace(k, p, exec);
  attn_kernel_guard_call_end();
  return bytes;
}

static double monotonic_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void *watch_main(void *arg) {
  (void)arg;
  unsigned long seen = 0;
  double since = 0;
  const struct timespec quarter = {.tv_sec = 0, .tv_nsec = 250000000L};
  for (;;) {
    nanosleep(&quarter, NULL);
    const double limit = atomic_load(&g_watch_timeout);
    const unsigned long seq = atomic_load_explicit(&g_call_seq, memory_order_relaxed);
    if (!g_armed || limit <= 0 || !(seq & 1u)) {
      seen = 0;
      continue;
    }
    const double now = monotonic_seconds();
    if (seq != seen) {
      seen = seq;
      since = now;
      continue;
    }
    if (now - since < limit) continue;
    char msg[160];
    snprintf(msg, sizeof msg, " did not return within %g s (a hang; --case-timeout sets the limit)",
             limit);
    guard_write(g_guard_prefix);
    guard_write(msg);
    guard_write(g_guard_outcome);
    attn_fileio_remove_live();
    _exit(1);
  }
  return NULL;
}

void attn_kernel_guard_watch(double timeout_s) {
  static bool started;
  atomic_store(&g_watch_timeout, timeout_s > 0 ? timeout_s : 0);
  if (started || timeout_s <= 0) return;
  pthread_t t;
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  started = pthread_create(&t, &attr, watch_main, NULL) == 0;
  pthread_attr_destroy(&attr);
}
