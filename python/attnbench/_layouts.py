# SPDX-License-Identifier: MIT
"""attention_varlen() and attention_paged(): the serving layouts of kernels/attn.h
("Serving layouts"), shaped like FlashAttention's flash_attn_varlen_func (a ragged batch
packed by tokens, cu_seqlens offsets) and vLLM's paged attention (K/V caches in pages of
[num_pages, kv_heads, page_size, head_dim] addressed through a block table). Causal
masks, windows and ALiBi distances are aligned per sequence, bottom-right by default
(FlashAttention's and vLLM's rule). See docs/python.md.
"""

import ctypes
import difflib
import inspect
import numbers
from typing import Any, Optional, Sequence, Tuple, Union

import numpy as np

from . import _api
from ._api import DtypeError, InvalidProblemError, ShapeError, _same_sizes
from ._attention import (COMPUTE_MODES, KV_DTYPES, ArrayLike, _choice, _contiguous, _is_torch,
                         _kind_name, _kv_array, _mask_values, _options, _ctypes_options,
                         _problem, _Problem, _q_array, _raw, _row_bytes, _run)

_RAGGED, _PAGED = 1, 2  # attn.h attn_layout_kind
_INT32_MAX = 2**31 - 1
# The keywords that make benchmark() / check_attention() a layout problem.
_PAGED_KEYS = ("block_table", "cache_seqlens")
_RAGGED_KEYS = ("cu_seqlens_q", "cu_seqlens_k")


def _index_vector(x: Any, what: str) -> np.ndarray:
    """A 1-D int32 or int64 array (torch.int32 as FlashAttention and vLLM pass them), as
    int64 (a copy)."""
    a, kind = _raw(x, what)
    if a.dtype not in (np.int32, np.int64):
        raise DtypeError(f"{what}: dtype {_kind_name(kind)}, expected int32 or int64")
    if a.ndim != 1:
        raise ShapeError(f"{what}: {a.ndim}-D shape {tuple(a.shape)}, expected 1-D")
    return a.astype(np.int64)


def _cu_seqlens(x: Any, what: str) -> np.ndarray:
    """Offsets [sequences + 1]: 0, then running sums of the lengths."""
    a = _index_vector(x, what)
    if a.shape[0] < 2:
        raise ShapeError(f"{what}: {a.shape[0]} entries, expected sequences + 1 >= 2")
    if a[0] != 0:
        raise InvalidProblemError(f"{what}[0] = {a[0]}, expected 0 (offsets start at 0)")
    down = np.flatnonzero(np.diff(a) < 0)
    if down.size:
        i = int(down[0])
        raise InvalidProblemError(f"{what} decreases at entry {i + 1}: {a[i]} then {a[i + 1]} "
                                  f"(offsets are running sums of the lengths)")
    return a


def _max_seqlen(given: Any, what: str, lens: np.ndarray) -> None:
    """max_seqlen_q / max_seqlen_k as FlashAttention takes them: optional here, and when
    given it must bound every length."""
    if given is None:
        return
    if isinstance(given, (bool, np.bool_)) or not isinstance(given, numbers.Integral):
        raise _api.InvalidOptionError(f"{what}: {given!r} is not an integer")
    if lens.size and given < lens.max():
        b = int(np.argmax(lens))
        raise ShapeError(f"{what}={given} is less than sequence {b}'s length {lens[b]}")


