#!/usr/bin/env python3
"""Every relative link of the repository's Markdown files leads somewhere.

    python3 tools/docs/check_links.py [--selftest]

Reads every `*.md` file git tracks (outside vectors/), finds each inline
link `[text](target)`, and checks, for a target that is not a URL (no
`scheme:`), that the file or folder it names exists relative to the linking
file, and, for a `#anchor` into a Markdown file (or into the same file),
that the file has a heading whose GitHub anchor is that name: the heading's
text lower-cased, every character other than a letter, digit, `_`, `-` or
space removed, spaces turned into `-`, and `-1`, `-2`, ... appended to
repeats, as GitHub renders them. Links inside fenced code blocks and inline
code are not links and are skipped.

Prints each broken link as `<file>:<line>: <target>: <why>` and ends with
"docs-links: N passed, M failed" (one per link checked). --selftest checks
the anchor rule and the parser on hand-written text and ends with
"docs-links-selftest: N passed, M failed". Exit status 1 when anything
failed.
"""
import os
import re
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^\s*(```|~~~)")


def slug(heading):
    text = heading.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(text):
    """The anchor of every heading of a Markdown text, repeats numbered."""
    seen = {}
    result = set()
    fenced = False
    for line in text.splitlines():
        if FENCE.match(line):
            fenced = not fenced
            continue
        m = re.match(r"#{1,6} (.*)", line)
        if fenced or not m:
            continue
        base = slug(m.group(1))
        n = seen.get(base, 0)
        seen[base] = n + 1
        result.add(base if n == 0 else f"{base}-{n}")
    return result


def links(text):
    """(line number, target) of every inline link outside code."""
    fenced = False
    for number, line in enumerate(text.splitlines(), 1):
        if FENCE.match(line):
            fenced = not fenced
            continue
        if fenced:
            continue
        line = re.sub(r"`[^`]*`", "", line)
        for m in LINK.finditer(line):
            yield number, m.group(1)


def check_file(path, read, kind):
    """Broken links of one file: [(line, target, why)], and links checked.
    read(path) gives a file's text; kind(path) "file", "dir" or None."""
    broken = []
    checked = 0
    for number, target in links(read(path)):
        if re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", target):
            continue  # a URL
        checked += 1
        name, _, anchor = target.partition("#")
        goal = os.path.normpath(os.path.join(os.path.dirname(path), name)) if name else path
        if kind(goal) is None:
            broken.append((number, target, f"{goal} does not exist"))
            continue
        if anchor and goal.endswith(".md") and kind(goal) == "file":
            if anchor not in anchors(read(goal)):
                broken.append((number, target, f"{goal} has no heading #{anchor}"))
    return broken, checked


def read_file(path):
    with open(os.path.join(REPO, path), encoding="utf-8") as f:
        return f.read()


def file_kind(path):
    full = os.path.join(REPO, path)
    return "file" if os.path.isfile(full) else "dir" if os.path.isdir(full) else None


def main():
    if sys.argv[1:] == ["--selftest"]:
        return selftest()
    if sys.argv[1:]:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    files = subprocess.run(["git", "-C", REPO, "ls-files", "*.md"], check=True,
                           capture_output=True, text=True).stdout.split()
    passed = failed = 0
    for path in files:
        if path.startswith("vectors/"):
            continue
        broken, checked = check_file(path, read_file, file_kind)
        for number, target, why in broken:
            print(f"{path}:{number}: {target}: {why}")
        failed += len(broken)
        passed += checked - len(broken)
    print(f"docs-links: {passed} passed, {failed} failed")
    return 1 if failed else 0


def selftest():
    passed = failed = 0

    def expect(what, got, want):
        nonlocal passed, failed
        if got == want:
            passed += 1
        else:
            failed += 1
            print(f"FAIL {what}: got {got!r}, want {want!r}")

    expect("slug", slug("Blocks on a real model's attention"), "blocks-on-a-real-models-attention")
    expect("slug keeps - and _", slug("test.sh: every test"), "testsh-every-test")
    expect("slug of code", slug("`--nocut` and cut_compared"), "--nocut-and-cut_compared")
    expect("repeats", anchors("# A\n## A\n### A\n"), {"a", "a-1", "a-2"})
    expect("fenced heading", anchors("```\n# not\n```\n# yes\n"), {"yes"})
    expect("links", list(links("see [a](x.md#b) and `[c](d)`\n```\n[e](f)\n```\n[g](h)\n")),
           [(1, "x.md#b"), (5, "h")])
    pages = {"tools/a.md": "# Top\n[up](../b.md#part) [self](#top) [web](https://x.org/y)\n"
                           "[gone](nothing.md) [bad](../b.md#none) [dir](.)\n",
             "b.md": "## Part\n"}
    broken, checked = check_file(
        "tools/a.md", lambda p: pages[p],
        lambda p: "file" if p in pages else "dir" if p in ("tools", ".") else None)
    expect("checked", checked, 5)
    expect("broken", [(n, t) for n, t, _ in broken], [(3, "nothing.md"), (3, "../b.md#none")])
    print(f"docs-links-selftest: {passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
