#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""`attnbench list` shows each kernel record's vector width and register tiles (attn.h):
the text column and the JSON fields agree, SIMD kernels declare whole-vector tiles,
portable C kernels say "scalar", and omp__<isa> shows its inner tiled__<isa>'s tiles; the
register-tile variants (JSON "regtiles", text "rt=") start with the record's tiles and are
named by their tiles; kernels without variants have one, "default".

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
    rts = k["regtiles"]  # the register-tile variants: [0] is the record's own tiles
    check(len(rts) >= 1 and (rts[0]["qk_tile"], rts[0]["pv_tile"]) == ([qr, qc], [pr, pc]),
          f"{name}: regtiles[0] {rts[:1]} is not the record's tiles")
    for rt in rts if len(rts) > 1 else []:
        (a, b), (c, d) = rt["qk_tile"], rt["pv_tile"]
        check(rt["name"] == f"{a}x{b}/{c}x{d}" and b % w == 0 and d % w == 0,
              f"{name}: variant {rt} is not named by its whole-vector tiles")
    if len(rts) > 1:
        want = "rt=" + ",".join(rt["name"] for rt in rts)
        check(re.search(rf"(^|\s){re.escape(want)}(\s|$)", line) is not None,
              f"{name}: text line does not show {want!r}: {line!r}")
    else:
        check(rts[0]["name"] == "default" and " rt=" not in line,
              f"{name}: one implicit variant named default, no rt= column: {rts} {line!r}")
    if name.startswith("omp__"):
        inner = records.get("tiled__" + name[5:])
        check(inner is not None and (inner["vec_width"], inner["qk_tile"], inner["pv_tile"]) ==
              (w, [qr, qc], [pr, pc]), f"{name}: tiles differ from its inner tiled kernel")
for name in ("flash__avx512", "flash__avx2"):
    check(name not in records or len(records[name]["regtiles"]) >= 2, f"{name}: no variants")
for name in ("reference", "naive", "blocked"):
    check(name in records and records[name]["vec_width"] == 1, f"{name}: vec_width 1 (scalar C)")

print(f"list_tiles: {len(records)} kernels")
clitest.finish("list_tiles")
