#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Compute modes through the CLI (docs/precision.md): `run --compute bf16|f16` on float32
.npy files gives attention on Q, K, V rounded to that type (ties to even; the rounding
emulated here in integer NumPy) and `--compute int8 --kv-dtype q8_0` attention on Q8_0 Q
and K, for several kernels; --check prints the mode's error against float32; bfloat16
files ('<V2' as np.save writes ml_dtypes.bfloat16, and '|V2') and float16 Q are read,
--out-dtype writes O as f16/bf16; bad modes, --dtype mismatches, int8 without q8_0 K/V and
f16 inputs above 65504 are refused with one line and no output; `check --compute` runs
only that mode's cases and reports the mode's error in text and JSON, as `check --o --compute`
does for one output (with --kv-dtype q8_0: an int8 output); bench configs sweep
`compute` (point names carry /compute:MODE); `list` shows the native modes."""
import json
import os
import re

import numpy as np

import clitest
from clitest import check, run

REL_TOL = 2e-5


def attention_f64(q, k, v, causal):
    q, k, v = (x.astype(np.float64) for x in (q, k, v))
    group = q.shape[1] // k.shape[1]
    k = np.repeat(k, group, axis=1)
    v = np.repeat(v, group, axis=1)
    s = np.einsum("bhqd,bhkd->bhqk", q, k) / np.sqrt(q.shape[-1])
    if causal:
        sq, skv = q.shape[2], k.shape[2]
        vis = np.arange(skv)[None, :] <= np.arange(sq)[:, None] + (skv - sq)
        s = np.where(vis, s, -np.inf)
    s -= s.max(axis=-1, keepdims=True)
    p = np.exp(s)
    return np.einsum("bhqk,bhkd->bhqd", p / p.sum(axis=-1, keepdims=True), v)


def bf16_bits(x):
    b = x.astype(np.float32).view(np.uint32).astype(np.uint64)
    return ((b + 0x7FFF + ((b >> 16) & 1)) >> 16).astype(np.uint16)


def bf16(x):
    return (bf16_bits(x).astype(np.uint32) << 16).view(np.float32)


def q8_0(x):
    blocks = x.astype(np.float32).reshape(*x.shape[:-1], -1, 32)
    d = (np.abs(blocks).max(axis=-1, keepdims=True) / np.float32(127)).astype(np.float16)
    d = d.astype(np.float32)
    safe = np.where(d == 0, np.float32(1), d)
    q = np.clip(np.rint(blocks / safe), -127, 127)
    return np.where(d == 0, np.float32(0), q * d).astype(np.float32).reshape(x.shape)


ROUND = {"bf16": bf16, "f16": lambda x: x.astype(np.float16).astype(np.float32)}

clitest.init()
listed = [(name, line) for name, ok, line in clitest.list_kernels() if ok]
kernels = [name for name, _ in listed]
simd = [k for k in kernels if "__" in k]
# Kernels that run a mode on its unit (`list`: compute=MODE,...) add the mode's own rounding.
native = {name: set(re.search(r"compute=(\S+)", line).group(1).split(",")) for name, line in listed}
wanted = ["reference", "naive", "blocked"] + simd[:2] + simd[-1:]
rng = np.random.default_rng(34)

with clitest.tempdir() as d:
    def path(name):
        return os.path.join(d, name)

    def save(name, a):
        np.save(path(name), a)
        return path(name)

    # 1. --compute bf16|f16 on float32 files, and int8 on q8_0 K/V, against NumPy
    B, H, KVH, Sq, Skv, D = 1, 4, 2, 9, 70, 64
    q = (3 * rng.standard_normal((B, H, Sq, D))).astype(np.float32)
    k = rng.standard_normal((B, KVH, Skv, D)).astype(np.float32)
    v = rng.standard_normal((B, KVH, Skv, D)).astype(np.float32)
    qp, kp, vp = save("q.npy", q), save("k.npy", k), save("v.npy", v)
    exact = attention_f64(q, k, v, True)
    modes = {m: attention_f64(f(q), f(k), f(v), True) for m, f in ROUND.items()}
    modes["int8"] = attention_f64(q8_0(q), q8_0(k), q8_0(v), True)
    for mode, want in modes.items():
        err32 = np.abs(want - exact).max() / np.abs(want).max()
        check(err32 > 10 * REL_TOL, f"{mode}: the mode changes the answer ({err32:.3g})")
        for kern in wanted:
            out = path(f"o_{mode}_{kern}.npy")
            args = ["run", "--kernel", kern, "--q", qp, "--k", kp, "--v", vp, "--out", out,
                    "--causal", "--compute", mode, "--check"]
            if mode == "int8":
                args += ["--kv-dtype", "q8_0"]
            rc, so, se = run(*args)
            if not check(rc == 0, f"{kern} --compute {mode}: exit 0 ({rc}: {se.strip()})"):
                continue
            o = np.load(out)
            check(o.dtype == np.float32, f"{kern} {mode}: O is float32 by default")
            rel = np.abs(o - want).max() / np.abs(want).max()
            tol = REL_TOL
            if mode == "bf16" and "bf16" in native[kern]:
                # P rounded to bf16 (|δp| ≤ 2^-8·p, l over the unrounded p): each output moves
                # by at most 2^-8·max|V| (docs/precision.md), here relative to max|want|.
                tol += 2.0**-8 * np.abs(bf16(v)).max() / np.abs(want).max()
            check(rel <= tol, f"{kern} {mode}: rel err {rel:.3g} vs NumPy on the rounded inputs "
                              f"(bound {tol:.3g})")
            check(f"compute={mode}" in so, f"{kern} {mode}: the report names the mode: {so!r}")
            line = [ln for ln in so.splitlines() if ln.startswith("compute error")]
            if check(len(line) == 1, f"{kern} {mode}: one compute error line: {so!r}"):
                got = float(line[0].split("rel ")[1])
                ref_err = np.abs(want - attention_f64(q, q8_0(k) if mode == "int8" else k,
                                                      q8_0(v) if mode == "int8" else v, True)).max()
                ref_err /= np.abs(want).max()
                check(abs(got - ref_err) <= 6e-3 * ref_err + 1e-6,
                      f"{kern} {mode}: compute error {got:.4g} = NumPy's {ref_err:.4g}")

    # 2. bfloat16 and float16 files; --out-dtype
    qb, kb, vb = (bf16_bits(x) for x in (q, k, v))
    qbp, kbp, vbp = save("qb.npy", qb.view("V2")), save("kb.npy", kb.view("V2")), save("vb.npy", vb.view("V2"))
    with open(qbp, "rb") as f:
        raw = f.read()
    check(b"'|V2'" in raw, "numpy saves 2-byte void as '|V2'")
    with open(path("qb_lt.npy"), "wb") as f:  # ml_dtypes' bfloat16 as np.save writes it
        f.write(raw.replace(b"'|V2'", b"'<V2'"))
    for qfile in (qbp, path("qb_lt.npy")):
        rc, so, se = run("run", "--kernel", "blocked", "--q", qfile, "--k", kbp, "--v", vbp, "--out",
                         path("ob.npy"), "--causal", "--dtype", "bf16", "--out-dtype", "bf16", "--check")
        if check(rc == 0, f"bf16 files ({os.path.basename(qfile)}): exit 0 ({rc}: {se.strip()})"):
            with open(path("ob.npy"), "rb") as f:
                check(b"'<V2'" in f.read(128), "--out-dtype bf16 writes '<V2'")
            ob = np.load(path("ob.npy")).view(np.uint16)
            check(np.array_equal(ob, bf16_bits(np.load(path("o_bf16_blocked.npy")))),
                  "bf16 files = --compute bf16 on float32 files, O rounded to bf16")
            check("kv=bf16" in so, f"bf16 files: kv=bf16 ({so!r})")
            # --check judged the float32 O; the line says so and gives the file's rounding,
            # within half a bfloat16 ulp (2^-8 relative) of every value
            m = re.search(r"the bf16 file rounds it by up to (\S+) \(at most 2\^-8 \|O\|", so)
            written = (ob.astype(np.uint32) << 16).view(np.float32)
            check(m is not None and 0 < float(m[1]) <= 2 ** -8 * np.abs(written).max() * 1.01,
                  f"--check --out-dtype bf16 names the rounding of the file ({so!r})")
    rc, so, se = run("run", "--kernel", "blocked", "--q", save("qh.npy", q.astype(np.float16)), "--k", kp,
                     "--v", vp, "--out", path("oh.npy"), "--causal", "--out-dtype", "f16")
    if check(rc == 0, f"float16 Q: exit 0 ({rc}: {se.strip()})"):
        oh = np.load(path("oh.npy"))
        want = attention_f64(q.astype(np.float16), k, v, True)
        check(oh.dtype == np.float16 and np.abs(oh - want).max() <= 2 ** -10 * np.abs(want).max(),
              "float16 Q, O written as '<f2'")

    # 3. errors: one line, the exit code, no output
    big = q.copy()
    big[0, 2, 3, 5] = 70000.0
    cases = [
        ("unknown mode", ["--compute", "int4"], 2, "--compute 'int4'"),
        ("int8 on f32 K/V", ["--compute", "int8"], 1, "needs kv_dtype q8_0"),
        ("f16 above 65504", ["--compute", "f16", "--q", save("big.npy", big)], 1, "Q[0][2][3][5]"),
        ("--dtype mismatch", ["--dtype", "bf16"], 1, "holds f32"),
        ("--out-dtype q8_0", ["--out-dtype", "q8_0"], 2, "--out-dtype 'q8_0'"),
    ]
    for what, extra, want_rc, text in cases:
        out = path("never.npy")
        base = {"--kernel": "blocked", "--q": qp, "--k": kp, "--v": vp, "--out": out}
        rc, so, se = run("run", *clitest.with_overrides(base, extra))
        lines = se.strip().splitlines()
        check(rc == want_rc and len(lines) == 1 and text in se and not os.path.exists(out),
              f"{what}: exit {want_rc}, one line with {text!r}, no O ({rc}: {se.strip()!r})")

    # 4. check --compute: only that mode's cases; the mode's error in text and JSON
    rc, so, se = run("check", "--quick", "--kernel", "blocked", "--compute", "int8", "--json",
                     path("c.json"), "--verbose")
    check(rc == 0, f"check --compute int8 exits 0 ({rc}: {se.strip()})")
    check("int8 vs f32 rel err" in so, f"verdict lines carry the mode's error: {so[:400]!r}")
    rep = json.load(open(path("c.json")))
    res = rep["results"]
    check(res and all(r["compute"] == "int8" and r["compute_err_vs_f32"] > 0 for r in res),
          f"JSON records the mode and its error: {res[:1]}")
    rc, so, se = run("check", "--quick", "--kernel", "blocked", "--list-cases")
    check(any("compute=bf16" in ln for ln in so.splitlines()) and any("compute=int8" in ln for ln in so.splitlines()),
          "the matrix has compute-mode cases")

    # 4b. check --o: an output computed in a mode is checked in that mode, its verdict line
    # and JSON carry the mode and its error; --kv-dtype q8_0 makes int8 outputs checkable
    # (K/V stored as q8_0 as run stored them: the storage error line); a bf16 output
    # checked as f32 fails; --kv-dtype without --o is a usage error.
    for mode, store in (("bf16", ()), ("int8", ("--kv-dtype", "q8_0"))):
        o_mode = path(f"o_{mode}.npy")
        rc, so, se = run("run", "--kernel", "blocked", "--q", qp, "--k", kp, "--v", vp, "--out", o_mode,
                         "--compute", mode, *store)
        check(rc == 0, f"run --compute {mode} {' '.join(store)} ({rc}: {se.strip()})")
        j = path(f"o_{mode}.json")
        rc, so, se = run("check", "--q", qp, "--k", kp, "--v", vp, "--o", o_mode, "--compute", mode, *store,
                         "--json", j)
        rep = json.load(open(j)) if os.path.exists(j) else {"results": [{}]}
        r0 = rep["results"][0]
        check(rc == 0 and f"; {mode} vs f32 rel err" in so and r0.get("compute") == mode
              and (r0.get("compute_err_vs_f32") or 0) > 0,
              f"check --o --compute {mode}: pass, the mode's error in text and JSON ({rc}: {so!r} {se!r} {r0})")
        check(("storage error (K/V as q8_0" in so) == bool(store),
              f"check --o {' '.join(store) or 'without --kv-dtype'}: the storage error line iff K/V were stored: {so!r}")
        rc, so, se = run("check", "--q", qp, "--k", kp, "--v", vp, "--o", o_mode, *store)
        check(rc == 1 and "check: FAIL" in so, f"the {mode} output checked as f32 fails ({rc}: {so!r})")
    rc, so, se = run("check", "--quick", "--kernel", "blocked", "--kv-dtype", "q8_0")
    check(rc == 2 and "--kv-dtype applies only with --o" in se, f"check --kv-dtype without --o: exit 2 ({rc}: {se!r})")

    # 5. bench: the compute key, swept; names carry the mode; int8 needs q8_0
    cfg = path("c.ini")
    with open(cfg, "w") as f:
        f.write("[s]\nkernels = blocked\nheads = 2\nhead_dim = 32\nseq_len = 16\n"
                "kv_dtype = f32, q8_0\ncompute = f32, bf16, int8\n")
    rc, so, se = run("bench", "--config", cfg, "--dry-run")
    names = [ln.split()[0] for ln in so.splitlines() if ln.startswith("blocked/")]
    check(rc == 0 and len(names) == 5, f"bench sweeps compute: 5 points ({rc}: {so!r} {se!r})")
    check(sum("/compute:bf16/" in n for n in names) == 2 and sum("/q8_0/compute:int8/" in n for n in names) == 1,
          f"point names carry the mode: {names}")
    rc, so, se = run("bench", "--config", cfg, "--dry-run", "--compute", "f16")
    check(rc == 0 and sum("/compute:f16/" in ln for ln in so.splitlines()) == 2,
          f"bench --compute replaces the config's list ({rc}: {so!r})")
    with open(cfg, "w") as f:
        f.write("[s]\nkernels = blocked\nheads = 2\nhead_dim = 32\nseq_len = 16\ncompute = int8\n")
    rc, so, se = run("bench", "--config", cfg, "--dry-run")
    check(rc == 2 and "needs kv_dtype q8_0" in se, f"int8 without q8_0 in a sweep is refused ({rc}: {se!r})")

    # 6. list: each kernel's native modes
    rc, so, se = run("list", "--json")
    ks = {k["name"]: k for k in json.loads(so)}
    check(ks["reference"]["native_compute_modes"] == ["bf16", "f16", "int8"], "reference runs every mode")
    check(ks["naive"]["native_compute_modes"] == [], "naive gets rounded copies")
    rc, so, se = run("list")
    check(any(ln.startswith("naive ") and "compute=rounded" in ln for ln in so.splitlines()),
          "list text: compute=rounded")

clitest.finish("run_compute")
