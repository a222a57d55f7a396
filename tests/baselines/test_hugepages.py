#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""The baselines' inputs on huge pages (baselines/external/hugepages.py, docs/baselines.md):

  test_hugepages.py module   load_npy / copy / empty: the values of the file, a 2 MiB-aligned
                             buffer advised for huge pages from 2 MiB on (ordinary memory
                             below), a truncated file refused; with transparent huge pages
                             in "madvise" mode the kernel backs the advised buffer with huge
                             pages (AnonHugePages grows) and an ordinary buffer of the same
                             size without them (the control: the measurement can fail); where
                             MADV_HUGEPAGE does not exist the module falls back silently and
                             says so (advised() false).
  test_hugepages.py runner   attn_baseline.py run on a 4 MiB problem records huge_pages true
                             (and AnonHugePages) in its result's info, on a small one false.
"""
import json
import mmap
import os
import subprocess
import sys
import tempfile

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXT = os.path.join(ROOT, "baselines", "external")
sys.path.insert(0, EXT)
import hugepages  # noqa: E402

MIB = 1 << 20
FAILED = []


def check(cond, what):
    if not cond:
        FAILED.append(what)
        print("FAIL:", what)
    return cond


def thp_mode():
    try:
        with open("/sys/kernel/mm/transparent_hugepage/enabled") as f:
            return f.read().split("[")[1].split("]")[0]
    except (OSError, IndexError):
        return None


def backed_kib(fill):
    """AnonHugePages growth (KiB) while fill() allocates and touches a buffer it returns."""
    before = hugepages.anon_huge_kib()
    keep = fill()
    after = hugepages.anon_huge_kib()
    del keep
    return None if before is None or after is None else after - before


def module():
    rng = np.random.default_rng(1)
    with tempfile.TemporaryDirectory() as d:
        big = rng.standard_normal((8, 256, 512)).astype(np.float32)  # 4 MiB
        small = rng.standard_normal((4, 16)).astype(np.float32)
        pb, ps = os.path.join(d, "big.npy"), os.path.join(d, "small.npy")
        np.save(pb, big)
        np.save(ps, small)
        a = hugepages.load_npy(pb)
        check(a.shape == big.shape and a.dtype == big.dtype and np.array_equal(a, big),
              "load_npy gives the file's values")
        check(a.flags.c_contiguous and a.flags.writeable, "a writable C-order array")
        check(a.ctypes.data % (2 * MIB) == 0, "a large buffer is 2 MiB-aligned")
        has_flag = hasattr(mmap, "MADV_HUGEPAGE")
        check(hugepages.advised() == has_flag, "advised() says whether it was advised")
        s = hugepages.load_npy(ps)
        check(np.array_equal(s, small) and isinstance(s.base, (type(None), np.ndarray)),
              "a small file: ordinary memory")
        check(hugepages.advised() == has_flag, "a small buffer does not count")
        c = hugepages.copy(big.transpose(0, 2, 1))
        check(c.flags.c_contiguous and np.array_equal(c, big.transpose(0, 2, 1)),
              "copy() is a C-order copy with the values")
        with open(pb, "rb") as f:
            cut = f.read()[:-100]
        with open(pb, "wb") as f:
            f.write(cut)
        try:
            hugepages.load_npy(pb)
            check(False, "a truncated .npy is refused")
        except ValueError as e:
            check("truncated" in str(e), "the truncated file is named: %s" % e)
    mode = thp_mode()
    if mode == "madvise" and has_flag:
        n = 16 * MIB

        def advised_buf():
            x = hugepages.empty(n, np.uint8)
            x[:] = 1
            return x

        def plain_buf():  # an anonymous mapping without the advice (NumPy's own large
            m = mmap.mmap(-1, n)  # allocations carry it when its hugepage setting is on)
            x = np.frombuffer(m, np.uint8)
            x[:] = 1
            return x

        got = backed_kib(advised_buf)
        control = backed_kib(plain_buf)
        print("AnonHugePages growth: advised %s KiB, ordinary %s KiB" % (got, control))
        if got is not None:
            check(got >= 8 * 1024, "the advised 16 MiB buffer is backed by huge pages")
            check(control < 4 * 1024, "the control (no advice) is not: the measurement can fail")
    else:
        print("transparent huge pages: %s (the backing is measured in madvise mode only)" % mode)
    # the fallback: no MADV_HUGEPAGE (another OS) -> ordinary memory, advised() false
    saved = getattr(mmap, "MADV_HUGEPAGE", None)
    if saved is not None:
        del mmap.MADV_HUGEPAGE
    try:
        hugepages._state.update(large=0, advised=0)
        x = hugepages.copy(np.arange(MIB, dtype=np.float32))  # 4 MiB
        check(np.array_equal(x, np.arange(MIB, dtype=np.float32)), "the fallback's values")
        check(hugepages.advised() is False, "without MADV_HUGEPAGE: advised() false")
    finally:
        if saved is not None:
            mmap.MADV_HUGEPAGE = saved


def runner():
    rng = np.random.default_rng(2)
    for heads, seq, want in ((8, 512, True), (2, 16, False)):
        with tempfile.TemporaryDirectory() as d:
            paths = {}
            for t in "qkv":  # 8 x 512 x 128 float32 = 2 MiB each
                paths[t] = os.path.join(d, t + ".npy")
                np.save(paths[t], rng.standard_normal((1, heads, seq, 128)).astype(np.float32))
            res = os.path.join(d, "r.json")
            r = subprocess.run([sys.executable, os.path.join(EXT, "attn_baseline.py"), "run",
                                "--baseline", os.path.join(ROOT, "tests", "baselines",
                                                           "numpy_attention.py"),
                                "--q", paths["q"], "--k", paths["k"], "--v", paths["v"],
                                "--out", os.path.join(d, "o.npy"), "--json", res,
                                "--min-time", "0", "--threads", "1"],
                               capture_output=True, text=True)
            if not check(r.returncode == 0, "the runner ran: %s" % r.stderr):
                continue
            info = json.load(open(res))["info"]
            print("H%d S%d: huge_pages %s, anon_huge_kib %s" % (heads, seq, info["huge_pages"],
                                                               info["anon_huge_kib"]))
            check(info["huge_pages"] is (want and hasattr(mmap, "MADV_HUGEPAGE")),
                  "huge_pages recorded (%s for %s inputs)" % (want, "2 MiB" if want else "small"))
            check("anon_huge_kib" in info, "AnonHugePages recorded")


if __name__ == "__main__":
    {"module": module, "runner": runner}[sys.argv[1]]()
    print("FAILED: %s" % FAILED if FAILED else "ok")
    sys.exit(1 if FAILED else 0)
