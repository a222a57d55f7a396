// SPDX-License-Identifier: MIT
// harness/fileio: messages keep their reason at any path length; what an output may
// replace (regular files, symlinks to them) and what it may not (directories, devices,
// FIFOs, dangling symlinks, any input — also through hard links and symlinks); atomic
// writes leave no temporary, and a set of outputs is written whole or not at all; the
// lock refuses a second holder naming our pid.
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io/fileio.h"
#include "test_util.h"

static char g_dir[64];

static const char *in_dir(const char *name, char *buf, size_t len) {
  snprintf(buf, len, "%s/%s", g_dir, name);
  return buf;
}

static void write_text(const char *path, const char *text) {
  FILE *f = fopen(path, "wb");
  if (!f || fputs(text, f) < 0 || fclose(f) != 0) {
    perror(path);
    exit(2);
  }
}

static bool file_is(const char *path, const char *text) {
  char buf[256] = "";
  FILE *f = fopen(path, "rb");
  if (!f) return false;
  const size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = '\0';
  return strcmp(buf, text) == 0;
}

// Names in g_dir that look like temporaries or locks.
static int leftovers(void) {
  DIR *dir = opendir(g_dir);
  int n = 0;
  for (struct dirent *e; dir && (e = readdir(dir));)
    if (strstr(e->d_name, ".tmp.") || strstr(e->d_name, ".lock")) n++;
  if (dir) closedir(dir);
  return n;
}

static void test_messages(void) {
  char err[512];
  attn_path_error(err, sizeof err, "a/b.npy", "cannot open: %s", "No such file or directory");
  EXPECT(strcmp(err, "a/b.npy: cannot open: No such file or directory") == 0, "%s", err);
  char longp[3100];
  memset(longp, 'x', sizeof longp - 1);
  longp[sizeof longp - 1] = '\0';
  memcpy(longp + sizeof longp - 7, "/o.npy", 6);
  attn_path_error(err, sizeof err, longp, "write failed: %s", "No space left on device");
  const char *tail = "/o.npy: write failed: No space left on device";
  EXPECT(strlen(err) < sizeof err && strncmp(err, "...", 3) == 0, "shortened: %.40s", err);
  EXPECT(strlen(err) > strlen(tail) && strcmp(err + strlen(err) - strlen(tail), tail) == 0,
         "the reason and the file name survive: %s", err + strlen(err) - 60);
  // A tiny buffer keeps the (cut) reason rather than the path.
  char tiny[24];
  attn_path_error(tiny, sizeof tiny, longp, "disk full");
  EXPECT(strcmp(tiny, "disk full") == 0, "%s", tiny);
}

static void test_prepare(void) {
  char p[128], q[128], err[512];
  attn_output o;
  // New file in an existing directory, and an existing regular file.
  EXPECT(attn_output_prepare(&o, in_dir("new.bin", p, sizeof p), NULL, 0, err, sizeof err), "%s",
         err);
  EXPECT(strcmp(o.target, p) == 0 && !o.through_symlink, "%s", o.target);
  write_text(in_dir("reg.bin", p, sizeof p), "old");
  EXPECT(attn_output_prepare(&o, p, NULL, 0, err, sizeof err), "%s", err);
  // Refused kinds.
  EXPECT(!attn_output_prepare(&o, g_dir, NULL, 0, err, sizeof err) && strstr(err, "is a directory"),
         "%s", err);
  EXPECT(!attn_output_prepare(&o, "/dev/null", NULL, 0, err, sizeof err) &&
             strstr(err, "is a character device"),
         "%s", err);
  EXPECT(mkfifo(in_dir("fifo", p, sizeof p), 0600) == 0, "mkfifo");
  EXPECT(!attn_output_prepare(&o, p, NULL, 0, err, sizeof err) && strstr(err, "is a FIFO"), "%s",
         err);
  EXPECT(symlink("missing.bin", in_dir("dangling", p, sizeof p)) == 0, "symlink");
  EXPECT(!attn_output_prepare(&o, p, NULL, 0, err, sizeof err) && strstr(err, "missing file"), "%s",
         err);
  EXPECT(!attn_output_prepare(&o, in_dir("no/such/dir/x", p, sizeof p), NULL, 0, err, sizeof err) &&
             strstr(err, "No such file or directory"),
         "%s", err);
  // A symlink to a regular file resolves to it.
  EXPECT(symlink("reg.bin", in_dir("link.bin", p, sizeof p)) == 0, "symlink");
  EXPECT(attn_output_prepare(&o, p, NULL, 0, err, sizeof err) && o.through_symlink &&
             strstr(o.target, "/reg.bin"),
         "%s / %s", err, o.target);
  // Inputs: the same file by path, hard link or symlink is refused.
  in_dir("input.ini", q, sizeof q);
  write_text(q, "[s]\n");
  const attn_input_file inputs[] = {{"other input", "/nonexistent"}, {"config", q}};
  EXPECT(!attn_output_prepare(&o, q, inputs, 2, err, sizeof err) &&
             strstr(err, "is the same file as the config"),
         "%s", err);
  EXPECT(link(q, in_dir("hard.ini", p, sizeof p)) == 0, "link");
  EXPECT(!attn_output_prepare(&o, p, inputs, 2, err, sizeof err) && strstr(err, "config"), "%s",
         err);
  EXPECT(symlink("input.ini", in_dir("sym.ini", p, sizeof p)) == 0, "symlink");
  EXPECT(!attn_output_prepare(&o, p, inputs, 2, err, sizeof err) && strstr(err, "config"), "%s",
         err);
  EXPECT(file_is(q, "[s]\n"), "the input is untouched");
  EXPECT(leftovers() == 0, "the probes leave no temporary");
}

