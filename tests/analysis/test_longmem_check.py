#!/usr/bin/env python3
"""analysis/longmem_check.py on made-up run files with known bucket means: a run whose shared KL
grows 20x to 40 times split's passes every bar; one whose shared KL grows 4x fails that bar alone
(exit 1, "missed"); a control above 1e-10 fails; a bucket past the run's end, a missing
configuration and a file that is not HDF5 exit 2 with one line naming the file."""
import json
import os
import subprocess
import sys
import tempfile

import h5py
import numpy as np

ROOT = sys.argv[1]
SCRIPT = os.path.join(ROOT, "analysis", "longmem_check.py")
N = 8192


def write_run(path, shared_early, shared_late, split_early, split_late, control=1e-13):
    """Two sequences; KL constant inside 64..127 and 4096..8191, noise elsewhere."""
    rng = np.random.default_rng(7)
    pos = np.arange(1, N + 1)

    def kl(early, late):
        k = rng.uniform(0.5, 1.5, size=(2, N)) * early
        k[:, (pos >= 64) & (pos <= 127)] = early
        k[:, (pos >= 4096) & (pos <= 8191)] = late
        return k

    with h5py.File(path, "w") as f:
        f.attrs["model"] = "made-up"
        g = f.create_group("configs")
        for name, spec, k in [
                ("control", "replay L=16 ckpt=fp32", np.full((2, N), control)),
                ("shared", "replay L=16 ckpt=nvfp4/sr", kl(shared_early, shared_late)),
                ("split", "replay L=16 hp=fp32 lp=nvfp4", kl(split_early, split_late))]:
            c = g.create_group(name)
            c.attrs["spec"] = spec
            c.create_dataset("kl", data=k.astype(np.float32))
            c.create_dataset("first_nonfinite", data=np.full(2, -1, dtype=np.int64))


def run(*args):
    return subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True)


def main():
    with tempfile.TemporaryDirectory() as d:
        good, flat, hot = (os.path.join(d, n) for n in ("good.h5", "flat.h5", "hot.h5"))
        write_run(good, 1e-4, 2e-3, 4e-5, 5e-5)       # growth 20, ratio 40, split 1.25
        write_run(flat, 5e-4, 2e-3, 4e-5, 5e-5)       # shared growth 4 only
        write_run(hot, 1e-4, 2e-3, 4e-5, 5e-5, 1e-9)  # control off its floor
        js = os.path.join(d, "o.json")
        r = run(good, "--json", js)
        assert r.returncode == 0, r.stdout + r.stderr
        j = json.load(open(js))[0]
        assert abs(j["shared_growth"] - 20) < 1e-3 and abs(j["ratio"] - 40) < 1e-3, j
        assert abs(j["split_growth"] - 1.25) < 1e-4, j
        assert "0 bar(s) missed" in r.stdout, r.stdout
        # the curves: the bars' buckets hold their set values exactly; the control is flat; the
        # last bucket is 4096..8191 (8192..16383 would end past the run)
        cur = j["curves"]
        assert list(cur) == ["replay L=16 ckpt=fp32", "replay L=16 ckpt=nvfp4/sr",
                             "replay L=16 hp=fp32 lp=nvfp4"], list(cur)
        sh = dict((lo, m) for lo, m in cur["replay L=16 ckpt=nvfp4/sr"])
        assert sorted(sh) == [16, 32, 64, 128, 256, 512, 1024, 2048, 4096], sorted(sh)
        assert abs(sh[64] / 1e-4 - 1) < 1e-6 and abs(sh[4096] / 2e-3 - 1) < 1e-6, sh
        assert 0.5e-4 < sh[128] < 1.5e-4, sh                   # the noise around the early level
        assert all(abs(m / 1e-13 - 1) < 1e-6 for _, m in cur["replay L=16 ckpt=fp32"]), cur
        assert "    replay L=16 hp=fp32 lp=nvfp4: 16:" in r.stdout and " 4096:5e-05" in r.stdout, r.stdout
        # per sequence: sequence 1's early shared level doubled -> its growth 10, sequence 0's
        # 20, the pooled growth 2e-3 / 1.5e-4 = 13.33
        mixed = os.path.join(d, "mixed.h5")
        write_run(mixed, 1e-4, 2e-3, 4e-5, 5e-5)
        with h5py.File(mixed, "r+") as f:
            f["configs/shared/kl"][1, 63:127] = 2e-4
        r = run(mixed, "--json", js)
        assert r.returncode == 0, r.stdout + r.stderr
        j = json.load(open(js))[0]
        assert abs(j["shared_growth"] - 2e-3 / 1.5e-4) < 1e-3, j
        ps = j["per_sequence"]
        assert len(ps) == 2 and abs(ps[0]["shared_growth"] - 20) < 1e-3, ps
        assert abs(ps[1]["shared_growth"] - 10) < 1e-3 and abs(ps[1]["split_growth"] - 1.25) < 1e-4, ps
        assert "  sequence 1: shared growth 10, split growth 1.25, shared / split 40" in r.stdout, r.stdout
        r = run(good, flat, "--json", js)
        assert r.returncode == 1, r.stdout + r.stderr
        j = json.load(open(js))
        assert j[0]["verdicts"] == {k: True for k in j[0]["verdicts"]}, j[0]
        v = j[1]["verdicts"]
        assert not v["shared_growth"] and v["ratio"] and v["split_growth"], v
        assert "1 bar(s) missed over 2 run(s)" in r.stdout, r.stdout
        r = run(hot)
        assert r.returncode == 1 and "max <= 1e-10: missed" in r.stdout, r.stdout
        assert "1 bar(s) missed" in r.stdout, r.stdout
        # bad input: one line on stderr, exit 2, naming the file
        for args, want in [([good, "--late", "8192"], "ends past the run's 8192 steps"),
                           ([good, "--shared", "replay L=16 ckpt=fp8/sr"], "no configuration"),
                           ([os.path.join(d, "o.json")], "o.json")]:
            r = run(*args)
            assert r.returncode == 2, (args, r.stdout, r.stderr)
            assert want in r.stderr and r.stderr.count("\n") == 1, (args, r.stderr)
    print("test_longmem_check: ok")


if __name__ == "__main__":
    main()
