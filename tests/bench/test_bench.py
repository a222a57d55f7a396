#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Tests of `attnbench bench` and the result scripts (run by CTest; see CMakeLists.txt).

  test_bench.py config-errors ATTNBENCH      malformed configs fail with FILE:LINE, exit 2
  test_bench.py refuse ATTNBENCH             a point too big for memory is refused
  test_bench.py sigint ATTNBENCH CONFIGDIR   SIGINT mid-sweep keeps finished points
  test_bench.py outputs ATTNBENCH            --out never a config / device / FIFO / directory
  test_bench.py lock ATTNBENCH               a second bench on the same --out fails at once
  test_bench.py diskfull ATTNBENCH           the first failed save stops the sweep (tmpfs;
                                             exit 77 = skipped where mounting fails)
  test_bench.py interleave ATTNBENCH         --benchmark_enable_random_interleaving=true
  test_bench.py adjacent ATTNBENCH           memory-bound points get the adjacent bandwidth
                                             probe counters, compute-bound ones do not
  test_bench.py filter ATTNBENCH             --benchmark_filter on the displayed names
  test_bench.py results RESULTS.json         context and counters of a ci.ini run
  test_bench.py cpu ATTNBENCH RESULTS.json   `info` prints the CPU identity the context has
  test_bench.py scripts RESULTS.json DIR     plot.py / compare.py / summary.py on it
  test_bench.py synthetic DIR                the scripts on two made-up machines: the limit x
                                             efficiency split, %roofline, plots
"""
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time

FAILED = []


def check(cond, what):
    """Records a failed check; returns cond, so `if not check(...): continue` skips what
    depends on it."""
    if not cond:
        FAILED.append(what)
        print("FAIL:", what)
    return cond


GOOD = """[s]
kernels = blocked
heads = 4
kv_heads = 2
head_dim = 16
seq_len = 8
causal = false, true
"""

# (config text, line the error must name, text the message must contain)
BAD = [
    (GOOD + "colour = blue\n", 8, "unknown key 'colour'"),
    (GOOD.replace("seq_len = 8", "seq_len = 8, x"), 6, "'x' is not an integer"),
    (GOOD.replace("seq_len = 8", "seq_len = 8,,16"), 6, "empty item"),
    (GOOD.replace("seq_len = 8", "seq_len ="), 6, "seq_len: empty list"),
    (GOOD.replace("head_dim = 16", "d_model = 30"), 5, "d_model 30 is not divisible by heads 4"),
    (GOOD.replace("kv_heads = 2", "kv_heads = 3"), 4, "kv_heads 3 does not divide heads 4"),
    (GOOD.replace("kernels = blocked", "kernels = blocked, warp_drive"), 2, "unknown kernel 'warp_drive'"),
    (GOOD.replace("causal = false, true", "causal = maybe"), 7, "causal: 'maybe'"),
    (GOOD.replace("heads = 4", "heads = -4"), 3, "out of range"),
    (GOOD.replace("heads = 4", "heads = 4\nheads = 8"), 4, "repeated"),
    (GOOD + "this line has no equals sign\n", 8, "syntax error"),
    (GOOD.replace("head_dim = 16", "head_dim = 16\nd_model = 64"), 6, "exactly one of d_model and head_dim"),
    ("kernels = blocked\n" + GOOD, 1, "outside any [section]"),
    (GOOD.replace("kernels = blocked\n", ""), 1, "missing key 'kernels'"),
    (GOOD + "repetitions = 2.5\n", 8, "repetitions"),
    (GOOD + "cold_inputs = sometimes\n", 8, "cold_inputs: 'sometimes' is not true or false"),
]


def config_errors(binary):
    with tempfile.TemporaryDirectory() as d:
        good = os.path.join(d, "good.ini")
        with open(good, "w") as f:
            f.write(GOOD)
        r = subprocess.run([binary, "bench", "--config", good, "--dry-run"], capture_output=True, text=True)
        check(r.returncode == 0, "a good config is accepted (%s)" % r.stderr.strip())
        check(len(r.stdout.strip().splitlines()) == 3, "good config expands to 2 points + total line")
        for i, (text, line, msg) in enumerate(BAD):
            path = os.path.join(d, "bad%d.ini" % i)
            with open(path, "w") as f:
                f.write(text)
            out = os.path.join(d, "never.json")
            r = subprocess.run([binary, "bench", "--config", path, "--out", out],
                               capture_output=True, text=True)
            err = r.stderr.strip()
            check(r.returncode == 2, "bad config %d exits 2 (got %d: %s)" % (i, r.returncode, err))
            check(err.startswith("%s:%d: " % (path, line)), "bad config %d names %s:%d (got: %s)" % (i, path, line, err))
            check(msg in err, "bad config %d says '%s' (got: %s)" % (i, msg, err))
            check(not os.path.exists(out), "bad config %d ran nothing" % i)
        excl = os.path.join(d, "excl.ini")
        with open(excl, "w") as f:
            f.write(GOOD.replace("kernels = blocked", "kernels = all, -naive"))
        r = subprocess.run([binary, "bench", "--config", excl, "--dry-run"], capture_output=True, text=True)
        names = [ln.split()[0] for ln in r.stdout.splitlines()[:-1]]
        check(r.returncode == 0 and names, "kernels = all, -naive is accepted")
        check(not any(n.startswith(("naive/", "reference/")) for n in names),
              "'all, -naive' has neither naive nor reference")
        check(any(n.startswith("blocked/") for n in names), "'all, -naive' keeps blocked")
        r = subprocess.run([binary, "bench", "--config", os.path.join(d, "nope.ini")], capture_output=True, text=True)
        check(r.returncode == 2 and "cannot open" in r.stderr, "missing config file is reported")
        r = subprocess.run([binary, "bench", "--config", good, "--kernel", "nope"], capture_output=True, text=True)
        check(r.returncode == 2 and "unknown kernel 'nope'" in r.stderr, "unknown --kernel is reported")
        r = subprocess.run([binary, "bench", "--config", good, "--benchmark_bogus=1"], capture_output=True, text=True)
        check(r.returncode == 2, "an unknown --benchmark_ flag is an error")


def refuse(binary):
    """A point far larger than memory is refused (an error in the file), others still run."""
    cfg = GOOD + """
[huge]
kernels = blocked
batch = 64
heads = 64
head_dim = 128
seq_len = 65536
"""
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "huge.ini")
        with open(path, "w") as f:
            f.write(cfg)
        out = os.path.join(d, "res.json")
        r = subprocess.run([binary, "bench", "--config", path, "--out", out, "--no-probe",
                            "--benchmark_min_time=0.01"], capture_output=True, text=True, timeout=300)
        check(r.returncode == 1, "a refused point makes the run exit 1 (got %d)" % r.returncode)
        check("refused: needs" in r.stderr, "the refusal is explained on stderr")
        with open(out) as f:
            doc = json.load(f)
        errs = [b for b in doc["benchmarks"] if b.get("error_occurred")]
        oks = [b for b in doc["benchmarks"] if not b.get("error_occurred")]
        check(len(errs) == 1 and "refused" in errs[0]["error_message"], "the huge point is an error")
        check(len(oks) == 2, "the other points ran")


def sigint(binary, _configdir):
    # Points of ~20 ms per call and 0.15 s of timing each: several finish per second.
    cfg = """[slow]
