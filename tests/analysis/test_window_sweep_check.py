#!/usr/bin/env python3
"""analysis/window_sweep_check.py on made-up run files with known means per window: split KL
at L = 4, 16, 64 of 1.2e-4, 1.0e-4, 0.9e-4 (max / min 1.333) passes; 2.6e-4, 1.6e-4, 1.0e-4
(2.6) fails with exit 1 and "missed"; configurations outside the split group or outside L = 4..64
are left out (a shared checkpoint and an L = 256 split with far larger KL change nothing); a run
with the split at one window, a window given twice and a file that is not HDF5 exit 2 with one
line naming the file. Beside the bar: a run whose L = 64 mean doubles through 82 large steps
(1 % of 2 x 4096) while every other step equals L = 4's reports medians equal (max / min 1.000)
and those steps' share of the mean (0.82 / 1.631), exactly; a median of 0 gives no ratio of
medians (null). The bootstrap interval beside the bar: exact for KL constant within each L, its
lower end at the flat ratio when the rise is one spike in one block, and --block honoured."""
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
        # the bootstrap interval: KL constant within each L gives the same ratio in every draw,
        # [1.3, 1.3]; one spike in one block of L = 64 (blocks of 64 steps, the largest L: 128
        # blocks over 2 x 4096) lifts the ratio of means, but ~37 % of the draws miss that block
        # and give the flat 1.0, so the interval's lower end is 1.0 exactly and its upper end
        # above the ratio of means
        const = os.path.join(d, "const.h5")
        write_kl(const, [(split(4), np.full((2, N), 1e-4)), (split(64), np.full((2, N), 1.3e-4))])
        r = run(const, "--json", js)
        b = json.load(open(js))[0]["bootstrap"]
        assert b["block"] == 64 and b["resamples"] == 2000, b
        assert all(abs(v - 1.3) < 1e-12 for v in b["max_over_min_90"]), b
        assert "90 % interval of a paired bootstrap over blocks of 64 steps (2000 draws): [1.300, 1.300]" in r.stdout, r.stdout
        # a run whose length is not a whole number of blocks: the last, shorter block is kept
        write_kl(const, [(split(4), np.full((2, N + 4), 1e-4)), (split(64), np.full((2, N + 4), 1.3e-4))])
        r = run(const, "--json", js)
        assert r.returncode == 0, r.stdout + r.stderr
        assert all(abs(v - 1.3) < 1e-12 for v in json.load(open(js))[0]["bootstrap"]["max_over_min_90"]), r.stdout
        spike_kl = flat_kl.copy()
        spike_kl[1, 1000] = 1e-1                    # mean 1e-4 + (0.1 - 1e-4) / 8192, ratio 1.122
        write_kl(tail, [(split(4), flat_kl), (split(64), spike_kl)])
        r = run(tail, "--json", js)
        j = json.load(open(js))[0]
        lo, hi = j["bootstrap"]["max_over_min_90"]
        assert abs(j["max_over_min"] - (1e-4 + (0.1 - 1e-4) / 8192) / 1e-4) < 1e-9, j
        # every draw holds 8192 steps, so its ratio is 1 + c x 0.12195 for c draws of the spike's
        # block, c ~ Binomial(128, 1/128): P(c <= 2) = 0.92, P(c <= 3) = 0.98, so the 95th
        # percentile is c = 3
        assert lo == 1.0 and abs(hi - (1 + 3 * (0.1 - 1e-4) / 8192e-4)) < 1e-9, j["bootstrap"]
        # paired: the same spike at the same step at both L gives 1.0 in every draw (drawing the
        # blocks apart per L would not)
        paired = os.path.join(d, "paired.h5")
        write_kl(paired, [(split(4), spike_kl), (split(64), spike_kl)])
        r = run(paired, "--json", js)
        assert json.load(open(js))[0]["bootstrap"]["max_over_min_90"] == [1.0, 1.0], r.stdout
        # --block 4096: two blocks (one per sequence); a draw holds the spike's block 0, 1 or 2
        # times (1/4, 1/2, 1/4), so the ends are 1.0 and the ratio with it twice
        r = run(tail, "--block", "4096", "--json", js)
        b = json.load(open(js))[0]["bootstrap"]
        assert b["block"] == 4096 and b["max_over_min_90"][0] == 1.0, b
        assert abs(b["max_over_min_90"][1] - (1e-4 + 2 * (0.1 - 1e-4) / 8192) / 1e-4) < 1e-9, b
        for args, want in [([one], "at 1 window(s)"), ([twice], "two configurations"),
                           ([js], "o.json"), ([flat, "--lo", "64", "--hi", "4"], "--lo 64"),
                           ([flat, "--resamples", "10"], "--resamples 10")]:
            r = run(*args)
            assert r.returncode == 2, (args, r.stdout, r.stderr)
            assert want in r.stderr and r.stderr.count("\n") == 1, (args, r.stderr)
    print("test_window_sweep_check: ok")


if __name__ == "__main__":
    main()