static void test_write(void) {
  char p[128], err[512];
  const attn_buf parts[3] = {{"ab", 2}, {"", 0}, {"cd", 2}};
  EXPECT(attn_write_file_atomic(in_dir("w.bin", p, sizeof p), parts, 3, err, sizeof err), "%s",
         err);
  EXPECT(file_is(p, "abcd"), "the parts are concatenated");
  // Through a symlink: the target gets the data, the link stays.
  EXPECT(attn_write_file_atomic(in_dir("link.bin", p, sizeof p), parts, 1, err, sizeof err), "%s",
         err);
  struct stat st;
  EXPECT(lstat(p, &st) == 0 && S_ISLNK(st.st_mode), "the link is still a link");
  EXPECT(file_is(in_dir("reg.bin", p, sizeof p), "ab"), "its target holds the data");
  // The directory vanishes between prepare and write: an error with the reason, no file.
  char sub[128], f[160];
  in_dir("sub", sub, sizeof sub);
  EXPECT(mkdir(sub, 0700) == 0, "mkdir");
  snprintf(f, sizeof f, "%s/x.bin", sub);
  attn_output o;
  EXPECT(attn_output_prepare(&o, f, NULL, 0, err, sizeof err), "%s", err);
  EXPECT(rmdir(sub) == 0, "rmdir");
  EXPECT(!attn_output_write(&o, parts, 1, err, sizeof err) && strstr(err, "No such file"), "%s",
         err);
  EXPECT(leftovers() == 0, "no temporary left");
}

// A set (run's O and LSE) is written whole or not at all: when the second target turns
// into a FIFO after prepare, the first keeps its old contents and no temporary is left;
// a set that can be written replaces both.
static void test_write_set(void) {
  char po[128], pl[128], err[512];
  write_text(in_dir("set_o.npy", po, sizeof po), "old o");
  write_text(in_dir("set_lse.npy", pl, sizeof pl), "old lse");
  attn_output o, l;
  EXPECT(attn_output_prepare(&o, po, NULL, 0, err, sizeof err) &&
             attn_output_prepare(&l, pl, NULL, 0, err, sizeof err),
         "%s", err);
  const attn_buf po_parts[1] = {{"new o", 5}}, pl_parts[1] = {{"new lse", 7}};
  const attn_output *outs[2] = {&o, &l};
  const attn_buf *parts[2] = {po_parts, pl_parts};
  const size_t n_parts[2] = {1, 1};
  EXPECT(unlink(pl) == 0 && mkfifo(pl, 0600) == 0, "LSE target replaced by a FIFO");
  EXPECT(!attn_output_write_set(outs, parts, n_parts, 2, err, sizeof err) &&
             strstr(err, "is now a FIFO"),
         "the set is refused: '%s'", err);
  EXPECT(file_is(po, "old o"), "O untouched when the LSE cannot be written");
  EXPECT(leftovers() == 0, "no temporary left");
  EXPECT(unlink(pl) == 0, "remove the FIFO");
  EXPECT(attn_output_write_set(outs, parts, n_parts, 2, err, sizeof err), "%s", err);
  EXPECT(file_is(po, "new o") && file_is(pl, "new lse"), "both replaced");
  EXPECT(leftovers() == 0, "no temporary left");
}

static void test_lock(void) {
  char p[128], err[512];
  attn_output a, b;
  in_dir("res.json", p, sizeof p);
  EXPECT(
      attn_output_prepare(&a, p, NULL, 0, err, sizeof err) && attn_output_lock(&a, err, sizeof err),
      "%s", err);
  char lockp[160];
  snprintf(lockp, sizeof lockp, "%s.lock", p);
  EXPECT(access(lockp, F_OK) == 0, "the lock file exists while held");
  char pid[64];
  snprintf(pid, sizeof pid, "(pid %ld;", (long)getpid());
  EXPECT(attn_output_prepare(&b, p, NULL, 0, err, sizeof err), "%s", err);
  EXPECT(!attn_output_lock(&b, err, sizeof err) && strstr(err, pid), "second holder refused: %s",
         err);
  attn_output_unlock(&a);
  EXPECT(access(lockp, F_OK) != 0, "unlock removes the lock file");
  EXPECT(attn_output_lock(&b, err, sizeof err), "after unlock it can be taken: %s", err);
  attn_output_unlock(&b);
  EXPECT(leftovers() == 0, "no lock left");
}

int main(void) {
  snprintf(g_dir, sizeof g_dir, "/tmp/attnbench-fileio-XXXXXX");
  if (!mkdtemp(g_dir)) {
    perror("mkdtemp");
    return 2;
  }
  test_messages();
  test_prepare();
  test_write();
  test_write_set();
  test_lock();
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
  if (system(cmd) != 0) fprintf(stderr, "note: could not remove %s\n", g_dir);
  return test_finish("test_fileio");
}
