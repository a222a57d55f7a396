// SPDX-License-Identifier: MIT
// info_parallel.h — the parallel-execution section of `attnbench info`: cores and
// caches (hwloc), the default thread count and binding, the tile sizes the tile rule
// picks, and (when measure) the read bandwidth probe.
#pragma once

#include <stdbool.h>
#include <stdio.h>

void attn_info_parallel(FILE *out, bool measure);
