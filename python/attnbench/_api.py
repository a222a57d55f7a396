# SPDX-License-Identifier: MIT
"""The Python side of attnbench: array checks, the ctypes calls, errors as exceptions."""

import ctypes
import numbers
import operator
import os
from typing import Any, List, NamedTuple, NoReturn, Optional, Tuple, Union

import numpy as np

_LIB_NAME = "libattnbench_py.so"
_ABI = 6
# Status codes of the native library (python/native/attnbench_py.c, kernels/attn.h).
_OK, _ERR_INVALID, _ERR_NOMEM, _ERR_RANGE = 0, 1, 2, 3
_ERR_UNKNOWN, _ERR_UNAVAILABLE, _ERR_INVALID_EXEC = -1, -2, -3
_VERDICTS = {0: "pass", 1: "fail", 2: "inconclusive"}
# attn.h ATTN_CAP_* bits: shapes, execution, options, K/V types and compute modes the
# kernel's own code handles (anything else runs through attn_kernel_run's fallbacks).
_CAPS = ((1 << 0, "causal"), (1 << 1, "cross"), (1 << 2, "gqa"), (1 << 3, "dv!=dqk"),
         (1 << 4, "threads"), (1 << 5, "kv_split"), (1 << 8, "align"), (1 << 9, "window"),
         (1 << 10, "softcap"), (1 << 11, "alibi"), (1 << 12, "sinks"), (1 << 13, "mask"),
         (1 << 14, "lse"), (1 << 16, "kv_f16"), (1 << 17, "kv_bf16"), (1 << 18, "kv_q8_0"),
         (1 << 20, "compute_bf16"), (1 << 21, "compute_f16"), (1 << 22, "compute_int8"))


# ── Exceptions ───────────────────────────────────────────────────────────────────────

class AttnError(Exception):
    """Base of every attnbench error; .code is the native status code (0 if none)."""

    def __init__(self, message: str, code: int = 0) -> None:
        super().__init__(message)
        self.code = code


class DtypeError(AttnError, TypeError):
    """An element type the call cannot read (a tensor, a mask, cu_seqlens, a block table)."""


class LayoutError(AttnError, ValueError):
    """A tensor's memory: not C-contiguous, not on the CPU, the output read-only or
    overlapping an input."""


class ShapeError(AttnError, ValueError):
    """A tensor (or a layout array) has the wrong number of axes, or sizes that do not
    match the others'."""


class UnknownKernelError(AttnError, LookupError):
    """No kernel of that name is compiled in (kernels() lists them)."""


class KernelUnavailableError(AttnError, RuntimeError):
    """The kernel needs an ISA this CPU lacks (e.g. avx512f)."""


class InvalidProblemError(AttnError, ValueError):
    """The problem fails attn_problem_validate (sizes, heads % kv_heads, scale, the
    options' ranges, a serving layout's offsets, lengths or page table)."""


class InvalidOptionError(AttnError, ValueError):
    """An argument of the wrong kind or value; threads / tiles outside their limits."""


class DomainError(AttnError, ValueError):
    """Inputs outside the input domain (non-finite, scores or V sum could overflow)."""


class KernelMemoryError(AttnError, MemoryError):
    """The kernel or the checker could not allocate what it needed."""


class KernelError(AttnError, RuntimeError):
    """A kernel's own error code."""


def _raise(code: int, message: str) -> NoReturn:
    cls = {_ERR_UNKNOWN: UnknownKernelError, _ERR_UNAVAILABLE: KernelUnavailableError,
           _ERR_INVALID_EXEC: InvalidOptionError, _ERR_INVALID: InvalidProblemError,
           _ERR_RANGE: DomainError, _ERR_NOMEM: KernelMemoryError}.get(code, KernelError)
    raise cls(message or f"native error {code}", code)


# ── The native library ───────────────────────────────────────────────────────────────

_lib = None


