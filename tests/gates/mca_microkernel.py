#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The register-tile micro-kernel's static throughput (scripts/mca-microkernel): the AVX2
6x2 tile of flash__avx2/tiled__avx2 must stay within 5% of the FMA bound on the znver2 and
skylake models, the AVX-512 Q.K^T tile flash__avx512 compiles by default (FL_RT0_QK_MR x FL_RT0_QK_NV) within 5% on the
sapphirerapids and icelake-server models (8x2 is at 88%), and the AVX-512 softmax exp loop
at most 11.5 cycles per vector on sapphirerapids (the vscalefps exp: 10.4; the one before
it, 13.2). Skips (77) without llvm-mca or off x86-64."""
import os
import platform
import re
import shutil
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
if shutil.which("llvm-mca") is None or platform.machine() not in ("x86_64", "AMD64"):
    print("skipped: llvm-mca not installed (apt-get install llvm) or not x86-64")
    sys.exit(77)
out = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "mca-microkernel"),
                      "--tile", "avx2:6x2", "--cpu", "znver2,skylake"],
                     capture_output=True, text=True)
print(out.stdout, out.stderr)
if out.returncode != 0:
    sys.exit("FAIL: mca-microkernel exited %d" % out.returncode)
row = re.search(r"^\| avx2 \| 6×2 \| 12 \| 6\.0 \| ([\d.]+) \((\d+)%\) \| ([\d.]+) \((\d+)%\) \|$",
                out.stdout, re.M)
if not row:
    sys.exit("FAIL: no row for the avx2 6x2 tile with 12 FMAs per iteration")
effs = [int(row.group(2)), int(row.group(4))]
if min(effs) < 95:
    sys.exit("FAIL: avx2 6x2 tile predicted at %s%% of the FMA bound (want >= 95%%)" % effs)
if not re.search(r"^\| avx2 \| \d+ instructions \| [\d.]+ \(", out.stdout, re.M):
    sys.exit("FAIL: no softmax exp-loop row")
print("ok: avx2 6x2 at %s%% of the FMA bound (znver2, skylake)" % effs)

# The AVX-512 tile is the one flash__avx512 compiles by default (its register-tile
# variant 0: FL_RT0_QK_MR / FL_RT0_QK_NV in flash_avx512.h).
src = open(os.path.join(ROOT, "kernels", "flash", "flash_avx512.h")).read()
mr = int(re.search(r"^#define FL_RT0_QK_MR (\d+)$", src, re.M).group(1))
nv = int(re.search(r"^#define FL_RT0_QK_NV (\d+)$", src, re.M).group(1))
out = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "mca-microkernel"),
                      "--tile", "avx512:%dx%d" % (mr, nv), "--cpu", "sapphirerapids,icelake-server"],
                     capture_output=True, text=True)
print(out.stdout, out.stderr)
if out.returncode != 0:
    sys.exit("FAIL: mca-microkernel exited %d" % out.returncode)
row = re.search(r"^\| avx512 \| %d×%d \| %d \| [\d.]+ \| ([\d.]+) \((\d+)%%\) \| ([\d.]+) \((\d+)%%\) \|$"
                % (mr, nv, mr * nv), out.stdout, re.M)
if not row:
    sys.exit("FAIL: no row for the avx512 %dx%d tile with %d FMAs per iteration" % (mr, nv, mr * nv))
effs = [int(row.group(2)), int(row.group(4))]
if min(effs) < 95:
    sys.exit("FAIL: flash__avx512's Q.K^T tile %dx%d predicted at %s%% of the FMA bound "
             "(want >= 95%%)" % (mr, nv, effs))
exp = re.search(r"^\| avx512 \| \d+ instructions \| ([\d.]+) \(", out.stdout, re.M)
if not exp:
    sys.exit("FAIL: no avx512 softmax exp-loop row")
if float(exp.group(1)) > 11.5:
    sys.exit("FAIL: avx512 softmax exp loop at %s cycles per vector on sapphirerapids "
             "(want <= 11.5)" % exp.group(1))
print("ok: avx512 %dx%d at %s%% of the FMA bound (sapphirerapids, icelake-server), exp loop "
      "%s cycles per vector" % (mr, nv, effs, exp.group(1)))
