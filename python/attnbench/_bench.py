# SPDX-License-Identifier: MIT
"""benchmark() and info(): timing a kernel from Python, and the machine it ran on."""

import ctypes
import os
import platform
from dataclasses import dataclass, field
from typing import Any, Dict, Optional, Tuple

import numpy as np

from . import _api
from ._api import InvalidOptionError, _native, _raise
from ._attention import ArrayLike, _checked_native, default_kernel
from ._layouts import KernelArg, problem_of

_ISA_AVX2, _ISA_AVX512F, _ISA_NEON = 1 << 0, 1 << 1, 1 << 2  # attn.h ATTN_ISA_*
_CAP_THREADS = 1 << 4
_CAP_COMPUTE = {"bf16": 1 << 20, "f16": 1 << 21, "int8": 1 << 22}  # ATTN_CAP_COMPUTE_*
_MAX_SAMPLES = 100000


def _isa_names(bits: int) -> str:
    buf = ctypes.create_string_buffer(256)
    _native().attnpy_isa_names(bits, buf, len(buf))
    return buf.value.decode()


_peaks: Dict[Tuple[int, int], float] = {}


def fma_peak(isa: str = "best", threads: int = 1) -> float:
    """The measured FP32 FMA peak in GFLOP/s (harness/machine/peak, as `attnbench info`)
    of one ISA ("scalar", "avx2", "avx512f", "neon", or "best": this CPU's widest) on
    `threads` threads (0 = the OpenMP default). Measured once per (ISA, threads), ~0.3 s;
    0.0 when the CPU lacks the ISA."""
    bits = {"scalar": 0, "avx2": _ISA_AVX2, "avx512f": _ISA_AVX512F, "neon": _ISA_NEON}
    if isa == "best":
        cpu = info().isa_bits
        isa = next((n for n in ("avx512f", "avx2", "neon") if cpu & bits[n]), "scalar")
    if isa not in bits:
        raise InvalidOptionError(f"isa: {isa!r}, expected one of best, {', '.join(bits)}")
    t = _api._int_option(threads, "threads")
    if t < 0:
        raise InvalidOptionError(f"threads: {t} is negative")
    return _peak(bits[isa], t)


def _peak(bits: int, threads: int) -> float:
    key = (bits, threads)
    if key not in _peaks:
        gflops, err = ctypes.c_double(), ctypes.create_string_buffer(256)
        rc = _native().attnpy_fma_peak(bits, threads, ctypes.byref(gflops), err, len(err))
        if rc != _api._OK:
            _raise(rc, err.value.decode(errors="replace"))
        _peaks[key] = gflops.value
    return _peaks[key]


@dataclass(frozen=True)
class MachineInfo:
    """What info() reports: the CPU and the yardsticks of "% of peak"."""
    cpu: str                  # the model name the OS reports (/proc/cpuinfo), else platform's
    vendor: str               # "GenuineIntel", "AuthenticAMD", ...; cpu_ident.h
    uarch: str                # "Zen 4", "Sapphire Rapids", ... or "unknown"
    family: int
    model: int
    stepping: int
    hypervisor: bool          # running under a hypervisor (cpuid says so)
    isa: Tuple[str, ...]      # ATTN_ISA_* names this CPU has ("avx2", "avx512f", ...)
    isa_bits: int
    cores: int                # physical cores this process may run on (0 = unknown)
    cpus: int                 # logical CPUs this process may run on
    l1d_bytes: int            # one core's L1d (0 = unknown)
    l2_bytes: int             # one core's L2 (0 = unknown)
    fma_peak_gflops: Dict[str, float] = field(default_factory=dict)
    # FP32 FMA peak by "<isa>/T<threads>" (widest ISA and scalar; 1 thread and every core)
    read_bandwidth_gbs: Optional[float] = None  # best read pass, GB/s (info(bandwidth=True))