def _native() -> ctypes.CDLL:
    global _lib
    if _lib is not None:
        return _lib
    path = os.environ.get("ATTNBENCH_PY_LIBRARY") or os.path.join(
        os.path.dirname(os.path.abspath(__file__)), _LIB_NAME)
    lib = ctypes.CDLL(path)
    if lib.attnpy_abi() != _ABI:
        raise ImportError(f"{path}: native ABI {lib.attnpy_abi()}, this module needs {_ABI}")
    c_i64p, c_fp, c_dp = (ctypes.POINTER(ctypes.c_int64), ctypes.POINTER(ctypes.c_float),
                          ctypes.POINTER(ctypes.c_double))
    cs, ci, cd, csz = ctypes.c_char_p, ctypes.c_int, ctypes.c_double, ctypes.c_size_t
    lib.attnpy_kernel_count.restype = csz
    lib.attnpy_kernel_info.argtypes = [csz, ctypes.POINTER(cs), ctypes.POINTER(cs), cs, csz,
                                       ctypes.POINTER(ctypes.c_uint32), ctypes.POINTER(ci), cs,
                                       csz]
    lib.attnpy_problem_check.argtypes = [c_i64p, ci, ci, cd, cs, csz]
    c_ip = ctypes.POINTER(ci)
    lib.attnpy_run.argtypes = [cs, c_i64p, ci, ci, cd, ci, ci, ci, cs, ci, c_fp, c_fp, c_fp,
                               c_fp, cs, csz]
    lib.attnpy_check.argtypes = [cs, c_i64p, ci, ci, cd, ci, ci, ci, cs, ci, c_fp, c_fp, c_fp,
                                 c_fp, c_fp, c_ip, c_dp, cs, csz]
    lib.attnpy_settings.argtypes = [cs, c_i64p, ci, ci, cd, ci, ci, ci, cs, ci, c_ip, c_ip, cs,
                                    csz, cs, csz]
    vp, c_u32p, c_i64 = ctypes.c_void_p, ctypes.POINTER(ctypes.c_uint32), ctypes.c_int64
    # The attention entry points: dims, iopt, fopt, the option arrays (void *), then the
    # batch layout (lay int64[5] or NULL, cu_seqlens_q, cu_seqlens_kv, page table).
    prob: list = [c_i64p, c_i64p, c_dp, vp, vp, vp, c_i64p, vp, vp, vp]
    lib.attnpy_lay_count.restype = ci
    lib.attnpy_opt_counts.argtypes = [c_ip, c_ip]
    lib.attnpy_attention.argtypes = [cs, *prob, vp, ci, vp, vp, vp, vp, c_ip, cs, csz]
    lib.attnpy_attention_check.argtypes = [*prob, vp, vp, vp, vp, vp, vp, c_ip, c_dp, cs, csz]
    lib.attnpy_bench.argtypes = [cs, *prob, ci, vp, vp, vp, vp, ci, cd, ci, c_dp, c_i64p, cs,
                                 csz]
    lib.attnpy_problem_info.argtypes = [cs, *prob, c_dp, c_dp, c_u32p, c_u32p, cs, csz]
    lib.attnpy_machine.argtypes = [c_i64p, cs, csz, cs, csz]
    lib.attnpy_isa_names.argtypes = [ctypes.c_uint32, cs, csz]
    lib.attnpy_fma_peak.argtypes = [ctypes.c_uint32, ci, c_dp, cs, csz]
    lib.attnpy_bandwidth.argtypes = [csz, ci, ci, c_dp, c_dp]
    lib.attnpy_quantize.argtypes = [ci, vp, c_i64, c_i64, vp, cs, csz]
    _lib = lib
    return lib


# ── Kernels ──────────────────────────────────────────────────────────────────────────

