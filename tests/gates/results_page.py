#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""docs/results.md is what scripts/render-results makes of results/*.json:
  1. the committed page equals a fresh rendering (render-results --check exits 0);
  2. the check can fail: a page with one figure changed is reported stale (exit 1, a
     message naming the command that fixes it);
  3. rendering is deterministic: two renderings to temporary files are byte-identical;
  4. a results directory with a malformed file gives a one-line error and exit 1, and
     leaves no page behind;
  5. rows of the bf16 compute mode name their unit (bf16-dot) as the limit.
Usage: results_page.py SOURCE_DIR"""
import os
import shutil
import subprocess
import sys
import tempfile

src = sys.argv[1]
render = os.path.join(src, "scripts", "render-results")
page = os.path.join(src, "docs", "results.md")
failures = 0


def check(cond, what):
    global failures
    if not cond:
        failures += 1
        print("FAIL: " + what, file=sys.stderr)


def run(*args):
    p = subprocess.run([sys.executable, render] + list(args), capture_output=True, text=True,
                       stdin=subprocess.DEVNULL, timeout=300)
    return p.returncode, p.stdout, p.stderr


rc, _, err = run("--check", page)
check(rc == 0, "docs/results.md is current (run scripts/render-results): %s" % err.strip()[-400:])

with tempfile.TemporaryDirectory(prefix="results-page-") as d:
    with open(page, encoding="utf-8") as f:
        text = f.read()
    # A point is scored against the unit its compute mode uses: bf16 rows name bf16-dot, and
    # amx-bf16 where a kernel on AMX tiles shares the row (or bandwidth, where the bytes at
    # the probed rate outlast that unit's peak time); never FMA.
    bf16_rows = [ln for ln in text.splitlines() if "compute:bf16 |" in ln and ln.startswith("| B")
                 and not ln.split("|")[3].strip().startswith("`")]  # roofline tables only
    units = {"bf16-dot", "amx-bf16", "bandwidth"}
    bad = [ln for ln in bf16_rows if not (set(ln.split("|")[3].strip().split(" / ")) <= units and
                                          "bf16-dot" in ln.split("|")[3])]
    check(bf16_rows and not bad,
          "compute:bf16 rows are limited by the bf16-dot (and amx-bf16) unit, not FMA: %s" %
          (bad[:2] if bf16_rows else "no compute:bf16 row in a roofline table"))
    i = text.find("| 2 | FMA |")
    check(i > 0, "the page has a 2-thread FMA-bound row to alter")
    stale = os.path.join(d, "stale.md")
    with open(stale, "w", encoding="utf-8") as f:
        f.write(text[:i] + "| 2 | bandwidth |" + text[i + len("| 2 | FMA |"):])
    rc, _, err = run("--check", stale)
    check(rc == 1 and "is stale: run scripts/render-results" in err,
          "an altered page is reported stale (rc %d: %s)" % (rc, err.strip()[-200:]))

    a, b = os.path.join(d, "a.md"), os.path.join(d, "b.md")
    check(run("--out", a)[0] == 0 and run("--out", b)[0] == 0, "two renderings succeed")
    with open(a, "rb") as fa, open(b, "rb") as fb:
        check(fa.read() == fb.read(), "two renderings are byte-identical")

    bad = os.path.join(d, "results")
    os.mkdir(bad)
    shutil.copy(os.path.join(src, "results", "anchors-amd-epyc-zen3-2c.json"), bad)
    with open(os.path.join(bad, "reference-amd-epyc-zen3-2c.json"), "w") as f:
        f.write('{"context": {}, "benchmarks": [')
    out = os.path.join(d, "bad.md")
    rc, _, err = run("--results", bad, "--out", out)
    check(rc == 1 and err.startswith("render-results: ") and err.count("\n") == 1
          and "reference-amd-epyc-zen3-2c.json" in err,
          "a malformed results file: one line naming it, exit 1 (rc %d: %r)" % (rc, err))
    check(not os.path.exists(out), "no page written from a malformed results directory")

sys.exit(1 if failures else 0)
