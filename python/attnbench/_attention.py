# SPDX-License-Identifier: MIT
"""attention(), check_attention() and quantize(): the SDPA-shaped entry points.

Arrays come in as NumPy arrays, DLPack producers (PyTorch CPU tensors) or anything NumPy
can view; outputs go back as the caller's type (torch in, torch out). See docs/python.md.
"""

import ctypes
import numbers
import sys
from typing import Any, NamedTuple, Optional, Tuple, Union

import numpy as np

from . import _api
from ._api import (CheckResult, DtypeError, InvalidOptionError, InvalidProblemError,
                   LayoutError, ShapeError, _VERDICTS, _native, _raise, _view)

ArrayLike = Any  # numpy.ndarray, torch.Tensor, or any DLPack / buffer-protocol producer

KV_DTYPES = {"f32": 0, "f16": 1, "bf16": 2, "q8_0": 3}      # attn.h attn_dtype
COMPUTE_MODES = {"f32": 0, "bf16": 1, "f16": 2, "int8": 3}  # attn.h attn_compute
ALIGNS = {"bottom_right": 0, "top_left": 1}                # attn.h attn_align
_LAY_COUNT = 5  # the layout's int64s (python/native/attnbench_py.c ATTNPY_LAY_*)
_Q8_0_BLOCK, _Q8_0_BYTES = 32, 34
# iopt / fopt indices of python/native/attnbench_py.c (checked against the library).
_IO = ("causal", "align", "window", "window_left", "window_right", "mask_per_head",
       "kv_dtype", "compute", "has_scale")
_FO = ("scale", "softcap", "alibi_max_bias")
# kernel=None: the first available of these (the fastest family on each ISA), else blocked.
DEFAULT_KERNELS = ("flash__avx512", "flash__avx2", "flash__neon", "blocked")


def _is_torch(x: Any) -> bool:
    return type(x).__module__.split(".")[0] == "torch"


def _raw(x: Any, what: str) -> Tuple[np.ndarray, str]:
    """A NumPy view of x (no copy) and the element type it holds: "f32", "f16", "bf16",
    "bits16" (uint16: the bits of f16 or bf16, as kv_dtype says), "bytes" (uint8: Q8_0
    blocks) or the NumPy dtype name of anything else."""
    if _is_torch(x):
        torch = sys.modules["torch"]
        if x.device.type != "cpu":
            raise LayoutError(f"{what}: a {x.device.type} tensor; the kernels run on the CPU "
                              f"(pass {what}.cpu())")
        x = x.detach()  # the kernels compute no gradients
        if x.dtype == torch.bfloat16:  # NumPy has no bfloat16: view the bits
            return _view(x.view(torch.int16), what).view(np.uint16), "bf16"
    a = _view(x, what)
    if isinstance(a, np.ma.MaskedArray):
        raise DtypeError(f"{what}: a numpy.ma.MaskedArray, whose mask the kernels would ignore")
    if not a.dtype.isnative:  # '>f4' on a little-endian machine: the bytes would be misread
        raise DtypeError(f"{what}: dtype {a.dtype.str} is not in this machine's byte order "
                         f"(pass {what}.astype({a.dtype.newbyteorder('=').str!r}))")
    name = {np.dtype(np.float32): "f32", np.dtype(np.float16): "f16",
            np.dtype(np.uint16): "bits16", np.dtype(np.uint8): "bytes"}.get(a.dtype)
    if name is None and a.dtype.name == "bfloat16":  # ml_dtypes.bfloat16
        return a.view(np.uint16), "bf16"
    return a, name or a.dtype.name


def _contiguous(a: np.ndarray, what: str) -> np.ndarray:
    if not a.flags.c_contiguous:
        raise LayoutError(f"{what}: not C-contiguous (strides {a.strides}); "
                          f"pass numpy.ascontiguousarray({what}) or .contiguous()")
    return a


