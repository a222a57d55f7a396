#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""`attnbench info`'s table "compute unit peaks, measured": every low-precision unit of
the build has a row; a unit whose ISA is in "isa found" shows a positive G ops/s figure
for 1 and all threads, any other says "not on this CPU" and shows no number. Run with
ATTNBENCH_ISA_MASK hiding avx512bf16 and neon-bf16 (bits 4 and 9), so the BF16 row must
say "not on this CPU" whatever the CPU, while the units the mask keeps are measured
where the CPU has them. Usage: info_units.py PATH/TO/attnbench"""
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "cli"))
import clitest  # noqa: E402
from clitest import check, run  # noqa: E402

clitest.init()
mask = 0xFFFFFFFF & ~((1 << 4) | (1 << 9))
rc, out, err = run("info", env={"ATTNBENCH_ISA_MASK": hex(mask), "OMP_NUM_THREADS": "2"})
check(rc == 0, f"info runs ({rc}: {err.strip()[-300:]})")
found = set((re.search(r"^isa found:\s+(.*)$", out, re.M) or [None, ""])[1].split())
check("avx512bf16" not in found and "neon-bf16" not in found, f"the mask hides BF16 ({found})")
lines = out.splitlines()
start = next((i for i, ln in enumerate(lines) if ln.startswith("compute unit peaks, measured")), None)
check(start is not None, "info prints the table 'compute unit peaks, measured'")
rows = []
for ln in lines[(start or 0) + 2:] if start is not None else []:
    if not ln.startswith("  "):
        break
    rows.append(ln)
units = {ln.split()[0] for ln in rows}
check({"bf16-dot", "int8-dot", "fp16-fma"} <= units, f"a row per unit ({sorted(units)})")
for ln in rows:
    m = re.search(r"not on this CPU \(([a-z0-9-]+)\)", ln)
    if m:
        check(m.group(1) not in found, f"'{ln.strip()}': its ISA is not in isa found")
        check(not re.search(r"\d+\.\d", ln), f"'{ln.strip()}': no made-up number")
        continue
    nums = re.findall(r"(\d+\.\d+)", ln)
    check(len(nums) == 2 and all(float(x) > 0 for x in nums),
          f"'{ln.strip()}': a present unit is measured on 1 and all threads")
bf16 = [ln for ln in rows if ln.split()[0] == "bf16-dot"]
check(bf16 and all("not on this CPU" in ln for ln in bf16), f"masked BF16 row: not on this CPU ({bf16})")
clitest.finish("info_units")
