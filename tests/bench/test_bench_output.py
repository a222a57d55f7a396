#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""What `attnbench bench` prints (run by CTest; see CMakeLists.txt).

  test_bench_output.py progress ATTNBENCH   [k/N] lines on a terminal only, unless
                                            --progress; never with --no-progress; both: exit 2
  test_bench_output.py compact ATTNBENCH    --benchmark_format=compact: a header and one
                                            short line per displayed run whose numbers are
                                            the results file's; console prints every counter
  test_bench_output.py gbench-compare ATTNBENCH
                                            --benchmark_repetitions=9 gives every point the 9
                                            repetitions Google Benchmark's compare.py wants
                                            (and, with $ATTNBENCH_GBENCH_COMPARE, that tool then
                                            does not warn; on the config's 3 it does);
                                            configs/default.ini ships with 9 or more
"""
import configparser
import json
import os
import pty
import re
import subprocess
import sys
import tempfile

FAILED = []
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

TINY = """[s]
kernels = blocked
heads = 2
head_dim = 16
seq_len = 16, 32
repetitions = 3
min_time = 0.001
"""
POINT_LINE = re.compile(r"^\[\d+/2\] blocked/", re.M)


def check(cond, what):
    if not cond:
        FAILED.append(what)
        print("FAIL:", what)
    return cond


def on_pty(argv):
    """Runs argv with stderr on a pseudo-terminal (stdout discarded); returns (exit
    status, what the terminal showed)."""
    master, slave = pty.openpty()
    p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=slave, stdin=subprocess.DEVNULL)
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 4096)
        except OSError:  # EIO: the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    os.close(master)
    return p.wait(timeout=120), b"".join(chunks).decode(errors="replace")


def progress(binary):
    with tempfile.TemporaryDirectory() as d:
        cfg = os.path.join(d, "t.ini")
        with open(cfg, "w") as f:
            f.write(TINY)
        base = [binary, "bench", "--config", cfg, "--out", os.path.join(d, "r.json"), "--no-probe"]
        rc, tty = on_pty(base)
        check(rc == 0 and len(POINT_LINE.findall(tty)) == 2,
              "stderr a terminal: a [k/N] line per point (%r)" % tty[-300:])
        rc, tty = on_pty(base + ["--no-progress"])
        check(rc == 0 and not POINT_LINE.search(tty) and "points in" in tty,
              "--no-progress on a terminal: no [k/N] line, the final line stays (%r)" % tty[-300:])
        r = subprocess.run(base, capture_output=True, text=True, timeout=120)
        check(r.returncode == 0 and not POINT_LINE.search(r.stderr),
              "stderr not a terminal: no [k/N] lines (%r)" % r.stderr[-300:])
        r = subprocess.run(base + ["--progress"], capture_output=True, text=True, timeout=120)
        check(r.returncode == 0 and len(POINT_LINE.findall(r.stderr)) == 2,
              "--progress: a [k/N] line per point on a pipe (%r)" % r.stderr[-300:])
        r = subprocess.run(base + ["--progress", "--no-progress"], capture_output=True, text=True)
        check(r.returncode == 2 and "exclude each other" in r.stderr and len(r.stderr.splitlines()) == 1,
              "--progress with --no-progress: one-line error, exit 2 (%r)" % r.stderr)


def compact(binary):
    with tempfile.TemporaryDirectory() as d:
        cfg = os.path.join(d, "t.ini")
        with open(cfg, "w") as f:
            f.write(TINY)
        out = os.path.join(d, "r.json")
        base = [binary, "bench", "--config", cfg, "--out", out, "--no-probe"]
        r = subprocess.run(base + ["--benchmark_format=compact"], capture_output=True, text=True, timeout=120)
        if not check(r.returncode == 0, "compact runs (%s)" % r.stderr.strip()[-300:]):
            return
        lines = r.stdout.splitlines()
        check(lines and lines[0].split() == ["Benchmark", "Time", "CPU", "Iterations", "GFLOP/s", "GB/s",
                                             "%roof", "%adj"], "compact: its header (%s)" % lines[:1])
        with open(out) as f:
            doc = json.load(f)
        medians = {b["run_name"]: b for b in doc["benchmarks"] if b.get("aggregate_name") == "median"}
        check(len(medians) == 2, "two points in the results file")
        rows = {ln.split()[0]: ln.split() for ln in lines[1:] if ln.split()}
        for name, b in medians.items():
            row = rows.get(name + "_median")
            if not check(row is not None, "compact: a line for %s_median" % name):
                continue
            # name, time, unit, CPU, unit, iterations, GFLOP/s, GB/s, %roof, %adj
            check(len(row) == 10, "compact: 10 fields (%s)" % row)
            check(abs(float(row[6]) - b["GFLOP/s"]) <= 0.006 and abs(float(row[7]) - b["GB/s"]) <= 0.006,
                  "compact: GFLOP/s and GB/s are the file's (%s vs %.3f, %.3f)" % (row, b["GFLOP/s"], b["GB/s"]))
            t = float(row[1]) * {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}[row[2]]
            tf = b["real_time"] * {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}[b["time_unit"]]
            check(abs(t - tf) <= 1e-3 * tf, "compact: the median time is the file's (%g vs %g)" % (t, tf))
        check(len(lines) == 1 + 4 * len(medians), "compact: a line per aggregate (mean, median, "
              "stddev, cv) of each point (%d lines)" % len(lines))
        r = subprocess.run(base + ["--benchmark_format=console"], capture_output=True, text=True, timeout=120)
        cols = [ln for ln in r.stdout.splitlines() if ln.startswith("Benchmark")]
        check(r.returncode == 0 and cols and len(cols[0].split()) > 20,
              "console still prints every counter (%d columns)" % (len(cols[0].split()) if cols else 0))
        r = subprocess.run(base + ["--benchmark_format=tabular"], capture_output=True, text=True)
        check(r.returncode == 2 and "compact" in r.stderr, "an unknown format names compact (%s)" % r.stderr.strip())


def per_name_repetitions(path):
    """What Google Benchmark's tools/compare.py counts for its U test: per benchmark name,
    the entries that are not aggregates."""
    with open(path) as f:
        doc = json.load(f)
    counts = {}
    for b in doc["benchmarks"]:
        if b.get("run_type") != "aggregate":
            counts[b["name"]] = counts.get(b["name"], 0) + 1
    return counts


def gbench_compare(binary):
    """docs/benchmarking.md: files meant for Google Benchmark's compare.py are made with
    --benchmark_repetitions=9, which overrides the config's repetitions for every point,
    so its U test has its 9 repetitions per point. With $ATTNBENCH_GBENCH_COMPARE (the
    path of Google Benchmark's tools/compare.py, with SciPy) the tool itself is run: no
    "repetitions recommended" warning on such files, the warning on the config's 3."""
    with tempfile.TemporaryDirectory() as d:
        cfg = os.path.join(d, "t.ini")
        with open(cfg, "w") as f:
            f.write(TINY)  # repetitions = 3
        files = {}
        for tag, extra in (("a9", ["--benchmark_repetitions=9"]), ("b9", ["--benchmark_repetitions=9"]),
                           ("a3", []), ("b3", [])):
            files[tag] = os.path.join(d, tag + ".json")
            r = subprocess.run([binary, "bench", "--config", cfg, "--out", files[tag], "--no-probe"]
                               + extra, capture_output=True, text=True, timeout=300)
            check(r.returncode == 0, "bench %s runs (%s)" % (tag, r.stderr.strip()[-300:]))
        for tag, want in (("a9", 9), ("a3", 3)):
            counts = per_name_repetitions(files[tag])
            check(len(counts) == 2 and set(counts.values()) == {want},
                  "%s: %d repetitions of each point (%s)" % (tag, want, counts))
        # The main job ships with that count: two of its files compare without the warning.
        default = configparser.ConfigParser(inline_comment_prefixes=(";",))
        default.read(os.path.join(REPO, "configs", "default.ini"))
        reps = {sec: default.getint(sec, "repetitions", fallback=0) for sec in default.sections()}
        check(reps and min(reps.values()) >= 9,
              "configs/default.ini: 9 or more repetitions in every section (%s)" % reps)
        tool = os.environ.get("ATTNBENCH_GBENCH_COMPARE")
        if not tool:
            print("ATTNBENCH_GBENCH_COMPARE not set: Google Benchmark's compare.py not run")
            return
        warn = "repetitions recommended"
        for pair, warned in ((("a9", "b9"), False), (("a3", "b3"), True)):
            r = subprocess.run([sys.executable, tool, "benchmarks", files[pair[0]], files[pair[1]]],
                               capture_output=True, text=True, timeout=120)
            print(r.stdout[-1500:], r.stderr[-500:])
            check(r.returncode == 0 and "_pvalue" in r.stdout, "compare.py ran its U test on %s" % (pair,))
            check((warn in r.stdout) == warned, "compare.py %s on %s" % (
                "warns" if warned else "does not warn", pair))


def main():
    {"progress": progress, "compact": compact, "gbench-compare": gbench_compare}[sys.argv[1]](*sys.argv[2:])
    if FAILED:
        print("%d checks failed" % len(FAILED))
        return 1
    print("all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
