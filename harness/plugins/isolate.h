// SPDX-License-Identifier: MIT
//
// isolate.h — running kernels in a forked child process, so that a kernel that crashes
// (any signal), aborts, calls exit() (with any code, 0 included) or never returns ends as
// a named verdict of that kernel instead of taking the command down with it
// (docs/reliability.md, "Kernel isolation").
//
// A worker is a child forked from the command; it runs a function that writes fixed-size
// records to a pipe and ends with attn_worker_done (a completion record, then _exit(0)).
// The parent reads the records with a per-record timeout. The worker ended normally only
// when the completion record arrived: EOF without it is a kernel that ended the process
// (attn_worker_end names how), a timeout is a kernel that did not return (the worker is
// killed with SIGKILL). A worker never outlives the command: on Linux it gets SIGKILL when
// the thread that forked it ends (PR_SET_PDEATHSIG; workers are forked by the main
// thread), elsewhere it ends at its next record, the pipe being closed.
//
// OpenMP: GNU libgomp cannot run a parallel region in a child forked after the parent
// ran one (the child waits forever for the parent's thread pool). Callers therefore run
// every isolated kernel before the parent's first parallel region; the child binds its
// own threads.
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "attn.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum attn_isolate_mode {
  ATTN_ISOLATE_PLUGINS = 0,  // plug-in kernels in a child, built-ins in the process
  ATTN_ISOLATE_ALL = 1,      // every kernel in a child
  ATTN_ISOLATE_NONE = 2,     // every kernel in the process (no fork; for timing)
} attn_isolate_mode;

// The command-line option --isolate=plugins|all|none and --case-timeout SECONDS.
#define ATTN_ISOLATE_DEFAULT_TIMEOUT 60.0
#define ATTN_ISOLATE_MAX_TIMEOUT 1e6  // --case-timeout takes seconds in (0, this]
// "plugins", "all", "none" → *mode. False for anything else.
bool attn_isolate_parse(const char *s, attn_isolate_mode *mode);
// Whether kernel k runs in a child under mode.
bool attn_isolate_wanted(attn_isolate_mode mode, const attn_kernel *k);

typedef struct attn_worker {
  pid_t pid;
  int fd;          // read end of the record pipe
  bool done;       // the completion record arrived
  bool timed_out;  // a read timed out (the worker was killed)
} attn_worker;

// Forks a worker that runs fn(arg, fd) with fd the write end of the record pipe; fn
// writes records with attn_worker_send and returns (the worker then sends the completion
// record and _exit(0)s). stdout and stderr are flushed first. False with a message in err
// when the pipe or the fork fails.
bool attn_worker_start(attn_worker *w, void (*fn)(void *arg, int fd), void *arg, char *err,
                       size_t err_len);
// In the worker: writes one record of size bytes (size <= 4096 - 8: one atomic write).
// A parent that went away ends the worker.
void attn_worker_send(int fd, const void *rec, size_t size);
// In the parent: the next record into rec (exactly size bytes). Returns 1 for a record,
// 0 when the worker has ended (completion record or EOF: w->done says which), -1 when
// no record came within timeout_s seconds (the worker is then killed: w->timed_out).
int attn_worker_read(attn_worker *w, void *rec, size_t size, double timeout_s);
// Reaps the worker (killing it first if it still runs) and, when it did not complete,
// writes how it ended to why: "killed by SIGSEGV (Segmentation fault)", "called
// exit(0)", "timed out after 60 s". Returns true iff it completed.
bool attn_worker_end(attn_worker *w, double timeout_s, char *why, size_t why_len);

// ── in-process guard (bench, run) ───────────────────────────────────────────────────
// Commands that time kernels or run one kernel in the process (bench, run) cannot fork
// after their first OpenMP region; they arm this guard around their kernel calls instead.
// While armed, a kernel that calls exit() (any code) or dies of SIGSEGV, SIGBUS, SIGILL,
// SIGFPE or SIGABRT ends the command with one line "attnbench <command>: kernel <names>
// called exit(N)" / "… killed by SIGSEGV", removes the temporaries and the lock file
// (fileio.h) and exits 1: never exit 0 without its output, never a stale lock. kernels
// names the kernel(s) that may be running (copied).
void attn_kernel_guard_arm(const char *command, const char *kernels);
// The same guard while a plug-in is loaded (dlopen runs its library constructors, then its
// entry point is called): "attnbench: plug-in PATH was killed by SIGSEGV while being
// loaded …" / "… called exit(N) while being loaded …", exit 1. Disarm as above.
void attn_plugin_guard_arm(const char *path);
void attn_kernel_guard_disarm(void);
// Hangs: with a watch set (timeout_s > 0, after arm), a kernel call bracketed by
// attn_kernel_guard_call_begin/_end that has not returned after timeout_s seconds ends the
// command the same way ("… did not return within N s"). The markers are two relaxed atomic
// increments (no system call in the timed loop); a watcher thread, started on the first
// watch, looks four times a second while the guard is armed and sleeps otherwise.
void attn_kernel_guard_watch(double timeout_s);
// One guarded stretch of a kernel's calls, as every command runs them: a plug-in kernel k
// gets the guard (named who; NULL: k's name) and the watch (timeout_s); a built-in kernel
// is trusted and nothing is armed. stdout is flushed first, so the lines already printed
// come before the guard's. Returns whether it armed; attn_kernel_guard_leave takes that.
bool attn_kernel_guard_enter(const char *command, const attn_kernel *k, const char *who,
                             double timeout_s);
void attn_kernel_guard_leave(bool armed);
// attn_kernel_call(...) bracketed as a watched call (attn_kernel_guard_call_begin/_end).
int attn_kernel_call_watched(const attn_kernel *k, const attn_problem *p, const attn_exec *exec,
                             const float *q, const void *kk, const void *v, float *o, char *err,
                             size_t err_len);
// attn_kernel_workspace(k, p, exec) bracketed as a call: a plug-in's workspace() is its code
// too, so the watch covers it (a memory plan asks before the first call).
size_t attn_kernel_workspace_watched(const attn_kernel *k, const attn_problem *p,
                                     const attn_exec *exec);
void attn_kernel_guard_call_begin(void);
void attn_kernel_guard_call_end(void);

#ifdef __cplusplus
}
#endif
