#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Plots an `attnbench bench` results file as PNGs:

  <stem>-gflops.png      GFLOP/s vs sequence length per kernel (log2 x axis), one panel per
                         (head_dim, heads, causal); decode panels (seq_q = 1) use seq_kv
  <stem>-efficiency.png  the same as % of roofline: time vs the roofline time
                         max(flop / FMA peak, bytes / read bandwidth) measured in the same
                         run (decode is scored against bandwidth, prefill against FMA;
                         square markers = bandwidth-bound points)
  <stem>-roofline.png    arithmetic intensity (flop per compulsory byte) vs GFLOP/s, with
                         the measured roofline min(FMA peak, intensity x bandwidth) per
                         thread count

Every point shows the spread of its repetitions (min to max) as an error bar; every
kernel has one colour in all plots (and in every results file: kernel_color), each
framework (PyTorch, ONNX Runtime, OpenVINO, ggml) a strong hue no kernel uses; the legend
names the kernel's thread count (and a baseline's framework) and sits right of the panels,
never over data. The roofline draws one ceiling per thread count and ISA of the plotted
kernels (AVX2 kernels against the AVX2 peak, AVX-512 ones against AVX-512's; kernels
without an ISA against the highest peak; points of a bf16, f16 or int8 compute mode that
a kernel runs natively against the peak of the unit they were judged by, e.g. "bf16-dot
avx512bf16": their peak_unit counter), each bent down by the read bandwidth.

usage: scripts/plot.py RESULTS.json [--out-dir DIR]
"""
import argparse
import os
import signal
import sys
import zlib

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import attnresults  # noqa: E402


def panel_key(p):
    c = p.counters
    return (int(c.get("Dqk", 0)), int(c.get("H", 0)), bool(c.get("causal")),
            attnresults.options_label(c))


def panel_title(key):
    d, h, causal, opts = key
    return "head_dim %d, heads %d, %s%s" % (d, h, "causal" if causal else "no mask",
                                             ", " + opts if opts else "")


# One colour per kernel, the same in every plot and every file: the built-in kernels
# have fixed colours (each ISA family its own hue, the widest ISA the strongest); the
# frameworks (external baselines, scripts/bench-baselines) strong hues no built-in kernel
# uses, one per framework (variants of one framework: shades of its hue); any other name
# (plug-ins, new baselines) a colour picked by a stable hash of the name.
KERNEL_COLORS = {
    "reference": "#000000", "naive": "#7f7f7f", "blocked": "#bcbd22", "blas": "#9467bd",
    "tiled__avx2": "#9ecae1", "tiled__avx512": "#1f77b4", "tiled__neon": "#17becf",
    "omp__avx2": "#98df8a", "omp__avx512": "#2ca02c", "omp__neon": "#006d2c",
    "flash__avx2": "#ff9896", "flash__avx512": "#d62728", "flash__neon": "#ff7f0e",
}
# (name prefix, framework, colours of its baselines in order of FRAMEWORK_BASELINES)
FRAMEWORK_COLORS = (("torch", "PyTorch", "#ff00cc"), ("ort", "ONNX Runtime", "#00bfc4"),
                    ("openvino", "OpenVINO", "#3a0ca3"), ("ov_", "OpenVINO", "#3a0ca3"),
                    ("ggml", "ggml", "#ff9900"))
# Baselines of one framework besides its first: darker shades of the framework's hue.
FRAMEWORK_SHADES = {"ggml_flash_attn_f16": "#c77c00", "ggml_flash_attn_q8_0": "#8f5a00"}
OTHER_COLORS = ["#393b79", "#637939", "#843c39", "#7b4173", "#5254a3", "#b5cf6b",
                "#e7ba52", "#ad494a", "#a55194", "#6b6ecf", "#8c6d31", "#00441b"]


def framework(name):
    """The framework an external baseline's name belongs to ("PyTorch", ...), or None."""
    for prefix, fw, _ in FRAMEWORK_COLORS:
        if name.startswith(prefix):
            return fw
    return None


def kernel_color(name):
    if name in KERNEL_COLORS:
        return KERNEL_COLORS[name]
    if name in FRAMEWORK_SHADES:
        return FRAMEWORK_SHADES[name]
    for prefix, _, color in FRAMEWORK_COLORS:
        if name.startswith(prefix):
            return color
    return OTHER_COLORS[zlib.crc32(name.encode()) % len(OTHER_COLORS)]


def kernel_isa(name, isas):
    """The ISA of the peak a kernel is scored against: the peak_fma ISA (context key,
    e.g. "avx512f") that the kernel's "__<isa>" suffix names ("avx512" -> "avx512f"),
    or None for kernels without one (blocked, blas, frameworks: any ISA)."""
    suffix = name.rpartition("__")[2] if "__" in name else ""
    if not suffix:
        return None
    for isa in sorted(isas):
        if isa == suffix or isa.startswith(suffix):
            return isa
    return None


def point_unit(p, context):
    """The low-precision unit a point was judged by (its peak_unit counter, named by the
    context's "peak_units"), or None for the FP32 FMA (code 0) and older files."""
    code = p.get("peak_unit")
    if not code:
        return None
    return attnresults.peak_unit_names(context).get(int(code))


def ceilings(points, context):
    """The roofline ceilings the plotted points are measured against: [(threads, isa,
    peak G ops/s or None, read bandwidth GB/s or None)], one per (thread count, ISA
    of a plotted kernel); kernels without an ISA (blocked, blas, frameworks) add the
    thread count's highest FMA peak; a point that recorded its peak (peak_GFLOP/s, e.g.
    flash__avx2int8's AVX2 one) adds the ISA of that peak. isa is None when the context has
    no peak for it. A
    point judged by a low-precision unit (its peak_unit counter: a bf16, f16 or int8
    compute mode on a kernel that runs it natively) adds that unit's ceiling instead,
    named "<unit> <isa>" (e.g. "bf16-dot avx512bf16")."""
    peaks = attnresults.peaks(context)
    units = attnresults.unit_peaks(context)
    bws = attnresults.bandwidths(context)
    isas = {i for i, _ in peaks}
    out = set()
    for p in points:
        t = p.threads
        unit = point_unit(p, context)
        if unit:
            at_t = {i: v for (u, i, tt), v in units.items() if u == unit and tt == t and v > 0}
            if at_t:  # the unit's ISA whose peak the point recorded, else its best
                want = p.get("peak_GFLOP/s")
                isa = min(at_t, key=lambda i: abs(at_t[i] - want)) if want else \
                    max(at_t, key=at_t.get)
                out.add((t, "%s %s" % (unit, isa), at_t[isa], bws.get(t)))
                continue
        at_t = {i: v for (i, tt), v in peaks.items() if tt == t and v > 0}
        want = p.get("peak_GFLOP/s")  # the FMA peak bench scored the point against
        if want and at_t:
            isa = min(at_t, key=lambda i: abs(at_t[i] - want))
        else:  # older files: the ISA its name ends in, else the best
            isa = kernel_isa(p.kernel, isas)
            if isa is None or isa not in at_t:
                isa = max(at_t, key=at_t.get) if at_t else None
        out.add((t, isa, at_t.get(isa), bws.get(t)))
    return sorted(out, key=lambda c: (c[0], c[2] or 0))


def outside_legend(fig, axes, variants=None):
    """One legend for the whole figure, right of every panel, so it never covers data:
    the union of the panels' entries (each label once). With variants ({line style:
    label}), one entry per kernel (its colour and marker: the label's first word and
    framework) and one per line style instead of one per line."""
    seen = {}
    for ax in axes:
        for h, lab in zip(*ax.get_legend_handles_labels()):
            seen.setdefault(lab, h)
    if not seen:
        return None
    handles, labels = list(seen.values()), list(seen)
    if variants:
        from matplotlib.lines import Line2D
        kernels = {}
        for h, lab in zip(handles, labels):
            name = lab.split(" T")[0]
            if name not in kernels:
                line = h[0] if isinstance(h, tuple) else getattr(h, "lines", [h])[0]
                kernels[name] = Line2D([], [], color=line.get_color(), marker=line.get_marker(),
                                       ms=4, lw=1.5)
        handles = list(kernels.values()) + [Line2D([], [], color="black", lw=1, ls=ls)
                                            for ls in variants]
        labels = list(kernels) + list(variants.values())
    ncol = 1 + len(labels) // 28
    return fig.legend(handles, labels, loc="upper left", fontsize=7,
                      bbox_to_anchor=(1.0, 1.0), ncol=ncol, frameon=False)


def line_tags(points):
    """Dimensions besides the panel's, the x axis and the thread count that vary for one
    kernel: each value gets its own line (and line style)."""
    tags = []
    for k, fmt in (("KV", "KV%d"), ("B", "B%d"), ("Dv", "Dv%d")):
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


def yerr(points, values):
    """Asymmetric error bars (value - min, max - value) over the repetitions."""
    lo, hi = [], []
    for p, v in zip(points, values):
        sp = p.spread(v)
        lo.append(v - sp[0] if sp else 0.0)
        hi.append(sp[1] - v if sp else 0.0)
    return [lo, hi]


LINE_STYLES = ["-", "--", ":", "-.", (0, (5, 1)), (0, (3, 1, 1, 1, 1, 1)), (0, (1, 3)),
               (0, (8, 2, 2, 2))]


def panel_series(pts):
    """(x key, x label, {(kernel, variant): [points]}) of one panel; variant = the thread
    count and the other dims that vary (seq_kv in cross sweeps)."""
    xk, xlabel = x_axis(pts)
    tags = line_tags(pts)
    lines = {}
    for p in pts:
        extra = ("T%d" % p.threads,) + tuple(fmt % int(p.get(k, 0)) for k, fmt in tags)
        if xk == "Sq" and p.get("Skv") != p.get("Sq"):
            extra += ("Skv%d" % int(p.get("Skv")),)
        lines.setdefault((p.kernel, extra), []).append(p)
    return xk, xlabel, lines


def series_plot(points, metric, ylabel, title, path, context=None, mark_limit=False):
    """metric(point) -> value or None."""
    # entries without a shape (e.g. external baselines that carry only a label) have no x
    ok = [p for p in points if not p.error and metric(p) is not None and p.get("Sq") and p.get("Skv")]
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
    panel_lines = {key: panel_series(panels[key]) for key in keys}
    # one line style per variant (thread count, other dims) in every panel: the legend
    # then names each kernel (colour) and each variant (style) once
    variants = sorted({e for key in keys for _, e in panel_lines[key][2]})
    for ax, key in zip(axes.flat, keys):
        xk, xlabel, lines = panel_lines[key]
        for (kernel, extra), lp in sorted(lines.items()):
            style = LINE_STYLES[variants.index(extra) % len(LINE_STYLES)]
            lp.sort(key=lambda p: p.get(xk))
            xs, ys = [p.get(xk) for p in lp], [metric(p) for p in lp]
            color = kernel_color(kernel)
            # External baselines (PyTorch, ONNX Runtime, ggml): diamonds, thin lines and
            # the framework (or "ext") in the legend, so they never pass for attnbench kernels.
            ext = bool(lp[0].get("baseline"))
            ax.errorbar(xs, ys, yerr=yerr(lp, ys), marker="D" if ext else "o", ms=3.5 if ext else 3,
                        capsize=2, elinewidth=0.8, lw=0.9 if ext else 1.5, color=color,
                        linestyle=style,
                        label=" ".join((kernel + (" (%s)" % (framework(kernel) or "ext") if ext else ""),)
                                     + extra))
            if mark_limit:  # bandwidth-bound points as squares
                mem = [(x, y) for p, x, y in zip(lp, xs, ys) if p.limit(context) == "bandwidth"]
                if mem:
                    ax.scatter([m[0] for m in mem], [m[1] for m in mem], marker="s", s=22,
                               facecolors="none", edgecolors=color, zorder=3)
        ax.set_xscale("log", base=2)
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        ax.set_title(panel_title(key), fontsize=10)
        ax.grid(True, which="both", alpha=0.3)
    for ax in list(axes.flat)[n:]:
        ax.axis("off")
    fig.suptitle(title, fontsize=11)
    fig.tight_layout()
    # kernels by colour, variants by line style while each style is one variant; else
    # one entry per line
    outside_legend(fig, list(axes.flat)[:n],
                   {LINE_STYLES[i]: " ".join(v) for i, v in enumerate(variants)}
                   if len(variants) <= len(LINE_STYLES) else None)
    save(fig, path)
    plt.close(fig)
    return True


def save(fig, path):
    """Writes the figure (legend outside the panels included) atomically: a temporary
    file renamed over path. path may also be a file object (scripts/report)."""
    if not isinstance(path, str):
        fig.savefig(path, dpi=110, bbox_inches="tight", format="png")
        return
    tmp = path + ".tmp.png"
    fig.savefig(tmp, dpi=110, bbox_inches="tight")
    os.replace(tmp, path)


def roofline(points, context, title, path):
    # intensity: flop per byte the roofline counts (roofline_bytes: the keys the rows can see)
    ok = [p for p in points if not p.error and p.gflops and p.roofline_bytes and p.get("flop")]
    if not ok:
        return False
    fig, ax = plt.subplots(figsize=(7.5, 5.2))
    markers = ["o", "^", "s", "D", "v", "P"]
    threads = sorted({p.threads for p in ok})
    for k in sorted({p.kernel for p in ok}):
        for t in threads:
            kp = [p for p in ok if p.kernel == k and p.threads == t]
            if not kp:
                continue
            ys = [p.gflops for p in kp]
            ax.errorbar([p.get("flop") / p.roofline_bytes for p in kp], ys, yerr=yerr(kp, ys),
                        fmt=markers[threads.index(t) % len(markers)], ms=4, capsize=2,
                        elinewidth=0.8, color=kernel_color(k),
                        label="%s%s T%d" % (k, " (%s)" % framework(k) if framework(k) else "", t))
    ai = [p.get("flop") / p.roofline_bytes for p in ok]
    lo, hi = min(ai) / 2, max(ai) * 2
    grays = ["dimgray", "black", "gray", "silver"]
    styles = ["--", ":", "-.", (0, (5, 1))]
    isas = sorted({c[1] for c in ceilings(ok, context) if c[1]})
    for t, isa, v, bw in ceilings(ok, context):  # min(unit's peak, intensity x bandwidth)
        col = grays[threads.index(t) % len(grays)]
        if v:
            ridge = v / bw if bw else lo
            xs = [lo, max(lo, min(hi, ridge)), hi] if bw else [lo, hi]
            ys = [min(v, bw * x) if bw else v for x in xs]
            # FP32 FMA ceilings are named by their ISA, the other units "<unit> <isa>"
            name = "FMA %s %.0f GFLOP/s" % (isa, v) if " " not in isa else "%s %.0f GOP/s" % (isa, v)
            ax.plot(xs, ys, color=col, lw=0.9, ls=styles[isas.index(isa) % len(styles)],
                    label="T%d: %s%s" % (t, name, ", %.0f GB/s" % bw if bw else ""))
        elif bw:
            ax.plot([lo, hi], [bw * lo, bw * hi], color=col, lw=0.9, ls="--",
                    label="T%d: read bandwidth %.0f GB/s" % (t, bw))
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(lo, hi)
    ax.set_xlabel("arithmetic intensity (flop / compulsory byte: Q, K, V read + O written once)")
    ax.set_ylabel("GFLOP/s")
    ax.set_title(title, fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    outside_legend(fig, [ax])
    save(fig, path)
    plt.close(fig)
    return True


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("results")
    ap.add_argument("--out-dir", help="where the PNGs go (default: next to RESULTS)")
    args = ap.parse_args(argv)
    loaded = attnresults.load_or_report(args.results, "plot.py")
    if loaded is None:
        return 1
    context, points = loaded
    pts = list(points.values())
    if not any(not p.error for p in pts):
        print("plot.py: %s has no successful benchmark points" % args.results, file=sys.stderr)
        return 1
    out_dir = args.out_dir or os.path.dirname(os.path.abspath(args.results))
    os.makedirs(out_dir, exist_ok=True)
    stem = os.path.splitext(os.path.basename(args.results))[0]
    m = attnresults.machine(context)
    machine = "%s, %s (%s)" % (m["cpu"], m["uarch"], context.get("host_name", "?"))
    written = []
    for suffix, fn in (
        ("gflops", lambda p: series_plot(pts, lambda q: q.gflops, "GFLOP/s",
                                         "attention GFLOP/s — " + machine, p)),
        ("efficiency", lambda p: series_plot(
            pts, lambda q: q.roofline_pct(context), "% of roofline",
            "% of roofline (squares: bandwidth-bound, the rest FMA-bound) — " + machine, p, context=context, mark_limit=True)),
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
