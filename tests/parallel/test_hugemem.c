// SPDX-License-Identifier: MIT
// The streamed-buffer allocator (harness/machine/peak/hugemem.h): small buffers 64-byte
// aligned; buffers of 2 MiB and more huge-page aligned and advised MADV_HUGEPAGE (the
// kernel's "hg" VmFlag on the mapping that holds them, /proc/self/smaps), so bench inputs
// and the bandwidth probe stream through the same kind of page. Whether the OS then backs
// them with huge pages depends on its THP mode and free memory: reported, not asserted.
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "machine/peak/hugemem.h"
#include "test_util.h"

// The VmFlags line and AnonHugePages (kB) of the smaps entry containing p; false if none.
static int smaps_entry(const void *p, char *flags, size_t len, long *huge_kb) {
  FILE *f = fopen("/proc/self/smaps", "r");
  if (!f) return 0;
  char line[512];
  int inside = 0, found = 0;
  *huge_kb = -1;
  while (fgets(line, sizeof line, f)) {
    unsigned long lo, hi;
    if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2 && strchr(line, '-') < strchr(line, ' ')) {
      if (found) break;
      inside = (uintptr_t)p >= lo && (uintptr_t)p < hi;
      continue;
    }
    if (!inside) continue;
    if (sscanf(line, "AnonHugePages: %ld kB", huge_kb) == 1) continue;
    if (strncmp(line, "VmFlags:", 8) == 0) {
      snprintf(flags, len, "%.*s", (int)(len - 1), line + 8);
      found = 1;
    }
  }
  fclose(f);
  return found;
}

int main(void) {
  char mode[32];
  attn_thp_mode(mode, sizeof mode);
  printf("transparent huge pages: %s\n", mode);

  void *small = attn_alloc_streamed(1000);
  EXPECT(small && ((uintptr_t)small & 63) == 0, "small buffer not 64-byte aligned: %p", small);
  free(small);
  void *none = attn_alloc_streamed(0);
  EXPECT(none != NULL, "a zero-byte request must still give a buffer");
  free(none);

  const size_t bytes = ATTN_HUGE_PAGE * 3 + 4096;  // not a whole number of huge pages
  char *big = attn_alloc_streamed(bytes);
  EXPECT(big && ((uintptr_t)big & (ATTN_HUGE_PAGE - 1)) == 0, "large buffer not 2 MiB aligned: %p",
         (void *)big);
  if (big) {
    memset(big, 1, bytes);  // first touch after the advice
    char flags[512] = "";
    long huge_kb = -1;
#if defined(__linux__)
    if (strcmp(mode, "unavailable") != 0) {
      EXPECT(smaps_entry(big, flags, sizeof flags, &huge_kb), "no smaps entry for %p", (void *)big);
      EXPECT(strstr(flags, " hg") != NULL, "mapping not advised MADV_HUGEPAGE (VmFlags:%s)", flags);
      printf("VmFlags:%sAnonHugePages of the mapping: %ld kB\n", flags, huge_kb);
    }
#endif
    free(big);
  }
  EXPECT(attn_alloc_streamed(SIZE_MAX - 10) == NULL, "an impossible size must give NULL");
  return test_finish("test_hugemem");
}
