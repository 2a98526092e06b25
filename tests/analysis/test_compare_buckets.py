#!/usr/bin/env python3
"""analysis/compare_buckets.py on made-up bucket CSVs with known z scores: identical runs pass,
a bucket moved by 4 combined standard errors fails, the fp32 control at its floor in both runs
is not tested, a control that leaves its floor fails, a bucket in one file only is listed, and a
CSV without the columns exits 2 with one line naming the file."""
import json
import os
import subprocess
import sys
import tempfile

ROOT = sys.argv[1]
SCRIPT = os.path.join(ROOT, "analysis", "compare_buckets.py")
HEAD = "config,spec,bucket_lo,bucket_hi,sequences,steps,mean_kl,se_kl\n"


def csv_text(rows):
    return HEAD + "".join(f"{c},x,{lo},{hi},4,4,{m!r},{s!r}\n" for c, lo, hi, m, s in rows)


def run(d, before, after, *extra):
    pa, pb, pj = (os.path.join(d, n) for n in ("a.csv", "b.csv", "o.json"))
    with open(pa, "w") as f:
        f.write(csv_text(before))
    with open(pb, "w") as f:
        f.write(csv_text(after))
    r = subprocess.run([sys.executable, SCRIPT, pa, pb, "--json", pj, *extra],
                       capture_output=True, text=True)
    return r, (json.load(open(pj)) if r.returncode in (0, 1) else None)


def main():
    base = [("control", 1, 1, 1e-13, 1e-14), ("control", 2, 3, 2e-13, 1e-14),
            ("split", 1, 1, 1e-3, 1e-4), ("split", 2, 3, 2e-3, 2e-4),
            ("shared", 1, 1, 5e-2, 3e-3)]
    with tempfile.TemporaryDirectory() as d:
        r, j = run(d, base, base)
        assert r.returncode == 0, r.stdout + r.stderr
        assert j["failed"] == 0 and j["within"] == [3, 3, 3], j
        assert sum(b["verdict"] == "floor" for b in j["buckets"]) == 2, j
        # split 2..3 moved by 4 combined se: (2e-3 + 4 * hypot(2e-4, 2e-4))
        moved = list(base)
        moved[3] = ("split", 2, 3, 2e-3 + 4 * (2 * 2e-4 ** 2) ** 0.5, 2e-4)
        r, j = run(d, base, moved)
        assert r.returncode == 1 and j["failed"] == 1, r.stdout
        z = [b["z"] for b in j["buckets"] if b["config"] == "split" and b["bucket_lo"] == 2][0]
        assert abs(z - 4.0) < 1e-9, z
        assert "outside" in r.stdout
        # the same move passes with --max-z 5; a move of 1.5 se counts within 2 but not 1
        r, j = run(d, base, moved, "--max-z", "5")
        assert r.returncode == 0, r.stdout
        half = list(base)
        half[2] = ("split", 1, 1, 1e-3 + 1.5 * (2 * 1e-4 ** 2) ** 0.5, 1e-4)
        r, j = run(d, base, half)
        assert r.returncode == 0 and j["within"] == [2, 3, 3], j
        # the control leaving its floor fails, whatever its standard error
        left = list(base)
        left[0] = ("control", 1, 1, 1e-6, 1e-6)
        r, j = run(d, base, left)
        assert r.returncode == 1 and "left-floor" in r.stdout, r.stdout
        # noise around the floor (2e-10 against 1e-13) is still the floor, not a failure
        noise = list(base)
        noise[1] = ("control", 2, 3, 2e-10, 1e-11)
        r, j = run(d, base, noise)
        assert r.returncode == 0 and sum(b["verdict"] == "floor" for b in j["buckets"]) == 2, j
        # a bucket in the longer run only: listed, not tested
        longer = base + [("split", 4, 7, 3e-3, 2e-4)]
        r, j = run(d, base, longer)
        assert r.returncode == 0 and j["one_file_only"] == [["split", 4, 7]], j
        # not a buckets CSV
        bad = os.path.join(d, "bad.csv")
        with open(bad, "w") as f:
            f.write("a,b\n1,2\n")
        r = subprocess.run([sys.executable, SCRIPT, bad, bad], capture_output=True, text=True)
        assert r.returncode == 2 and r.stderr.count("\n") == 1 and "bad.csv" in r.stderr, r
    print("test_compare_buckets: ok")


main()
