#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Reading `attnbench bench` results files (Google Benchmark JSON) into one record per
benchmark point. Shared by plot.py, compare.py and summary.py.

Shapes come from the counters (B, H, KV, Sq, Skv, Dqk, Dv, causal, kernel_threads, and
the attention options align, window_left, window_right, softcap, alibi, sinks, mask, lse; files
from before the options have none, which reads as no options) and the kernel from the
label; a point's name is read only for what no counter says: its serving batch
(SERVING_RE) and whether its inputs were cold ("/cold"). Points that differ only in an
option, a serving batch or cold inputs are different shapes. The `fallback` counter (1: the kernel lacks one of the point's options
natively and the portable fallback was timed) is shown by summary.py and compare.py. With repetitions the
record holds the median (Google Benchmark's "median" aggregate) and the spread of the
repetitions; without, the single run. Entries and counters this module does not know
(e.g. external baselines with `baseline = 1`) are kept and ignored.

The roofline score: a point's roofline time is
    t_roof = max(flop / unit peak, bytes / read bandwidth)
with the peak of the unit the point computes on (FP32 FMA of the kernel's ISA, or the
bf16-dot / int8-dot unit of its compute mode) at its thread count and the bandwidth measured at that
thread count, both from the same run (the `roofline_GFLOP/s` counter = flop / t_roof;
files without it fall back to the `peak_GFLOP/s` counter and the context's
read_bandwidth_gbs_T<threads>). % of roofline = 100 · t_roof / median time, and the limit
is "bandwidth" when the bytes term is the larger (decode), else the unit ("FMA", "bf16-dot", …).
"""
import json
import math
import os
import re
import statistics
import sys
import tempfile

SHAPE_KEYS = ("B", "H", "KV", "Sq", "Skv", "Dqk", "Dv", "causal")
# The option counters and their value when absent (no option; -1 = unbounded window side).
OPTION_KEYS = (("align", 0), ("window_left", -1), ("window_right", -1), ("softcap", 0),
               ("alibi", 0), ("sinks", 0), ("mask", 0), ("lse", 0))


def options_label(counters):
    """"" for no options, else e.g. "top-left win4095:0 softcap50 alibi8 sinks mask lse"."""
    c = counters
    get = {k: c.get(k, d) for k, d in OPTION_KEYS}
    parts = []
    if get["align"]:
        parts.append("top-left")
    left, right = int(get["window_left"]), int(get["window_right"])
    if left >= 0 or right >= 0:
        side = lambda v: "inf" if v < 0 else str(v)  # noqa: E731
        parts.append("win%s:%s" % (side(left), side(right)))
    if get["softcap"]:
        parts.append("softcap%g" % get["softcap"])
    if get["alibi"]:
        parts.append("alibi%g" % get["alibi"])
    if get["sinks"]:
        parts.append("sinks")
    if get["mask"]:
        parts.append("mask")
    if get["lse"]:
        parts.append("lse")
    return " ".join(parts)


# The K/V element type counter (attn_dtype code; absent in older files: f32) and its names.
KV_DTYPE_NAMES = ("f32", "f16", "bf16", "q8_0")
COMPUTE_NAMES = ("f32", "bf16", "f16", "int8")  # the "compute" counter (attn_compute)


# The serving description in a point's name (harness/bench: …/T2/q=…/kv=…/ragged|pageN[s]).
# The one rule that tells a serving point by its name: render-results and plot-serving
# read it through Point.serving and Point.serving_batch.
# A length list longer than 32 characters is named by its hash ("q#1a2b3c4d", "kv#…"):
# still a serving point, and another batch than any other hash or list.
SERVING_RE = re.compile(r"/(q([=#][^/]*)/kv([=#][^/]*)/(ragged|page([0-9]+)(s?)))(?=/|$)")
# A point timed on cold inputs (`cold_inputs = true`: "/cold" in its name) is another
# measurement than the warm point of the same problem.
COLD_RE = re.compile(r"/cold(?=/|$)")
FIXED_KV_RE = re.compile(r"fixed:([0-9]+):([0-9]+)$")


class ServingBatch:
    """A serving point's batch description, parsed from its name (docs/serving.md):
    q (the query mix: "decode", "prefill:1:512", ...), kv (the context mix: "fixed:8:4096",
    "longtail:32:4096:1", ...), page_size (0: ragged, K/V contiguous per sequence) and
    shuffled (the page order). fixed is (sequences, context) for a uniform "fixed:N:L"
    context mix, else None."""

    def __init__(self, m):
        # "decode", "512_1_1" (a list), or "#1a2b3c4d" (a long list, by its hash)
        self.q, self.kv = (g[1:] if g[0] == "=" else g for g in (m.group(2), m.group(3)))
        self.page_size = int(m.group(5)) if m.group(5) else 0
        self.shuffled = bool(m.group(6))
        f = FIXED_KV_RE.match(self.kv)
        self.fixed = (int(f.group(1)), int(f.group(2))) if f else None

    @property
    def layout(self):
        """"ragged", "page 16" or "page 16 shuffled"."""
        if not self.page_size:
            return "ragged"
        return "page %d%s" % (self.page_size, " shuffled" if self.shuffled else "")


class Point:
    """One benchmark point of one results file."""

    def __init__(self, name):
        self.name = name
        self.kernel = name.split("/")[0]
        self.counters = {}
        self.error = None
        self.times = []       # seconds per iteration, one per repetition
        self.median_s = None  # median seconds per iteration
        self.cv = None        # stddev/mean of the repetitions (None if < 2)

    @property
    def shape(self):
        """The shape counters, the K/V type (points of one shape stored as another type
        read other bytes: another shape), then the options, then a serving batch's
        description (its lengths and layout: a ragged and a paged batch of the same
        largest lengths are different problems), then whether the inputs were cold."""
        return (self.base_shape[:len(SHAPE_KEYS) + 2] +
                tuple(float(self.counters.get(k, d)) for k, d in OPTION_KEYS) +
                self.base_shape[len(SHAPE_KEYS) + 2:])

    @property
    def base_shape(self):
        """shape without the options: the point an option point is compared with."""
        return (tuple(int(self.counters.get(k, 0)) for k in SHAPE_KEYS) + (self.kv_dtype_code,) +
                (self.compute_code,) + (self.serving, self.cold))

    @property
    def cold(self):
        """True for a point timed on cold inputs (its name's "/cold")."""
        return bool(COLD_RE.search(self.name))

    @property
    def serving(self):
        """A serving batch's description from the point's name ("q=decode/kv=fixed:8:4096/
        page16s": docs/serving.md), or "" for a dense point."""
        m = SERVING_RE.search(self.name)
        return m.group(1) if m else ""

    @property
    def serving_batch(self):
        """The parsed serving description (ServingBatch), or None for a dense point."""
        m = SERVING_RE.search(self.name)
        return ServingBatch(m) if m else None

    @property
    def kv_dtype_code(self):
        return int(self.counters.get("kv_dtype", 0))

    @property
    def compute_code(self):
        """The compute mode (docs/precision.md): another mode is another problem."""
        return int(self.counters.get("compute", 0))

    @property
    def fallback(self):
        """True if the timings are the portable fallback's (options the kernel lacks)."""
        return bool(self.counters.get("fallback", 0))

    @property
    def threads(self):
        return int(self.counters.get("kernel_threads", 1))

    def get(self, counter, default=None):
        return self.counters.get(counter, default)

    @property
    def adj_bw_pct(self):
        """The % of the adjacent bandwidth probe (docs/benchmarking.md) the point reached,
        or None. A serving point counts the bytes its roofline counts (`roofline_bytes`: the
        K/V its rows can see and the packed Q and O), derived here from the stored time and
        probe, so files written while `%adj_bw` counted the whole pool read the same; a
        dense point's stored `%adj_bw` already counts its roofline bytes."""
        rb, near = self.counters.get("roofline_bytes"), self.counters.get("adj_bw_GB/s")
        serving = "seqs" in self.counters
        if serving and rb and near and self.median_s and "%adj_bw" in self.counters and not self.error:
            return 100.0 * rb / self.median_s / (near * 1e9)
        return self.counters.get("%adj_bw")

    @property
    def gflops(self):
        return self.counters.get("GFLOP/s")

    @property
    def roofline_bytes(self):
        """The bytes a call must move (`roofline_bytes`: the K/V its rows can see, Q and O),
        or the tensors' (`bytes`) in files without the counter; None without either."""
        return self.counters.get("roofline_bytes") or self.counters.get("bytes")

    @property
    def gbs(self):
        """GB/s of the bytes the roofline counts. A serving point's is derived from
        `roofline_bytes` and the median time, so files whose GB/s counted the pool read the
        same; other points' stored GB/s counts them already (files without roofline_bytes:
        the tensors')."""
        rb = self.counters.get("roofline_bytes")
        if "seqs" in self.counters and rb and self.median_s and not self.error:
            return rb / self.median_s / 1e9
        return self.counters.get("GB/s")

    def attainable_gflops(self, context=None):
        """min(FMA peak, intensity x read bandwidth) for this point, or None if unknown."""
        a = self.counters.get("roofline_GFLOP/s")
        if a:
            return a
        peak, flop, nbytes = self.counters.get("peak_GFLOP/s"), self.counters.get("flop"), self.roofline_bytes
        bw = bandwidths(context or {}).get(self.threads)
        if not (peak and bw and flop and nbytes):
            return None
        return min(peak, flop / nbytes * bw)

    def roofline_s(self, context=None):
        """The roofline time t_roof in seconds, or None."""
        a = self.attainable_gflops(context)
        flop = self.counters.get("flop")
        return flop / (a * 1e9) if a and flop else None

    def roofline_pct(self, context=None):
        """100 * t_roof / median time, or None."""
        t = self.roofline_s(context)
        return 100.0 * t / self.median_s if t and self.median_s and not self.error else None

    def limit(self, context=None):
        """'bandwidth', or the compute unit whose peak the point is scored against ('FMA' for
        float32, else the unit's name from the context, e.g. 'bf16-dot'): which roofline
        term is the larger, or None."""
        if "memory_bound" in self.counters:
            if self.counters["memory_bound"] >= 0.5:
                return "bandwidth"
            unit = int(self.counters.get("peak_unit", 0) or 0)
            if unit == 0:
                return "FMA"
            return peak_unit_names(context or {}).get(unit, "unit %d" % unit)
        a = self.attainable_gflops(context)
        peak = self.counters.get("peak_GFLOP/s")
        if not a or not peak:
            return None
        return "bandwidth" if a < peak else "FMA"

    def spread(self, value):
        """(low, high) of a per-iteration rate (GFLOP/s, % of roofline: value at the median
        time) over the repetitions, which scale as 1 / time; None without repetitions."""
        if value is None or len(self.times) < 2 or not self.median_s:
            return None
        vals = [value * self.median_s / t for t in self.times if t > 0]
        return (min(vals), max(vals)) if vals else None

    def shape_label(self):
        c = self.counters
        s = "B%d H%d KV%d Sq%d Skv%d D%d" % tuple(int(c.get(k, 0)) for k in SHAPE_KEYS[:6])
        if int(c.get("Dv", 0)) != int(c.get("Dqk", 0)):
            s += " Dv%d" % int(c.get("Dv", 0))
        s += " causal" if c.get("causal") else ""
        t = self.kv_dtype_code
        if t:
            s += " " + (KV_DTYPE_NAMES[t] if t < len(KV_DTYPE_NAMES) else "kv%d" % t)
        m = self.compute_code
        if m:
            s += " compute:" + (COMPUTE_NAMES[m] if m < len(COMPUTE_NAMES) else str(m))
        opts = options_label(c)
        return (s + (" " + opts if opts else "") + (" " + self.serving if self.serving else "") +
                (" cold" if self.cold else ""))


_UNIT = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}


class ResultsError(ValueError):
    """A results file that is not what `attnbench bench` writes: one line saying what is
    wrong (the callers print it after the file's name)."""


def _finite_number(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _check_entry(i, b):
    """Raises ResultsError unless benchmarks[i] has the fields load() reads, of the right
    types, and every number in it is finite."""
    if not isinstance(b, dict):
        raise ResultsError("benchmarks[%d] is %s, not an object" % (i, type(b).__name__))
    name = b.get("name")
    if not isinstance(name, str) or not name:
        raise ResultsError("benchmarks[%d]: 'name' is %r, not a non-empty string" % (i, name))
    where = "benchmarks[%d] (%s)" % (i, name[:80])
    for key in ("run_name", "label", "run_type", "aggregate_name", "error_message"):
        if key in b and not isinstance(b[key], str):
            raise ResultsError("%s: '%s' is %r, not a string" % (where, key, b[key]))
    if "run_name" in b and not b["run_name"]:
        raise ResultsError("%s: 'run_name' is empty" % where)
    for k, v in b.items():
        if isinstance(v, float) and not math.isfinite(v):
            raise ResultsError("%s: '%s' is %r, not a finite number" % (where, k, v))
    if b.get("error_occurred"):
        return
    if "time_unit" in b and b["time_unit"] not in _UNIT:
        raise ResultsError("%s: 'time_unit' is %r, not one of %s" % (
            where, b["time_unit"], ", ".join(_UNIT)))
    t = b.get("real_time")
    if not _finite_number(t) or t < 0:
        raise ResultsError("%s: 'real_time' is %r, not a finite number >= 0" % (where, t))


def load_doc(path):
    """The results file as parsed JSON, after checking the schema load() relies on: an
    object with a 'benchmarks' list of entries as _check_entry wants and, if present, a
    'context' object. Raises OSError or ResultsError (a ValueError) with one line."""
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except UnicodeDecodeError as e:
        raise ResultsError("not UTF-8 text (byte %d)" % e.start) from None
    except RecursionError:
        raise ResultsError("JSON nested too deeply") from None
    except json.JSONDecodeError as e:
        raise ResultsError("not JSON: %s" % e) from None
    if not isinstance(doc, dict):
        raise ResultsError("the top level is %s, not an object with a 'benchmarks' list"
                           % type(doc).__name__)
    if not isinstance(doc.get("benchmarks"), list):
        raise ResultsError("'benchmarks' is %s, not a list" % (
            "missing" if "benchmarks" not in doc else type(doc["benchmarks"]).__name__))
    if not isinstance(doc.get("context", {}), dict):
        raise ResultsError("'context' is %s, not an object" % type(doc["context"]).__name__)
    for i, b in enumerate(doc["benchmarks"]):
        _check_entry(i, b)
    return doc


def load(path):
    """Returns (context dict, {name: Point}) in file order. Raises OSError or ResultsError
    (a ValueError: one line on what is wrong) for a file that is not a results file."""
    doc = load_doc(path)
    points = {}
    for b in doc["benchmarks"]:
        name = b.get("run_name", b["name"])
        p = points.get(name)
        if p is None:
            p = points[name] = Point(name)
        if b.get("label"):
            p.kernel = b["label"]
        if b.get("error_occurred"):
            p.error = b.get("error_message", "error")
            p.counters = _counters(b)
            continue
        scale = _UNIT.get(b.get("time_unit", "ns"), 1e-9)
        if b.get("run_type") == "aggregate":
            agg = b.get("aggregate_name")
            if agg == "median":
                p.median_s = b["real_time"] * scale
                p.counters = _counters(b)
            elif agg == "cv":
                p.cv = b["real_time"]
        else:
            p.times.append(b["real_time"] * scale)
            if not p.counters:
                p.counters = _counters(b)
    for p in points.values():
        if p.median_s is None and p.times:
            p.median_s = statistics.median(p.times)
        if p.cv is None and len(p.times) >= 2:
            mean = statistics.fmean(p.times)
            p.cv = statistics.stdev(p.times) / mean if mean > 0 else None
    return doc.get("context", {}), points


def load_or_report(path, prog):
    """load(path), or None after "PROG: cannot read PATH: why" on stderr (a script's
    one-line error for a missing or malformed results file)."""
    try:
        return load(path)
    except (OSError, ValueError, KeyError) as e:
        print("%s: cannot read %s: %s" % (prog, path, e), file=sys.stderr)
        return None


def _counters(b):
    skip = {"name", "run_name", "run_type", "family_index", "per_family_instance_index",
            "repetitions", "repetition_index", "threads", "iterations", "real_time",
            "cpu_time", "time_unit", "aggregate_name", "aggregate_unit", "label",
            "error_occurred", "error_message"}
    return {k: v for k, v in b.items() if k not in skip and isinstance(v, (int, float))}


def peaks(context):
    """{(isa, threads): GFLOP/s} from peak_fma_gflops_<isa>_T<n> context entries."""
    out = {}
    for k, v in context.items():
        if k.startswith("peak_fma_gflops_"):
            isa, _, t = k[len("peak_fma_gflops_"):].rpartition("_T")
            try:
                x = float(v)
                if math.isfinite(x):
                    out[(isa, int(t))] = x
            except (TypeError, ValueError):
                pass
    return out


def unit_peaks(context):
    """{(unit, isa, threads): G ops/s} of the low-precision units from
    peak_unit_gops_<unit>_<isa>_T<n> context entries (unit e.g. "bf16-dot", isa e.g.
    "avx512bf16"; the FP32 FMA peaks are peaks())."""
    out = {}
    for k, v in context.items():
        if k.startswith("peak_unit_gops_"):
            name, _, t = k[len("peak_unit_gops_"):].rpartition("_T")
            unit, _, isa = name.partition("_")
            try:
                x = float(v)
                if math.isfinite(x) and unit and isa:
                    out[(unit, isa, int(t))] = x
            except (TypeError, ValueError):
                pass
    return out


def peak_unit_names(context):
    """{code: unit name} of the points' peak_unit counter, from the "peak_units" context
    entry ("0 fp32-fma, 1 bf16-dot, ...")."""
    out = {}
    for part in str(context.get("peak_units", "")).split(","):
        code, _, name = part.strip().partition(" ")
        if code.isdigit() and name:
            out[int(code)] = name
    return out


def bandwidths(context):
    """{threads: GB/s} from read_bandwidth_gbs_T<n> context entries."""
    out = {}
    for k, v in context.items():
        if k.startswith("read_bandwidth_gbs_T"):
            try:
                x = float(v)
                if math.isfinite(x):
                    out[int(k[len("read_bandwidth_gbs_T"):])] = x
            except (TypeError, ValueError):
                pass
    return out


def geomean(xs):
    xs = [x for x in xs if x and x > 0]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def machine(context):
    """What a results file says about its CPU: {"cpu", "uarch", "id", "hypervisor"}."""
    ident = "?"
    if context.get("cpu_vendor"):
        ident = "%s family %s model %s stepping %s" % (
            context.get("cpu_vendor"), context.get("cpu_family", "?"),
            context.get("cpu_model_number", "?"), context.get("cpu_stepping", "?"))
    return {"cpu": context.get("cpu_model", "?"), "uarch": context.get("cpu_uarch", "uarch not recorded"),
            "id": ident, "hypervisor": context.get("cpu_hypervisor", "?")}


def write_atomic(path, text):
    """Writes text to path through a temporary file in the same folder and a rename: a
    reader sees the old file or the whole new one, never a part."""
    d = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=os.path.basename(path) + ".tmp.", dir=d)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
