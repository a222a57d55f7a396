# SPDX-License-Identifier: MIT
"""hugepages — the baselines' input arrays on transparent huge pages, as the C harness
allocates the kernels' inputs (docs/baselines.md, "Huge pages").

The harness gives every input buffer of 2 MiB or more a 2 MiB-aligned allocation advised
with madvise(MADV_HUGEPAGE): with transparent huge pages in "madvise" mode (the kernel
then backs only advised ranges with 2 MiB pages), a buffer without the advice gets 4 KiB
pages and its reads pay many more TLB misses — under nested paging decode loses a large
share of its bandwidth to them. So that a framework reads its inputs from the same kind
of memory, the runner loads every .npy it hands to a baseline with load_npy(), and a
baseline that lays its inputs out anew (a transpose, a relayout, a library's own buffer)
makes that buffer with empty() or copy().

empty(shape, dtype) is an ndarray on an anonymous mmap, its data 2 MiB-aligned (the
mapping is 2 MiB longer than needed and the array starts at the first 2 MiB boundary),
advised with mmap.madvise(MADV_HUGEPAGE) — Python >= 3.8 on Linux. Below 2 MiB, or where
madvise or MADV_HUGEPAGE is unavailable (another OS) or refused, it falls back silently
to ordinary memory. advised() says whether every buffer of 2 MiB or more made here got
the advice (what a result entry records as huge_pages); anon_huge_kib() is the process's
AnonHugePages (what the kernel actually backs with huge pages, /proc/self/smaps_rollup),
None where that file does not exist.
"""
import mmap

THRESHOLD = 2 << 20  # bytes: the harness's rule (buffers of 2 MiB or more)
ALIGN = 2 << 20
_state = {"large": 0, "advised": 0}


def _advise(m):
    flag = getattr(mmap, "MADV_HUGEPAGE", None)
    if flag is None or not hasattr(m, "madvise"):
        return False
    try:
        m.madvise(flag)
    except OSError:  # THP "never", or a kernel without it
        return False
    return True


def empty(shape, dtype):
    """An uninitialised C-order ndarray; 2 MiB-aligned and advised for huge pages when it
    is 2 MiB or more and the platform allows it."""
    import numpy as np
    dt = np.dtype(dtype)
    count = 1
    for n in (shape if isinstance(shape, (tuple, list)) else (shape,)):
        count *= int(n)
    nbytes = count * dt.itemsize
    if nbytes < THRESHOLD:
        return np.empty(shape, dtype=dt)
    _state["large"] += 1
    try:
        m = mmap.mmap(-1, nbytes + ALIGN, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    except (AttributeError, OSError, ValueError):  # no anonymous mmap here
        return np.empty(shape, dtype=dt)
    base = np.frombuffer(m, dtype=np.uint8)
    off = (-base.ctypes.data) % ALIGN
    if _advise(m):
        _state["advised"] += 1
    # the array keeps the mmap alive (frombuffer holds the buffer)
    return np.frombuffer(m, dtype=dt, count=count, offset=off).reshape(shape)


def copy(a, dtype=None):
    """A C-contiguous copy of a (converted to dtype if given) made with empty()."""
    import numpy as np
    a = np.asarray(a)
    out = empty(a.shape, dtype or a.dtype)
    np.copyto(out, a, casting="unsafe" if dtype else "no")
    return out


def load_npy(path):
    """np.load(path) into a buffer made with empty() (a C-order array read straight into
    it; a Fortran-order file is loaded and copied)."""
    import numpy as np
    fmt = np.lib.format
    with open(path, "rb") as f:
        major, _ = fmt.read_magic(f)
        if major == 1:
            shape, fortran, dtype = fmt.read_array_header_1_0(f)
        elif major == 2:
            shape, fortran, dtype = fmt.read_array_header_2_0(f)
        else:
            f.seek(0)
            return copy(np.load(f, allow_pickle=False))
        if fortran or dtype.hasobject:
            f.seek(0)
            return copy(np.load(f, allow_pickle=False))
        out = empty(shape, dtype)
        view = memoryview(out.reshape(-1).view(np.uint8))
        got = f.readinto(view) if out.size else 0
        if got != out.nbytes:
            raise ValueError("%s: truncated .npy (%d of %d data bytes)" % (path, got, out.nbytes))
    return out


def advised():
    """True when every buffer of 2 MiB or more made here so far was advised for huge
    pages (and there was at least one), else False."""
    return _state["large"] > 0 and _state["advised"] == _state["large"]


def anon_huge_kib():
    """AnonHugePages of this process in KiB (/proc/self/smaps_rollup), or None."""
    try:
        with open("/proc/self/smaps_rollup") as f:
            for line in f:
                if line.startswith("AnonHugePages:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None
