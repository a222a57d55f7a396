#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""attnbench-mpi under mpirun (docs/mpi.md): one case per CTest test.

Usage: mpi_cases.py BIN MPIEXEC SOURCE_DIR CASE NP
  BIN = none when the MPI build is off: the case is skipped (exit 77).
Cases:
  checked    tests/mpi/checked.ini on NP ranks: every run passes the check against the
             double reference (output and LSE), the results JSON is complete and sane.
  bad_merge  the same with a broken merge (ATTNBENCH_MPI_TEST_FAULT=merge): every run that
             merges must fail the check, and the job exits 1.
  rank_exit  one rank exits at start: the job ends non-zero within the bound.
  rank_hang  one rank stops answering: the watchdog (--timeout 4) ends the job with its
             message within the bound.
  bad_input  inputs refused alike on every rank, before communicating: exit 2, one line
             (a parse error too, naming attnbench-mpi; run options beside --config).
  rank_refuses  one rank refuses its input (its --config is missing): every rank exits 2 at
             once and that rank's reason is printed once, rank-prefixed; --out is checked by
             rank 0 alone (a directory only on rank 0's side is fine); a rank whose command
             line does not parse (or asks for --help) ends every rank at once.
  size_limits  --dry-run refuses what overflows MPI's int counts, per strategy: rank 0's
             gather of the output, allgather's gathered K/V, Ulysses' all-to-all buffers; a
             ring shard that fits is accepted however large the whole K/V.
  timeout_per_run  16 runs of >= 0.3 s each under --timeout 3: the watchdog bounds each
             result, so the sweep completes.
  results_json  a section name with a quote and a backslash gives valid JSON; threads 0 is
             recorded as the count that ran; on 4 ranks, Ulysses' bytes_sent with a K/V group
             split across ranks is what the all-to-alls sent.
  stalled_rank  rank 0 sleeps 0.3 s in its first ring step (ATTNBENCH_MPI_TEST_FAULT=stall:0,
             as if another process had its core): its step's wall time holds the 0.3 s, its
             CPU time does not, and the model's rate is the run-time rate Σ flops / Σ CPU
             (the wall-time rate would be far lower).
  anchor     baselines/mpi/torch_cp_ring.py (PyTorch's ring over gloo) on NP ranks, when the
             baselines' environment ($ATTNBENCH_BASELINES_VENV, else .venv-baselines) has
             torch (else skipped, 77): three runs each pass their check and exit 0 (the rank
             teardown used to abort one run in four), a wrong answer (--fault) exits 1, and
             scripts/mpi-scaling --anchor on 1..NP ranks records the anchor's time at every
             rank count and exits 0.
  predict    --predict prints the model for 8 and 64 nodes at 25/100/400 Gb/s.
  config_dry_run  configs/mpi.ini validates on NP ranks (--dry-run).
  scaling    scripts/mpi-scaling on 1..NP ranks (tiny shapes): one JSON with a strong and a
             weak row per rank count and strategy (the median of 3 repeats), efficiencies that are the formula's
             (recomputed here from the times), the weak lengths S1·sqrt(n); render-results
             renders it.
"""
import json
import os
import subprocess
import sys
import tempfile
import time

binary, mpiexec, src, case, np_ = sys.argv[1:6]
if binary == "none":
    print("attnbench-mpi not built (no MPI found, or -DATTNBENCH_MPI=OFF): skipped")
    sys.exit(77)

env = dict(os.environ)
env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
           OMPI_MCA_rmaps_base_oversubscribe="1")
# Open MPI's own start-up allocations are never freed; leaks of ours are found by the unit
# tests' LeakSanitizer runs, not here.
env["ASAN_OPTIONS"] = (env.get("ASAN_OPTIONS", "") + ":detect_leaks=0").lstrip(":")
env.pop("ATTNBENCH_MPI_TEST_FAULT", None)
failures = 0


def check(cond, what):
    global failures
    if not cond:
        failures += 1
        print("FAIL:", what)


def mpirun(args, fault=None, timeout=300):
    e = dict(env)
    if fault:
        e["ATTNBENCH_MPI_TEST_FAULT"] = fault
    cmd = [mpiexec, "-np", np_, "--oversubscribe", binary] + args
    t0 = time.monotonic()
    p = subprocess.run(cmd, env=e, capture_output=True, text=True, timeout=timeout)
    return p.returncode, p.stdout, p.stderr, time.monotonic() - t0


config = os.path.join(src, "tests", "mpi", "checked.ini")
with tempfile.TemporaryDirectory() as tmp:
    out = os.path.join(tmp, "mpi.json")
    if case == "checked":
        rc, so, se, _ = mpirun(["--config", config, "--out", out, "--timeout", "240"])
        check(rc == 0, f"exit {rc}\n{so}\n{se}")
        runs = json.load(open(out))["runs"] if os.path.exists(out) else []
        check(len(runs) == 52, f"{len(runs)} runs in the JSON, want 52")
        for r in runs:
            check(r["check"] == "pass", f"{r['name']}: {r['check']}")
            # [alibi]'s tiled__avx2 has no native LSE/offset: the portable path runs, and says so
            want_fb = r["name"].startswith("alibi/")
            check(r["fallback"] is want_fb, f"{r['name']} ({r['kernel']}): fallback {r['fallback']}")
            check(len(r["ranks"]) == int(np_), f"{r['name']}: {len(r['ranks'])} ranks")
            check(r["time_s"] > 0 and r["tokens_per_s"] > 0, f"{r['name']}: time")
            for k in r["ranks"]:
                check(0.0 <= k["hidden_fraction"] <= 1.0, f"{r['name']}: hidden fraction")
                check(k["flops"] > 0, f"{r['name']} rank {k['rank']}: no work")
            if r["strategy"] in ("ring", "zigzag"):
                check(all(len(k["steps"]) == int(np_) for k in r["ranks"]), f"{r['name']}: steps")
    elif case == "bad_merge":
        rc, so, se, _ = mpirun(["--config", config, "--out", out], fault="merge")
        check(rc == 1, f"a broken merge exited {rc}, want 1")
        runs = json.load(open(out))["runs"] if os.path.exists(out) else []
        merging = [r for r in runs if r["strategy"] != "ulysses"]  # Ulysses does not merge
        check(merging and all(r["check"] == "fail" for r in merging),
              "runs passed with a broken merge: " +
              ", ".join(r["name"] for r in merging if r["check"] != "fail"))
    elif case in ("rank_exit", "rank_hang"):
        fault = "exit:1" if case == "rank_exit" else f"hang:{int(np_) - 1}"
        rc, so, se, dt = mpirun(["--seq-len", "64", "--heads", "2", "--timeout", "4"],
                                fault=fault, timeout=120)
        check(rc != 0, f"{case}: exit 0")
        check(dt < 60, f"{case}: took {dt:.1f} s (bound 60)")
        if case == "rank_hang":
            check("no result within --timeout 4 s" in se, f"no watchdog message:\n{se}")
    elif case == "bad_input":
        for args, want in (
                (["--strategy", "ulysses", "--seq-len", "64", "--heads", "1"], "ulysses needs heads >= ranks"),
                (["--strategy", "zigzag", "--causal", "--seq-len", "3"], "needs seq_len >="),
                (["--seq-len", "64", "--kernel", "nope"], "unknown kernel 'nope'"),
                (["--seq-len", "64", "--kernel", "blocked, nope"], "unknown kernel 'nope'"),
                (["--seq-len", "64", "--kv-dtype", "q8_0", "--head-dim", "20"], "multiples of 32"),
                (["--seq-len", "64", "--window", "3"], "--window '3'"),
                (["--config", config, "--heads", "3"], "--heads cannot be combined with --config"),
                (["--seq-len", "0"], "(see 'attnbench-mpi --help')"),
                (["--seq-len", "64", "--softcap", "1e-50"], "rounds to 0 in float32")):
            rc, so, se, _ = mpirun(args, timeout=60)
            check(rc == 2, f"{args}: exit {rc}, want 2\n{se}")
            check(se.count(want) == 1, f"{args}: want one '{want}' in\n{se}")
        # config files: a key twice, an empty value or list item, a second value of a
        # one-value key (an indented line), each FILE:LINE; an indented list line adds items
        for body, want in (("heads = 2\nheads = 4\n", "bad.ini:4: heads given twice in [a]"),
                           ("heads = 2\nstrategy =\n", "bad.ini:4: strategy: empty value"),
                           ("heads = 2\ncausal = true,,false\n", "bad.ini:4: causal: empty item"),
                           ("heads = 2\n  4\n", "bad.ini:4: heads takes one value"),
                           ("heads = 2\nseq_len = 64\n  96\n", None)):
            bad = os.path.join(tmp, "bad.ini")
            with open(bad, "w") as f:
                f.write("[a]\nhead_dim = 32\n" + body + ("" if "seq_len" in body else "seq_len = 64\n"))
            rc, so, se, _ = mpirun(["--config", bad, "--dry-run"], timeout=60)
            if want:
                check(rc == 2 and se.count(want) == 1, f"{body!r}: exit {rc}, want one '{want}' in\n{se}")
            else:
                check(rc == 0 and "a/ring/S96" in so, f"{body!r}: an indented line adds a length\n{so}{se}")
    elif case == "rank_refuses":  # one rank refuses: every rank exits 2 at once, its reason shown
        bin_args = ["--seq-len", "64", "--heads", "2", "--timeout", "30"]
        cmd = [mpiexec, "--oversubscribe", "-np", "1", binary, "--config", config, "--timeout", "30",
               ":", "-np", "1", binary, "--config", os.path.join(tmp, "missing.ini"),
               "--timeout", "30"]
        t0 = time.monotonic()
        p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
        check(p.returncode == 2, f"exit {p.returncode}, want 2\n{p.stderr}")
        check(time.monotonic() - t0 < 20, "a refusing rank left the others waiting")
        check(p.stderr.count("attnbench-mpi: rank 1: ") == 1 and "missing.ini: cannot open" in p.stderr,
              f"want rank 1's reason once:\n{p.stderr}")
        # a rank whose command line does not parse (an MPMD launch): every rank ends at once,
        # that rank's message shown (rank 0 prints for all ranks otherwise)
        for other, want in ((["--seq-len", "0"], "rank 1's command line"), (["--help"], "usage:")):
            cmd = [mpiexec, "--oversubscribe", "-np", "1", binary] + bin_args + \
                [":", "-np", "1", binary] + other
            t0 = time.monotonic()
            p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
            check(p.returncode != 0 and time.monotonic() - t0 < 20,
                  f"rank 1 {other}: exit {p.returncode} after {time.monotonic() - t0:.1f} s")
            check(want in p.stdout + p.stderr, f"rank 1 {other}: want {want!r}\n{p.stderr}")
        # configs that parse on every rank but describe other runs (a second length; another
        # seed): every rank exits 2 before any run, the differing rank named, no hang
        for extra in ("seq_len = 64, 96\n", "seq_len = 64\nseed = 7\n"):
            paths = [os.path.join(tmp, n) for n in ("same.ini", "other.ini")]
            for path, body in zip(paths, ("seq_len = 64\n", extra)):
                with open(path, "w") as f:
                    f.write("[a]\nheads = 2\nhead_dim = 32\n" + body)
            cmd = [mpiexec, "--oversubscribe", "-np", "1", binary, "--config", paths[0],
                   "--timeout", "30", ":", "-np", "1", binary, "--config", paths[1], "--timeout", "30"]
            t0 = time.monotonic()
            p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
            check(p.returncode == 2 and time.monotonic() - t0 < 20
                  and "rank 1: its runs (" in p.stderr and "differ from rank 0's" in p.stderr
                  and "pass" not in p.stdout,
                  f"ranks reading other runs ({extra!r}): exit {p.returncode}\n{p.stdout}\n{p.stderr}")
        # --out is rank 0's alone: a directory that exists only where rank 0 runs is fine
        for d in ("wa/res", "wb"):
            os.makedirs(os.path.join(tmp, d))
        cmd = [mpiexec, "--oversubscribe", "-np", "1", "-wdir", os.path.join(tmp, "wa"), binary] + \
            bin_args + ["--out", "res/r.json", ":", "-np", "1", "-wdir", os.path.join(tmp, "wb"),
                        binary] + bin_args + ["--out", "res/r.json"]
        p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
        check(p.returncode == 0 and os.path.exists(os.path.join(tmp, "wa", "res", "r.json")),
              f"--out only on rank 0's side: exit {p.returncode}\n{p.stderr}")
    elif case == "size_limits":  # MPI's int counts, per strategy, refused by --dry-run
        big = ["--no-check", "--dry-run"]
        for args, rc_want, want in (
                (["--batch", "64", "--seq-len", "8192", "--heads", "32", "--kv-heads", "1",
                  "--head-dim", "128", "--strategy", "zigzag", "--causal"], 2, "MPI_Gatherv's limit"),
                (["--seq-len", "262144", "--heads", "8", "--head-dim", "128", "--strategy", "ring"],
                 0, "1 runs on"),
                (["--seq-len", "262144", "--heads", "8", "--head-dim", "128", "--strategy",
                  "allgather"], 2, "MPI_Allgatherv's limit"),
                (["--seq-len", "65536", "--heads", "16", "--kv-heads", "1", "--head-dim", "1024",
                  "--strategy", "ulysses"], 2, "MPI_Alltoallv's limit")):
            rc, so, se, _ = mpirun(args + big, timeout=60)
            check(rc == rc_want, f"{args}: exit {rc}, want {rc_want}\n{se}")
            check((so + se).count(want) == 1, f"{args}: want one '{want}' in\n{so}{se}")
    elif case == "timeout_per_run":  # --timeout bounds each result, not the whole sweep
        ini = os.path.join(tmp, "sweep.ini")
        with open(ini, "w") as f:  # 16 runs of >= 0.3 s each (stall:0) under --timeout 3
            f.write("[sweep]\nstrategy = ring\nseq_len = 64, 65, 66, 67, 68, 69, 70, 71\n"
                    "causal = true, false\nheads = 2\nhead_dim = 16\n")
        rc, so, se, dt = mpirun(["--config", ini, "--timeout", "3", "--out", out], fault="stall:0")
        check(rc == 0, f"exit {rc} after {dt:.1f} s\n{se}")
        runs = json.load(open(out))["runs"] if os.path.exists(out) else []
        check(len(runs) == 16, f"{len(runs)} runs in the JSON, want 16")
    elif case == "results_json":  # strings escaped; threads 0 resolved; the model's Ulysses bytes
        ini = os.path.join(tmp, "odd.ini")
        with open(ini, "w") as f:
            f.write('[q"uo\\te]\nstrategy = ulysses\nseq_len = 64\nheads = 4\nkv_heads = 1\n'
                    "head_dim = 16\nthreads = 0\n")
        rc, so, se, _ = mpirun(["--config", ini, "--out", out, "--quiet"])
        check(rc == 0, f"exit {rc}\n{se}")
        try:
            run = json.load(open(out))["runs"][0]
        except (OSError, ValueError) as e:
            run = None
            check(False, f"the results JSON does not parse: {e}")
        if run:
            check(run["name"] == 'q"uo\\te/ulysses/S64/f32/causal', f"name {run['name']!r}")
            check(run["threads"] >= 1, f"threads 0 recorded as {run['threads']}")
            # every rank sends Q, K, V out and O, LSE back: 16 rows x (3 other ranks' heads
            # of Q and O, every other rank's copy of the one K/V head) — here 12480 bytes
            if int(np_) == 4:
                check(all(k["bytes_sent"] == 12480 for k in run["ranks"]),
                      f"bytes_sent {[k['bytes_sent'] for k in run['ranks']]}, want 12480")
    elif case == "stalled_rank":
        rc, so, se, _ = mpirun(["--strategy", "ring", "--causal", "--seq-len", "512", "--heads", "4",
                                "--head-dim", "64", "--out", out], fault="stall:0")
        check(rc == 0, f"exit {rc}\n{so}\n{se}")
        r = json.load(open(out))["runs"][0] if os.path.exists(out) else {"ranks": []}
        for k in r["ranks"]:
            for s in k["steps"]:
                check(0 <= s["cpu_s"] <= s["compute_s"] * 1.05 + 1e-3,
                      f"rank {k['rank']}: CPU {s['cpu_s']} beside wall {s['compute_s']}")
        if r["ranks"]:
            s0 = r["ranks"][0]["steps"][0]
            check(s0["compute_s"] - s0["cpu_s"] >= 0.25, f"the stall is not wall-only: {s0}")
            flops = sum(k["flops"] for k in r["ranks"])
            cpu = sum(k["compute_cpu_s"] for k in r["ranks"])
            wall = sum(k["compute_s"] for k in r["ranks"])
            rate = r["model_rate_flops_per_s"]
            check(abs(rate / (flops / cpu) - 1) < 1e-4, f"rate {rate}, want flops/CPU {flops / cpu}")
            check(flops / wall < 0.5 * rate, f"the wall-time rate {flops / wall} is near {rate}")
    elif case == "anchor":
        venv = os.environ.get("ATTNBENCH_BASELINES_VENV") or os.path.join(src, ".venv-baselines")
        py = os.path.join(venv, "bin", "python")
        if not os.path.exists(py) or subprocess.run([py, "-c", "import torch"]).returncode != 0:
            print(f"no torch in the baselines' environment {venv}: skipped")
            sys.exit(77)
        import socket

        def anchor(extra, port):
            cmd = [mpiexec, "-np", np_, "--oversubscribe", py,
                   os.path.join(src, "baselines", "mpi", "torch_cp_ring.py"), "--seq-len", "256",
                   "--heads", "2", "--head-dim", "32", "--causal", "--port", str(port), "--out", out]
            return subprocess.run(cmd + extra, env=env, capture_output=True, text=True, timeout=300)

        def port():
            with socket.socket() as s:
                s.bind(("127.0.0.1", 0))
                return s.getsockname()[1]

        for i in range(3):
            p = anchor([], port())
            check(p.returncode == 0, f"anchor run {i}: exit {p.returncode}\n{p.stdout}\n{p.stderr[-1500:]}")
            if p.returncode == 0:
                run = json.load(open(out))["runs"][0]
                check(run["check"] == "pass" and run["time_s"] > 0, f"anchor run {i}: {run}")
        p = anchor(["--fault"], port())
        check(p.returncode == 1, f"a wrong answer (--fault) exited {p.returncode}, want 1\n{p.stderr[-1500:]}")
        p = subprocess.run([os.path.join(src, "scripts", "mpi-scaling"), "--bin", binary, "--mpirun",
                            mpiexec, "--ranks", ",".join(str(n) for n in range(1, int(np_) + 1)),
                            "--seq-len", "256", "--weak-seq-len", "128", "--heads", "2",
                            "--head-dim", "32", "--strategies", "zigzag", "--repeats", "1",
                            "--timeout", "120", "--anchor", "--python", py, "--out", out],
                           env=env, capture_output=True, text=True, timeout=600)
        check(p.returncode == 0, f"mpi-scaling --anchor exit {p.returncode}\n{p.stdout[-1500:]}\n{p.stderr[-1500:]}")
        rows = json.load(open(out))["anchor"] if os.path.exists(out) else []
        check(sorted(r["ranks"] for r in rows) == list(range(1, int(np_) + 1)),
              f"anchor rows {[r['ranks'] for r in rows]}")
        for r in rows:
            check("error" not in r and r.get("time_s", 0) > 0 and r.get("check") == "pass",
                  f"anchor on {r['ranks']} ranks: {r}")
    elif case == "predict":
        rc, so, se, _ = mpirun(["--seq-len", "96", "--heads", "4", "--causal", "--strategy", "zigzag",
                                "--predict"])
        check(rc == 0, f"exit {rc}\n{se}")
        rows = [l for l in so.splitlines() if l.startswith("zigzag/S96")]
        check(any(" 8 " in l for l in rows) and any(" 64 " in l for l in rows), so)
        check("25 Gb/s" in so and "400 Gb/s" in so, so)
        # A ring needs one row per rank, not two: S100 predicts 64 nodes (zigzag S96 does not).
        rc, so, se, _ = mpirun(["--seq-len", "100", "--heads", "2", "--head-dim", "32",
                                "--strategy", "ring", "--predict"])
        row64 = [l for l in so.splitlines() if l.startswith("ring/S100") and " 64 " in l]
        check(rc == 0 and row64 and "n/a" not in row64[0], f"ring S100 on 64 nodes predicted: {so}")
        zz64 = [l for l in rows if " 64 " in l]
        check(zz64 and "n/a" in zz64[0], f"zigzag S96 cannot run on 64 nodes: {rows}")
    elif case == "config_dry_run":  # the shipped config validates on every rank
        rc, so, se, _ = mpirun(["--config", os.path.join(src, "configs", "mpi.ini"), "--dry-run"],
                               timeout=60)
        check(rc == 0, f"exit {rc}\n{se}")
        check(f"runs on {np_} ranks" in so and not so.startswith("0 runs"), so)
    elif case == "scaling":
        import math
        p = subprocess.run([os.path.join(src, "scripts", "mpi-scaling"), "--bin", binary, "--mpirun",
                            mpiexec, "--ranks", ",".join(str(n) for n in range(1, int(np_) + 1)),
                            "--seq-len", "256", "--weak-seq-len", "128", "--heads", "2",
                            "--head-dim", "32", "--strategies", "zigzag,allgather", "--timeout",
                            "120", "--repeats", "3", "--out", out], env=env, capture_output=True, text=True, timeout=400)
        check(p.returncode == 0, f"mpi-scaling exit {p.returncode}\n{p.stdout[-1500:]}\n{p.stderr[-1500:]}")
        doc = json.load(open(out)) if os.path.exists(out) else {"strong": [], "weak": []}
        for kind in ("strong", "weak"):
            rows = doc[kind]
            check(sorted((r["strategy"], r["ranks"]) for r in rows) ==
                  sorted((s, n) for s in ("zigzag", "allgather") for n in range(1, int(np_) + 1)),
                  f"{kind}: rows {[(r['strategy'], r['ranks']) for r in rows]}")
            one = {r["strategy"]: r for r in rows if r["ranks"] == 1}
            for r in rows:
                check(len(r["times_s"]) == 3 and r["time_s"] == sorted(r["times_s"])[1],
                      f"{kind} {r}: not the median of 3 repeats")
                check(0 < r["ran_fraction"] <= 1.5, f"{kind} {r}: ran_fraction")  # µs intervals: loose
                b = one[r["strategy"]]
                work = r["flops"] / b["flops"] if kind == "weak" else 1.0
                want = work * b["time_s"] / (r["ranks"] * r["time_s"])
                check(abs(r["efficiency"] / want - 1) < 1e-9, f"{kind} {r}: efficiency, want {want}")
                want_s = 256 if kind == "strong" else int(round(128 * math.sqrt(r["ranks"]) / 64)) * 64
                check(r["seq_len"] == want_s, f"{kind} {r['ranks']} ranks: S {r['seq_len']}, want {want_s}")
        res = os.path.join(tmp, "results")
        os.makedirs(os.path.join(res, "mpi"))
        os.replace(out, os.path.join(res, "mpi", "test-scaling.json"))
        import glob
        import shutil
        # render-results renders a results folder: one CPU's smallest committed file beside it
        shutil.copy(min(glob.glob(os.path.join(src, "results", "*.json")), key=os.path.getsize), res)
        page = os.path.join(tmp, "results.md")
        p = subprocess.run([os.path.join(src, "scripts", "render-results"), "--results", res,
                            "--out", page], capture_output=True, text=True, timeout=60)
        text = open(page).read() if p.returncode == 0 else p.stderr
        check("| strong | ranks |" in text and "| weak | ranks |" in text and "64 nodes" in text,
              f"render-results: {text[-800:]}")
    else:
        print("unknown case", case)
        sys.exit(2)

print(f"{case} on {np_} ranks: {'ok' if not failures else f'{failures} failure(s)'}")
sys.exit(1 if failures else 0)
