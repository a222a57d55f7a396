#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Tests of the reports people read: scripts/plot.py, summary.py, compare.py and
scripts/report, on made-up results files with known answers (run by CTest; see
CMakeLists.txt).

  test_reports.py plots SCRIPTS      legend outside every panel, one ceiling per ISA and
                                     thread count, distinct fixed framework colours
  test_reports.py summary SCRIPTS    the spread column; the warning on baselines timed in
                                     another run far apart in time
  test_reports.py compare SCRIPTS    warnings on other commits / versions / repetitions;
                                     every missing limit x efficiency split explained
  test_reports.py report SCRIPTS RESULTS.json...
                                     scripts/report renders a self-contained page that
                                     headless chromium loads, showing every table (exit
                                     77 = skipped when chromium is missing)
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_bench import synth_point  # noqa: E402

PY = "/usr/bin/python3"
FAILED = []


def check(cond, what):
    if not cond:
        FAILED.append(what)
        print("FAIL:", what)
    return cond


PEAKS = {("avx2", 1): 50.0, ("avx2", 2): 100.0, ("avx512f", 1): 100.0, ("avx512f", 2): 200.0}
BWS = {1: 10.0, 2: 20.0}
PREFILL = (1, 8, 8, 1024, 1024, 64)
DECODE = (1, 8, 8, 1, 8192, 64)


def synth(path, kernels, threads=(1, 2), times=None, ctx=None, roofline_counters=True,
          bandwidths=True, externals=()):
    """A results file: every kernel at every thread count on a prefill and a decode
    shape; times(kernel, shape, threads) -> list of repetition times."""
    times = times or (lambda k, s, t: [0.0099, 0.01, 0.0101])
    bench = []
    for k in list(kernels) + list(externals):
        isa = "avx2" if k.endswith("__avx2") else "avx512f"
        for t in threads:
            for shape, flop, nbytes in ((PREFILL, 1e9, 1e6), (DECODE, 1e7, 1e8)):
                ents = synth_point(k, shape, t, flop, nbytes, times(k, shape, t),
                                   PEAKS[(isa, t)], BWS[t], roofline_counters)
                if k in externals:
                    for e in ents:
                        e["baseline"] = 1
                bench += ents
    context = {"cpu_model": "Test CPU", "cpu_uarch": "Zen 4", "host_name": "t",
               "date": "2026-01-01T10:00:00+00:00", "git_commit": "aaaaaaaaaaaa",
               "attnbench_version": "0.1.0", "load_avg": [0.5, 0.5, 0.5]}
    for (isa, t), v in PEAKS.items():
        context["peak_fma_gflops_%s_T%d" % (isa, t)] = "%.1f" % v
    if bandwidths:
        for t, v in BWS.items():
            context["read_bandwidth_gbs_T%d" % t] = "%.1f" % v
    context.update(ctx or {})
    with open(path, "w") as f:
        json.dump({"context": context, "benchmarks": bench}, f)


def lab(color):
    """CIE L*a*b* (D65) of a matplotlib colour: distances there follow what eyes see."""
    import matplotlib.colors
    rgb = matplotlib.colors.to_rgb(color)
    lin = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in rgb]
    x = (0.4124 * lin[0] + 0.3576 * lin[1] + 0.1805 * lin[2]) / 0.95047
    y = 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]
    z = (0.0193 * lin[0] + 0.1192 * lin[1] + 0.9505 * lin[2]) / 1.08883
    f = [v ** (1 / 3) if v > 0.008856 else 7.787 * v + 16 / 116 for v in (x, y, z)]
    return (116 * f[1] - 16, 500 * (f[0] - f[1]), 200 * (f[1] - f[2]))


def delta_e(a, b):
    return sum((p - q) ** 2 for p, q in zip(lab(a), lab(b))) ** 0.5