def _block_table(x: Any, kvlens: np.ndarray, page_size: int, num_pages: int) -> np.ndarray:
    """The page table [sequences, pages_per_seq] as a C-contiguous int32 copy or view. The
    entries a sequence uses (the first ceil(kv_len / page_size) of its row) must name a
    page of the pool; the others are not read and may hold anything (int64 ones outside
    int32 become -1)."""
    seqs = kvlens.size
    a, kind = _raw(x, "block_table")
    if a.dtype not in (np.int32, np.int64):
        raise DtypeError(f"block_table: dtype {_kind_name(kind)}, expected int32 or int64")
    if a.ndim != 2 or a.shape[0] != seqs or a.shape[1] < 1:
        raise ShapeError(f"block_table: shape {tuple(a.shape)}, expected [{seqs}, max_pages] "
                         f"(one row per sequence of cache_seqlens, at least one column)")
    for b in range(seqs):
        used = -(-int(kvlens[b]) // page_size) if page_size > 0 else 0
        if used > a.shape[1]:
            raise InvalidProblemError(f"block_table: shape {tuple(a.shape)}; sequence {b} "
                                      f"(cache_seqlens[{b}] = {int(kvlens[b])}) needs {used} "
                                      f"pages of {page_size}, its row has {a.shape[1]}")
        bad = np.flatnonzero((a[b, :used] < 0) | (a[b, :used] >= num_pages))
        if bad.size:
            j = int(bad[0])
            raise InvalidProblemError(
                f"block_table[{b}][{j}] = {int(a[b, j])} is not a page of the pool (k_cache "
                f"holds {num_pages}): sequence {b} uses the first {used} entries of its row")
    if a.dtype == np.int32:
        return np.ascontiguousarray(a)  # a slice of a wider table (vLLM's) is copied
    return np.where((a < 0) | (a > _INT32_MAX), -1, a).astype(np.int32)


def _layout_mask(x: Any, qlens: np.ndarray, kvlens: np.ndarray, h: int
                 ) -> Tuple[np.ndarray, bool]:
    """One mask per sequence, [q_len, kv_len] or [heads, q_len, kv_len] (bool or float32),
    packed one after the other as attn.h lays them out; per head if any has a heads axis."""
    if not isinstance(x, (list, tuple)) or len(x) != len(qlens):
        raise ShapeError(f"attn_mask: a list of {len(qlens)} masks (one per sequence, "
                         f"[q_len, kv_len] or [heads, q_len, kv_len]), got {type(x).__name__}"
                         + (f" of {len(x)}" if isinstance(x, (list, tuple)) else ""))
    masks = []
    for b, m in enumerate(x):
        a = _mask_values(m, f"attn_mask[{b}]")
        want = (int(qlens[b]), int(kvlens[b]))
        if a.shape[-2:] != want or a.ndim not in (2, 3) or (a.ndim == 3 and
                                                             a.shape[0] not in (1, h)):
            raise ShapeError(f"attn_mask[{b}]: shape {tuple(a.shape)}, expected {want} or "
                             f"{(h,) + want} (q_len, kv_len of sequence {b})")
        masks.append(a)
    per_head = h > 1 and any(a.ndim == 3 and a.shape[0] == h for a in masks)
    flat = []
    for a in masks:
        w = a.shape[-2:]
        a = a.reshape(w) if a.ndim == 3 and a.shape[0] == 1 else a
        flat.append(np.broadcast_to(a, (h,) + w if per_head else w).ravel())
    return np.ascontiguousarray(np.concatenate(flat), dtype=np.float32), per_head


def _layout_problem(q: Any, qa: np.ndarray, ka: np.ndarray, va: np.ndarray, dk: int, dv: int,
                    cu_q: np.ndarray, cu_kv: np.ndarray, lay: Tuple[int, ...],
                    table: Optional[np.ndarray], attn_mask: Any, kv_dtype: str,
                    options: dict) -> _Problem:
    """The problem of a ragged or paged batch whose arrays are checked."""
    total_q, h, dqk = qa.shape
    hk = ka.shape[1]
    _same_sizes((("k", dk, dqk, "head_dim (last axis)", "q"),
                 ("cu_seqlens_q", int(cu_q[-1]), total_q, "the last offset (query tokens)",
                  "q (axis 0)")), f"q {tuple(qa.shape)}, k {tuple(ka.shape)}")
    qlens, kvlens = np.diff(cu_q), np.diff(cu_kv)
    kv_what = "cache_seqlens" if lay[0] == _PAGED else "cu_seqlens_k"
    if not qlens.any():
        raise InvalidProblemError("cu_seqlens_q: no sequence has a query token (a batch "
                                  "needs at least one)")
    if not kvlens.any():
        raise InvalidProblemError(f"{kv_what}: every sequence's context is empty (a batch "
                                  f"needs at least one key)")
    options.setdefault("align", "bottom_right")  # FlashAttention's and vLLM's causal rule
    io, fo, slopes, sinks = _options(h, kv_dtype=kv_dtype, **options)
    mask = None
    if attn_mask is not None:
        mask, io["mask_per_head"] = _layout_mask(attn_mask, qlens, kvlens, h)
    seqs = len(qlens)
    dims = (ctypes.c_int64 * 7)(seqs, h, hk, int(qlens.max()), int(kvlens.max()), dqk, dv)
    return _Problem(qa, ka, va, dims, *_ctypes_options(io, fo), (slopes, sinks, mask),
                    (total_q, h, dv), _is_torch(q), lse_shape=(h, total_q),
                    layout="paged" if lay[0] == _PAGED else "ragged",
                    lay=(ctypes.c_int64 * len(lay))(*lay), lay_arrays=(cu_q, cu_kv, table),
                    tokens=total_q,
                    kv_row_bytes=hk * (_row_bytes(kv_dtype, dk) + _row_bytes(kv_dtype, dv)))


def _packed_q(q: Any, compute: str) -> np.ndarray:
    qa = _q_array(q, compute)
    if qa.ndim != 3:
        raise ShapeError(f"q: {qa.ndim}-D shape {tuple(qa.shape)}, expected 3-D "
                         f"[total_q, heads, head_dim] (tokens packed as flash_attn_varlen_func)")
    _api._no_empty_axis("q", qa.shape, ("total_q", "heads", "head_dim"), skip=("total_q",))
    return qa


def _varlen_problem(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q=None, max_seqlen_k=None,
                    *, attn_mask=None, kv_dtype="f32", compute="f32", **options) -> _Problem:
    kv_dtype = _choice(kv_dtype, "kv_dtype", KV_DTYPES)
    compute = _choice(compute, "compute", COMPUTE_MODES)
    qa = _packed_q(q, compute)
    axes = ("total_k", "kv_heads", "head_dim")
    ka, dk = _kv_array(k, "k", kv_dtype, axes)
    va, dv = _kv_array(v, "v", kv_dtype, axes)
    cu_q = _cu_seqlens(cu_seqlens_q, "cu_seqlens_q")
    cu_kv = _cu_seqlens(cu_seqlens_k, "cu_seqlens_k")
    _same_sizes((("cu_seqlens_k", len(cu_kv), len(cu_q), "entries", "cu_seqlens_q"),
                 ("v", va.shape[0], ka.shape[0], "total_k (axis 0)", "k"),
                 ("v", va.shape[1], ka.shape[1], "kv_heads (axis 1)", "k"),
                 ("cu_seqlens_k", int(cu_kv[-1]), ka.shape[0], "the last offset (keys)",
                  "k (axis 0)")), f"k {tuple(ka.shape)}, v {tuple(va.shape)}")
    _max_seqlen(max_seqlen_q, "max_seqlen_q", np.diff(cu_q))
    _max_seqlen(max_seqlen_k, "max_seqlen_k", np.diff(cu_kv))
    lay = (_RAGGED, len(cu_q) - 1, 0, 0, 0)
    return _layout_problem(q, qa, ka, va, dk, dv, cu_q, cu_kv, lay, None, attn_mask, kv_dtype,
                           dict(compute=compute, **options))


def _paged_problem(q, k_cache, v_cache, block_table, cache_seqlens, cu_seqlens_q=None,
                   max_seqlen_q=None, *, attn_mask=None, kv_dtype="f32", compute="f32",
                   **options) -> _Problem:
    kv_dtype = _choice(kv_dtype, "kv_dtype", KV_DTYPES)
    compute = _choice(compute, "compute", COMPUTE_MODES)
    qa = _packed_q(q, compute)
    axes = ("num_pages", "kv_heads", "page_size", "head_dim")
    ka, dk = _kv_array(k_cache, "k_cache", kv_dtype, axes)
    va, dv = _kv_array(v_cache, "v_cache", kv_dtype, axes)
    _same_sizes(tuple(("v_cache", va.shape[i], ka.shape[i], f"{axes[i]} (axis {i})", "k_cache")
                      for i in range(3)), f"k_cache {tuple(ka.shape)}, v_cache {tuple(va.shape)}")
    kvlens = _index_vector(cache_seqlens, "cache_seqlens")
    if kvlens.size < 1:
        raise ShapeError("cache_seqlens: empty, expected one context length per sequence")
    if (kvlens < 0).any():
        b = int(np.argmax(kvlens < 0))
        raise InvalidProblemError(f"cache_seqlens[{b}] = {kvlens[b]} is negative")
    seqs = kvlens.size
    table = _block_table(block_table, kvlens, ka.shape[2], ka.shape[0])
    if cu_seqlens_q is None:  # a decode step: one new token per sequence
        if qa.shape[0] != seqs:
            raise ShapeError(f"q: {qa.shape[0]} tokens for {seqs} sequences (cache_seqlens); "
                             f"with cu_seqlens_q=None each sequence has one query token")
        cu_q = np.arange(seqs + 1, dtype=np.int64)
    else:
        cu_q = _cu_seqlens(cu_seqlens_q, "cu_seqlens_q")
        _same_sizes((("cu_seqlens_q", len(cu_q), seqs + 1, "entries",
                      "cache_seqlens + 1"),), f"cache_seqlens ({seqs},)")
    _max_seqlen(max_seqlen_q, "max_seqlen_q", np.diff(cu_q))
    cu_kv = np.concatenate(([0], np.cumsum(kvlens))).astype(np.int64)
    num_pages, _, page_size = ka.shape[:3]
    lay = (_PAGED, seqs, page_size, num_pages, table.shape[1])
    return _layout_problem(q, qa, ka, va, dk, dv, cu_q, cu_kv, lay, table, attn_mask, kv_dtype,
                           dict(compute=compute, **options))


def _keywords(fn, positional: int = 0) -> Tuple[str, ...]:
    """The names fn takes by keyword, after its first `positional` parameters."""
    params = list(inspect.signature(fn).parameters.values())[positional:]
    return tuple(p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY))


