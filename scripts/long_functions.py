#!/usr/bin/env python3
"""List the functions of src/ and quant/ (C and CUDA) longer than a limit, longest first.

    scripts/long_functions.py [--limit N] [--top K] [DIR...]

A function is counted from the first line of its signature (a line at column 0 that is not a
comment, a preprocessor line or a declaration ending in ';') to its closing '}' at column 0, the
project's clang-format layout. Exit status 1 when a function is longer than --limit (default 150).
"""
import argparse
import os
import re
import sys

SIG = re.compile(r"^[A-Za-z_][^;]*\(")


def functions(path):
    lines = open(path, encoding="utf-8", errors="replace").read().split("\n")
    start = None
    for i, line in enumerate(lines):
        if start is None:
            if SIG.match(line) and not line.startswith(("typedef", "struct", "enum", "union")):
                name = re.search(r"([A-Za-z_][A-Za-z_0-9]*)\s*\(", line)
                name = name.group(1) if name else "?"
                if "{" in line and line.rstrip().endswith("}"):
                    yield name, i + 1, 1  # a one-line function
                    continue
                start = i
            continue
        if line.startswith("}"):
            yield name, start + 1, i - start + 1
            start = None
        elif line.endswith(";") and not line.startswith((" ", "\t")) and "{" not in "".join(lines[start:i + 1]):
            start = None  # a prototype spanning lines


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--limit", type=int, default=150)
    ap.add_argument("--top", type=int, default=5)
    ap.add_argument("dirs", nargs="*", default=["src", "quant"])
    a = ap.parse_args()
    found = []
    for d in a.dirs:
        for root, _, files in os.walk(d):
            for f in files:
                if f.endswith((".c", ".cu", ".h", ".cuh")):
                    p = os.path.join(root, f)
                    found += [(n, p, line, name) for name, line, n in functions(p)]
    found.sort(reverse=True)
    for n, p, line, name in found[: a.top]:
        print(f"{n:5d} {p}:{line} {name}")
    over = [x for x in found if x[0] > a.limit]
    print(f"{len(found)} functions, {len(over)} longer than {a.limit} lines")
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main())
