# SPDX-License-Identifier: MIT
"""numpy_serving — a NumPy serving anchor for the tests (no framework needed): each
sequence's K/V rows gathered from the pools through the page table (or sliced from the
packed K/V), then numpy_attention's float64 attention per sequence, bottom-right causal per
sequence. WRONG_PAGE (numpy_serving_wrong_page.py) reads the page before the right one for
every sequence's last page: the per-sequence check must reject it."""
import importlib.util
import os

_spec = importlib.util.spec_from_file_location(
    "numpy_attention", os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                    "numpy_attention.py"))
_base = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_base)

import attn_options  # noqa: E402  baselines/external (attn_baseline.py puts it on the path)

NAME = "numpy_serving"
SUMMARY = "NumPy float64 attention per sequence of a serving batch (test baseline)"
PACKAGES = ("numpy",)
OPTIONS = {"align", "window", "softcap", "alibi", "sinks"}
LAYOUTS = ("ragged", "paged")
WRONG_PAGE = False
available = _base.available


def _kv(np, p, x, b):
    """Sequence b's rows of x as [1][KVH][kv_len][D]."""
    lay = p["layout"]
    k0, kl = lay["cu_seqlens_kv"][b], attn_options.seq_lens(p, b)[1]
    if lay["kind"] == "ragged":
        return x[k0:k0 + kl].transpose(1, 0, 2)[None]
    ps, row = lay["page_size"], list(lay["page_table"][b])
    if WRONG_PAGE and row:
        row[-1] = (row[-1] + 1) % x.shape[0]
    t = np.arange(kl)
    pages = np.array(row, dtype=np.int64)[t // ps] if kl else np.zeros(0, np.int64)
    return x[pages, :, t % ps, :].transpose(1, 0, 2)[None]


def serve(np, p, q, k, v):
    out = np.zeros((q.shape[0], p["heads"], p["head_dim_v"]), dtype=np.float32)
    cq = p["layout"]["cu_seqlens_q"]
    for b in range(p["batch"]):
        sp = attn_options.seq_problem(p, b)
        if sp["seq_q"] == 0 or sp["seq_kv"] == 0:
            continue
        qb = q[cq[b]:cq[b + 1]].transpose(1, 0, 2)[None]
        ob = _base.attention(np, sp, qb, _kv(np, p, k, b), _kv(np, p, v, b), False)
        out[cq[b]:cq[b + 1]] = ob[0].transpose(1, 0, 2)
    return out


def prepare(problem, inputs, threads):
    import numpy as np
    if not attn_options.layout_kind(problem):
        return (lambda c: _base.attention(np, problem, *inputs[c], False)), {
            "version": "numpy " + np.__version__}
    return (lambda c: serve(np, problem, *inputs[c])), {
        "version": "numpy " + np.__version__, "wrong_page": WRONG_PAGE}
