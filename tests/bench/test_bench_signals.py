#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""SIGINT or SIGTERM at random moments of `attnbench bench` (docs/benchmarking.md,
"Results files and interruption").

  test_bench_signals.py ATTNBENCH [RUNS]     (default 20 runs)

A small config is run once to completion to measure its duration T; then RUNS runs each
get SIGINT or SIGTERM after a random delay in [0, 1.1·T]. After every run:
  * the exit status is 0 (the sweep had finished), 128 + signal (interrupted, with the
    "interrupted" message) or death by the signal itself (only before the first point
    or after the last: the handlers are active while points run);
  * the results file, if there is one, is valid JSON holding every point the run
    reported finished ("[k/N] name ..." on stderr); if a point was reported, it exists;
  * no temporary is left beside it: no name starting with the results file's name +
    ".tmp", whatever the temporary naming (a lock file, if the writer uses one, may stay).
The random seed is printed; ATTN_SIGNAL_SEED=N replays a run sequence.
"""
import json
import os
import random
import re
import signal
import subprocess
import sys
import tempfile
import time

CONFIG = """[sig]
kernels = blocked
heads = 2
head_dim = 16
seq_len = 8, 16, 24, 32, 40, 48, 56, 64
causal = false
repetitions = 1
min_time = 0.005
"""
POINT = re.compile(r"^\[(\d+)/(\d+)\] (\S+) ", re.M)
FAILED = []


def check(cond, what):
    if not cond:
        FAILED.append(what)
        print("FAIL:", what)
    return cond


def run_once(binary, d, cfg, delay, sig):
    """One run in directory d; returns (outcome, reported points, planned count)."""
    out = os.path.join(d, "res.json")
    p = subprocess.Popen([binary, "bench", "--config", cfg, "--out", out, "--no-probe", "--progress"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if delay is not None:
        time.sleep(delay)
        p.send_signal(sig)
    try:
        _, err = p.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        p.kill()
        p.communicate()
        check(False, "run did not end within 60 s of the signal")
        return "hang", set(), 0
    rc = p.returncode
    found = POINT.findall(err)
    reported = {name for _, _, name in found}
    planned = int(found[0][1]) if found else 0
    label = "delay %.3f s, %s, exit %s" % (delay or 0, signal.Signals(sig).name if delay is not None else "-", rc)

    if rc == 0:
        outcome = "completed"
    elif delay is not None and rc == 128 + sig:
        outcome = "interrupted"
        check("interrupted" in err and out in err, "%s: the interrupt message names the results file" % label)
    elif delay is not None and rc == -sig:
        # Default action: before the handlers are installed or after the sweep (they are
        # uninstalled once every point is saved), never in between.
        outcome = "killed by the signal"
        check(not reported or len(reported) == planned,
              "%s: killed by the signal mid-sweep, after %d of %d points" % (label, len(reported), planned))
    else:
        check(False, "%s: unexpected exit status (stderr: %s)" % (label, err.strip()[-300:]))
        outcome = "failed"

    if os.path.exists(out):
        try:
            with open(out) as f:
                doc = json.load(f)
            names = {b.get("run_name") for b in doc.get("benchmarks", [])}
            missing = reported - names
            check(not missing, "%s: %d reported points missing from the results file: %s"
                  % (label, len(missing), sorted(missing)[:3]))
            for b in doc.get("benchmarks", []):
                check(not b.get("error_occurred"), "%s: error in a kept point: %s" % (label, b.get("error_message")))
        except (OSError, ValueError) as e:
            check(False, "%s: results file is not valid JSON (%s)" % (label, e))
    else:
        check(not reported, "%s: %d points reported finished but no results file" % (label, len(reported)))

    leftovers = sorted(f for f in os.listdir(d) if f.startswith("res.json.tmp"))
    check(not leftovers, "%s: temporary files left behind: %s" % (label, leftovers))
    return outcome, reported, planned


def main():
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    binary = sys.argv[1]
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 20
    seed = int(os.environ.get("ATTN_SIGNAL_SEED", random.SystemRandom().randrange(1 << 31)))
    rng = random.Random(seed)
    print("seed %d (ATTN_SIGNAL_SEED=%d replays this sequence)" % (seed, seed))
    outcomes = {}
    with tempfile.TemporaryDirectory() as top:
        d = os.path.join(top, "full")
        os.mkdir(d)
        cfg = os.path.join(d, "sig.ini")
        with open(cfg, "w") as f:
            f.write(CONFIG)
        t0 = time.monotonic()
        outcome, reported, planned = run_once(binary, d, cfg, None, signal.SIGINT)
        full = time.monotonic() - t0
        if not check(outcome == "completed" and planned > 1 and len(reported) == planned,
                     "an uninterrupted run finishes all points (%s, %d of %d)" % (outcome, len(reported), planned)):
            return 1
        print("uninterrupted run: %d points in %.2f s" % (planned, full))
        mid = 0
        for i in range(runs):
            d = os.path.join(top, "run%d" % i)
            os.mkdir(d)
            cfg = os.path.join(d, "sig.ini")
            with open(cfg, "w") as f:
                f.write(CONFIG)
            sig = rng.choice((signal.SIGINT, signal.SIGTERM))
            delay = rng.uniform(0, 1.1 * full)
            outcome, reported, _ = run_once(binary, d, cfg, delay, sig)
            outcomes[outcome] = outcomes.get(outcome, 0) + 1
            mid += outcome == "interrupted" and 0 < len(reported) < planned
        print("outcomes over %d runs: %s; %d interrupted mid-sweep" % (runs, outcomes, mid))
        # The test only means something if signals landed between points.
        check(mid >= min(3, runs), "at least 3 runs were interrupted mid-sweep (%d)" % mid)
    if FAILED:
        print("%d check(s) failed (seed %d)" % (len(FAILED), seed))
        return 1
    print("bench signals: all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
