# SPDX-License-Identifier: MIT
"""attnbench.benchmark(), info() and fma_peak(): the statistics are those of the samples,
the rates follow from attn.h's FLOP count, % of peak from the measured peak, the timing
honours repeats and min_time, and every wrong argument raises. Short runs only."""

import math
import sys
import time

import numpy as np

import attnbench as ab

FAILS = []


def expect(cond, what):
    if not cond:
        FAILS.append(what)
        print("FAIL:", what)


def raises(cls, fn, *args, contains="", **kw):
    try:
        fn(*args, **kw)
    except cls as e:
        expect(contains in str(e), f"{cls.__name__} message {str(e)!r} lacks {contains!r}")
        return
    except Exception as e:  # noqa: BLE001 - report the wrong exception
        expect(False, f"expected {cls.__name__}, got {type(e).__name__}: {e}")
        return
    expect(False, f"expected {cls.__name__}, nothing raised ({kw})")


def close(a, b, rel=1e-9):
    return abs(a - b) <= rel * max(abs(a), abs(b))


def test_info():
    m = ab.info()
    expect(isinstance(m, ab.MachineInfo), "info() type")
    expect(m.cpu and m.vendor and m.uarch, f"CPU names: {m}")
    expect(m.cpus >= 1 and m.cores >= 0, f"cpus {m.cpus}, cores {m.cores}")
    expect(all(isinstance(n, str) and n for n in m.isa), f"isa {m.isa}")
    for name in ("avx2", "avx512f", "neon"):  # a kernel needing an ISA runs iff the CPU has it
        ks = [k for k in ab.kernels() if k.isa == name]
        for k in ks:
            expect(k.available == (name in m.isa), f"{k.name} available={k.available}, isa "
                                                   f"{m.isa}")
    expect("scalar/T1" in m.fma_peak_gflops, f"peaks {m.fma_peak_gflops}")
    expect(all(v > 0 for v in m.fma_peak_gflops.values()), f"peaks {m.fma_peak_gflops}")
    expect(m.read_bandwidth_gbs is None, "bandwidth measured without being asked")
    expect(ab.info() is m, "info() not cached")
    expect(ab.fma_peak("scalar", 1) == m.fma_peak_gflops["scalar/T1"], "fma_peak memo")
    if "avx2" in m.isa:
        expect(ab.fma_peak("avx2", 1) > ab.fma_peak("scalar", 1),
               "the AVX2 FMA peak is not above the scalar one")
    if "avx512f" not in m.isa:
        expect(ab.fma_peak("avx512f", 1) == 0.0, "a peak for an ISA the CPU lacks")
    raises(ab.InvalidOptionError, ab.fma_peak, "sse", 1)
    raises(ab.InvalidOptionError, ab.fma_peak, "scalar", -1)
    raises(ab.InvalidOptionError, ab.fma_peak, "scalar", 2.0)
    # Above the kernels' thread cap: refused with the reason, not read as "no such ISA".
    raises(ab.InvalidOptionError, ab.fma_peak, "scalar", 10 ** 6, contains="out of range")
    mb = ab.info(bandwidth=True)
    expect(mb.read_bandwidth_gbs is not None and mb.read_bandwidth_gbs > 0.1,
           f"bandwidth {mb.read_bandwidth_gbs}")


def test_benchmark():
    rng = np.random.default_rng(1)
    b, h, sq, skv, d = 1, 4, 64, 96, 32
    q = rng.standard_normal((b, h, sq, d), dtype=np.float32)
    k = rng.standard_normal((b, h, skv, d), dtype=np.float32)
    v = rng.standard_normal((b, h, skv, d), dtype=np.float32)
    t0 = time.perf_counter()
    r = ab.benchmark(q, k, v, kernel="naive", repeats=7, min_time=0.05, threads=1)
    wall = time.perf_counter() - t0
    expect(isinstance(r, ab.BenchmarkResult) and r.kernel == "naive", f"result {r}")
    n = len(r.times)
    expect(n >= 7, f"{n} samples, repeats=7")
    expect(sum(r.times) * r.number >= 0.05 * 0.999, f"samples add up to less than min_time: "
                                                    f"{sum(r.times) * r.number}")
    expect(wall >= 0.05, f"benchmark returned after {wall} s < min_time")
    t = np.array(r.times)
    q1, q3 = np.percentile(t, [25, 75])
    expect(close(r.median, float(np.median(t))) and close(r.iqr, q3 - q1) and
           r.min == t.min() and close(r.mean, t.mean()), "statistics are not the samples'")
    expect(r.min <= r.median <= t.max() and r.iqr >= 0, "median outside the samples")
    expect(r.number >= 1, f"number {r.number}")
    flops = 4.0 * b * h * sq * skv * d  # no mask: every pair, Q·Kᵀ and P·V
    expect(close(r.flops, flops), f"flops {r.flops}, expected {flops}")
    expect(close(r.gflops, flops / r.median * 1e-9), "GFLOP/s is not flops / median")
    expect(r.peak_gflops and r.peak_gflops > 0, f"peak {r.peak_gflops}")
    expect(close(r.percent_of_peak, 100 * r.gflops / r.peak_gflops), "% of peak")
    expect("FP32 FMA" in r.peak_unit and "1 thread" in r.peak_unit, f"unit {r.peak_unit}")
    expect(r.threads == 1 and not r.fallback, f"threads {r.threads}, fallback {r.fallback}")
    expect(r.machine is ab.info(), "machine context is not info()")
    expect("GFLOP/s" in str(r) and "median" in str(r), f"str: {r}")
    # causal top-left on Sq < Skv: visible pairs only (row i sees i + 1 keys)
    rc = ab.benchmark(q, k, v, kernel="naive", is_causal=True, repeats=3, min_time=0.0)
    pairs = sum(i + 1 for i in range(sq))
    expect(close(rc.flops, 4.0 * b * h * pairs * d), f"causal flops {rc.flops}")
    expect(len(rc.times) == 3, f"{len(rc.times)} samples with min_time=0")
    # an option the kernel's own code lacks runs on the portable path, and says so
    for kern in ab.kernels():
        if kern.available and kern.name != "reference":
            rs = ab.benchmark(q, k, v, kernel=kern.name, softcap=30.0, repeats=1, min_time=0.0)
            expect(rs.fallback == ("softcap" not in kern.caps),
                   f"{kern.name} caps {kern.caps}: fallback {rs.fallback} with softcap")
    # the first call goes through attn_kernel_call: bad inputs are refused before timing
    bad = q.copy()
    bad[0, 0, 0, 0] = np.nan
    raises(ab.DomainError, ab.benchmark, bad, k, v, repeats=1, min_time=0.0)
    raises(ab.InvalidOptionError, ab.benchmark, q, k, v, repeats=0)
    raises(ab.InvalidOptionError, ab.benchmark, q, k, v, repeats=True)
    raises(ab.InvalidOptionError, ab.benchmark, q, k, v, min_time=-1)
    raises(ab.InvalidOptionError, ab.benchmark, q, k, v, min_time=math.inf)
    raises(ab.InvalidOptionError, ab.benchmark, q, k, v, return_lse=True)
    raises(ab.UnknownKernelError, ab.benchmark, q, k, v, kernel="nope")
    raises(ab.DtypeError, ab.benchmark, q.astype(np.float64), k, v)
    raises(ab.InvalidOptionError, ab.benchmark, q, k, v, threads=-3)


def main():
    test_info()
    test_benchmark()
    print(f"{len(FAILS)} failures" if FAILS else "attnbench benchmark: all tests passed")
    return 1 if FAILS else 0


if __name__ == "__main__":
    sys.exit(main())
