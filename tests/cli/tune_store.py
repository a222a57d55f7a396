# SPDX-License-Identifier: MIT
"""The tuning store (harness/tune/tunefile.h "The store", docs/reliability.md "The tuning
store"), end to end with tiny tune runs:

  * a tuning file that is a character device, a FIFO (also through a symlink at the
    default location), a directory or a 300 MB file fails run/check/bench and tune at
    once with a message saying what it is (exit 1), never hangs;
  * an XDG_CONFIG_HOME too long for the default path is named as such (tune: exit 2;
    bench: a note, built-in tiles), not "not set";
  * tune never replaces a file that is not a tuning file (a .npy, a text file): exit 1,
    the file unchanged;
  * two tune runs on one file for different kernels, at once, both keep their entries;
    a tune that finds the file locked waits, then merges into what the holder wrote;
  * SIGTERM / SIGINT during tune: exit 128 + signal, "interrupted", no temporary and no
    lock file left, the file unchanged;
  * records at the registry's limits (tune_plugin.c: a 64-character name, a 2^21-row
    register tile) are tuned, written with tiles in range, and read back by bench;
  * confirmation rounds do not spend the budget: a first group whose rounds outlast the
    whole --budget (tune_plugin_sleepy) leaves the second group its share;
  * a plug-in kernel that crashes or hangs, in a call or in its workspace function
    (tune_plugin.c), ends tune with the kernel, the
    shape and the class named, exit 1, the file not written and nothing left behind; a
    hang ends after --case-timeout seconds.
"""
import fcntl
import glob
import os
import re
import signal
import subprocess
import sys
import time

import clitest
from clitest import check

TINY = """[prefill]
kernels = blocked
heads = 2
head_dim = 64
seq_len = 64
"""

# A hang here is the failure being tested for: every command gets this many seconds.
TIMEOUT = 60


def run(*args, env=None, timeout=TIMEOUT):
    """attnbench with args and a timeout; (exit code, stdout, stderr, seconds); a command
    that does not finish in time is killed and reported as exit code None."""
    e = dict(os.environ)
    e.update(env or {})
    t0 = time.monotonic()
    try:
        p = subprocess.run([clitest.BIN, *map(str, args)], capture_output=True, text=True, env=e,
                           stdin=subprocess.DEVNULL, timeout=timeout)
        return p.returncode, p.stdout, p.stderr, time.monotonic() - t0
    except subprocess.TimeoutExpired as x:
        return None, x.stdout or "", x.stderr or "", time.monotonic() - t0


