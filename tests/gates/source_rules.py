#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The tree's size and wording rules, as a test (docs/testing.md "Source rules").

Outside tests/:
  * no source file over 800 lines (C, C++, headers, Python, shell, CMake);
  * no function over 150 lines (C/C++ bodies from their opening to their closing brace,
    Python from `def` to the function's last line).
Everywhere that git tracks: no tracker numbers, work-log words or author roles (the
pattern below); a test's name says what it guards.

Usage: source_rules.py ROOT      check the tree at ROOT (its git-tracked files)
       source_rules.py --self-test   prove every rule fails on a tree made to break it
Exit 0 when every rule holds, 1 with one line per violation otherwise.
"""
import ast
import os
import re
import subprocess
import sys
import tempfile

MAX_FILE_LINES = 800
MAX_FUNCTION_LINES = 150
CODE_SUFFIXES = (".c", ".h", ".cc", ".cpp", ".hpp", ".py", ".sh", ".cmake", ".def")
C_SUFFIXES = (".c", ".h", ".cc", ".cpp", ".hpp", ".def")
# Built from parts so that this file does not match its own pattern.
WORDS = re.compile(
    "|".join([
        "sit" + "ting",
        "iss" + r"ue [0-9]+",
        "hel" + r"per [A-Z]?[0-9]",
        r"\((lead|numerics " + "hel" + "per|gates " + "hel" + r"per)\)",
    ]),
    re.IGNORECASE,
)
# Binary and generated data are not prose.
SKIP_WORDS_SUFFIXES = (".png", ".npy", ".npz", ".bin", ".json")


def tracked_files(root):
    try:
        out = subprocess.run(["git", "-C", root, "ls-files", "-z"], check=True,
                             capture_output=True).stdout
        return [f for f in out.decode().split("\0") if f]
    except (OSError, subprocess.CalledProcessError):
        files = []
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames[:] = [d for d in dirnames if not d.startswith((".", "build"))]
            for name in filenames:
                files.append(os.path.relpath(os.path.join(dirpath, name), root))
        return files


def is_code(path):
    base = os.path.basename(path)
    if base == "CMakeLists.txt" or path.endswith(CODE_SUFFIXES):
        return True
    # scripts without a suffix: a shebang names them
    return path.startswith("scripts/") and "." not in base


def strip_c(text):
    """Comments and string/char literals blanked, newlines kept (so lines still count)."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append("\n" * text.count("\n", i, j))
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            out.append(c + c)
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def c_functions(text):
    """(first line, line count) of every top-level brace block that follows a ')'."""
    code = strip_c(text)
    found, depth, line, start = [], 0, 1, None
    for i, c in enumerate(code):
        if c == "\n":
            line += 1
        elif c == "{":
            if depth == 0:
                k = i - 1
                while k >= 0 and code[k] in " \t\r\n\\":
                    k -= 1
                start = line if k >= 0 and code[k] == ")" else None
            depth += 1
        elif c == "}":
            depth = max(0, depth - 1)
            if depth == 0 and start is not None:
                found.append((start, line - start + 1))
                start = None
    return found


def py_functions(text):
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return []
    return [(node.lineno, node.end_lineno - node.lineno + 1) for node in ast.walk(tree)
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))]


def check(root):
    problems = []
    for rel in tracked_files(root):
        path = os.path.join(root, rel)
        if not os.path.isfile(path) or os.path.islink(path):
            continue
        try:
            with open(path, encoding="utf-8") as f:
                text = f.read()
        except (UnicodeDecodeError, OSError):
            continue
        if not rel.endswith(SKIP_WORDS_SUFFIXES):
            for no, row in enumerate(text.splitlines(), 1):
                m = WORDS.search(row)
                if m:
                    problems.append(f"{rel}:{no}: work-log wording '{m.group(0)}'")
        if rel.startswith("tests/") or not is_code(rel):
            continue
        lines = text.count("\n") + (0 if text.endswith("\n") or not text else 1)
        if lines > MAX_FILE_LINES:
            problems.append(f"{rel}: {lines} lines (limit {MAX_FILE_LINES})")
        is_py = rel.endswith(".py") or (not rel.endswith(C_SUFFIXES) and text.startswith("#!")
                                        and "python" in text.split("\n", 1)[0])
        funcs = py_functions(text) if is_py else (c_functions(text) if rel.endswith(C_SUFFIXES) else [])
        for first, count in funcs:
            if count > MAX_FUNCTION_LINES:
                problems.append(f"{rel}:{first}: function of {count} lines (limit {MAX_FUNCTION_LINES})")
    return problems


def self_test():
    """Each rule must fire on a tree built to break it, and stay quiet on a clean one."""
    with tempfile.TemporaryDirectory() as root:
        def write(rel, text):
            os.makedirs(os.path.dirname(os.path.join(root, rel)), exist_ok=True)
            with open(os.path.join(root, rel), "w", encoding="utf-8") as f:
                f.write(text)
        body = "".join(f"  x += {i};\n" for i in range(MAX_FUNCTION_LINES))
        write("kernels/ok.c", "static int f(int x) {\n  return x; /* { */\n}\nstruct s { int a; };\n"
              "static const int t[] = {\n" + "1,\n" * 200 + "};\n")
        clean = check(root)
        write("kernels/long_fn.c", "int g(int x)\n{\n" + body + "  return x;\n}\n")
        write("scripts/long_fn.py", "def g(x):\n" + "".join(f"    x += {i}\n" for i in range(MAX_FUNCTION_LINES)))
        write("harness/big.h", "int v;\n" * (MAX_FILE_LINES + 1))
        write("docs/page.md", "Fixed in the third " + "sit" + "ting.\n")
        write("tests/big_test.c", "int v;\n" * (MAX_FILE_LINES + 1))  # tests are exempt from sizes
        broken = check(root)
    expect = ["kernels/long_fn.c:", "scripts/long_fn.py:", "harness/big.h:", "docs/page.md:1:"]
    missing = [e for e in expect if not any(p.startswith(e) for p in broken)]
    extra = [p for p in broken if p.startswith("tests/")]
    if clean or missing or extra:
        print(f"self-test FAILED: clean tree {clean}, not caught {missing}, exempt flagged {extra}")
        return 1
    print(f"self-test ok: a clean tree passes and {len(broken)} planted violations are caught")
    return 0


def main(argv):
    if len(argv) == 2 and argv[1] == "--self-test":
        return self_test()
    if len(argv) != 2:
        print(__doc__.strip().split("\n\n")[-1], file=sys.stderr)
        return 2
    problems = check(argv[1])
    for p in problems:
        print(p)
    if problems:
        print(f"{len(problems)} source rule violation(s)")
        return 1
    print("source rules hold: file sizes, function sizes, wording")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
