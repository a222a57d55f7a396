#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""`attnbench list` shows which attention options (attn.h, "Attention variants") each
kernel handles natively: the text column opts=... and the JSON native_options agree, the
portable kernels handle all seven, and a kernel with none says opts=fallback.

    list_options.py PATH/TO/attnbench
"""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "cli"))
import clitest  # noqa: E402  (tests/cli: the CLI tests' shared check/run helpers)
from clitest import check  # noqa: E402

clitest.init()
BIN = clitest.BIN
ALL = ["align", "window", "softcap", "alibi", "sinks", "mask", "lse", "offset"]


def run(*args):
    rc, out, err = clitest.run(*args)
    check(rc == 0, f"attnbench {' '.join(args)} exits 0 (got {rc}: {err})")
    return out


records = {k["name"]: k for k in json.loads(run("list", "--json"))}
text = {line.split()[0]: line.split() for line in run("list").splitlines() if line.strip()}
check(records.keys() == text.keys(), "text and JSON list the same kernels")
for name in ("reference", "naive", "blocked"):
    check(records.get(name, {}).get("native_options") == ALL,
          f"{name} handles every option natively: {records.get(name)}")
for name, rec in records.items():
    opts = [w for w in text.get(name, []) if w.startswith("opts=")]
    check(len(opts) == 1, f"{name}: one opts= column in {text.get(name)}")
    if not opts:
        continue
    want = "opts=" + (",".join(rec["native_options"]) if rec["native_options"] else "fallback")
    check(opts[0] == want, f"{name}: text {opts[0]} agrees with JSON {want}")
    check(all(o in ALL for o in rec["native_options"]), f"{name}: known option names")
clitest.finish("list_options")
