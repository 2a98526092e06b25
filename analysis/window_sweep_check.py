#!/usr/bin/python3
"""Issue 15's window-sweep bar on run files: is the split configuration's KL flat in L?

    /usr/bin/python3 analysis/window_sweep_check.py RUN.h5 [RUN.h5 ...] [--json OUT.json]
        [--split SPEC] [--lo 4] [--hi 64]

Each run holds the split configuration (default `replay hp=fp32 lp=nvfp4`, the issue's) at
several replay windows L (`replay L=4 hp=fp32 lp=nvfp4`, `replay L=16 ...`, `replay L=64 ...`:
the configurations that differ from SPEC only in L). The mean KL over every step of every
sequence (finite steps, rssm_common.window_stats) is taken per L in lo..hi, and

    max / min of those means               at most 1.5 (the paper's Fig. 13: flat)

Why a check of its own: the bar is the paper's Fig. 13 at 16384 steps on the GPU, but a design
can be judged right after its training with a shorter run (sessions 16-19 used 1 x 4096 steps,
through a script kept beside a call's records). The split error flat in L needs it to sit in heads
whose memory is much longer than L: a head that remembers 1-16 tokens reads less of the
checkpoint the longer the window (session 19's c4c16: 2.59 over L = 4..64, every other bar met).

Beside the bar (which stays on the mean, the contract's metric), each L's median step and the
share of its mean carried by its largest 1 % of steps, and the medians' max / min: session 21's
m2x1s (fixed heads of 224-288 tokens) had means rising 2.7x from L = 4 to 64 while its median
steps stayed within 1.25x, the rise sitting in a heavy tail of rare steps (mean / median 18-44)
that a mean alone does not show.

And how far the ratio of means is from chance: a 90 % interval of max / min by a paired block
bootstrap (blocks of --block steps, default the sweep's largest L, so that each block holds whole
replay windows at every L; the same blocks drawn for every L; --resamples draws with a fixed
seed, so the interval is reproducible). Session 23: three trainings of one design gave sweep
proxies of 1.15, 3.12 and 8.35 on 1 x 4096, the last with 47 % of L = 64's mean in ten steps of
one window; an interval that reaches below 1.5 says a miss rests on a few blocks. Not the bar.

Exit status: 0 when the bar holds for every run, 1 when it is missed ("missed"), 2 for bad input
(one line naming the file and what was expected).
"""

import argparse
import math
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from rssm_common import InputError, finish_checks, load_run, main_guard, window_of, window_stats, without_window  # noqa: E402

BAR = 1.5
TOP = 0.01     # the tail whose share of the mean is reported beside the bar
INTERVAL = (5.0, 95.0)   # percentiles of the bootstrap's max / min


def check(path, a):
    run = load_run(path)
    group = without_window(a.split)
    means, medians, tails, kls = {}, {}, {}, {}
    for c in run.configs:
        L = window_of(c.spec)
        if L is None or without_window(c.spec) != group or not a.lo <= L <= a.hi:
            continue
        if L in means:
            raise InputError(f"{path}: two configurations of '{group}' at L={L} "
                             "(expected one a window)")
        st = window_stats(c.kl, 1, run.N)
        if not np.isfinite(st["mean"]):
            raise InputError(f"{path}: /configs/{c.name}/kl has no finite step")
        means[L], medians[L] = st["mean"], st["median"]
        tails[L] = top_share(c.kl, TOP)
        kls[L] = np.asarray(c.kl[:, :run.N], dtype=np.float64)
    if len(means) < 2:
        raise InputError(f"{path}: '{group}' at {len(means)} window(s) in L = {a.lo}..{a.hi} "
                         "(expected at least two, e.g. L=4 and L=64)")
    hi_L, lo_L = max(means, key=means.get), min(means, key=means.get)
    ratio = means[hi_L] / means[lo_L]
    med = sorted(medians.values())
    block = a.block or max(means)
    lo_ci, hi_ci = bootstrap_ratio(kls, block, a.resamples)
    return {"file": path, "model": run.attrs.get("model", ""), "sequences": run.K,
            "steps": run.N, "group": group, "means": {str(L): means[L] for L in sorted(means)},
            "max_over_min": ratio, "max_at": hi_L, "min_at": lo_L, "met": ratio <= BAR,
            "medians": {str(L): medians[L] for L in sorted(medians)},
            # None where a median is 0 (JSON has no infinity)
            "median_max_over_min": med[-1] / med[0] if med[0] > 0 else None,
            "top_share": {str(L): tails[L] for L in sorted(tails)},
            "bootstrap": {"block": block, "resamples": a.resamples,
                          "max_over_min_90": [lo_ci, hi_ci]}}


