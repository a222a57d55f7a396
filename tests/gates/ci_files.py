#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""The CI files say one thing: the hosted-CI workflow runs .ci/run itself in a Debian 12
container; every PyPI step of .ci/run is optional (--if-reachable: the core steps need
only Debian packages); and the CI duration is stated once, the same everywhere it
appears (README.md, docs/testing.md, .ci/run). Each rule is also applied to a broken
copy of the files, which must fail (the checks can fail).

    ci_files.py SOURCE_DIR
"""
import os
import re
import sys

DURATION = re.compile(r"(\d+)\s*[-–]\s*(\d+) minutes on 2 cores")
DURATION_FILES = ("README.md", "docs/testing.md", ".ci/run")
PYPI_COMMAND = re.compile(r"^\s*[^#]*\b(pip3?|setup-baselines)\b")


def workflow_problems(text):
    out = []
    if not re.search(r"^\s*run:\s*\.ci/run\s*$", text, re.M):
        out.append(".github/workflows/ci.yml: no step `run: .ci/run` (the hosted CI must run "
                   "the same script)")
    if not re.search(r"^\s*image:\s*debian:12\s*$", text, re.M):
        out.append(".github/workflows/ci.yml: not in a debian:12 container")
    return out


def pypi_problems(text):
    """Every line of .ci/run that runs pip or setup-baselines must be --if-reachable."""
    return [f".ci/run:{n}: a PyPI step without --if-reachable: {line.strip()}"
            for n, line in enumerate(text.splitlines(), 1)
            if PYPI_COMMAND.search(line) and "--if-reachable" not in line]


def duration_problems(texts):
    found = {name: {m.group(0).replace("–", "-") for m in DURATION.finditer(t)}
             for name, t in texts.items()}
    out = [f"{name}: states no CI duration (\"N-M minutes on 2 cores\")"
           for name, f in found.items() if not f]
    every = set().union(*found.values())
    if len(every) > 1:
        out.append("different CI durations: " + "; ".join(
            f"{name}: {', '.join(sorted(f))}" for name, f in found.items()))
    return out


def main():
    src = sys.argv[1]

    def read(rel):
        with open(os.path.join(src, rel), encoding="utf-8") as f:
            return f.read()

    workflow, ci = read(".github/workflows/ci.yml"), read(".ci/run")
    texts = {name: read(name) for name in DURATION_FILES}
    problems = workflow_problems(workflow) + pypi_problems(ci) + duration_problems(texts)
    for p in problems:
        print("FAIL:", p)
    # The same rules on broken copies: each must find its problem.
    broken = {
        "workflow without .ci/run": workflow_problems(workflow.replace(".ci/run", "scripts/test")),
        "a mandatory PyPI step": pypi_problems(ci + "\nscripts/setup-baselines --only torch\n"),
        "a second duration": duration_problems(
            {**texts, "README.md": DURATION.sub("40-45 minutes on 2 cores", texts["README.md"])}),
        "no duration": duration_problems({**texts, "docs/testing.md": ""}),
    }
    for what, found in broken.items():
        if not found:
            problems.append(what)
            print(f"FAIL: the rules miss {what}")
    if problems:
        return 1
    print(f"CI files agree: the workflow runs .ci/run on debian:12, its PyPI steps are "
          f"optional, one duration ({'-'.join(DURATION.findall(texts['.ci/run'])[0])} "
          f"minutes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
