#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Every relative link in README.md and docs/*.md reaches a file of the tree, and every
#anchor one of the target page's headings (GitHub's rule: lower case, punctuation other
than '-' and '_' dropped, spaces to '-'). Links inside fenced code blocks are not links.
With --self-test it first shows that a missing page and a missing anchor are reported.
Usage: docs_links.py SOURCE_DIR [--self-test]"""
import glob
import os
import re
import sys
import tempfile

LINK = re.compile(r"\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```.*?^```", re.S | re.M)


def anchors(path):
    out = set()
    with open(path, encoding="utf-8") as f:
        text = FENCE.sub("", f.read())
    for line in text.splitlines():
        m = re.match(r"^#+\s+(.*)", line)
        if m:
            out.add(re.sub(r"[^\w\- ]", "", m.group(1).strip().lower()).replace(" ", "-"))
    return out


def broken(root):
    """[(page, link, reason)] for the pages README.md and docs/*.md under root."""
    bad = []
    pages = [os.path.join(root, "README.md")] + sorted(glob.glob(os.path.join(root, "docs", "*.md")))
    for page in pages:
        if not os.path.exists(page):
            continue
        with open(page, encoding="utf-8") as f:
            text = FENCE.sub("", f.read())
        for m in LINK.finditer(text):
            link = m.group(1)
            if re.match(r"^[a-z]+:", link):  # http:, https:, mailto:
                continue
            path, _, anchor = link.partition("#")
            target = os.path.normpath(os.path.join(os.path.dirname(page), path)) if path else page
            rel = os.path.relpath(page, root)
            if not os.path.exists(target):
                bad.append((rel, link, "no such file"))
            elif anchor and target.endswith(".md") and anchor not in anchors(target):
                bad.append((rel, link, "no such heading"))
    return bad


def self_test():
    with tempfile.TemporaryDirectory(prefix="docs-links-") as d:
        os.mkdir(os.path.join(d, "docs"))
        with open(os.path.join(d, "README.md"), "w") as f:
            f.write("[a](docs/a.md#the-heading) [b](docs/gone.md) [c](docs/a.md#no-heading)\n"
                    "```\n[not a link](docs/nowhere.md)\n```\n")
        with open(os.path.join(d, "docs", "a.md"), "w") as f:
            f.write("# A\n\n## The heading\n")
        got = sorted((link, why) for _, link, why in broken(d))
        want = [("docs/a.md#no-heading", "no such heading"), ("docs/gone.md", "no such file")]
        if got != want:
            print("FAIL: self-test reported %s, expected %s" % (got, want), file=sys.stderr)
            return False
    return True


root = sys.argv[1]
if "--self-test" in sys.argv[2:] and not self_test():
    sys.exit(1)
bad = broken(root)
for page, link, why in bad:
    print("FAIL: %s: link %s: %s" % (page, link, why), file=sys.stderr)
sys.exit(1 if bad else 0)
