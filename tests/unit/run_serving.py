#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""`attnbench run --kv-lens` (docs/serving.md): a ragged batch (a prefill chunk, decode
tokens, a sequence without keys) run ragged and paged (pages in order and shuffled,
float32 and q8_0 K/V, a window, LSE) on a gathered and a fallback kernel, against an
independent NumPy float64 computation per sequence; a compute mode and --out-dtype apply
to the batch; bad descriptions, inputs outside the mode's range and outputs that overflow
--out-dtype are refused.

    run_serving.py PATH/TO/attnbench
"""
import os
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "cli"))
import clitest  # noqa: E402  (tests/cli: the CLI tests' shared check/run functions)
from clitest import check  # noqa: E402

clitest.init()

Q_LENS, KV_LENS = [6, 1, 1, 2], [40, 17, 300, 0]
H, KVH, DQK, DV = 8, 2, 64, 32


def reference(q, k, v, window_left=None):
    """O [total_q][H][DV] and LSE [H][total_q] in float64, sequence by sequence."""
    cq, ck = np.cumsum([0] + Q_LENS), np.cumsum([0] + KV_LENS)
    o = np.zeros((cq[-1], H, DV))
    lse = np.full((H, cq[-1]), -np.inf)
    for b in range(len(Q_LENS)):
        nq, nk = Q_LENS[b], KV_LENS[b]
        for h in range(H):
            g = h // (H // KVH)
            s = q[cq[b]:cq[b + 1], h] @ k[ck[b]:ck[b + 1], g].T / np.sqrt(DQK)
            for i in range(nq):  # bottom-right causal per sequence, and the window
                diag = i + nk - nq
                s[i, diag + 1:] = -np.inf
                if window_left is not None:
                    s[i, :max(0, diag - window_left)] = -np.inf
            if nk == 0:
                continue
            m = s.max(axis=1, keepdims=True)
            p = np.exp(s - m)
            o[cq[b]:cq[b + 1], h] = (p @ v[ck[b]:ck[b + 1], g]) / p.sum(axis=1, keepdims=True)
            lse[h, cq[b]:cq[b + 1]] = m[:, 0] + np.log(p.sum(axis=1))
    return o, lse


def q8_0(x):
    """K/V as q8_0 stores them (attn.h): per 32 values d = f16(max|x|/127), q = rint(x/d)."""
    b = x.reshape(-1, 32).astype(np.float64)
    d = (np.abs(b).max(axis=1, keepdims=True) / 127).astype(np.float16).astype(np.float64)
    qv = np.clip(np.rint(np.divide(b, d, out=np.zeros_like(b), where=d != 0)), -127, 127)
    return (qv * d).reshape(x.shape)


with clitest.tempdir() as tmp:
    rng = np.random.default_rng(7)
    q = rng.standard_normal((sum(Q_LENS), H, DQK)).astype(np.float32)
    k = rng.standard_normal((sum(KV_LENS), KVH, DQK)).astype(np.float32)
    v = rng.standard_normal((sum(KV_LENS), KVH, DV)).astype(np.float32)
    paths = {n: os.path.join(tmp, f"{n}.npy") for n in "qkv"}
    for n, a in zip("qkv", (q, k, v)):
        np.save(paths[n], a)
    lens = ["--kv-lens", " ".join(map(str, KV_LENS)), "--q-lens", " ".join(map(str, Q_LENS))]
    base = ["--q", paths["q"], "--k", paths["k"], "--v", paths["v"], "--causal", "--check"]
    out, lse_path = os.path.join(tmp, "o.npy"), os.path.join(tmp, "lse.npy")
    for kernel in ("flash__avx2", "naive", "blocked"):
        for dtype in ("f32", "q8_0"):
            for layout in ([], ["--page-size", "16"], ["--page-size", "16", "--page-order",
                                                     "shuffled"], ["--page-size", "1"]):
                for window in (None, 5):
                    args = ["--kernel", kernel, *base, *lens, *layout, "--kv-dtype", dtype,
                            "--out", out, "--lse", lse_path]
                    if window is not None:
                        args += ["--window", f"{window},0"]
                    rc, so, se = clitest.run("run", *args)
                    what = f"{kernel} {dtype} {layout} window {window}"
                    if rc != 0 and "unavailable" in se:
                        continue
                    if not check(rc == 0 and "check: pass" in so and
                                 ((" kv=" + dtype) in so) == (dtype != "f32"),
                                 f"{what}: rc {rc}, the K/V type on the line: {so} {se}"):
                        continue
                    kq = q8_0(k) if dtype == "q8_0" else k.astype(np.float64)
                    vq = q8_0(v) if dtype == "q8_0" else v.astype(np.float64)
                    want, want_lse = reference(q.astype(np.float64), kq, vq, window)
                    o, lse = np.load(out), np.load(lse_path)
                    check(o.shape == want.shape and lse.shape == want_lse.shape,
                          f"{what}: shapes {o.shape} {lse.shape}")
                    err = np.abs(o - want).max()
                    check(err < 2e-5, f"{what}: max |O - numpy| = {err}")
                    fin = np.isfinite(want_lse)
                    check(np.array_equal(fin, np.isfinite(lse)) and
                          np.abs(lse[fin] - want_lse[fin]).max() < 2e-5, f"{what}: LSE")
    # a compute mode applies to the batch (Q, K, V rounded to bfloat16 per sequence; the
    # report names it) and --out-dtype writes O and the LSE as binary16
    bf = lambda x: (((x.view(np.uint32).astype(np.uint64) + 0x7FFF +  # noqa: E731
                      ((x.view(np.uint32) >> 16) & 1)) >> 16).astype(np.uint32) << 16
                    ).view(np.float32).astype(np.float64)
    want, want_lse = reference(bf(q), bf(k), bf(v))
    for kernel in ("flash__avx2", "naive"):
        rc, so, se = clitest.run("run", "--kernel", kernel, *base, *lens, "--page-size", "16",
                                 "--compute", "bf16", "--out-dtype", "f16", "--out", out,
                                 "--lse", lse_path)
        if rc != 0 and "unavailable" in se:
            continue
        if check(rc == 0 and "compute=bf16" in so and "check: pass" in so
                 and "compute error (bf16 inputs vs float32, float64 reference)" in so,
                 f"{kernel} --kv-lens --compute bf16: the mode's error after the verdict: rc {rc}: {so} {se}"):
            o, lse = np.load(out), np.load(lse_path)
            fin = np.isfinite(want_lse)
            check(o.dtype == np.float16 and lse.dtype == np.float16 and
                  np.abs(o - want).max() <= 2 ** -11 * np.abs(want).max() + 2e-5 and
                  np.abs(lse[fin] - want_lse[fin]).max() <= 2 ** -11 * np.abs(want_lse[fin]).max(),
                  f"{kernel}: bf16 batch, O and LSE written as binary16")
    # refused: an input the mode cannot hold, in one sequence; an O that overflows
    # --out-dtype f16 (nothing written); --dtype other than f32 (packed files are float32)
    big_q, big_v = q.copy(), v.copy()
    big_q[6, 3, 5] = 70000.0  # token 6: sequence 1's only query token
    big_v[:] = 70000.0
    np.save(os.path.join(tmp, "bq.npy"), big_q)
    np.save(os.path.join(tmp, "bv.npy"), big_v)
    never = os.path.join(tmp, "never.npy")
    for bad, want_rc, text in (
            (["--q", os.path.join(tmp, "bq.npy"), "--compute", "f16"], 1, "sequence 1, head 3"),
            (["--v", os.path.join(tmp, "bv.npy"), "--out-dtype", "f16"], 1, "overflows the type"),
            (["--dtype", "bf16"], 2, "float32 packed files"),
            # a K/V value the --kv-dtype cannot hold: named, as on the dense path
            (["--v", os.path.join(tmp, "bv.npy"), "--kv-dtype", "f16"], 1,
             "--kv-dtype f16: V value 70000 at flat index 0"),
            # --page-order orders pages: without --page-size the batch is ragged
            (["--page-order", "shuffled"], 2, "give --page-size")):
        base = {"--q": paths["q"], "--k": paths["k"], "--v": paths["v"], "--out": never}
        rc, so, se = clitest.run("run", "--kernel", "naive", *lens,
                                 *clitest.with_overrides(base, bad))
        check(rc == want_rc and text in se and not os.path.exists(never),
              f"{bad[-2:]}: exit {want_rc} with {text!r}, no O ({rc}: {se.strip()!r})")
    # refused descriptions: exit 2 with the key named; a wrong token total: exit 1
    for bad, want in ((["--kv-lens", "zipf:3:4"], "kv_lens"),
                      (["--kv-lens", "40 17", "--q-lens", "1"], "q_lens"),
                      (["--page-size", "16"], "--kv-lens"),
                      (["--kv-lens", "40", "--page-order", "random"], "page-order")):
        rc, so, se = clitest.run("run", "--kernel", "naive", "--q", paths["q"], "--k",
                                 paths["k"], "--v", paths["v"], "--out", out, *bad)
        check(rc == 2 and want in se, f"{bad}: rc {rc}, stderr {se!r}")
    rc, so, se = clitest.run("run", "--kernel", "naive", "--q", paths["q"], "--k", paths["k"],
                             "--v", paths["v"], "--out", out, "--kv-lens", "40 17")
    check(rc == 1 and "packed by tokens" in se, f"a token total that differs: rc {rc}, {se!r}")
    # lengths the files do not hold cost nothing: two claimed 2^30-token contexts in pages of
    # 16 (page tables of 512 MiB) are refused on the files' token count, in small memory
    probe = ("import resource, subprocess, sys; r = subprocess.run(sys.argv[1:], capture_output=True,"
             " text=True); print(r.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss);"
             " sys.stderr.write(r.stderr)")
    r = subprocess.run([sys.executable, "-c", probe, clitest.BIN, "run", "--kernel", "naive", "--q", paths["q"],
                        "--k", paths["k"], "--v", paths["v"], "--out", out, "--kv-lens",
                        "1073741824 1073741824", "--page-size", "16"], capture_output=True, text=True)
    code, rss_kib = (int(x) for x in r.stdout.split())
    check(code == 1 and "packed by tokens" in r.stderr and rss_kib < 300 * 1024,
          f"claimed lengths beyond the files: exit 1 on the token count in {rss_kib >> 10} MiB ({r.stderr!r})")
    # a pool the memory rule refuses (4096 one-token sequences in pages of 65536 tokens: a
    # 32 GiB K pool at H1 D32) is refused by the estimate before any pool is stored
    one = np.ones((4096, 1, 32), dtype=np.float32)
    np.save(os.path.join(tmp, "one.npy"), one)
    rc, so, se = clitest.run("run", "--kernel", "naive", *(x for t in "qkv" for x in ("--" + t, os.path.join(tmp, "one.npy"))),
                             "--out", out, "--kv-lens", "1*4096", "--page-size", "65536",
                             env={"ATTNBENCH_MEMORY_LIMIT": "64M"})
    check(rc == 1 and "refused: this run" in se, f"a page pool beyond the memory rule: rc {rc}, {se!r}")

# `check --config` on a serving sweep: one case per batch (its lengths, pages, order),
# checked whole — and a batch larger than a check case holds is refused by name, not run.
with tempfile.TemporaryDirectory() as tmp:
    cfg = os.path.join(tmp, "serving.ini")
    with open(cfg, "w") as f:
        f.write("[s]\nkernels = flash__avx2\nheads = 8\nkv_heads = 2\nhead_dim = 64\n"
                "causal = true\nkv_lens = 40 300 17, fixed:2:100\nq_lens = decode\n"
                "page_size = 0, 16\npage_order = shuffled\n")
    rc, so, se = clitest.run("check", "--config", cfg, "--kernel", "naive", "--list-cases")
    check(rc == 0 and so.count("ragged") + so.count("paged") >= 4,
          f"check --config --list-cases on a serving sweep: rc {rc}: {so!r} {se!r}")
    rc, so, se = clitest.run("check", "--config", cfg, "--kernel", "naive")
    check(rc == 0 and "4 passed, 0 failed" in so, f"check --config on a serving sweep: rc {rc}: {so[-300:]!r} {se!r}")
    # a case's description holds all of a 64-sequence batch's lengths and its pages, so
    # --filter on the page words finds every paged case (longtail: lengths of 4-5 digits)
    with open(cfg, "w") as f:
        f.write("[s]\nkernels = naive\nheads = 2\nhead_dim = 8\ncausal = true\n"
                "kv_lens = longtail:64:4096:1, fixed:64:9999\nq_lens = decode\n"
                "page_size = 16\npage_order = shuffled\n")
    rc, so, se = clitest.run("check", "--config", cfg, "--list-cases")
    lines = so.strip().splitlines()
    rc2, so2, se2 = clitest.run("check", "--config", cfg, "--list-cases", "--filter", "page=16 shuffled")
    check(rc == 0 and len(lines) == 2 and all(ln.endswith(" page=16 shuffled") for ln in lines)
          and any(ln.count(",") >= 2 * 63 for ln in lines) and rc2 == 0 and so2 == so,
          f"check --config: 64-sequence batches described whole; --filter finds them all: {lines!r} / {so2!r} {se!r}")
    with open(cfg, "w") as f:
        f.write("[s]\nkernels = naive\nheads = 2\nhead_dim = 8\nkv_lens = fixed:65:4\n"
                "q_lens = decode\n")
    rc, so, se = clitest.run("check", "--config", cfg, "--kernel", "naive")
    check(rc == 2 and "65 sequences" in se, f"a batch of 65 sequences: rc {rc}, {se!r}")

clitest.finish("run_serving")
