// SPDX-License-Identifier: MIT
//
// hugemem.h — allocation of the large buffers a timed run streams through (a bench point's
// Q/K/V/O copies, the bandwidth probe's buffer), on transparent huge pages where the OS
// offers them.
//
// Why: a decode step reads every K/V byte once. With 4 KiB pages each 4 KiB of K/V is one
// TLB entry; a context of 4096 keys × 8 heads × D128 in float32 spans 4096 pages per head
// for K alone, more than the second-level TLB holds, so the walk of every page comes back
// on every pass, and under a hypervisor each walk is a two-dimensional one (guest and host
// page tables). Measured on a Zen 4 VM (docs/design.md, "Huge pages"): dense GQA decode
// read at 27 GB/s on 4 KiB pages and 39 GB/s on 2 MiB pages, and the bandwidth probe moved
// the same way — so the probe and the kernels must use the same kind of page, and they
// both come from here. Inference engines allocate their KV caches the same way where they
// can (large pools, THP), and the baselines' inputs get the same request
// (scripts/bench-baselines).
//
// What: buffers of at least ATTN_HUGE_PAGE bytes are aligned to ATTN_HUGE_PAGE, rounded up
// to whole huge pages and given madvise(MADV_HUGEPAGE) before their first touch (the
// request matters only in the kernel's "madvise" THP mode; "always" gives huge pages
// anyway, "never" none). Smaller buffers are 64-byte aligned as before. Free with free().
// attn_thp_mode reports the mode (`info`, the results file's context).
#pragma once

#include <stddef.h>

#define ATTN_HUGE_PAGE ((size_t)2 << 20)

// A buffer of `bytes` (≥ 1), 64-byte aligned; huge-page aligned and advised from
// ATTN_HUGE_PAGE bytes up. NULL when out of memory.
void *attn_alloc_streamed(size_t bytes);

// The bracketed word of /sys/kernel/mm/transparent_hugepage/enabled ("always", "madvise",
// "never") into buf, or "unavailable" when the file cannot be read (no THP, not Linux).
const char *attn_thp_mode(char *buf, size_t len);
