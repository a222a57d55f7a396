# SPDX-License-Identifier: MIT
"""attn_options — attnbench's attention options (kernels/attn.h, "Attention variants") for
the external baselines, in NumPy: which options a problem uses, which keys each row sees,
the ALiBi slopes and the dense additive bias a framework without native support needs.

problem["options"] (set by attn_baseline.py from its flags; absent or {} = none):
  align          "bottom-right" (default) or "top-left": the diagonal i + off, off =
                 seq_kv - seq_q or 0, of the causal mask, the window and ALiBi
  window         None, or (left, right) with None for an unbounded side: row i sees key j
                 iff -left <= j - (i + off) <= right; with causal, right <- min(right, 0)
  softcap        0 (off) or c > 0: s <- c * tanh(s / c) after scaling
  alibi_max_bias 0 (off) or the standard rule's max_bias (slopes below)
  alibi_slopes   None or float32 [heads]
  sinks          None or float32 [heads]: e^sink joins each row's denominator, no value
  mask           None or float32 [seq_q][seq_kv] or [batch][heads][seq_q][seq_kv], -inf allowed
  lse            False, or True: the log-sum-exp per row is wanted too
Order of the score terms: scale, soft-cap, ALiBi (slope_h * (j - i - off)), mask.
"""
import math

NAMES = ("align", "window", "softcap", "alibi", "sinks", "mask", "lse")


def opts(problem):
    return problem.get("options") or {}


def offset(problem):
    o = opts(problem)
    return 0 if o.get("align") == "top-left" else problem["seq_kv"] - problem["seq_q"]


def used(problem):
    """The options a problem uses (a subset of NAMES). Alignment counts only where it
    changes something: top-left with causal, a window or ALiBi, and seq_q != seq_kv."""
    o = opts(problem)
    out = set()
    if o.get("window") is not None:
        out.add("window")
    if o.get("softcap"):
        out.add("softcap")
    if o.get("alibi_max_bias") or o.get("alibi_slopes") is not None:
        out.add("alibi")
    if o.get("sinks") is not None:
        out.add("sinks")
    if o.get("mask") is not None:
        out.add("mask")
    if o.get("lse"):
        out.add("lse")
    if (o.get("align") == "top-left" and _some_q_ne_kv(problem)
            and (problem["causal"] or out & {"window", "alibi"})):
        out.add("align")
    return out


def _some_q_ne_kv(problem):
    """seq_q != seq_kv, or for a serving batch any sequence's q_len != kv_len (the batch's
    largest lengths may agree while a sequence's do not)."""
    if not problem.get("layout"):
        return problem["seq_q"] != problem["seq_kv"]
    return any(ql != kl for ql, kl in (seq_lens(problem, b) for b in range(problem["batch"])))


def window(problem):
    """(left, right) of the keys row i sees around i + off, None = unbounded, with the
    causal mask folded in; (None, None) for a problem without either."""
    o = opts(problem)
    left, right = o.get("window") or (None, None)
    if problem["causal"]:
        right = 0 if right is None else min(right, 0)
    return left, right


def visible(np, problem):
    """bool [seq_q][seq_kv]: key j is in row i's range (causal, window, alignment)."""
    i = np.arange(problem["seq_q"])[:, None]
    j = np.arange(problem["seq_kv"])[None, :]
    d = j - (i + offset(problem))
    left, right = window(problem)
    ok = np.ones((problem["seq_q"], problem["seq_kv"]), dtype=bool)
    if left is not None:
        ok &= d >= -left
    if right is not None:
        ok &= d <= right
    return ok


def slopes(np, problem):
    """float64 [heads] ALiBi slopes (explicit, or the max_bias rule), or None."""
    o = opts(problem)
    if o.get("alibi_slopes") is not None:
        return np.asarray(o["alibi_slopes"], dtype=np.float64)
    mb = o.get("alibi_max_bias") or 0.0
    if not mb:
        return None
    H = problem["heads"]
    n = 2 ** int(math.floor(math.log2(H)))
    return np.array([2.0 ** (-mb * (h + 1) / n) if h < n else
                     2.0 ** (-mb * (2 * (h - n) + 1) / (2 * n)) for h in range(H)])


def alibi_distance(np, problem):
    """float64 [seq_q][seq_kv]: j - i - off, what each slope multiplies."""
    i = np.arange(problem["seq_q"])[:, None]
    j = np.arange(problem["seq_kv"])[None, :]
    return (j - i - offset(problem)).astype(np.float64)


def bias(np, problem, with_range=True):
    """float64 additive bias broadcastable to [B][H][Sq][Skv] (4-D; dims of size 1 where
    it does not vary): ALiBi + mask, and -inf outside each row's range if with_range. None
    when nothing is added."""
    o = opts(problem)
    Sq, Skv = problem["seq_q"], problem["seq_kv"]
    b = None
    sl = slopes(np, problem)
    if sl is not None:
        b = sl[None, :, None, None] * alibi_distance(np, problem)[None, None]
    m = o.get("mask")
    if m is not None:
        m = np.asarray(m, dtype=np.float64)
        m = m[None, None] if m.ndim == 2 else m
        b = m if b is None else b + m
    if with_range and (problem["causal"] or o.get("window") is not None):
        r = np.where(visible(np, problem), 0.0, -np.inf)[None, None]
        b = r if b is None else b + r
    if b is not None and b.shape[-2:] != (Sq, Skv):
        b = np.broadcast_to(b, b.shape[:2] + (Sq, Skv))
    return b


# ── serving batches (docs/serving.md): problem["layout"] ─────────────────────────────
# Set by attn_baseline.py --layout from the export's manifest (harness/bench/inputs.h):
#   kind           "ragged" or "paged"
#   cu_seqlens_q   [batch + 1] offsets of each sequence's query tokens in Q and O
#   cu_seqlens_kv  [batch + 1] offsets of each sequence's keys (ragged: rows of K and V)
#   page_size, num_pages, page_table (paged): key t of sequence b is slot t % page_size
#                  of page page_table[b][t // page_size] of the pools [num_pages][kv_heads]
#                  [page_size][D]
# Sequence b is the dense problem of batch 1 with seq_q = q_len_b, seq_kv = kv_len_b, its
# causal mask, window and ALiBi bottom-right aligned per sequence (seq_problem).


def layout_kind(problem):
    """"ragged" or "paged" for a serving problem, None for a dense one."""
    lay = problem.get("layout")
    return lay["kind"] if lay else None


def seq_lens(problem, b):
    """(q_len, kv_len) of sequence b."""
    lay = problem["layout"]
    cq, ck = lay["cu_seqlens_q"], lay["cu_seqlens_kv"]
    return cq[b + 1] - cq[b], ck[b + 1] - ck[b]


def seq_problem(problem, b):
    """Sequence b as the dense problem of batch 1 (the options apply per sequence)."""
    ql, kl = seq_lens(problem, b)
    out = {k: v for k, v in problem.items() if k != "layout"}
    out.update(batch=1, seq_q=ql, seq_kv=kl)
    return out


def importable(module, what):
    """A baseline's available(): (True, "") when `module` imports, else (False, why)."""
    import importlib
    try:
        importlib.import_module(module)
    except Exception as e:  # ImportError, or a broken install
        return False, "%s is not importable (%s)" % (what, (str(e).splitlines() or ["?"])[0])
    return True, ""