_info: Optional[MachineInfo] = None
_bandwidth: Optional[float] = None


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.split(":")[0].strip() in ("model name", "Model"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def info(bandwidth: bool = False, peaks: bool = True) -> MachineInfo:
    """The machine: CPU, ISAs, cores and caches, and (peaks=True) the measured FP32 FMA
    peaks of its widest ISA and of scalar code on 1 thread and on every core (~1–2 s the
    first time, then cached). bandwidth=True also measures the read bandwidth (a 256 MiB
    buffer, 3 passes, every core; cached)."""
    global _info, _bandwidth
    if _info is None:
        ints = (ctypes.c_int64 * 8)()
        vendor, uarch = ctypes.create_string_buffer(64), ctypes.create_string_buffer(96)
        _native().attnpy_machine(ints, vendor, len(vendor), uarch, len(uarch))
        bits = int(ints[0])
        names = _isa_names(bits)
        cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (
            os.cpu_count() or 0)
        _info = MachineInfo(_cpu_model(), vendor.value.decode(), uarch.value.decode(),
                            int(ints[4]), int(ints[5]), int(ints[6]), bool(ints[7]),
                            tuple(n for n in names.split() if n != "none"), bits,
                            int(ints[1]), cpus, int(ints[2]), int(ints[3]))
    peak = dict(_info.fma_peak_gflops)
    if peaks and not peak:
        best = next((b for b in (_ISA_AVX512F, _ISA_AVX2, _ISA_NEON) if _info.isa_bits & b), 0)
        for bits in sorted({best, 0}, reverse=True):
            for t in sorted({1, max(_info.cores, 1)}):
                peak[f"{_isa_names(bits) if bits else 'scalar'}/T{t}"] = _peak(bits, t)
    if bandwidth and _bandwidth is None:
        fastest, median = ctypes.c_double(), ctypes.c_double()
        rc = _native().attnpy_bandwidth(256 << 20, max(_info.cores, 1), 3,
                                        ctypes.byref(fastest), ctypes.byref(median))
        if rc != _api._OK:
            _raise(rc, "the read-bandwidth probe failed (allocation or validation)")
        _bandwidth = fastest.value
    if peak != _info.fma_peak_gflops or _bandwidth != _info.read_bandwidth_gbs:
        _info = MachineInfo(**{**_info.__dict__, "fma_peak_gflops": peak,
                               "read_bandwidth_gbs": _bandwidth})
    return _info


@dataclass(frozen=True)
class BenchmarkResult:
    """What benchmark() measured. times are seconds per call, one per sample (each sample
    times `number` consecutive calls); the statistics are over those samples."""
    kernel: str
    times: Tuple[float, ...]
    number: int               # calls per sample
    median: float
    iqr: float                # 75th − 25th percentile of times
    min: float
    mean: float
    flops: float              # useful FLOPs of one call (attn.h attn_flops)
    gflops: float             # flops / median / 1e9
    peak_gflops: Optional[float]     # the yardstick (None: no probe for that unit)
    percent_of_peak: Optional[float]
    peak_unit: str            # which unit the yardstick measures, or why there is none
    threads: int              # threads the kernel was given (0 = OpenMP default)
    fallback: bool            # the shared portable path ran (an option the kernel lacks)
    compute: str
    kv_dtype: str
    machine: MachineInfo
    layout: str               # "dense", "ragged" (cu_seqlens_q=, cu_seqlens_k=) or "paged"
    tokens: int               # query tokens of one call (rows of O per head)
    tokens_per_s: float       # tokens / median
    kv_bytes: int             # K and V bytes one call reads, as stored (a serving batch: each
                              # key some row of its sequence can see, once; dense: every key)
    kv_gbs: float             # kv_bytes / median / 1e9

    def __str__(self) -> str:
        pk = (f", {self.percent_of_peak:.1f}% of {self.peak_unit}"
              if self.percent_of_peak is not None else f" ({self.peak_unit})")
        return (f"{self.kernel}: median {self.median * 1e6:.2f} us (IQR {self.iqr * 1e6:.2f} "
                f"us, min {self.min * 1e6:.2f} us; {len(self.times)} samples x {self.number} "
                f"calls), {self.gflops:.2f} GFLOP/s{pk}" + (
                    f"; {self.layout}: {self.tokens_per_s:.4g} tokens/s, K/V {self.kv_gbs:.3g} GB/s"
                    if self.layout != "dense" else ""))


def benchmark(q: ArrayLike, k: ArrayLike, v: ArrayLike, *, kernel: KernelArg = None,
              repeats: int = 20, min_time: float = 0.2, threads: Optional[int] = None,
              **options: Any) -> BenchmarkResult:
    """Times attention(q, k, v, kernel=kernel, **options) (its problem arguments; no
    return_lse) — or, with cu_seqlens_q= and cu_seqlens_k=, attention_varlen(q, k, v, ...),
    with block_table= and cache_seqlens=, attention_paged(q, k_cache, v_cache, ...). The
    call is checked and run once first (validation, warm-up); then at least `repeats`
    samples are timed, together at least min_time seconds. Returns a BenchmarkResult with
    median, IQR, min, mean, GFLOP/s and % of the FP32 FMA peak (and, for a layout, tokens/s
    and K/V GB/s)."""
    if "return_lse" in options:
        raise InvalidOptionError("benchmark: return_lse= is not timed (the LSE is not written)")
    if isinstance(repeats, (bool, np.bool_)) or not isinstance(repeats, int) or not (
            1 <= repeats <= 10000):
        raise InvalidOptionError(f"repeats: {repeats!r}, expected an integer in 1..10000")
    if isinstance(min_time, (bool, np.bool_)) or not isinstance(min_time, (int, float)) or not (
            0 <= min_time <= 3600):
        raise InvalidOptionError(f"min_time: {min_time!r}, expected seconds in 0..3600")
    pr = problem_of(q, k, v, "benchmark", **options)
    kname = default_kernel() if kernel is None else kernel
    name = _api._name(kname)
    t = 0 if threads is None else _api._int_option(threads, "threads")
    lib = _checked_native()
    flops, keys = ctypes.c_double(), ctypes.c_double()
    isa, caps = ctypes.c_uint32(), ctypes.c_uint32()
    err = ctypes.create_string_buffer(512)
    rc = lib.attnpy_problem_info(name, *pr.args(), ctypes.byref(flops), ctypes.byref(keys),
                                 ctypes.byref(isa), ctypes.byref(caps), err, len(err))
    if rc != _api._OK:
        _raise(rc, err.value.decode(errors="replace"))
    o = np.empty(pr.oshape, dtype=np.float32)
    cap = min(_MAX_SAMPLES, max(repeats, 1000))
    samples, out = (ctypes.c_double * cap)(), (ctypes.c_int64 * 4)()
    rc = lib.attnpy_bench(name, *pr.args(), t, pr.q.ctypes.data,
                          pr.k.ctypes.data, pr.v.ctypes.data, o.ctypes.data, repeats,
                          float(min_time), cap, samples, out, err, len(err))
    if rc != _api._OK:
        _raise(rc, err.value.decode(errors="replace"))
    times = np.array(samples[:out[0]])
    q1, med, q3 = (float(x) for x in np.percentile(times, [25, 50, 75]))
    used = int(out[2])
    compute = options.get("compute", "f32")
    machine = info()
    peak_threads = used if caps.value & _CAP_THREADS else 1
    if compute != "f32" and caps.value & _CAP_COMPUTE[compute]:
        peak, unit = None, (f"no peak probe for the {compute} unit the kernel uses; "
                            f"% of peak not given")
    else:
        peak = _peak(isa.value, peak_threads) or None
        unit = (f"the FP32 FMA peak ({_isa_names(isa.value) if isa.value else 'scalar'}, "
                f"{peak_threads or 'OpenMP default'} thread{'' if peak_threads == 1 else 's'})")
    gflops = flops.value / med * 1e-9
    # A serving batch reads the keys its rows can see (bench's rule), a dense problem all
    kv_bytes = int(keys.value) * pr.kv_row_bytes if pr.layout != "dense" else pr.kv_bytes
    return BenchmarkResult(
        kernel=name.decode(), times=tuple(float(x) for x in times), number=int(out[1]),
        median=med, iqr=q3 - q1, min=float(times.min()), mean=float(times.mean()),
        flops=flops.value, gflops=gflops, peak_gflops=peak,
        percent_of_peak=None if peak is None else 100.0 * gflops / peak, peak_unit=unit,
        threads=used, fallback=bool(out[3]), compute=compute,
        kv_dtype=options.get("kv_dtype", "f32"), machine=machine, layout=pr.layout,
        tokens=pr.tokens, tokens_per_s=pr.tokens / med, kv_bytes=kv_bytes,
        kv_gbs=kv_bytes / med * 1e-9)
