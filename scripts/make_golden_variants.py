#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Golden data for the attention options (attn.h, "Attention variants"), computed by an
independent NumPy float64 implementation written from the formulas, not from the C code:

    s_ij = scale * q_i . k_j ; s = c*tanh(s/c) ; s += slope_h*(j - i - off) ; s += M[i][j]
    row i sees j iff causal => j - (i+off) <= 0, window => -left <= j - (i+off) <= right,
    and M[i][j] != -inf;  O_i = sum_j e^(s_ij) v_j / (sum_j e^(s_ij) + e^(sink_h))
    LSE_i = log sum_j e^(s_ij) (the sink excluded), -inf and O_i = 0 if row i sees nothing.

Inputs are float32 (stored); outputs are float64 rounded once to float32. Writes
tests/data/variants/<case>_{params,q,k,v,slopes,sinks,mask,out,lse}.npy. params is
[batch, heads, kv_heads, seq_q, seq_kv, dqk, dv, causal, align (0 bottom-right, 1 top-left),
window, left, right (-1 unbounded), softcap, alibi_max_bias, slopes?, sinks?, mask?,
mask_per_head, scale].

    scripts/make_golden_variants.py [OUT_DIR]
"""
import math
import os
import sys

import numpy as np

OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data", "variants")


def alibi_slopes(heads, max_bias):
    n = 2 ** int(math.floor(math.log2(heads)))
    m0, m1 = 2.0 ** (-max_bias / n), 2.0 ** (-max_bias / (2 * n))
    return np.array([m0 ** (h + 1) if h < n else m1 ** (2 * (h - n) + 1) for h in range(heads)])


def attention(c, q, k, v, slopes, sinks, mask):
    B, H, KV, Sq, Skv, Dqk, Dv = c["shape"]
    off = 0 if c.get("align") == "top-left" else Skv - Sq
    out = np.zeros((B, H, Sq, Dv))
    lse = np.full((B, H, Sq), -np.inf)
    q, k, v = q.astype(np.float64), k.astype(np.float64), v.astype(np.float64)
    for b in range(B):
        for h in range(H):
            g = h // (H // KV)
            s = c["scale"] * q[b, h] @ k[b, g].T
            if c.get("softcap"):
                s = c["softcap"] * np.tanh(s / c["softcap"])
            i = np.arange(Sq)[:, None]
            j = np.arange(Skv)[None, :]
            d = j - (i + off)
            if slopes is not None:
                s = s + slopes[h] * d
            if mask is not None:
                s = s + (mask[b, h] if c.get("mask_per_head") else mask).astype(np.float64)
            seen = np.ones((Sq, Skv), bool)
            if c.get("causal"):
                seen &= d <= 0
            if "window" in c:
                left, right = c["window"]
                if left >= 0:
                    seen &= d >= -left
                if right >= 0:
                    seen &= d <= right
            seen &= s != -np.inf
            for r in range(Sq):
                if not seen[r].any():
                    continue
                sr = s[r][seen[r]]
                m = sr.max()
                e = np.exp(sr - m)
                denom = e.sum() + (math.exp(sinks[h] - m) if sinks is not None else 0.0)
                out[b, h, r] = e @ v[b, g][seen[r]] / denom
                lse[b, h, r] = m + math.log(e.sum())
    return out.astype(np.float32), lse.astype(np.float32)


CASES = [
    # Gemma-2-like: causal sliding window, soft-capped scores well beyond the cap
    dict(name="gemma", shape=(1, 4, 2, 9, 9, 16, 16), causal=True, window=(3, 0), softcap=5.0,
         qk_gain=3.0),
    # GPT-OSS-like: sinks, a causal window, more keys than queries
    dict(name="gptoss", shape=(1, 4, 1, 6, 10, 8, 8), causal=True, window=(4, 0), sinks=True),
    # ALiBi by the max_bias rule for 6 heads, top-left causal cross-attention
    dict(name="alibi", shape=(1, 6, 3, 8, 5, 8, 12), causal=True, align="top-left",
         alibi=8.0),
    # per-(batch, head) mask with -inf rows and sinks, bottom-right causal with seq_q > seq_kv
    dict(name="maskhead", shape=(2, 2, 1, 7, 4, 4, 4), causal=True, sinks=True, mask=True,
         mask_per_head=True),
    # explicit slopes, a broadcast mask, a two-sided window without the causal mask
    dict(name="mixed", shape=(1, 2, 2, 10, 12, 8, 8), window=(2, 1), slopes=True, mask=True,
         softcap=2.0),
]


def main():
    os.makedirs(OUT, exist_ok=True)
    rng = np.random.default_rng(20261201)
    for c in CASES:
        B, H, KV, Sq, Skv, Dqk, Dv = c["shape"]
        c["scale"] = float(np.float32(1.0 / math.sqrt(Dqk)))
        gain = c.get("qk_gain", 1.0)
        q = (gain * rng.standard_normal((B, H, Sq, Dqk))).astype(np.float32)
        k = (gain * rng.standard_normal((B, KV, Skv, Dqk))).astype(np.float32)
        v = rng.standard_normal((B, KV, Skv, Dv)).astype(np.float32)
        slopes = sinks = mask = None
        if c.get("alibi"):
            slopes = alibi_slopes(H, c["alibi"])
        if c.get("slopes"):
            slopes = rng.uniform(-0.25, 1.0, H).astype(np.float32)
        if c.get("sinks"):
            sinks = (2.0 * rng.standard_normal(H)).astype(np.float32)
        if c.get("mask"):
            shape = (B, H, Sq, Skv) if c.get("mask_per_head") else (Sq, Skv)
            mask = (2.0 * rng.standard_normal(shape)).astype(np.float32)
            mask[rng.uniform(size=shape) < 0.2] = -np.inf
            mask[..., 3, :] = -np.inf  # a row that sees nothing
        out, lse = attention(c, q, k, v, slopes, sinks, mask)
        win = c.get("window")
        params = [B, H, KV, Sq, Skv, Dqk, Dv, int(c.get("causal", False)),
                  int(c.get("align") == "top-left"), int(win is not None),
                  win[0] if win else -1, win[1] if win else -1, c.get("softcap", 0.0),
                  c.get("alibi", 0.0), int(c.get("slopes", False)), int(sinks is not None),
                  int(mask is not None), int(c.get("mask_per_head", False)), c["scale"]]
        arrays = dict(params=np.array(params, np.float32), q=q, k=k, v=v, out=out, lse=lse)
        if c.get("slopes"):
            arrays["slopes"] = slopes.astype(np.float32)
        if sinks is not None:
            arrays["sinks"] = sinks
        if mask is not None:
            arrays["mask"] = mask
        for key, a in arrays.items():
            np.save(os.path.join(OUT, f"{c['name']}_{key}.npy"), a)
        print(f"{c['name']}: {len(arrays)} arrays")


if __name__ == "__main__":
    main()
