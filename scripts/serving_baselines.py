# SPDX-License-Identifier: MIT
"""serving_baselines — the serving-batch parts of scripts/bench-baselines (docs/serving.md):
the counters a serving point's baseline entries carry, their rates, and the per-sequence
check of a baseline's packed output."""
import json
import os
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SPLITTER = os.path.join(ROOT, "baselines", "external", "split_sequences.py")

# The description of a serving batch a kernel point carries (bench/point.c), copied into
# its baselines' entries; the rates are the baseline's own (serving_rates).
SERVING_COUNTERS = ("seqs", "paged", "page_size", "kv_bytes", "roofline_bytes")


def serving_rates(base, tokens, t, peak, bw):
    """A serving point's rates at t seconds per call, as bench/point.c computes them for
    the kernels: query tokens/s, the K/V read rate (KV_GB/s; %bw_kv of the read bandwidth
    the kernels' sweep probed), and %roofline = 100 · max(flop / peak, roofline_bytes /
    bandwidth) / t."""
    out = {"tokens/s": tokens / t, "KV_GB/s": base["kv_bytes"] / t / 1e9}
    if bw:
        out["%bw_kv"] = 100.0 * out["KV_GB/s"] / bw
    if bw and peak and "roofline_bytes" in base:
        t_roof = max(base["flop"] / (peak * 1e9), base["roofline_bytes"] / (bw * 1e9))
        out["%roofline"] = 100.0 * t_roof / t
        out["read_bw_GB/s"] = bw
    return out


def check_layout_output(a, inp, out, s, flags, tmp, check_output):
    """A serving point's output (docs/serving.md): each sequence is a dense problem of
    batch 1, checked with `attnbench check --o` on its own Q rows, K/V rows and O rows —
    split from the export by baselines/external/split_sequences.py (pages through the page
    table, by its own index arithmetic, not the baseline's; run with the baselines' Python,
    which has NumPy) — with the usual bound; a sequence without keys must give exact
    zeros. check_output(attnbench, paths, o, kp, s, flags) -> (ok, verdict) is
    bench-baselines' dense check. Returns (ok, verdict): the first failing sequence, else how many passed."""
    d = os.path.join(tmp, "seqs")
    os.makedirs(d, exist_ok=True)
    entry = os.path.join(d, "entry.json")
    with open(entry, "w") as f:
        json.dump(s, f)
    r = subprocess.run([a.python, SPLITTER, entry, inp.dir, out, d], capture_output=True,
                       text=True)
    if r.returncode != 0:
        return False, "check: " + ((r.stderr.strip().splitlines() or ["exit %d" % r.returncode])[-1])
    checked = 0
    for line in r.stdout.splitlines():
        q = json.loads(line)
        where = "sequence %d (q_len %d, kv_len %d)" % (q["seq"], q["q_len"], q["kv_len"])
        if q["files"] is None:
            if not q["zeros"]:
                return False, "%s: check: FAIL a sequence without keys must give zeros" % where
        else:
            f = q["files"]
            ok, verdict = check_output(a.attnbench, f, f["o"], None, s, flags)
            if not ok:
                return False, "%s: %s" % (where, verdict)
        checked += 1
    return True, "check: pass (%d sequences, each against its float64 reference)" % checked
