#!/usr/bin/env python3
"""analysis/window_sweep_check.py on made-up run files with known means per window: split KL
at L = 4, 16, 64 of 1.2e-4, 1.0e-4, 0.9e-4 (max / min 1.333) passes; 2.6e-4, 1.6e-4, 1.0e-4
(2.6) fails with exit 1 and "missed"; configurations outside the split group or outside L = 4..64
are left out (a shared checkpoint and an L = 256 split with far larger KL change nothing); a run
with the split at one window, a window given twice and a file that is not HDF5 exit 2 with one
line naming the file. Beside the bar: a run whose L = 64 mean doubles through 82 large steps
(1 % of 2 x 4096) while every other step equals L = 4's reports medians equal (max / min 1.000)
and those steps' share of the mean (0.82 / 1.631), exactly; a median of 0 gives no ratio of
medians (null)."""
import json
import os
import subprocess
import sys
import tempfile

import h5py
import numpy as np

ROOT = sys.argv[1]
SCRIPT = os.path.join(ROOT, "analysis", "window_sweep_check.py")
N = 4096


def write_run(path, configs):
    """configs: [(spec, mean)]; two sequences of KL uniform in [0.5, 1.5] x mean, rescaled so
    that the mean over every step is `mean` exactly (to rounding)."""
    rng = np.random.default_rng(11)
    kls = []
    for spec, mean in configs:
        k = rng.uniform(0.5, 1.5, size=(2, N))
        kls.append((spec, k * (mean / k.mean())))
    write_kl(path, kls)


def write_kl(path, configs):
    """configs: [(spec, kl array of shape (2, N))], written as given."""
    with h5py.File(path, "w") as f:
        f.attrs["model"] = "made-up"
        g = f.create_group("configs")
        for i, (spec, k) in enumerate(configs):
            c = g.create_group(f"c{i}")
            c.attrs["spec"] = spec
            c.create_dataset("kl", data=np.asarray(k, dtype=np.float64))
            c.create_dataset("first_nonfinite", data=np.full(2, -1, dtype=np.int64))


def run(*args):
    return subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True)


def split(L):
    return f"replay L={L} hp=fp32 lp=nvfp4"


def main():
    with tempfile.TemporaryDirectory() as d:
        flat, steep, one, twice = (os.path.join(d, n) for n in ("flat.h5", "steep.h5", "one.h5", "twice.h5"))
        write_run(flat, [(split(4), 1.2e-4), (split(16), 1.0e-4), (split(64), 0.9e-4),
                         ("replay L=16 ckpt=nvfp4/sr", 5e-3), (split(256), 9e-3)])
        write_run(steep, [(split(4), 2.6e-4), (split(16), 1.6e-4), (split(64), 1.0e-4)])
        write_run(one, [(split(16), 1e-4), ("replay L=16 ckpt=fp32", 1e-13)])
        write_run(twice, [(split(4), 1e-4), (split(4), 2e-4), (split(64), 1e-4)])
        js = os.path.join(d, "o.json")
        r = run(flat, "--json", js)
        assert r.returncode == 0, r.stdout + r.stderr
        j = json.load(open(js))[0]
        assert sorted(j["means"]) == ["16", "4", "64"], j["means"]
        assert abs(j["max_over_min"] - 1.2 / 0.9) < 1e-9 and j["met"], j
        assert (j["max_at"], j["min_at"]) == (4, 64), j
        assert "max / min over L: 1.333 (L=4 / L=64; bar <= 1.5: met)" in r.stdout, r.stdout
        r = run(flat, steep, "--json", js)
        assert r.returncode == 1, r.stdout + r.stderr
        j = json.load(open(js))
        assert j[0]["met"] and not j[1]["met"] and abs(j[1]["max_over_min"] - 2.6) < 1e-9, j
        assert "bar <= 1.5: missed" in r.stdout and "1 run(s) missed over 2" in r.stdout, r.stdout
        # --hi 16: L = 64 left out, 2.6 / 1.6
        r = run(steep, "--hi", "16", "--json", js)
        assert r.returncode == 1 and abs(json.load(open(js))[0]["max_over_min"] - 2.6 / 1.6) < 1e-9, r.stdout
        # a heavy tail: the mean rises with L, the median does not
        tail = os.path.join(d, "tail.h5")
        flat_kl = np.full((2, N), 1e-4)
        tail_kl = flat_kl.copy()
        tail_kl.ravel()[::100][:82] = 1e-2          # 82 = ceil(0.01 x 8192) steps
        write_kl(tail, [(split(4), flat_kl), (split(64), tail_kl)])
        r = run(tail, "--json", js)
        assert r.returncode == 1, r.stdout + r.stderr
        j = json.load(open(js))[0]
        assert abs(j["max_over_min"] - 1.631 / 0.8192) < 1e-9, j
        assert j["medians"] == {"4": 1e-4, "64": 1e-4} and j["median_max_over_min"] == 1.0, j
        assert abs(j["top_share"]["64"] - 0.82 / 1.631) < 1e-12, j
        assert abs(j["top_share"]["4"] - 82 / 8192) < 1e-12, j
        assert "(max / min 1.000; not the bar)" in r.stdout, r.stdout
        assert "largest 1% of steps: L=4 1%, L=64 50%" in r.stdout, r.stdout
        # a median of 0 (most steps exact): no ratio of medians, in the JSON (null) or the text
        zero_kl = np.zeros((2, N))
        zero_kl[:, :N // 4] = 1e-4
        write_kl(tail, [(split(4), zero_kl), (split(64), flat_kl)])
        r = run(tail, "--json", js)
        assert json.load(open(js))[0]["median_max_over_min"] is None, r.stdout
        assert "(max / min -: a median is 0)" in r.stdout, r.stdout
        for args, want in [([one], "at 1 window(s)"), ([twice], "two configurations"),
                           ([js], "o.json"), ([flat, "--lo", "64", "--hi", "4"], "--lo 64")]:
            r = run(*args)
            assert r.returncode == 2, (args, r.stdout, r.stderr)
            assert want in r.stderr and r.stderr.count("\n") == 1, (args, r.stderr)
    print("test_window_sweep_check: ok")


if __name__ == "__main__":
    main()
