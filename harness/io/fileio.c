// SPDX-License-Identifier: MIT
// Output files: validation, atomic replacement, the lock, signal cleanup (see fileio.h).
#define _DEFAULT_SOURCE  // flock (BSD/Linux; not POSIX), realpath
#include "io/fileio.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

// ── messages ────────────────────────────────────────────────────────────────────────

bool attn_path_verror(char *err, size_t len, const char *path, const char *fmt, va_list ap) {
  if (!err || !len) return false;
  if (!path) path = "(null)";
  va_list ap2;
  va_copy(ap2, ap);
  int r = vsnprintf(NULL, 0, fmt, ap2);
  va_end(ap2);
  if (r < 0) r = 0;
  const size_t plen = strlen(path);
  // Bytes left for the "<path>: " prefix once the reason and the NUL are placed.
  const size_t room = len > (size_t)r + 1 ? len - 1 - (size_t)r : 0;
  size_t used = 0;
  enum { kMinTail = 16 };
  if (plen + 2 <= room) {
    used = (size_t)snprintf(err, len, "%s: ", path);
  } else if (room >= 3 + kMinTail + 2) {
    // Keep the end of the path (the file name), starting on a UTF-8 character boundary.
    const char *tail = path + plen - (room - 3 - 2);
    while (*tail && ((unsigned char)*tail & 0xC0) == 0x80) tail++;
    used = (size_t)snprintf(err, len, "...%s: ", tail);
  }
  if (used >= len) used = 0;
  vsnprintf(err + used, len - used, fmt, ap);
  return false;
}

bool attn_path_error(char *err, size_t len, const char *path, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  attn_path_verror(err, len, path, fmt, ap);
  va_end(ap);
  return false;
}

// ── files being written, for the signal handler ─────────────────────────────────────
// A name is registered BEFORE the file is created and unregistered after it is renamed
// or removed, so whichever thread a signal lands on, the handler knows every temporary
// that may exist (unlinking a name not yet created is harmless: it holds our pid, so no
// other live process uses it). The slot is filled before its flag is set (release) and
// the handler reads the flag first (acquire). One writer thread.
enum { kLiveSlots = 4, kLiveCap = ATTN_OUT_PATH_MAX + 64 };
static char g_live[kLiveSlots][kLiveCap];
static atomic_int g_live_on[kLiveSlots];
static char g_sig_message[ATTN_OUT_PATH_MAX + 512];

static int live_add(const char *path) {
  for (int i = 0; i < kLiveSlots; i++) {
    if (atomic_load_explicit(&g_live_on[i], memory_order_relaxed)) continue;
    snprintf(g_live[i], kLiveCap, "%s", path);
    atomic_store_explicit(&g_live_on[i], 1, memory_order_release);
    return i;
  }
  return -1;
}

static void live_remove(int slot) {
  if (slot >= 0) atomic_store_explicit(&g_live_on[slot], 0, memory_order_release);
}

// The thread that catches the signals (and writes the outputs). A process-directed signal
// may land on any thread — e.g. an idle OpenMP worker — while this one keeps running and
// could create a temporary after the handler removed the registered names and before
// _exit. So a handler on another thread only forwards the signal here and returns; the
// cleanup then runs on the writer's own thread, between two of its steps.
static pthread_t g_writer;
static atomic_int g_writer_set;

// A directory of files the process made and removes when it ends (attn_fileio_live_dir).
static char g_live_dir[kLiveCap];
static atomic_int g_live_dir_on;

void attn_fileio_live_dir(const char *dir) {
  if (!dir) {
    atomic_store_explicit(&g_live_dir_on, 0, memory_order_release);
    return;
  }
  snprintf(g_live_dir, sizeof g_live_dir, "%s", dir);
  atomic_store_explicit(&g_live_dir_on, 1, memory_order_release);
}

