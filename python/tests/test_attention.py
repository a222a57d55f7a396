# SPDX-License-Identifier: MIT
"""attnbench.attention(), check_attention() and quantize(): every argument against an
independent NumPy float64 attention written from attn.h's formulas, the checker's
verdicts (and that they fail on wrong answers), every error, and — when torch is
importable — torch tensors in and out and equality with
torch.nn.functional.scaled_dot_product_attention.

    test_attention.py [--require-torch]     (exit 77 without torch when required)
"""

import sys

import numpy as np

import attnbench as ab

FAILS = []


def expect(cond, what):
    if not cond:
        FAILS.append(what)
        print("FAIL:", what)


def raises(cls, fn, *args, contains="", **kw):
    try:
        fn(*args, **kw)
    except cls as e:
        expect(contains in str(e), f"{cls.__name__} message {str(e)!r} lacks {contains!r}")
        return
    except Exception as e:  # noqa: BLE001 - report the wrong exception
        expect(False, f"expected {cls.__name__}, got {type(e).__name__}: {e}")
        return
    expect(False, f"expected {cls.__name__}, nothing raised ({fn.__name__} {kw})")


def attention64(q, k, v, *, causal=False, align="top_left", scale=None, window=None,
                softcap=None, slopes=None, sinks=None, mask=None):
    """O and LSE in float64 from attn.h's "Attention variants" formulas."""
    q, k, v = (x.astype(np.float64) for x in (q, k, v))
    b, h, sq, d = q.shape
    hk, skv = k.shape[1], k.shape[2]
    g = np.arange(h) // (h // hk)
    s = np.einsum("bhid,bhjd->bhij", q, k[:, g]) * (1 / np.sqrt(d) if scale is None else scale)
    if softcap:
        s = softcap * np.tanh(s / softcap)
    i, j = np.arange(sq)[:, None], np.arange(skv)[None, :]
    off = skv - sq if align == "bottom_right" else 0
    if slopes is not None:
        s = s + np.asarray(slopes, np.float64)[None, :, None, None] * (j - i - off)
    if mask is not None:
        s = s + mask
    seen = np.ones((sq, skv), bool)
    if causal:
        seen &= j <= i + off
    if window is not None:
        left, right = (-1 if w is None else w for w in window)
        if left >= 0:
            seen &= j - (i + off) >= -left
        if right >= 0:
            seen &= j - (i + off) <= right
    s = np.where(seen, s, -np.inf)
    m = s.max(axis=-1, keepdims=True)
    if sinks is not None:
        m = np.maximum(m, np.asarray(sinks, np.float64)[None, :, None, None])
    m = np.where(np.isfinite(m), m, 0.0)
    p = np.exp(s - m)
    den = p.sum(axis=-1, keepdims=True)
    with np.errstate(divide="ignore"):
        lse = (np.log(den) + m)[..., 0]
    if sinks is not None:
        den = den + np.exp(np.asarray(sinks, np.float64)[None, :, None, None] - m)
    o = np.einsum("bhij,bhjd->bhid", p, v[:, g])
    seen_any = p.sum(axis=-1, keepdims=True) > 0
    return np.where(seen_any, o / np.where(den > 0, den, 1.0), 0.0), lse


def alibi_slopes(h, max_bias):
    n = 2 ** int(np.floor(np.log2(h)))
    return np.array([2 ** (-max_bias * (x + 1) / n) if x < n else
                     2 ** (-max_bias * (2 * (x - n) + 1) / (2 * n)) for x in range(h)])


def inputs(rng, b, h, hk, sq, skv, d, dv=None):
    return (rng.standard_normal((b, h, sq, d), dtype=np.float32),
            rng.standard_normal((b, hk, skv, d), dtype=np.float32),
            rng.standard_normal((b, hk, skv, dv or d), dtype=np.float32))


