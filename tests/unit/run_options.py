#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""`attnbench run` with the attention options (--window --align --softcap --alibi
--alibi-slopes --sinks --mask --lse) reproduces the NumPy float64 golden data of
tests/data/variants (scripts/make_golden_variants.py) for O and LSE, on a native and a
fallback kernel, with --check; bad option values are refused with a clear message.

    run_options.py PATH/TO/attnbench
"""
import os
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "cli"))
import clitest  # noqa: E402  (tests/cli: the CLI tests' shared check/run helpers)
from clitest import check  # noqa: E402

clitest.init()
BIN = clitest.BIN
DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "variants")


def run(*args):
    return clitest.run("run", *args)


def case_args(name):
    P = np.load(os.path.join(DATA, f"{name}_params.npy"))
    f = lambda key: os.path.join(DATA, f"{name}_{key}.npy")
    args = ["--q", f("q"), "--k", f("k"), "--v", f("v"), "--scale", repr(float(P[18]))]
    if P[7]:
        args.append("--causal")
    if P[8]:
        args += ["--align", "top-left"]
    if P[9]:
        side = lambda x: "inf" if x < 0 else str(int(x))
        args += ["--window", f"{side(P[10])},{side(P[11])}"]
    if P[12]:
        args += ["--softcap", repr(float(P[12]))]
    if P[13]:
        args += ["--alibi", repr(float(P[13]))]
    if P[14]:
        args += ["--alibi-slopes", f("slopes")]
    if P[15]:
        args += ["--sinks", f("sinks")]
    if P[16]:
        args += ["--mask", f("mask")]
    return args


def close(got, want):
    same_inf = np.array_equal(np.isinf(got), np.isinf(want)) and np.all(got[np.isinf(got)] == want[np.isinf(want)])
    fin = ~np.isinf(want)
    return same_inf and np.all(np.abs(got[fin] - want[fin]) <= 1e-5 * (1 + np.abs(want[fin])))


with tempfile.TemporaryDirectory() as tmp:
    o_path, l_path = os.path.join(tmp, "o.npy"), os.path.join(tmp, "lse.npy")
    compared = 0
    for name in ("gemma", "gptoss", "alibi", "maskhead", "mixed"):
        for kernel in ("blocked", "tiled__avx2"):  # native, and fallback (x86 builds only)
            rc, out, err = run("--kernel", kernel, *case_args(name), "--out", o_path, "--lse",
                               l_path, "--check")
            if rc == 2 and "unknown kernel" in err:
                continue  # not built for this target
            if rc == 1 and "unavailable" in err:
                continue
            check(rc == 0 and "check: pass" in out, f"{name} on {kernel}: rc {rc}: {out} {err}")
            if rc != 0:
                continue
            o, lse = np.load(o_path), np.load(l_path)
            compared += 1
            check(close(o, np.load(os.path.join(DATA, f"{name}_out.npy"))), f"{name} {kernel}: O")
            check(close(lse, np.load(os.path.join(DATA, f"{name}_lse.npy"))),
                  f"{name} {kernel}: LSE")
    check(compared >= 5, f"compared {compared} runs with the golden data")
    base = case_args("gptoss")[:6]  # --q --k --v of a 4-head case, no options
    bad = [
        (["--window", "-1,0"], 2, "--window '-1,0'"),
        (["--window", "3"], 2, "want L,R"),
        (["--window", "9223372036854775808,0"], 2, "0..2^63-1"),  # one past INT64_MAX
        (["--align", "left"], 2, "want top-left or bottom-right"),
        (["--softcap", "0"], 2, "--softcap 0"),
        (["--softcap", "-3"], 2, "--softcap -3"),
        (["--alibi", "8", "--alibi-slopes", os.path.join(DATA, "mixed_slopes.npy")], 2, "not both"),
        (["--alibi-slopes", os.path.join(DATA, "mixed_slopes.npy")], 1, "want (4,) [heads]"),
        (["--mask", os.path.join(DATA, "mixed_mask.npy")], 1, "--mask"),
    ]
    # the largest side attn.h takes is accepted (a window that covers every key)
    rc, out, err = run("--kernel", "blocked", *base, "--window", "9223372036854775807,0",
                       "--out", o_path)
    check(rc == 0, f"--window INT64_MAX,0 runs: rc {rc}: {err.strip()}")
    for extra, want_rc, want_msg in bad:
        rc, out, err = run("--kernel", "blocked", *base, *extra, "--out", o_path)
        check(rc == want_rc and want_msg in err,
              f"{extra}: want exit {want_rc} and '{want_msg}', got {rc}: {err.strip()}")
    # option values kernels (FTZ/DAZ) and the reference would read differently: subnormal,
    # rounding to 0 in float32 (1e-50 > 0 as typed), a subnormal 1/softcap or ALiBi slope
    flush = [
        (["--softcap", "1e-45"], 2, "--softcap 1e-45: want C in [1.17549e-38, 1.84467e+19]"),
        (["--softcap", "1e-50"], 2, "--softcap 1e-50: want C in ["),
        (["--softcap", "1e20"], 2, "--softcap 1e+20: want C in ["),
        (["--alibi", "1e-45"], 2, "--alibi 1e-45: want MAX_BIAS in [1.17549e-38, 126]"),
        (["--alibi", "127"], 2, "--alibi 127: want MAX_BIAS in ["),
        (["--scale", "1e-45"], 1, "--scale 1e-45: scale 1.4013e-45 is subnormal"),
        (["--scale", "-1e-39"], 1, "is subnormal"),
    ]
    for extra, want_rc, want_msg in flush:
        rc, out, err = run("--kernel", "flash__avx2", *base, *extra, "--out", o_path)
        if rc == 2 and "unknown kernel" in err:  # not an x86 build: a portable kernel
            rc, out, err = run("--kernel", "blocked", *base, *extra, "--out", o_path)
        check(rc == want_rc and want_msg in err and len(err.strip().splitlines()) == 1,
              f"{extra}: want exit {want_rc} and one line with '{want_msg}', got {rc}: "
              f"{err.strip()}")
    sub_slopes = os.path.join(tmp, "sub_slopes.npy")
    np.save(sub_slopes, np.array([0.5, 1e-40, 0.25, 0.125], np.float32))
    rc, out, err = run("--kernel", "blocked", *base, "--alibi-slopes", sub_slopes, "--out", o_path)
    check(rc == 1 and "ALiBi slope[1]" in err and "is subnormal" in err,
          f"subnormal slope: {rc}: {err.strip()}")
    # the smallest normal values are accepted and agree with the reference
    for extra in (["--softcap", "1.1754944e-38"], ["--alibi", "1.1754944e-38"],
                  ["--alibi", "126"], ["--scale", "1.1754944e-38"]):
        rc, out, err = run("--kernel", "blocked", *base, *extra, "--out", o_path, "--check")
        check(rc == 0 and "check: pass" in out, f"{extra}: {rc}: {out} {err.strip()}")
    # a NaN sink is an input outside the domain: refused by the kernel call, exit 1
    nan_sinks = os.path.join(tmp, "nan_sinks.npy")
    np.save(nan_sinks, np.array([0, np.nan, 0, 0], np.float32))
    rc, out, err = run("--kernel", "blocked", *base, "--sinks", nan_sinks, "--out", o_path)
    check(rc == 1 and "sink[1]" in err, f"NaN sink: {rc}: {err.strip()}")
clitest.finish("run_options")