def plots(sdir):
    sys.path.insert(0, sdir)
    import plot
    figs = []
    real_close = plot.plt.close
    plot.plt.close = lambda fig=None: figs.append(fig) if hasattr(fig, "axes") else real_close(fig)
    kernels = ["flash__avx2", "flash__avx512", "tiled__avx2", "omp__avx512", "blas", "blocked"]
    frameworks = ["torch_sdpa", "ort_attention", "openvino_sdpa", "ggml_flash_attn"]
    with tempfile.TemporaryDirectory() as d:
        both, only512 = os.path.join(d, "both.json"), os.path.join(d, "only512.json")
        synth(both, kernels, externals=frameworks)
        synth(only512, ["flash__avx512"])
        try:
            check(plot.main([both, "--out-dir", d]) == 0, "plot.py runs")
            n_both = len(figs)
            check(plot.main([only512, "--out-dir", d]) == 0, "plot.py runs on AVX-512 kernels only")
        finally:
            plot.plt.close = real_close
        check(n_both == 3 and len(figs) == 6, "three figures per file (%d, %d)" % (n_both, len(figs)))
        for fig in figs:
            fig.canvas.draw()
            r = fig.canvas.get_renderer()
            title = fig.axes[0].get_title() if fig.axes else "?"
            check(all(ax.get_legend() is None for ax in fig.axes),
                  "no legend inside a panel (%s)" % title)
            check(len(fig.legends) == 1, "one figure legend (%s)" % title)
            if not fig.legends:
                continue
            box = fig.legends[0].get_window_extent(r)
            for ax in fig.axes:
                if not ax.axison:
                    continue
                ab = ax.get_window_extent(r)
                check(box.x0 >= ab.x1 or box.x1 <= ab.x0 or box.y0 >= ab.y1 or box.y1 <= ab.y0,
                      "the legend does not overlap panel %r" % ax.get_title())
        # roofline ceilings: the file with AVX2 and AVX-512 kernels has both ISAs at both
        # thread counts; the AVX-512-only file only AVX-512's
        def ceiling_labels(fig):
            return sorted(ln.get_label() for ln in fig.axes[0].get_lines()
                          if ln.get_label().startswith("T"))
        rl_both, rl_512 = ceiling_labels(figs[2]), ceiling_labels(figs[5])
        for t in (1, 2):
            for isa in ("avx2", "avx512f"):
                want = "T%d: FMA %s %.0f GFLOP/s, %.0f GB/s" % (t, isa, PEAKS[(isa, t)], BWS[t])
                check(want in rl_both, "roofline has the ceiling '%s' (%s)" % (want, rl_both))
        check(rl_512 == ["T1: FMA avx512f 100 GFLOP/s, 10 GB/s", "T2: FMA avx512f 200 GFLOP/s, 20 GB/s"],
              "AVX-512 kernels only: no AVX2 ceiling (%s)" % rl_512)
        check(plot.ceilings([], {}) == [], "no points, no ceilings")
        # the ceiling of a point is that of its kernel's ISA
        import attnresults
        ctx, pts = attnresults.load(both)
        for p in pts.values():
            isa = plot.kernel_isa(p.kernel, {"avx2", "avx512f"})
            want = {"flash__avx2": "avx2", "tiled__avx2": "avx2", "flash__avx512": "avx512f",
                    "omp__avx512": "avx512f"}.get(p.kernel)
            check(isa == want, "%s is scored against %s (got %s)" % (p.kernel, want, isa))
        # a point judged by a low-precision unit (peak_unit counter, named by the context's
        # peak_units) gets that unit's ceiling; the FP32 points keep theirs
        ctx2 = dict(ctx, peak_units="0 fp32-fma, 1 bf16-dot, 2 fp16-fma, 3 int8-dot, 4 amx-bf16")
        ctx2["peak_unit_gops_bf16-dot_avx512bf16_T2"] = "400.0"
        ctx2["peak_unit_gops_int8-dot_avx512vnni_T2"] = "800.0"
        pts2 = [p for p in pts.values() if p.kernel == "flash__avx512" and p.threads == 2]
        for p in pts2:
            p.counters["peak_unit"], p.counters["peak_GFLOP/s"] = 1, 400.0
        got = plot.ceilings(pts2, ctx2)
        check(got == [(2, "bf16-dot avx512bf16", 400.0, BWS[2])],
              "a bf16-dot point has the bf16-dot ceiling (%s)" % got)
        import attnresults as ar
        check(ar.unit_peaks(ctx2) == {("bf16-dot", "avx512bf16", 2): 400.0,
                                      ("int8-dot", "avx512vnni", 2): 800.0},
              "unit peaks read from the context (%s)" % ar.unit_peaks(ctx2))
        for p in pts2:
            p.counters["peak_unit"] = 0
        check(plot.ceilings(pts2, ctx2) == [(2, "avx512f", PEAKS[("avx512f", 2)], BWS[2])],
              "an fp32-fma point keeps the FMA ceiling (%s)" % plot.ceilings(pts2, ctx2))
        # a kernel whose name ends in no ISA (flash__avx2int8) is drawn under the peak it
        # was scored against (its peak_GFLOP/s), not the best ISA's
        for p in pts2:
            p.kernel, p.counters["peak_GFLOP/s"] = "flash__avx2int8", PEAKS[("avx2", 2)]
        check(plot.ceilings(pts2, ctx) == [(2, "avx2", PEAKS[("avx2", 2)], BWS[2])],
              "flash__avx2int8 under the AVX2 ceiling (%s)" % plot.ceilings(pts2, ctx))
        # intensity is flop per roofline byte: a windowed point reads fewer bytes than its
        # tensors hold
        p0 = pts2[0]
        p0.counters["roofline_bytes"] = p0.counters["bytes"] / 8
        check(p0.roofline_bytes == p0.counters["bytes"] / 8, "roofline_bytes read (%s)" % p0.roofline_bytes)
        # drawn: a roofline of a bf16 point names the unit
        d2 = os.path.dirname(both)
        f2 = os.path.join(d2, "units.json")
        with open(both) as f:
            doc = json.load(f)
        doc["context"] = ctx2
        for b in doc["benchmarks"]:
            if b.get("label") == "flash__avx512":
                b["peak_unit"], b["peak_GFLOP/s"] = 1, 400.0
        with open(f2, "w") as f:
            json.dump(doc, f)
        figs2 = []
        plot.plt.close = lambda fig=None: figs2.append(fig) if hasattr(fig, "axes") else real_close(fig)
        try:
            check(plot.main([f2, "--out-dir", d2]) == 0, "plot.py runs on a file with unit peaks")
        finally:
            plot.plt.close = real_close
        labels = ceiling_labels(figs2[2]) if len(figs2) == 3 else []
        check("T2: bf16-dot avx512bf16 400 GOP/s, 20 GB/s" in labels,
              "the roofline names the bf16-dot ceiling (%s)" % labels)
    # frameworks: fixed colours, far from each other and from every x86 kernel's
    fw = {n: plot.kernel_color(n) for n in ("torch_sdpa", "ort_attention", "openvino_sdpa", "ggml_flash_attn")}
    check([plot.framework(n) for n in fw] == ["PyTorch", "ONNX Runtime", "OpenVINO", "ggml"],
          "each baseline names its framework")
    names = list(fw)
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            check(delta_e(fw[a], fw[b]) >= 40, "%s and %s are clearly distinct (dE %.0f)"
                  % (a, b, delta_e(fw[a], fw[b])))
        for k, c in plot.KERNEL_COLORS.items():
            if "neon" not in k:  # never on one plot with x86 kernels
                check(delta_e(fw[a], c) >= 20, "%s and kernel %s are distinct (dE %.0f)" % (a, k, delta_e(fw[a], c)))
        for old in ("#8c564b", "#e377c2", "#c49c94", "#d2b48c"):  # brown, pink, tan
            check(delta_e(fw[a], old) >= 20, "%s is no tan/pink/brown (%s)" % (a, fw[a]))