class Kernel(NamedTuple):
    name: str            # "<what>__<isa>", e.g. "flash__avx512"
    summary: str
    isa: str             # required ISAs, space-separated ("none" for any CPU)
    caps: Tuple[str, ...]  # what its own code handles: causal, cross, gqa, dv!=dqk, threads,
                           # kv_split, options (window, softcap, ...), kv_*, compute_*
    available: bool      # this CPU has the ISAs
    why: str             # why not available ("" when it is)


KernelLike = Union[str, Kernel]  # a kernel name or a Kernel record


def kernels() -> List[Kernel]:
    """Every compiled-in kernel, in registry order."""
    lib = _native()
    out = []
    for i in range(lib.attnpy_kernel_count()):
        name, summary = ctypes.c_char_p(), ctypes.c_char_p()
        isa, why = ctypes.create_string_buffer(64), ctypes.create_string_buffer(128)
        caps, avail = ctypes.c_uint32(), ctypes.c_int()
        rc = lib.attnpy_kernel_info(i, ctypes.byref(name), ctypes.byref(summary), isa, 64,
                                    ctypes.byref(caps), ctypes.byref(avail), why, 128)
        if rc != _OK:
            _raise(rc, f"kernel record {i} unreadable")
        out.append(Kernel((name.value or b"").decode(), (summary.value or b"").decode(),
                          isa.value.decode(),
                          tuple(n for bit, n in _CAPS if caps.value & bit), bool(avail.value),
                          why.value.decode()))
    return out


def kernel_names(available_only: bool = False) -> List[str]:
    """Kernel names; with available_only, only those this CPU can run."""
    return [k.name for k in kernels() if k.available or not available_only]


# ── Arrays ───────────────────────────────────────────────────────────────────────────

def _view(x: Any, what: str) -> np.ndarray:
    """A NumPy view of x (no copy): ndarray, DLPack producer, buffer/array interface."""
    if isinstance(x, np.ndarray):
        return x
    if hasattr(x, "__dlpack__") and hasattr(np, "from_dlpack"):
        try:
            return np.from_dlpack(x)
        except (TypeError, RuntimeError, BufferError) as e:
            raise LayoutError(f"{what}: cannot be viewed through DLPack on the CPU: {e}") from None
    try:
        return np.asarray(x)
    except Exception as e:  # noqa: BLE001 - report what could not be viewed
        raise DtypeError(f"{what}: {type(x).__name__} is not an array ({e})") from None


def _tensor(x: Any, what: str, writable: bool = False) -> np.ndarray:
    if isinstance(x, np.ma.MaskedArray):  # the kernels would read the masked-out values too
        raise DtypeError(f"{what}: a numpy.ma.MaskedArray, whose mask the kernels would ignore; "
                         f"pass {what}.filled(value) (or numpy.asarray({what}) to use the "
                         f"data as it is)")
    a = _view(x, what)
    if a.dtype != np.float32:
        raise DtypeError(f"{what}: dtype {a.dtype}, expected float32 "
                         f"(convert with .astype(numpy.float32))")
    if a.ndim != 4:
        raise ShapeError(f"{what}: {a.ndim}-D shape {tuple(a.shape)}, expected 4-D "
                         f"[batch, heads, seq, head_dim]")
    if not a.flags.c_contiguous:
        raise LayoutError(f"{what}: not C-contiguous (strides {a.strides}); "
                          f"pass numpy.ascontiguousarray({what}) or .contiguous()")
    if writable and not a.flags.writeable:
        raise LayoutError(f"{what}: read-only")
    return a


def _ptr(a):
    return a.ctypes.data_as(ctypes.POINTER(ctypes.c_float))


def _same_sizes(checks, shapes: str) -> None:
    """ShapeError for the first (tensor, size, wanted, what, whose) whose sizes differ."""
    for name, got, want, of, ref in checks:
        if got != want:
            raise ShapeError(f"{name}: {of} is {got}, {ref} has {want} ({shapes})")


