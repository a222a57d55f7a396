#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Writes the seed corpora tests/fuzz/corpus/{npy,config}/: small valid inputs and
near-valid ones (one thing wrong each), so the fuzzers start from every branch of the
parsers. Rerun after changing it: python3 tests/fuzz/make_seeds.py (no numpy needed)."""
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))


def npy(dict_text, data=b"", major=1, pad=True, newline=True, header_len=None):
    pre = 10 if major == 1 else 12
    body = dict_text.encode()
    if pad:
        total = (pre + len(body) + 1 + 63) // 64 * 64
        body += b" " * (total - pre - len(body) - 1)
    if newline:
        body += b"\n"
    n = len(body) if header_len is None else header_len
    length = struct.pack("<H", n) if major == 1 else struct.pack("<I", n)
    return b"\x93NUMPY" + bytes([major, 0]) + length + body + data


def floats(*xs):
    return struct.pack("<%df" % len(xs), *xs)


def d(shape, descr="'<f4'", order="False"):
    return "{'descr': %s, 'fortran_order': %s, 'shape': %s, }" % (descr, order, shape)


NPY = {
    "scalar": npy(d("()"), floats(1.5)),
    "vector": npy(d("(3,)"), floats(1, 2, 3)),
    "matrix": npy(d("(2, 3)"), floats(*range(6))),
    "rank4": npy(d("(1, 2, 2, 1)"), floats(1, -2, 3, -4)),
    "empty_dim": npy(d("(0, 5)")),
    "v2": npy(d("(2,)"), floats(1, 2), major=2),
    "v3": npy(d("(2,)"), floats(1, 2), major=3),
    "keys_reordered": npy("{'shape': (2,), 'fortran_order': False, 'descr': '<f4'}", floats(1, 2)),
    "double_quotes": npy('{"descr": "<f4", "fortran_order": False, "shape": (1,)}', floats(7)),
    "long_suffix": npy(d("(2L,)"), floats(1, 2)),
    "truncated_data": npy(d("(4,)"), floats(1, 2, 3)),
    "trailing_bytes": npy(d("(1,)"), floats(1, 2)),
    "float64": npy(d("(1,)", "'<f8'"), b"\0" * 8),
    "float16": npy(d("(2, 3)", "'<f2'"), struct.pack("<6H", 0x3C00, 0xC000, 0x7BFF, 1, 0x8000, 0x7C00)),
    "float16_truncated": npy(d("(4,)", "'<f2'"), struct.pack("<3H", 1, 2, 3)),
    "big_endian": npy(d("(1,)", "'>f4'"), b"\0" * 4),
    "fortran": npy(d("(2, 2)", order="True"), floats(1, 2, 3, 4)),
    "structured": npy("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (1,)}", floats(1)),
    "huge_wrapping": npy(d("(4611686018427387903,)"), floats(1, 2, 3, 4)),
    "huge_overflow": npy(d("(4611686018427387904,)"), floats(1)),
    "int64_overflow": npy(d("(99999999999999999999,)"), floats(1)),
    "no_newline": npy(d("(1,)"), floats(1), newline=False),
    "nul_in_header": npy(d("(1,)").replace("descr", "de\0cr"), floats(1)),
    "header_len_zero": npy(d("(1,)"), floats(1), header_len=0),
    "header_len_long": npy(d("(1,)"), floats(1), header_len=60000),
    "bad_version": npy(d("(1,)"), floats(1), major=4),
    "magic_only": b"\x93NUMPY",
    "not_npy": b"hello, world\n",
    "33_dims": npy(d("(" + "1, " * 33 + ")"), floats(1)),
    "extra_key": npy("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'x': 1}", floats(1)),
}

GOOD = """[s]
kernels = blocked
heads = 4
kv_heads = 2
head_dim = 16
seq_len = 8
causal = false, true
"""

CONFIG = {
    "good": GOOD,
    "d_model": GOOD.replace("head_dim = 16", "d_model = 64"),
    "all_kernels": GOOD.replace("kernels = blocked", "kernels = all, -naive"),
    "options": GOOD + "threads = 0, 1, 2\nrepetitions = 3\nmin_time = 0.01\ncold_inputs = true\n",
    "cross": GOOD + "seq_kv = 16, 32\nhead_dim_v = 8\nbatch = 1, 2\n",
    "continuation": "[s]\nkernels = blocked,\n  naive\nheads = 1\nhead_dim =\n  8, 16\n  32\nseq_len = 4\n",
    "two_sweeps": GOOD + "\n[t] ; comment\n" + GOOD.split("\n", 1)[1],
    "comments": "; leading comment\n# another\n" + GOOD.replace("heads = 4", "heads = 4 ; inline"),
    "bom": "\ufeff" + GOOD,
    "crlf": GOOD.replace("\n", "\r\n"),
    "unknown_key": GOOD + "colour = blue\n",
    "bad_int": GOOD.replace("seq_len = 8", "seq_len = 8, x"),
    "empty_item": GOOD.replace("seq_len = 8", "seq_len = 8,,16"),
    "not_divisible": GOOD.replace("head_dim = 16", "d_model = 30"),
    "kv_not_dividing": GOOD.replace("kv_heads = 2", "kv_heads = 3"),
    "repeated_key": GOOD.replace("heads = 4", "heads = 4\nheads = 8"),
    "outside_section": "kernels = blocked\n" + GOOD,
    "no_equals": GOOD + "this line has no equals sign\n",
    "threads_too_many": GOOD + "threads = 65536\n",
    "section_junk": GOOD.replace("[s]", "[s] junk"),
    "nul_byte": GOOD.replace("heads = 4", "heads = 4\0"),
    "long_line": GOOD + "seq_len_x = " + "1, " * 80 + "\n",
    "big_product": "[s]\nkernels = blocked\nheads = 1\nhead_dim =\n  1, 2, 3, 4, 5, 6, 7, 8\n  9, 10, 11\n"
                   "seq_len = 1, 2, 3, 4, 5, 6, 7, 8, 9, 10\nseq_kv = 1, 2, 3, 4, 5\n",
    "causal_words": GOOD.replace("causal = false, true", "causal = yes, no, on, off, 1, 0"),
    "huge_dims": GOOD.replace("seq_len = 8", "seq_len = 1073741824"),
    "overflow_point": "[s]\nkernels = blocked\nbatch = 1073741824\nheads = 1073741824\nhead_dim = 1024\n"
                      "seq_len = 1073741824\n",
    "cap_exceeded": "[s]\nkernels = blocked\n" + "".join(
        "%s = %s\n" % (k, ", ".join(str(i) for i in range(1, 19)))
        for k in ("heads", "head_dim", "seq_len", "seq_kv")),
    "sum_exceeded": "".join(
        "[s%d]\nkernels = blocked\nbatch = %d\n" % (j, j + 1) + "".join(
            "%s = %s\n" % (k, ", ".join(str(i) for i in range(1, 11))) for k in ("heads", "head_dim", "seq_len"))
        + "seq_kv =\n" + "".join("  %s\n" % ", ".join(str(i) for i in range(r, r + 20)) for r in (1, 21, 41))
        for j in range(2)),
}


def main():
    for sub, items in (("npy", NPY), ("config", CONFIG)):
        out = os.path.join(HERE, "corpus", sub)
        os.makedirs(out, exist_ok=True)
        for name, data in items.items():
            ext = ".npy" if sub == "npy" else ".ini"
            with open(os.path.join(out, name + ext), "wb") as f:
                f.write(data if isinstance(data, bytes) else data.encode())
    for ini in sorted(os.listdir(os.path.join(HERE, "..", "..", "configs"))):
        src = os.path.join(HERE, "..", "..", "configs", ini)
        with open(src, "rb") as f, open(os.path.join(HERE, "corpus", "config", "shipped_" + ini), "wb") as g:
            g.write(f.read())


if __name__ == "__main__":
    main()