def _known_keywords(caller: str, given: Any, allowed: Tuple[str, ...]) -> None:
    """TypeError naming the caller (not an internal helper) for a keyword it does not take,
    with the nearest one it does ("is_casual": did you mean "is_causal"?)."""
    bad = next((n for n in given if n not in allowed), None)
    if bad is None:
        return
    near = difflib.get_close_matches(bad, allowed, n=1)
    raise TypeError(f"{caller}() got an unexpected keyword argument {bad!r}" + (
        f"; did you mean {near[0]!r}?" if near else
        f"; its problem keywords are {', '.join(sorted(allowed))}"))


# The keywords of each problem: q, k, v (or the caches) come first, positionally.
_OPTION_KEYWORDS = _keywords(_options, 1)  # is_causal, scale, align, window, ...


def _layout_keywords(fn) -> Tuple[str, ...]:
    names = tuple(n for n in _keywords(fn, 3) if n != "options") + _OPTION_KEYWORDS
    return tuple(dict.fromkeys(names))  # kv_dtype and compute are in both


def problem_of(q: Any, k: Any, v: Any, caller: str, **kw) -> _Problem:
    """The problem of attention_paged() (block_table= / cache_seqlens= given),
    attention_varlen() (cu_seqlens_q= / cu_seqlens_k=) or attention() (neither); a keyword
    that problem does not take is a TypeError naming caller."""
    if any(key in kw for key in _PAGED_KEYS):
        _known_keywords(caller, kw, _layout_keywords(_paged_problem))
        return _paged_problem(q, k, v, **kw)
    if any(key in kw for key in _RAGGED_KEYS):
        _known_keywords(caller, kw, _layout_keywords(_varlen_problem))
        return _varlen_problem(q, k, v, **kw)
    _known_keywords(caller, kw, _keywords(_problem, 3))
    return _problem(q, k, v, **kw)


