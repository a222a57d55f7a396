#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The register-tile micro-kernel's static throughput (scripts/mca-microkernel): the AVX2
6x2 tile of flash__avx2/tiled__avx2 must stay within 5% of the FMA bound on the znver2 and
skylake models, and the script must report the softmax loop. Skips (77) without llvm-mca
or off x86-64."""
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