def _no_empty_axis(what: str, shape, axes, skip=()) -> None:
    """InvalidProblemError for the first axis of `shape` (named by `axes`) that is 0, other than
    those in skip: every problem size is at least 1 (attn.h)."""
    for i, (n, ax) in enumerate(zip(shape, axes)):
        if n == 0 and ax not in skip:
            raise InvalidProblemError(f"{what}: shape {tuple(shape)} has {ax} (axis {i}) = 0; every "
                             f"size of a problem is at least 1")


def _dense_shapes(qs, ks, vs, dk: int) -> None:
    """q [b, h, sq, dqk], k [b, hk, skv, dk], v [b, hk, skv, dv] agree (dk: K's logical
    head_dim, which differs from its last axis for Q8_0 blocks)."""
    (b, _, _, dqk), (bk, hk, skv, _), (bv, hv, sv, _) = qs, ks, vs
    _no_empty_axis("q", qs, ("batch", "heads", "seq_q", "head_dim_qk"))
    _no_empty_axis("k", ks, ("batch", "kv_heads", "seq_kv", "head_dim_qk"))
    _no_empty_axis("v", vs, ("batch", "kv_heads", "seq_kv", "head_dim_v"))
    _same_sizes((("k", bk, b, "batch", "q"), ("v", bv, b, "batch", "q"),
                 ("k", dk, dqk, "head_dim_qk (last axis)", "q"),
                 ("v", hv, hk, "kv_heads (axis 1)", "k"), ("v", sv, skv, "seq_kv (axis 2)", "k")),
                f"q {tuple(qs)}, k {tuple(ks)}, v {tuple(vs)}")


def _problem(q, k, v, causal, scale):
    """dims for the native calls from the shapes of q, k, v; ShapeError on a mismatch,
    InvalidOptionError for a causal flag that is not a bool (as attention's is_causal)."""
    if not isinstance(causal, (bool, np.bool_)):
        raise InvalidOptionError(f"causal: {causal!r} is not a bool")
    q, k, v = _tensor(q, "q"), _tensor(k, "k"), _tensor(v, "v")
    _dense_shapes(q.shape, k.shape, v.shape, k.shape[3])
    (b, h, sq, dqk), (_, hk, skv, _), dv = q.shape, k.shape, v.shape[3]
    dims = (ctypes.c_int64 * 7)(b, h, hk, sq, skv, dqk, dv)
    if scale is None:
        has_scale, sc = 0, 0.0
    else:
        # a real number (int, float, NumPy scalars), not a bool or a string that float()
        # would also take ("0.5", True)
        if isinstance(scale, (bool, np.bool_)) or not isinstance(scale, numbers.Real):
            raise InvalidProblemError(f"scale: {scale!r} ({type(scale).__name__}) is not a real "
                                      f"number; pass a float such as 0.125")
        try:
            has_scale, sc = 1, float(scale)
        except (TypeError, ValueError, OverflowError):
            raise InvalidProblemError(f"scale: {scale!r} is not a number") from None
    return q, k, v, dims, 1 if causal else 0, has_scale, sc, (b, h, sq, dv)


def _int_option(x: Any, name: str) -> int:
    if isinstance(x, (bool, np.bool_)):  # operator.index(True) is 1
        raise InvalidOptionError(f"{name}: {x!r} is a bool, not an integer")
    try:
        n = operator.index(x)
    except TypeError:
        raise InvalidOptionError(f"{name}: {x!r} is not an integer") from None
    if not -2**31 <= n < 2**31:
        raise InvalidOptionError(f"{name}: {n} is out of range")
    return n


def _exec(threads, tile_q, tile_kv, regtile=None, kv_split=None):
    """The settings given: the resolver's command-line layer (0 / None = not given)."""
    if regtile is not None and not isinstance(regtile, (str, int)):
        raise InvalidOptionError(f"regtile: {regtile!r} is not a variant name or index")
    rt = None if regtile is None else str(regtile).encode()
    ks = -1 if kv_split is None else _int_option(kv_split, "kv_split")
    if kv_split is not None and ks < 0:
        raise InvalidOptionError(f"kv_split: {ks} is negative")
    return (_int_option(threads, "threads"), _int_option(tile_q, "tile_q"),
            _int_option(tile_kv, "tile_kv"), rt, ks)


