#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""What `attnbench bench` refuses before it opens the results file, and what it reads
once (run by CTest; see CMakeLists.txt).

  test_bench_guards.py gbench-numbers ATTNBENCH   --benchmark_repetitions / _min_time out
                                                  of range: exit 2, the results file as
                                                  it was, no lock left
  test_bench_guards.py read-once ATTNBENCH        a config from a FIFO or /dev/stdin runs
                                                  and its context records the text
  test_bench_guards.py nothing-to-run ATTNBENCH   a plan left with no point (kernels this
                                                  CPU cannot run, --compute int8 without
                                                  q8_0): exit 2 with the reason, the
                                                  results file as it was; --dry-run exit 0
"""
import json
import os
import subprocess
import sys
import tempfile
import threading

FAILED = []

TINY = """[a]
kernels = naive
heads = 1
head_dim = 8
seq_len = 8
"""
OLD = '{"old results": true}\n'


def check(cond, what):
    if not cond:
        FAILED.append(what)
        print("FAIL:", what)
    return cond


def bench(binary, *args, **kw):
    return subprocess.run([binary, "bench", *args], capture_output=True, text=True, timeout=120, **kw)


def setup(d):
    cfg = os.path.join(d, "tiny.ini")
    with open(cfg, "w") as f:
        f.write(TINY)
    out = os.path.join(d, "existing.json")
    with open(out, "w") as f:
        f.write(OLD)
    return cfg, out


def untouched(d, out, what):
    with open(out) as f:
        check(f.read() == OLD, "%s: the existing results file is kept as it was" % what)
    left = [n for n in os.listdir(d) if n.endswith(".lock") or ".tmp." in n]
    check(not left, "%s: no lock or temporary left (%s)" % (what, left))


def gbench_numbers(binary):
    bad = ["--benchmark_repetitions=-3", "--benchmark_repetitions=0", "--benchmark_repetitions=2.5",
           "--benchmark_repetitions=+2", "--benchmark_repetitions=1001", "--benchmark_repetitions",
           "--benchmark_min_time=-1", "--benchmark_min_time=0", "--benchmark_min_time=inf",
           "--benchmark_min_time=nan", "--benchmark_min_time= 1", "--benchmark_min_time=0x",
           "--benchmark_min_time=-5x", "--benchmark_min_time=1ms"]
    with tempfile.TemporaryDirectory() as d:
        cfg, out = setup(d)
        for flag in bad:
            r = bench(binary, "--config", cfg, "--out", out, "--no-probe", "--quiet", flag)
            check(r.returncode == 2, "%s: exit 2 (got %d: %s)" % (flag, r.returncode, r.stderr.strip()))
            check(("attnbench bench: %s: want" % flag) in r.stderr, "%s: says what it wants (%s)"
                  % (flag, r.stderr.strip()))
            untouched(d, out, flag)
        r = bench(binary, "--config", cfg, "--out", out, "--no-probe", "--quiet",
                  "--benchmark_repetitions=2", "--benchmark_min_time=0.001")
        check(r.returncode == 0, "in range: runs (%s)" % r.stderr.strip())
        with open(out) as f:
            reps = {b.get("repetitions") for b in json.load(f)["benchmarks"]}
        check(reps == {2}, "--benchmark_repetitions=2 reaches the results (%s)" % reps)


def read_once(binary):
    with tempfile.TemporaryDirectory() as d:
        cfg, _ = setup(d)
        fifo = os.path.join(d, "fifo.ini")
        os.mkfifo(fifo)

        def feed():
            with open(fifo, "w") as f:
                f.write(TINY)

        writer = threading.Thread(target=feed, daemon=True)
        writer.start()
        out = os.path.join(d, "fifo.json")
        try:
            r = bench(binary, "--config", fifo, "--out", out, "--no-probe", "--quiet",
                      "--benchmark_min_time=0.001")
        except subprocess.TimeoutExpired:
            check(False, "a FIFO config: bench hangs (reads it twice?)")
            return
        writer.join(5)
        check(r.returncode == 0, "a FIFO config runs (%s)" % r.stderr.strip())
        if r.returncode == 0:
            with open(out) as f:
                check(json.load(f)["context"].get("config_text") == TINY, "a FIFO config: config_text")
        out = os.path.join(d, "stdin.json")
        with open(cfg) as stdin:
            r = bench(binary, "--config", "/dev/stdin", "--out", out, "--no-probe", "--quiet",
                      "--benchmark_min_time=0.001", stdin=stdin)
        check(r.returncode == 0, "/dev/stdin config runs (%s)" % r.stderr.strip())
        if r.returncode == 0:
            with open(out) as f:
                check(json.load(f)["context"].get("config_text") == TINY, "/dev/stdin: config_text")


def nothing_to_run(binary):
    with tempfile.TemporaryDirectory() as d:
        _, out = setup(d)
        simd = os.path.join(d, "simd.ini")
        with open(simd, "w") as f:
            f.write(TINY.replace("naive", "flash__avx2"))
        env = dict(os.environ, ATTNBENCH_ISA_MASK="0")  # no SIMD ISA: flash__avx2 unavailable
        cases = [("kernels this CPU cannot run", [simd], env,
                  "every kernel of the config is one this CPU cannot run"),
                 ("--compute int8 without q8_0", [os.path.join(d, "tiny.ini"), "--compute", "int8"], None,
                  "--compute keeps no point: int8 runs on kv_dtype q8_0 points only")]
        for what, args, e, why in cases:
            r = bench(binary, "--config", *args, "--out", out, "--no-probe", env=e)
            check(r.returncode == 2, "%s: exit 2 (got %d: %s)" % (what, r.returncode, r.stderr.strip()))
            check("attnbench bench: nothing to run from" in r.stderr and why in r.stderr,
                  "%s: says why (%s)" % (what, r.stderr.strip()))
            check("points planned" not in r.stderr and "results:" not in r.stderr,
                  "%s: nothing planned or reported as results" % what)
            untouched(d, out, what)
            r = bench(binary, "--config", *args, "--dry-run", env=e)
            check(r.returncode == 0 and "0 points;" in r.stdout and ("note: nothing to run: " + why) in r.stderr,
                  "%s: --dry-run prints 0 points and the reason (%d: %s)" % (what, r.returncode, r.stderr.strip()))


def main():
    {"gbench-numbers": gbench_numbers, "read-once": read_once,
     "nothing-to-run": nothing_to_run}[sys.argv[1]](*sys.argv[2:])
    if FAILED:
        print("%d checks failed" % len(FAILED))
        return 1
    print("all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