kernels = blocked
heads = 8
head_dim = 64
seq_len = 256
seq_kv = 64, 128, 192, 256, 320, 384, 448, 512, 576, 640, 704, 768
causal = false
threads = 1
repetitions = 2
min_time = 0.15
"""
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "slow.ini")
        with open(path, "w") as f:
            f.write(cfg)
        out = os.path.join(d, "res.json")
        p = subprocess.Popen([binary, "bench", "--config", path, "--out", out, "--no-probe", "--progress"],
                             stderr=subprocess.PIPE, text=True)
        finished = 0
        deadline = time.time() + 120
        for line in p.stderr:  # wait until three points have finished
            if re.match(r"\[\d+/12\] ", line):
                finished += 1
                if finished == 3:
                    break
            if time.time() > deadline:
                break
        p.send_signal(signal.SIGINT)
        rest = p.stderr.read()
        rc = p.wait(timeout=60)
        check(finished == 3, "three points finished before the interrupt")
        check(rc == 128 + signal.SIGINT, "interrupted run exits 130 (got %d)" % rc)
        check("interrupted" in rest and out in rest, "the interrupt message names the results file")
        check(not os.path.exists(out + ".tmp"), "no temporary file is left behind")
        left = [f for f in os.listdir(d) if ".tmp." in f or f.endswith(".lock")]
        check(not left, "no temporary or lock file is left behind (%s)" % left)
        try:
            with open(out) as f:
                doc = json.load(f)
        except (OSError, ValueError) as e:
            check(False, "results file is valid JSON after SIGINT (%s)" % e)
            return
        names = {b["run_name"] for b in doc["benchmarks"]}
        check(len(names) >= 3, "the finished points are in the file (%d found)" % len(names))
        check(len(names) < 12, "the interrupt stopped the sweep early")
        for b in doc["benchmarks"]:
            check(not b.get("error_occurred"), "no error in kept points")
        medians = [b for b in doc["benchmarks"] if b.get("aggregate_name") == "median"]
        check(len(medians) >= 3, "finished points carry their aggregates")


def leftovers(d):
    return sorted(f for f in os.listdir(d) if ".tmp." in f or f.endswith(".lock"))


def outputs(binary):
    """--out may not be the config (by path, hard link or symlink), nor anything but a
    regular file (or a symlink to one, written through); refusals come before any work."""
    with tempfile.TemporaryDirectory() as d:
        cfg = os.path.join(d, "tiny.ini")
        with open(cfg, "w") as f:
            f.write(GOOD)
        hard = os.path.join(d, "hard.ini")
        os.link(cfg, hard)
        sym = os.path.join(d, "sym.json")
        os.symlink(cfg, sym)
        fifo = os.path.join(d, "fifo")
        os.mkfifo(fifo)
        cases = [("the config", cfg, "is the same file as the config"),
                 ("a hard link to the config", hard, "is the same file as the config"),
                 ("a symlink to the config", sym, "is the same file as the config"),
                 ("a directory", d, "is a directory"),
                 ("a character device", "/dev/null", "is a character device"),
                 ("a FIFO", fifo, "is a FIFO"),
                 ("in a missing directory", os.path.join(d, "no", "r.json"), "No such file or directory")]
        for what, out, msg in cases:
            t0 = time.time()
            r = subprocess.run([binary, "bench", "--config", cfg, "--out", out, "--no-probe", "--progress",
                                "--benchmark_min_time=0.001"], capture_output=True, text=True, timeout=60)
            check(r.returncode == 1, "--out %s: exit 1 (got %d: %s)" % (what, r.returncode, r.stderr.strip()))
            check("cannot write results" in r.stderr and msg in r.stderr,
                  "--out %s: says %r (%s)" % (what, msg, r.stderr.strip()))
            check("points planned" not in r.stderr and not re.search(r"\[\d+/\d+\]", r.stderr),
                  "--out %s: refused before any point ran" % what)
            check(time.time() - t0 < 10, "--out %s: refused at once" % what)
        with open(cfg) as f:
            check(f.read() == GOOD, "the config is untouched")
        check(stat_is_fifo(fifo), "the FIFO is still a FIFO")
        # A symlink to a results file: the target is replaced, the link kept.
        target = os.path.join(d, "target.json")
        with open(target, "w") as f:
            f.write("old")
        link = os.path.join(d, "link.json")
        os.symlink("target.json", link)
        r = subprocess.run([binary, "bench", "--config", cfg, "--out", link, "--no-probe", "--quiet",
                            "--benchmark_min_time=0.001"], capture_output=True, text=True, timeout=120)
        check(r.returncode == 0, "--out symlink to a file runs (%s)" % r.stderr.strip())
        check(os.path.islink(link), "the symlink is kept")
        with open(target) as f:
            check(len(json.load(f)["benchmarks"]) == 2, "its target holds the results")
        check(not leftovers(d), "no temporary or lock left (%s)" % leftovers(d))


def stat_is_fifo(path):
    import stat
    return stat.S_ISFIFO(os.lstat(path).st_mode)


SLOW = """[slow]
kernels = blocked
heads = 8
head_dim = 64
seq_len = 256
seq_kv = 64, 128, 192, 256, 320, 384, 448, 512
causal = false
threads = 1
repetitions = 2
min_time = 0.15
"""


def lock(binary):
    """Two bench runs on one --out: the second fails at once naming the first's pid (also
    through a symlink to the same file); the first is unaffected. A stale lock file (from
    a killed run) does not block."""
    with tempfile.TemporaryDirectory() as d:
        cfg = os.path.join(d, "slow.ini")
        with open(cfg, "w") as f:
            f.write(SLOW)
        out = os.path.join(d, "res.json")
        with open(out + ".lock", "w") as f:  # left by a killed run: not held, so no obstacle
            f.write("999999\n")
        first = subprocess.Popen([binary, "bench", "--config", cfg, "--out", out, "--no-probe"],
                                 stderr=subprocess.PIPE, text=True)
        for line in first.stderr:  # the lock is taken before this line
            if "points planned" in line:
                break
        alias = os.path.join(d, "alias.json")
        os.symlink("res.json", alias)
        for what, path in (("same path", out), ("symlink to it", alias)):
            t0 = time.time()
            r = subprocess.run([binary, "bench", "--config", cfg, "--out", path, "--no-probe"],
                               capture_output=True, text=True, timeout=60)
            check(r.returncode == 1, "second bench (%s) exits 1 (got %d: %s)" % (what, r.returncode, r.stderr.strip()))
            check("another attnbench process (pid %d" % first.pid in r.stderr,
                  "second bench (%s) names the first's pid %d (%s)" % (what, first.pid, r.stderr.strip()))
            check(time.time() - t0 < 10, "second bench (%s) fails at once" % what)
        rest = first.stderr.read()
        rc = first.wait(timeout=300)
        check(rc == 0, "the first bench completes (%d: %s)" % (rc, rest[-300:]))
        with open(out) as f:
            names = {b["run_name"] for b in json.load(f)["benchmarks"]}
        check(len(names) == 8, "the first bench's results are all there (%d)" % len(names))
        check(not leftovers(d), "no temporary or lock left (%s)" % leftovers(d))
        # Once released, the file can be written again.
        r = subprocess.run([binary, "bench", "--config", cfg, "--out", out, "--no-probe", "--quiet",
                            "--benchmark_min_time=0.001", "--benchmark_repetitions=1",
                            "--benchmark_filter=Skv64/"], capture_output=True, text=True, timeout=120)
        check(r.returncode == 0, "after the first, a new bench takes the lock (%s)" % r.stderr.strip())


TINY = """[s]
kernels = blocked
heads = 2
head_dim = 8
seq_len = 4, 5, 6, 7, 8, 9, 10, 11, 12, 13
causal = false, true
threads = 1
"""


def diskfull(binary):
    """--out on a 16 KiB tmpfs: the results (~25 KiB for 20 points) stop fitting after a
    few points; the sweep stops at the first failed save with one clear message, exit 1,
    and the file keeps the points saved before. Then a full file system from the start."""
    mnt = tempfile.mkdtemp(prefix="attnbench-tmpfs-")
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16k", "tmpfs", mnt],
                       capture_output=True, text=True)
    if r.returncode != 0:
        os.rmdir(mnt)
        print("SKIPPED: cannot mount a tmpfs here (%s); the disk-full test needs root or "
              "CAP_SYS_ADMIN" % (r.stderr.strip() or "mount failed"))
        sys.exit(77)
    try:
        with tempfile.TemporaryDirectory() as d:
            cfg = os.path.join(d, "tiny.ini")
            with open(cfg, "w") as f:
                f.write(TINY)
            out = os.path.join(mnt, "res.json")
            r = subprocess.run([binary, "bench", "--config", cfg, "--out", out, "--no-probe", "--progress",
                                "--benchmark_min_time=0.001"], capture_output=True, text=True, timeout=120)
            err = r.stderr
            check(r.returncode == 1, "disk full: exit 1 (got %d)" % r.returncode)
            saves = [ln for ln in err.splitlines() if "cannot save results" in ln]
            check(len(saves) == 1 and "No space left on device" in saves[0],
                  "disk full: one message naming the cause (%s)" % saves)
            m = re.search(r"keeps the (\d+) points? finished before", err)
            check(m is not None, "disk full: the message says how many points the file keeps (%s)" % saves)
            progress = [ln for ln in err.splitlines() if re.match(r"\[\d+/20\] ", ln)]
            check(0 < len(progress) < 20, "disk full: the sweep stopped early (%d points)" % len(progress))
            if m and os.path.exists(out):
                with open(out) as f:
                    doc = json.load(f)
                names = {b["run_name"] for b in doc["benchmarks"]}
                check(len(names) == int(m.group(1)) == len(progress),
                      "disk full: the file holds the %s finished points (%d)" % (m.group(1), len(names)))
            else:
                check(False, "disk full: the results file of the finished points exists")
            check(not leftovers(mnt), "disk full: no temporary or lock left (%s)" % leftovers(mnt))
            os.remove(out)
            # Full from the start: the first save (the context) fails; nothing runs.
            filler = os.path.join(mnt, "filler")
            with open(filler, "wb", buffering=0) as f:
                try:
                    while True:
                        f.write(b"\0" * 4096)
                except OSError:
                    pass
            r = subprocess.run([binary, "bench", "--config", cfg, "--out", out, "--no-probe", "--progress",
                                "--benchmark_min_time=0.001"], capture_output=True, text=True, timeout=120)
            check(r.returncode == 1 and "No space left on device" in r.stderr,
                  "full from the start: exit 1 naming the cause (%d: %s)" % (r.returncode, r.stderr.strip()))
            check(not re.search(r"\[\d+/20\] ", r.stderr), "full from the start: no point ran")
            check(not os.path.exists(out), "full from the start: no results file")
            check(not leftovers(mnt), "full from the start: no temporary or lock left (%s)" % leftovers(mnt))
    finally:
        subprocess.run(["umount", mnt])
        os.rmdir(mnt)


def cold(binary):
    """cold_inputs = true: the point is named .../cold, rotates over several input copies
    (input_copies counter, memory estimate of the dry run) and still passes its check."""
    cfg = GOOD.replace("causal = false, true", "causal = false")
    with tempfile.TemporaryDirectory() as d:
        paths = {}
        for name, extra in (("warm", ""), ("cold", "cold_inputs = true\n")):
            paths[name] = os.path.join(d, name + ".ini")
            with open(paths[name], "w") as f:
                f.write(cfg + extra)
        dry = {}
        for name, path in paths.items():
            r = subprocess.run([binary, "bench", "--config", path, "--dry-run"], capture_output=True, text=True)
            check(r.returncode == 0, "%s config accepted (%s)" % (name, r.stderr.strip()))
            dry[name] = r.stdout.splitlines()[0].split()
        check(dry["cold"][0] == dry["warm"][0] + "/cold", "cold point name ends in /cold (%s)" % dry["cold"][0])
        check(dry["cold"][1:] != dry["warm"][1:], "the memory estimate counts the copies (%s vs %s)"
              % (dry["cold"][1:], dry["warm"][1:]))
        copies = {}
        for name, path in paths.items():
            out = os.path.join(d, name + ".json")
            r = subprocess.run([binary, "bench", "--config", path, "--out", out, "--no-probe", "--quiet",
                                "--benchmark_min_time=0.01"], capture_output=True, text=True, timeout=300)
            check(r.returncode == 0, "%s point runs (%s)" % (name, r.stderr.strip()))
            with open(out) as f:
                runs = [b for b in json.load(f)["benchmarks"] if b.get("run_type") == "iteration"]
            check(runs and not any(b.get("error_occurred") for b in runs), "%s point checked and timed" % name)
            copies[name] = runs[0].get("input_copies") if runs else None
            if name == "cold" and runs:
                cold_run = runs[0]
        check(copies["warm"] == 1, "a warm point uses one input copy (%s)" % copies["warm"])
        # A tiny point: the 64 MiB minimum needs more copies than the cap allows.
        check(copies["cold"] == 64, "a tiny cold point rotates over 64 copies (%s)" % copies["cold"])
        # ... and when those copies fit in the last-level cache together (info's topology
        # line), the point says so: cold_in_llc 1, its calls read the cache, not DRAM
        r = subprocess.run([binary, "info"], capture_output=True, text=True)
        caches = re.findall(r"L([23]) ([\d.]+) (KiB|MiB|GiB) x(\d+)",
                            next((ln for ln in r.stdout.splitlines() if ln.startswith("topology:")), ""))
        if check(caches and copies["cold"] == 64, "info names the caches (%s)" % r.stdout[-400:]):
            _, size, unit, count = max(caches)  # the last level: L3, else L2
            llc = float(size) * {"KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}[unit] * int(count)
            want = 1 if 64 * cold_run["bytes"] <= llc else 0
            check(cold_run.get("cold_in_llc") == want,
                  "cold_in_llc %s for 64 copies of %d bytes against an LLC of %d bytes (want %d)"
                  % (cold_run.get("cold_in_llc"), cold_run["bytes"], llc, want))


def kv_types(binary):
    """kv_dtype = f32, f16, bf16, q8_0: one point per type, named .../<type>/T1
    (f32 unchanged); counter kv_dtype holds the code; bytes (and so GB/s and the roofline)
    count K/V as stored; each non-f32 point reports its storage error, the f32 one none;
    every point passes its check."""
    cfg = """[kv]
