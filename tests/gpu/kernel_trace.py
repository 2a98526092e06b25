"""The step of a CUDA Graph as it runs, from tests/gpu/kernel_trace.c's CSV (issue 18).

Usage: python3 tests/gpu/kernel_trace.py TRACE.csv [--graph G] [--skip N]

Takes the kernels of graph G (default: the graph with the most replays), splits them into replays
(a replay starts where the first node comes round again), drops the first N replays (default 8:
warm-up) and prints, per node in order, the median over the replays of
  - dur: the kernel's end - start (with Programmatic Dependent Launch the start is its early
    launch, so dur overlaps the kernel before it),
  - adds: end(n) - end(n - 1), what the kernel adds to the step (for the first node: its end -
    the previous replay's last end, the graph launch included),
then the step (the sum of adds) and the adds summed by kernel name.
"""
import argparse
import csv
import os
import re
import shutil
import statistics
import subprocess
import sys
from collections import Counter, defaultdict


def short(name):
    """The kernel's name without template arguments, namespaces or parameters."""
    n = name.replace("(anonymous namespace)::", "")
    n = re.sub(r"\(.*$", "", n)
    depth, out = 0, []
    for ch in n:
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth -= 1
        elif depth == 0:
            out.append(ch)
    n = "".join(out)
    n = n.split("::")[-1]
    return n.replace("void ", "").strip()


def demangle(names):
    """CUPTI's mangled names through c++filt or the CUDA toolkit's cu++filt where one is found."""
    tool = shutil.which("c++filt") or shutil.which("cu++filt") or (
        "/usr/local/cuda/bin/cu++filt" if os.path.exists("/usr/local/cuda/bin/cu++filt") else None)
    if not tool or not names:
        return {n: n for n in names}
    out = subprocess.run([tool], input="\n".join(names), capture_output=True, text=True).stdout
    lines = out.split("\n")
    return {n: (lines[i] if i < len(lines) and lines[i] else n) for i, n in enumerate(names)}


def load(path):
    with open(path, newline="") as f:
        return [dict(r, start=int(r["start_ns"]), end=int(r["end_ns"]), node=int(r["graph_node"]),
                     graph=int(r["graph"])) for r in csv.DictReader(f)]


def replays(rows, graph):
    ks = sorted((r for r in rows if r["graph"] == graph), key=lambda r: r["start"])
    if not ks:
        return []
    first = ks[0]["node"]
    out, cur = [], []
    for r in ks:
        if r["node"] == first and cur:
            out.append(cur)
            cur = []
        cur.append(r)
    if cur:
        out.append(cur)
    n = Counter(len(x) for x in out).most_common(1)[0][0]
    return [x for x in out if len(x) == n]  # a replay cut short by the trace's end is dropped


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("trace")
    ap.add_argument("--graph", type=int, default=None)
    ap.add_argument("--skip", type=int, default=8)
    a = ap.parse_args()
    rows = load(a.trace)
    plain = demangle(sorted({r["name"] for r in rows}))
    for r in rows:
        r["name"] = plain[r["name"]]
    graphs = Counter(r["graph"] for r in rows if r["graph"] != 0)
    if not graphs:
        sys.exit(f"{a.trace}: no kernel of a CUDA Graph")
    g = a.graph if a.graph is not None else max(graphs, key=lambda k: graphs[k])
    reps = replays(rows, g)
    if len(reps) <= a.skip:
        sys.exit(f"{a.trace}: graph {g} has {len(reps)} whole replays, not more than --skip {a.skip}")
    used = list(range(a.skip, len(reps)))
    nk = len(reps[0])
    durs = [[] for _ in range(nk)]
    adds = [[] for _ in range(nk)]
    steps = []
    for i in used:
        rep, prev_end = reps[i], max(r["end"] for r in reps[i - 1]) if i > 0 else None
        ends = [r["end"] for r in rep]
        for j, r in enumerate(rep):
            durs[j].append(r["end"] - r["start"])
            base = ends[j - 1] if j > 0 else (prev_end if prev_end is not None else r["start"])
            adds[j].append(r["end"] - base)
        if prev_end is not None:
            steps.append(max(ends) - prev_end)
    print(f"graph {g}: {len(reps)} replays of {nk} kernels, medians over {len(used)}")
    print(f"{'#':>3} {'kernel':<34} {'grid':>12} {'dur us':>8} {'adds us':>8}")
    by_name = defaultdict(float)
    total = 0.0
    for j in range(nk):
        r = reps[used[0]][j]
        name = short(r["name"])
        d, ad = statistics.median(durs[j]) / 1e3, statistics.median(adds[j]) / 1e3
        by_name[name] += ad
        total += ad
        grid = f"{r['grid_x']}x{r['grid_y']}x{r['grid_z']}"
        print(f"{j:>3} {name[:34]:<34} {grid:>12} {d:8.2f} {ad:8.2f}")
    print(f"step: sum of adds {total:.1f} us; median replay end to end {statistics.median(steps) / 1e3:.1f} us"
          if steps else f"step: sum of adds {total:.1f} us")
    print("adds by kernel:")
    for name, v in sorted(by_name.items(), key=lambda kv: -kv[1]):
        print(f"  {name[:40]:<40} {v:8.1f} us")


if __name__ == "__main__":
    main()
