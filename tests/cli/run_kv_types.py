#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""K/V element types through the CLI: `attnbench run --kv-dtype f16|bf16|q8_0`
stores float32 K/V as the type (round to nearest even; q8_0 blocks of 32 with scale
max|x|/127) and the kernels' O must match attention computed here in float64 NumPy on the
values so stored (the conversion emulated independently in NumPy); --check prints the
storage error; `.npy` '<f2' K/V are read as f16 (the same output, bitwise, as --kv-dtype
f16 on their float32 values); bad types, mixed dtypes, a float64 Q, q8_0 head dims and
values that overflow the type are refused with one clear line and no output file."""
import os

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


def bf16(x):
    """float32 -> bfloat16 (round to nearest even) -> float32, in integer NumPy."""
    b = x.astype(np.float32).view(np.uint32).astype(np.uint64)
    b = (b + 0x7FFF + ((b >> 16) & 1)) >> 16
    return (b.astype(np.uint32) << 16).view(np.float32)


def q8_0(x):
    """float32 -> q8_0 (per 32 along the last axis) -> float32."""
    blocks = x.astype(np.float32).reshape(*x.shape[:-1], -1, 32)
    d = (np.abs(blocks).max(axis=-1, keepdims=True) / np.float32(127)).astype(np.float16)
    d = d.astype(np.float32)
    safe = np.where(d == 0, np.float32(1), d)
    q = np.clip(np.rint(blocks / safe), -127, 127)
    return np.where(d == 0, np.float32(0), q * d).astype(np.float32).reshape(x.shape)


STORED = {"f16": lambda x: x.astype(np.float16).astype(np.float32), "bf16": bf16, "q8_0": q8_0}

clitest.init()
kernels = [name for name, ok, _ in clitest.list_kernels() if ok]
simd = [k for k in kernels if "__" in k]
wanted = ["reference", "naive", "blocked"] + simd[:2] + simd[-1:]
rng = np.random.default_rng(15)

with clitest.tempdir() as d:
    def path(name):
        return os.path.join(d, name)

    def save(name, a):
        np.save(path(name), a)
        return path(name)

    # 1. --kv-dtype against NumPy on the stored values, and --check's storage error
    for (B, H, KVH, Sq, Skv, D, causal) in [(1, 4, 2, 9, 70, 64, True), (2, 2, 1, 1, 257, 32, False)]:
        q = rng.standard_normal((B, H, Sq, D)).astype(np.float32)
        k = rng.standard_normal((B, KVH, Skv, D)).astype(np.float32)
        v = rng.standard_normal((B, KVH, Skv, D)).astype(np.float32)
        qp, kp, vp = save("q.npy", q), save("k.npy", k), save("v.npy", v)
        exact = attention_f64(q, k, v, causal)
        for t, conv in STORED.items():
            want = attention_f64(q, conv(k), conv(v), causal)
            storage = np.abs(want - exact).max()
            check(storage > 0, f"{t}: the type changes the answer (storage error {storage:.3g})")
            for kern in wanted:
                out = path(f"o_{t}_{kern}.npy")
                args = ["run", "--kernel", kern, "--q", qp, "--k", kp, "--v", vp, "--out", out,
                        "--kv-dtype", t, "--check"] + (["--causal"] if causal else [])
                rc, so, se = run(*args)
                if not check(rc == 0, f"{kern} --kv-dtype {t}: exit 0 ({rc}: {se.strip()})"):
                    continue
                o = np.load(out)
                rel = np.abs(o - want).max() / np.abs(want).max()
                check(rel <= REL_TOL, f"{kern} {t} B{B} Skv{Skv}: rel err {rel:.3g} vs NumPy on the stored values")
                check(f"kv={t}" in so, f"{kern} {t}: the report names the type: {so!r}")
                line = [ln for ln in so.splitlines() if ln.startswith("storage error")]
                if check(len(line) == 1, f"{kern} {t}: one storage error line: {so!r}"):
                    got = float(line[0].split("max abs ")[1].split(",")[0])
                    check(abs(got - storage) <= 6e-3 * storage + 1e-6,  # printed with 3 digits
                          f"{kern} {t}: storage error {got:.4g} = NumPy's {storage:.4g}")
        # f32 through --kv-dtype f32 is the plain run, bitwise
        rc1, _, _ = run("run", "--kernel", "blocked", "--q", qp, "--k", kp, "--v", vp, "--out", path("a.npy"))
        rc2, _, _ = run("run", "--kernel", "blocked", "--q", qp, "--k", kp, "--v", vp, "--out", path("b.npy"),
                        "--kv-dtype", "f32")
        check(rc1 == 0 and rc2 == 0 and np.array_equal(np.load(path("a.npy")), np.load(path("b.npy"))),
              "--kv-dtype f32 is the float32 run, bitwise")

    # 2. '<f2' K/V files: read as f16, the same output as --kv-dtype f16 on their values
    q = rng.standard_normal((1, 4, 5, 48)).astype(np.float32)
    k16 = rng.standard_normal((1, 2, 33, 48)).astype(np.float16)
    v16 = rng.standard_normal((1, 2, 33, 40)).astype(np.float16)
    qp, k2, v2 = save("q.npy", q), save("k16.npy", k16), save("v16.npy", v16)
    k4, v4 = save("k32.npy", k16.astype(np.float32)), save("v32.npy", v16.astype(np.float32))
    want = attention_f64(q, k16, v16, False)
    for kern in wanted:
        rc, so, se = run("run", "--kernel", kern, "--q", qp, "--k", k2, "--v", v2, "--out", path("h.npy"), "--check")
        rc2, _, se2 = run("run", "--kernel", kern, "--q", qp, "--k", k4, "--v", v4, "--out", path("c.npy"),
                          "--kv-dtype", "f16")
        if not check(rc == 0 and rc2 == 0, f"{kern} '<f2' K/V: exit 0 ({rc}: {se.strip()}; {rc2}: {se2.strip()})"):
            continue
        o = np.load(path("h.npy"))
        check(np.abs(o - want).max() / np.abs(want).max() <= REL_TOL, f"{kern} '<f2': matches NumPy")
        check(np.array_equal(o, np.load(path("c.npy"))), f"{kern}: '<f2' files = --kv-dtype f16, bitwise")
        check("kv=f16" in so and "storage error" not in so, f"{kern} '<f2': kv=f16, no storage line: {so!r}")
    # `check --o` reads '<f2' K/V too: NumPy's float64 output on the f16 values passes,
    # an output off by 1e-3 fails
    opath = save("o64.npy", want.astype(np.float32))
    rc, so, se = run("check", "--o", opath, "--q", qp, "--k", k2, "--v", v2)
    check(rc == 0 and "1 passed" in so, f"check --o with '<f2' K/V passes ({rc}: {so.strip()} {se.strip()})")
    rc, so, se = run("check", "--o", save("obad.npy", (want + 1e-3).astype(np.float32)), "--q", qp,
                     "--k", k2, "--v", v2)
    check(rc == 1 and "1 failed" in so, f"check --o with '<f2' K/V fails a wrong O ({rc}: {so.strip()})")
    # converting f16 files further: --kv-dtype bf16 stores their (exact) float32 values as bf16
    rc, so, se = run("run", "--kernel", "blocked", "--q", qp, "--k", k2, "--v", v2, "--out", path("x.npy"),
                     "--kv-dtype", "bf16", "--check")
    check(rc == 0 and "kv=bf16" in so, f"'<f2' files with --kv-dtype bf16 ({rc}: {se.strip()})")

    # 3. errors: one line, the right exit code, no output file
    q32, k32, v32 = (save(n, rng.standard_normal(s).astype(np.float32))
                     for n, s in (("eq.npy", (1, 2, 3, 48)), ("ek.npy", (1, 2, 9, 48)), ("ev.npy", (1, 2, 9, 48))))
    big = rng.standard_normal((1, 2, 9, 48)).astype(np.float32)
    big[0, 1, 4, 7] = 1e5
    bad_f16 = rng.standard_normal((1, 2, 9, 48)).astype(np.float16)
    bad_f16[0, 0, 2, 3] = np.inf
    cases = [
        ("unknown type", ["--kv-dtype", "q8"], 2, "--kv-dtype 'q8'"),
        ("q8_0 head dim 48", ["--kv-dtype", "q8_0"], 1, "multiples of 32"),
        ("f16 overflow", ["--kv-dtype", "f16", "--k", save("big.npy", big)], 1, "overflows"),
        ("K f2, V f4", ["--k", save("k2.npy", rng.standard_normal((1, 2, 9, 48)).astype(np.float16))], 1, "same dtype"),
        ("Q f8", ["--q", save("q8.npy", rng.standard_normal((1, 2, 3, 48)))], 1, "float64"),
        ("non-finite f2", ["--k", save("kinf.npy", bad_f16), "--v", save("vf2.npy", np.zeros((1, 2, 9, 48), np.float16))], 1, "non-finite"),
    ]
    for what, extra, want_rc, text in cases:
        out = path("never.npy")
        base = {"--kernel": "blocked", "--q": q32, "--k": k32, "--v": v32, "--out": out}
        for i in range(0, len(extra), 2):
            if extra[i] in base:
                base[extra[i]] = extra[i + 1]
        args = [x for kv in base.items() for x in kv] + [x for i in range(0, len(extra), 2)
                                                          if extra[i] not in ("--q", "--k", "--v")
                                                          for x in extra[i:i + 2]]
        rc, so, se = run("run", *args)
        lines = se.strip().splitlines()
        check(rc == want_rc and len(lines) == 1 and text in se and not os.path.exists(out),
              f"{what}: exit {want_rc}, one line with {text!r}, no O ({rc}: {se.strip()!r})")

clitest.finish("run_kv_types")
