#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Writes the seed corpora tests/fuzz/corpus/{npy,config,tunefile,plugin_record}/: small
valid inputs and near-valid ones (one thing wrong each), so the fuzzers start from every
branch of the parsers. Rerun after changing it: python3 tests/fuzz/make_seeds.py (no numpy needed)."""
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


MACHINE = """; attnbench tuning file, written by `attnbench tune` (format: docs/tuning-files.md)
[machine]
vendor = GenuineIntel
family = 6
model = 143
stepping = 8
isa = avx2 avx512f
build = abc123 GNU-12.2.0 Release cflags-0123456789abcdef
"""
ENTRY = "\n[flash__avx512 prefill d64]\ntile_q = 128\ntile_kv = 256\nregtile = 12x32/8x32\n"
TUNE_GOOD = MACHINE + ENTRY + "\n[tiled__avx2 decode d128]\ntile_q = 6\ntile_kv = 384\nkv_split = 4\n"
NAME64 = "k" * 64

TUNEFILE = {
    "good": TUNE_GOOD,
    "machine_only": MACHINE,
    "all_classes": MACHINE + "".join("\n[p__x %s %s]\ntile_q = 8\ntile_kv = 32\n" % (ph, d)
                                     for ph in ("prefill", "decode") for d in ("d64", "d128", "dlarge")),
    "name64": MACHINE + "\n[%s decode dlarge]\ntile_q = 1048576\ntile_kv = 1\n"
                        "regtile = abcdefghijklmnopqrstuvwxyz/1234\nkv_split = 4096\n" % NAME64,
    "name65": MACHINE + "\n[%sk prefill d64]\ntile_q = 8\ntile_kv = 8\n" % NAME64,
    "tile_zero": TUNE_GOOD.replace("tile_q = 128", "tile_q = 0"),
    "tile_over": TUNE_GOOD.replace("tile_q = 128", "tile_q = 1048577"),
    "kv_split_over": TUNE_GOOD.replace("kv_split = 4", "kv_split = 4097"),
    "regtile_unknown": TUNE_GOOD.replace("regtile = 12x32/8x32", "regtile = 9x9/9x9"),
    "regtile_chars": TUNE_GOOD.replace("regtile = 12x32/8x32", "regtile = a b"),
    "no_machine": ENTRY,
    "machine_twice": TUNE_GOOD + "[machine]\n",
    "machine_missing_key": TUNE_GOOD.replace("stepping = 8\n", ""),
    "machine_unknown_key": TUNE_GOOD.replace("[machine]\n", "[machine]\ncolour = blue\n"),
    "section_twice": TUNE_GOOD + ENTRY,
    "key_twice": TUNE_GOOD.replace("tile_kv = 256", "tile_kv = 256\ntile_kv = 128"),
    "missing_tile": TUNE_GOOD.replace("tile_kv = 256\n", ""),
    "unknown_phase": TUNE_GOOD.replace("prefill d64]", "warmup d64]"),
    "unknown_bucket": TUNE_GOOD.replace("prefill d64]", "prefill d32]"),
    "two_words": TUNE_GOOD.replace("[flash__avx512 prefill d64]", "[flash__avx512 prefill]"),
    "indented": TUNE_GOOD.replace("\ntile_kv = 256", "\n  tile_kv = 256"),
    "key_outside": "tile_q = 8\n" + TUNE_GOOD,
    "no_equals": TUNE_GOOD + "just words\n",
    "long_line": TUNE_GOOD + "; " + "x" * 300 + "\n",
    "nul_byte": TUNE_GOOD.replace("tile_q = 128", "tile_q = 1\0" + "28"),
    "crlf": TUNE_GOOD.replace("\n", "\r\n"),
    "bom": "\ufeff" + TUNE_GOOD,
    "comments": "# hash comment\n" + TUNE_GOOD.replace("tile_q = 128", "tile_q = 128 ; inline"),
    "negative_model": TUNE_GOOD.replace("model = 143", "model = -1"),
    "huge_family": TUNE_GOOD.replace("family = 6", "family = 99999999999"),
    "empty": "",
}


def tile(v):
    """fuzz_plugin_record's encoding of one tile value (see tile() there)."""
    if 0 <= v < 64:
        return bytes([v])
    if 0 <= v <= (1 << 22):
        return bytes([200]) + struct.pack(">I", v)
    return bytes([230]) + struct.pack(">I", v & 0xFFFFFFFF)