// Empties and removes the live directory with async-signal-safe calls only: open, the
// getdents64 system call (readdir may allocate), unlinkat, rmdir. Entries unlinked while
// the listing is read may shift it, so passes repeat until one removes nothing.
void attn_fileio_remove_live_dir(void) {
  if (!atomic_load_explicit(&g_live_dir_on, memory_order_acquire)) return;
  static char buf[8192];  // one handler runs at a time (the signals block each other)
  const int fd = open(g_live_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  for (int pass = 0, removed = 1; fd >= 0 && removed && pass < 64; pass++) {
    removed = 0;
    lseek(fd, 0, SEEK_SET);
    long n;
    while ((n = syscall(SYS_getdents64, fd, buf, sizeof buf)) > 0)
      for (long off = 0; off < n;) {
        // struct linux_dirent64: d_ino (8 bytes), d_off (8), d_reclen (2), d_type (1), d_name
        unsigned short reclen;
        memcpy(&reclen, buf + off + 16, sizeof reclen);
        const char *name = buf + off + 19;
        if (strcmp(name, ".") != 0 && strcmp(name, "..") != 0 && unlinkat(fd, name, 0) == 0)
          removed = 1;
        off += reclen;
      }
  }
  if (fd >= 0) close(fd);
  rmdir(g_live_dir);
  atomic_store_explicit(&g_live_dir_on, 0, memory_order_release);
}

void attn_fileio_remove_live(void) {
  // async-signal-safe calls only
  for (int i = 0; i < kLiveSlots; i++)
    if (atomic_load_explicit(&g_live_on[i], memory_order_acquire)) unlink(g_live[i]);
  attn_fileio_remove_live_dir();
}

static void on_signal(int sig) {
  // async-signal-safe calls only
  if (atomic_load_explicit(&g_writer_set, memory_order_acquire) &&
      !pthread_equal(pthread_self(), g_writer)) {
    pthread_kill(g_writer, sig);
    return;
  }
  if (g_sig_message[0]) (void)!write(STDERR_FILENO, g_sig_message, strlen(g_sig_message));
  attn_fileio_remove_live();
  _exit(128 + sig);
}

static const int kSignals[] = {SIGINT, SIGTERM, SIGHUP};

void attn_fileio_catch_signals(const char *message) {
  snprintf(g_sig_message, sizeof g_sig_message, "%s", message ? message : "");
  g_writer = pthread_self();
  atomic_store_explicit(&g_writer_set, 1, memory_order_release);
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  for (size_t i = 0; i < sizeof kSignals / sizeof kSignals[0]; i++)
    sigaddset(&sa.sa_mask, kSignals[i]);  // one handler at a time
  for (size_t i = 0; i < sizeof kSignals / sizeof kSignals[0]; i++)
    sigaction(kSignals[i], &sa, NULL);
}

void attn_fileio_release_signals(void) {
  for (size_t i = 0; i < sizeof kSignals / sizeof kSignals[0]; i++) signal(kSignals[i], SIG_DFL);
}

// ── names ───────────────────────────────────────────────────────────────────────────

static uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// A fresh random 32-bit value per call (uniqueness itself comes from O_EXCL).
static unsigned random32(void) {
  static uint64_t counter;
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  int local;
  const uint64_t seed = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 30) ^
                        ((uint64_t)getpid() << 40) ^ (uint64_t)(uintptr_t)&local ^ ++counter;
  return (unsigned)(splitmix64(seed) >> 32);
}

// The directory part of path ("." when there is none).
static void dir_of(const char *path, char *dir, size_t cap) {
  const char *slash = strrchr(path, '/');
  if (!slash)
    snprintf(dir, cap, ".");
  else if (slash == path)
    snprintf(dir, cap, "/");
  else
    snprintf(dir, cap, "%.*s", (int)(slash - path), path);
}

// "<target>.tmp.<pid>.<random>"; a file name too long for that becomes
// "<dir>/.attnbench.tmp.<pid>.<random>" (same directory, so rename stays atomic).
static void tmp_name(const char *target, char *buf, size_t cap) {
  const char *slash = strrchr(target, '/');
  const char *base = slash ? slash + 1 : target;
  const long pid = (long)getpid();
  if (strlen(base) <= 200) {
    snprintf(buf, cap, "%s.tmp.%ld.%08x", target, pid, random32());
  } else {
    char dir[ATTN_OUT_PATH_MAX];
    dir_of(target, dir, sizeof dir);
    snprintf(buf, cap, "%s/.attnbench.tmp.%ld.%08x", dir, pid, random32());
  }
}

// Creates a new temporary next to target (O_EXCL), registered for the signal handler
// (*slot) from before it exists. Returns the fd or −1 (errno set).
static int create_tmp(const char *target, char *name, size_t cap, int *slot) {
  for (int attempt = 0; attempt < 100; attempt++) {
    tmp_name(target, name, cap);
    *slot = live_add(name);
    const int fd = open(name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd >= 0) return fd;
    const int e = errno;
    live_remove(*slot);
    *slot = -1;
    errno = e;
    if (e != EEXIST) return -1;
  }
  return -1;
}

