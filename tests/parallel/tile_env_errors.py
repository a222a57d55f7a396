#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""A malformed ATTNBENCH_TILE_Q / ATTNBENCH_TILE_KV (and ATTNBENCH_REGTILE /
ATTNBENCH_KV_SPLIT, read with them) fails every command that runs kernels
(run, bench, check, info) once, up front: exit 2, one stderr line naming the variable and
its value, nothing else done (no results file, no per-point errors). A valid value is
taken by every one of them.

    tile_env_errors.py PATH/TO/attnbench PATH/TO/configs/ci.ini
"""
import os
import subprocess
import sys
import tempfile

BIN, CONFIG = sys.argv[1], sys.argv[2]
failures = 0


def check(cond, what):
    global failures
    if not cond:
        failures += 1
        print(f"FAIL: {what}", file=sys.stderr)


def run(args, env):
    full = dict(os.environ)
    full.pop("ATTNBENCH_TILE_Q", None)
    full.pop("ATTNBENCH_TILE_KV", None)
    full.pop("ATTNBENCH_REGTILE", None)
    full.pop("ATTNBENCH_KV_SPLIT", None)
    full.update(env)
    p = subprocess.run([BIN, *args], capture_output=True, text=True, env=full,
                       stdin=subprocess.DEVNULL, timeout=300)
    return p.returncode, p.stdout, p.stderr


with tempfile.TemporaryDirectory(prefix="attnbench-tile-env-") as tmp:
    out = os.path.join(tmp, "bench.json")
    commands = {
        "run": ["run", "--kernel", "naive", "--q", "q.npy", "--k", "k.npy", "--v", "v.npy",
                "--out", os.path.join(tmp, "o.npy")],
        "bench": ["bench", "--config", CONFIG, "--quiet", "--out", out],
        "check": ["check", "--quick", "--kernel", "naive"],
        "info": ["info", "--no-peak"],
    }
    bad = [(var, value) for var in ("ATTNBENCH_TILE_Q", "ATTNBENCH_TILE_KV")
           for value in ("garbage", "0", "-3", "12x")]
    bad += [("ATTNBENCH_REGTILE", "a;b"), ("ATTNBENCH_REGTILE", "x" * 40),
            ("ATTNBENCH_KV_SPLIT", "-1"), ("ATTNBENCH_KV_SPLIT", "4097"), ("ATTNBENCH_KV_SPLIT", "2x")]
    for var, value in bad:
        for name, args in commands.items():
            rc, so, se = run(args, {var: value})
            what = f"{var}={value} attnbench {name}"
            check(rc == 2, f"{what}: exit {rc}, expected 2 (stderr: {se.strip()!r})")
            lines = [l for l in se.splitlines() if l.strip()]
            check(len(lines) == 1 and var in lines[0] and value in lines[0]
                  and lines[0].startswith(f"attnbench {name}: "),
                  f"{what}: expected one line naming {var}={value}, got {se!r}")
            check(not so.strip(), f"{what}: printed output before failing: {so[:200]!r}")
        check(not os.path.exists(out), f"{var}={value}: bench wrote {out}")
    # A valid value is accepted (and shown by info as the tiles in use).
    rc, so, se = run(["info", "--no-peak"], {"ATTNBENCH_TILE_Q": "40", "ATTNBENCH_TILE_KV": "96"})
    check(rc == 0 and "tile_q 40, tile_kv 96" in so, f"valid tiles: info exit {rc}: {so}{se}")
    rc, so, se = run(commands["check"], {"ATTNBENCH_TILE_Q": "16"})
    check(rc == 0, f"valid ATTNBENCH_TILE_Q=16: check exit {rc}: {se}")

if failures:
    print(f"tile_env_errors: {failures} check(s) failed", file=sys.stderr)
    sys.exit(1)
print("tile_env_errors: all checks passed")
