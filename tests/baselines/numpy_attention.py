# SPDX-License-Identifier: MIT
"""numpy_attention — a plain NumPy (float64) attention with attnbench's bottom-right causal
mask and every attention option but the LSE output (window, alignment, soft-cap, ALiBi,
sinks, additive mask; baselines/external/attn_options.py): a test baseline that needs no
framework, so the baseline pipeline (run, check, time, merge into the results file) is
tested in every CI run, with and without options."""
import attn_options  # baselines/external (attn_baseline.py puts it on the path)

NAME = "numpy_attention"
SUMMARY = "NumPy float64 attention (test baseline, bottom-right causal, options)"
PACKAGES = ("numpy",)
OPTIONS = {"align", "window", "softcap", "alibi", "sinks", "mask"}
TOP_LEFT = False  # topleft_causal.py flips this to compute PyTorch's is_causal instead


def available():
    try:
        import numpy  # noqa: F401
    except ImportError as e:
        return False, str(e)
    return True, ""


def attention(np, p, q, k, v, top_left, ignore=()):
    """O [B][H][Sq][Dv] in float64, rounded once; `ignore` names options to leave out
    (the deliberately wrong test baselines)."""
    g = p["heads"] // p["kv_heads"]
    k = np.repeat(k.astype(np.float64), g, axis=1)
    v = np.repeat(v.astype(np.float64), g, axis=1)
    s = (q.astype(np.float64) @ k.transpose(0, 1, 3, 2)) * p["scale"]
    o = attn_options.opts(p)
    if o.get("softcap") and "softcap" not in ignore:
        s = o["softcap"] * np.tanh(s / o["softcap"])
    if top_left:  # the wrong alignment: PyTorch's is_causal
        p = dict(p, options=dict(o, align="top-left"))
    b = attn_options.bias(np, p)
    if b is not None:
        s = s + b
    m = s.max(axis=-1, keepdims=True)
    sinks = o.get("sinks")
    if sinks is not None:
        sk = np.asarray(sinks, dtype=np.float64)[None, :, None, None]
        m = np.maximum(m, sk)
    m = np.where(np.isfinite(m), m, 0.0)
    e = np.exp(s - m)
    l = e.sum(axis=-1, keepdims=True)
    if sinks is not None:
        l = l + np.exp(sk - m)
    out = np.where(l > 0, (e @ v) / np.where(l > 0, l, 1.0), 0.0)
    return out.astype(np.float32)


def prepare(problem, inputs, threads):
    import os

    import numpy as np
    # cpus: the CPUs this process may run on (the one-command test checks that bench
    # --baselines does not hand its own pinned core down to the frameworks).
    return (lambda c: attention(np, problem, *inputs[c], TOP_LEFT)), {
        "version": "numpy " + np.__version__, "top_left": TOP_LEFT,
        "cpus": len(os.sched_getaffinity(0))}