// Removes a temporary and its registration.
static void drop_tmp(const char *name, int slot) {
  unlink(name);
  live_remove(slot);
}

// ── validation ──────────────────────────────────────────────────────────────────────

static const char *kind_of(mode_t m) {
  if (S_ISDIR(m)) return "a directory";
  if (S_ISCHR(m)) return "a character device";
  if (S_ISBLK(m)) return "a block device";
  if (S_ISFIFO(m)) return "a FIFO";
  if (S_ISSOCK(m)) return "a socket";
  return "not a regular file";
}

// Fills o->target from o->given (resolving a symlink) and checks what is there. *exists
// tells whether the target exists (then *st describes it).
static bool resolve_target(attn_output *o, struct stat *st, bool *exists, char *err, size_t len) {
  const char *path = o->given;
  *exists = false;
  o->through_symlink = false;
  if (strlen(path) >= sizeof o->target)
    return attn_path_error(err, len, path, "path too long for an output (%zu bytes, limit %d)",
                           strlen(path), ATTN_OUT_PATH_MAX - 1);
  snprintf(o->target, sizeof o->target, "%s", path);
  if (lstat(path, st) != 0) {
    if (errno == ENOENT) return true;  // a new file (its directory is probed later)
    return attn_path_error(err, len, path, "cannot use as an output: %s", strerror(errno));
  }
  if (S_ISLNK(st->st_mode)) {
    char *real = realpath(path, NULL);
    if (!real) {
      if (errno == ENOENT)
        return attn_path_error(err, len, path,
                               "is a symlink to a missing file; outputs are written through "
                               "symlinks only to existing regular files");
      return attn_path_error(err, len, path, "cannot resolve the symlink: %s", strerror(errno));
    }
    const size_t n = strlen(real);
    if (n >= sizeof o->target) {
      free(real);
      return attn_path_error(err, len, path, "symlink target path too long (%zu bytes)", n);
    }
    memcpy(o->target, real, n + 1);
    free(real);
    o->through_symlink = true;
    if (stat(o->target, st) != 0)
      return attn_path_error(err, len, path, "cannot stat the symlink's target: %s",
                             strerror(errno));
    if (!S_ISREG(st->st_mode))
      return attn_path_error(err, len, path,
                             "is a symlink to %s; outputs only replace regular files",
                             kind_of(st->st_mode));
  } else if (!S_ISREG(st->st_mode)) {
    return attn_path_error(err, len, path, "is %s; outputs only replace regular files",
                           kind_of(st->st_mode));
  }
  *exists = true;
  return true;
}

// The process's own inputs (attn_fileio_add_process_input): loaded plug-ins.
enum { kProcessInputs = 64 };
static struct {
  const char *what;
  dev_t dev;
  ino_t ino;
} g_process_inputs[kProcessInputs];
static size_t g_n_process_inputs;

bool attn_fileio_add_process_input(const char *what, const char *path) {
  struct stat st;
  if (g_n_process_inputs == kProcessInputs || !path || stat(path, &st) != 0) return false;
  g_process_inputs[g_n_process_inputs].what = what;
  g_process_inputs[g_n_process_inputs].dev = st.st_dev;
  g_process_inputs[g_n_process_inputs].ino = st.st_ino;
  g_n_process_inputs++;
  return true;
}

bool attn_output_prepare(attn_output *o, const char *path, const attn_input_file *inputs,
                         size_t n_inputs, char *err, size_t err_len) {
  memset(o, 0, sizeof *o);
  o->lock_fd = -1;
  o->given = path;
  if (!path || !*path) return attn_path_error(err, err_len, "(output)", "no output path");
  struct stat st;
  bool exists;
  if (!resolve_target(o, &st, &exists, err, err_len)) return false;
  for (size_t i = 0; exists && i < n_inputs; i++) {
    struct stat in;
    if (!inputs[i].path || stat(inputs[i].path, &in) != 0) continue;
    if (in.st_dev == st.st_dev && in.st_ino == st.st_ino)
      return attn_path_error(err, err_len, path,
                             "is the same file as the %s; refusing to overwrite an input",
                             inputs[i].what);
  }
  for (size_t i = 0; exists && i < g_n_process_inputs; i++)
    if (g_process_inputs[i].dev == st.st_dev && g_process_inputs[i].ino == st.st_ino)
      return attn_path_error(err, err_len, path,
                             "is the same file as the %s; refusing to overwrite an input",
                             g_process_inputs[i].what);
  // Probe: a temporary can be created (and removed) in the target's directory.
  char tmp[kLiveCap];
  int slot;
  const int fd = create_tmp(o->target, tmp, sizeof tmp, &slot);
  if (fd < 0)
    return attn_path_error(err, err_len, path, "cannot create a file in its directory: %s",
                           strerror(errno));
  close(fd);
  drop_tmp(tmp, slot);
  return true;
}

