// SPDX-License-Identifier: MIT
// cp_kernel.c — cp_pick_kernel (cp_kernel.h).
#include "mpi/cp_kernel.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "attn.h"

// Name i (from 0) of the comma-separated list s, blanks trimmed, into name; empty items
// are not counted. 0: no name i; -1: name i is longer than a kernel name can be.
static int list_name(const char *s, int i, char name[ATTN_KERNEL_NAME_MAX + 1]) {
  while (*s) {
    const char *e = strchr(s, ',');
    if (!e) e = s + strlen(s);
    const char *a = s, *b = e;
    while (a < b && isspace((unsigned char)*a)) a++;
    while (b > a && isspace((unsigned char)b[-1])) b--;
    s = *e ? e + 1 : e;
    if (a == b || i-- > 0) continue;
    if ((size_t)(b - a) > ATTN_KERNEL_NAME_MAX) return -1;
    memcpy(name, a, (size_t)(b - a));
    name[b - a] = '\0';
    return 1;
  }
  return 0;
}

bool cp_pick_kernel(const char *list, char *out, size_t out_len, char *err, size_t err_len) {
  const bool given = list && *list;
  const char *s = given ? list : CP_DEFAULT_KERNELS;
  char name[ATTN_KERNEL_NAME_MAX + 1];
  int n = 0, r;
  // Every name of a given list first: a typo is refused even after an available name.
  for (; (r = list_name(s, n, name)) != 0; n++) {
    if (r < 0) {
      snprintf(err, err_len, "a kernel name in '%s' is too long", s);
      return false;
    }
    if (given && !attn_kernel_find(name)) {
      snprintf(err, err_len, "unknown kernel '%s' (attnbench list)", name);
      return false;
    }
  }
  if (!n) {
    snprintf(err, err_len, "no kernel named");
    return false;
  }
  char why[384] = "";
  size_t wl = 0;
  for (int i = 0; i < n; i++) {
    list_name(s, i, name);
    const attn_kernel *k = attn_kernel_find(name);
    if (!k) continue;  // a default this build does not have
    char reason[160];
    if (attn_kernel_available(k, reason, sizeof reason)) {
      snprintf(out, out_len, "%s", name);
      return true;
    }
    if (wl < sizeof why) {
      const int w = snprintf(why + wl, sizeof why - wl, "%s%s: %s", wl ? "; " : "", name, reason);
      wl += w > 0 ? (size_t)w : 0;
    }
  }
  snprintf(err, err_len, "none of '%s' is available here (%s)", s, why);
  return false;
}

void cp_default_kernel(char *out, size_t out_len) {
  char e[8];
  if (!cp_pick_kernel(NULL, out, out_len, e, sizeof e) && out_len) out[0] = '\0';
}
