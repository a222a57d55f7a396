#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Compares two or more `attnbench bench` results files (kernels, commits or machines):
the median time and GFLOP/s of every benchmark point present in the first file and at
least one other, the ratio to the first file, and whether the change is beyond the
measured noise.

A change is flagged (faster / SLOWER) only when both hold:
  * the repetitions' ranges [min, max] of the two files do not overlap, and
  * |ratio - 1| > 2 * sqrt(cv_a^2 + cv_b^2), cv = the repetitions' stddev / mean.
Points without repetitions in either file are shown with "?" (noise unknown).

With --by-shape, points are matched by shape instead of name and each file contributes
its fastest successful point per shape (any kernel, any thread count; the kernel is
shown): "best of A vs best of B", e.g. two machines, or two single-kernel runs
(`bench --kernel flash__avx512 --out a.json`, `bench --kernel blas --out b.json`).

usage: scripts/compare.py A.json B.json [C.json ...] [--by-shape] [--csv results.csv] [--all]
"""
import argparse
import csv
import math
import os
import signal
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import attnresults  # noqa: E402


def verdict(a, b):
    """'faster' / 'SLOWER' / '' (within noise) / '?' (no repetitions) for b against a."""
    if len(a.times) < 2 or len(b.times) < 2 or a.cv is None or b.cv is None:
        return "?"
    ratio = b.median_s / a.median_s
    noise = 2.0 * math.sqrt(a.cv ** 2 + b.cv ** 2)
    disjoint = max(a.times) < min(b.times) or max(b.times) < min(a.times)
    if disjoint and abs(ratio - 1.0) > noise:
        return "faster" if ratio < 1 else "SLOWER"
    return ""


def fmt_time(s):
    if s is None:
        return "-"
    for unit, f in (("s", 1), ("ms", 1e3), ("us", 1e6)):
        if s * f >= 1:
            return "%.3g %s" % (s * f, unit)
    return "%.3g ns" % (s * 1e9)


def write_csv(path, files):
    fields = ["file", "name", "kernel", "B", "H", "KV", "Sq", "Skv", "Dqk", "Dv", "causal",
              "threads", "median_s", "cv", "repetitions", "GFLOP/s", "GB/s", "%peak", "error"]
    tmp = path + ".tmp"
    with open(tmp, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(fields)
        for fname, (_, points) in files:
            for p in points.values():
                c = p.counters
                w.writerow([fname, p.name, p.kernel] +
                           [int(c.get(k, 0)) for k in attnresults.SHAPE_KEYS] +
                           [p.threads, p.median_s if p.median_s is not None else "",
                            "" if p.cv is None else p.cv, len(p.times),
                            c.get("GFLOP/s", ""), c.get("GB/s", ""), c.get("%peak", ""),
                            p.error or ""])
    os.replace(tmp, path)


def best_per_shape(points):
    """{shape label: fastest successful Point of that shape}."""
    best = {}
    for p in points.values():
        if p.error or not p.median_s:
            continue
        key = p.shape_label()
        if key not in best or p.median_s < best[key].median_s:
            best[key] = p
    return best


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("results", nargs="+", help="results files; the first is the baseline")
    ap.add_argument("--csv", metavar="FILE", help="also write every point of every file as CSV")
    ap.add_argument("--all", action="store_true", help="also list points missing from some file")
    ap.add_argument("--by-shape", action="store_true",
                    help="match by shape; compare each file's fastest point per shape")
    args = ap.parse_args(argv)
    files = []
    for path in args.results:
        try:
            files.append((path, attnresults.load(path)))
        except (OSError, ValueError, KeyError) as e:
            print("compare.py: cannot read %s: %s" % (path, e), file=sys.stderr)
            return 1
    if args.csv:
        write_csv(args.csv, files)
        print("wrote %s" % args.csv, file=sys.stderr)
    if len(files) < 2:
        if not args.csv:
            print("compare.py: give at least two results files (or --csv)", file=sys.stderr)
            return 2
        return 0

    if args.by_shape:
        files = [(name, (ctx, best_per_shape(pts))) for name, (ctx, pts) in files]
    base_name, (base_ctx, base) = files[0]
    print("baseline: %s  (%s, %s, commit %s)" % (base_name, base_ctx.get("cpu_model", "?"),
          base_ctx.get("host_name", "?"), base_ctx.get("git_commit", "?")))
    for i, (name, (ctx, _)) in enumerate(files[1:], 1):
        print("file %d:   %s  (%s, %s, commit %s)" % (i, name, ctx.get("cpu_model", "?"),
              ctx.get("host_name", "?"), ctx.get("git_commit", "?")))
    width = max([len(n) for n in base] + [10])
    # --by-shape: which kernel (and threads) each file's best point is
    kw = max([len("%s T%d" % (p.kernel, p.threads)) for _, (_, pts) in files for p in pts.values()]
             + [6]) if args.by_shape else 0

    def who(p):
        return " %-*s" % (kw, "%s T%d" % (p.kernel, p.threads)) if args.by_shape else ""

    header = "%-*s  %10s %6s%s" % (width, "shape" if args.by_shape else "benchmark", "base time",
                                   "cv", " %-*s" % (kw, "kernel") if kw else "")
    for i in range(1, len(files)):
        header += "  |%d: %10s %6s%s %7s %-7s" % (i, "time", "cv", " %-*s" % (kw, "kernel") if kw else "",
                                                  "speedup", "")
    print(header)
    flagged = {"faster": 0, "SLOWER": 0}
    shown = 0
    for name, a in base.items():
        others = [pts.get(name) for _, (_, pts) in files[1:]]
        if not args.all and not any(o and not o.error for o in others):
            continue
        cv = "-" if a.cv is None else "%.1f%%" % (100 * a.cv)
        line = "%-*s  %10s %6s%s" % (width, name, "ERROR" if a.error else fmt_time(a.median_s), cv,
                                     who(a))
        blank = " " * (kw + 1) if kw else ""
        for o in others:
            if o is None:
                line += "  |   %10s %6s%s %7s %-7s" % ("missing", "", blank, "", "")
                continue
            if o.error or a.error or not a.median_s or not o.median_s:
                line += "  |   %10s %6s%s %7s %-7s" % ("ERROR" if o.error else fmt_time(o.median_s),
                                                       "", blank, "-", "")
                continue
            v = verdict(a, o)
            flagged[v] = flagged.get(v, 0) + 1
            ocv = "-" if o.cv is None else "%.1f%%" % (100 * o.cv)
            line += "  |   %10s %6s%s %6.2fx %-7s" % (fmt_time(o.median_s), ocv, who(o),
                                                      a.median_s / o.median_s, v)
        print(line)
        shown += 1
    print("%d points compared; %d faster, %d SLOWER beyond noise (speedup = base time / time)"
          % (shown, flagged["faster"], flagged["SLOWER"]))
    return 0


if __name__ == "__main__":
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # `| head` ends quietly
    sys.exit(main())
