#!/usr/bin/env python3
"""Keeps data/README.md's table of tracked files honest: every file git tracks under data/ (other
than the README itself) has a row, and every row's SHA-256 is the file's.

    python3 scripts/data_manifest.py            # check: exit 1 naming each missing or wrong row
    python3 scripts/data_manifest.py --write    # rewrite the SHA-256 column of existing rows and
                                                # add a row for each unlisted file ("origin: TODO")

A row is a Markdown table line whose first cell is a path in backquotes relative to data/ and
whose last cell is the hash in backquotes; rows of untracked (generated) files carry "no" in the
tracked column and are not hashed. Standard library only.
"""

import hashlib
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
README = os.path.join(ROOT, "data", "README.md")
ROW = re.compile(r"^\| `([^`]+)` \| (yes|no) \|(.*)\| `?([0-9a-f]{64}|[^|`]*)`? \|$")


def tracked_files():
    """Paths relative to data/ of every file git tracks there, README.md excepted."""
    out = subprocess.run(["git", "-C", ROOT, "ls-files", "-z", "data"], check=True,
                         capture_output=True).stdout.decode()
    return sorted(p[len("data/"):] for p in out.split("\0")
                  if p and p != "data/README.md")


def sha256(rel):
    h = hashlib.sha256()
    with open(os.path.join(ROOT, "data", rel), "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def main():
    write = sys.argv[1:] == ["--write"]
    if sys.argv[1:] not in ([], ["--write"]):
        print("usage: data_manifest.py [--write]", file=sys.stderr)
        return 2
    lines = open(README, encoding="utf-8").read().split("\n")
    listed = {}
    for i, line in enumerate(lines):
        m = ROW.match(line)
        if m:
            listed[m.group(1)] = (i, m)
    problems = []
    files = tracked_files()
    for rel in files:
        digest = sha256(rel)
        if rel not in listed:
            problems.append(f"data/README.md: no row for tracked file data/{rel}")
            if write:
                lines.insert(_table_end(lines), f"| `{rel}` | yes | origin: TODO | `{digest}` |")
                listed = {m.group(1): (j, m) for j, l in enumerate(lines) if (m := ROW.match(l))}
            continue
        i, m = listed[rel]
        if m.group(2) != "yes" or m.group(4) != digest:
            problems.append(f"data/README.md: row of data/{rel}: expected tracked 'yes' and "
                            f"SHA-256 {digest}, found '{m.group(2)}' and '{m.group(4)}'")
            if write:
                lines[i] = f"| `{rel}` | yes |{m.group(3)}| `{digest}` |"
    for rel, (i, m) in listed.items():
        if m.group(2) == "yes" and rel not in files:
            problems.append(f"data/README.md: row of data/{rel} names a file git does not track")
    if write:
        with open(README + ".tmp", "w", encoding="utf-8") as f:
            f.write("\n".join(lines))
        os.replace(README + ".tmp", README)
        print(f"data_manifest: {len(problems)} rows rewritten or added")
        return 0
    for p in problems:
        print(p, file=sys.stderr)
    print(f"data_manifest: {len(files)} tracked files, {len(problems)} problems")
    return 1 if problems else 0


def _table_end(lines):
    """Index just after the last table row (where a new row goes)."""
    last = max(i for i, l in enumerate(lines) if l.startswith("| `"))
    return last + 1


if __name__ == "__main__":
    sys.exit(main())
