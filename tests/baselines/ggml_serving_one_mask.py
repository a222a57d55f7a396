# SPDX-License-Identifier: MIT
"""ggml_serving_one_mask — deliberately wrong serving anchor: ggml_flash_attn's serving path
with a KQ mask that does not separate the sequences (every query token sees every cached
key), so each sequence attends to the others' keys too. The per-sequence check must
reject it (tests/baselines/test_serving_anchors.py ggml_flash_attn)."""
import ggml_flash_attn as _base  # baselines/external (attn_baseline.py puts it on the path)


def _one_mask(np, p, seqs, n_cells):
    return np.zeros((p["layout"]["cu_seqlens_q"][-1], n_cells), dtype=np.float16)


_base._serving_mask = _one_mask

NAME = "ggml_serving_one_mask"
SUMMARY = "ggml_flash_attn over one cache without per-sequence masks (wrong on purpose)"
PACKAGES, OPTIONS, LAYOUTS = _base.PACKAGES, set(), _base.LAYOUTS
available, supports, prepare = _base.available, _base.supports, _base.prepare
