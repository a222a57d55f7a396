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

Machines: the header shows each file's CPU (brand string, the microarchitecture its
vendor/family/model/stepping imply, and those numbers), its measured FMA peaks and read
bandwidths side by side. Each point's speed-up (time of the first file / time of the
other) is split into what the hardware's limit explains and what the kernel's
efficiency does, an exact product:

    speedup = tA / tB = (t_roof,A / t_roof,B) * (eff_B / eff_A),   eff = t_roof / t

printed as "0.57x = 0.80x limit x 0.71x efficiency", where t_roof = max(flop / FMA
peak, bytes / read bandwidth) is each point's roofline time on its own machine (the
limit ratio is that of the bound that applies there) and eff its % of roofline / 100.
A point without a split says "no split: note N", and note N under the table names the
file and the number it lacks (e.g. a file from before the roofline counters measured no
read bandwidth at T1).

Before the table, warnings name what differs between the files besides the machine:
the commit (and how many commits apart, when this checkout has both), uncommitted
changes, the attnbench version, compiler, flags, build type, the external baselines'
versions and the repetition counts.

usage: scripts/compare.py A.json B.json [C.json ...] [--by-shape] [--csv results.csv] [--all]
"""
import argparse
import csv
import json
import math
import os
import signal
import subprocess
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


def decompose(a, actx, b, bctx):
    """(speedup, limit ratio, efficiency ratio) of point b against point a, with
    speedup == limit * efficiency; None when either roofline is unknown."""
    ta, tb = a.roofline_s(actx), b.roofline_s(bctx)
    if not ta or not tb or not a.median_s or not b.median_s:
        return None
    eff_a, eff_b = ta / a.median_s, tb / b.median_s
    return a.median_s / b.median_s, ta / tb, eff_b / eff_a


def missing_split(a, actx, b, bctx, names=("base", "the other file")):
    """Why decompose() has no split for b against a: one line naming the file and the
    number that is missing (each point's roofline time needs its flop and either its own
    roofline_GFLOP/s counter or the FMA peak counter and the context's read bandwidth at
    the point's thread count)."""
    for p, ctx, who in ((a, actx, names[0]), (b, bctx, names[1])):
        if not p.median_s:
            return "%s has no time for this point" % who
        if p.get("roofline_GFLOP/s"):
            continue
        if not p.get("flop") or not p.get("bytes"):
            return "%s's entry has no flop/bytes counters (no roofline)" % who
        if not p.get("peak_GFLOP/s"):
            return "%s has no FMA peak for %s (no peak_GFLOP/s counter)" % (who, p.kernel)
        if attnresults.bandwidths(ctx).get(p.threads) is None:
            return ("%s measured no read bandwidth at T%d (no read_bandwidth_gbs_T%d in its "
                    "context, no roofline_GFLOP/s counter: a file from before the roofline "
                    "counters)" % (who, p.threads, p.threads))
    return "the roofline time is unknown"


def commits_apart(a, b):
    """How many commits lie between two recorded git_commit values (either side of their
    merge base) in the repository this script is in, or None when git or either commit
    is not available."""
    if not a or not b:
        return None
    a, b = (str(c).replace("-dirty", "") for c in (a, b))
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    try:
        r = subprocess.run(["git", "-C", root, "rev-list", "--count", "%s...%s" % (a, b)],
                           capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return int(r.stdout) if r.returncode == 0 and r.stdout.strip().isdigit() else None


def run_warnings(files, labels=None):
    """Lines warning that the files were not made alike: other commits (or uncommitted
    changes), attnbench versions, builds, baseline versions or repetition counts. A
    difference in any of them can explain a speed-up as well as the hardware can.
    labels name the files (default: base, file 1, file 2, ...)."""
    labels = labels or ["base"] + ["file %d" % i for i in range(1, len(files))]
    out = []
    base_name, (bctx, bpts) = files[0]

    def reps(pts):
        return sorted({len(p.times) for p in pts.values() if not p.error and p.times})

    def baseline_versions(ctx):
        try:
            meta = json.loads(ctx.get("baselines") or "{}")
        except ValueError:
            return {}
        return {k: v.get("version") for k, v in meta.items() if isinstance(v, dict)}

    for i, (name, (ctx, pts)) in enumerate(files[1:], 1):
        who = labels[i]
        for key, what in (("git_commit", "commits"), ("attnbench_version", "attnbench versions"),
                          ("compiler", "compilers"), ("cflags", "compiler flags"),
                          ("build_type", "build types")):
            va, vb = bctx.get(key), ctx.get(key)
            if va != vb:
                apart = commits_apart(va, vb) if key == "git_commit" else None
                out.append("warning: %s and %s come from different %s (%s vs %s%s)" % (
                    labels[0], who, what, va or "not recorded", vb or "not recorded",
                    ", %d commits apart" % apart if apart is not None else ""))
        dirty = [w for w, c in ((labels[0], bctx), (who, ctx))
                 if str(c.get("git_commit", "")).endswith("-dirty")]
        if dirty:
            out.append("warning: %s built with uncommitted changes (commit ...-dirty)"
                       % " and ".join(dirty))
        va, vb = baseline_versions(bctx), baseline_versions(ctx)
        for k in sorted(set(va) & set(vb)):
            if va[k] != vb[k]:
                out.append("warning: %s and %s ran %s in different versions (%s vs %s)"
                           % (labels[0], who, k, va[k], vb[k]))
        ra, rb = reps(bpts), reps(pts)
        if ra != rb:
            out.append("warning: %s and %s have different repetition counts (%s vs %s): "
                       "their noise estimates differ" % (
                           labels[0], who, "/".join(map(str, ra)) or "none", "/".join(map(str, rb)) or "none"))
    return out


def fmt_num(v):
    return "-" if v is None else ("%.1f" % v)


def print_machines(files):
    """Each file's CPU, peaks and bandwidths, side by side."""
    rows = [("cpu", lambda c: attnresults.machine(c)["cpu"]),
            ("microarchitecture", lambda c: attnresults.machine(c)["uarch"]),
            ("cpuid", lambda c: attnresults.machine(c)["id"]),
            ("hypervisor", lambda c: attnresults.machine(c)["hypervisor"])]
    peak_keys = sorted({k for _, (c, _) in files for k in attnresults.peaks(c)},
                       key=lambda k: (k[1], k[0]))
    for isa, t in peak_keys:
        rows.append(("FMA peak %s T%d GFLOP/s" % (isa, t),
                     lambda c, k=(isa, t): fmt_num(attnresults.peaks(c).get(k))))
    unit_keys = sorted({k for _, (c, _) in files for k in attnresults.unit_peaks(c)},
                       key=lambda k: (k[2], k[0], k[1]))
    for unit, isa, t in unit_keys:
        rows.append(("%s peak %s T%d G ops/s" % (unit, isa, t),
                     lambda c, k=(unit, isa, t): fmt_num(attnresults.unit_peaks(c).get(k))))
    for t in sorted({t for _, (c, _) in files for t in attnresults.bandwidths(c)}):
        rows.append(("read bandwidth T%d GB/s" % t,
                     lambda c, t=t: fmt_num(attnresults.bandwidths(c).get(t))))
    w0 = max(len(r[0]) for r in rows)
    cols = [[str(fn(ctx)) for _, fn in rows] for _, (ctx, _) in files]
    widths = [max([len(v) for v in col] + [len("file %d" % i)]) for i, col in enumerate(cols)]
    print(("%-*s  %s" % (w0, "machine", "  ".join("%-*s" % (w, "file %d" % i if i else "base")
                                                   for i, w in enumerate(widths)))).rstrip())
    for j, (label, _) in enumerate(rows):
        print(("%-*s  %s" % (w0, label, "  ".join("%-*s" % (w, col[j])
                                                  for w, col in zip(widths, cols)))).rstrip())


def write_csv(path, files):
    fields = ["file", "name", "kernel", "B", "H", "KV", "Sq", "Skv", "Dqk", "Dv", "causal",
              "options", "fallback", "threads", "median_s", "cv", "repetitions", "GFLOP/s", "GB/s", "%peak",
              "%roofline", "%adj_bw", "limit", "roofline_GFLOP/s", "cpu_uarch", "error"]
    tmp = path + ".tmp"
    with open(tmp, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(fields)
        for fname, (ctx, points) in files:
            for p in points.values():
                c = p.counters
                rl, att = p.roofline_pct(ctx), p.attainable_gflops(ctx)
                w.writerow([fname, p.name, p.kernel] +
                           [int(c.get(k, 0)) for k in attnresults.SHAPE_KEYS] +
                           [attnresults.options_label(c), int(p.fallback), p.threads, p.median_s if p.median_s is not None else "",
                            "" if p.cv is None else p.cv, len(p.times),
                            c.get("GFLOP/s", ""), c.get("GB/s", ""), c.get("%peak", ""),
                            "" if rl is None else rl, p.adj_bw_pct or "", p.limit(ctx) or "",
                            "" if att is None else att, ctx.get("cpu_uarch", ""),
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
        loaded = attnresults.load_or_report(path, "compare.py")
        if loaded is None:
            return 1
        files.append((path, loaded))
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
    print("baseline: %s  (%s, %s, %s, commit %s)" % (
        base_name, base_ctx.get("cpu_model", "?"), attnresults.machine(base_ctx)["uarch"],
        base_ctx.get("host_name", "?"), base_ctx.get("git_commit", "?")))
    for i, (name, (ctx, _)) in enumerate(files[1:], 1):
        print("file %d:   %s  (%s, %s, %s, commit %s)" % (
            i, name, ctx.get("cpu_model", "?"), attnresults.machine(ctx)["uarch"],
            ctx.get("host_name", "?"), ctx.get("git_commit", "?")))
    print_machines(files)
    for w in run_warnings(files):
        print(w)
    width = max([len(n) for n in base] + [10])
    # --by-shape: which kernel (and threads) each file's best point is
    kw = max([len("%s T%d" % (p.kernel, p.threads)) for _, (_, pts) in files for p in pts.values()]
             + [6]) if args.by_shape else 0

    def who(p):
        return " %-*s" % (kw, "%s T%d" % (p.kernel, p.threads)) if args.by_shape else ""

    header = "%-*s  %10s %6s%s" % (width, "shape" if args.by_shape else "benchmark", "base time",
                                   "cv", " %-*s" % (kw, "kernel") if kw else "")
    for i in range(1, len(files)):
        header += "  |%d: %10s %6s%s %7s %-36s %-7s" % (
            i, "time", "cv", " %-*s" % (kw, "kernel") if kw else "", "speedup",
            "= hardware limit x kernel efficiency", "")
    print(header.rstrip())
    flagged = {"faster": 0, "SLOWER": 0}
    notes = {}  # reason a point has no limit x efficiency split -> [number, points]
    shown = 0
    for name, a in base.items():
        others = [(pts.get(name), ctx) for _, (ctx, pts) in files[1:]]
        if not args.all and not any(o and not o.error for o, _ in others):
            continue
        cv = "-" if a.cv is None else "%.1f%%" % (100 * a.cv)
        line = "%-*s  %10s %6s%s" % (width, name, "ERROR" if a.error else fmt_time(a.median_s), cv,
                                     who(a))
        blank = " " * (kw + 1) if kw else ""
        for o, octx in others:
            if o is None:
                line += "  |   %10s %6s%s %7s %36s %-7s" % ("missing", "", blank, "", "", "")
                continue
            if o.error or a.error or not a.median_s or not o.median_s:
                line += "  |   %10s %6s%s %7s %36s %-7s" % ("ERROR" if o.error else fmt_time(o.median_s),
                                                            "", blank, "-", "", "")
                continue
            v = verdict(a, o)
            flagged[v] = flagged.get(v, 0) + 1
            ocv = "-" if o.cv is None else "%.1f%%" % (100 * o.cv)
            d = decompose(a, base_ctx, o, octx)
            if d:
                split = "= %.2fx limit x %.2fx efficiency" % (d[1], d[2])
            else:  # numbered reasons, printed under the table
                why = missing_split(a, base_ctx, o, octx, ("base", "file %d" % (others.index((o, octx)) + 1)))
                notes.setdefault(why, [len(notes) + 1, 0])[1] += 1
                split = "no split: note %d" % notes[why][0]
            split = split.ljust(36)
            line += "  |   %10s %6s%s %6.2fx %s %-7s" % (fmt_time(o.median_s), ocv, who(o),
                                                         a.median_s / o.median_s, split, v)
        print(line.rstrip())
        shown += 1
    print("%d points compared; %d faster, %d SLOWER beyond noise (speedup = base time / time"
          " = limit ratio x efficiency ratio: roofline time base / other, %% of roofline "
          "other / base)" % (shown, flagged["faster"], flagged["SLOWER"]))
    for why, (num, count) in sorted(notes.items(), key=lambda kv: kv[1][0]):
        print("note %d: no limit x efficiency split for %d point%s: %s" % (
            num, count, "" if count == 1 else "s", why))
    return 0


if __name__ == "__main__":
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # `| head` ends quietly
    sys.exit(main())
