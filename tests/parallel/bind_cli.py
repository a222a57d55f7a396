# SPDX-License-Identifier: MIT
"""Placement through the CLI: `taskset -c L attnbench bench ... --threads 1` binds thread 0
inside the given set (L = the last CPU this process may use, so not CPU 0 when there are
two or more), and the results context records the set and the binding; `--bind none`
binds nothing and says so; `info` shows the set; a bad --bind value exits 2 naming it.

    bind_cli.py ATTNBENCH
Exit 0 = passed, 1 = failed, 77 = skipped (one CPU allowed, or no taskset)."""

import json
import os
import shutil
import subprocess
import sys
import tempfile

FAILS = []
CFG = """[one]
kernels = naive
heads = 2
head_dim = 16
seq_len = 16
threads = 1
repetitions = 1
min_time = 0.001
"""


def check(cond, what):
    if not cond:
        FAILS.append(what)
        print("FAIL:", what)


def bench(binary, d, name, prefix, *extra):
    cfg, out = os.path.join(d, "c.ini"), os.path.join(d, name + ".json")
    with open(cfg, "w") as f:
        f.write(CFG)
    r = subprocess.run(prefix + [binary, "bench", "--config", cfg, "--out", out, "--no-probe",
                                 "--quiet", *extra], capture_output=True, text=True, timeout=120)
    check(r.returncode == 0, f"{name}: bench exit {r.returncode}: {r.stderr[-500:]}")
    if r.returncode != 0:
        return {}
    with open(out) as f:
        return json.load(f).get("context", {})


def main():
    binary = sys.argv[1]
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2 or not shutil.which("taskset"):
        print("SKIP: needs two allowed CPUs and taskset")
        return 77
    last = cpus[-1]
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_PLACES", "OMP_PROC_BIND")}
    os.environ.clear()
    os.environ.update(env)
    ts = ["taskset", "-c", str(last)]
    with tempfile.TemporaryDirectory() as d:
        ctx = bench(binary, d, "taskset", ts)
        b = ctx.get("binding_T1", "")
        check(b.startswith("T0->core") and b.endswith(f"(PU{last})"),
              f"taskset -c {last}: binding_T1 is {b!r}, expected thread 0 on PU{last}")
        s = ctx.get("cpuset", "")
        check(s.startswith(f"cpuset {last} (1 of ") and s.endswith("bind cores"),
              f"taskset: context cpuset {s!r}")
        ctx = bench(binary, d, "none", ts, "--bind", "none")
        b = ctx.get("binding_T1", "")
        check(b.startswith("not bound (--bind none):") and f"T0 on PUs {last}" in b,
              f"--bind none: binding_T1 {b!r}")
        check(ctx.get("cpuset", "").endswith("bind none"), f"--bind none: {ctx.get('cpuset')!r}")
        ctx = bench(binary, d, "omp", ["env", "OMP_PROC_BIND=false"])
        check(ctx.get("binding_T1", "").startswith("not bound (OMP_PLACES/OMP_PROC_BIND set)"),
              f"OMP_PROC_BIND set: binding_T1 {ctx.get('binding_T1')!r}")
    r = subprocess.run(ts + [binary, "info", "--no-peak"], capture_output=True, text=True)
    check(r.returncode == 0 and f"cpu set:     {last} (1 of" in r.stdout and
          f"T0->core" in r.stdout and f"(PU{last})" in r.stdout, f"info under taskset: {r.stdout}")
    for cmd in (["run", "--kernel", "naive", "--q", "q", "--k", "k", "--v", "v", "--out", "o"],
                ["check"], ["bench", "--config", "x.ini"]):
        r = subprocess.run([binary, *cmd, "--bind", "sockets"], capture_output=True, text=True)
        check(r.returncode == 2 and "--bind 'sockets': expected cores or none" in r.stderr,
              f"{cmd[0]} --bind sockets: exit {r.returncode}, {r.stderr.strip()!r}")
    r = subprocess.run([binary, "check", "--quick", "--kernel", "naive", "--bind", "none"],
                       capture_output=True, text=True, timeout=120)
    check(r.returncode == 0, f"check --bind none: exit {r.returncode} {r.stderr[-300:]}")
    print(f"{len(FAILS)} failures" if FAILS else "bind_cli: all checks passed")
    return 1 if FAILS else 0


if __name__ == "__main__":
    sys.exit(main())