kernels = blocked
heads = 2
kv_heads = 1
head_dim = 64
seq_len = 1
seq_kv = 300
kv_dtype = f32, f16, bf16, q8_0
"""
    with tempfile.TemporaryDirectory() as d:
        path, out = os.path.join(d, "kv.ini"), os.path.join(d, "kv.json")
        with open(path, "w") as f:
            f.write(cfg)
        r = subprocess.run([binary, "bench", "--config", path, "--out", out, "--no-probe", "--quiet",
                            "--benchmark_min_time=0.01"], capture_output=True, text=True, timeout=300)
        check(r.returncode == 0, "kv_dtype sweep runs (%s)" % r.stderr.strip())
        with open(out) as f:
            runs = {b["name"]: b for b in json.load(f)["benchmarks"] if b.get("run_type") == "iteration"}
        base = "blocked/B1/H2/KV1/Sq1/Skv300/D64/noncausal/"
        want = {"f32": (0, 4 * 64), "f16": (1, 2 * 64), "bf16": (2, 2 * 64), "q8_0": (3, 68)}
        for t, (code, row) in want.items():
            name = base + ("" if t == "f32" else t + "/") + "T1"
            b = runs.get(name)
            if not check(b is not None, "point %s in the results (%s)" % (name, sorted(runs))):
                continue
            check(not b.get("error_occurred"), "%s checked and timed" % name)
            check(b.get("kv_dtype") == code, "%s: kv_dtype counter %s" % (name, b.get("kv_dtype")))
            nbytes = 4 * 2 * 64 * 2 + 2 * 300 * row  # Q and O float32, K and V as stored
            check(b.get("bytes") == nbytes, "%s: bytes %s = %d" % (name, b.get("bytes"), nbytes))
            has = "kv_storage_err" in b and "kv_storage_err/tol" in b
            check(has == (t != "f32"), "%s: storage error counters %s" % (name, "present" if has else "absent"))
            if has:
                check(0 < b["kv_storage_err"] < 0.05, "%s: storage error %g" % (name, b["kv_storage_err"]))


ADJ_CFG = """[decode]
kernels = blocked
heads = 2
head_dim = 64
seq_len = 1
seq_kv = 8192
threads = 1
repetitions = 3
cold_inputs = true

[warm]
kernels = blocked
heads = 2
head_dim = 64
seq_len = 1
seq_kv = 256
threads = 1
repetitions = 3

[prefill]
kernels = blocked
heads = 2
head_dim = 64
seq_len = 256
threads = 1
repetitions = 3
"""
ADJ_SERVING_CFG = """[serve]
kernels = blocked
heads = 2
kv_heads = 2
head_dim = 64
causal = true
kv_lens = 8192 8192
window = 1023:0
page_size = 16
threads = 1
repetitions = 2
cold_inputs = true

