# SPDX-License-Identifier: MIT
"""attnbench.attention_varlen() and attention_paged(): the serving layouts against a loop
of attention() over the sequences (each a dense problem, bottom-right aligned) and
against the independent float64 attention of test_attention.py; pages shuffled through a
pool whose unused slots hold NaN, pages shared between sequences, every option, K/V type
and compute mode; the checker failing a wrong page and a wrong sequence; benchmark() on
both layouts; every wrong input; and — when torch is importable — torch tensors in and
out and equality with torch.nn.functional.scaled_dot_product_attention per sequence.

    test_layouts.py [--require-torch]     (exit 77 without torch when required)
"""

import sys

import numpy as np

import attnbench as ab
from test_attention import (FAILS, alibi_slopes, attention64, compute_modes_in_force, expect,
                            raises)

H, HK, D = 4, 2, 32
# A serving batch: a prefill chunk at a longer context, decode steps, an empty query, a
# sequence without keys (its rows see nothing), a whole prefill.
Q_LENS = (5, 1, 0, 3, 1, 7)
KV_LENS = (40, 17, 9, 0, 1, 7)


def offsets(lens):
    return np.concatenate(([0], np.cumsum(lens))).astype(np.int32)


def packed(rng, lens, heads, dim):
    return rng.standard_normal((sum(lens), heads, dim), dtype=np.float32)


def seq(x, cu, b):
    """Sequence b of a tensor packed by tokens, as a dense [1, heads, len, dim] tensor."""
    return np.ascontiguousarray(x[cu[b]:cu[b + 1]].transpose(1, 0, 2)[None])


def per_sequence(q, k, v, cu_q, cu_k, *, masks=None, kernel=None, **opts):
    """O [total_q, heads, dv] and LSE [heads, total_q] from attention() on each sequence
    as a dense problem (bottom-right unless align says otherwise)."""
    opts.setdefault("align", "bottom_right")
    o = np.zeros((q.shape[0], H, D), np.float32)
    lse = np.full((H, q.shape[0]), -np.inf, np.float32)
    for b in range(len(cu_q) - 1):
        if cu_q[b + 1] == cu_q[b] or cu_k[b + 1] == cu_k[b]:
            continue  # nothing to compute / rows that see nothing: zeros, LSE -inf
        mask = None if masks is None else masks[b]
        if mask is not None and mask.ndim == 3:
            mask = mask[None]
        ob, lb = ab.attention(seq(q, cu_q, b), seq(k, cu_k, b), seq(v, cu_k, b), attn_mask=mask,
                              enable_gqa=True, return_lse=True, kernel=kernel, threads=1,
                              **opts)
        o[cu_q[b]:cu_q[b + 1]] = ob[0].transpose(1, 0, 2)
        lse[:, cu_q[b]:cu_q[b + 1]] = lb[0]
    return o, lse


def reference64(q, k, v, cu_q, cu_k, masks=None, **ref):
    """The float64 attention of test_attention.py, sequence by sequence."""
    o = np.zeros((q.shape[0], H, v.shape[-1]))
    for b in range(len(cu_q) - 1):
        if cu_q[b + 1] == cu_q[b] or cu_k[b + 1] == cu_k[b]:
            continue
        mask = None if masks is None else np.where(masks[b], 0.0, -np.inf) \
            if masks[b].dtype == np.bool_ else masks[b]
        ob, _ = attention64(seq(q, cu_q, b), seq(k, cu_k, b), seq(v, cu_k, b), mask=mask, **ref)
        o[cu_q[b]:cu_q[b + 1]] = ob[0].transpose(1, 0, 2)
    return o


