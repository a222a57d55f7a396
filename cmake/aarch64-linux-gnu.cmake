# SPDX-License-Identifier: MIT
# Cross toolchain: aarch64 Linux with Debian's gcc-aarch64-linux-gnu; tests run under
# qemu-aarch64 (CTest uses CMAKE_CROSSCOMPILING_EMULATOR). Configure with
#   cmake -S . -B build-aarch64 -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake \
#         -DATTNBENCH_HARNESS=OFF
# (the harness needs hwloc/Google Benchmark for the target; kernels/ and tests/ do not).
# scripts/cross-test-aarch64 does all of this.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
set(CMAKE_FIND_ROOT_PATH /usr/aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
# -cpu max: every optional unit (BF16, DotProd, FHM, ...) so their code paths and probes run.
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64 -cpu max -L /usr/aarch64-linux-gnu)
