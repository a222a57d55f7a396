#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The installable library and the out-of-tree example (docs/plugins.md, "Installing").

1. `cmake --install BUILD --prefix WORK/prefix`; the layout has the headers, both
   libraries (shared with soname libattnkernels.so.MAJOR.MINOR), the CMake package with
   its version file, attnbench.pc, bin/attnbench and share/attnbench/{configs,scripts};
2. examples/ configured and built against that prefix with find_package(attnbench);
   a request for a newer version than installed is refused;
3. attn_example run (through the shared library): the reference and a built-in pass;
4. the same program built with `pkg-config --cflags --libs attnbench` runs too;
5. the installed attnbench loads the example plug-in: `list` marks it, `check --plugin
   ... --kernel example__scalar` passes (cases > 0), `bench --plugin ...` times it and the
   results file holds its points;
6. with the MPI build (--mpiexec given): bin/attnbench-mpi is installed and the installed
   program runs a checked zigzag job on 2 ranks (the check passes); without it, the prefix
   has no attnbench-mpi.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys

ap = argparse.ArgumentParser()
for a in ["cmake", "build-dir", "config", "source", "work", "cc", "pkg-config", "version", "sanitize", "mpiexec"]:
    ap.add_argument("--" + a, default="")
A = ap.parse_args()
KERNEL = "example__scalar"
failures = []


def sh(*cmd, env=None, cwd=None, ok=True):
    p = subprocess.run(list(cmd), capture_output=True, text=True, env=env, cwd=cwd, timeout=240)
    if ok and p.returncode != 0:
        print(f"FAIL: {' '.join(cmd)}: rc {p.returncode}\n{p.stdout[-2000:]}\n{p.stderr[-2000:]}")
        sys.exit(1)
    return p


def expect(cond, what):
    if not cond:
        failures.append(what)


shutil.rmtree(A.work, ignore_errors=True)
os.makedirs(A.work)
prefix = os.path.join(A.work, "prefix")
cfg = ["--config", A.config] if A.config else []
sh(A.cmake, "--install", A.build_dir, "--prefix", prefix, *cfg)

# ── 1. the layout ────────────────────────────────────────────────────────────────────
inc = os.path.join(prefix, "include", "attnbench")
libdirs = [d for d in ("lib", "lib64") if os.path.isdir(os.path.join(prefix, d))]
expect(len(libdirs) == 1, f"one library dir in the prefix, got {libdirs}")
lib = os.path.join(prefix, libdirs[0] if libdirs else "lib")
major, minor = A.version.split(".")[:2]
for rel in ["attn.h", "check/check.h", "simd/microkernel.h", "simd/vec_avx512.h", "simd/vec_avx2.h",
            "simd/vec_neon.h", "simd/vexp.h", "simd/vec_exp.h", "simd/softmax.h"]:
    expect(os.path.isfile(os.path.join(inc, rel)), f"missing header include/attnbench/{rel}")
for rel in ["libattnkernels.a", f"libattnkernels.so.{A.version}", "libattnkernels.so",
            "cmake/attnbench/attnbenchConfig.cmake", "cmake/attnbench/attnbenchConfigVersion.cmake",
            "cmake/attnbench/attnbenchTargets.cmake", "pkgconfig/attnbench.pc"]:
    expect(os.path.exists(os.path.join(lib, rel)), f"missing lib/{rel}")
so = os.path.join(lib, "libattnkernels.so")
if os.path.exists(so):
    dyn = sh("readelf", "-d", so).stdout
    expect(f"[libattnkernels.so.{major}.{minor}]" in dyn, f"soname is not libattnkernels.so.{major}.{minor}")
exe = os.path.join(prefix, "bin", "attnbench")
expect(os.access(exe, os.X_OK), "missing bin/attnbench")
share = os.path.join(prefix, "share", "attnbench")
for rel in ["configs/ci.ini", "configs/default.ini", "scripts/summary.py", "scripts/compare.py",
            "scripts/bench-baselines", "baselines/external/attn_baseline.py"]:
    expect(os.path.isfile(os.path.join(share, rel)), f"missing share/attnbench/{rel}")
expect(os.access(os.path.join(share, "scripts", "run"), os.X_OK), "share/attnbench/scripts/run not executable")
if failures:
    print("\n".join("FAIL: " + f for f in failures))
    sys.exit(1)

# ── 2. the example project against the installed package ─────────────────────────────
flags = ["-Wall", "-Wextra", "-Werror"]
if A.sanitize:  # the example must be built like the library it links
    flags += [f"-fsanitize={A.sanitize}", "-fno-omit-frame-pointer"]
ex = os.path.join(A.work, "example")
conf = sh(A.cmake, "-S", os.path.join(A.source, "examples"), "-B", ex, f"-DCMAKE_PREFIX_PATH={prefix}",
          f"-DCMAKE_C_COMPILER={A.cc}", "-DCMAKE_BUILD_TYPE=Release", f"-DCMAKE_C_FLAGS={' '.join(flags)}")
want = f"attnbench {A.version}: CLI {exe}, data {share}"
expect(want in conf.stdout, f"the package's variables: want {want!r} in\n{conf.stdout}")
sh(A.cmake, "--build", ex)
plugin = os.path.join(ex, "example_plugin.so")
expect(os.path.isfile(plugin), "the example did not build example_plugin.so")
# the plug-in exports its entry point and keeps the library's symbols to itself
syms = sh("nm", "-D", "--defined-only", plugin).stdout.split()
expect("attn_plugin_v1" in syms and "attn_kernel_call" not in syms,
       f"example_plugin.so exports {[s for s in syms if s.startswith('attn')]}")