// The target's path with its directory resolved ("dir/name"), in out[len]; false when
// the directory cannot be resolved.
static bool resolved_target(const attn_output *o, char *out, size_t len) {
  const char *slash = strrchr(o->target, '/');
  const char *name = slash ? slash + 1 : o->target;
  char dir[ATTN_OUT_PATH_MAX];
  if (!slash)
    snprintf(dir, sizeof dir, ".");
  else if (slash == o->target)
    snprintf(dir, sizeof dir, "/");
  else
    snprintf(dir, sizeof dir, "%.*s", (int)(slash - o->target), o->target);
  char *real = realpath(dir, NULL);
  if (!real) return false;
  const int w = snprintf(out, len, "%s/%s", real, name);
  free(real);
  return w > 0 && (size_t)w < len;
}

bool attn_output_same(const attn_output *a, const attn_output *b) {
  struct stat sa, sb;
  const bool ea = stat(a->target, &sa) == 0, eb = stat(b->target, &sb) == 0;
  if (ea && eb) return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
  if (ea != eb) return false;
  char ra[ATTN_OUT_PATH_MAX + 256], rb[ATTN_OUT_PATH_MAX + 256];
  if (!resolved_target(a, ra, sizeof ra) || !resolved_target(b, rb, sizeof rb))
    return strcmp(a->target, b->target) == 0;
  return strcmp(ra, rb) == 0;
}

// ── writing ─────────────────────────────────────────────────────────────────────────

