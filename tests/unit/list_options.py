#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""`attnbench list` shows which attention options (attn.h, "Attention variants") each
kernel handles natively: the text column opts=... and the JSON native_options agree, the
portable kernels handle all seven, and a kernel with none says opts=fallback.

    list_options.py PATH/TO/attnbench
"""
import json
import subprocess
import sys

BIN = sys.argv[1]
ALL = ["align", "window", "softcap", "alibi", "sinks", "mask", "lse"]
failures = 0


def check(cond, what):
    global failures
    if not cond:
        failures += 1
        print(f"FAIL: {what}", file=sys.stderr)


def run(*args):
    p = subprocess.run([BIN, *args], capture_output=True, text=True, timeout=60)
    check(p.returncode == 0, f"attnbench {' '.join(args)} exits 0 (got {p.returncode}: {p.stderr})")
    return p.stdout


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
sys.exit(1 if failures else 0)
