#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""`attnbench list` shows each kernel record's vector width and register tiles (attn.h):
the text column and the JSON fields agree, SIMD kernels declare whole-vector tiles,
portable C kernels say "scalar", and omp__<isa> shows its inner tiled__<isa>'s tiles.

    list_tiles.py PATH/TO/attnbench
"""
import json
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "cli"))
import clitest  # noqa: E402  (tests/cli: the CLI tests' shared check/run helpers)
from clitest import check  # noqa: E402

clitest.init()
BIN = clitest.BIN


def run(*args):
    rc, out, err = clitest.run(*args)
    check(rc == 0, f"attnbench {' '.join(args)} exits 0 (got {rc}: {err})")
    return out


records = {k["name"]: k for k in json.loads(run("list", "--json"))}
check(len(records) > 0, "list --json lists kernels")
text = {line.split()[0]: line for line in run("list").splitlines() if line.strip()}
check(set(text) == set(records), "text and JSON list the same kernels")
for name, k in records.items():
    w, (qr, qc), (pr, pc) = k["vec_width"], k["qk_tile"], k["pv_tile"]
    line = text.get(name, "")
    if k["required_isa"]:  # a SIMD kernel: whole-vector register tiles
        check(w > 1 and min(qr, qc, pr, pc) > 0 and qc % w == 0 and pc % w == 0,
              f"{name}: w{w} qk{qr}x{qc} pv{pr}x{pc} are not whole-vector tiles")
        want = f"w{w} qk{qr}x{qc} pv{pr}x{pc}"
        check(re.search(rf"(^|\s){re.escape(want)}(\s|$)", line) is not None,
              f"{name}: text line does not show {want!r}: {line!r}")
    elif w == 1:
        check(re.search(r"\sscalar\s", line) is not None, f"{name}: scalar kernel line: {line!r}")
    if name.startswith("omp__"):
        inner = records.get("tiled__" + name[5:])
        check(inner is not None and (inner["vec_width"], inner["qk_tile"], inner["pv_tile"]) ==
              (w, [qr, qc], [pr, pc]), f"{name}: tiles differ from its inner tiled kernel")
for name in ("reference", "naive", "blocked"):
    check(name in records and records[name]["vec_width"] == 1, f"{name}: vec_width 1 (scalar C)")

print(f"list_tiles: {len(records)} kernels")
clitest.finish("list_tiles")