def _q_array(x: Any, compute: str) -> np.ndarray:
    a, kind = _raw(x, "q")
    if kind == "f32":
        return _contiguous(a, "q")
    if kind in ("bf16", "f16") and compute == kind:  # exact: every such value is a float32
        bits = _contiguous(a, "q").view(np.uint16)
        if kind == "f16":
            return bits.view(np.float16).astype(np.float32)
        return (bits.astype(np.uint32) << 16).view(np.float32)
    hint = (f"; with compute='{kind}' a {kind} Q is read (widened exactly)"
            if kind in ("bf16", "f16") else "")
    raise DtypeError(f"q: dtype {_kind_name(kind)}, expected float32{hint}")


def _kind_name(kind: str) -> str:
    return {"f32": "float32", "f16": "float16", "bf16": "bfloat16", "bits16": "uint16",
            "bytes": "uint8"}.get(kind, kind)


_KV_KINDS = {"f32": ("f32",), "f16": ("f16", "bits16"), "bf16": ("bf16", "bits16"),
             "q8_0": ("bytes",)}


_ROW_BYTES = {"f32": (4, 1), "f16": (2, 1), "bf16": (2, 1), "q8_0": (_Q8_0_BYTES, _Q8_0_BLOCK)}


def _row_bytes(kv_dtype: str, dim: int) -> int:
    """Bytes of one stored K or V row of dim elements (attn.h attn_kv_row_bytes)."""
    num, den = _ROW_BYTES[kv_dtype]
    return dim * num // den


def _kv_array(x: Any, what: str, kv_dtype: str,
              axes: Tuple[str, ...] = ("batch", "kv_heads", "seq_kv", "head_dim")
              ) -> Tuple[np.ndarray, int]:
    """The stored K or V tensor (shaped as `axes` name them) and its logical head_dim."""
    a, kind = _raw(x, what)
    if kind not in _KV_KINDS[kv_dtype]:
        want = {"f32": "float32", "f16": "float16 (or its uint16 bits)",
                "bf16": "bfloat16 (or its uint16 bits)",
                "q8_0": "uint8 Q8_0 blocks (attnbench.quantize(x, 'q8_0'))"}[kv_dtype]
        hint = (f"; pass kv_dtype='{kind}' to read it as stored"
                if kind in ("f16", "bf16") and kv_dtype == "f32" else "")
        raise DtypeError(f"{what}: dtype {_kind_name(kind)} with kv_dtype='{kv_dtype}', "
                         f"expected {want}{hint}")
    a = _contiguous(a, what)
    if a.ndim != len(axes):
        raise ShapeError(f"{what}: {a.ndim}-D shape {tuple(a.shape)}, expected {len(axes)}-D "
                         f"[{', '.join(axes)}]")
    # A ragged or paged batch's token and page axes may be empty when no sequence has a
    # key: _layout_problem says so in those terms.
    _api._no_empty_axis(what, a.shape, axes, skip=("total_k", "num_pages"))
    dim = a.shape[-1]
    if kv_dtype == "q8_0":
        if dim % _Q8_0_BYTES:
            raise ShapeError(f"{what}: last axis of {dim} bytes is not a whole number of "
                             f"{_Q8_0_BYTES}-byte Q8_0 blocks")
        dim = dim // _Q8_0_BYTES * _Q8_0_BLOCK
    return a, dim


def _f32_array(x: Any, what: str, shape: Tuple[int, ...], meaning: str = "") -> np.ndarray:
    """x as a C-contiguous float32 array of exactly `shape` (DtypeError, ShapeError)."""
    a, kind = _raw(x, what)
    if kind != "f32":
        raise DtypeError(f"{what}: dtype {_kind_name(kind)}, expected float32")
    if a.shape != shape:
        raise ShapeError(f"{what}: shape {tuple(a.shape)}, expected {shape}{meaning}")
    return _contiguous(a, what)


def _f32_vector(x: Any, what: str, n: int) -> np.ndarray:
    return _f32_array(x, what, (n,), " (one per query head)")


def _mask_values(x: Any, what: str) -> np.ndarray:
    """A mask as float32 scores: bool has SDPA's meaning (True = the key takes part: 0,
    False: -inf), float32 is added as it is."""
    a, kind = _raw(x, what)
    if a.dtype == np.bool_:
        return np.where(a, np.float32(0), np.float32(-np.inf))
    if kind != "f32":
        raise DtypeError(f"{what}: dtype {_kind_name(kind)}, expected bool or float32")
    return a