def text(s):
    """A name: its length byte, then its bytes (None: the NULL name)."""
    if s is None:
        return b"\xff"
    b = s.encode() if isinstance(s, str) else s
    return bytes([len(b)]) + b


def record(name, flags=0, isa=0, caps=0, vec=1, tiles=(0, 0, 0, 0), variants=()):
    """One fuzz_plugin_record input: variants are (name, tiles or None = the record's)."""
    out = text(name) + bytes([flags])
    if flags & 4:
        out += struct.pack(">I", isa)
    if flags & 8:
        out += struct.pack(">I", caps)
    out += tile(vec) + b"".join(tile(t) for t in tiles) + bytes([len(variants)])
    for vname, vt in variants:
        out += text(vname) + (bytes([0]) if vt is None else bytes([255]) + b"".join(tile(t) for t in vt))
    return out


FLASH = dict(vec=16, tiles=(12, 32, 8, 32),
             variants=(("12x32/8x32", None), ("6x64/8x48", (6, 64, 8, 48)), ("4x24/4x24", (4, 24, 4, 24))))
PLUGIN_RECORD = {
    "scalar": record("example__scalar"),
    "flash_like": record("flash__fuzz", **FLASH),
    "name64": record(NAME64, vec=8, tiles=(6, 16, 6, 16)),
    "name65": record(NAME64 + "k"),
    "name_newline": record("bad\nname"),
    "name_escape": record("bad\x1b[2Jname"),
    "name_empty": record(""),
    "name_null": record(None),
    "summary_null": record("k", flags=1),
    "run_null": record("k", flags=2),
    "isa_known": record("k", flags=4, isa=1),
    "isa_unknown": record("k", flags=4, isa=1 << 31),
    "caps_unknown": record("k", flags=8, caps=1 << 30),
    "huge_register_tile": record("huge__rows", vec=16, tiles=(1 << 21, 1 << 21, 1 << 21, 1 << 21)),
    "max_register_tile": record("max__rows", vec=16, tiles=(1 << 20, 1 << 20, 1 << 20, 1 << 20)),
    "negative_tile": record("k", tiles=(-1, 8, 8, 8)),
    "int_max_tile": record("k", tiles=(0x7FFFFFFF, 0x7FFFFFFF, 1, 1)),
    "nine_variants": record("k", tiles=(1, 1, 1, 1), variants=tuple(("v%d" % i, None) for i in range(9))),
    "eight_variants": record("k", tiles=(1, 1, 1, 1),
                             variants=(("v0", None),) + tuple(("v%d" % i, (i, i, i, i)) for i in range(1, 8))),
    "variant_twice": record("k", tiles=(2, 2, 2, 2), variants=(("a", None), ("a", (1, 1, 1, 1)))),
    "variant0_differs": record("k", tiles=(2, 2, 2, 2), variants=(("a", (3, 3, 3, 3)),)),
    "variant_name32": record("k", tiles=(2, 2, 2, 2), variants=(("v" * 32, None),)),
    "variant_name31": record("k", tiles=(2, 2, 2, 2), variants=(("v" * 31, None),)),
    "variant_name_blank": record("k", tiles=(2, 2, 2, 2), variants=(("a b", None),)),
    "variant_huge": record("k", tiles=(2, 2, 2, 2), variants=(("a", None), ("b", (1 << 21, 1, 1, 1)))),
}


def main():
    for sub, items in (("npy", NPY), ("config", CONFIG), ("tunefile", TUNEFILE),
                       ("plugin_record", PLUGIN_RECORD)):
        out = os.path.join(HERE, "corpus", sub)
        os.makedirs(out, exist_ok=True)
        for name, data in items.items():
            ext = {"npy": ".npy", "config": ".ini", "tunefile": ".ini", "plugin_record": ".bin"}[sub]
            with open(os.path.join(out, name + ext), "wb") as f:
                f.write(data if isinstance(data, bytes) else data.encode())
    for ini in sorted(os.listdir(os.path.join(HERE, "..", "..", "configs"))):
        src = os.path.join(HERE, "..", "..", "configs", ini)
        with open(src, "rb") as f, open(os.path.join(HERE, "corpus", "config", "shipped_" + ini), "wb") as g:
            g.write(f.read())


if __name__ == "__main__":
    main()
