// SPDX-License-Identifier: MIT
// build_info.h — what CMake tells the harness about this build (the compiler, its C
// flags, the build type, the git commit), with "unknown" where a build defines none: for the
// results context (bench/context.c) and the tuning files' build identity (tunefile.c).
#pragma once

#ifndef ATTNBENCH_COMPILER
#define ATTNBENCH_COMPILER "unknown"
#endif
#ifndef ATTNBENCH_CFLAGS
#define ATTNBENCH_CFLAGS "unknown"
#endif
#ifndef ATTNBENCH_BUILD_TYPE
#define ATTNBENCH_BUILD_TYPE "unknown"
#endif
#if defined(__has_include)
#if __has_include("attnbench_git.h")
#include "attnbench_git.h"  // generated at build time: ATTNBENCH_GIT_COMMIT
#endif
#endif
#ifndef ATTNBENCH_GIT_COMMIT
#define ATTNBENCH_GIT_COMMIT "unknown"
#endif