[dense]
kernels = blocked
batch = 2
heads = 2
kv_heads = 2
head_dim = 64
seq_len = 1
seq_kv = 8192
causal = true
window = 1023:0
threads = 1
repetitions = 2
cold_inputs = true
"""
ADJ_KEYS = ("adj_bw_before_GB/s", "adj_bw_after_GB/s", "adj_bw_GB/s", "%adj_bw")


def adjacent(binary):
    """The adjacent bandwidth probe: every timed run (repetition) of a memory-bound point
    that reads DRAM (cold_inputs) carries the probe read right before and right after it,
    adj_bw = the better of the two, and %adj_bw = its GB/s as a % of that; a compute-bound
    point has none of them, nor a memory-bound one that fits the last-level cache, nor any
    point with --no-adjacent-probe or --no-probe."""
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "adj.ini")
        with open(path, "w") as f:
            f.write(ADJ_CFG)
        runs = {}
        for tag, extra in (("on", []), ("off", ["--no-adjacent-probe"]), ("noprobe", ["--no-probe"])):
            out = os.path.join(d, tag + ".json")
            r = subprocess.run([binary, "bench", "--config", path, "--out", out, "--progress",
                                "--benchmark_min_time=0.01"] + extra,
                               capture_output=True, text=True, timeout=600)
            check(r.returncode == 0, "%s: bench runs (%s)" % (tag, r.stderr.strip()[-300:]))
            if tag == "on":
                check("adjacent bw" in r.stderr, "progress lines show the adjacent bandwidth (%s)" % r.stderr[-300:])
            with open(out) as f:
                doc = json.load(f)
            runs[tag] = [b for b in doc["benchmarks"] if b.get("run_type") == "iteration"]
            if tag == "on":  # the scripts show the median %adj_bw of the memory-bound point
                med = [b for b in doc["benchmarks"] if b.get("aggregate_name") == "median" and "/Skv8192/" in b["name"]]
                sdir = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                                    "scripts")
                r = subprocess.run([sys.executable, os.path.join(sdir, "summary.py"), out], capture_output=True, text=True)
                row = [ln for ln in r.stdout.splitlines() if "Skv8192" in ln]
                check(r.returncode == 0 and "%adj" in r.stdout and med and row
                      and row[0].split()[-1] == "%.1f" % med[0].get("%adj_bw", -1),
                      "summary.py's %%adj column is the median %%adj_bw (%s)" % (row or r.stderr))
                csvp = os.path.join(d, "on.csv")
                r = subprocess.run([sys.executable, os.path.join(sdir, "compare.py"), out, out, "--csv", csvp],
                                   capture_output=True, text=True)
                with open(csvp) as f:
                    hdr = f.readline().strip().split(",")
                check(r.returncode == 0 and "%adj_bw" in hdr, "compare.py's CSV has %%adj_bw (%s)" % hdr)
        dec = [b for b in runs["on"] if "/Skv8192/" in b["name"]]
        warm = [b for b in runs["on"] if "/Skv256/" in b["name"] and "/Sq1/" in b["name"]]
        pre = [b for b in runs["on"] if "/Sq256/" in b["name"]]
        check(len(warm) == 3, "three repetitions of the warm decode point (%d)" % len(warm))
        for b in warm:  # 256 KiB of K/V: memory-bound by the roofline, but cache-resident
            check(b.get("memory_bound") == 1, "the warm decode point is memory-bound (%s)" % b.get("memory_bound"))
            check(not any(k in b for k in ADJ_KEYS) and "adj_bw_unavailable" not in b,
                  "no adjacent probe on a point that fits the last-level cache")
        check(len(dec) == 3 and len(pre) == 3, "three repetitions of each point (%d, %d)" % (len(dec), len(pre)))
        for b in dec:
            check(b.get("memory_bound") == 1, "the decode point is memory-bound (%s)" % b.get("memory_bound"))
            if not check(all(k in b for k in ADJ_KEYS), "decode repetition has %s (%s)" % (ADJ_KEYS, sorted(b))):
                continue
            before, after, near = b["adj_bw_before_GB/s"], b["adj_bw_after_GB/s"], b["adj_bw_GB/s"]
            check(before > 0 and after > 0, "both probes measured (%g, %g)" % (before, after))
            check(near == max(before, after), "adj_bw is the better probe (%g of %g, %g)" % (near, before, after))
            want = 100.0 * b["GB/s"] / near
            check(abs(b["%adj_bw"] - want) <= 1e-6 * want,
                  "%%adj_bw = 100 x GB/s / adj_bw (%g vs %g)" % (b["%adj_bw"], want))
        for b in pre:
            check(b.get("memory_bound") == 0, "the prefill point is compute-bound (%s)" % b.get("memory_bound"))
            check(not any(k in b for k in ADJ_KEYS), "no adjacent probe on a compute-bound point")
        for tag in ("off", "noprobe"):
            check(runs[tag] and not any(k in b for b in runs[tag] for k in ADJ_KEYS),
                  "%s: no adjacent probe counters" % tag)
        # A point's GB/s and %adj_bw count the bytes its roofline counts (roofline_bytes,
        # docs/benchmarking.md): a window of 1024 reads an eighth of each 8192-key cache, so
        # against the pool's (or a dense point's whole tensors') bytes the figures would be
        # about 8 times too high — the same batch as a serving point and as a dense one.
        spath, sout = os.path.join(d, "serve.ini"), os.path.join(d, "serve.json")
        with open(spath, "w") as f:
            f.write(ADJ_SERVING_CFG)
        r = subprocess.run([binary, "bench", "--config", spath, "--out", sout,
                            "--benchmark_min_time=0.01"], capture_output=True, text=True, timeout=600)
        check(r.returncode == 0, "serving: bench runs (%s)" % r.stderr.strip()[-300:])
        with open(sout) as f:
            srv = [b for b in json.load(f)["benchmarks"] if b.get("run_type") == "iteration"]
        check(len(srv) == 4 and all(k in b for b in srv for k in ADJ_KEYS + ("roofline_bytes",)),
              "serving and dense: adjacent probe and roofline_bytes on every repetition (%s)" % srv[:1])
        # each key a row sees, once per K/V head (K and V rows of 64 floats), and Q and O
        want_rb = 2 * 2 * 1024 * 2 * 64 * 4 + 2 * 2 * (64 + 64) * 4
        for b in srv if len(srv) == 4 and all("%adj_bw" in b for b in srv) else []:
            check(b["roofline_bytes"] == want_rb and b["roofline_bytes"] < b["bytes"] / 4,
                  "%s: the window's bytes, under a quarter of the tensors' (%g of %g bytes, want %g)"
                  % (b["name"], b["roofline_bytes"], b["bytes"], want_rb))
            gbs = b["roofline_bytes"] / (b["real_time"] * 1e-9 if b.get("time_unit") == "ns" else
                                         b["real_time"] * {"us": 1e-6, "ms": 1e-3, "s": 1.0}[b["time_unit"]]) / 1e9
            check(abs(b["GB/s"] - gbs) <= 1e-3 * gbs,
                  "%s: GB/s = roofline_bytes / time (%g vs %g)" % (b["name"], b["GB/s"], gbs))
            want = 100.0 * b["GB/s"] / b["adj_bw_GB/s"]
            check(abs(b["%adj_bw"] - want) <= 1e-6 * want,
                  "%s: %%adj_bw = 100 x roofline_bytes/s / adj_bw (%g vs %g)" % (b["name"], b["%adj_bw"], want))
        # Too little memory for the probe's buffer (the points' own rule): a note on stderr
        # and in the context, the sweep still runs, no adjacent counters.
        # The limit: what the cold point needs (its copies outgrow the LLC, so this depends
        # on the CPU; a run under a 1 MiB limit refuses it and says how much) plus 64 MiB,
        # over the 80% rule: the point fits, the probe's buffer (≥ 256 MiB) does not.
        out = os.path.join(d, "lowmem.json")
        r = subprocess.run([binary, "bench", "--config", path, "--out", out, "--benchmark_min_time=0.01"],
                           capture_output=True, text=True, timeout=600,
                           env=dict(os.environ, ATTNBENCH_MEMORY_LIMIT="1M"))
        need = re.search(r"Skv8192/\S* +ERROR: refused: needs ([\d.]+) MiB", r.stderr)
        check(need is not None, "low memory: the cold point is refused under 1 MiB (%s)" % r.stderr[-300:])
        limit = int((float(need.group(1)) + 64) / 0.8) + 1 if need else 200
        env = dict(os.environ, ATTNBENCH_MEMORY_LIMIT="%dM" % limit)
        r = subprocess.run([binary, "bench", "--config", path, "--out", out, "--benchmark_min_time=0.01"],
                           capture_output=True, text=True, timeout=600, env=env)
        check(r.returncode == 0, "low memory: bench runs (%s)" % r.stderr.strip()[-300:])
        check(re.search(r"adjacent bandwidth probe off \(needs [\d.]+ [MG]iB", r.stderr) is not None,
              "low memory: the note says why the probe is off (%s)" % r.stderr[-300:])
        with open(out) as f:
            doc = json.load(f)
        low = [b for b in doc["benchmarks"] if b.get("run_type") == "iteration"]
        check(low and not any(k in b for b in low for k in ADJ_KEYS), "low memory: no adjacent probe counters")
        flags = {"/".join(b["name"].split("/")[4:6]): b.get("adj_bw_unavailable") for b in low}
        check(flags == {"Sq1/Skv8192": 1, "Sq1/Skv256": None, "Sq256/Skv256": None},
              "low memory: adj_bw_unavailable on the memory-bound point only (%s)" % flags)
        for b in runs["on"]:
            check("adj_bw_unavailable" not in b, "probe on: no adj_bw_unavailable counter")


def interleave(binary):
    """--benchmark_enable_random_interleaving=true (Google Benchmark runs the points'
    repetitions in a random order): every point still has all its repetitions, its
    aggregates and its check, on inputs rebuilt whenever the sweep returns to it, and the
    memory-bound one its adjacent probe counters."""
    with tempfile.TemporaryDirectory() as d:
        path, out = os.path.join(d, "adj.ini"), os.path.join(d, "il.json")
        with open(path, "w") as f:
            f.write(ADJ_CFG)
        r = subprocess.run([binary, "bench", "--config", path, "--out", out, "--benchmark_min_time=0.01",
                            "--benchmark_enable_random_interleaving=true"],
                           capture_output=True, text=True, timeout=600)
        check(r.returncode == 0, "interleaved sweep runs (%s)" % r.stderr.strip()[-300:])
        with open(out) as f:
            bs = json.load(f)["benchmarks"]
        names = sorted({b["name"].rsplit("_", 1)[0] if b.get("run_type") == "aggregate" else b["name"] for b in bs})
        check(len(names) == 3, "three points (%s)" % names)
        for n in names:
            runs = [b for b in bs if b["name"] == n and b.get("run_type") == "iteration"]
            aggs = {b.get("aggregate_name") for b in bs if b.get("run_type") == "aggregate" and b["name"].startswith(n + "_")}
            check(len(runs) == 3 and not any(b.get("error_occurred") for b in runs),
                  "%s: three checked repetitions (%d)" % (n, len(runs)))
            check({"mean", "median", "stddev", "cv"} <= aggs, "%s: aggregates %s" % (n, sorted(aggs)))
            if "/Skv8192/" in n:
                check(all("%adj_bw" in b for b in runs), "%s: adjacent probe on every repetition" % n)


FILTER_CFG = """[s]
kernels = all
heads = 2
head_dim = 8
seq_len = 4, 8
causal = false, true
threads = 1, 2
"""


def dry_names(binary, cfg, *extra):
    r = subprocess.run([binary, "bench", "--config", cfg, "--dry-run"] + list(extra),
                       capture_output=True, text=True)
    lines = r.stdout.splitlines()
    return r, [ln.split()[0] for ln in lines[:-1]], lines[-1] if lines else ""


def filter_(binary):
    """--benchmark_filter matches the names users see (anchors work), --dry-run and the
    plan line apply it, a filter matching nothing (or not a regex) fails with no file."""
    with tempfile.TemporaryDirectory() as d:
        cfg = os.path.join(d, "f.ini")
        with open(cfg, "w") as f:
            f.write(FILTER_CFG)
        r, every, total = dry_names(binary, cfg)
        check(r.returncode == 0 and len(every) > 8, "unfiltered dry run lists the points (%s)" % r.stderr)
        check(total.startswith("%d points;" % len(every)), "unfiltered plan line counts every point (%s)" % total)
        t1 = [n for n in every if n.endswith("/T1")]
        check(t1 and len(t1) < len(every), "the config has T1 and T2 points")
        # '$' anchors at the end of the displayed name (no hidden /min_time:... suffix)
        r, names, total = dry_names(binary, cfg, "--benchmark_filter=/T1$")
        check(r.returncode == 0, "'/T1$' is accepted (%s)" % r.stderr.strip())
        check(names == t1, "'/T1$' selects exactly the T1 points (%d of %d, want %d)"
              % (len(names), len(every), len(t1)))
        check(total.startswith("%d points;" % len(t1)), "the dry run's plan line counts the filtered points (%s)" % total)
        # '^' anchors at the start: "^blocked/" but not "^locked/"
        r, names, _ = dry_names(binary, cfg, "--benchmark_filter=^blocked/.*/causal/T1$")
        want = [n for n in every if n.startswith("blocked/") and n.endswith("/causal/T1")]
        check(r.returncode == 0 and names == want and len(want) == 2, "'^blocked/.*/causal/T1$' selects %s (got %s)" % (want, names))
        r, names, _ = dry_names(binary, cfg, "--benchmark_filter=^locked/")
        check(r.returncode == 2 and not names, "'^locked/' matches nothing: exit 2 (got %d)" % r.returncode)
        # a leading '-' negates: the complement of '/T1$'
        r, names, _ = dry_names(binary, cfg, "--benchmark_filter=-/T1$")
        check(r.returncode == 0 and names == [n for n in every if n not in t1], "'-/T1$' selects the T2 points")
        r, names, _ = dry_names(binary, cfg, "--benchmark_filter=all")
        check(names == every, "'all' selects every point")
        # a filter that matches nothing: exit 2, a message, no results file, nothing run
        out = os.path.join(d, "none.json")
        for flt in ("nomatch", "/T3$", "-."):
            r = subprocess.run([binary, "bench", "--config", cfg, "--out", out, "--no-probe", "--quiet",
                                "--benchmark_min_time=0.001", "--benchmark_filter=" + flt],
                               capture_output=True, text=True, timeout=60)
            check(r.returncode == 2, "filter %r matching nothing exits 2 (got %d)" % (flt, r.returncode))
            check("matches none of the %d points" % len(every) in r.stderr,
                  "filter %r: the message says so (%s)" % (flt, r.stderr.strip()))
            check(not os.path.exists(out) and not os.path.exists(out + ".lock"),
                  "filter %r: no results file" % flt)
        r = subprocess.run([binary, "bench", "--config", cfg, "--out", out, "--benchmark_filter=(T1"],
                           capture_output=True, text=True)
        check(r.returncode == 2 and "not a valid regular expression" in r.stderr and not os.path.exists(out),
              "an invalid regex exits 2 with a message (%d: %s)" % (r.returncode, r.stderr.strip()))
        # a real run: only the selected points, counted in the plan line, in the file
        out = os.path.join(d, "sel.json")
        flt = "^blocked/.*/T1$|^naive/B1/H2/KV2/Sq8/Skv8/D8/causal/T1$"
        want = [n for n in every if re.search(flt, n)]
        r = subprocess.run([binary, "bench", "--config", cfg, "--out", out, "--no-probe",
                            "--benchmark_min_time=0.001", "--benchmark_filter=" + flt],
                           capture_output=True, text=True, timeout=120)
        check(r.returncode == 0, "a filtered run succeeds (%s)" % r.stderr.strip())
        check("%d points planned" % len(want) in r.stderr, "the plan line counts %d points (%s)"
              % (len(want), r.stderr.strip()))
        with open(out) as f:
            doc = json.load(f)
        got = [b["name"] for b in doc["benchmarks"]]
        check(got == want, "the results file has exactly the selected points (%s)" % got)
        check(doc["context"].get("benchmark_filter") == flt, "the context records the filter")


def strict_constant(c):
    raise ValueError("non-standard JSON constant %s" % c)


def results(path):
    with open(path) as f:
        text = f.read()
    try:  # strict JSON: no NaN / Infinity (jq and browsers reject them)
        json.loads(text, parse_constant=strict_constant)
    except ValueError as e:
        check(False, "results file is strict JSON (%s)" % e)
    doc = json.loads(text)
    ctx = doc["context"]
    for key in ("cpu_model", "isa", "topology", "hwloc_cores", "hwloc_pus", "hwloc_packages",
                "hwloc_numa_nodes", "l1d_bytes", "l2_bytes", "l3_bytes", "compiler", "cflags",
                "git_commit", "environment", "config", "threads_zero_means"):
        check(key in ctx and ctx[key] != "", "context has %s" % key)
    check(any(k.startswith("binding_T") for k in ctx), "context has the binding")
    check(any(k.startswith("peak_fma_gflops_") for k in ctx), "context has measured FMA peaks")
    check(ctx.get("peak_units", "").startswith("0 fp32-fma, 1 bf16-dot"),
          "context names the peak_unit codes (%s)" % ctx.get("peak_units"))
    for t in {int(b["kernel_threads"]) for b in doc["benchmarks"] if b.get("run_type") == "iteration"}:
        check("read_bandwidth_gbs_T%d" % t in ctx, "context has the read bandwidth at %d threads" % t)
    runs = [b for b in doc["benchmarks"] if b.get("run_type") == "iteration"]
    check(len(runs) > 0, "there are benchmark runs")
    check(not any(b.get("error_occurred") for b in runs), "no point failed its check")
    kernels = {b.get("label") for b in runs}
    check("blocked" in kernels, "the blocked kernel was benchmarked")
    check("reference" not in kernels, "kernels = all leaves out the reference")
    for b in runs:
        for c in ("GFLOP/s", "GB/s", "%peak", "B", "H", "KV", "Sq", "Skv", "Dqk", "Dv", "causal",
                  "kernel_threads", "flop", "bytes"):
            check(c in b, "%s has counter %s" % (b["name"], c))
        # f32 points are judged by the FP32 FMA peak (attn_peak_unit_for)
        check(b.get("peak_unit") == 0, "%s: peak_unit 0 (fp32-fma), got %s" % (b["name"], b.get("peak_unit")))
        if "GFLOP/s" in b and "flop" in b:
            # the rate is flop per iteration / seconds per iteration
            secs = b["real_time"] * {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1}[b["time_unit"]]
            expect = b["flop"] / secs / 1e9
            check(abs(b["GFLOP/s"] - expect) <= 1e-6 * expect + 1e-9,
                  "%s: GFLOP/s = flop / real time" % b["name"])
        for c in ("%roofline", "memory_bound", "roofline_GFLOP/s", "read_bw_GB/s", "peak_GFLOP/s"):
            check(c in b, "%s has counter %s" % (b["name"], c))
        if all(c in b for c in ("%roofline", "memory_bound", "read_bw_GB/s", "peak_GFLOP/s", "flop", "bytes")):
            # scored against the right limit, measured in this run at the point's threads
            bw_ctx = float(ctx.get("read_bandwidth_gbs_T%d" % b["kernel_threads"], "nan"))
            check(abs(b["read_bw_GB/s"] - bw_ctx) <= 0.051, "%s: bandwidth of its thread count (%s vs %s)"
                  % (b["name"], b["read_bw_GB/s"], bw_ctx))
            t_fma = b["flop"] / (b["peak_GFLOP/s"] * 1e9)
            t_mem = b["bytes"] / (b["read_bw_GB/s"] * 1e9)
            secs = b["real_time"] * {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1}[b["time_unit"]]
            expect = 100 * max(t_fma, t_mem) / secs
            check(abs(b["%roofline"] - expect) <= 1e-6 * expect, "%s: %%roofline = roofline time / time"
                  % b["name"])
            check(b["memory_bound"] == (1 if t_mem > t_fma else 0), "%s: the limit is the larger term" % b["name"])
            attain = min(b["peak_GFLOP/s"], b["flop"] / b["bytes"] * b["read_bw_GB/s"])
            check(abs(b["roofline_GFLOP/s"] - attain) <= 1e-9 * attain, "%s: attainable = min(peak, AI x bw)"
                  % b["name"])
            if b["Sq"] == 1:  # decode: ~1 flop per byte is below any ridge point
                check(b["memory_bound"] == 1, "%s: a decode point is bandwidth-bound" % b["name"])
        want = "%s/B%d/H%d/KV%d/Sq%d/Skv%d/D%d" % (b["label"], b["B"], b["H"], b["KV"], b["Sq"],
                                                  b["Skv"], b["Dqk"])
        check(b["name"].startswith(want), "%s: name matches its counters" % b["name"])
    aggs = {b.get("aggregate_name") for b in doc["benchmarks"] if b.get("run_type") == "aggregate"}
    check({"mean", "median", "stddev", "cv"} <= aggs, "repetitions give mean/median/stddev/cv")


CPU_KEYS = ("cpu_vendor", "cpu_family", "cpu_model_number", "cpu_stepping", "cpu_uarch", "cpu_hypervisor")


def cpu(binary, path):
    """The results context records vendor, family, model, stepping and the implied
    microarchitecture; `attnbench info` prints the same; on Linux x86 they are the
    kernel's /proc/cpuinfo fields."""
    with open(path) as f:
        ctx = json.load(f)["context"]
    for k in CPU_KEYS:
        check(ctx.get(k, "") != "", "context has %s" % k)
    r = subprocess.run([binary, "info", "--no-peak"], capture_output=True, text=True, timeout=60)
    check(r.returncode == 0, "info runs (%s)" % r.stderr.strip())
    line = [ln for ln in r.stdout.splitlines() if ln.startswith("cpu id:")]
    check(len(line) == 1, "info prints a 'cpu id:' line")
    if line and all(k in ctx for k in CPU_KEYS):
        check(("-> %s" % ctx["cpu_uarch"]) in line[0], "info names the uarch of the context (%s)" % line[0])
        if ctx["cpu_vendor"] in ("GenuineIntel", "AuthenticAMD", "HygonGenuine"):
            want = "%s family %s model %s stepping %s" % (ctx["cpu_vendor"], ctx["cpu_family"],
                                                          ctx["cpu_model_number"], ctx["cpu_stepping"])
            check(want in line[0], "info prints %s (%s)" % (want, line[0]))
    try:
        with open("/proc/cpuinfo") as f:
            first = f.read().split("\n\n")[0]
    except OSError:
        return
    fields = dict((a.strip(), b.strip()) for a, _, b in (ln.partition(":") for ln in first.splitlines()))
    if "vendor_id" in fields:
        check(fields["vendor_id"] == ctx.get("cpu_vendor"), "cpu_vendor is /proc/cpuinfo's vendor_id")
        check(fields.get("cpu family") == ctx.get("cpu_family"), "cpu_family is /proc/cpuinfo's")
        check(fields.get("model") == ctx.get("cpu_model_number"), "cpu_model_number is /proc/cpuinfo's")
        check(fields.get("stepping") == ctx.get("cpu_stepping"), "cpu_stepping is /proc/cpuinfo's")
        flags = fields.get("flags", "").split()
        check(("hypervisor" in flags) == (ctx.get("cpu_hypervisor") == "yes"), "cpu_hypervisor is the flag")