def popen(*args, env=None):
    e = dict(os.environ)
    e.update(env or {})
    return subprocess.Popen([clitest.BIN, *map(str, args)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=e, stdin=subprocess.DEVNULL)


def sections(path):
    with open(path) as f:
        return [line.strip()[1:-1] for line in f if line.startswith("[")]


def leftovers(d):
    return sorted(glob.glob(os.path.join(d, "*.tmp.*")) + glob.glob(os.path.join(d, ".attnbench.tmp.*")) +
                  glob.glob(os.path.join(d, "*.lock")))


def main():
    clitest.init()
    avail = [n for n, ok, _ in clitest.list_kernels() if ok]
    # The widest flash kernel with a tiled kernel of the same ISA (AMX has no tiled one).
    flash = [n for n in avail if n.startswith("flash__") and n.replace("flash__", "tiled__") in avail]
    if not flash:
        print("no flash kernel with a tiled twin runs here")
        return 77
    kernel = flash[-1]
    tiled = kernel.replace("flash__", "tiled__")
    with clitest.tempdir() as d:
        cfg = os.path.join(d, "tiny.ini")
        with open(cfg, "w") as f:
            f.write(TINY)
        xdg = os.path.join(d, "xdg")
        os.mkdir(xdg)
        env = {"XDG_CONFIG_HOME": xdg, "ATTNBENCH_TUNE_FILE": ""}

        slow = os.path.join(d, "slow.ini")  # ~0.1 s a call: tune runs for seconds
        with open(slow, "w") as f:
            f.write(TINY.replace("seq_len = 64", "seq_len = 1024").replace("heads = 2", "heads = 4"))

        def tune(budget="0.3", confirm="1", config=cfg):
            return ("tune", "--config", config, "--budget", budget, "--reps", "1", "--confirm", confirm,
                    "--threads", "1")

        # 1. Not a regular file, or too large: every command, at once, says what it is.
        fifo = os.path.join(d, "fifo.ini")
        os.mkfifo(fifo)
        big = os.path.join(d, "big.ini")
        with open(big, "wb") as f:
            f.truncate(300_000_000)  # sparse: 300 MB of NUL bytes
        cases = [("/dev/zero", "is a character device"), (fifo, "is a FIFO"), (d, "is a directory"),
                 (big, "is 300000000 bytes, more than the 1048576 allowed")]
        npy = os.path.join(d, "q.npy")
        import numpy as np
        np.save(npy, np.ones((1, 2, 4, 8), dtype=np.float32))
        readers = [("bench", "--config", cfg, "--dry-run"), ("check", "--quick", "--kernel", "blocked"),
                   ("run", "--kernel", "blocked", "--q", npy, "--k", npy, "--v", npy, "--out",
                    os.path.join(d, "o.npy"))]
        for path, what in cases:
            for cmd in readers:
                rc, out, err, dt = run(*cmd, "--tune-file", path, env=env)
                check(rc == 1 and what in err and dt < 20,
                      f"{cmd[0]} --tune-file {path}: exit 1, '{what}' (got {rc} in {dt:.1f} s: {err[-300:]!r})")
            rc, out, err, dt = run(*tune(), "--kernel", kernel, "--tune-file", path, env=env)
            want = what if path != big else "not a tuning file"
            check(rc == 1 and (want in err or what in err) and dt < 20,
                  f"tune --tune-file {path}: exit 1 (got {rc} in {dt:.1f} s: {err[-300:]!r})")
        # ... also at the default location, through a symlink (found, not named: still an error).
        default_dir = os.path.join(xdg, "attnbench")
        os.makedirs(default_dir, exist_ok=True)
        rc, out, err, _ = run(*tune("0.001", "0"), "--kernel", kernel, env=env)
        check(rc == 0, f"tune writes the default file (got {rc}: {err[-300:]!r})")
        defaults = glob.glob(os.path.join(default_dir, "tuning-*.ini"))
        check(len(defaults) == 1, f"one default file: {defaults}")
        if defaults:
            default = defaults[0]
            os.remove(default)
            for target, what in ((fifo, "is a FIFO"), ("/dev/zero", "is a character device")):
                os.symlink(target, default)
                rc, out, err, dt = run("bench", "--config", cfg, "--dry-run", env=env)
                check(rc == 1 and what in err and default in err and dt < 20,
                      f"a symlink to {target} at the default location: exit 1 (got {rc} in {dt:.1f} s: {err!r})")
                os.remove(default)
            os.mkdir(default)  # a directory at the default location
            for cmd in (("bench", "--config", cfg, "--dry-run"), tune()):
                rc, out, err, dt = run(*cmd, *(("--kernel", kernel) if cmd[0] == "tune" else ()), env=env)
                check(rc == 1 and "is a directory" in err and default in err,
                      f"{cmd[0]} with a directory at the default location: exit 1 (got {rc}: {err!r})")
            os.rmdir(default)
        os.remove(big)

        # 2. An XDG_CONFIG_HOME too long for the default path: named as such.
        long_env = {"XDG_CONFIG_HOME": "/" + "x" * 5000, "ATTNBENCH_TUNE_FILE": ""}
        rc, out, err, _ = run(*tune(), "--kernel", kernel, env=long_env)
        check(rc == 2 and "XDG_CONFIG_HOME is 5001 bytes long" in err and "not set" not in err,
              f"tune with a 5001-byte XDG_CONFIG_HOME: exit 2, says why (got {rc}: {err!r})")
        rc, out, err, _ = run("bench", "--config", cfg, "--dry-run", env=long_env)
        check(rc == 0 and "note: no default tuning file: XDG_CONFIG_HOME is 5001 bytes long" in err,
              f"bench with a 5001-byte XDG_CONFIG_HOME: a note, built-in tiles (got {rc}: {err!r})")

        # 3. tune never replaces a file that is not a tuning file.
        text = os.path.join(d, "notes.ini")
        with open(text, "w") as f:
            f.write("my notes\n")
        for path in (npy, text):
            with open(path, "rb") as f:
                before = f.read()
            rc, out, err, _ = run(*tune(), "--kernel", kernel, "--tune-file", path, env=env)
            with open(path, "rb") as f:
                after = f.read()
            check(rc == 1 and "is not a tuning file attnbench can read: refusing to replace it" in err
                  and after == before and "wrote" not in out,
                  f"tune --tune-file {os.path.basename(path)}: exit 1, file unchanged (got {rc}: {err[-300:]!r})")
            check("[1/" not in err, f"refused before the search: {err[-300:]!r}")

        # 4. Concurrent tunes of one file, different kernels: both entries survive.
        shared = os.path.join(d, "shared.ini")
        ps = [popen(*tune("1"), "--kernel", k, "--tune-file", shared, env=env)
              for k in (kernel, tiled)]
        results = [(p.wait(timeout=120), *p.communicate()) for p in ps]
        for k, (rc, out, err) in zip((kernel, tiled), results):
            check(rc == 0 and "wrote" in out, f"concurrent tune {k}: exit 0 (got {rc}: {err[-300:]!r})")
        got = sections(shared) if os.path.exists(shared) else []
        check(f"{kernel} prefill d64" in got and f"{tiled} prefill d64" in got,
              f"both concurrent runs' entries are in the file: {got}")
        check(not leftovers(d), f"no temporary or lock left: {leftovers(d)}")

        # 4b. A tune that finds the lock held waits for it, then merges into what the
        # holder wrote (here: another kernel's section added while it waited).
        lock = open(shared + ".lock", "w")
        fcntl.flock(lock, fcntl.LOCK_EX)
        p = popen(*tune(), "--kernel", kernel, "--tune-file", shared, env=env)
        time.sleep(3)  # long enough for the search (budget 0.3 s) to finish and wait
        still = p.poll() is None
        with open(shared) as f:
            cur = f.read()
        with open(shared, "w") as f:
            f.write(cur + "\n[someone_else prefill d128]\ntile_q = 8\ntile_kv = 32\n")
        fcntl.flock(lock, fcntl.LOCK_UN)
        lock.close()
        os.remove(shared + ".lock")
        rc = p.wait(timeout=120)
        out, err = p.communicate()
        check(still and rc == 0, f"tune waited for the lock, then wrote (waited {still}, got {rc}: {err[-300:]!r})")
        got = sections(shared)
        check({f"{kernel} prefill d64", f"{tiled} prefill d64", "someone_else prefill d128"} <= set(got),
              f"tune merged into what the lock holder wrote: {got}")

        # 5. SIGTERM / SIGINT during tune: exit 128 + signal, no temporary, no lock, the
        # file unchanged.
        with open(shared, "rb") as f:
            before = f.read()
        for sig in (signal.SIGTERM, signal.SIGINT):
            p = popen(*tune("30", config=slow), "--kernel", kernel, "--tune-file", shared, env=env)
            line = p.stderr.readline()  # the "N group(s), budget …" line: past the file checks
            line += p.stderr.readline()  # the first candidate's line: searching
            p.send_signal(sig)
            try:
                rc = p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()
                rc = None
            err = line + p.stderr.read()
            check(rc == 128 + sig, f"{sig.name}: exit {128 + sig} (got {rc}: {err[-300:]!r})")
            check("interrupted" in err and shared in err, f"{sig.name}: says so: {err[-300:]!r}")
            check(not leftovers(d), f"{sig.name}: no temporary or lock left: {leftovers(d)}")
            with open(shared, "rb") as f:
                check(f.read() == before, f"{sig.name}: the file is unchanged")
        # ... and while waiting for the lock (the lock file is the holder's: it stays).
        lock = open(shared + ".lock", "w")
        fcntl.flock(lock, fcntl.LOCK_EX)
        p = popen(*tune(), "--kernel", kernel, "--tune-file", shared, env=env)
        time.sleep(3)
        p.send_signal(signal.SIGTERM)
        rc = p.wait(timeout=30)
        check(rc == 143 and os.path.exists(shared + ".lock") and not glob.glob(shared + ".tmp.*"),
              f"SIGTERM while waiting for the lock: exit 143, the holder's lock kept (got {rc})")
        lock.close()
        os.remove(shared + ".lock")

        # 6. Records at the registry's limits are tuned and read back.
        plugin = os.environ.get("ATTNBENCH_TEST_TUNE_PLUGIN")
        if check(plugin and os.path.exists(plugin), f"the test plug-in is built: {plugin}"):
            limits = os.path.join(d, "limits.ini")
            long_name = "tune_plugin_sixty_four_characters_long_name_xxxxxxxxxxxxxxxxxxxx"
            huge = "tune_plugin_huge_register_tile"
            # Sq 2048: the candidates' tile_q (2^20, clamped to 2048) differ from the rule's.
            long_cfg = os.path.join(d, "long.ini")
            with open(long_cfg, "w") as f:
                f.write(TINY.replace("seq_len = 64", "seq_len = 2048"))
            rc, out, err, _ = run(*tune(config=long_cfg), "--plugin", plugin, "--kernel", long_name, "--kernel", huge,
                                  "--tune-file", limits, env=env)
            check(rc == 0, f"tune of the plug-in's kernels: exit 0 (got {rc}: {err[-400:]!r})")
            got = sections(limits) if os.path.exists(limits) else []
            check(f"{long_name} prefill d64" in got and f"{huge} prefill d64" in got,
                  f"both written, the 64-character name whole: {got}")
            if os.path.exists(limits):
                with open(limits) as f:
                    tiles = [int(v) for v in re.findall(r"^tile_(?:q|kv) = (-?\d+)$", f.read(), flags=re.M)]
                check(tiles and all(1 <= t <= 1 << 20 for t in tiles), f"tiles in 1..2^20: {tiles}")
            for extra in (("--plugin", plugin), ()):
                rc, out, err, _ = run("bench", *extra, "--config", cfg, "--dry-run", "--tune-file", limits,
                                      env=env)
                check(rc == 0 and "using tuning file" in err,
                      f"bench {'with' if extra else 'without'} the plug-in reads the file back (got {rc}: {err!r})")

            # 7. Confirmation rounds are outside the budget: tune_plugin_sleepy's 99 rounds of
            # the rule (~10 ms) against tile_q 128 (~5 ms), ~1.5 s, outlast the whole 1 s
            # budget, and the second group still gets its share (about half of it: ~10
            # candidates of ~40 ms), not the rule's tiles alone (1 candidate).
            two_cfg = os.path.join(d, "two-classes.ini")
            with open(two_cfg, "w") as f:
                f.write(TINY.replace("seq_len = 64", "seq_len = 2048")
                        + TINY.replace("[prefill]", "[prefill128]").replace("head_dim = 64", "head_dim = 128")
                        .replace("seq_len = 64", "seq_len = 2048"))
            rc, out, err, _ = run("tune", "--config", two_cfg, "--budget", "1", "--reps", "1", "--confirm",
                                  "99", "--threads", "1", "--plugin", plugin, "--kernel", "tune_plugin_sleepy",
                                  "--tune-file", os.path.join(d, "confirm.ini"), env=env)
            timed = [len(re.findall(rf"^\[{g}/2 \d+/\d+\] ", err, flags=re.M)) for g in (1, 2)]
            confirmed = re.findall(r"median of 99 alternated rounds", out)
            check(rc == 0 and len(confirmed) == 2 and timed[0] >= 3 and timed[1] >= 3,
                  f"the second group's search is not cut short by the first's confirmation: candidates "
                  f"timed per group {timed}, confirmed {len(confirmed)} of 2 (exit {rc}: {err[-300:]!r})")

            # 8. A plug-in kernel that crashes or hangs is named; tune ends, exit 1, no file.
            bad_out = os.path.join(d, "misbehaving.ini")
            before = leftovers(d)
            asan = {"ASAN_OPTIONS": "handle_segv=0:handle_sigbus=0"}  # the guard's own handler
            for kern, extra, phrase in (("tune_plugin_segv", (), "was killed by SIGSEGV"),
                                        ("tune_plugin_hang", ("--case-timeout", "2"),
                                         "did not return within 2 s"),
                                        ("tune_plugin_ws_hang", ("--case-timeout", "2"),
                                         "did not return within 2 s")):
                rc, out, err, dt = run(*tune(), "--plugin", plugin, "--kernel", kern, *extra,
                                       "--tune-file", bad_out, env={**env, **asan}, timeout=30)
                named = f"attnbench tune: kernel {kern} on B1 H2 KV2 Sq64 Skv64 D64 (prefill d64) {phrase}"
                check(rc == 1 and named in err and not os.path.exists(bad_out)
                      and leftovers(d) == before and dt < 25,
                      f"tune of {kern}: exit 1 naming it (got {rc} in {dt:.1f} s: {err[-300:]!r})")
            rc, out, err, _ = run(*tune(), "--kernel", kernel, "--case-timeout", "0", "--tune-file",
                                  bad_out, env=env)
            check(rc == 2 and "--case-timeout 0" in err, f"tune --case-timeout 0: exit 2 (got {rc}: {err!r})")
    return clitest.finish("tune_store")


if __name__ == "__main__":
    sys.exit(main())
