#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""The kernels of one ISA against the reference through `attnbench check --quick`, as a
CTest test that is SKIPPED (exit 77) where the CPU lacks the ISA — never a pass that
checked nothing. Usage: isa_check.py PATH/TO/attnbench ISA (e.g. avx512f, as `list`
names it). Passes only if every pair of every such kernel passed (none skipped)."""
import json
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "cli"))
import clitest  # noqa: E402
from clitest import check, run  # noqa: E402

isa = sys.argv.pop()
clitest.init()
rc, out, err = run("list", "--json")
check(rc == 0, f"list --json ({rc}: {err})")
mine = [k for k in json.loads(out) if k["required_isa"] == isa]
check(mine, f"the build has kernels that need {isa}")
if mine and not any(k["available"] for k in mine):
    print(f"SKIPPED: this CPU cannot run the {isa} kernels ({mine[0]['unavailable_reason']})")
    sys.exit(77)
names = [k["name"] for k in mine]
args = [a for n in names for a in ("--kernel", n)]
rc, out, err = run("check", "--quick", "--no-progress", *args)
rc_cases, cases, _ = run("check", "--quick", "--list-cases")
n = len(cases.splitlines()) * len(names)
last = out.rstrip("\n").splitlines()[-1] if out.strip() else ""
# passes of the kernels' own code, plus the option cases they leave to the shared fallback
m = re.fullmatch(r"(\d+) passed, 0 failed, 0 inconclusive, 0 skipped, (\d+) fallback", last)
check(rc == 0 and m is not None and int(m[1]) > 0 and int(m[1]) + int(m[2]) == n,
      f"{isa} kernels {names}: all {n} pairs pass ({rc}: {last!r} {err.strip()})")
clitest.finish(f"isa_check {isa}")