def bootstrap_ratio(kls, block, resamples, seed=0):
    """5th and 95th percentiles of max / min over L of the mean KL when the blocks of `block`
    positions (every sequence cut from its first position; a last, shorter block kept) are
    drawn with replacement, the same draw for every L. kls: {L: kl [sequences][steps]}."""
    sums, counts = [], []
    for L in sorted(kls):
        k = kls[L]
        finite = np.isfinite(k)
        nb = -(-k.shape[1] // block)
        pad = nb * block - k.shape[1]
        v = np.pad(np.where(finite, k, 0.0), ((0, 0), (0, pad)))
        n = np.pad(finite.astype(np.float64), ((0, 0), (0, pad)))
        sums.append(v.reshape(k.shape[0], nb, block).sum(2).ravel())     # [sequences * blocks]
        counts.append(n.reshape(k.shape[0], nb, block).sum(2).ravel())
    sums, counts = np.stack(sums), np.stack(counts)                       # [L][blocks]
    rng = np.random.default_rng(seed)
    nb = sums.shape[1]
    ratios = []
    for start in range(0, resamples, 100):    # 100 resamples at a time: memory ~ 100 x blocks
        draws = rng.integers(0, nb, size=(min(100, resamples - start), nb))
        m = sums[:, draws].sum(2) / counts[:, draws].sum(2)               # [L][draws]
        ratios.append(m.max(0) / m.min(0))
    ratios = np.concatenate(ratios)
    lo, hi = np.percentile(ratios, INTERVAL)
    return float(lo), float(hi)


def top_share(kl, frac):
    """The share of the sum of the finite KL values that its largest ceil(frac n) values carry
    (1 % of n equal steps: 0.01; one step carrying everything: 1)."""
    vals = np.sort(kl[np.isfinite(kl)].ravel())
    total = vals.sum()
    if vals.size == 0 or total <= 0:
        return float("nan")
    return float(vals[-int(math.ceil(frac * vals.size)):].sum() / total)


def report(r):
    return "\n".join([
        f"{r['file']} ({r['model']}, {r['sequences']} x {r['steps']})",
        f"  {r['group']}: mean KL " + ", ".join(f"L={L} {m:.4g}" for L, m in r["means"].items()),
        f"  max / min over L: {r['max_over_min']:.3f} (L={r['max_at']} / L={r['min_at']}; "
        f"bar <= {BAR:g}: {'met' if r['met'] else 'missed'})",
        f"  max / min, 90 % interval of a paired bootstrap over blocks of "
        f"{r['bootstrap']['block']} steps ({r['bootstrap']['resamples']} draws): "
        f"[{r['bootstrap']['max_over_min_90'][0]:.3f}, {r['bootstrap']['max_over_min_90'][1]:.3f}] (not the bar)",
        f"  median step KL " + ", ".join(f"L={L} {m:.4g}" for L, m in r["medians"].items())
        + (f" (max / min {r['median_max_over_min']:.3f}; not the bar)"
           if r["median_max_over_min"] is not None else " (max / min -: a median is 0)"),
        f"  share of the mean in the largest {TOP:.0%} of steps: "
        + ", ".join(f"L={L} {v:.0%}" for L, v in r["top_share"].items())])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("runs", nargs="+")
    ap.add_argument("--json")
    ap.add_argument("--split", default="replay hp=fp32 lp=nvfp4")
    ap.add_argument("--lo", type=int, default=4)
    ap.add_argument("--hi", type=int, default=64)
    ap.add_argument("--block", type=int, default=0,
                    help="the bootstrap's block of steps (default: the largest L in the run)")
    ap.add_argument("--resamples", type=int, default=2000)
    a = ap.parse_args()
    if a.lo < 1 or a.hi <= a.lo:
        raise InputError(f"--lo {a.lo} --hi {a.hi}: expected 1 <= lo < hi")
    if a.block < 0 or a.resamples < 100:
        raise InputError(f"--block {a.block} --resamples {a.resamples}: expected a block >= 1 "
                         "(0: the largest L) and at least 100 resamples")
    results = [check(p, a) for p in a.runs]
    missed = sum(not r["met"] for r in results)
    finish_checks(results, report, missed,
                  f"window_sweep_check: {missed} run(s) missed over {len(results)}", a.json)


if __name__ == "__main__":
    main_guard(main)