def _mask_array(x: Any, b: int, h: int, sq: int, skv: int) -> Tuple[np.ndarray, bool]:
    """The additive float32 mask and whether it is per (batch, head). A boolean mask has
    SDPA's meaning (True = the key takes part) and becomes 0 / -inf; a mask that is not
    [seq_q, seq_kv] after dropping leading 1s is broadcast to [batch, heads, seq_q, seq_kv]."""
    a = _mask_values(x, "attn_mask")
    if a.ndim < 2 or a.ndim > 4:
        raise ShapeError(f"attn_mask: {a.ndim}-D shape {tuple(a.shape)}, expected "
                         f"[seq_q, seq_kv] or broadcastable to [batch, heads, seq_q, seq_kv]")
    full = (b, h, sq, skv)
    try:
        np.broadcast_shapes(a.shape, full)
    except ValueError:
        raise ShapeError(f"attn_mask: shape {tuple(a.shape)} does not broadcast to "
                         f"{full}") from None
    if a.shape[-2:] != (sq, skv):
        raise ShapeError(f"attn_mask: last two axes {tuple(a.shape[-2:])}, expected "
                         f"(seq_q, seq_kv) = {(sq, skv)}")
    if all(d == 1 for d in a.shape[:-2]):
        return np.ascontiguousarray(a.reshape(sq, skv)), False
    return np.ascontiguousarray(np.broadcast_to(a, full)), True


def _real(x: Any, what: str) -> float:
    if isinstance(x, (bool, np.bool_)) or not isinstance(x, numbers.Real):
        raise InvalidOptionError(f"{what}: {x!r} ({type(x).__name__}) is not a real number")
    return float(x)


def _choice(x: Any, what: str, table: dict) -> str:
    if not isinstance(x, str) or x not in table:
        raise InvalidOptionError(f"{what}: {x!r}, expected one of {', '.join(map(repr, table))}")
    return x


_INT64_MAX = 2**63 - 1


def _window(window: Any) -> Tuple[int, int]:
    if not isinstance(window, (tuple, list)) or len(window) != 2:
        raise InvalidOptionError(f"window: {window!r}, expected (left, right): keys left and "
                                 f"right of the diagonal, None or -1 for unbounded")
    sides = []
    for name, w in zip(("left", "right"), window):
        if w is None:
            w = -1
        if isinstance(w, (bool, np.bool_)) or not isinstance(w, numbers.Integral) or w < -1:
            raise InvalidOptionError(f"window: {name} side {w!r} is not an integer >= 0, "
                                     f"-1 or None")
        if w > _INT64_MAX:  # the native side takes int64: more would wrap around
            raise InvalidOptionError(f"window: {name} side {w} exceeds 2^63 - 1 (None or -1: "
                                     f"unbounded)")
        sides.append(int(w))
    return sides[0], sides[1]


class _Problem(NamedTuple):
    """A checked problem, ready for the native calls."""
    q: np.ndarray
    k: np.ndarray
    v: np.ndarray
    dims: Any       # ctypes int64[7]
    iopt: Any       # ctypes int64[len(_IO)]
    fopt: Any       # ctypes double[len(_FO)]
    arrays: Tuple[Optional[np.ndarray], ...]  # slopes, sinks, mask (kept alive)
    oshape: Tuple[int, ...]
    torch_out: bool
    lse_shape: Tuple[int, ...] = ()
    layout: str = "dense"          # "dense", "ragged" or "paged"
    lay: Any = None                # ctypes int64[5] for a layout (attnbench_py.c ATTNPY_LAY_*)
    lay_arrays: Tuple[Optional[np.ndarray], ...] = (None, None, None)  # cu_q, cu_kv, table
    tokens: int = 0                # query tokens (rows of O per head)
    kv_row_bytes: int = 0          # K and V bytes of one key over the K/V heads, as stored
    kv_bytes: int = 0              # dense: K and V bytes one call reads (every key)

    def args(self) -> list:
        """The problem arguments of the native attention entry points."""
        ptr = [None if a is None else a.ctypes.data for a in self.arrays + self.lay_arrays]
        return [self.dims, self.iopt, self.fopt, *ptr[:3], self.lay, *ptr[3:]]


