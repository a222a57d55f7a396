#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""`attnbench info` under OMP_NUM_THREADS above the thread cap (ATTN_MAX_THREADS = 1024):
one message naming OMP_NUM_THREADS and the cap, exit 1 — not a segfault in libgomp
(the FMA-peak probe used to start a parallel region of 100000 threads). --no-peak
measures nothing and still works. Usage: info_thread_cap.py PATH/TO/attnbench"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "cli"))
import clitest  # noqa: E402
from clitest import check, run  # noqa: E402

clitest.init()
for n in ("100000", "1025"):
    rc, out, err = run("info", env={"OMP_NUM_THREADS": n})
    check(rc == 1 and f"the OpenMP default of {n} threads (OMP_NUM_THREADS) exceeds the cap of 1024"
          in err and "--no-peak" in err and "GFLOP/s" not in out,
          f"info under OMP_NUM_THREADS={n}: a message and exit 1 ({rc}: {err.strip()[-300:]})")
rc, out, err = run("info", "--no-peak", env={"OMP_NUM_THREADS": "100000"})
check(rc == 0 and "cpu:" in out, f"info --no-peak under OMP_NUM_THREADS=100000 works ({rc}: {err.strip()})")
clitest.finish("info_thread_cap")