# a version newer than the installed one is refused by the version file
newer = os.path.join(A.work, "newer")
os.makedirs(newer)
with open(os.path.join(newer, "CMakeLists.txt"), "w") as f:
    f.write(f"cmake_minimum_required(VERSION 3.25)\nproject(newer LANGUAGES C)\n"
            f"find_package(attnbench {int(major) + 1}.0 REQUIRED)\n")
p = sh(A.cmake, "-S", newer, "-B", os.path.join(newer, "b"), f"-DCMAKE_PREFIX_PATH={prefix}", ok=False)
expect(p.returncode != 0 and "version" in (p.stdout + p.stderr).lower(),
       f"find_package(attnbench {int(major) + 1}.0) was not refused")

# ── 3. the program, through the shared library ───────────────────────────────────────
prog = os.path.join(ex, "attn_example")
expect(f"libattnkernels.so.{major}.{minor} => {lib}/" in sh("ldd", prog).stdout,
       "attn_example does not use the installed shared library")
for k in ["reference", "naive"]:
    p = sh(prog, k, ok=False)
    expect(p.returncode == 0 and f"{k}: pass" in p.stdout, f"attn_example {k}: rc {p.returncode} {p.stdout} {p.stderr}")
p = sh(prog, "no_such_kernel", ok=False)
expect(p.returncode == 1 and "unknown kernel" in p.stderr, "attn_example accepts an unknown kernel")

# ── 4. pkg-config ────────────────────────────────────────────────────────────────────
if A.pkg_config:
    env = dict(os.environ, PKG_CONFIG_PATH=os.path.join(lib, "pkgconfig"))
    ver = sh(A.pkg_config, "--modversion", "attnbench", env=env).stdout.strip()
    expect(ver == A.version, f"pkg-config --modversion: {ver!r}, want {A.version}")
    pc_flags = sh(A.pkg_config, "--cflags", "--libs", "attnbench", env=env).stdout.split()
    pc_prog = os.path.join(A.work, "attn_example_pc")
    sh(A.cc, *flags, os.path.join(A.source, "examples", "attn_example.c"), "-o", pc_prog, *pc_flags,
       f"-Wl,-rpath,{lib}")
    p = sh(pc_prog, "blocked", ok=False)
    expect(p.returncode == 0 and "blocked: pass" in p.stdout, f"pkg-config build: {p.stdout} {p.stderr}")
else:
    print("note: no pkg-config, its part skipped")

# ── 5. the installed attnbench with the example plug-in ──────────────────────────────
env = {k: v for k, v in os.environ.items() if k != "ATTNBENCH_PLUGINS"}
p = sh(exe, "list", "--plugin", plugin, env=env, ok=False)
expect(p.returncode == 0 and any(l.startswith(KERNEL) and "[plug-in:" in l for l in p.stdout.splitlines()),
       f"installed list --plugin: {p.stdout[-300:]} {p.stderr}")
p = sh(exe, "check", "--quick", "--plugin", plugin, "--kernel", KERNEL, "--no-progress", env=env, ok=False)
last = p.stdout.strip().splitlines()[-1] if p.stdout.strip() else ""
expect(p.returncode == 0 and " 0 failed" in last and not last.startswith("0 passed"),
       f"installed check --plugin: rc {p.returncode}: {last} {p.stderr}")
ini = os.path.join(A.work, "tiny.ini")
with open(ini, "w") as f:
    f.write("[tiny]\nkernels = reference\nbatch = 1\nheads = 2\nkv_heads = 2\nhead_dim = 16\n"
            "seq_len = 16, 40\ncausal = false\nthreads = 1\nrepetitions = 2\nmin_time = 0.01\n")
res = os.path.join(A.work, "results.json")
p = sh(exe, "bench", "--plugin", plugin, "--config", ini, "--kernel", KERNEL, "--out", res, "--quiet",
       "--no-probe", env=env, ok=False)
expect(p.returncode == 0, f"installed bench --plugin: rc {p.returncode}: {p.stderr}")
if p.returncode == 0:
    runs = [b for b in json.load(open(res))["benchmarks"] if b.get("run_type") == "iteration"]
    names = sorted({b["name"] for b in runs})
    expect(len(names) == 2 and all(n.startswith(KERNEL + "/") for n in names)
           and all(b["real_time"] > 0 and "error_occurred" not in b for b in runs),
           f"results file: {names}")

# ── 6. attnbench-mpi beside attnbench (MPI build only) ───────────────────────────────
mpi_exe = os.path.join(prefix, "bin", "attnbench-mpi")
if A.mpiexec:
    expect(os.access(mpi_exe, os.X_OK), "missing bin/attnbench-mpi (the MPI build is on)")
    if os.access(mpi_exe, os.X_OK):
        menv = dict(env, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
                    ASAN_OPTIONS=(env.get("ASAN_OPTIONS", "") + ":detect_leaks=0").lstrip(":"))
        p = sh(A.mpiexec, "-np", "2", "--oversubscribe", mpi_exe, "--strategy", "zigzag", "--causal",
               "--seq-len", "100", "--heads", "2", "--lse", "--timeout", "60", env=menv, ok=False)
        expect(p.returncode == 0 and "zigzag/S100/f32/causal" in p.stdout and " pass " in p.stdout,
               f"installed attnbench-mpi: rc {p.returncode}: {p.stdout[-500:]} {p.stderr[-500:]}")
else:
    expect(not os.path.exists(mpi_exe), "bin/attnbench-mpi installed without the MPI build")

for f in failures:
    print("FAIL:", f)
print(f"{len(failures)} failure(s)" if failures else "install_example: all checks passed")
sys.exit(1 if failures else 0)