def option_cases(rng):
    sl = rng.uniform(-0.25, 1, H).astype(np.float32)
    sk = rng.standard_normal(H).astype(np.float32)
    bmasks = [rng.random((H, ql, kl)) > 0.2 for ql, kl in zip(Q_LENS, KV_LENS)]
    fmasks = [rng.standard_normal((ql, kl)).astype(np.float32) for ql, kl in zip(Q_LENS, KV_LENS)]
    return [  # (what, options, float64 reference options, masks)
        ("plain", {}, {}, None),
        ("causal", dict(is_causal=True), dict(causal=True, align="bottom_right"), None),
        ("causal top-left", dict(is_causal=True, align="top_left"), dict(causal=True), None),
        ("causal window", dict(is_causal=True, window=(4, 0)),
         dict(causal=True, align="bottom_right", window=(4, 0)), None),
        ("softcap scale", dict(softcap=2.0, scale=0.5), dict(softcap=2.0, scale=0.5), None),
        ("alibi max_bias", dict(alibi=8.0, is_causal=True),
         dict(causal=True, align="bottom_right", slopes=alibi_slopes(H, 8.0)), None),
        ("alibi slopes", dict(alibi=sl), dict(slopes=sl, align="bottom_right"), None),
        ("sinks", dict(sinks=sk), dict(sinks=sk), None),
        ("bool masks per head", {}, {}, bmasks),
        ("float masks", {}, {}, fmasks),
        ("everything", dict(is_causal=True, window=(6, None), softcap=20.0, alibi=sl, sinks=sk),
         dict(causal=True, align="bottom_right", window=(6, None), softcap=20.0, slopes=sl,
              sinks=sk), fmasks),
    ]


def test_ragged():
    rng = np.random.default_rng(21)
    cu_q, cu_k = offsets(Q_LENS), offsets(KV_LENS)
    q, k, v = packed(rng, Q_LENS, H, D), packed(rng, KV_LENS, HK, D), packed(rng, KV_LENS, HK, D)
    for what, opts, ref, masks in option_cases(rng):
        want64 = reference64(q, k, v, cu_q, cu_k, masks, **ref)
        for kern in sorted({ab.default_kernel(), "naive", "blocked"}):
            tag = f"ragged {what} {kern}"
            o, lse = ab.attention_varlen(q, k, v, cu_q, cu_k, max(Q_LENS), max(KV_LENS),
                                         attn_mask=masks, kernel=kern, return_lse=True,
                                         threads=1, **opts)
            wo, wl = per_sequence(q, k, v, cu_q, cu_k, masks=masks, kernel=kern, **opts)
            expect(np.abs(o - wo).max() <= 1e-6, f"{tag}: differs from attention() per "
                   f"sequence by {np.abs(o - wo).max()}")
            fin = np.isfinite(wl)
            expect(np.array_equal(np.isfinite(lse), fin) and
                   np.abs(lse[fin] - wl[fin]).max() <= 1e-6, f"{tag}: LSE")
            expect(np.abs(o - want64).max() < 1e-4, f"{tag}: float64 differs by "
                   f"{np.abs(o - want64).max()}")
            r = ab.check_attention(o, q, k, v, cu_seqlens_q=cu_q, cu_seqlens_k=cu_k,
                                   attn_mask=masks, lse=lse, **opts)
            expect(r.passed, f"{tag}: checker {r}")
    # the rows of the sequence without keys: zeros, LSE -inf
    o, lse = ab.attention_varlen(q, k, v, cu_q, cu_k, is_causal=True, return_lse=True)
    rows = slice(cu_q[3], cu_q[4])
    expect(np.all(o[rows] == 0) and np.all(np.isneginf(lse[:, rows])), "no keys: zeros, -inf")
    # the checker fails sequences mixed up: sequence 1 computed against sequence 0's keys
    bad = ab.attention_varlen(q, k, v, cu_q, np.array([0, 17, 57, 66, 66, 67, 74], np.int32))
    r = ab.check_attention(bad, q, k, v, cu_seqlens_q=cu_q, cu_seqlens_k=cu_k)
    expect(r.verdict == "fail", f"wrong sequences passed the checker: {r}")
    # causal bottom-right per sequence is not top-left: the checker tells them apart
    r = ab.check_attention(o, q, k, v, cu_seqlens_q=cu_q, cu_seqlens_k=cu_k, is_causal=True,
                           align="top_left")
    expect(r.verdict == "fail", f"bottom-right output passed as top-left: {r}")