def _options(h: int, *, is_causal=False, scale=None, align="top_left", window=None,
             softcap=None, alibi=None, sinks=None, kv_dtype="f32", compute="f32"
             ) -> Tuple[dict, dict, Optional[np.ndarray], Optional[np.ndarray]]:
    """The scalar options (iopt, fopt as dicts) and the slopes and sinks arrays."""
    align = _choice(align, "align", ALIGNS)
    if not isinstance(is_causal, (bool, np.bool_)):
        raise InvalidOptionError(f"is_causal: {is_causal!r} is not a bool")
    io = dict.fromkeys(_IO, 0)
    fo = dict.fromkeys(_FO, 0.0)
    io.update(causal=int(bool(is_causal)), align=ALIGNS[align], kv_dtype=KV_DTYPES[kv_dtype],
              compute=COMPUTE_MODES[compute])
    if scale is not None:
        if isinstance(scale, (bool, np.bool_)) or not isinstance(scale, numbers.Real):
            raise InvalidProblemError(f"scale: {scale!r} ({type(scale).__name__}) is not a "
                                      f"real number; pass a float such as 0.125")
        io["has_scale"], fo["scale"] = 1, float(scale)
    if window is not None:
        io["window"] = 1
        io["window_left"], io["window_right"] = _window(window)
    if softcap is not None:
        fo["softcap"] = _real(softcap, "softcap")
        if fo["softcap"] <= 0:
            raise InvalidOptionError(f"softcap: {softcap!r}, expected > 0 (None = off)")
    slopes = None
    if isinstance(alibi, (bool, np.bool_)):
        raise InvalidOptionError(f"alibi: {alibi!r}, expected max_bias (float) or slopes")
    if isinstance(alibi, numbers.Real):
        fo["alibi_max_bias"] = float(alibi)
        if fo["alibi_max_bias"] <= 0:
            raise InvalidOptionError(f"alibi: max_bias {alibi!r}, expected > 0 (None = off)")
    elif alibi is not None:
        slopes = _f32_vector(alibi, "alibi", h)
    sinks_a = None if sinks is None else _f32_vector(sinks, "sinks", h)
    return io, fo, slopes, sinks_a


def _ctypes_options(io: dict, fo: dict) -> Tuple[Any, Any]:
    return ((ctypes.c_int64 * len(_IO))(*(io[n] for n in _IO)),
            (ctypes.c_double * len(_FO))(*(fo[n] for n in _FO)))


def _problem(q, k, v, *, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
             enable_gqa=False, align="top_left", window=None, softcap=None, alibi=None,
             sinks=None, kv_dtype="f32", compute="f32") -> _Problem:
    kv_dtype = _choice(kv_dtype, "kv_dtype", KV_DTYPES)
    compute = _choice(compute, "compute", COMPUTE_MODES)
    if not isinstance(enable_gqa, (bool, np.bool_)):
        raise InvalidOptionError(f"enable_gqa: {enable_gqa!r} is not a bool")
    if _real(dropout_p, "dropout_p") != 0.0:
        raise InvalidOptionError(f"dropout_p: {dropout_p!r}; the kernels do inference only "
                                 f"(dropout_p must be 0)")
    qa = _q_array(q, compute)
    if qa.ndim != 4:
        raise ShapeError(f"q: {qa.ndim}-D shape {tuple(qa.shape)}, expected 4-D "
                         f"[batch, heads, seq_q, head_dim]")
    ka, dk = _kv_array(k, "k", kv_dtype)
    va, dv = _kv_array(v, "v", kv_dtype)
    _api._dense_shapes(qa.shape, ka.shape, va.shape, dk)
    (b, h, sq, dqk), (_, hk, skv, _) = qa.shape, ka.shape
    if hk != h and not enable_gqa:
        raise ShapeError(f"k: {hk} heads, q has {h}; pass enable_gqa=True for grouped "
                         f"K/V heads (as scaled_dot_product_attention)")
    io, fo, slopes, sinks_a = _options(h, is_causal=is_causal, scale=scale, align=align,
                                       window=window, softcap=softcap, alibi=alibi, sinks=sinks,
                                       kv_dtype=kv_dtype, compute=compute)
    mask = None
    if attn_mask is not None:
        mask, io["mask_per_head"] = _mask_array(attn_mask, b, h, sq, skv)
    dims = (ctypes.c_int64 * 7)(b, h, hk, sq, skv, dqk, dv)
    return _Problem(qa, ka, va, dims, *_ctypes_options(io, fo), (slopes, sinks_a, mask),
                    (b, h, sq, dv), _is_torch(q), lse_shape=(b, h, sq), tokens=b * sq,
                    kv_row_bytes=hk * (_row_bytes(kv_dtype, dk) + _row_bytes(kv_dtype, dv)),
                    kv_bytes=b * hk * skv * (_row_bytes(kv_dtype, dk) + _row_bytes(kv_dtype, dv)))


