#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""`attnbench run` outputs and limits (README "Reliability"):

* --out may replace only a regular file, or write through a symlink to one; a device
  node, FIFO, directory or dangling symlink is refused before any work (exit 1);
* --out and --lse may not be an input (same path, hard link or symlink; the options'
  arrays too): refused, input untouched; nor one file, however spelled;
* concurrent runs on one --out: each succeeds, the file is complete (last writer wins);
* SIGINT/SIGTERM while O is being written leave no temporary (and no O);
* error messages keep their reason with a 3000-character path;
* --threads is capped at ATTN_MAX_THREADS (1024) in run, check and bench;
* memory: inputs larger than memory are refused before anything is read (sparse files),
  and the full estimate (O, workspace, --check reference) before anything is computed;
  `check` reports pairs that would not fit as failures;
* a non-finite O from finite inputs is refused (exit 1, no file, the element named)
  unless --allow-nonfinite.
"""
import os
import signal
import stat
import subprocess
import time

import numpy as np

import clitest
from clitest import check, run

clitest.init()
rng = np.random.default_rng(11)


def f32(*shape):
    return rng.standard_normal(shape).astype(np.float32)


def temporaries(d):
    return [f for f in os.listdir(d) if ".tmp." in f or f.endswith(".lock")]


def read(path):
    with open(path, "rb") as f:
        return f.read()


with clitest.tempdir() as d:
    Q, K, V = (os.path.join(d, n) for n in ("q.npy", "k.npy", "v.npy"))
    np.save(Q, f32(1, 2, 6, 8))
    np.save(K, f32(1, 1, 9, 8))
    np.save(V, f32(1, 1, 9, 4))
    inputs = {p: read(p) for p in (Q, K, V)}

    def args(out, *extra):
        return ["run", "--kernel", "blocked", "--q", Q, "--k", K, "--v", V, "--out", out, "--quiet",
                *extra]

    good = os.path.join(d, "good.npy")
    rc, _, se = run(*args(good))
    check(rc == 0, f"good run ({rc}: {se})")
    want = np.load(good)

    # ── what --out may replace ──────────────────────────────────────────────────────────
    fifo = os.path.join(d, "fifo")
    os.mkfifo(fifo)
    dangling = os.path.join(d, "dangling")
    os.symlink(os.path.join(d, "nowhere.npy"), dangling)
    link_dir = os.path.join(d, "link_to_dir")
    os.symlink(d, link_dir)
    refused = [
        ("character device", "/dev/null", "is a character device"),
        ("FIFO", fifo, "is a FIFO"),
        ("directory", d, "is a directory"),
        ("symlink to a directory", link_dir, "is a symlink to a directory"),
        ("dangling symlink", dangling, "symlink to a missing file"),
    ]
    for what, out, msg in refused:
        t0 = time.time()
        rc, so, se = run(*args(out))
        check(rc == 1, f"--out {what}: exit 1 (got {rc}: {se.strip()})")
        check(se.startswith("attnbench run: cannot write O: ") and msg in se,
              f"--out {what}: message says {msg!r}: {se.strip()!r}")
        check(time.time() - t0 < 5, f"--out {what}: refused at once")
    check(stat.S_ISCHR(os.stat("/dev/null").st_mode), "/dev/null is still a character device")
    check(stat.S_ISFIFO(os.lstat(fifo).st_mode), "the FIFO is still a FIFO")
    check(os.path.islink(dangling) and not os.path.exists(os.path.join(d, "nowhere.npy")),
          "the dangling symlink is untouched and its target not created")
    check(not temporaries(d), f"no temporaries left: {temporaries(d)}")

    # A symlink to a regular file: the target is replaced, the link stays a link.
    target = os.path.join(d, "target.npy")
    with open(target, "wb") as f:
        f.write(b"old contents")
    link = os.path.join(d, "link.npy")
    os.symlink("target.npy", link)
    rc, _, se = run(*args(link))
    check(rc == 0, f"--out symlink to a regular file runs ({rc}: {se})")
    check(os.path.islink(link) and os.readlink(link) == "target.npy", "the symlink is kept")
    check(np.array_equal(np.load(target), want), "the symlink's target holds O")
    check(not temporaries(d), f"no temporaries left: {temporaries(d)}")

    # Concurrent runs on one --out: last writer wins, the file is always complete.
    shared = os.path.join(d, "shared.npy")
    procs = [subprocess.Popen([clitest.BIN, *args(shared)], stderr=subprocess.PIPE, text=True)
             for _ in range(4)]
    rcs = [p.wait(timeout=60) for p in procs]
    check(rcs == [0, 0, 0, 0], f"four concurrent runs on one --out succeed ({rcs})")
    check(np.array_equal(np.load(shared), want), "the shared output is complete and right")
    check(not temporaries(d), f"no temporaries left: {temporaries(d)}")

    # ── --out equal to an input ─────────────────────────────────────────────────────────
    hard = os.path.join(d, "hard_k.npy")
    os.link(K, hard)
    sym_v = os.path.join(d, "sym_v.npy")
    os.symlink(V, sym_v)
    for what, out, name in (("Q itself", Q, "Q input"), ("a hard link to K", hard, "K input"),
                            ("a symlink to V", sym_v, "V input"),
                            ("Q by another spelling", os.path.join(d, ".", "q.npy"), "Q input")):
        rc, _, se = run(*args(out))
        check(rc == 1 and f"is the same file as the {name}" in se,
              f"--out {what}: refused naming the {name} ({rc}: {se.strip()})")
    for p, data in inputs.items():
        check(read(p) == data, f"{os.path.basename(p)} is untouched")
    # The options' arrays are inputs too.
    sinks, mask = os.path.join(d, "sinks.npy"), os.path.join(d, "mask.npy")
    np.save(sinks, np.zeros(2, np.float32))
    np.save(mask, np.zeros((6, 9), np.float32))
    opt_inputs = {p: read(p) for p in (sinks, mask)}
    for flag, path, name in (("--sinks", sinks, "sinks input"), ("--mask", mask, "mask input")):
        rc, _, se = run(*args(path, flag, path))
        check(rc == 1 and f"is the same file as the {name}" in se,
              f"--out {flag}'s file: refused naming it ({rc}: {se.strip()})")
        rc, _, se = run(*args(os.path.join(d, "o_opt.npy"), flag, path, "--lse", path))
        check(rc == 1 and f"is the same file as the {name}" in se,
              f"--lse {flag}'s file: refused naming it ({rc}: {se.strip()})")
    for p, data in opt_inputs.items():
        check(read(p) == data, f"{os.path.basename(p)} is untouched")
    # O and the LSE in one file, new or not, however spelled: refused before any work.
    for out, lse in (("same_new.npy", "same_new.npy"), ("./same_sp.npy", "same_sp.npy"),
                     ("good.npy", "good.npy")):
        rc, _, se = run(*args(os.path.join(d, out), "--lse", os.path.join(d, lse)))
        check(rc == 1 and "--out and --lse name the same file" in se,
              f"--out {out} --lse {lse}: refused ({rc}: {se.strip()})")
    check(not os.path.exists(os.path.join(d, "same_new.npy")), "no O written for --out = --lse")
    check(np.array_equal(np.load(good), want), "an existing --out = --lse is untouched")

    # ── long paths keep the reason ──────────────────────────────────────────────────────
    deep = os.path.join(d, *(["x" * 99] * 30))  # ~3000 characters, directories missing
    check(len(deep) >= 3000, "the long path is 3000+ characters")
    rc, _, se = run(*args(os.path.join(deep, "o.npy")))
    check(rc == 1 and se.rstrip().endswith("No such file or directory") and "cannot write O" in se,
          f"3000-char --out: the reason survives ({se.strip()[-120:]!r})")
    rc, _, se = run(*["run", "--kernel", "blocked", "--q", os.path.join(deep, "q.npy"), "--k", K, "--v",
                      V, "--out", good])
    check(rc == 1 and "cannot open: No such file or directory" in se,
          f"3000-char --q: the reason survives ({se.strip()[-120:]!r})")

    # ── signals while O is written ──────────────────────────────────────────────────────
    # O of 48 MiB (Q 48 MiB, K and V one row): writing and fsync'ing it takes a while. The
    # process is stopped as soon as its temporary appears, then signalled.
    bigq, bigk, bigv = (os.path.join(d, n) for n in ("bq.npy", "bk.npy", "bv.npy"))
    np.save(bigq, f32(1, 1, 12288, 1024))
    np.save(bigk, f32(1, 1, 1, 1024))
    np.save(bigv, f32(1, 1, 1, 1024))
    bout = os.path.join(d, "bo.npy")
    sargs = [clitest.BIN, "run", "--kernel", "naive", "--q", bigq, "--k", bigk, "--v", bigv, "--out",
             bout, "--quiet"]
    caught = 0
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGINT, signal.SIGTERM):
        p = subprocess.Popen(sargs, stderr=subprocess.PIPE, text=True)
        seen_tmp = False
        deadline = time.time() + 60
        while p.poll() is None and time.time() < deadline:
            if any(".tmp." in f for f in os.listdir(d)):
                p.send_signal(signal.SIGSTOP)
                seen_tmp = True
                break
            time.sleep(0.0005)
        p.send_signal(sig)
        if seen_tmp:
            p.send_signal(signal.SIGCONT)
        _, se = p.communicate(timeout=60)
        if seen_tmp and p.returncode == 128 + sig:
            caught += 1
            check("interrupted" in se, f"signal {sig}: the interruption is reported ({se.strip()!r})")
            check(not os.path.exists(bout), f"signal {sig} during the write: no O")
        check(not temporaries(d), f"signal {sig}: no temporary left ({temporaries(d)})")
        if os.path.exists(bout):
            os.remove(bout)
    check(caught >= 2, f"at least two runs were signalled while writing O ({caught} of 4)")
    # ... and at random moments over a whole run.
    t0 = time.time()
    subprocess.run(sargs, check=True)
    whole = time.time() - t0
    expected = np.load(bout)
    os.remove(bout)
    for i in range(8):
        p = subprocess.Popen(sargs, stderr=subprocess.DEVNULL)
        time.sleep(rng.uniform(0, whole))
        p.send_signal(signal.SIGINT if i % 2 else signal.SIGTERM)
        p.wait(timeout=60)
        check(not temporaries(d), f"random signal {i}: no temporary left ({temporaries(d)})")
        if os.path.exists(bout):
            # The signal may land after the rename, even after the handlers were released
            # (then the default action ends the process: returncode −sig): any exit is
            # fine as long as an O that exists is the complete, right one.
            o_now = np.load(bout)
            check(o_now.shape == expected.shape and np.array_equal(o_now, expected),
                  f"random signal {i} (exit {p.returncode}): an O that exists is complete")
            os.remove(bout)
    for f in (bigq, bigk, bigv):
        os.remove(f)

    # ── threads ─────────────────────────────────────────────────────────────────────────
    cfg = os.path.join(d, "t.ini")
    with open(cfg, "w") as f:
        f.write("[s]\nkernels = blocked\nheads = 2\nhead_dim = 8\nseq_len = 4\n")
    for cmd in (args(good, "--threads", "1025"), ["check", "--quick", "--threads", "1025"],
                ["bench", "--config", cfg, "--dry-run", "--threads", "1025"]):
        rc, _, se = run(*cmd)
        check(rc == 2 and "out of range [0, 1024]" in se, f"{cmd[0]} --threads 1025 refused ({rc}: {se})")
    rc, _, se = run("bench", "--config", cfg, "--dry-run", "--threads", "1024")
    check(rc == 0, f"bench --threads 1024 accepted ({rc}: {se})")

    # ── memory ──────────────────────────────────────────────────────────────────────────
    # Three sparse files, each half of physical memory: refused before any data is read.
    with open("/proc/meminfo") as f:
        total = next(int(l.split()[1]) * 1024 for l in f if l.startswith("MemTotal:"))
    rows = total // 2 // (1024 * 4) + 1
    header = os.path.join(d, "hdr.npy")
    sparse = []
    for name in ("sq.npy", "sk.npy", "sv.npy"):
        path = os.path.join(d, name)
        with open(path, "wb") as f:
            np.lib.format.write_array_header_1_0(f, {"descr": "<f4", "fortran_order": False,
                                                     "shape": (1, 1, rows, 1024)})
            f.truncate(f.tell() + rows * 1024 * 4)
        sparse.append(path)
    t0 = time.time()
    rc, _, se = run("run", "--kernel", "blocked", "--q", sparse[0], "--k", sparse[1], "--v", sparse[2],
                    "--out", os.path.join(d, "never.npy"))
    took = time.time() - t0
    check(rc == 1 and "refused: reading Q, K and V needs" in se and "nothing was read" in se,
          f"inputs bigger than memory are refused ({rc}: {se.strip()})")
    check(took < 10, f"... at once ({took:.1f} s)")
    for p in sparse:
        os.remove(p)
    # A pipe cannot be sized up front: a header announcing more than the memory rule allows
    # is refused before its data is buffered, even while the data keeps coming.
    header = os.path.join(d, "header.npy")
    with open(header, "wb") as f:
        np.lib.format.write_array_header_1_0(f, {"descr": "<f4", "fortran_order": False,
                                                 "shape": (1, 1, 1 << 20, 1024)})
    feeder = subprocess.Popen(["sh", "-c", 'cat "$0"; exec cat /dev/zero', header],
                              stdout=subprocess.PIPE)
    t0 = time.time()
    p = subprocess.run([clitest.BIN, "run", "--kernel", "blocked", "--q", "/dev/stdin", "--k", K,
                        "--v", V, "--out", os.path.join(d, "never.npy")], stdin=feeder.stdout,
                       capture_output=True, text=True, timeout=120,
                       env=dict(os.environ, ATTNBENCH_MEMORY_LIMIT="64M"))
    took = time.time() - t0
    feeder.kill()
    feeder.wait()
    check(p.returncode == 1 and "from a pipe or device, more than this command may hold" in p.stderr,
          f"a 4 GiB shape streamed through a pipe is refused ({p.returncode}: {p.stderr.strip()})")
    check(took < 10, f"... before its data is read ({took:.1f} s)")
    # The full estimate (inputs pass, O/workspace/reference do not), under a 64 KiB budget.
    lq, lk, lv = (os.path.join(d, n) for n in ("lq.npy", "lk.npy", "lv.npy"))
    np.save(lq, f32(1, 1, 1024, 1))
    np.save(lk, f32(1, 1, 1, 1))
    np.save(lv, f32(1, 1, 1, 1024))
    rc, _, se = run("run", "--kernel", "blocked", "--q", lq, "--k", lk, "--v", lv, "--out",
                    os.path.join(d, "never.npy"), env={"ATTNBENCH_MEMORY_LIMIT": "64K"})
    check(rc == 1 and "refused: this run (Q, K, V, O, blocked's workspace) needs 4" in se,
          f"the full estimate refuses O of 4 MiB under a 64 KiB budget ({rc}: {se.strip()})")
    rc, _, se = run(*args(os.path.join(d, "never.npy")), env={"ATTNBENCH_MEMORY_LIMIT": "lots"})
    check(rc == 2 and "ATTNBENCH_MEMORY_LIMIT='lots'" in se, f"a malformed limit is refused ({se.strip()})")
    check(not os.path.exists(os.path.join(d, "never.npy")), "no output from refused runs")
    # check: the pairs that would not fit fail as "refused", the others pass.
    rc, so, se = run("check", "--quick", "--kernel", "blocked", env={"ATTNBENCH_MEMORY_LIMIT": "256K"})
    lines = so.splitlines()
    refusals = [l for l in lines if l.startswith("FAIL blocked ") and "refused: needs" in l]
    summary = lines[-1] if lines else ""
    check(rc == 1 and refusals, f"check under 256 KiB: some pairs refused ({rc}: {se.strip()})")
    check(f" {len(refusals)} failed," in summary and not summary.startswith("0 passed")
          and summary.endswith(" 0 inconclusive, 0 skipped, 0 fallback"),
          f"check under 256 KiB: only the refused pairs fail ({summary!r})")

    # ── non-finite output ───────────────────────────────────────────────────────────────
    # scale 1e38 overflows the scores (finite inputs). If the kernel refuses the input
    # domain up front instead, that is fine too; either way nothing is written.
    nf = os.path.join(d, "nf.npy")
    rc, _, se = run(*args(nf, "--scale", "1e38"))
    if "non-finite output" in se:
        check(rc == 1 and "O[" in se and "O not written" in se,
              f"non-finite O refused, the element named ({rc}: {se.strip()})")
        check(not os.path.exists(nf), "no O written for a non-finite result")
        rc, _, se = run(*args(nf, "--scale", "1e38", "--allow-nonfinite"))
        check(rc == 0 and os.path.exists(nf) and not np.isfinite(np.load(nf)).all(),
              f"--allow-nonfinite writes it ({rc}: {se.strip()})")
    else:
        print(f"note: scale 1e38 is refused up front ({se.strip()}); the non-finite scan is "
              "covered by test_util")
        check(rc != 0 and not os.path.exists(nf), "refused up front and nothing written")
    check(not temporaries(d), f"no temporaries left at the end ({temporaries(d)})")

clitest.finish("run_outputs")