static bool write_all(int fd, const void *buf, size_t n) {
  const char *p = buf;
  while (n) {
    const ssize_t w = write(fd, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    p += w;
    n -= (size_t)w;
  }
  return true;
}

// Best effort: makes the rename durable by syncing the containing directory.
static void sync_dir_of(const char *path) {
  char dir[ATTN_OUT_PATH_MAX];
  dir_of(path, dir, sizeof dir);
  const int fd = open(dir, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  (void)fsync(fd);
  close(fd);
}

// A temporary written, synced and closed, not yet renamed over its target.
typedef struct staged {
  char tmp[kLiveCap];
  int slot;
} staged;

// Writes parts to a new temporary next to o->target, fsyncs and closes it. On failure the
// temporary is gone and err says why.
static bool stage(const attn_output *o, const attn_buf *parts, size_t n_parts, staged *t, char *err,
                  size_t err_len) {
  const char *shown = o->given ? o->given : o->target;
  const int fd = create_tmp(o->target, t->tmp, sizeof t->tmp, &t->slot);
  if (fd < 0)
    return attn_path_error(err, err_len, shown, "cannot create a temporary file next to it: %s",
                           strerror(errno));
  for (size_t i = 0; i < n_parts; i++) {
    if (parts[i].len && !write_all(fd, parts[i].data, parts[i].len)) {
      attn_path_error(err, err_len, shown, "write failed: %s", strerror(errno));
      goto fail_fd;
    }
  }
  if (fsync(fd) != 0) {
    attn_path_error(err, err_len, shown, "fsync failed: %s", strerror(errno));
    goto fail_fd;
  }
  if (close(fd) != 0) {
    attn_path_error(err, err_len, shown, "close failed: %s", strerror(errno));
    goto fail_tmp;
  }
  return true;
fail_fd:
  close(fd);
fail_tmp:
  drop_tmp(t->tmp, t->slot);
  return false;
}

// Whether o->target may still be replaced (it may have changed since prepare, e.g. into a
// FIFO).
static bool still_replaceable(const attn_output *o, char *err, size_t err_len) {
  struct stat st;
  if (lstat(o->target, &st) == 0 && !S_ISREG(st.st_mode))
    return attn_path_error(err, err_len, o->given ? o->given : o->target,
                           "is now %s; outputs only replace regular files",
                           S_ISLNK(st.st_mode) ? "a symlink" : kind_of(st.st_mode));
  return true;
}

bool attn_output_write(const attn_output *o, const attn_buf *parts, size_t n_parts, char *err,
                       size_t err_len) {
  return attn_output_write_set(&o, &parts, &n_parts, 1, err, err_len);
}

bool attn_output_write_set(const attn_output *const *outs, const attn_buf *const *parts,
                           const size_t *n_parts, size_t n, char *err, size_t err_len) {
  if (n > ATTN_OUTPUT_SET_MAX)
    return attn_path_error(err, err_len, outs[0]->target, "more than %d outputs in one set",
                           ATTN_OUTPUT_SET_MAX);
  staged t[ATTN_OUTPUT_SET_MAX];
  size_t done = 0;  // temporaries written
  for (; done < n; done++)
    if (!stage(outs[done], parts[done], n_parts[done], &t[done], err, err_len)) goto fail;
  for (size_t i = 0; i < n; i++)
    if (!still_replaceable(outs[i], err, err_len)) goto fail;
  // Every temporary is complete: the renames, one after the other.
  for (size_t i = 0; i < n; i++) {
    if (rename(t[i].tmp, outs[i]->target) != 0) {
      attn_path_error(err, err_len, outs[i]->given ? outs[i]->given : outs[i]->target,
                      "cannot rename the temporary into place: %s%s", strerror(errno),
                      i ? " (the outputs before it in the set were replaced)" : "");
      for (size_t j = i; j < n; j++) drop_tmp(t[j].tmp, t[j].slot);
      return false;
    }
    live_remove(t[i].slot);
    sync_dir_of(outs[i]->target);
  }
  return true;
fail:
  for (size_t j = 0; j < done; j++) drop_tmp(t[j].tmp, t[j].slot);
  return false;
}

bool attn_write_file_atomic(const char *path, const attn_buf *parts, size_t n_parts, char *err,
                            size_t err_len) {
  attn_output o;
  if (!attn_output_prepare(&o, path, NULL, 0, err, err_len)) return false;
  return attn_output_write(&o, parts, n_parts, err, err_len);
}

// ── the lock ────────────────────────────────────────────────────────────────────────

bool attn_output_lock(attn_output *o, char *err, size_t err_len) {
  const char *shown = o->given ? o->given : o->target;
  const int n = snprintf(o->lock_path, sizeof o->lock_path, "%s.lock", o->target);
  if (n < 0 || (size_t)n >= sizeof o->lock_path)
    return attn_path_error(err, err_len, shown, "path too long for its lock file");
  // The holder removes the lock file when done, so after locking, make sure the name
  // still refers to the file locked (else a newcomer's file replaced it: start over).
  for (int attempt = 0; attempt < 100; attempt++) {
    const int fd = open(o->lock_path, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
    if (fd < 0)
      return attn_path_error(err, err_len, shown, "cannot create its lock file (<out>.lock): %s",
                             strerror(errno));
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
      const int e = errno;
      char pid[32] = "";
      const ssize_t got = pread(fd, pid, sizeof pid - 1, 0);
      close(fd);
      if (e != EWOULDBLOCK)
        return attn_path_error(err, err_len, shown, "cannot lock: %s", strerror(e));
      pid[got > 0 ? got : 0] = '\0';
      pid[strcspn(pid, "\n")] = '\0';
      attn_path_error(err, err_len, shown,
                      "is being written by another attnbench process (pid %s; lock "
                      "file <out>.lock); wait for it or choose another --out",
                      pid[0] ? pid : "unknown");
      errno = EWOULDBLOCK;  // held: attn_output_lock_wait tries again
      return false;
    }
    struct stat a, b;
    if (fstat(fd, &a) != 0 || stat(o->lock_path, &b) != 0 || a.st_dev != b.st_dev ||
        a.st_ino != b.st_ino) {
      close(fd);
      continue;
    }
    char line[32];
    const int len = snprintf(line, sizeof line, "%ld\n", (long)getpid());
    if (ftruncate(fd, 0) != 0 || pwrite(fd, line, (size_t)len, 0) != len) {
      const int e = errno;
      unlink(o->lock_path);
      close(fd);
      return attn_path_error(err, err_len, shown, "cannot write the lock file: %s", strerror(e));
    }
    o->lock_fd = fd;
    live_add(o->lock_path);  // the signal handler removes it too
    return true;
  }
  return attn_path_error(err, err_len, shown, "cannot lock: the lock file keeps changing");
}

void attn_output_unlock(attn_output *o) {
  if (o->lock_fd < 0) return;
  for (int i = 0; i < kLiveSlots; i++)
    if (atomic_load(&g_live_on[i]) && strcmp(g_live[i], o->lock_path) == 0) live_remove(i);
  unlink(o->lock_path);  // while still holding the lock
  close(o->lock_fd);
  o->lock_fd = -1;
}

bool attn_output_lock_wait(attn_output *o, double seconds, char *err, size_t err_len) {
  struct timespec t0, now;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (;;) {
    errno = 0;
    if (attn_output_lock(o, err, err_len)) return true;
    if (errno != EWOULDBLOCK) return false;
    clock_gettime(CLOCK_MONOTONIC, &now);
    if ((double)(now.tv_sec - t0.tv_sec) + 1e-9 * (double)(now.tv_nsec - t0.tv_nsec) >= seconds)
      return attn_path_error(err, err_len, o->given ? o->given : o->target,
                             "still locked by another attnbench process after %.0f s (lock "
                             "file %s)",
                             seconds, o->lock_path);
    const struct timespec pause = {0, 20 * 1000 * 1000};  // 20 ms
    nanosleep(&pause, NULL);
  }
}

// ── reading ─────────────────────────────────────────────────────────────────────────

bool attn_read_regular_file(const char *path, size_t max_bytes, char **data, size_t *len,
                            bool *missing, char *err, size_t err_len) {
  *data = NULL, *len = 0;
  if (missing) *missing = false;
  if (!path || !*path) return attn_path_error(err, err_len, "(input)", "no path");
  // stat before open: a FIFO or a device is refused without opening it (opening a FIFO
  // blocks until a writer comes; a device may never end).
  struct stat st;
  if (stat(path, &st) != 0) {
    if (missing) *missing = errno == ENOENT;
    return attn_path_error(err, err_len, path, "%s", strerror(errno));
  }
  if (!S_ISREG(st.st_mode))
    return attn_path_error(err, err_len, path, "is %s; expected a regular file",
                           kind_of(st.st_mode));
  if ((uintmax_t)st.st_size > (uintmax_t)max_bytes)
    return attn_path_error(err, err_len, path, "is %jd bytes, more than the %zu allowed",
                           (intmax_t)st.st_size, max_bytes);
  // The name may be swapped for a FIFO between stat and open: O_NONBLOCK keeps that open
  // from blocking, O_NOCTTY keeps a terminal from becoming ours; fstat checks again.
  const int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (fd < 0) {
    if (missing) *missing = errno == ENOENT;
    return attn_path_error(err, err_len, path, "%s", strerror(errno));
  }
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    return attn_path_error(err, err_len, path, "is %s; expected a regular file",
                           kind_of(st.st_mode));
  }
  // Read at most max_bytes + 1 bytes whatever st_size said (the file may grow, and some
  // files report size 0): one byte more than allowed is the "too large" verdict. The
  // buffer starts at st_size + 1 bytes (+ the NUL) and grows to the limit only if needed.
  size_t cap = (size_t)st.st_size < max_bytes ? (size_t)st.st_size + 1 : max_bytes + 1;
  char *buf = malloc(cap + 1);
  if (!buf) {
    close(fd);
    return attn_path_error(err, err_len, path, "out of memory reading it");
  }
  size_t n = 0;
  while (n <= max_bytes) {
    if (n == cap) {  // more than st_size said: room up to the limit
      char *grown = realloc(buf, max_bytes + 2);
      if (!grown) {
        free(buf);
        close(fd);
        return attn_path_error(err, err_len, path, "out of memory reading it");
      }
      buf = grown, cap = max_bytes + 1;
    }
    const ssize_t r = read(fd, buf + n, cap - n);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) {
      const int e = errno;
      free(buf);
      close(fd);
      return attn_path_error(err, err_len, path, "read failed: %s", strerror(e));
    }
    if (r == 0) break;
    n += (size_t)r;
  }
  close(fd);
  if (n > max_bytes) {
    free(buf);
    return attn_path_error(err, err_len, path, "is more than the %zu bytes allowed", max_bytes);
  }
  buf[n] = '\0';
  *data = buf, *len = n;
  return true;
}