def _name(kernel: Union[str, "Kernel"]) -> bytes:
    """A kernel name (str) or a Kernel record, as bytes for the native calls."""
    name = kernel.name if isinstance(kernel, Kernel) else kernel
    if not isinstance(name, str) or "\0" in name:
        raise UnknownKernelError(f"kernel: {kernel!r} is not a kernel name", _ERR_UNKNOWN)
    return name.encode()


def _output(out, shape, inputs):
    if out is None:
        return np.empty(shape, dtype=np.float32)
    o = _tensor(out, "out", writable=True)
    if o.shape != shape:
        raise ShapeError(f"out: shape {o.shape}, expected {shape}")
    for name, a in zip("qkv", inputs):
        if np.shares_memory(o, a):
            raise LayoutError(f"out overlaps {name}")
    return o


# ── run / check ──────────────────────────────────────────────────────────────────────

def run(kernel: KernelLike, q: Any, k: Any, v: Any, *, causal: bool = False,
        scale: Optional[float] = None, threads: int = 0, tile_q: int = 0, tile_kv: int = 0,
        regtile: Union[str, int, None] = None, kv_split: Optional[int] = None,
        out: Any = None) -> Any:
    """Runs kernel (a name) on q, k, v; returns O (float32 [batch, heads, seq_q, head_dim_v]).

    The options are `attnbench run`'s: causal, scale (default 1/sqrt(head_dim_qk)), threads,
    tile_q, tile_kv, regtile (a variant name or index), kv_split; 0 / None = not given, then
    decided as `attnbench run` decides them (settings()). out, if given, receives O.
    """
    q, k, v, dims, c, hs, sc, oshape = _problem(q, k, v, causal, scale)
    t, tq, tk, rt, ks = _exec(threads, tile_q, tile_kv, regtile, kv_split)
    o = _output(out, oshape, (q, k, v))
    err = ctypes.create_string_buffer(512)
    rc = _native().attnpy_run(_name(kernel), dims, c, hs, sc, t, tq, tk, rt, ks, _ptr(q),
                              _ptr(k), _ptr(v), _ptr(o), err, len(err))
    if rc != _OK:
        _raise(rc, err.value.decode(errors="replace"))
    return o if out is None else out


class CheckResult(NamedTuple):
    verdict: str          # "pass", "fail" or "inconclusive" (kernels/check/check.h)
    passed: bool          # verdict == "pass"
    max_abs_err: float    # max |o - ref|
    max_rel_err: float    # max |o - ref| / max |ref|
    worst_ratio: float    # max |o - ref| / tol (a pass needs <= 1)
    worst_index: int      # flat index into O of the worst element
    message: str          # "" on pass; what failed or why inconclusive

    def __bool__(self) -> bool:
        return self.passed


def _check(kernel, q, k, v, o, causal, scale, threads, tile_q, tile_kv, want_ref):
    q, k, v, dims, c, hs, sc, oshape = _problem(q, k, v, causal, scale)
    t, tq, tk, rt, ks = _exec(threads, tile_q, tile_kv)
    if o is not None:
        o = _tensor(o, "o")
        if o.shape != oshape:
            raise ShapeError(f"o: shape {o.shape}, expected {oshape}")
    ref = np.empty(oshape, dtype=np.float32) if want_ref else None
    verdict, stats = ctypes.c_int(), (ctypes.c_double * 4)()
    msg = ctypes.create_string_buffer(512)
    rc = _native().attnpy_check(None if kernel is None else _name(kernel), dims, c, hs,
                                sc, t, tq, tk, rt, ks, _ptr(q), _ptr(k), _ptr(v),
                                None if o is None else _ptr(o),
                                None if ref is None else _ptr(ref), ctypes.byref(verdict),
                                stats, msg, len(msg))
    if rc != _OK:
        _raise(rc, msg.value.decode(errors="replace"))
    if want_ref:
        return ref
    name = _VERDICTS[verdict.value]
    return CheckResult(name, name == "pass", stats[0], stats[1], stats[2], int(stats[3]),
                       msg.value.decode(errors="replace"))