def scripts(path, sdir):
    py = "/usr/bin/python3"
    with tempfile.TemporaryDirectory() as d:
        r = subprocess.run([py, os.path.join(sdir, "plot.py"), path, "--out-dir", d],
                           capture_output=True, text=True)
        check(r.returncode == 0, "plot.py runs (%s)" % r.stderr.strip())
        pngs = [f for f in os.listdir(d) if f.endswith(".png")]
        check(sorted(p[p.rindex("-"):] for p in pngs) == ["-efficiency.png", "-gflops.png", "-roofline.png"],
              "plot.py writes gflops, efficiency and roofline PNGs (%s)" % pngs)
        for f in pngs:
            with open(os.path.join(d, f), "rb") as fh:
                check(fh.read(8) == b"\x89PNG\r\n\x1a\n", "%s is a PNG" % f)
        csvp = os.path.join(d, "r.csv")
        r = subprocess.run([py, os.path.join(sdir, "compare.py"), path, path, "--csv", csvp],
                           capture_output=True, text=True)
        check(r.returncode == 0, "compare.py runs (%s)" % r.stderr.strip())
        check("1.00x" in r.stdout, "a file compared with itself shows 1.00x")
        check("0 faster, 0 SLOWER" in r.stdout, "no change is flagged comparing a file with itself")
        r = subprocess.run([py, os.path.join(sdir, "compare.py"), path, path, "--by-shape"],
                           capture_output=True, text=True)
        check(r.returncode == 0 and "1.00x" in r.stdout and any(ln.startswith("shape ") for ln in r.stdout.splitlines()),
              "compare.py --by-shape matches by shape (%s)" % r.stderr.strip())
        with open(csvp) as f:
            lines = f.read().splitlines()
        check(lines and lines[0].startswith("file,name,kernel"), "CSV has a header")
        check(len(lines) > 2, "CSV has rows")
        r = subprocess.run([py, os.path.join(sdir, "summary.py"), path], capture_output=True, text=True)
        check(r.returncode == 0, "summary.py runs (%s)" % r.stderr.strip())
        check("best kernel" in r.stdout and "speedup" in r.stdout and "%roof" in r.stdout and "limit" in r.stdout,
              "summary has its columns")
        # A perturbed copy: one point 100x slower in every repetition must be flagged
        # (100x is beyond any noise a busy machine shows: flagged while cv < 35).
        with open(path) as f:
            doc = json.load(f)
        cvs = {b["run_name"]: b["real_time"] for b in doc["benchmarks"] if b.get("aggregate_name") == "cv"}
        target = min(cvs, key=cvs.get)
        for b in doc["benchmarks"]:
            if b.get("run_name") == target and b.get("aggregate_name") not in ("cv",):
                b["real_time"] *= 100
        slow = os.path.join(d, "slow.json")
        with open(slow, "w") as f:
            json.dump(doc, f)
        r = subprocess.run([py, os.path.join(sdir, "compare.py"), path, slow], capture_output=True, text=True)
        row = [ln for ln in r.stdout.splitlines() if ln.startswith(target + " ")]
        check(row and "SLOWER" in row[0], "a 100x slower point is flagged SLOWER (%s)" % row)
        bad = os.path.join(d, "bad.json")
        with open(bad, "w") as f:
            f.write("{not json")
        for s in ("plot.py", "compare.py", "summary.py"):
            args = [py, os.path.join(sdir, s), bad] + ([bad] if s == "compare.py" else [])
            r = subprocess.run(args, capture_output=True, text=True)
            check(r.returncode == 1 and "cannot read" in r.stderr, "%s reports an unreadable file" % s)