def agree(o, want, what, lse=None, want_lse=None, **opts):
    """o within 1e-4 of the float64 answer (inputs N(0,1)) and the checker passes it."""
    err = np.abs(np.asarray(o, np.float64) - want).max()
    expect(err < 1e-4, f"{what}: max |o - float64| = {err}")
    if lse is not None:
        fin = np.isfinite(want_lse)
        expect(np.array_equal(np.isfinite(lse), fin), f"{what}: LSE -inf rows differ")
        e = np.abs(lse[fin] - want_lse[fin]).max() if fin.any() else 0
        expect(e < 1e-4, f"{what}: max |lse - float64| = {e}")


def test_options():
    rng = np.random.default_rng(3)
    kernels = ab.kernel_names(available_only=True)
    expect(ab.default_kernel() in kernels, f"default kernel {ab.default_kernel()}")
    for sq, skv in ((4, 256), (37, 19), (16, 16)):
        q, k, v = inputs(rng, 2, 4, 2, sq, skv, 32)
        h = 4
        sl = rng.uniform(-0.25, 1, h).astype(np.float32)
        sk = rng.standard_normal(h).astype(np.float32)
        fmask = rng.standard_normal((sq, skv)).astype(np.float32)
        bmask = rng.random((2, h, sq, skv)) > 0.2
        cases = [
            ("causal top-left", dict(is_causal=True), {}),
            ("causal bottom-right", dict(is_causal=True, align="bottom_right"), {}),
            ("window", dict(window=(5, 2)), {}),
            ("causal window unbounded left", dict(is_causal=True, window=(None, 3)), {}),
            ("softcap", dict(softcap=3.0, scale=0.5), {}),
            ("alibi max_bias", dict(alibi=8.0, is_causal=True),
             dict(slopes=alibi_slopes(h, 8.0))),
            ("alibi slopes", dict(alibi=sl), dict(slopes=sl)),
            ("sinks", dict(sinks=sk), dict(sinks=sk)),
            ("float mask", dict(attn_mask=fmask), dict(mask=fmask)),
            ("bool mask per head", dict(attn_mask=bmask),
             dict(mask=np.where(bmask, 0.0, -np.inf))),
            ("bool mask [1,1,Sq,Skv]", dict(attn_mask=bmask[:1, :1]),
             dict(mask=np.where(bmask[:1, :1], 0.0, -np.inf))),
            ("everything", dict(is_causal=True, align="bottom_right", window=(7, None),
                                softcap=20.0, alibi=sl, sinks=sk, attn_mask=fmask),
             dict(slopes=sl, sinks=sk, mask=fmask)),
        ]
        for what, opts, extra in cases:
            ref_opts = dict(causal=opts.get("is_causal", False),
                            align=opts.get("align", "top_left"), scale=opts.get("scale"),
                            window=opts.get("window"), softcap=opts.get("softcap"), **extra)
            want, want_lse = attention64(q, k, v, **ref_opts)
            for kern in sorted({ab.default_kernel(), "naive", "blocked"}):
                o, lse = ab.attention(q, k, v, kernel=kern, return_lse=True, enable_gqa=True,
                                      threads=2, **opts)
                tag = f"{what} Sq={sq} Skv={skv} {kern}"
                agree(o, want, tag, lse, want_lse)
                r = ab.check_attention(o, q, k, v, lse=lse, enable_gqa=True, **opts)
                expect(r.passed, f"{tag}: checker {r}")
    # The default alignment is PyTorch's (top-left); bottom-right equals run(causal=True).
    q, k, v = inputs(rng, 1, 2, 2, 4, 256, 64)
    o_br = ab.attention(q, k, v, is_causal=True, align="bottom_right", kernel="naive")
    expect(np.array_equal(o_br, ab.run("naive", q, k, v, causal=True)),
           "align='bottom_right' differs from run(causal=True)")
    o_tl = ab.attention(q, k, v, is_causal=True, kernel="naive")
    expect(np.abs(o_tl - o_br).max() > 0.1, "top-left and bottom-right agree on Sq=4 Skv=256")


