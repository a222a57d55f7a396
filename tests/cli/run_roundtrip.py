#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""`attnbench run` round trip: random Q/K/V .npy files for shapes covering cross-attention
both ways, GQA, MQA, causal with seq_q != seq_kv (including fully masked rows),
head_dim_v != head_dim_qk and a custom scale; every AVAILABLE kernel from `attnbench list`
runs on each, and its O.npy must agree with attention computed here in float64 NumPy
(independent of the C reference) to a relative max error max|o-ref|/max|ref| <= 2e-5."""
import os

import numpy as np

import clitest
from clitest import check, run

REL_TOL = 2e-5


def attention_f64(q, k, v, causal, scale):
    """softmax(scale * Q K^T + mask) V in float64, bottom-right aligned causal mask,
    query head h uses K/V head h // (H // KVH); rows that see no key give zeros."""
    q, k, v = (x.astype(np.float64) for x in (q, k, v))
    B, H, Sq, _ = q.shape
    KVH, Skv = k.shape[1], k.shape[2]
    group = H // KVH
    k = np.repeat(k, group, axis=1)  # head h -> kv head h // group
    v = np.repeat(v, group, axis=1)
    s = np.einsum("bhqd,bhkd->bhqk", q, k) * scale
    visible = np.ones((Sq, Skv), dtype=bool)
    if causal:
        i = np.arange(Sq)[:, None]
        j = np.arange(Skv)[None, :]
        visible = j <= i + (Skv - Sq)
    s = np.where(visible, s, -np.inf)
    row_max = s.max(axis=-1, keepdims=True)
    row_max = np.where(np.isfinite(row_max), row_max, 0.0)
    p = np.where(visible, np.exp(s - row_max), 0.0)
    denom = p.sum(axis=-1, keepdims=True)
    p = np.divide(p, denom, out=np.zeros_like(p), where=denom > 0)
    return np.einsum("bhqk,bhkd->bhqd", p, v)


# (B, H, KVH, Sq, Skv, Dqk, Dv, causal, scale or None, what)
SHAPES = [
    (1, 1, 1, 1, 1, 1, 1, False, None, "smallest"),
    (2, 4, 4, 7, 7, 16, 16, False, None, "MHA, batch 2"),
    (1, 4, 4, 5, 37, 8, 8, False, None, "cross, seq_q < seq_kv"),
    (1, 2, 2, 37, 5, 8, 8, False, None, "cross, seq_q > seq_kv"),
    (2, 8, 2, 19, 19, 32, 32, True, None, "GQA 4:1, causal"),
    (1, 6, 1, 9, 23, 24, 24, True, None, "MQA, causal, seq_q < seq_kv"),
    (1, 3, 1, 23, 9, 16, 16, True, None, "MQA, causal, seq_q > seq_kv (fully masked rows)"),
    (1, 2, 1, 6, 6, 2, 4, False, None, "seed-like dqk=2, dv=4"),
    (1, 4, 2, 33, 65, 64, 80, True, None, "GQA, causal, cross, dv != dqk"),
    (2, 2, 2, 17, 45, 40, 24, False, 0.3, "dv < dqk, custom scale"),
    (1, 8, 8, 1, 300, 128, 128, True, None, "decode: seq_q = 1"),
    (1, 2, 1, 70, 130, 96, 96, True, None, "GQA, causal, beyond default tiles"),
]

clitest.init()
kernels = [name for name, ok, _ in clitest.list_kernels() if ok]
check({"reference", "naive", "blocked"} <= set(kernels), f"portable kernels available: {kernels}")
rng = np.random.default_rng(20240611)
worst = {}
with clitest.tempdir() as d:
    for n, (B, H, KVH, Sq, Skv, Dqk, Dv, causal, scale, what) in enumerate(SHAPES):
        q = rng.standard_normal((B, H, Sq, Dqk)).astype(np.float32)
        k = rng.standard_normal((B, KVH, Skv, Dqk)).astype(np.float32)
        v = rng.standard_normal((B, KVH, Skv, Dv)).astype(np.float32)
        paths = {x: os.path.join(d, f"{x}{n}.npy") for x in "qkv"}
        for i, (x, arr) in enumerate(zip("qkv", (q, k, v))):
            # every .npy format version NumPy writes: 1.0, 2.0 and 3.0
            version = [(1, 0), (2, 0), (3, 0)][(n + i) % 3]
            with open(paths[x], "wb") as f:
                np.lib.format.write_array(f, arr, version=version, allow_pickle=False)
        eff_scale = float(np.float32(scale if scale is not None else 1.0 / np.sqrt(Dqk)))
        ref = attention_f64(q, k, v, causal, eff_scale)
        ref_max = float(np.abs(ref).max())
        for kname in kernels:
            out = os.path.join(d, f"o{n}_{kname}.npy")
            args = ["run", "--kernel", kname, "--q", paths["q"], "--k", paths["k"], "--v", paths["v"],
                    "--out", out]
            if causal:
                args.append("--causal")
            if scale is not None:
                args += ["--scale", repr(scale)]
            if n % 3 == 1:
                args += ["--threads", "2"]
            if n % 2 == 0:  # also the built-in comparison with the C reference
                args.append("--check")
            rc, so, se = run(*args)
            if not check(rc == 0, f"{kname} on {what}: exit {rc}: {se.strip()}"):
                continue
            if n % 2 == 0:
                check("check: pass" in so, f"{kname} on {what}: --check reports a pass: {so!r}")
            o = np.load(out, allow_pickle=False)
            check(o.dtype == np.float32 and o.shape == (B, H, Sq, Dv) and o.flags.c_contiguous,
                  f"{kname} on {what}: O is float32 C-order {(B, H, Sq, Dv)}, got {o.dtype} {o.shape}")
            if o.shape != ref.shape:
                continue
            err = float(np.abs(o.astype(np.float64) - ref).max())
            rel = err / ref_max if ref_max > 0 else err
            worst[kname] = max(worst.get(kname, 0.0), rel)
            check(np.isfinite(o).all(), f"{kname} on {what}: O is finite")
            check(rel <= REL_TOL, f"{kname} on {what}: relative max error {rel:.3g} > {REL_TOL}")
            if causal and Sq > Skv:  # rows i < Sq - Skv see no key: exact zeros
                check(not o[:, :, : Sq - Skv, :].any(), f"{kname} on {what}: fully masked rows are zero")
        check(not [f for f in os.listdir(d) if ".tmp." in f], "no temporary files left behind")

for kname, rel in sorted(worst.items()):
    print(f"{kname:24s} worst relative max error {rel:.3g} (limit {REL_TOL})")
clitest.finish("run_roundtrip")
