#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""`attnbench run` bad input: every case must exit nonzero (2 for a bad command line or
unknown kernel, 1 for bad files), print a message naming the problem on stderr, and leave
no output file (nor a temporary) behind."""
import os

import numpy as np

import clitest
from clitest import check, run

clitest.init()
rng = np.random.default_rng(7)


def f32(*shape):
    return rng.standard_normal(shape).astype(np.float32)


with clitest.tempdir() as d:
    def save(name, arr, **kw):
        path = os.path.join(d, name)
        np.save(path, arr, **kw)
        return path

    def raw(name, data):
        path = os.path.join(d, name)
        with open(path, "wb") as f:
            f.write(data)
        return path

    Q = save("q.npy", f32(2, 4, 5, 8))
    K = save("k.npy", f32(2, 2, 7, 8))
    V = save("v.npy", f32(2, 2, 7, 3))
    out = os.path.join(d, "o.npy")

    # Sanity: the good inputs work (so every failure below is due to the one change).
    rc, so, se = run("run", "--kernel", "blocked", "--q", Q, "--k", K, "--v", V, "--out", out)
    check(rc == 0 and os.path.exists(out), f"good inputs run (got {rc}: {se})")
    if os.path.exists(out):
        os.remove(out)

    with open(K, "rb") as f:
        k_bytes = f.read()
    truncated = raw("trunc.npy", k_bytes[:-10])
    header_cut = raw("hcut.npy", k_bytes[:40])
    trailing = raw("trail.npy", k_bytes + b"\0\0\0\0junk")
    text = raw("text.npy", b"Q,K,V\n1,2,3\n")
    empty = raw("empty.npy", b"")
    nan_q = f32(2, 4, 5, 8)
    nan_q[1, 2, 3, 4] = np.nan

    def base(**over):
        a = {"kernel": "blocked", "q": Q, "k": K, "v": V, "out": out}
        a.update(over)
        args = ["run"]
        for key, val in a.items():
            if val is not None:
                args += [f"--{key}", val]
        return args

    cases = [
        # (what, args, expected exit code, text the message must contain)
        ("K float64", base(k=save("k64.npy", f32(2, 2, 7, 8).astype(np.float64))), 1, "float64 ('<f8')"),
        ("V int32", base(v=save("vi.npy", np.ones((2, 2, 7, 3), np.int32))), 1, "int32"),
        ("Q float64", base(q=save("q64.npy", f32(2, 4, 5, 8).astype(np.float64))), 1, "float64"),
        ("K big-endian", base(k=save("kbe.npy", f32(2, 2, 7, 8).astype(">f4"))), 1, "big-endian"),
        ("Q 3-D", base(q=save("q3.npy", f32(4, 5, 8))), 1, "Q (" + os.path.join(d, "q3.npy") + ") must be 4-D"),
        ("V 5-D", base(v=save("v5.npy", f32(1, 2, 2, 7, 3))), 1, "must be 4-D"),
        ("Fortran K", base(k=save("kf.npy", np.asfortranarray(f32(2, 2, 7, 8)))), 1, "Fortran"),
        ("empty dim", base(q=save("q0.npy", f32(2, 4, 0, 8))), 1, "empty dimension"),
        ("K batch", base(k=save("kb.npy", f32(1, 2, 7, 8))), 1, "K batch (dim 0) is 1 but Q batch is 2"),
        ("V batch", base(v=save("vb.npy", f32(3, 2, 7, 3))), 1, "V batch (dim 0) is 3"),
        ("V kv_heads", base(v=save("vh.npy", f32(2, 1, 7, 3))), 1, "V kv_heads (dim 1) is 1 but K kv_heads is 2"),
        ("V seq_kv", base(v=save("vs.npy", f32(2, 2, 6, 3))), 1, "V seq_kv (dim 2) is 6 but K seq_kv is 7"),
        ("K head_dim", base(k=save("kd.npy", f32(2, 2, 7, 9))), 1, "K head_dim_qk (dim 3) is 9 but Q head_dim_qk is 8"),
        ("heads % kv_heads", base(k=save("k3.npy", f32(2, 3, 7, 8)), v=save("v3.npy", f32(2, 3, 7, 3))), 1,
         "not a multiple of K/V kv_heads"),
        ("truncated data", base(k=truncated), 1, "truncated data"),
        ("truncated header", base(k=header_cut), 1, "truncated header"),
        ("trailing garbage", base(k=trailing), 1, "trailing garbage"),
        ("text file", base(v=text), 1, "not a .npy file"),
        ("empty file", base(q=empty), 1, "not a .npy file"),
        ("missing file", base(q=os.path.join(d, "nope.npy")), 1, "cannot open"),
        ("directory as input", base(q=d), 1, "directory"),
        ("NaN in Q", base(q=save("qnan.npy", nan_q)), 1, "non-finite"),
        ("unknown kernel", base(kernel="no_such_kernel"), 2, "unknown kernel 'no_such_kernel'"),
        ("unknown option", base() + ["--bogus", "1"], 2, "unknown option '--bogus'"),
        ("missing --v", base(v=None), 2, "missing required option --v"),
        ("missing --out", base(out=None), 2, "missing required option --out"),
        ("--out without value", base(out=None) + ["--out"], 2, "--out needs a value"),
        ("value swallowed", ["run", "--kernel", "blocked", "--q", "--k", K, "--v", V, "--out", out], 2,
         "--q needs a value"),
        ("repeated --q", base() + ["--q", Q], 2, "--q given more than once"),
        ("--causal=1", base() + ["--causal=1"], 2, "--causal takes no value"),
        ("--threads junk", base() + ["--threads", "2x"], 2, "--threads expects an integer"),
        ("--threads negative", base() + ["--threads=-1"], 2, "out of range"),
        ("--tile-q huge", base() + ["--tile-q", "99999999999999999999"], 2, "--tile-q expects an integer"),
        ("--scale junk", base() + ["--scale", "0.5abc"], 2, "--scale expects a finite number"),
        ("--scale nan", base() + ["--scale", "nan"], 2, "--scale expects a finite number"),
        ("--scale inf", base() + ["--scale=1e999"], 2, "--scale expects a finite number"),
        ("--scale beyond float32", base() + ["--scale", "1e300"], 2, "float32"),
        ("out dir missing", base(out=os.path.join(d, "no", "o.npy")), 1, "cannot write O"),
        ("out is a directory", base(out=d), 1, "cannot write O"),
    ]

    # A kernel this CPU cannot run (simulated by masking every SIMD ISA), if one exists.
    masked = clitest.list_kernels(env={"ATTNBENCH_ISA_MASK": "0"})
    needs_isa = [n for n, ok, _ in masked if not ok]
    if needs_isa:
        cases.append(("unavailable kernel", base(kernel=needs_isa[0]), 1, "unavailable on this CPU"))
    else:
        print("note: every kernel is portable; the unavailable-kernel case is not exercised")

    before = set(os.listdir(d))
    for what, args, want_rc, want_msg in cases:
        env = {"ATTNBENCH_ISA_MASK": "0"} if what == "unavailable kernel" else None
        rc, so, se = run(*args, env=env)
        check(rc == want_rc, f"{what}: exit code {rc}, expected {want_rc} ({se.strip()})")
        check(want_msg in se, f"{what}: stderr lacks {want_msg!r}: {se.strip()!r}")
        check(se.startswith("attnbench run: "), f"{what}: message names the command: {se.strip()!r}")
        check(not os.path.exists(out), f"{what}: output file left behind")
        left = set(os.listdir(d)) - before
        check(not left, f"{what}: files left behind: {sorted(left)}")

    # Unknown kernel lists the kernels that can run.
    rc, so, se = run(*base(kernel="no_such_kernel"))
    check("available kernels:" in se and "blocked" in se, f"unknown kernel lists kernels: {se!r}")

clitest.finish("run_errors")
