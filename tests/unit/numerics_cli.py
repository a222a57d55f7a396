#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""The input domain through the CLI (numerics): the input domain is refused with exit 1 and no
output; `run --check` on an in-domain case whose bound is uninformative prints
`check: inconclusive (reason)` and exits 1; subnormal inputs pass `--check` on every
float kernel; a malformed ATTNBENCH_ISA_MASK is exit 2 once at start-up; the OpenMP
default above the thread cap (OMP_NUM_THREADS=100000) is refused, not a crash; tiles of
2^20 on a 4x5 problem run."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "cli"))

import numpy as np  # noqa: E402

import clitest  # noqa: E402
from clitest import check, run  # noqa: E402

clitest.init()
rng = np.random.default_rng(9)
kernels = [n for n, ok, _ in clitest.list_kernels() if ok]
float_kernels = [n for n in kernels if n != "reference"]
# available kernels that use exec.threads ('name available caps summary…')
threaded = [n for n, ok, line in clitest.list_kernels() if ok and "threads" in line.split()[2].split(",")]

with clitest.tempdir() as d:
    def save(name, arr):
        path = os.path.join(d, name)
        np.save(path, np.asarray(arr, dtype=np.float32))
        return path

    q, k, v = rng.standard_normal((1, 2, 4, 8)), rng.standard_normal((1, 2, 5, 8)), rng.standard_normal((1, 2, 5, 8))
    Q, K, V = save("q.npy", q), save("k.npy", k), save("v.npy", v)
    out = os.path.join(d, "o.npy")

    def run_kernel(kernel, qq=Q, kk=K, vv=V, extra=(), env=None):
        if os.path.exists(out):
            os.remove(out)
        return run("run", "--kernel", kernel, "--q", qq, "--k", kk, "--v", vv, "--out", out, *extra, env=env)

    rc, so, se = run_kernel("blocked", extra=["--check"])
    check(rc == 0 and "check: pass" in so, f"ordinary inputs pass ({rc}: {se})")

    # 1. Outside the input domain: refused by every kernel, exit 1, nothing written.
    QB = save("qbig.npy", np.where(q < 0, -3e38, 3e38))
    KB = save("kbig.npy", np.where(k < 0, -3e38, 3e38))
    VB = save("vbig.npy", np.where(v < 0, -3e38, 3e38))
    cases = [("Q, K of +-3e38", dict(qq=QB, kk=KB), "scores may overflow float32"),
             ("--scale 1e38", dict(extra=["--scale", "1e38"]), "scores may overflow float32"),
             ("V of +-3e38", dict(vv=VB), "V accumulation may overflow")]
    for what, kw, text in cases:
        for kern in kernels:
            rc, so, se = run_kernel(kern, **kw)
            check(rc == 1 and text in se and not os.path.exists(out),
                  f"{what}: {kern} refuses with exit 1 and no output ({rc}: {se.strip()})")

    # 2. In the domain, bound uninformative (scores ~1e30): inconclusive, exit 1, no output.
    rc, so, se = run_kernel("blocked", extra=["--scale", "1e30", "--check"])
    check(rc == 1 and "check: inconclusive (" in se and "uninformative" in se and not os.path.exists(out),
          f"run --check at scale 1e30 is inconclusive ({rc}: {se.strip()})")

    # 3. Subnormal inputs (1e-40 everywhere): FTZ gives zeros, and that passes --check.
    QD, KD, VD = save("qd.npy", np.full((1, 2, 4, 8), 1e-40)), save("kd.npy", np.full((1, 2, 5, 8), 1e-40)), \
        save("vd.npy", np.full((1, 2, 5, 8), 1e-40))
    for kern in float_kernels:
        rc, so, se = run_kernel(kern, QD, KD, VD, extra=["--check"])
        check(rc == 0 and "check: pass" in so, f"subnormal inputs: {kern} passes --check ({rc}: {se.strip()})")

    # 4. ATTNBENCH_ISA_MASK: strict, refused once at start-up with exit 2.
    for bad in ["garbage", "0x", "99999999999999999999", "-1", "1 ", "0x1g", "4294967296"]:
        for cmd in (["list"], ["check", "--quick", "--kernel", "naive"], ["run", "--kernel", "naive"]):
            rc, so, se = run(*cmd, env={"ATTNBENCH_ISA_MASK": bad})
            lines = [ln for ln in se.splitlines() if ln.strip()]
            check(rc == 2 and len(lines) == 1 and "ATTNBENCH_ISA_MASK" in se and so == "",
                  f"ATTNBENCH_ISA_MASK={bad!r} {cmd[0]}: one error, exit 2 ({rc}: {se.strip()})")
    for good in ["0", "0x0", "1", "0x3", "4294967295", ""]:
        rc, so, se = run("list", env={"ATTNBENCH_ISA_MASK": good})
        check(rc == 0, f"ATTNBENCH_ISA_MASK={good!r} accepted ({rc}: {se.strip()})")
    masked = clitest.list_kernels(env={"ATTNBENCH_ISA_MASK": "0x0"})
    check(all(ok == (n in ("reference", "naive", "blocked", "blas")) for n, ok, _ in masked),
          "ATTNBENCH_ISA_MASK=0x0 hides every SIMD kernel")

    # 5. The thread cap with the OpenMP default above it: an error naming OMP_NUM_THREADS.
    env = {"OMP_NUM_THREADS": "100000"}
    for kern in threaded:
        rc, so, se = run_kernel(kern, env=env)
        check(rc == 1 and "OMP_NUM_THREADS" in se and not os.path.exists(out),
              f"OMP_NUM_THREADS=100000 run {kern}: refused ({rc}: {se.strip()})")
        rc, so, se = run_kernel(kern, extra=["--threads", "2"], env=env)
        check(rc == 0, f"OMP_NUM_THREADS=100000 run {kern} --threads 2 runs ({rc}: {se.strip()})")
    rc, so, se = run("check", "--quick", "--no-progress", "--kernel", "naive", env=env)
    check(rc == 1 and "OMP_NUM_THREADS" in se and len(se.strip().splitlines()) == 1 and so == "",
          f"OMP_NUM_THREADS=100000 check: one error up front, exit 1 ({rc}: {se.strip()[:300]})")
    # a bench config's threads (it accepted up to 2^30; was SIGSEGV in libgomp from
    # flash__avx2 via the checker): refused when the config loads (FILE:LINE, exit 2,
    # nothing run or written), or — in a build whose loader has no cap — each point
    # refused before it runs
    if threaded:
        cfg = os.path.join(d, "threads.ini")
        with open(cfg, "w") as f:
            f.write(f"[t]\nkernels = {', '.join(threaded)}\nheads = 2\nhead_dim = 16\nseq_len = 8\nthreads = 65536\n")
        res = os.path.join(d, "threads.json")
        rc, so, se = run("bench", "--config", cfg, "--out", res, "--no-probe", "--benchmark_min_time=0.01")
        errs = []
        if os.path.exists(res):
            import json
            with open(res) as f:
                errs = [b.get("error_message", "") for b in json.load(f)["benchmarks"]]
        at_load = rc == 2 and "threads.ini:6: threads: 65536 is out of range" in se and not errs
        per_point = rc == 1 and len(errs) == len(threaded) and all(
            "threads = 65536 is out of range" in e for e in errs)
        check(at_load or per_point,
              f"bench threads = 65536: refused ({rc}: {errs} {se.strip()[-200:]})")
    rc, so, se = run("check", "--quick", "--no-progress", "--kernel", "naive", "--threads", "1025")
    check(rc == 2 and "out of range" in se, f"check --threads 1025 is a usage error ({rc}: {se.strip()})")

    # 6. Tiles clamped to the problem (blocked asked for 4 TiB of workspace).
    for kern in kernels:
        rc, so, se = run_kernel(kern, extra=["--tile-q", "1048576", "--tile-kv", "1048576", "--check"])
        check(rc == 0 and "check: pass" in so, f"{kern} with 2^20 tiles on 4x5 ({rc}: {se.strip()})")

clitest.finish("numerics_cli")