class Pool:
    """A paged batch built by hand: pages shuffled through a pool with spare pages, the
    unused slots NaN (a kernel that reads one gives NaN), sequence 1 sharing sequence 0's
    first two pages (prefix caching), unused block-table entries out of range."""

    def __init__(self, rng, page_size=4, fill=np.nan):
        self.kv_lens = np.array([13, 10, 0, 6, 1], np.int32)
        self.q_lens = np.array([3, 1, 1, 6, 1], np.int32)
        ps = page_size
        pages = [-(-int(n) // ps) for n in self.kv_lens]
        shared = 2
        num_pages = sum(pages) - shared + 3  # three spare pages
        order = rng.permutation(num_pages)
        self.k = np.full((num_pages, HK, ps, D), fill, np.float32)
        self.v = np.full((num_pages, HK, ps, D), fill, np.float32)
        width = max(pages) + 2
        self.table = np.full((len(pages), width), 10 ** 6, np.int64)
        nxt = 0
        for b, n in enumerate(pages):
            for j in range(n):
                if b == 1 and j < shared:
                    self.table[b, j] = self.table[0, j]
                    continue
                self.table[b, j] = order[nxt]
                nxt += 1
        self.ps = ps
        for b, n in enumerate(self.kv_lens):
            for t in range(n):
                p = self.table[b, t // ps]
                if b == 1 and t < shared * ps:
                    continue  # the shared prefix: written by sequence 0
                self.k[p, :, t % ps] = rng.standard_normal((HK, D))
                self.v[p, :, t % ps] = rng.standard_normal((HK, D))
        self.q = packed(rng, self.q_lens, H, D)
        self.cu_q = offsets(self.q_lens)

    def ragged(self, pool):
        """The same keys packed by tokens (gathered with this test's own indexing)."""
        rows = [pool[self.table[b, t // self.ps], :, t % self.ps]
                for b in range(len(self.kv_lens)) for t in range(self.kv_lens[b])]
        return np.ascontiguousarray(np.stack(rows))


def test_paged():
    rng = np.random.default_rng(33)
    pl = Pool(rng)
    k, v, cu_k = pl.ragged(pl.k), pl.ragged(pl.v), offsets(pl.kv_lens)
    expect(np.isfinite(k).all() and np.array_equal(k[13:21], k[:8]), "the pool's shared prefix")
    for what, opts, ref, _ in option_cases(rng):
        if "masks" in what:
            continue
        want64 = reference64(pl.q, k, v, pl.cu_q, cu_k, **ref)
        for kern in sorted({ab.default_kernel(), "naive"}):
            tag = f"paged {what} {kern}"
            o, lse = ab.attention_paged(pl.q, pl.k, pl.v, pl.table, pl.kv_lens, pl.cu_q,
                                        kernel=kern, return_lse=True, threads=1, **opts)
            wo, wl = per_sequence(pl.q, k, v, pl.cu_q, cu_k, kernel=kern, **opts)
            expect(np.abs(o - wo).max() <= 1e-6, f"{tag}: differs from attention() per "
                   f"sequence by {np.abs(o - wo).max()}")
            expect(np.abs(o - want64).max() < 1e-4, f"{tag}: float64")
            r = ab.check_attention(o, pl.q, pl.k, pl.v, block_table=pl.table,
                                   cache_seqlens=pl.kv_lens, cu_seqlens_q=pl.cu_q, lse=lse,
                                   **opts)
            expect(r.passed, f"{tag}: checker {r}")
    # masks per sequence on the pages, and the ragged layout of the same keys
    masks = [rng.random((ql, kl)) > 0.3 for ql, kl in zip(pl.q_lens, pl.kv_lens)]
    o = ab.attention_paged(pl.q, pl.k, pl.v, pl.table.astype(np.int32), pl.kv_lens, pl.cu_q,
                           attn_mask=masks, is_causal=True)
    want = ab.attention_varlen(pl.q, k, v, pl.cu_q, cu_k, attn_mask=masks, is_causal=True)
    expect(np.abs(o - want).max() <= 1e-6, "paged masks vs ragged")
    # a decode step: cu_seqlens_q=None, one token per sequence
    qd = packed(rng, [1] * 5, H, D)
    o = ab.attention_paged(qd, pl.k, pl.v, pl.table, pl.kv_lens)
    want = ab.attention_varlen(qd, k, v, offsets([1] * 5), cu_k)
    expect(np.abs(o - want).max() <= 1e-6, "paged decode vs ragged")
    # the checker fails a wrong page: sequence 0's third page is sequence 3's first
    bad_table = pl.table.copy()
    bad_table[0, 2] = pl.table[3, 0]
    bad = ab.attention_paged(pl.q, pl.k, pl.v, bad_table, pl.kv_lens, pl.cu_q)
    r = ab.check_attention(bad, pl.q, pl.k, pl.v, block_table=pl.table, cache_seqlens=pl.kv_lens,
                           cu_seqlens_q=pl.cu_q)
    expect(r.verdict == "fail", f"a wrong page passed the checker: {r}")


def q8_0_values(blocks):
    rows = blocks.reshape(-1, D // 32, 34)
    d = rows[:, :, :2].copy().view(np.float16).astype(np.float64)
    qs = rows[:, :, 2:].copy().view(np.int8).astype(np.float64)
    return (d * qs).reshape(blocks.shape[:-1] + (D,)).astype(np.float32)


def test_kv_types_and_compute():
    rng = np.random.default_rng(44)
    pl = Pool(rng, fill=30.0)  # finite garbage in unused slots: quantizable, wrong if read
    decode = {"f16": lambda b: b.view(np.float16).astype(np.float32),
              "bf16": lambda b: (b.astype(np.uint32) << 16).view(np.float32),
              "q8_0": q8_0_values}
    for dt in ("f16", "bf16", "q8_0"):
        kp, vp = ab.quantize(pl.k, dt), ab.quantize(pl.v, dt)
        kd, vd = pl.ragged(decode[dt](kp)), pl.ragged(decode[dt](vp))
        cu_k = offsets(pl.kv_lens)
        o = ab.attention_paged(pl.q, kp, vp, pl.table, pl.kv_lens, pl.cu_q, kv_dtype=dt,
                               is_causal=True)
        want = ab.attention_varlen(pl.q, kd, vd, pl.cu_q, cu_k, is_causal=True)
        expect(np.abs(o - want).max() <= 1e-5, f"paged kv_dtype={dt}: {np.abs(o - want).max()}")
        r = ab.check_attention(o, pl.q, kp, vp, block_table=pl.table, cache_seqlens=pl.kv_lens,
                               cu_seqlens_q=pl.cu_q, kv_dtype=dt, is_causal=True)
        expect(r.passed, f"paged kv_dtype={dt}: {r}")
        kr, vr = pl.ragged(kp), pl.ragged(vp)  # the stored rows packed by tokens
        o2 = ab.attention_varlen(pl.q, kr, vr, pl.cu_q, cu_k, kv_dtype=dt, is_causal=True)
        expect(np.abs(o2 - o).max() <= 1e-6, f"ragged kv_dtype={dt} vs paged")
    if not compute_modes_in_force():
        raises(ab.InvalidProblemError, ab.attention_paged, pl.q, pl.k, pl.v, pl.table,
               pl.kv_lens, pl.cu_q, compute="bf16", contains="implement only f32")
        return
    k8, v8 = ab.quantize(pl.k, "q8_0"), ab.quantize(pl.v, "q8_0")
    for comp, kd, kk, vv in (("bf16", "f32", pl.k, pl.v), ("f16", "f32", pl.k, pl.v),
                             ("int8", "q8_0", k8, v8)):
        o = ab.attention_paged(pl.q, kk, vv, pl.table, pl.kv_lens, pl.cu_q, compute=comp,
                               kv_dtype=kd, is_causal=True)
        r = ab.check_attention(o, pl.q, kk, vv, block_table=pl.table, cache_seqlens=pl.kv_lens,
                               cu_seqlens_q=pl.cu_q, compute=comp, kv_dtype=kd, is_causal=True)
        expect(r.passed, f"paged compute={comp}: {r}")


def causal_flops(q_lens, kv_lens, dqk, dv, heads):
    pairs = sum(min(kl, max(0, i + 1 + kl - ql)) for ql, kl in zip(q_lens, kv_lens)
                for i in range(ql))
    return 2.0 * (dqk + dv) * pairs * heads


def test_benchmark():
    rng = np.random.default_rng(55)
    pl = Pool(rng)
    k, v, cu_k = pl.ragged(pl.k), pl.ragged(pl.v), offsets(pl.kv_lens)
    flops = causal_flops(pl.q_lens, pl.kv_lens, D, D, H)
    kv_bytes = int(pl.kv_lens.sum()) * HK * 2 * 4 * D
    for layout, r in (
            ("ragged", ab.benchmark(pl.q, k, v, cu_seqlens_q=pl.cu_q, cu_seqlens_k=cu_k,
                                    is_causal=True, repeats=3, min_time=0.01, threads=1)),
            ("paged", ab.benchmark(pl.q, pl.k, pl.v, block_table=pl.table,
                                   cache_seqlens=pl.kv_lens, cu_seqlens_q=pl.cu_q,
                                   is_causal=True, repeats=3, min_time=0.01, threads=1))):
        expect(r.layout == layout and r.tokens == pl.q.shape[0], f"benchmark {layout}: {r}")
        expect(r.flops == flops, f"benchmark {layout}: flops {r.flops}, expected {flops}")
        expect(r.kv_bytes == kv_bytes, f"benchmark {layout}: kv_bytes {r.kv_bytes} != {kv_bytes}")
        expect(abs(r.tokens_per_s * r.median - r.tokens) < 1e-6 * r.tokens and
               abs(r.kv_gbs * 1e9 * r.median - kv_bytes) < 1e-6 * kv_bytes,
               f"benchmark {layout}: rates")
        expect(layout in str(r) and "tokens/s" in str(r), f"benchmark {layout}: {r}")
    raises(ab.InvalidProblemError, ab.benchmark, pl.q, pl.k, pl.v, block_table=pl.table,
           cache_seqlens=pl.kv_lens + 100, cu_seqlens_q=pl.cu_q)
    # A window of 2 keys left of the diagonal: each sequence reads the keys its rows can see
    # (bench's kv_bytes), not its whole context: the 3 rows at the end of 13 keys see keys
    # 8..12 (5), the decode row at 10 keys 7..9 (3), the row without keys none, the chunk
    # of 6 at context 6 keys 0..5 (6), the decode row at 1 key that key.
    r = ab.benchmark(pl.q, pl.k, pl.v, block_table=pl.table, cache_seqlens=pl.kv_lens,
                     cu_seqlens_q=pl.cu_q, is_causal=True, window=(2, 0), repeats=1,
                     min_time=0.0, threads=1)
    expect(r.kv_bytes == (5 + 3 + 0 + 6 + 1) * HK * 2 * 4 * D,
           f"benchmark with a window: kv_bytes {r.kv_bytes} (want {(5 + 3 + 6 + 1)} keys)")
    # A dense problem reads every key: 256 of them, whatever the mask.
    qd, kd, vd = (rng.standard_normal((1, H, s, D), np.float32) for s in (4, 256, 256))
    kd, vd = kd[:, :HK].copy(), vd[:, :HK].copy()
    r = ab.benchmark(qd, kd, vd, is_causal=True, enable_gqa=True, repeats=1, min_time=0.0,
                     threads=1)
    expect(r.kv_bytes == HK * 256 * 2 * 4 * D, f"dense benchmark: kv_bytes {r.kv_bytes}")


def test_errors():
    rng = np.random.default_rng(66)
    pl = Pool(rng)
    k, v, cu_k = pl.ragged(pl.k), pl.ragged(pl.v), offsets(pl.kv_lens)
    q, cq, t, n = pl.q, pl.cu_q, pl.table, pl.kv_lens
    V, P = ab.attention_varlen, ab.attention_paged
    raises(ab.DtypeError, V, q, k, v, cq.astype(np.float32), cu_k, contains="int32 or int64")
    raises(ab.DtypeError, V, q, k, v, cq, cu_k.astype(np.uint8), contains="cu_seqlens_k")
    raises(ab.ShapeError, V, q, k, v, cq, cu_k[:-1], contains="entries")
    raises(ab.ShapeError, V, q[:-1], k, v, cq, cu_k, contains="last offset")
    raises(ab.ShapeError, V, q, k[:-1], v[:-1], cq, cu_k, contains="last offset")
    raises(ab.ShapeError, V, q, k, v[:-1], cq, cu_k, contains="total_k")
    raises(ab.ShapeError, V, q, k, v, cq.reshape(1, -1), cu_k, contains="1-D")
    raises(ab.ShapeError, V, q, k, v, cq[:1], cu_k[:1], contains=">= 2")
    raises(ab.InvalidProblemError, V, q, k, v, cq + 1, cu_k, contains="expected 0")
    bad = cu_k.copy()
    bad[2] = bad[1] - 1
    raises(ab.InvalidProblemError, V, q, k, v, cq, bad, contains="decreases at entry 2")
    raises(ab.ShapeError, V, q, k, v, cq, cu_k, max_seqlen_q=2, contains="max_seqlen_q=2")
    raises(ab.ShapeError, V, q[None], k, v, cq, cu_k, contains="3-D")
    raises(ab.ShapeError, V, q, k[..., :16].copy(), v, cq, cu_k, contains="head_dim")
    raises(ab.DtypeError, V, q, k.astype(np.float16), v, cq, cu_k, contains="kv_dtype='f16'")
    raises(ab.InvalidProblemError, V, q, np.ascontiguousarray(k[:, :1].repeat(3, 1)),
           np.ascontiguousarray(v[:, :1].repeat(3, 1)), cq, cu_k, contains="multiple")
    raises(ab.ShapeError, V, q, k, v, cq, cu_k, attn_mask=np.zeros((3, 3), bool),
           contains="a list of 5 masks")
    masks = [np.zeros((a, b), np.float32) for a, b in zip(pl.q_lens, pl.kv_lens)]
    raises(ab.ShapeError, V, q, k, v, cq, cu_k,
           attn_mask=masks[:-1] + [np.zeros((2, 1), np.float32)],
           contains="attn_mask[4]")
    raises(ab.DtypeError, V, q, k, v, cq, cu_k,
           attn_mask=masks[:-1] + [np.zeros((1, 1), np.float64)], contains="bool or float32")
    raises(ab.InvalidOptionError, V, q, k, v, cq, cu_k, align="bottom-right")
    raises(ab.ShapeError, P, q, pl.k, pl.v, t, n, cq[:-1], contains="cache_seqlens + 1")
    raises(ab.ShapeError, P, q, pl.k, pl.v, t[:-1], n, cq, contains="block_table")
    raises(ab.ShapeError, P, q, pl.k, pl.v, t[:, :0], n, cq, contains="block_table")
    raises(ab.DtypeError, P, q, pl.k, pl.v, t.astype(np.float32), n, cq, contains="block_table")
    raises(ab.DtypeError, P, q, pl.k, pl.v, t, n.astype(np.float64), cq, contains="cache_seqlens")
    raises(ab.InvalidProblemError, P, q, pl.k, pl.v, t, n - 2, cq, contains="negative")
    out = t.copy()
    out[0, 1] = pl.k.shape[0]  # a used entry one past the pool
    raises(ab.InvalidProblemError, P, q, pl.k, pl.v, out, n, cq, contains="page")
    out[0, 1] = -1
    raises(ab.InvalidProblemError, P, q, pl.k, pl.v, out, n, cq, contains="page")
    longer = n.copy()
    longer[0] = 4 * t.shape[1] + 1  # needs one page more than its block-table row has
    raises(ab.InvalidProblemError, P, q, pl.k, pl.v, t, longer, cq,
           contains=f"sequence 0 (cache_seqlens[0] = {longer[0]}) needs")
    raises(ab.ShapeError, P, q, pl.k[0], pl.v[0], t, n, cq, contains="num_pages")
    raises(ab.ShapeError, P, q, pl.k, np.ascontiguousarray(pl.v[:, :, :2]), t, n, cq,
           contains="page_size")
    raises(ab.ShapeError, P, q, pl.k, pl.v, t, n, None, contains="cu_seqlens_q=None")
    raises(ab.InvalidProblemError, P, q[:5], pl.k, pl.v, t, np.zeros(5, np.int32),
           contains="cache_seqlens: every sequence's context is empty")
    raises(ab.InvalidProblemError, V, q[:0], k, v, np.zeros_like(cq), cu_k,
           contains="cu_seqlens_q: no sequence has a query token")
    raises(ab.InvalidProblemError, V, q, k[:0], v[:0], cq, np.zeros_like(cu_k),
           contains="cu_seqlens_k: every sequence's context is empty")
    # An empty size is named by its argument and axis, in the layout's terms.
    raises(ab.InvalidProblemError, P, q, np.ascontiguousarray(pl.k[:, :, :0]),
           np.ascontiguousarray(pl.v[:, :, :0]), t, n, cq, contains="page_size (axis 2) = 0")
    raises(ab.InvalidProblemError, V, np.ascontiguousarray(q[:, :0]), k, v, cq, cu_k,
           contains="heads (axis 1) = 0")
    # A mistyped keyword is a TypeError naming the function called, with the nearest one.
    raises(TypeError, P, q, pl.k, pl.v, t, n, cq, is_casual=True,
           contains="attention_paged() got an unexpected keyword argument 'is_casual'; "
                    "did you mean 'is_causal'?")
    raises(TypeError, ab.benchmark, q, pl.k, pl.v, block_table=t, cache_seqlens=n,
           cu_seqlens_q=cq, enable_gqa=True, contains="benchmark() got an unexpected keyword")
    raises(TypeError, ab.check_attention, q, q, k, v, cu_seqlens_q=cq, cu_seqlens_k=cu_k,
           windw=(2, 0), contains="check_attention() got an unexpected keyword argument "
                                  "'windw'; did you mean 'window'?")
    raises(ab.LayoutError, P, q[:, :, ::2], pl.k, pl.v, t, n, cq, contains="C-contiguous")
    # A used entry outside int32 is named as given, with the argument's name.
    out = t.copy()
    out[3, 1] = 2 ** 40
    raises(ab.InvalidProblemError, P, q, pl.k, pl.v, out, n, cq,
           contains="block_table[3][1] = 1099511627776 is not a page")
    # Byte order other than the machine's: said so, never misread.
    raises(ab.DtypeError, V, q.astype(q.dtype.newbyteorder(">")), k, v, cq, cu_k,
           contains="byte order")
    raises(ab.DtypeError, V, q, k, v, cq.astype(">i8"), cu_k, contains="byte order")
    # A window side past int64 would wrap around on the native side: refused.
    raises(ab.InvalidOptionError, V, q, k, v, cq, cu_k, window=(2 ** 64 + 8, 0),
           contains="2^63 - 1")
    # An int32 table sliced out of a wider one (vLLM keeps one) runs as its copy would.
    wide = np.full((t.shape[0], t.shape[1] + 3), -7, np.int32)
    wide[:, :t.shape[1]] = t.astype(np.int32)
    o_slice = P(q, pl.k, pl.v, wide[:, :t.shape[1]], n, cq, is_causal=True)
    o_copy = P(q, pl.k, pl.v, t.astype(np.int32), n, cq, is_causal=True)
    expect(np.array_equal(o_slice, o_copy, equal_nan=True), "a sliced int32 block_table")


def test_torch(require):
    try:
        import torch
        import torch.nn.functional as F
    except ImportError:
        print("torch not importable: the torch checks are skipped")
        return not require
    torch.manual_seed(1)
    q_lens, kv_lens = (5, 1, 3, 8), (40, 17, 3, 12)
    cu_q = torch.tensor(offsets(q_lens))  # torch.int32, as flash_attn_varlen_func takes them
    cu_k = torch.tensor(offsets(kv_lens))
    q, k, v = (torch.randn(sum(q_lens), H, D), torch.randn(sum(kv_lens), HK, D),
               torch.randn(sum(kv_lens), HK, D))
    o, lse = ab.attention_varlen(q, k, v, cu_q, cu_k, max(q_lens), max(kv_lens),
                                 is_causal=True, return_lse=True)
    expect(isinstance(o, torch.Tensor) and isinstance(lse, torch.Tensor) and
           o.shape == q.shape and lse.shape == (H, q.shape[0]), "varlen: torch in, torch out")
    worst = 0.0
    for b in range(len(q_lens)):
        qb = q[cu_q[b]:cu_q[b + 1]].transpose(0, 1)[None]
        kb, vb = (x[cu_k[b]:cu_k[b + 1]].transpose(0, 1)[None] for x in (k, v))
        ql, kl = q_lens[b], kv_lens[b]
        # bottom-right causal as an explicit mask (SDPA's is_causal is top-left)
        mask = torch.ones(ql, kl, dtype=torch.bool).tril(kl - ql)
        ref = F.scaled_dot_product_attention(qb, kb, vb, attn_mask=mask, enable_gqa=True)
        worst = max(worst, (o[cu_q[b]:cu_q[b + 1]] - ref[0].transpose(0, 1)).abs().max().item())
    expect(worst < 1e-5, f"varlen vs SDPA per sequence: max diff {worst}")
    print(f"attention_varlen(is_causal=True) vs SDPA per sequence: max |diff| = {worst:.3g}")
    # the same keys in shuffled pages of 4, torch.int32 block table and lengths
    ps, pages = 4, [-(-n // 4) for n in kv_lens]
    perm = torch.randperm(sum(pages) + 2)
    kc, vc = torch.zeros(len(perm), HK, ps, D), torch.zeros(len(perm), HK, ps, D)
    table = torch.zeros(len(pages), max(pages), dtype=torch.int32)
    nxt = 0
    for b, n in enumerate(kv_lens):
        for t in range(n):
            if t % ps == 0:
                table[b, t // ps] = perm[nxt]
                nxt += 1
            kc[table[b, t // ps], :, t % ps] = k[cu_k[b] + t]
            vc[table[b, t // ps], :, t % ps] = v[cu_k[b] + t]
    op = ab.attention_paged(q, kc, vc, table, torch.tensor(kv_lens, dtype=torch.int32), cu_q,
                            is_causal=True)
    expect(isinstance(op, torch.Tensor) and (op - o).abs().max().item() <= 1e-6,
           "paged (torch) vs varlen")
    raises(ab.DtypeError, ab.attention_varlen, q, k, v, cu_q.float(), cu_k, contains="float32")
    raises(ab.DtypeError, ab.attention_varlen, q.to(torch.bfloat16), k, v, cu_q, cu_k,
           contains="compute='bf16'")
    ob = ab.attention_paged(q, kc.to(torch.bfloat16), vc.to(torch.bfloat16), table,
                            torch.tensor(kv_lens), cu_q, kv_dtype="bf16", is_causal=True)
    want = ab.attention_paged(q, kc.to(torch.bfloat16).float(), vc.to(torch.bfloat16).float(),
                              table, torch.tensor(kv_lens), cu_q, is_causal=True)
    expect((ob - want).abs().max().item() <= 1e-5, "paged bf16 tensors read as kv_dtype='bf16'")
    return True


def test_type_hints():
    """Every public function annotates its parameters and its result (py.typed)."""
    import inspect
    for name in ab.__all__:
        f = getattr(ab, name)
        if not inspect.isfunction(f):
            continue
        sig = inspect.signature(f)
        bare = [p.name for p in sig.parameters.values()
                if p.annotation is inspect.Parameter.empty]
        expect(not bare and sig.return_annotation is not inspect.Signature.empty,
               f"{name}: no type hint for {bare or 'the result'}")


def main():
    require = "--require-torch" in sys.argv[1:]
    test_type_hints()
    test_ragged()
    test_paged()
    test_kv_types_and_compute()
    test_benchmark()
    test_errors()
    torch_ran = test_torch(require)
    if not torch_ran:
        print("SKIP: torch is not importable (--require-torch)")
        return 77
    print(f"{len(FAILS)} failures" if FAILS else "attnbench layouts: all tests passed")
    return 1 if FAILS else 0


if __name__ == "__main__":
    sys.exit(main())