def _checked_native():
    lib = _native()
    ni, nf, nl = ctypes.c_int(), ctypes.c_int(), lib.attnpy_lay_count()
    lib.attnpy_opt_counts(ctypes.byref(ni), ctypes.byref(nf))
    if (ni.value, nf.value, nl) != (len(_IO), len(_FO), _LAY_COUNT):
        raise ImportError(f"native option counts {ni.value}/{nf.value}/{nl}, this module has "
                          f"{len(_IO)}/{len(_FO)}/{_LAY_COUNT}")
    return lib


def default_kernel() -> str:
    """The kernel attention() and benchmark() use for kernel=None: the first available
    of DEFAULT_KERNELS."""
    avail = set(_api.kernel_names(available_only=True))
    return next(n for n in DEFAULT_KERNELS if n in avail)


def _to_caller(a: np.ndarray, torch_out: bool):
    if not torch_out:
        return a
    return sys.modules["torch"].from_dlpack(a)  # no copy: the tensor shares a's memory


def _run(pr: _Problem, kernel, threads, return_lse):
    """Runs the problem on kernel (None: default_kernel()); O, or (O, LSE), as the caller's
    array type."""
    if not isinstance(return_lse, (bool, np.bool_)):
        raise InvalidOptionError(f"return_lse: {return_lse!r} is not a bool")
    name = _api._name(default_kernel() if kernel is None else kernel)
    t = 0 if threads is None else _api._int_option(threads, "threads")
    o = np.empty(pr.oshape, dtype=np.float32)
    lse = np.empty(pr.lse_shape, dtype=np.float32) if return_lse else None
    err, fb = ctypes.create_string_buffer(512), ctypes.c_int()
    rc = _checked_native().attnpy_attention(
        name, *pr.args(), None if lse is None else lse.ctypes.data, t, pr.q.ctypes.data,
        pr.k.ctypes.data, pr.v.ctypes.data, o.ctypes.data, ctypes.byref(fb), err, len(err))
    if rc != _api._OK:
        _raise(rc, err.value.decode(errors="replace"))
    if lse is not None:
        return _to_caller(o, pr.torch_out), _to_caller(lse, pr.torch_out)
    return _to_caller(o, pr.torch_out)


def attention(q: ArrayLike, k: ArrayLike, v: ArrayLike, *, attn_mask: Optional[ArrayLike] = None,
              dropout_p: float = 0.0, is_causal: bool = False, scale: Optional[float] = None,
              enable_gqa: bool = False, kernel: Union[str, "_api.Kernel", None] = None,
              align: str = "top_left", window: Optional[Tuple[Optional[int], Optional[int]]] = None,
              softcap: Optional[float] = None,
              alibi: Union[float, ArrayLike, None] = None, sinks: Optional[ArrayLike] = None,
              return_lse: bool = False, kv_dtype: str = "f32", compute: str = "f32",
              threads: Optional[int] = None) -> Any:
    """softmax(scale·Q·Kᵀ + mask)·V like torch.nn.functional.scaled_dot_product_attention,
    on one of attnbench's kernels. Returns O [batch, heads, seq_q, head_dim_v] float32 (and
    the LSE [batch, heads, seq_q] with return_lse=True) as the type q came in: a torch
    tensor for a torch q, else a NumPy array. The arguments: docs/python.md."""
    pr = _problem(q, k, v, attn_mask=attn_mask, dropout_p=dropout_p, is_causal=is_causal,
                  scale=scale, enable_gqa=enable_gqa, align=align, window=window,
                  softcap=softcap, alibi=alibi, sinks=sinks, kv_dtype=kv_dtype,
                  compute=compute)
    return _run(pr, kernel, threads, return_lse)


