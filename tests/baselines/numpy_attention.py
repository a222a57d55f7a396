# SPDX-License-Identifier: MIT
"""numpy_attention — a plain NumPy (float64) attention with attnbench's bottom-right causal
mask: a test baseline that needs no framework, so the baseline pipeline (run, check,
time, merge into the results file) is tested in every CI run."""
NAME = "numpy_attention"
SUMMARY = "NumPy float64 attention (test baseline, bottom-right causal)"
PACKAGES = ("numpy",)
TOP_LEFT = False  # topleft_causal.py flips this to compute PyTorch's is_causal instead


def available():
    try:
        import numpy  # noqa: F401
    except ImportError as e:
        return False, str(e)
    return True, ""


def attention(np, p, q, k, v, top_left):
    g = p["heads"] // p["kv_heads"]
    k = np.repeat(k.astype(np.float64), g, axis=1)
    v = np.repeat(v.astype(np.float64), g, axis=1)
    s = (q.astype(np.float64) @ k.transpose(0, 1, 3, 2)) * p["scale"]
    if p["causal"]:
        i = np.arange(p["seq_q"])[:, None]
        j = np.arange(p["seq_kv"])[None, :]
        shift = 0 if top_left else p["seq_kv"] - p["seq_q"]
        s = np.where(j <= i + shift, s, -np.inf)
    m = s.max(axis=-1, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    e = np.exp(s - m)
    l = e.sum(axis=-1, keepdims=True)
    o = np.where(l > 0, (e @ v) / np.where(l > 0, l, 1.0), 0.0)
    return o.astype(np.float32)


def prepare(problem, inputs, threads):
    import numpy as np
    return (lambda c: attention(np, problem, *inputs[c], TOP_LEFT)), {
        "version": "numpy " + np.__version__, "top_left": TOP_LEFT}
