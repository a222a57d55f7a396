// SPDX-License-Identifier: MIT
// cp_kernel.h — which kernel an attnbench-mpi run uses (docs/mpi.md): a name, or a
// preference list resolved on this CPU. MPI-free (attncp), so it is unit-tested alone.
#pragma once

#include <stdbool.h>
#include <stddef.h>

// The kernels a run tries when none is named, in order: the first available here runs.
#define CP_DEFAULT_KERNELS "flash__avx512, flash__avx2, flash__neon"

// The kernel of a run from `list`, a kernel name or a comma-separated preference list
// ("flash__avx512, flash__avx2"): the first name available on this CPU, into out. NULL or
// "": CP_DEFAULT_KERNELS, whose names this build may lack. Each rank picks for its own
// CPU (on nodes of different CPUs, name one kernel). False with one line in err: a name of
// a given list that no kernel has (a typo is never skipped), an empty list, or no name
// available here (each one's reason).
bool cp_pick_kernel(const char *list, char *out, size_t out_len, char *err, size_t err_len);

// The kernel of a run that names none: the first of CP_DEFAULT_KERNELS available here, or
// "" when none is (the run's validation then says so).
void cp_default_kernel(char *out, size_t out_len);