def run(args):
    return subprocess.run([PY] + args, capture_output=True, text=True)


def summary(sdir):
    s = os.path.join(sdir, "summary.py")
    with tempfile.TemporaryDirectory() as d:
        f = os.path.join(d, "r.json")
        # repetitions 0.009, 0.01, 0.0115 s: spread (0.0115 - 0.009) / 0.01 = 25.0%
        synth(f, ["flash__avx512"], threads=(2,), externals=["torch_sdpa"],
              times=lambda k, sh, t: [0.009, 0.01, 0.0115] if k == "flash__avx512" else [0.0199, 0.02, 0.0201])
        r = run([s, f])
        check(r.returncode == 0, "summary.py runs (%s)" % r.stderr.strip())
        head = [ln for ln in r.stdout.splitlines() if ln.startswith("shape")]
        check(head and head[0].split().count("spread") == 2, "a spread column for the kernel and "
              "the external (%s)" % head)
        rows = [ln for ln in r.stdout.splitlines() if ln.startswith("B1 ")]
        check(len(rows) == 2 and all(" 25.0% " in ln and " 1.0% " in ln for ln in rows),
              "spread 25.0%% for the kernel, 1.0%% for the external (%s)" % rows)
        check("at a time this file does not record" in r.stdout,
              "a file without baselines_date warns that the baselines' time is unknown")
        for minutes, warned in ((35, True), (2, False)):
            with open(f) as fh:
                doc = json.load(fh)
            doc["context"]["baselines_date"] = "2026-01-01T10:%02d:00+00:00" % minutes
            doc["context"]["baselines_load_avg"] = 1.75
            with open(f, "w") as fh:
                json.dump(doc, fh)
            r = run([s, f])
            w = [ln for ln in r.stdout.splitlines() if ln.startswith("warning:")]
            if warned:
                check(w and "35 minutes apart" in w[0] and "1.75" in w[0] and "0.50" in w[0],
                      "baselines timed 35 minutes after the sweep's start: warned with the "
                      "loads (%s)" % w)
            else:
                check(not w, "baselines 2 minutes after the start: no warning (%s)" % w)
        g = os.path.join(d, "k.json")
        synth(g, ["flash__avx512"], threads=(2,))
        r = run([s, g])
        check(r.returncode == 0 and "warning:" not in r.stdout, "no externals, no timing warning")
        with open(g) as fh:  # a peak probe the run found low: said under the table
            doc = json.load(fh)
        doc["context"]["peak_warning_avx512f_T2"] = "measured 120.0 GFLOP/s, below 1.7 x the 1-thread 100.0"
        with open(g, "w") as fh:
            json.dump(doc, fh)
        r = run([s, g])
        check(r.returncode == 0 and "warning: peak_warning_avx512f_T2: measured 120.0" in r.stdout,
              "the context's peak warning is printed (%s)" % r.stdout[-300:])
        del doc["context"]["peak_warning_avx512f_T2"]
        with open(g, "w") as fh:
            json.dump(doc, fh)
        # a file with dense points and a serving batch: summary's GB/s of the batch counts
        # the bytes its roofline counts (roofline_bytes, not the pool's GB/s counter), and
        # render-results shows the serving table and the dense ones
        with open(g) as fh:
            doc = json.load(fh)
        serve = synth_point("flash__avx512", DECODE, 2, 1e7, 1e8, [0.0099, 0.01, 0.0101],
                            PEAKS[("avx512f", 2)], BWS[2])
        for e in serve:
            for k in ("name", "run_name"):
                e[k] = e[k].replace("/noncausal/T2", "/causal/T2/q=decode/kv=fixed:2:4096/page16s")
            e.update({"seqs": 2, "paged": 1, "page_size": 16, "roofline_bytes": 2.5e7, "kv_bytes": 2.4e7})
        doc["benchmarks"] += serve
        mixed_dir = os.path.join(d, "mixed")
        os.mkdir(mixed_dir)
        mixed = os.path.join(mixed_dir, "serving-test-cpu-2c.json")
        with open(mixed, "w") as fh:
            json.dump(doc, fh)
        r = run([s, mixed])
        row = [ln for ln in r.stdout.splitlines() if "page16s" in ln]
        check(r.returncode == 0 and row and " 2.50 " in row[0],
              "the serving row's GB/s is roofline_bytes / median = 2.50 (%s %s)" % (row, r.stderr.strip()))
        out = os.path.join(d, "page.md")
        r = run([os.path.join(sdir, "render-results"), "--results", mixed_dir, "--out", out])
        text = open(out).read() if os.path.exists(out) else ""
        check(r.returncode == 0 and "Serving batches" in text and "% of the roofline:" in text
              and "Sq1024" in text,
              "render-results shows a file's serving batches and its dense points (%s)" % r.stderr.strip())


