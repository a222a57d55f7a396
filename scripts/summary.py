#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""A short table from an `attnbench bench` results file: for every shape, the fastest
kernel (any thread count), its GFLOP/s and GB/s, its % of roofline and the limit that
applies (bandwidth for decode, FMA for prefill: attnresults.py), and its speed-up over
the `blas` baseline (blas's best thread count for that shape), plus the geometric-mean
speed-up. Memory-bound points measured with the adjacent bandwidth probe (bench's
default) also show %adj: GB/s as a % of the bandwidth read right before and after each
repetition (the median over repetitions), which a drifting machine does not skew. When the file holds external baselines (scripts/bench-baselines: PyTorch,
ONNX Runtime, ggml), it also shows the fastest of them per shape and the best kernel's
speed ratio over it (> 1: attnbench is faster); on a memory-bound shape where both were
measured against the adjacent probe, also the baseline's %adj and the ratio of the two
%adj (the speed ratio at equal bandwidth: a baseline timed minutes after the kernels on a
machine whose memory bandwidth moved is compared with what memory delivered to each). When the file holds points with attention
options (configs/variants.ini), it also shows each option point against the same kernel,
thread count and shape without options: the time ratio and the GFLOP/s ratio (GFLOP/s
counts visible pairs, so for a window the time ratio is the saving and the GFLOP/s ratio
the efficiency; for the other options the flop are equal and both give the cost).

usage: scripts/summary.py RESULTS.json [--baseline KERNEL]
"""
import argparse
import datetime
import os
import signal
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import attnresults  # noqa: E402


def spread_pct(p):
    """The spread of a point's repetitions: (slowest - fastest) / median time, in %;
    None with fewer than two repetitions."""
    ts = [t for t in p.times if t > 0]
    if len(ts) < 2 or not p.median_s:
        return None
    return 100.0 * (max(ts) - min(ts)) / p.median_s


def fmt_spread(v):
    return "-" if v is None else "%.1f%%" % v


def parse_date(text):
    """A results file's ISO 8601 date ("2026-12-02T11:20:36+00:00") as an aware datetime,
    or None."""
    if not text:
        return None
    try:
        d = datetime.datetime.fromisoformat(str(text))
    except ValueError:
        return None
    return d if d.tzinfo else d.replace(tzinfo=datetime.timezone.utc)


# Points timed further apart than this are flagged: a shared or thermally drifting
# machine changes speed over minutes (the reference runs saw bandwidth move by 20%).
APART_MINUTES = 10.0


def timing_notes(context, has_external, apart_minutes=APART_MINUTES):
    """Warnings about points of this file that a ratio compares but that were not timed
    together: the external baselines are timed by scripts/bench-baselines after the
    kernel sweep, in another process (context date = the sweep's start, baselines_date =
    the baselines' start, load_avg / baselines_load_avg = the 1-minute load then).
    Returns a list of lines (empty: nothing to warn about)."""
    if not has_external:
        return []
    start, ext = parse_date(context.get("date")), parse_date(context.get("baselines_date"))
    if ext is None:
        return ["warning: the external baselines were timed after the kernel sweep, in another "
                "process, at a time this file does not record (made before bench-baselines "
                "recorded baselines_date): their ratios may compare different machine states"]
    minutes = (ext - start).total_seconds() / 60.0 if start else None
    if minutes is not None and abs(minutes) < apart_minutes:
        return []
    la = context.get("load_avg")
    lb = context.get("baselines_load_avg")
    load = ""
    if isinstance(la, list) and la and lb is not None:
        load = "; load average %.2f at the sweep's start, %.2f at the baselines' start" % (
            float(la[0]), float(lb[0] if isinstance(lb, list) else lb))
    return ["warning: kernels and external baselines were timed in different runs, %s "
            "apart (kernel sweep from %s, baselines from %s%s): the ratios compare different "
            "machine states (ratio@bw, where shown, corrects memory-bound shapes for "
            "bandwidth drift)" % (
                "%.0f minutes" % minutes if minutes is not None else "an unknown time",
                context.get("date", "?"), context.get("baselines_date"), load)]


def baselines_run_lines(context):
    """Which external baselines ran and which did not, and why (context baselines_run /
    baselines_not_run, written by scripts/bench-baselines); [] for files without them."""
    import json
    out = []
    try:
        ran = json.loads(context.get("baselines_run") or "{}")
        not_run = json.loads(context.get("baselines_not_run") or "{}")
    except ValueError:
        return out
    if ran:
        out.append("external baselines run: " + ", ".join(
            "%s (%d points)" % (k, v.get("points", 0)) for k, v in sorted(ran.items())))
    if not_run:
        out.append("external baselines not run: " + "; ".join(
            "%s (%s)" % kv for kv in sorted(not_run.items())))
    return out


def option_costs(points):
    """[(kernel, threads, base shape label, options, time ratio, GFLOP/s ratio, fallback)]
    for every option point whose kernel, threads and shape (K/V type, compute mode, serving
    batch and cold inputs included) also ran without options."""
    def key(p):
        return (p.kernel, p.threads, p.base_shape)

    ok = [p for p in points.values() if not p.error and p.median_s and p.gflops
          and not p.get("baseline")]
    base = {key(p): p for p in ok if not attnresults.options_label(p.counters)}
    rows = []
    for p in ok:
        opts = attnresults.options_label(p.counters)
        b = base.get(key(p))
        if opts and b:
            rows.append((p.kernel, p.threads, b.shape_label(), opts, p.median_s / b.median_s,
                         p.gflops / b.gflops, p.fallback or b.fallback))
    return rows


def print_option_costs(rows):
    if not rows:
        return
    print()
    print("options vs none (same kernel, threads and shape; time and GFLOP/s ratios):")
    w0 = max(len("%s T%d" % (r[0], r[1])) for r in rows)
    w1 = max(len(r[2]) for r in rows)
    w2 = max(len(r[3]) for r in rows)
    for kernel, threads, shape, opts, tr, gr, fb in rows:
        print("  %-*s  %-*s  %-*s  time %.3fx  GFLOP/s %.3fx%s" % (
            w0, "%s T%d" % (kernel, threads), w1, shape, w2, opts, tr, gr,
            "  (fallback)" if fb else ""))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("results")
    ap.add_argument("--baseline", default="blas", help="kernel to compare with (default blas)")
    args = ap.parse_args(argv)
    loaded = attnresults.load_or_report(args.results, "summary.py")
    if loaded is None:
        return 1
    context, points = loaded
    shapes = {}
    errors = [p for p in points.values() if p.error]
    external = {}
    failed_timed = []  # baselines timed despite failing their check (--time-failed)
    for p in points.values():
        if not p.error and p.gflops:
            if p.get("check_failed"):
                failed_timed.append(p)
                continue
            (external if p.get("baseline") else shapes).setdefault(p.shape, []).append(p)
    if not shapes:
        why = ("only external baselines, no kernel point" if external
               else "no successful points")
        print("summary.py: %s in %s" % (why, args.results), file=sys.stderr)
        return 1
    m = attnresults.machine(context)
    print("%s — %s (%s), %s" % (args.results, m["cpu"], m["uarch"], context.get("isa", "?")))
    rows = []
    fallbacks = 0
    speedups = []
    ext_ratios = []
    adj_ratios = []
    for shape, pts in shapes.items():
        best = max(pts, key=lambda p: p.gflops)
        base = [p for p in pts if p.kernel == args.baseline]
        base_best = max(base, key=lambda p: p.gflops) if base else None
        su = best.gflops / base_best.gflops if base_best else None
        if su:
            speedups.append(su)
        ext = max(external.get(shape, []), key=lambda p: p.gflops, default=None)
        ratio = best.gflops / ext.gflops if ext else None
        if ratio:
            ext_ratios.append(ratio)
        ext_adj = ext.adj_bw_pct if ext else None
        adj_ratio = best.adj_bw_pct / ext_adj if ext_adj and best.adj_bw_pct else None
        if adj_ratio:
            adj_ratios.append(adj_ratio)
        kern = "%s T%d%s" % (best.kernel, best.threads, " (fallback)" if best.fallback else "")
        fallbacks += best.fallback
        rows.append((best.shape_label(), kern, best.gflops, spread_pct(best),
                     best.gbs, best.roofline_pct(context), best.limit(context),
                     base_best.gflops if base_best else None, su,
                     "%s T%d" % (ext.kernel, ext.threads) if ext else "-",
                     ext.gflops if ext else None, spread_pct(ext) if ext else None, ratio, best.adj_bw_pct, ext_adj,
                     adj_ratio))
    w0 = max(len(r[0]) for r in rows)
    w1 = max(len(r[1]) for r in rows + [("", "best kernel")])
    w2 = max(len(r[9]) for r in rows + [("",) * 9 + ("best external",)])
    has_ext = bool(external)
    has_adj = any(r[13] is not None for r in rows)
    has_ext_adj = any(r[14] is not None for r in rows)
    head = "%-*s  %-*s  %9s  %6s  %7s  %6s  %-9s  %9s  %8s" % (
        w0, "shape", w1, "best kernel", "GFLOP/s", "spread", "GB/s", "%roof", "limit",
        args.baseline, "speedup")
    if has_adj:
        head += "  %6s" % "%adj"
    if has_ext:
        head += "  %-*s  %9s  %6s  %7s" % (w2, "best external", "GFLOP/s", "spread", "ratio")
    if has_ext_adj:
        head += "  %6s  %8s" % ("%adj", "ratio@bw")
    print(head)
    for label, kern, g, spr, gb, rl, lim, bg, su, en, eg, espr, er, adj, eadj, ar in rows:
        line = "%-*s  %-*s  %9.2f  %6s  %7s  %6s  %-9s  %9s  %8s" % (
            w0, label, w1, kern, g, fmt_spread(spr), "-" if gb is None else "%.2f" % gb,
            "-" if rl is None else "%.1f" % rl, lim or "-",
            "-" if bg is None else "%.2f" % bg, "-" if su is None else "%.2fx" % su)
        if has_adj:
            line += "  %6s" % ("-" if adj is None else "%.1f" % adj)
        if has_ext:
            line += "  %-*s  %9s  %6s  %7s" % (w2, en, "-" if eg is None else "%.2f" % eg,
                                               fmt_spread(espr), "-" if er is None else "%.2fx" % er)
        if has_ext_adj:
            line += "  %6s  %8s" % ("-" if eadj is None else "%.1f" % eadj,
                                    "-" if ar is None else "%.2fx" % ar)
        print(line)
    print("spread = (slowest - fastest repetition) / median time (- : one repetition)")
    print("%roof = roofline time / time, roofline time = max(flop / unit peak, roofline bytes / "
          "read bandwidth) as measured in this run (unit: the FP32 FMA, or the compute mode's "
          "unit a point names in its limit; limit: the larger term)")
    if has_adj:
        print("%adj = GB/s as a % of the read bandwidth probed right before and after each "
              "repetition (median over repetitions; memory-bound points)")
    if has_ext_adj:
        print("ratio@bw = the best kernel's %adj / the best external's %adj: the speed ratio "
              "at equal memory bandwidth (memory-bound shapes)")
    if fallbacks:
        print("(fallback): the kernel lacks one of the shape's options natively; the portable "
              "fallback (blocked with every option) was timed")
    if speedups:
        print("geometric-mean speed-up of the best kernel over %s: %.2fx over %d shapes"
              % (args.baseline, attnresults.geomean(speedups), len(speedups)))
    if ext_ratios:
        print("geometric-mean speed ratio of the best kernel over the best external baseline: "
              "%.2fx over %d shapes" % (attnresults.geomean(ext_ratios), len(ext_ratios)))
    if adj_ratios:
        print("geometric-mean ratio@bw over the memory-bound shapes: %.2fx over %d shapes"
              % (attnresults.geomean(adj_ratios), len(adj_ratios)))
    for key in sorted(k for k in context if k.startswith("peak_warning_")):
        # a peak probe that stayed low (bench/context.c): that thread count's % of peak
        # and % of the roofline are overstated
        print("warning: %s: %s" % (key, context[key]))
    for p in sorted(failed_timed, key=lambda p: p.name):  # shown, never in a ratio
        best = max(shapes.get(p.shape, []), key=lambda q: q.gflops, default=None)
        print("failed its check, timed with --time-failed (not in the ratios): %s T%d %.2f "
              "GFLOP/s%s" % (p.kernel, p.threads, p.gflops,
                             " — best kernel %.2fx" % (best.gflops / p.gflops) if best else ""))
    for note in timing_notes(context, has_ext):
        print(note)
    for line in baselines_run_lines(context):
        print(line)
    print_option_costs(option_costs(points))
    if errors:
        print("%d points failed or were refused (see error_message in the file), e.g. %s: %s"
              % (len(errors), errors[0].name, errors[0].error))
    return 0


if __name__ == "__main__":
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # `| head` ends quietly
    sys.exit(main())