def test_checker_fails():
    rng = np.random.default_rng(7)
    q, k, v = inputs(rng, 1, 2, 2, 4, 64, 16)
    o, lse = ab.attention(q, k, v, is_causal=True, return_lse=True)
    # the other alignment's answer, a one-element error, a wrong LSE: each fails
    r = ab.check_attention(o, q, k, v, is_causal=True, align="bottom_right")
    expect(r.verdict == "fail", f"wrong alignment passed: {r}")
    bad = o.copy()
    bad.flat[37] += 1e-3
    r = ab.check_attention(bad, q, k, v, is_causal=True)
    expect(r.verdict == "fail" and r.worst_index == 37, f"a wrong element: {r}")
    bad_lse = lse.copy()
    bad_lse.flat[3] += 1e-3
    r = ab.check_attention(o, q, k, v, is_causal=True, lse=bad_lse)
    expect(r.verdict == "fail", f"a wrong LSE passed: {r}")
    expect(ab.check_attention(o, q, k, v, is_causal=True, lse=lse).passed, "the right LSE")
    sk = np.full(2, 1.5, np.float32)
    r = ab.check_attention(o, q, k, v, is_causal=True, sinks=sk)
    expect(r.verdict == "fail", f"the output without sinks passed the sinks check: {r}")


def f16_values(bits):
    return bits.view(np.float16).astype(np.float64)


def bf16_values(bits):
    return (bits.astype(np.uint32) << 16).view(np.float32).astype(np.float64)