def compare(sdir):
    c = os.path.join(sdir, "compare.py")
    with tempfile.TemporaryDirectory() as d:
        a, b, same = (os.path.join(d, n) for n in ("a.json", "b.json", "same.json"))
        # base: a file from before the roofline counters, without a T1 bandwidth
        synth(a, ["flash__avx512"], roofline_counters=False, bandwidths=False,
              ctx={"read_bandwidth_gbs_T2": "20.0"})
        synth(b, ["flash__avx512"], times=lambda k, sh, t: [0.0099, 0.01, 0.0101, 0.01, 0.01],
              ctx={"git_commit": "bbbbbbbbbbbb-dirty", "attnbench_version": "0.2.0"})
        synth(same, ["flash__avx512"], roofline_counters=False, bandwidths=False,
              ctx={"read_bandwidth_gbs_T2": "20.0"})
        r = run([c, a, b])
        check(r.returncode == 0, "compare.py runs (%s)" % r.stderr.strip())
        out = r.stdout
        for text in ("different commits (aaaaaaaaaaaa vs bbbbbbbbbbbb-dirty",
                     "different attnbench versions (0.1.0 vs 0.2.0)",
                     "file 1 built with uncommitted changes",
                     "different repetition counts (3 vs 5)"):
            check(text in out, "compare.py warns: '%s'" % text)
        t1 = [ln for ln in out.splitlines() if ln.startswith("flash__avx512/") and "/T1" in ln]
        t2 = [ln for ln in out.splitlines() if ln.startswith("flash__avx512/") and "/T2" in ln]
        check(len(t1) == 2 and all("no split: note 1" in ln for ln in t1),
              "T1 rows say why they have no split (%s)" % t1)
        check(len(t2) == 2 and all("limit x" in ln for ln in t2), "T2 rows have the split (%s)" % t2)
        notes = [ln for ln in out.splitlines() if ln.startswith("note ")]
        check(len(notes) == 1 and "2 points" in notes[0] and "no read bandwidth at T1" in notes[0]
              and "base" in notes[0], "one note names the file and what it lacks (%s)" % notes)
        r = run([c, a, same])
        check(r.returncode == 0 and "warning:" not in r.stdout,
              "files alike: no warning (%s)" % [ln for ln in r.stdout.splitlines() if "warning" in ln])