def check(kernel: KernelLike, q: Any, k: Any, v: Any, *, causal: bool = False,
          scale: Optional[float] = None, threads: int = 0, tile_q: int = 0,
          tile_kv: int = 0) -> "CheckResult":
    """Runs kernel on q, k, v and returns the checker's CheckResult against the float64
    reference (the tolerance of kernels/check/check.h; `attnbench check`'s verdict).
    Inputs outside the input domain give verdict "inconclusive", not an exception."""
    return _check(kernel, q, k, v, None, causal, scale, threads, tile_q, tile_kv, False)


def check_output(o: Any, q: Any, k: Any, v: Any, *, causal: bool = False,
                 scale: Optional[float] = None) -> "CheckResult":
    """The checker's CheckResult for an output o computed elsewhere (your own kernel)."""
    if o is None:
        raise ShapeError("o: None, expected the output to check")
    return _check(None, q, k, v, o, causal, scale, 0, 0, 0, False)


def reference(q: Any, k: Any, v: Any, *, causal: bool = False,
              scale: Optional[float] = None) -> np.ndarray:
    """The checker's float64 reference O, rounded to float32."""
    return _check(None, q, k, v, None, causal, scale, 0, 0, 0, True)


# ── settings ─────────────────────────────────────────────────────────────────────────

_SETTINGS = ("threads", "bind", "tile_q", "tile_kv", "regtile", "kv_split")
_SOURCES = ("kernel default", "machine rule", "tuning file", "environment", "config",
            "command line")
_BINDS = {1: "cores", 2: "none", 3: "openmp"}


class Settings(NamedTuple):
    values: dict    # setting -> value: threads, bind ("cores"/"none"/"openmp"), tile_q, ...
    sources: dict   # setting -> where it came from: "command line" (this call's arguments),
                    # "environment", "machine rule", "kernel default"
    explain: str    # `attnbench run --explain`'s lines


def settings(kernel: KernelLike, q: Any, k: Any, v: Any, *, causal: bool = False,
             scale: Optional[float] = None, threads: int = 0, tile_q: int = 0, tile_kv: int = 0,
             regtile: Union[str, int, None] = None,
             kv_split: Optional[int] = None) -> "Settings":
    """How run(kernel, q, k, v, ...) would run: each execution setting and its source, by
    the resolver `attnbench run` uses (kernels/core/settings.h). The module reads no tuning
    file and binds no threads; the machine rule uses the cores and caches Linux reports."""
    q, k, v, dims, c, hs, sc, _ = _problem(q, k, v, causal, scale)
    t, tq, tk, rt, ks = _exec(threads, tile_q, tile_kv, regtile, kv_split)
    vals, srcs = (ctypes.c_int * 6)(), (ctypes.c_int * 6)()
    text, err = ctypes.create_string_buffer(2048), ctypes.create_string_buffer(512)
    rc = _native().attnpy_settings(_name(kernel), dims, c, hs, sc, t, tq, tk, rt, ks, vals,
                                   srcs, text, len(text), err, len(err))
    if rc != _OK:
        _raise(rc, err.value.decode(errors="replace"))
    values = dict(zip(_SETTINGS, vals))
    values["bind"] = _BINDS.get(values["bind"], str(values["bind"]))
    return Settings(values, {n: _SOURCES[s] for n, s in zip(_SETTINGS, srcs)},
                    text.value.decode(errors="replace"))
