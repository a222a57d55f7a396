#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""The result scripts on malformed results files: summary.py, plot.py, compare.py and
bench-baselines each print exactly one line on stderr naming the file and what is wrong,
no traceback, and exit 1 (scripts/attnresults.py's loader checks the schema for all).

    test_scripts_bad_input.py SCRIPTS_DIR ATTNBENCH
"""
import os
import subprocess
import sys
import tempfile

PY = "/usr/bin/python3"

# (file name, content, what the message must mention)
BAD = [
    ("empty_list.json", "[]", "top level is list"),
    ("name_int.json", '{"benchmarks":[{"name":5}]}', "'name' is 5"),
    ("nan_counter.json",
     '{"benchmarks":[{"name":"flash/1","real_time":1.5,"time_unit":"ns","GFLOP/s":NaN}]}',
     "'GFLOP/s' is nan"),
    ("inf_time.json", '{"benchmarks":[{"name":"flash/1","real_time":Infinity}]}',
     "'real_time' is inf"),
    ("neg_inf_counter.json",
     '{"benchmarks":[{"name":"flash/1","real_time":2,"B":-Infinity}]}', "'B' is -inf"),
    ("not_json.json", "{benchmarks", "not JSON"),
    ("empty.json", "", "not JSON"),
    ("binary.json", b"\xff\xfe\x00garbage", "not UTF-8"),
    ("deep.json", "[" * 100000 + "]" * 100000, "nested too deeply"),
    ("no_benchmarks.json", '{"context":{}}', "'benchmarks' is missing"),
    ("benchmarks_dict.json", '{"benchmarks":{}}', "'benchmarks' is dict"),
    ("entry_int.json", '{"benchmarks":[5]}', "benchmarks[0] is int"),
    ("no_time.json", '{"benchmarks":[{"name":"flash/1"}]}', "'real_time' is None"),
    ("time_str.json", '{"benchmarks":[{"name":"flash/1","real_time":"1"}]}', "'real_time' is '1'"),
    ("neg_time.json", '{"benchmarks":[{"name":"flash/1","real_time":-1}]}', "'real_time' is -1"),
    ("unit.json", '{"benchmarks":[{"name":"flash/1","real_time":1,"time_unit":"h"}]}',
     "'time_unit' is 'h'"),
    ("label_int.json", '{"benchmarks":[{"name":"flash/1","real_time":1,"label":3}]}',
     "'label' is 3"),
    ("context_list.json", '{"context":[],"benchmarks":[]}', "'context' is list"),
    ("null.json", "null", "top level is NoneType"),
]


def main():
    sdir, attnbench = sys.argv[1], sys.argv[2]
    failures = 0
    with tempfile.TemporaryDirectory() as d:
        good = os.path.join(d, "good.json")
        with open(good, "w") as f:
            f.write('{"context":{},"benchmarks":[{"name":"flash/1","run_name":"flash/1",'
                    '"real_time":1000,"time_unit":"ns","label":"flash","GFLOP/s":2.5,'
                    '"B":1,"H":2,"KV":2,"Sq":4,"Skv":4,"Dqk":8,"Dv":8}]}')
        out_dir = os.path.join(d, "png")
        os.mkdir(out_dir)
        for fname, content, want in BAD:
            path = os.path.join(d, fname)
            with open(path, "wb") as f:
                f.write(content if isinstance(content, bytes) else content.encode())
            runs = {
                "summary.py": [PY, os.path.join(sdir, "summary.py"), path],
                "plot.py": [PY, os.path.join(sdir, "plot.py"), path, "--out-dir", out_dir],
                "compare.py": [PY, os.path.join(sdir, "compare.py"), good, path],
                "bench-baselines": [PY, os.path.join(sdir, "bench-baselines"), path,
                                    "--python", PY, "--attnbench", attnbench],
            }
            for script, cmd in runs.items():
                r = subprocess.run(cmd, capture_output=True, text=True, stdin=subprocess.DEVNULL,
                                   errors="replace", timeout=120)
                lines = r.stderr.strip().splitlines()
                ok = (r.returncode == 1 and len(lines) == 1 and "Traceback" not in r.stderr and
                      path in lines[0] and want in lines[0])
                if not ok:
                    failures += 1
                    print("FAIL %s on %s: want exit 1 and one line naming the file with %r; got "
                          "exit %d, stderr:\n%s" % (script, fname, want, r.returncode,
                                                    r.stderr[-2000:]), file=sys.stderr)
        # the well-formed file still loads (summary.py reads it)
        r = subprocess.run([PY, os.path.join(sdir, "summary.py"), good], capture_output=True,
                           text=True)
        if r.returncode != 0 or "Traceback" in r.stderr:
            failures += 1
            print("FAIL summary.py on a well-formed file: %d %s" % (r.returncode, r.stderr),
                  file=sys.stderr)
    if failures:
        print("test_scripts_bad_input: %d failure(s)" % failures, file=sys.stderr)
        return 1
    print("test_scripts_bad_input: %d malformed files x 4 scripts: one line, exit 1" % len(BAD))
    return 0


if __name__ == "__main__":
    sys.exit(main())
