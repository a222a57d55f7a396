// SPDX-License-Identifier: MIT
//
// fileio.h — the one place that writes output files, and reads whole small inputs (libc +
// POSIX only, part of attnnpy so the tests and the cross build have it). Used by the .npy
// writer, the `bench` results writer, `tune` and the SIGINT/SIGTERM handler, so the
// temporary's name is known here only.
//
// The output contract (docs/cli.md "Files, signals and limits"):
//   * an output path may name nothing yet (its directory must exist), a regular file, or a
//     symlink that resolves to a regular file — then the TARGET is replaced and the link
//     kept ("write through"). A directory, device node, FIFO, socket or dangling symlink
//     is refused before any work;
//   * an output may not be the same file (st_dev, st_ino — through symlinks and hard
//     links) as any file the command reads;
//   * a write goes to a temporary in the target's directory named
//     "<target>.tmp.<pid>.<random>" (created with O_EXCL), is fsync'ed, renamed over the
//     target, and the directory fsync'ed. On any error the temporary is removed and the
//     target untouched; SIGINT/SIGTERM/SIGHUP remove it too (attn_fileio_catch_signals);
//   * a long-running writer (bench) holds an exclusive flock on "<target>.lock" holding
//     its pid; a second writer fails at once naming that pid (a short read-modify-write,
//     `tune` merging into the tuning file, waits for it instead: attn_output_lock_wait);
//   * a file read as a whole (the tuning file) must be a regular file of bounded size,
//     checked before it is opened, and is opened non-blocking (attn_read_regular_file).
//
// Error messages are "<path>: <reason>"; when the buffer is too small the PATH is
// shortened (its start replaced by "...") so the reason always survives.
#pragma once

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

// Longest output path handled (the resolved target; the kernel's PATH_MAX on Linux).
enum { ATTN_OUT_PATH_MAX = 4096 };

// "<path>: <reason>" into err[len], shortening path (never the reason) to fit. Returns
// false, so callers can `return attn_path_error(...)`.
bool attn_path_error(char *err, size_t len, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
bool attn_path_verror(char *err, size_t len, const char *path, const char *fmt, va_list ap);

// A file the command reads, for the "output equals an input" check.
typedef struct attn_input_file {
  const char *what;  // "--config", "Q (--q)"
  const char *path;
} attn_input_file;

typedef struct attn_output {
  const char *given;               // the path as the user gave it (for messages)
  char target[ATTN_OUT_PATH_MAX];  // the file replaced: given, or a symlink's target
  bool through_symlink;            // target came from resolving a symlink
  int lock_fd;                     // ≥ 0 while attn_output_lock holds the lock
  char lock_path[ATTN_OUT_PATH_MAX + 8];
} attn_output;

// A file the whole process reads, whatever the command (a loaded plug-in library): every
// output is then checked against it too, as against the command's own inputs. The file is
// kept by identity (device, inode) under the name `what` (a string that outlives the
// process's outputs). False when path cannot be stat'ed or the table is full.
bool attn_fileio_add_process_input(const char *what, const char *path);

// Validates `path` as an output before any work (see the contract above) and probes that
// a temporary can be created next to the target; it may be none of `inputs` nor a file of
// attn_fileio_add_process_input. On failure: false, err says why.
bool attn_output_prepare(attn_output *o, const char *path, const attn_input_file *inputs,
                         size_t n_inputs, char *err, size_t err_len);

// True when two prepared outputs name one file: the same inode when both targets exist,
// else the same path once the directory is resolved (its realpath, then the name), so
// "r.json" and "./r.json" are one file before either exists.
bool attn_output_same(const attn_output *a, const attn_output *b);

// One piece of the file's contents.
typedef struct attn_buf {
  const void *data;
  size_t len;
} attn_buf;

// Atomically replaces o->target with the concatenation of parts (see the contract).
bool attn_output_write(const attn_output *o, const attn_buf *parts, size_t n_parts, char *err,
                       size_t err_len);
// Outputs written together (`run`'s O and LSE): up to ATTN_OUTPUT_SET_MAX.
enum { ATTN_OUTPUT_SET_MAX = 3 };
// Replaces each outs[i]->target with the concatenation of parts[i][0 .. n_parts[i]), as
// one set: every temporary is written, fsync'ed and closed, and every target checked
// again, before the first rename. A failure up to there removes every temporary and
// leaves every target untouched. Only a rename failing after an earlier one succeeded
// leaves the set half replaced, and the error says so.
bool attn_output_write_set(const attn_output *const *outs, const attn_buf *const *parts,
                           const size_t *n_parts, size_t n, char *err, size_t err_len);

// prepare (no inputs) + write: the one-shot form the .npy writer uses.
bool attn_write_file_atomic(const char *path, const attn_buf *parts, size_t n_parts, char *err,
                            size_t err_len);

// Takes the exclusive lock "<target>.lock" (flock, non-blocking; the file holds our pid).
// Held: false with "in use by another attnbench (pid N)". Released by attn_output_unlock
// (which removes the lock file) or at process exit.
bool attn_output_lock(attn_output *o, char *err, size_t err_len);
void attn_output_unlock(attn_output *o);
// attn_output_lock, waiting up to `seconds` while another process holds the lock (for a
// short read-modify-write: `tune` merging its entries into the tuning file). Other
// failures return at once.
bool attn_output_lock_wait(attn_output *o, double seconds, char *err, size_t err_len);

// The input side of the same policy: reads the whole of `path`, which must be a regular
// file (or a symlink to one) of at most max_bytes. A directory, device, FIFO or socket is
// refused before it is opened (and the open is non-blocking, so a name swapped for a FIFO
// cannot hang the reader); a larger file is refused from its size, and at most
// max_bytes + 1 bytes are ever read. On success *data is malloc'ed, NUL-terminated, *len
// bytes long. On failure: false, err "<path>: <reason>", and *missing (may be NULL) tells
// whether the reason was that nothing exists at path.
bool attn_read_regular_file(const char *path, size_t max_bytes, char **data, size_t *len,
                            bool *missing, char *err, size_t err_len);

// Installs SIGINT/SIGTERM/SIGHUP handlers that write `message` (copied; may be NULL) to
// stderr, remove every temporary being written and the lock file held, and _exit(128 +
// signal). attn_fileio_release_signals restores the default actions.
void attn_fileio_catch_signals(const char *message);
void attn_fileio_release_signals(void);
// Removes every temporary being written, the lock file held and the live directory, now
// (async-signal-safe): for a process that is about to end abnormally (a kernel's crash or
// exit(), isolate.h).
void attn_fileio_remove_live(void);
// A flat directory of files this process made for itself (bench --baselines' exported
// inputs): the signal handler and attn_fileio_remove_live empty and remove it. NULL: none
// (forget it). One at a time.
void attn_fileio_live_dir(const char *dir);
// Empties and removes the live directory now and forgets it (async-signal-safe; nothing
// without one): the owner's own removal once it is done with the directory.
void attn_fileio_remove_live_dir(void);

#ifdef __cplusplus
}
#endif