Window = Optional[Tuple[Optional[int], Optional[int]]]
Masks = Optional[Sequence[ArrayLike]]
KernelArg = Union[str, "_api.Kernel", None]


def attention_varlen(q: ArrayLike, k: ArrayLike, v: ArrayLike, cu_seqlens_q: ArrayLike,
                     cu_seqlens_k: ArrayLike, max_seqlen_q: Optional[int] = None,
                     max_seqlen_k: Optional[int] = None, *, attn_mask: Masks = None,
                     is_causal: bool = False, scale: Optional[float] = None,
                     kernel: KernelArg = None, align: str = "bottom_right", window: Window = None,
                     softcap: Optional[float] = None,
                     alibi: Union[float, ArrayLike, None] = None,
                     sinks: Optional[ArrayLike] = None, return_lse: bool = False,
                     kv_dtype: str = "f32", compute: str = "f32",
                     threads: Optional[int] = None) -> Any:
    """A ragged batch, like flash_attn_varlen_func: q [total_q, heads, head_dim], k
    [total_k, kv_heads, head_dim], v [total_k, kv_heads, head_dim_v], packed by tokens;
    sequence b is q[cu_seqlens_q[b]:cu_seqlens_q[b+1]] against
    k[cu_seqlens_k[b]:cu_seqlens_k[b+1]]. Causal / window / ALiBi aligned per sequence
    (align, default bottom-right). Returns O [total_q, heads, head_dim_v] (and LSE [heads,
    total_q] with return_lse=True) as q's type. docs/python.md."""
    pr = _varlen_problem(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k,
                         attn_mask=attn_mask, is_causal=is_causal, scale=scale, align=align,
                         window=window, softcap=softcap, alibi=alibi, sinks=sinks,
                         kv_dtype=kv_dtype, compute=compute)
    return _run(pr, kernel, threads, return_lse)


