# SPDX-License-Identifier: MIT
"""The installed attnbench module against an independent NumPy float64 attention.

Run with the Python that has the module installed (tests/pip_install.py does so in a
fresh venv). Every available kernel is run over shapes that cover MHA, GQA, MQA, cross,
causal (bottom-right), decode and head_dim_v != head_dim_qk, and compared with the float64
implementation below; then every error path must raise its exception class (run once
more with ATTNBENCH_ISA_MASK=0, where the SIMD kernels must raise KernelUnavailableError).
Exit 0 = all passed, 1 = a failure (each printed)."""

import os
import sys

import numpy as np

import attnbench as ab

FAILS = []


def expect(cond, what):
    if not cond:
        FAILS.append(what)
        print("FAIL:", what)


def attention64(q, k, v, causal, scale):
    """softmax(scale·Q·Kᵀ + mask)·V in float64, bottom-right causal, grouped K/V heads."""
    q, k, v = (x.astype(np.float64) for x in (q, k, v))
    b, h, sq, _ = q.shape
    hk, skv = k.shape[1], k.shape[2]
    g = np.arange(h) // (h // hk)
    s = np.einsum("bhid,bhjd->bhij", q, k[:, g]) * scale
    if causal:
        i, j = np.arange(sq)[:, None], np.arange(skv)[None, :]
        s = np.where(j <= i + (skv - sq), s, -np.inf)
    m = s.max(axis=-1, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    p = np.exp(s - m)
    den = p.sum(axis=-1, keepdims=True)
    o = np.einsum("bhij,bhjd->bhid", p, v[:, g])
    return np.where(den > 0, o / np.where(den > 0, den, 1.0), 0.0)


SHAPES = [  # batch, heads, kv_heads, seq_q, seq_kv, dqk, dv, causal
    (1, 4, 4, 17, 17, 16, 16, False), (2, 8, 2, 33, 33, 32, 32, True),
    (1, 4, 1, 1, 70, 64, 64, True), (1, 2, 2, 9, 40, 24, 8, True),
    (2, 3, 3, 12, 5, 7, 13, True), (1, 2, 1, 65, 130, 64, 64, False),
]


def inputs(rng, b, h, hk, sq, skv, dqk, dv):
    return (rng.standard_normal((b, h, sq, dqk), dtype=np.float32),
            rng.standard_normal((b, hk, skv, dqk), dtype=np.float32),
            rng.standard_normal((b, hk, skv, dv), dtype=np.float32))


def test_kernels():
    ks = ab.kernels()
    names = [k.name for k in ks]
    expect("reference" in names and "naive" in names, f"kernels() lacks the portable ones: {names}")
    expect(len(set(names)) == len(names), "duplicate kernel names")
    expect(ab.kernel_names(available_only=True) == [k.name for k in ks if k.available],
           "kernel_names(available_only) disagrees with kernels()")
    for k in ks:
        expect(k.available or k.why, f"{k.name}: unavailable without a reason")
    rng = np.random.default_rng(13)
    ran = 0
    for k in (k for k in ks if k.available):
        for b, h, hk, sq, skv, dqk, dv, causal in SHAPES:
            q, kk, v = inputs(rng, b, h, hk, sq, skv, dqk, dv)
            scale = 0.7 if dqk == 7 else None
            want = attention64(q, kk, v, causal, 0.7 if scale else 1 / np.sqrt(dqk))
            o = ab.run(k.name, q, kk, v, causal=causal, scale=scale, threads=2)
            err = np.abs(o.astype(np.float64) - want).max()
            expect(o.shape == (b, h, sq, dv) and o.dtype == np.float32,
                   f"{k.name}: output {o.shape} {o.dtype}")
            expect(err < 1e-4, f"{k.name} {b, h, hk, sq, skv, dqk, dv, causal}: max err {err}")
            r = ab.check(k.name, q, kk, v, causal=causal, scale=scale, tile_q=4, tile_kv=8)
            expect(r.passed and r.verdict == "pass" and r and r.worst_ratio <= 1,
                   f"{k.name}: check {r}")
            ran += 1
    expect(ran >= 6 * 3, f"only {ran} kernel runs")
    # out= is written in place and returned.
    q, kk, v = inputs(rng, 1, 2, 2, 5, 6, 4, 4)
    out = np.full((1, 2, 5, 4), np.nan, dtype=np.float32)
    got = ab.run("naive", q, kk, v, out=out)
    expect(got is out and np.abs(out - attention64(q, kk, v, False, 0.5)).max() < 1e-5,
           "run(out=) did not write the output in place")


def test_check_output():
    rng = np.random.default_rng(5)
    q, k, v = inputs(rng, 1, 4, 2, 20, 30, 16, 16)
    good = attention64(q, k, v, True, 0.25).astype(np.float32)
    r = ab.check_output(good, q, k, v, causal=True)
    expect(r.passed, f"check_output of the float64 answer: {r}")
    ref = ab.reference(q, k, v, causal=True)
    expect(np.abs(ref - good).max() < 1e-6, "reference() differs from float64 attention")
    bad = good.copy()
    bad[0, 3, 19, 2] += 1e-3
    r = ab.check_output(bad, q, k, v, causal=True)
    expect(not r.passed and r.verdict == "fail" and r.message and
           r.worst_index == np.ravel_multi_index((0, 3, 19, 2), bad.shape),
           f"a wrong element was not caught: {r}")
    wrong_mask = attention64(q, k, v, False, 0.25).astype(np.float32)
    expect(not ab.check_output(wrong_mask, q, k, v, causal=True).passed,
           "a non-causal answer passed the causal check")
    q2 = q.copy()
    q2[0, 0, 0, 0] = np.inf
    r = ab.check("naive", q2, k, v, causal=True)
    expect(r.verdict == "inconclusive" and "finite" in r.message, f"inf input: {r}")


def raises(cls, fn, *args, contains="", **kw):
    try:
        fn(*args, **kw)
    except cls as e:
        expect(isinstance(e, ab.AttnError), f"{cls.__name__} is not an AttnError")
        expect(contains in str(e), f"{cls.__name__} message '{e}' lacks '{contains}'")
        return
    except Exception as e:  # noqa: BLE001
        expect(False, f"expected {cls.__name__}, got {type(e).__name__}: {e}")
        return
    expect(False, f"expected {cls.__name__}, nothing raised ({fn.__name__} {kw})")


def test_errors():
    rng = np.random.default_rng(1)
    q, k, v = inputs(rng, 1, 4, 2, 8, 8, 16, 16)
    raises(ab.DtypeError, ab.run, "naive", q.astype(np.float64), k, v, contains="float64")
    raises(TypeError, ab.run, "naive", q, k.astype(np.float16), v)
    raises(ab.LayoutError, ab.run, "naive", np.asfortranarray(q), k, v, contains="contiguous")
    strided = np.zeros((1, 4, 8, 32), np.float32)[..., ::2]
    raises(ab.LayoutError, ab.run, "naive", strided, k, v, contains="q")
    raises(ab.ShapeError, ab.run, "naive", q[0], k, v, contains="4-D")
    raises(ab.ShapeError, ab.run, "naive", q, k[..., :8].copy(), v, contains="head_dim_qk")
    raises(ab.ShapeError, ab.run, "naive", q, k, v[:, :, :5].copy(), contains="seq_kv")
    raises(ab.ShapeError, ab.run, "naive", q, k, v[:, :1].copy(), contains="kv_heads")
    raises(ab.ShapeError, ab.run, "naive", q, np.concatenate([k, k]), v, contains="batch")
    raises(ab.InvalidProblemError, ab.run, "naive", q[:, :3].copy(), k, v, contains="heads")
    raises(ab.InvalidProblemError, ab.run, "naive", q[:, :, :0].copy(), k, v)
    raises(ab.InvalidProblemError, ab.run, "naive", q, k, v, scale=float("nan"), contains="scale")
    raises(ab.InvalidProblemError, ab.run, "naive", q, k, v, scale="x")
    raises(ab.InvalidOptionError, ab.run, "naive", q, k, v, threads=100000,
           contains="threads")
    raises(ab.InvalidOptionError, ab.run, "naive", q, k, v, tile_q=-1)
    raises(ab.InvalidOptionError, ab.run, "naive", q, k, v, threads=1.5)
    # strict argument types: scale a real number (not a str or bool), threads and tiles
    # ints (not bools); a masked array is refused (its mask would be ignored)
    raises(ab.InvalidProblemError, ab.run, "naive", q, k, v, scale="0.5", contains="real number")
    raises(ab.InvalidProblemError, ab.run, "naive", q, k, v, scale=b"0.5")
    raises(ab.InvalidProblemError, ab.run, "naive", q, k, v, scale=True, contains="real number")
    raises(ab.InvalidProblemError, ab.check, "naive", q, k, v, scale=np.True_)
    raises(ab.InvalidProblemError, ab.reference, q, k, v, scale=1 + 0j)
    raises(ab.InvalidOptionError, ab.run, "naive", q, k, v, threads=True, contains="bool")
    raises(ab.InvalidOptionError, ab.check, "naive", q, k, v, threads=False, contains="bool")
    # causal is a bool, as attention's is_causal: a truthy string is not "causal"
    raises(ab.InvalidOptionError, ab.run, "naive", q, k, v, causal="no", contains="not a bool")
    raises(ab.InvalidOptionError, ab.check_output, np.zeros((1, 4, 8, 16), np.float32), q, k, v,
           causal=1, contains="not a bool")
    raises(ab.InvalidOptionError, ab.reference, q, k, v, causal=None, contains="not a bool")
    raises(ab.InvalidOptionError, ab.run, "naive", q, k, v, tile_q=np.True_, contains="bool")
    raises(ab.InvalidOptionError, ab.run, "naive", q, k, v, tile_kv=True, contains="bool")
    raises(ab.InvalidProblemError, ab.run, "naive", q, k, v, scale=1e-45, contains="subnormal")
    for good in (0.25, 1, np.float32(0.25), np.float64(0.25), np.int64(1)):
        o = ab.run("naive", q, k, v, scale=good, threads=np.int64(1))
        expect(np.array_equal(o, ab.run("naive", q, k, v, scale=float(good))),
               f"scale={good!r} ({type(good).__name__}) reads as float({good!r})")
    qm = np.ma.masked_array(q, mask=np.zeros(q.shape, bool))
    qm[0, 0, 0, 0] = np.ma.masked
    raises(ab.DtypeError, ab.run, "naive", qm, k, v, contains="MaskedArray")
    raises(ab.DtypeError, ab.run, "naive", q, np.ma.masked_array(k), v, contains="k: a numpy.ma")
    raises(ab.DtypeError, ab.check, "naive", q, k, np.ma.masked_array(v), contains="MaskedArray")
    raises(ab.DtypeError, ab.run, "naive", q, k, v, out=np.ma.masked_array(np.empty(
        (1, 4, 8, 16), np.float32)), contains="out: a numpy.ma")
    raises(ab.DtypeError, ab.check_output, np.ma.masked_array(np.empty((1, 4, 8, 16), np.float32)),
           q, k, v, contains="o: a numpy.ma")
    raises(ab.UnknownKernelError, ab.run, "no_such_kernel", q, k, v, contains="no_such_kernel")
    raises(ab.UnknownKernelError, ab.check, "no_such_kernel", q, k, v)
    raises(LookupError, ab.run, "no_such_kernel", q, k, v)
    raises(ab.UnknownKernelError, ab.run, "naive\0x", q, k, v)
    raises(ab.UnknownKernelError, ab.run, 3, q, k, v)
    rec = next(x for x in ab.kernels() if x.name == "naive")
    expect(np.array_equal(ab.run(rec, q, k, v), ab.run("naive", q, k, v)), "run(Kernel record)")
    q_inf = q.copy()
    q_inf[0, 1, 2, 3] = np.inf
    raises(ab.DomainError, ab.run, "naive", q_inf, k, v, contains="Q[0][1][2][3]")
    raises(ab.DomainError, ab.run, "naive", q * np.float32(1e30), k * np.float32(1e30), v,
           contains="overflow")
    out_ro = np.empty((1, 4, 8, 16), np.float32)
    out_ro.flags.writeable = False
    raises(ab.LayoutError, ab.run, "naive", q, k, v, out=out_ro, contains="read-only")
    raises(ab.ShapeError, ab.run, "naive", q, k, v, out=np.empty((1, 4, 8, 8), np.float32))
    qo = q.copy()
    raises(ab.LayoutError, ab.run, "naive", qo, k, v, out=qo.reshape(1, 4, 8, 16),
           contains="overlaps")
    raises(ab.ShapeError, ab.check_output, np.empty((1, 4, 8, 8), np.float32), q, k, v)
    raises(ab.DtypeError, ab.run, "naive", [[1.0]], k, v)
    if os.environ.get("ATTNBENCH_ISA_MASK") == "0":  # every SIMD kernel hidden
        expect(any(not x.available and "needs" in x.why for x in ab.kernels()),
               "ATTNBENCH_ISA_MASK=0 hid no kernel")
    for kern in (k for k in ab.kernels() if not k.available):
        raises(ab.KernelUnavailableError, ab.run, kern.name, q, k, v, contains="unavailable")
        raises(ab.KernelUnavailableError, ab.check, kern.name, q, k, v)


def test_other_arrays():
    rng = np.random.default_rng(2)
    q, k, v = inputs(rng, 1, 2, 2, 6, 6, 8, 8)
    want = ab.run("reference", q, k, v)
    # The buffer protocol (memoryview) and DLPack (a NumPy array through __dlpack__ only).
    mv = memoryview(q)
    expect(np.array_equal(ab.run("reference", mv, k, v), want), "memoryview input")

    class DL:
        def __init__(self, a):
            self.a = a

        def __dlpack__(self, stream=None):
            return self.a.__dlpack__()

        def __dlpack_device__(self):
            return self.a.__dlpack_device__()

    if hasattr(np, "from_dlpack"):
        expect(np.array_equal(ab.run("reference", DL(q), DL(k), DL(v)), want), "DLPack input")
    try:
        import torch
    except ImportError:
        print("torch not installed: PyTorch tensors not tried")
        return
    tq, tk, tv = (torch.from_numpy(x) for x in (q, k, v))
    expect(np.array_equal(ab.run("reference", tq, tk, tv), want), "torch tensors")
    raises(ab.LayoutError, ab.run, "reference", tq.transpose(2, 3), tk, tv)
    raises(ab.DtypeError, ab.run, "reference", tq.double(), tk, tv)


def test_settings():
    """settings(): the resolver `attnbench run` uses; run() takes regtile and kv_split."""
    rng = np.random.default_rng(5)
    q, k, v = inputs(rng, 1, 4, 2, 24, 40, 32, 32)
    s = ab.settings("naive", q, k, v, threads=2, tile_q=16)
    expect(s.values["threads"] == 2 and s.sources["threads"] == "command line",
           f"threads=2 is the command-line layer: {s}")
    expect(s.values["tile_q"] == 16 and s.sources["tile_q"] == "command line", f"tile_q: {s}")
    expect(s.sources["regtile"] == "kernel default" and "tile_q" in s.explain,
           f"regtile default, explain text: {s}")
    flash = [x.name for x in ab.kernels() if x.available and x.name.startswith("flash__")]
    if flash:
        name = flash[0]
        ref = ab.run(name, q, k, v)
        # every register-tile variant and split of a flash kernel gives the same bits
        expect(np.array_equal(ab.run(name, q, k, v, regtile=1, kv_split=2), ref),
               f"{name} regtile=1 kv_split=2 == default")
        expect(ab.settings(name, q, k, v, regtile=1).values["regtile"] == 1, "regtile=1")
        raises(ab.InvalidOptionError, ab.run, name, q, k, v, regtile="9x9", contains="9x9")
        raises(ab.InvalidOptionError, ab.run, name, q, k, v, kv_split=-1)


def main():
    test_kernels()
    test_settings()
    test_check_output()
    test_errors()
    test_other_arrays()
    print(f"{len(FAILS)} failures" if FAILS else "attnbench module: all tests passed")
    return 1 if FAILS else 0


if __name__ == "__main__":
    sys.exit(main())
