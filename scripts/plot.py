#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Plots an `attnbench bench` results file as PNGs:

  <stem>-gflops.png    GFLOP/s vs sequence length per kernel (log2 x axis), one panel per
                       (head_dim, heads, causal); decode panels (seq_q = 1) use seq_kv
  <stem>-peak.png      the same as % of the measured FMA peak (when the file has peaks)
  <stem>-roofline.png  arithmetic intensity (flop per compulsory byte) vs GFLOP/s, with
                       the measured compute ceilings (FMA peak) and bandwidth ceiling

usage: scripts/plot.py RESULTS.json [--out-dir DIR]
"""
import argparse
import os
import signal
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import attnresults  # noqa: E402


def panel_key(p):
    c = p.counters
    return (int(c.get("Dqk", 0)), int(c.get("H", 0)), bool(c.get("causal")))


def panel_title(key):
    d, h, causal = key
    return "head_dim %d, heads %d, %s" % (d, h, "causal" if causal else "no mask")


def line_tags(points):
    """Dimensions besides the panel's and the x axis that vary for one kernel: each value
    gets its own line (and line style). A dimension that differs only between kernels
    (single-thread kernels at T1 next to parallel ones at T2) needs no tag."""
    tags = []
    for k, fmt in (("KV", "KV%d"), ("B", "B%d"), ("kernel_threads", "T%d"), ("Dv", "Dv%d")):
        per_kernel = {}
        for p in points:
            per_kernel.setdefault(p.kernel, set()).add(int(p.get(k, 0)))
        if any(len(v) > 1 for v in per_kernel.values()):
            tags.append((k, fmt))
    return tags


def x_axis(points):
    """seq_q, unless it is constant in the panel (decode) and seq_kv varies."""
    if len({p.get("Sq") for p in points}) == 1 and len({p.get("Skv") for p in points}) > 1:
        return "Skv", "seq_kv (keys)"
    return "Sq", "seq_len (query rows)"


def series_plot(points, metric, ylabel, title, path):
    ok = [p for p in points if not p.error and p.get(metric) is not None]
    if not ok:
        return False
    panels = {}
    for p in ok:
        panels.setdefault(panel_key(p), []).append(p)
    keys = sorted(panels)
    n = len(keys)
    cols = min(n, 3)
    rows = (n + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(5.2 * cols, 3.9 * rows), squeeze=False)
    kernels = sorted({p.kernel for p in ok})
    colors = {k: plt.cm.tab10(i % 10) for i, k in enumerate(kernels)}
    styles = ["-", "--", ":", "-."]
    for ax, key in zip(axes.flat, keys):
        pts = panels[key]
        xk, xlabel = x_axis(pts)
        tags = line_tags(pts)
        lines = {}
        for p in pts:
            # other dims (seq_kv in cross sweeps) are folded into separate lines too
            extra = tuple(fmt % int(p.get(k, 0)) for k, fmt in tags)
            if xk == "Sq" and p.get("Skv") != p.get("Sq"):
                extra += ("Skv%d" % int(p.get("Skv")),)
            lines.setdefault((p.kernel, extra), []).append(p)
        variants = sorted({e for _, e in lines})
        for (kernel, extra), lp in sorted(lines.items()):
            lp.sort(key=lambda p: p.get(xk))
            # External baselines (PyTorch, ONNX Runtime, ggml): grey-edged squares, thin
            # lines, "(ext)" in the legend, so they never pass for attnbench kernels.
            ext = bool(lp[0].get("baseline"))
            ax.plot([p.get(xk) for p in lp], [p.get(metric) for p in lp],
                    marker="s" if ext else "o", ms=4 if ext else 3, mec="0.3" if ext else None,
                    lw=0.9 if ext else 1.5, color=colors[kernel],
                    linestyle=styles[variants.index(extra) % len(styles)],
                    label=" ".join((kernel + (" (ext)" if ext else ""),) + extra))
        ax.set_xscale("log", base=2)
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        ax.set_title(panel_title(key), fontsize=10)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=6, ncol=2)
    for ax in list(axes.flat)[n:]:
        ax.axis("off")
    fig.suptitle(title, fontsize=11)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def roofline(points, context, title, path):
    ok = [p for p in points if not p.error and p.gflops and p.get("bytes")]
    if not ok:
        return False
    fig, ax = plt.subplots(figsize=(7.5, 5.2))
    kernels = sorted({p.kernel for p in ok})
    for i, k in enumerate(kernels):
        kp = [p for p in ok if p.kernel == k]
        ax.scatter([p.get("flop") / p.get("bytes") for p in kp], [p.gflops for p in kp], s=14,
                   color=plt.cm.tab10(i % 10), label=k)
    ai = [p.get("flop") / p.get("bytes") for p in ok]
    lo, hi = min(ai) / 2, max(ai) * 2
    peaks = attnresults.peaks(context)
    bws = attnresults.bandwidths(context)
    threads = sorted({p.threads for p in ok})
    for t in threads:  # the compute ceiling: the best ISA's measured peak at t threads
        tp = {isa: v for (isa, tt), v in peaks.items() if tt == t and v > 0}
        if not tp:
            continue
        isa, v = max(tp.items(), key=lambda kv: kv[1])
        ax.axhline(v, color="gray", lw=0.8, ls="--")
        ax.text(lo * 1.05, v * 1.06, "FMA peak (%s, %d thread%s): %.0f GFLOP/s"
                % (isa, t, "s" if t > 1 else "", v), fontsize=7, color="dimgray")
    for t, bw in sorted(bws.items()):
        top = max(peaks.values()) if peaks else max(p.gflops for p in ok) * 2
        xs = [lo, min(hi, top / bw)]
        ax.plot(xs, [bw * x for x in xs], color="black", lw=0.9)
        ax.text(lo * 1.05, bw * lo * 1.25, "read bandwidth %d thr: %.0f GB/s" % (t, bw),
                fontsize=7, rotation=0)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(lo, hi)
    ax.set_xlabel("arithmetic intensity (flop / compulsory byte: Q, K, V read + O written once)")
    ax.set_ylabel("GFLOP/s")
    ax.set_title(title, fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("results")
    ap.add_argument("--out-dir", help="where the PNGs go (default: next to RESULTS)")
    args = ap.parse_args(argv)
    try:
        context, points = attnresults.load(args.results)
    except (OSError, ValueError, KeyError) as e:
        print("plot.py: cannot read %s: %s" % (args.results, e), file=sys.stderr)
        return 1
    pts = list(points.values())
    if not any(not p.error for p in pts):
        print("plot.py: %s has no successful benchmark points" % args.results, file=sys.stderr)
        return 1
    out_dir = args.out_dir or os.path.dirname(os.path.abspath(args.results))
    os.makedirs(out_dir, exist_ok=True)
    stem = os.path.splitext(os.path.basename(args.results))[0]
    machine = "%s (%s)" % (context.get("cpu_model", "?"), context.get("host_name", "?"))
    written = []
    for suffix, fn in (
        ("gflops", lambda p: series_plot(pts, "GFLOP/s", "GFLOP/s", "attention GFLOP/s — " + machine, p)),
        ("peak", lambda p: series_plot(pts, "%peak", "% of measured FMA peak",
                                       "% of peak (kernel's ISA, same threads) — " + machine, p)),
        ("roofline", lambda p: roofline(pts, context, "roofline — " + machine, p)),
    ):
        path = os.path.join(out_dir, "%s-%s.png" % (stem, suffix))
        if fn(path):
            written.append(path)
    for w in written:
        print(w)
    return 0


if __name__ == "__main__":
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # `| head` ends quietly
    sys.exit(main())