def attention_paged(q: ArrayLike, k_cache: ArrayLike, v_cache: ArrayLike,
                    block_table: ArrayLike, cache_seqlens: ArrayLike,
                    cu_seqlens_q: Optional[ArrayLike] = None,
                    max_seqlen_q: Optional[int] = None, *, kernel: KernelArg = None,
                    return_lse: bool = False, threads: Optional[int] = None,
                    **options: Any) -> Any:
    """Paged K/V caches, like vLLM's paged attention: k_cache [num_pages, kv_heads,
    page_size, head_dim], v_cache [num_pages, kv_heads, page_size, head_dim_v]; key t of
    sequence b is slot t % page_size of page block_table[b, t // page_size]; sequence b has
    cache_seqlens[b] keys and the queries q[cu_seqlens_q[b]:cu_seqlens_q[b+1]] (q [total_q,
    heads, head_dim]; cu_seqlens_q=None: one token per sequence, a decode step). options:
    attention_varlen()'s keywords (attn_mask, is_causal, scale, align, window, softcap,
    alibi, sinks, kv_dtype, compute). Returns O [total_q, heads, head_dim_v] (and LSE
    [heads, total_q]) as q's type. docs/python.md."""
    _known_keywords("attention_paged", options,
                    tuple(n for n in _layout_keywords(_paged_problem) if n not in _PAGED_KEYS))
    pr = _paged_problem(q, k_cache, v_cache, block_table, cache_seqlens, cu_seqlens_q,
                        max_seqlen_q, **options)
    return _run(pr, kernel, threads, return_lse)