def q8_0_values(blocks, dim):
    rows = blocks.reshape(-1, dim // 32, 34)
    d = rows[:, :, :2].copy().view(np.float16).astype(np.float64)
    qs = rows[:, :, 2:].copy().view(np.int8).astype(np.float64)
    return (d * qs).reshape(blocks.shape[:-1] + (dim,))


def compute_modes_in_force():
    """Whether this build's kernels implement the compute modes (else they are refused)."""
    q, k, v = inputs(np.random.default_rng(1), 1, 1, 1, 1, 2, 32)
    try:
        ab.attention(q, k, v, compute="bf16")
        return True
    except ab.InvalidProblemError as e:
        if "implement only f32" not in str(e):
            raise
        return False


def test_kv_types_and_compute():
    rng = np.random.default_rng(11)
    q, k, v = inputs(rng, 1, 4, 2, 9, 70, 64)
    f16 = np.float16
    # a float16 Q is refused unless compute='f16' says how to read it
    raises(ab.DtypeError, ab.attention, q.astype(f16), k, v, enable_gqa=True,
           contains="compute='f16'")
    for dt, decode in (("f16", f16_values), ("bf16", bf16_values),
                       ("q8_0", lambda b: q8_0_values(b, 64))):
        ks, vs = ab.quantize(k, dt), ab.quantize(v, dt)
        expect(ks.dtype == (np.uint8 if dt == "q8_0" else np.uint16), f"quantize {dt} dtype")
        kd, vd = decode(ks), decode(vs)
        expect(np.abs(kd - k).max() < (0.05 if dt == "q8_0" else 0.02),
               f"quantize {dt}: values far from the input")
        want, _ = attention64(q, kd, vd, causal=True)
        for kern in (ab.default_kernel(), "naive"):
            o = ab.attention(q, ks, vs, kv_dtype=dt, is_causal=True, enable_gqa=True,
                             kernel=kern)
            agree(o, want, f"kv_dtype={dt} {kern}")
            r = ab.check_attention(o, q, ks, vs, kv_dtype=dt, is_causal=True, enable_gqa=True)
            expect(r.passed, f"kv_dtype={dt} {kern}: {r}")
    # float16 arrays are read as f16 K/V directly
    o = ab.attention(q, k.astype(f16), v.astype(f16), kv_dtype="f16", enable_gqa=True)
    want, _ = attention64(q, k.astype(f16), v.astype(f16))
    agree(o, want, "float16 arrays with kv_dtype='f16'")
    # compute modes: refused while the kernels do not implement them (never run as f32)
    if not compute_modes_in_force():
        print("compute modes: this build's kernels implement only f32; checking the refusal")
        for comp in ("bf16", "f16"):
            raises(ab.InvalidProblemError, ab.attention, q, k, v, compute=comp,
                   enable_gqa=True, contains="implement only f32")
        return
    k8, v8 = ab.quantize(k, "q8_0"), ab.quantize(v, "q8_0")
    for comp, kd, kk, vv in (("bf16", "f32", k, v), ("f16", "f32", k, v),
                             ("int8", "q8_0", k8, v8)):
        for kern in (ab.default_kernel(), "naive"):
            o = ab.attention(q, kk, vv, compute=comp, kv_dtype=kd, enable_gqa=True,
                             kernel=kern, is_causal=True)
            r = ab.check_attention(o, q, kk, vv, compute=comp, kv_dtype=kd, enable_gqa=True,
                                   is_causal=True)
            expect(r.passed, f"compute={comp} {kern}: {r}")
            # the rounded problem's answer is not the f32 problem's: the f32 check sees it
            r = ab.check_attention(o, q, kk, vv, kv_dtype=kd, enable_gqa=True, is_causal=True)
            expect(not r.passed, f"compute={comp} {kern} passes the f32 check: {r}")
    raises(ab.InvalidProblemError, ab.attention, q, k, v, compute="int8", enable_gqa=True)


def test_errors():
    rng = np.random.default_rng(5)
    q, k, v = inputs(rng, 1, 4, 4, 8, 8, 32)
    A = ab.attention
    raises(ab.DtypeError, A, q.astype(np.float64), k, v, contains="float32")
    raises(ab.DtypeError, A, q, k.astype(np.float16), v, contains="kv_dtype='f16'")
    raises(ab.DtypeError, A, q, k.view(np.uint16)[..., :32], v)
    raises(ab.DtypeError, A, q, k, v, kv_dtype="bf16", contains="bfloat16")
    raises(ab.DtypeError, A, q, k, v, kv_dtype="q8_0", contains="uint8")
    raises(ab.DtypeError, A, q.astype(np.int32), k, v)
    raises(ab.ShapeError, A, q, np.zeros((1, 4, 8, 35), np.uint8), ab.quantize(v, "q8_0"),
           kv_dtype="q8_0", contains="34-byte")
    raises(ab.InvalidProblemError, A, q, k, v, compute="int8")
    raises(ab.DtypeError, A, q, k, v, attn_mask=np.zeros((8, 8)), contains="bool or float32")
    raises(ab.ShapeError, A, q, k, v, attn_mask=np.zeros((8, 7), np.float32))
    raises(ab.ShapeError, A, q, k, v, attn_mask=np.zeros((3, 8, 8), np.float32))
    raises(ab.ShapeError, A, q, k, v, attn_mask=np.zeros(8, np.float32))
    raises(ab.DomainError, A, q, k, v, attn_mask=np.full((8, 8), np.nan, np.float32))
    raises(ab.ShapeError, A, q, k, v, sinks=np.zeros(3, np.float32), contains="(4,)")
    raises(ab.DtypeError, A, q, k, v, sinks=np.zeros(4))
    raises(ab.ShapeError, A, q, k, v, alibi=np.ones(2, np.float32))
    raises(ab.InvalidOptionError, A, q, k, v, alibi=-1.0)
    raises(ab.InvalidOptionError, A, q, k, v, alibi=True)
    raises(ab.InvalidProblemError, A, q, k, v, alibi=500.0)
    raises(ab.InvalidOptionError, A, q, k, v, window=5, contains="(left, right)")
    raises(ab.InvalidOptionError, A, q, k, v, window=(-2, 0))
    raises(ab.InvalidOptionError, A, q, k, v, window=(1.5, 0))
    raises(ab.InvalidOptionError, A, q, k, v, softcap=0)
    raises(ab.InvalidOptionError, A, q, k, v, softcap="3")
    raises(ab.InvalidProblemError, A, q, k, v, softcap=1e30)
    raises(ab.InvalidOptionError, A, q, k, v, align="top-left", contains="top_left")
    raises(ab.InvalidOptionError, A, q, k, v, kv_dtype="fp16", contains="'f16'")
    raises(ab.InvalidOptionError, A, q, k, v, compute="fp32")
    raises(ab.InvalidOptionError, A, q, k, v, is_causal=1)
    raises(ab.InvalidOptionError, A, q, k, v, return_lse="yes")
    raises(ab.InvalidOptionError, A, q, k, v, dropout_p=0.1, contains="inference")
    raises(ab.InvalidOptionError, A, q, k, v, enable_gqa=None)
    raises(ab.InvalidOptionError, A, q, k, v, threads=-1)
    raises(ab.InvalidOptionError, A, q, k, v, threads=1.5)
    raises(ab.InvalidProblemError, A, q, k, v, scale="0.5")
    raises(ab.UnknownKernelError, A, q, k, v, kernel="nope")
    raises(ab.LayoutError, A, q[:, :, ::2], k, v, contains="C-contiguous")
    raises(ab.ShapeError, A, q[0], k, v, contains="4-D")
    # An empty size is named by its tensor and axis (not the native field's name).
    raises(ab.InvalidProblemError, A, np.ascontiguousarray(q[:, :, :0]), k, v,
           contains="q: shape (1, 4, 0, 32) has seq_q (axis 2) = 0")
    raises(ab.InvalidProblemError, A, q, np.ascontiguousarray(k[:, :, :0]), np.ascontiguousarray(v[:, :, :0]),
           contains="seq_kv (axis 2) = 0")
    raises(TypeError, ab.benchmark, q, k, v, is_casual=True,
           contains="benchmark() got an unexpected keyword argument 'is_casual'; did you mean")
    raises(ab.ShapeError, A, q, np.ascontiguousarray(k[:, :, :5]), v, contains="seq_kv")
    k2, v2, k3, v3 = (np.ascontiguousarray(x[:, :n]) for x, n in ((k, 2), (v, 2), (k, 3), (v, 3)))
    raises(ab.ShapeError, A, q, k2, v2, contains="enable_gqa=True")
    raises(ab.InvalidProblemError, A, q, k3, v3, enable_gqa=True, contains="multiple")
    bad = q.copy()
    bad[0, 0, 0, 0] = np.inf
    raises(ab.DomainError, A, bad, k, v, contains="not finite")
    C = ab.check_attention
    o = A(q, k, v)
    raises(ab.InvalidOptionError, C, o, q, k, v, kernel="naive")
    raises(ab.DtypeError, C, o.astype(np.float64), q, k, v)
    raises(ab.ShapeError, C, o[:, :, :4], q, k, v)
    raises(ab.ShapeError, C, o, q, k, v, lse=np.zeros((1, 4, 7), np.float32))
    raises(ab.InvalidOptionError, ab.quantize, k, "f32")
    raises(ab.ShapeError, ab.quantize, k[..., :20].copy(), "q8_0", contains="multiple of 32")
    raises(ab.DtypeError, ab.quantize, k.astype(np.float64), "bf16")
    if "flash__avx512" in ab.kernel_names() and "flash__avx512" not in ab.kernel_names(True):
        raises(ab.KernelUnavailableError, A, q, k, v, kernel="flash__avx512")
    # rows that see no key give zeros (SDPA gives NaN there) and LSE -inf
    qq, kk, vv = inputs(rng, 1, 1, 1, 6, 3, 8)
    o, lse = A(qq, kk, vv, is_causal=True, align="bottom_right", return_lse=True)
    expect(np.all(o[0, 0, :3] == 0) and np.all(np.isneginf(lse[0, 0, :3])),
           "rows that see nothing: zeros and LSE -inf")


def test_torch(require):
    try:
        import torch
        import torch.nn.functional as F
    except ImportError:
        print("torch not importable: the torch checks are skipped")
        return not require
    torch.manual_seed(0)
    # SDPA's is_causal (top-left) on Sq=4, Skv=256: the same answer within the checker bound
    q, k, v = torch.randn(1, 8, 4, 64), torch.randn(1, 8, 256, 64), torch.randn(1, 8, 256, 64)
    ref = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    o = ab.attention(q, k, v, is_causal=True)
    expect(isinstance(o, torch.Tensor) and o.dtype == torch.float32 and o.shape == ref.shape,
           f"torch in, torch out: {type(o)}")
    expect(ab.check_attention(ref, q, k, v, is_causal=True).passed, "SDPA fails our checker")
    expect(ab.check_attention(o, q, k, v, is_causal=True).passed, "ours fails the checker")
    err = (o - ref).abs().max().item()
    expect(err < 1e-5, f"attention vs SDPA is_causal: max diff {err}")
    print(f"attention(is_causal=True) vs SDPA on Sq=4 Skv=256: max |diff| = {err:.3g}")
    r = ab.check_attention(F.scaled_dot_product_attention(q, k, v), q, k, v, is_causal=True)
    expect(not r.passed, "a non-causal SDPA answer passed the causal check")
    # GQA, scale, a boolean mask (True = takes part), LSE as tensors
    kg, vg = torch.randn(2, 2, 50, 32), torch.randn(2, 2, 50, 16)
    qg = torch.randn(2, 8, 20, 32)
    mask = torch.rand(2, 8, 20, 50) > 0.3
    ref = F.scaled_dot_product_attention(qg, kg, vg, attn_mask=mask, scale=0.3, enable_gqa=True)
    o, lse = ab.attention(qg, kg, vg, attn_mask=mask, scale=0.3, enable_gqa=True,
                          return_lse=True)
    expect(isinstance(lse, torch.Tensor) and lse.shape == (2, 8, 20), "LSE as a tensor")
    expect((o - ref).abs().max().item() < 1e-5, "GQA + bool mask + scale vs SDPA")
    fm = torch.randn(20, 50)
    ref = F.scaled_dot_product_attention(qg, kg, vg, attn_mask=fm, enable_gqa=True)
    expect((ab.attention(qg, kg, vg, attn_mask=fm, enable_gqa=True) - ref).abs().max() < 1e-5,
           "float mask vs SDPA")
    # bf16 / f16 tensors: DtypeError unless kv_dtype / compute says how to read them
    kb, vb = k.to(torch.bfloat16), v.to(torch.bfloat16)
    raises(ab.DtypeError, ab.attention, q, kb, vb, contains="kv_dtype='bf16'")
    raises(ab.DtypeError, ab.attention, q.to(torch.bfloat16), k, v, contains="compute='bf16'")
    raises(ab.DtypeError, ab.attention, q, k.half(), v.half(), contains="kv_dtype='f16'")
    o = ab.attention(q, kb, vb, kv_dtype="bf16", is_causal=True)
    want = ab.attention(q, kb.float(), vb.float(), is_causal=True)
    expect((o - want).abs().max().item() < 1e-5, "kv_dtype='bf16' reads the tensors' values")
    expect(ab.check_attention(o, q, kb, vb, kv_dtype="bf16", is_causal=True).passed,
           "bf16 K/V check")
    if compute_modes_in_force():
        o = ab.attention(q.to(torch.bfloat16), kb, vb, compute="bf16", kv_dtype="bf16")
        expect(ab.check_attention(o, q.to(torch.bfloat16), kb, vb, compute="bf16",
                                  kv_dtype="bf16").passed, "bf16 Q with compute='bf16'")
    else:  # read, then refused by the kernels' side (no compute modes in this build)
        raises(ab.InvalidProblemError, ab.attention, q.to(torch.bfloat16), kb, vb,
               compute="bf16", kv_dtype="bf16", contains="implement only f32")
    o = ab.attention(q, k.half(), v.half(), kv_dtype="f16")
    expect((o - ab.attention(q, k.half().float(), v.half().float())).abs().max() < 1e-5,
           "kv_dtype='f16' tensors")
    # a tensor that requires grad is read (no gradient flows)
    qr = q.clone().requires_grad_(True)
    expect(ab.attention(qr, k, v).shape == q.shape, "requires_grad tensor")
    raises(ab.LayoutError, ab.attention, q.transpose(2, 3), k, v, contains=".contiguous()")
    return True


def main():
    require = "--require-torch" in sys.argv[1:]
    test_options()
    test_checker_fails()
    test_kv_types_and_compute()
    test_errors()
    torch_ran = test_torch(require)
    if not torch_ran:
        print("SKIP: torch is not importable (--require-torch)")
        return 77
    print(f"{len(FAILS)} failures" if FAILS else "attnbench attention: all tests passed")
    return 1 if FAILS else 0


if __name__ == "__main__":
    sys.exit(main())