# ── synthetic results files: two machines with known limits ────────────────────────────
def synth_point(kernel, shape, threads, flop, nbytes, times, peak, bw, roofline_counters=True):
    """Google Benchmark JSON entries (repetitions, median, mean, cv) for one point, with
    the counters attnbench writes."""
    B, H, KV, Sq, Skv, D = shape
    name = "%s/B%d/H%d/KV%d/Sq%d/Skv%d/D%d/noncausal/T%d" % (kernel, B, H, KV, Sq, Skv, D, threads)
    t_roof = max(flop / (peak * 1e9), nbytes / (bw * 1e9))

    def entry(t, **kw):
        e = {"name": name, "run_name": name, "run_type": "iteration", "repetitions": len(times),
             "threads": 1, "iterations": 10, "real_time": t * 1e6, "cpu_time": t * 1e6, "time_unit": "us",
             "label": kernel, "B": B, "H": H, "KV": KV, "Sq": Sq, "Skv": Skv, "Dqk": D, "Dv": D,
             "causal": 0, "kernel_threads": threads, "flop": flop, "bytes": nbytes,
             "GFLOP/s": flop / t / 1e9, "GB/s": nbytes / t / 1e9, "%peak": 100 * flop / t / 1e9 / peak,
             "peak_GFLOP/s": peak}
        if roofline_counters:
            e.update({"%roofline": 100 * t_roof / t, "memory_bound": 1 if nbytes / bw > flop / peak else 0,
                      "roofline_GFLOP/s": flop / t_roof / 1e9, "read_bw_GB/s": bw})
        e.update(kw)
        return e

    out = [entry(t, repetition_index=i) for i, t in enumerate(times)]
    med = sorted(times)[len(times) // 2]
    mean = sum(times) / len(times)
    sd = (sum((t - mean) ** 2 for t in times) / (len(times) - 1)) ** 0.5
    out.append(entry(med, name=name + "_median", run_type="aggregate", aggregate_name="median",
                     aggregate_unit="time"))
    out.append(entry(mean, name=name + "_mean", run_type="aggregate", aggregate_name="mean",
                     aggregate_unit="time"))
    cv = entry(sd / mean, name=name + "_cv", run_type="aggregate", aggregate_name="cv",
               aggregate_unit="percentage")
    cv["real_time"] = cv["cpu_time"] = sd / mean
    out.append(cv)
    return out


def jitter(t):
    return [t * 0.99, t, t * 1.01]


# (kernel, shape, flop, bytes, time on A, time on B): A = 100 GFLOP/s, 20 GB/s; B = 80, 25.
SYNTH = [
    # prefill: FMA-bound on both (t_roof 0.01 / 0.0125 s); 80% and 40% of roofline
    ("flash__avx512", (1, 8, 8, 2048, 2048, 64), 1e9, 1e6, 0.0125, 0.03125),
    # decode: bandwidth-bound on both (t_roof 0.005 / 0.004 s); 50% on both
    ("flash__avx512", (1, 8, 8, 1, 32768, 128), 1e7, 1e8, 0.01, 0.008),
    # intensity 4.5: bandwidth-bound on A (ridge 5), FMA-bound on B (ridge 3.2)
    ("tiled__avx512", (1, 8, 8, 256, 256, 64), 4.5e8, 1e8, 0.00625, 0.00625),
]


def synth_file(path, machine, roofline_counters=True, extra=()):
    peak, bw, ctx = machine
    bench = []
    for kernel, shape, flop, nbytes, ta, tb in SYNTH:
        t = ta if ctx["cpu_uarch"] == "Zen 4" else tb
        bench += synth_point(kernel, shape, 2, flop, nbytes, jitter(t), peak, bw, roofline_counters)
    bench += list(extra)
    context = dict(ctx)
    context.update({"peak_fma_gflops_avx512f_T2": "%.1f" % peak, "read_bandwidth_gbs_T2": "%.1f" % bw})
    with open(path, "w") as f:
        json.dump({"context": context, "benchmarks": bench}, f)


MACHINE_A = (100.0, 20.0, {"cpu_model": "AMD EPYC", "cpu_vendor": "AuthenticAMD", "cpu_family": "25",
                           "cpu_model_number": "17", "cpu_stepping": "1", "cpu_uarch": "Zen 4",
                           "cpu_hypervisor": "yes", "host_name": "a"})
MACHINE_B = (80.0, 25.0, {"cpu_model": "Intel(R) Xeon(R) Processor", "cpu_vendor": "GenuineIntel",
                          "cpu_family": "6", "cpu_model_number": "143", "cpu_stepping": "8",
                          "cpu_uarch": "Sapphire Rapids", "cpu_hypervisor": "yes", "host_name": "b"})


def synthetic(sdir):
    py = "/usr/bin/python3"
    sys.path.insert(0, sdir)
    import attnresults
    import compare
    with tempfile.TemporaryDirectory() as d:
        a, b, b_old = (os.path.join(d, n) for n in ("a.json", "b.json", "b_old.json"))
        # an external baseline entry (counter baseline = 1 and a label) must be tolerated
        ext = synth_point("torch_sdpa", (1, 8, 8, 2048, 2048, 64), 2, 1e9, 1e6, jitter(0.02), 100.0, 20.0)
        for e in ext:
            e["baseline"] = 1
        # and one with nothing but a label, a time and its own counters
        ext.append({"name": "ort/attention", "run_name": "ort/attention", "run_type": "iteration",
                    "real_time": 3.0, "time_unit": "ms", "label": "onnxruntime", "baseline": 1,
                    "GFLOP/s": 12.5, "iterations": 5})
        synth_file(a, MACHINE_A, extra=ext)
        synth_file(b, MACHINE_B)
        synth_file(b_old, MACHINE_B, roofline_counters=False)  # files from before %roofline
        # the split is an exact product, per point, from the files' own limits
        ca, pa = attnresults.load(a)
        for path in (b, b_old):
            cb, pb = attnresults.load(path)
            for name, p in pa.items():
                if name not in pb:
                    continue
                sp, lim, eff = compare.decompose(p, ca, pb[name], cb)
                check(abs(sp - lim * eff) <= 1e-12 * sp, "%s: speedup = limit x efficiency exactly" % name)
                check(abs(sp - p.median_s / pb[name].median_s) <= 1e-12 * sp, "%s: speedup = tA / tB" % name)
        want = {  # speedup, limit ratio, efficiency ratio, limit on A, limit on B, %roofline A, B
            SYNTH[0]: ("0.40x", "0.80x", "0.50x", "FMA", "FMA", 80.0, 40.0),
            SYNTH[1]: ("1.25x", "1.25x", "1.00x", "bandwidth", "bandwidth", 50.0, 50.0),
            SYNTH[2]: ("1.00x", "0.89x", "1.12x", "bandwidth", "FMA", 80.0, 90.0),
        }
        for path in (b, b_old):
            cb, pb = attnresults.load(path)
            for row, (s_, l_, e_, lim_a, lim_b, ra, rb) in want.items():
                name = "%s/B%d/H%d/KV%d/Sq%d/Skv%d/D%d/noncausal/T2" % ((row[0],) + row[1])
                check(pa[name].limit(ca) == lim_a and pb[name].limit(cb) == lim_b,
                      "%s (%s): limits %s / %s (got %s / %s)" % (name, path, lim_a, lim_b,
                                                                pa[name].limit(ca), pb[name].limit(cb)))
                check(abs(pa[name].roofline_pct(ca) - ra) < 1e-9 and abs(pb[name].roofline_pct(cb) - rb) < 1e-9,
                      "%s (%s): %%roofline %.0f / %.0f" % (name, path, ra, rb))
            r = subprocess.run([py, os.path.join(sdir, "compare.py"), a, path], capture_output=True, text=True)
            check(r.returncode == 0, "compare.py on two machines runs (%s)" % r.stderr.strip())
            out = r.stdout
            for row, (s_, l_, e_, *_rest) in want.items():
                name = "%s/B%d/H%d/KV%d/Sq%d/Skv%d/D%d/noncausal/T2" % ((row[0],) + row[1])
                line = [ln for ln in out.splitlines() if ln.startswith(name + " ")]
                text = "%s = %s limit x %s efficiency" % (s_, l_, e_)
                check(line and text in " ".join(line[0].split()), "compare.py prints '%s' for %s (%s)" % (text, name, line))
            for text in ("Zen 4", "Sapphire Rapids", "AuthenticAMD family 25 model 17 stepping 1",
                         "GenuineIntel family 6 model 143 stepping 8"):
                check(text in out, "compare.py names the machines (%s)" % text)
            peak_row = [ln for ln in out.splitlines() if ln.startswith("FMA peak avx512f T2")]
            bw_row = [ln for ln in out.splitlines() if ln.startswith("read bandwidth T2")]
            check(peak_row and peak_row[0].split()[-2:] == ["100.0", "80.0"], "peaks side by side (%s)" % peak_row)
            check(bw_row and bw_row[0].split()[-2:] == ["20.0", "25.0"], "bandwidths side by side (%s)" % bw_row)
        for script, args in (("summary.py", [a]), ("compare.py", [a, b]), ("compare.py", [a, a, "--by-shape"]),
                             ("compare.py", [a, b, "--all", "--csv", os.path.join(d, "x.csv")])):
            r = subprocess.run([py, os.path.join(sdir, script)] + args, capture_output=True, text=True)
            check(r.returncode == 0, "%s %s tolerates external-baseline entries (%s)" % (script, args[1:], r.stderr.strip()))
        # summary: %roofline and the limit, not % of FMA peak, for decode
        r = subprocess.run([py, os.path.join(sdir, "summary.py"), b], capture_output=True, text=True)
        check(r.returncode == 0, "summary.py runs on the synthetic file (%s)" % r.stderr.strip())
        rows = {ln.split("  ")[0]: ln for ln in r.stdout.splitlines()}
        dec = [ln for k, ln in rows.items() if k.startswith("B1 H8 KV8 Sq1 Skv32768")]
        pre = [ln for k, ln in rows.items() if k.startswith("B1 H8 KV8 Sq2048")]
        check(dec and " 50.0 " in dec[0] and "bandwidth" in dec[0], "summary: decode at 50%% of its bandwidth roofline (%s)" % dec)
        check(pre and " 40.0 " in pre[0] and "FMA" in pre[0], "summary: prefill at 40%% of its FMA roofline (%s)" % pre)
        # plots: error bars = the repetitions' spread, one colour per kernel in every plot, T in the legend
        import plot
        figs = []
        real_close = plot.plt.close
        plot.plt.close = lambda fig=None: figs.append(fig) if hasattr(fig, "axes") else real_close(fig)
        try:
            check(plot.main([a, "--out-dir", d]) == 0, "plot.py runs on the synthetic file")
        finally:
            plot.plt.close = real_close
        pngs = sorted(f for f in os.listdir(d) if f.endswith(".png"))
        check(pngs == ["a-efficiency.png", "a-gflops.png", "a-roofline.png"], "plot.py writes its three PNGs (%s)" % pngs)
        colours = {}
        spans = []
        for fig in figs:
            for ax in fig.axes:
                for cont in ax.containers:
                    label = cont.get_label()
                    line = cont.lines[0]
                    kernel = label.split()[0]
                    check(" T2" in " " + label, "legend entry %r names the thread count" % label)
                    colours.setdefault(kernel, set()).add(matplotlib_colour(line.get_color()
                                                                              if line is not None else cont.lines[2][0].get_color()[0]))
                    for seg in cont.lines[2][0].get_segments():
                        spans.append((seg[0][1], seg[1][1]))
        for k, cs in colours.items():
            check(len(cs) == 1, "kernel %s has one colour in every plot (%s)" % (k, cs))
        check(len({next(iter(c)) for c in colours.values()}) == len(colours), "kernels have distinct colours")
        check(set(colours) == {"flash__avx512", "tiled__avx512", "torch_sdpa"}, "every kernel is plotted (%s)" % set(colours))
        # prefill on A: GFLOP/s of the repetitions 1e9 / (0.0125 x 1.01 .. 0.99) / 1e9
        lo, hi = 1 / (0.0125 * 1.01), 1 / (0.0125 * 0.99)
        check(any(abs(s0 - lo) < 1e-6 * lo and abs(s1 - hi) < 1e-6 * hi for s0, s1 in spans),
              "an error bar spans the repetitions' GFLOP/s (%.3f .. %.3f)" % (lo, hi))
        check(any(abs(s0 - 80 / 1.01) < 1e-6 and abs(s1 - 80 / 0.99) < 1e-6 for s0, s1 in spans),
              "an error bar spans the repetitions' %roofline")
        check(plot.kernel_color("my_plugin") == plot.kernel_color("my_plugin"), "a colour is a function of the name")
        r = subprocess.run([py, "-c", "import sys; sys.path.insert(0, %r); import plot; print(plot.kernel_color('my_plugin'))" % sdir],
                           capture_output=True, text=True, env=dict(os.environ, PYTHONHASHSEED="123"))
        check(r.stdout.strip() == plot.kernel_color("my_plugin"), "the colour of a new name is the same in every process")


def matplotlib_colour(c):
    import matplotlib.colors
    return matplotlib.colors.to_hex(c)


def main():
    mode = sys.argv[1]
    {"config-errors": config_errors, "refuse": refuse, "sigint": sigint, "cold": cold, "kv-types": kv_types, "results": results,
     "scripts": scripts, "outputs": outputs, "lock": lock, "diskfull": diskfull, "filter": filter_, "cpu": cpu, "adjacent": adjacent,
     "interleave": interleave,
     "synthetic": synthetic}[mode](*sys.argv[2:])
    if FAILED:
        print("%d checks failed" % len(FAILED))
        return 1
    print("all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
