#!/usr/bin/env python3
"""scripts/bench/kernels_profile_summary.py on a made-up ncu details CSV with known medians and
verdicts (no GPU, no ncu): a bytes-bound kernel, a latency-bound one launched on two grids, a
launch under --min-us, ncu's thousands separators and time units, --per-launch keeping each
launch apart in launch order; a CSV without ncu's columns exits 2 with one line."""
import json
import os
import subprocess
import sys
import tempfile

ROOT = sys.argv[1]
SCRIPT = os.path.join(ROOT, "scripts", "bench", "kernels_profile_summary.py")
HEAD = ('"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream",'
        '"Block Size","Grid Size","Device","CC","Section Name","Metric Name","Metric Unit",'
        '"Metric Value"\n')


def row(i, kernel, grid, name, unit, value):
    return (f'"{i}","1","replayssm","h","{kernel}","1","7","(128, 1, 1)","{grid}","0","9.0",'
            f'"S","{name}","{unit}","{value}"\n')


def launch(i, kernel, grid, dur, unit, dram, issue, occ):
    return (row(i, kernel, grid, "Duration", unit, dur) +
            row(i, kernel, grid, "DRAM Throughput", "%", dram) +
            row(i, kernel, grid, "Issue Slots Busy", "%", issue) +
            row(i, kernel, grid, "Achieved Occupancy", "%", occ) +
            row(i, kernel, grid, "Block Limit Registers", "block", "8"))


def main():
    text = "==PROF== Connected to process 1\n" + HEAD
    # conv_step on (256,1,1): three launches, medians 1,500 us / 85 % DRAM -> bytes
    text += launch(0, "conv_step", "(256, 1, 1)", "1,400", "usecond", "84", "20", "40")
    text += launch(1, "conv_step", "(256, 1, 1)", "1.5", "msecond", "85", "21", "41")
    text += launch(2, "conv_step", "(256, 1, 1)", "1,600", "usecond", "90", "22", "42")
    # readout_nvfp4 on two grids: the big one latency-bound (30 % DRAM, 25 % issue)
    text += launch(3, "readout_nvfp4", "(1024, 1, 1)", "600", "usecond", "30", "25", "12")
    text += launch(4, "readout_nvfp4", "(3, 1, 1)", "2,000", "nsecond", "1", "1", "5")
    # issue-bound: 75 % issue slots
    text += launch(5, "decode_tab", "(512, 1, 1)", "50", "usecond", "10", "75", "60")
    with tempfile.TemporaryDirectory() as d:
        p = os.path.join(d, "p.csv")
        with open(p, "w") as f:
            f.write(text)
        j = os.path.join(d, "p.json")
        r = subprocess.run([sys.executable, SCRIPT, p, "--json", j], capture_output=True,
                           text=True)
        assert r.returncode == 0, r.stderr
        lines = json.load(open(j))
        by = {(m["kernel"], m["grid"]): m for m in lines}
        assert ("readout_nvfp4", "(3, 1, 1)") not in by, "a 2 us launch is under --min-us 5"
        conv = by[("conv_step", "(256, 1, 1)")]
        assert conv["launches"] == 3 and abs(conv["dur"] - 1500.0) < 1e-9, conv
        assert conv["dram_pct"] == 85.0 and conv["bound"] == "bytes", conv
        ro = by[("readout_nvfp4", "(1024, 1, 1)")]
        assert ro["bound"] == "latency" and ro["occ_pct"] == 12.0, ro
        assert by[("decode_tab", "(512, 1, 1)")]["bound"] == "issue"
        # ordered by total time: conv (4500 us) first
        assert lines[0]["kernel"] == "conv_step", lines
        assert "latency  readout_nvfp4" in r.stdout, r.stdout
        # with --min-us 0 the small launch is kept, in microseconds
        r = subprocess.run([sys.executable, SCRIPT, p, "--min-us", "0", "--json", j],
                           capture_output=True, text=True)
        small = [m for m in json.load(open(j)) if m["grid"] == "(3, 1, 1)"]
        assert len(small) == 1 and abs(small[0]["dur"] - 2.0) < 1e-9, small
        # --per-launch: every launch of conv_step apart, in launch order (IDs 0, 1, 2: 1400,
        # 1500, 1600 us), not their median; the readout after them
        r = subprocess.run([sys.executable, SCRIPT, p, "--per-launch", "--json", j],
                           capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        each = json.load(open(j))
        assert [m["kernel"] for m in each] == ["conv_step"] * 3 + ["readout_nvfp4", "decode_tab"], each
        assert [m["dur"] for m in each[:3]] == [1400.0, 1500.0, 1600.0], each
        assert all(m["launches"] == 1 for m in each), each
        assert each[0]["dram_pct"] == 84.0 and each[2]["dram_pct"] == 90.0, each
        # not an ncu CSV: exit 2, one line naming the file
        bad = os.path.join(d, "bad.csv")
        with open(bad, "w") as f:
            f.write('"a","b"\n"1","2"\n')
        r = subprocess.run([sys.executable, SCRIPT, bad], capture_output=True, text=True)
        assert r.returncode == 2 and r.stderr.count("\n") == 1 and "bad.csv" in r.stderr, r
    print("test_profile_summary: ok")


main()
