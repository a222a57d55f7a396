#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""`attnbench check --q --k --v --o`: an output computed elsewhere, checked against the
float64 reference with the kernels' bound and verdicts. The reference kernel's own
output passes; the output of another problem (causal vs not, another scale), a small
perturbation, and zeros fail; zeros on inputs outside the kernel input domain are
inconclusive (never pass); shape and usage errors are clear."""
import os

import numpy as np

import clitest
from clitest import check, run

clitest.init()
rng = np.random.default_rng(7)
with clitest.tempdir() as d:
    def path(n):
        return os.path.join(d, n)

    q = rng.standard_normal((2, 4, 9, 16), dtype=np.float32)
    k = rng.standard_normal((2, 2, 20, 16), dtype=np.float32)
    v = rng.standard_normal((2, 2, 20, 8), dtype=np.float32)
    for n, a in (("q", q), ("k", k), ("v", v)):
        np.save(path(n + ".npy"), a)
    io = ["--q", path("q.npy"), "--k", path("k.npy"), "--v", path("v.npy")]

    def verdict(o, *extra):
        np.save(path("o.npy"), np.asarray(o, dtype=np.float32))
        rc, so, se = run("check", *io, "--o", path("o.npy"), *extra)
        first = so.split()[1] if so.split() else ""
        return rc, first, so + se

    for causal in ([], ["--causal"]):
        rc, _, se = run("run", "--kernel", "reference", *io, "--out", path("ref.npy"), "--quiet",
                        *causal)
        check(rc == 0, f"reference run ({se})")
        ref = np.load(path("ref.npy"))
        rc, w, out = verdict(ref, *causal)
        check(rc == 0 and w == "pass" and out.strip().endswith("1 passed, 0 failed, 0 inconclusive, 0 skipped, 0 fallback"),
              f"the reference's output passes {causal} ({rc}: {out})")
        other = [] if causal else ["--causal"]
        rc, w, out = verdict(ref, *other)
        check(rc == 1 and w == "FAIL", f"another mask's output fails ({rc}: {out})")
        rc, w, out = verdict(ref, *causal, "--scale", "0.5")
        check(rc == 1 and w == "FAIL", f"another scale's output fails ({rc}: {out})")
        pert = ref.copy()
        pert.flat[37] += 1e-3
        rc, w, out = verdict(pert, *causal)
        check(rc == 1 and w == "FAIL" and "index 37" in out, f"a 1e-3 error fails ({rc}: {out})")
        rc, w, out = verdict(np.zeros_like(ref), *causal)
        check(rc == 1 and w == "FAIL", f"zeros fail ({rc}: {out})")

    rc, _, out = verdict(np.zeros((2, 4, 9, 9)))
    check(rc == 1 and "has shape (2, 4, 9, 9)" in out and "(2, 4, 9, 8)" in out,
          f"a wrong O shape is named ({rc}: {out})")
    rc, _, se = run("check", "--o", path("o.npy"))
    check(rc == 2 and "--q, --k and --v" in se, f"--o without inputs is a usage error ({rc}: {se})")
    rc, _, se = run("check", *io)
    check(rc == 2 and "need --o" in se, f"inputs without --o are a usage error ({rc}: {se})")
    # --o runs no kernel: a flag that chooses one, its cases or how it runs is refused.
    for flag in (["--kernel", "naive"], ["--threads", "7"], ["--tune-file", "/nonexistent"],
                 ["--regtile", "bogus"], ["--isolate", "all"], ["--case-timeout", "5"],
                 ["--native-only"], ["--explain"], ["--bind", "none"]):
        rc, _, se = run("check", *io, "--o", path("o.npy"), *flag)
        check(rc == 2 and f"{flag[0]} does not apply" in se,
              f"--o with {flag[0]} is a usage error ({rc}: {se})")

    # A report may not replace any file check --o reads: each option array, with the LSE
    # and every other option file given too (the longest list of inputs).
    for n in ("slopes", "sinks", "mask", "lse"):
        np.save(path(n + ".npy"), np.zeros(4, np.float32))
    opts = ["--lse", path("lse.npy"), "--alibi-slopes", path("slopes.npy"), "--sinks",
            path("sinks.npy"), "--mask", path("mask.npy")]
    for n, what in (("slopes", "ALiBi slopes input"), ("sinks", "sinks input"),
                    ("mask", "mask input"), ("lse", "LSE checked")):
        before = open(path(n + ".npy"), "rb").read()
        for report in ("--json", "--junit"):
            rc, _, se = run("check", *io, "--o", path("o.npy"), *opts, report, path(n + ".npy"))
            check(rc == 1 and f"is the same file as the {what}" in se,
                  f"{report} over the {what}: refused ({rc}: {se})")
        check(open(path(n + ".npy"), "rb").read() == before, f"{n}.npy is untouched")

    # Outside the input domain (scores could overflow float32): no verdict but inconclusive.
    big = np.where(rng.standard_normal((1, 2, 4, 8)) > 0, 3e38, -3e38).astype(np.float32)
    np.save(path("q.npy"), big)
    np.save(path("k.npy"), big[:, :, :3].copy())
    np.save(path("v.npy"), rng.standard_normal((1, 2, 3, 8), dtype=np.float32))
    rc, w, out = verdict(np.zeros((1, 2, 4, 8)))
    check(rc == 1 and w == "inconclusive", f"zeros on ±3e38 inputs are inconclusive ({rc}: {out})")
clitest.finish("check_output")