def find_chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


def report(sdir, *results):
    """Renders the committed results files into one page, loads it in headless chromium
    and checks what the browser shows: every table (rendered with rows), every plot
    decoded, no script error, nothing fetched from outside the page."""
    chromium = find_chromium()
    if not chromium:
        print("SKIP: no chromium (apt-get install chromium; .ci/run installs it)")
        return 77
    sys.path.insert(0, sdir)
    import attnresults
    if not check(len(results) >= 2, "give at least two results files (%s)" % (results,)):
        return 1
    with tempfile.TemporaryDirectory() as d:
        page = os.path.join(d, "report.html")
        r = run([os.path.join(sdir, "report"), *results, "-o", page])
        if not check(r.returncode == 0 and r.stdout.strip() == page,
                     "scripts/report renders %d files (%s)" % (len(results), r.stderr.strip())):
            return 1
        with open(page, encoding="utf-8") as f:
            text = f.read()
        refs = re.findall(r'(?:src|href)\s*=\s*"([^"]*)"', text)
        check(refs and all(u.startswith("data:image/png;base64,") or u.startswith("#") for u in refs),
              "the page refers to nothing outside itself (%s)" % [u[:40] for u in refs
                                                                  if not u.startswith(("data:", "#"))])
        check(not re.search(r"@import|url\(|<link", text), "no stylesheet or font to fetch")
        # what the page must show: per file its machine, summary and points tables (and
        # errors if any), three plots; the side-by-side tables
        want_tables = {"machines", "compare"}
        want_rows = {}
        for i, path in enumerate(results):
            ctx, pts = attnresults.load(path)
            want_tables |= {"machine-%d" % i, "summary-%d" % i, "points-%d" % i}
            if any(p.error for p in pts.values()):
                want_tables.add("errors-%d" % i)
            want_rows["points-%d" % i] = sum(1 for p in pts.values() if not p.error)
            want_rows["summary-%d" % i] = len({p.shape for p in pts.values() if not p.error and p.gflops
                                               and not p.get("baseline") and not p.get("check_failed")})
        with tempfile.TemporaryDirectory() as prof:
            # --no-sandbox: CI runs as root; --disable-dev-shm-usage: containers have a small /dev/shm
            r = subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                                "--user-data-dir=" + prof, "--dump-dom", "file://" + page],
                               capture_output=True, text=True, timeout=300)
        dom = r.stdout
        check(r.returncode == 0 and "<body" in dom, "chromium loads the page (exit %d)" % r.returncode)
        body = re.search(r"<body([^>]*)>", dom)
        attrs = dict(re.findall(r'data-([a-z]+)="([^"]*)"', body.group(1))) if body else {}
        shown = set(attrs.get("tables", "").split())
        check(shown == want_tables, "the browser shows every table with rows (missing %s, "
              "unexpected %s)" % (sorted(want_tables - shown), sorted(shown - want_tables)))
        n_img = 3 * len(results)
        check(attrs.get("images") == "%d/%d" % (n_img, n_img),
              "the browser decoded all %d plots (%s)" % (n_img, attrs.get("images")))
        check("errors" not in attrs, "no script error (%s)" % attrs.get("errors"))
        for tid, n in want_rows.items():
            m = re.search(r'<table id="%s">.*?<tbody>(.*?)</tbody>' % re.escape(tid), dom, re.S)
            rows = m.group(1).count("<tr>") if m else -1
            check(rows == n, "table %s has one row per point/shape (%d, want %d)" % (tid, rows, n))
        bad = os.path.join(d, "bad.json")
        with open(bad, "w") as f:
            f.write("{not json")
        r = run([os.path.join(sdir, "report"), results[0], bad, "-o", os.path.join(d, "x.html")])
        check(r.returncode == 1 and "cannot read" in r.stderr and len(r.stderr.splitlines()) == 1
              and not os.path.exists(os.path.join(d, "x.html")),
              "an unreadable file: one-line error, exit 1, no page (%s)" % r.stderr.strip())
    return 0


def main():
    mode = sys.argv[1]
    rc = {"plots": plots, "summary": summary, "compare": compare, "report": report}[mode](*sys.argv[2:])
    if rc == 77:
        return 77
    if FAILED:
        print("%d checks failed" % len(FAILED))
        return 1
    print("all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