def check_attention(out: ArrayLike, q: ArrayLike, k: ArrayLike, v: ArrayLike, *,
                    lse: Optional[ArrayLike] = None, **options: Any) -> CheckResult:
    """The checker's CheckResult (kernels/check/check.h, the tolerance of `attnbench check`)
    for an O (and, if given, an LSE) computed for attention(q, k, v, **options) — by
    attention() or by anything else. options: attention()'s problem arguments; with
    attention_varlen()'s or attention_paged()'s layout arguments (cu_seqlens_q=,
    cu_seqlens_k= / block_table=, cache_seqlens=) the output of that layout."""
    from ._layouts import problem_of  # the layouts build on this module
    for bad in ("kernel", "threads", "return_lse"):
        if bad in options:
            raise InvalidOptionError(f"check_attention: {bad}= is not a problem argument")
    pr = problem_of(q, k, v, "check_attention", **options)
    o = _f32_array(out, "out", pr.oshape)
    lse_a = None if lse is None else _f32_array(lse, "lse", pr.lse_shape)
    verdict, stats = ctypes.c_int(), (ctypes.c_double * 4)()
    msg = ctypes.create_string_buffer(512)
    rc = _checked_native().attnpy_attention_check(
        *pr.args(), pr.q.ctypes.data, pr.k.ctypes.data, pr.v.ctypes.data, o.ctypes.data,
        None if lse_a is None else lse_a.ctypes.data, None, ctypes.byref(verdict), stats, msg,
        len(msg))
    if rc != _api._OK:
        _raise(rc, msg.value.decode(errors="replace"))
    name = _VERDICTS[verdict.value]
    return CheckResult(name, name == "pass", stats[0], stats[1], stats[2], int(stats[3]),
                       msg.value.decode(errors="replace"))


def quantize(x: ArrayLike, dtype: str) -> np.ndarray:
    """x (float32, C-contiguous, rows along the last axis) stored as a K/V type: "f16" and
    "bf16" give uint16 bits (round to nearest even), "q8_0" uint8 rows of 34-byte blocks
    (the last axis a multiple of 32). The rounding of kernels/core/convert.h."""
    dtype = _choice(dtype, "dtype", {k: v for k, v in KV_DTYPES.items() if k != "f32"})
    a, kind = _raw(x, "x")
    if kind != "f32":
        raise DtypeError(f"x: dtype {_kind_name(kind)}, expected float32")
    a = _contiguous(a, "x")
    if a.ndim < 1 or a.shape[-1] < 1:
        raise ShapeError(f"x: shape {tuple(a.shape)}, expected rows along a last axis")
    dim = a.shape[-1]
    rows = a.size // dim
    if dtype == "q8_0":
        if dim % _Q8_0_BLOCK:
            raise ShapeError(f"x: last axis {dim} is not a multiple of {_Q8_0_BLOCK} (Q8_0)")
        out = np.empty(a.shape[:-1] + (dim // _Q8_0_BLOCK * _Q8_0_BYTES,), dtype=np.uint8)
    else:
        out = np.empty(a.shape, dtype=np.uint16)
    err = ctypes.create_string_buffer(256)
    rc = _native().attnpy_quantize(KV_DTYPES[dtype], a.ctypes.data, rows, dim, out.ctypes.data,
                                   err, len(err))
    if rc != _api._OK:
        _raise(rc, err.value.decode(errors="replace"))
    return out

