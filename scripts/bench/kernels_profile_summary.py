#!/usr/bin/env python3
"""One line per kernel from Nsight Compute's details CSV (scripts/bench/kernels_profile.sh).

Issue 17 asks, for each missed kernel target, which bound stops it: bytes (DRAM throughput near
its peak), issue slots (issue-slot use near 100 %) or latency (neither: too few warps in flight,
or each waiting long per instruction). This groups the CSV's rows by kernel name and grid size
(the bench's 3-row checks launch the same kernels on small grids: kept apart), takes the median
over launches of each metric, and prints the verdict the numbers support:

    bytes      DRAM throughput >= 70 % of peak
    issue      issue slots busy >= 70 %
    latency    otherwise (the line shows achieved occupancy and cycles per issued instruction)

    kernels_profile_summary.py profile-qwen4b.csv [profile-nano.csv ...] [--min-us 5] [--json F]
                               [--per-launch]

--per-launch prints every launch on its own line, in launch order, instead of the median of a
kernel and grid: a graph's launches of one kernel can do different work (the first mat4 launch
of part std is the conventional step, the next 15 return at once on replay's non-flush steps, the
17th is the flush), and the median would hide the one that matters.
"""
import argparse
import csv
import json
import statistics
import sys

# metric names as ncu's details page prints them (sections SpeedOfLight, Occupancy,
# LaunchStats, WarpStateStats, ComputeWorkloadAnalysis, MemoryWorkloadAnalysis)
METRICS = {
    "Duration": "dur",
    "DRAM Throughput": "dram_pct",
    "Memory Throughput": "mem",
    "Compute (SM) Throughput": "sm_pct",
    "Achieved Occupancy": "occ_pct",
    "Theoretical Occupancy": "occ_theory_pct",
    "Registers Per Thread": "regs",
    "Issue Slots Busy": "issue_pct",
    "Warp Cycles Per Issued Instruction": "cpi",
}
BYTES_PCT = 70.0
ISSUE_PCT = 70.0


def number(text):
    """ncu's values print with thousands separators ("1,234.5"); n/a and empty give None."""
    t = text.replace(",", "").strip()
    try:
        return float(t)
    except ValueError:
        return None


def to_us(value, unit):
    scale = {"nsecond": 1e-3, "ns": 1e-3, "usecond": 1.0, "us": 1.0, "msecond": 1e3, "ms": 1e3,
             "second": 1e6, "s": 1e6}
    if unit not in scale:
        raise ValueError(f"Duration in unit '{unit}' (expected nsecond, usecond or msecond)")
    return value * scale[unit]


def read_launches(path):
    """{launch id: {"kernel", "grid", metric key: value}} from one details CSV."""
    launches = {}
    with open(path, newline="") as f:
        lines = [l for l in f if l.startswith('"')]  # ncu may print ==PROF== lines first
    rows = csv.DictReader(lines)
    need = {"ID", "Kernel Name", "Grid Size", "Metric Name", "Metric Unit", "Metric Value"}
    if rows.fieldnames is None or not need <= set(rows.fieldnames):
        raise ValueError(f"{path}: not an ncu details CSV (expected columns {sorted(need)})")
    for r in rows:
        key = METRICS.get(r["Metric Name"])
        if key is None:
            continue
        v = number(r["Metric Value"])
        if v is None:
            continue
        if key == "dur":
            v = to_us(v, r["Metric Unit"])
        d = launches.setdefault(r["ID"], {"kernel": r["Kernel Name"], "grid": r["Grid Size"]})
        d[key] = v
    return launches


def verdict(m):
    if m.get("dram_pct") is not None and m["dram_pct"] >= BYTES_PCT:
        return "bytes"
    if m.get("issue_pct") is not None and m["issue_pct"] >= ISSUE_PCT:
        return "issue"
    return "latency"


def launch_order(launch_id):
    """ncu numbers launches 0, 1, ...; a non-numeric ID sorts after them, by its text."""
    return (0, int(launch_id), "") if launch_id.isdigit() else (1, 0, launch_id)


def summarise(launches, min_us, per_launch=False):
    groups = {}
    for launch_id in sorted(launches, key=launch_order):
        d = launches[launch_id]
        key = (d["kernel"], d["grid"], launch_id if per_launch else None)
        groups.setdefault(key, []).append(d)
    out = []
    for (kernel, grid, _), ds in groups.items():
        m = {"kernel": kernel, "grid": grid, "launches": len(ds)}
        for key in METRICS.values():
            vals = [d[key] for d in ds if key in d]
            m[key] = statistics.median(vals) if vals else None
        if m["dur"] is None or m["dur"] < min_us:
            continue
        m["bound"] = verdict(m)
        out.append(m)
    if not per_launch:
        out.sort(key=lambda m: -m["dur"] * m["launches"])
    return out


def fmt(v, spec):
    return "-" if v is None else format(v, spec)


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("csv", nargs="+")
    ap.add_argument("--min-us", type=float, default=5.0,
                    help="leave out kernels shorter than this (the checks' tiny launches)")
    ap.add_argument("--json", help="also write the lines as JSON")
    ap.add_argument("--per-launch", action="store_true",
                    help="one line per launch, in launch order, instead of the median per kernel and grid")
    a = ap.parse_args(argv)
    every = []
    for path in a.csv:
        try:
            lines = summarise(read_launches(path), a.min_us, a.per_launch)
        except (OSError, ValueError) as e:
            print(f"kernels_profile_summary: {e}", file=sys.stderr)
            return 2
        for m in lines:
            m["file"] = path
        every += lines
        print(f"== {path}")
        print(f"{'us':>9} {'n':>4} {'DRAM%':>6} {'SM%':>6} {'issue%':>6} {'occ%':>6} {'cpi':>6} "
              f"{'regs':>4} bound    kernel [grid]")
        for m in lines:
            print(f"{fmt(m['dur'], '9.1f')} {m['launches']:4d} {fmt(m['dram_pct'], '6.1f')} "
                  f"{fmt(m['sm_pct'], '6.1f')} {fmt(m['issue_pct'], '6.1f')} "
                  f"{fmt(m['occ_pct'], '6.1f')} {fmt(m['cpi'], '6.1f')} {fmt(m['regs'], '4.0f')} "
                  f"{m['bound']:8} {m['kernel'][:60]} [{m['grid']}]")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(every, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
