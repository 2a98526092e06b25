#!/usr/bin/python3
"""Issue 15's long-memory check on run files: does a model show the paper's drift with length?

    /usr/bin/python3 analysis/longmem_check.py RUN.h5 [RUN.h5 ...] [--json OUT.json]
        [--early 64] [--late 4096] [--shared SPEC] [--split SPEC]

Each run holds (at least) the fp32 control, a shared low-precision checkpoint and a split one
(defaults: `replay L=16 ckpt=nvfp4/sr` and `replay L=16 hp=fp32 lp=nvfp4`, the issue's three
configurations of `replay L=16 ckpt=fp32` beside them). The mean KL over the bucket of positions
[early, 2 early) and over [late, 2 late) (1-based positions, all sequences; a bucket past the
run's end is an error) gives, per model:

    shared / split in the late bucket      at least 10 (the split-precision gain)
    shared late / shared early             at least 10 (the shared checkpoint drifts)
    split late / split early               at most 3  (split precision does not)
    the control's largest KL over all steps at most 1e-10 (the fp32 floor)

With more than one sequence (window), the bars are on the means pooled over them, and each
sequence's own growths and ratio follow the verdicts ("per_sequence" in the JSON): the early
bucket holds 64 positions of one text, so a single window's verdict moves with the text (session
18: one design's shared growth 9.2-15.9 over four windows of Moby-Dick).

Below the verdicts, each of the three configurations' mean KL per doubling bucket lo..2 lo - 1
(lo = 16, 32, ... while the bucket fits the run; "curves" in the JSON): the two buckets of the bars
do not say whether a curve flattens after a few hundred steps or still rises at the end, and that
tells the designs of issue 15 apart (docs/trained-models.md).

Exit status: 0 when every bar holds for every run, 1 when one is missed (each printed as
"missed"), 2 for bad input (one line naming the file and what was expected).
"""

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from rssm_common import InputError, finish_checks, is_control, load_run, main_guard, window_stats  # noqa: E402

BARS = {"ratio": 10.0, "shared_growth": 10.0, "split_growth": 3.0, "control_max": 1e-10}


def bucket_mean(path, cfg, lo, N):
    """Mean KL over positions lo .. 2 lo - 1 of every sequence (non-finite steps excluded:
    rssm_common.window_stats, as the other scripts' buckets)."""
    hi = 2 * lo - 1
    if hi > N:
        raise InputError(f"{path}: the bucket {lo}..{hi} ends past the run's {N} steps "
                         "(expected a longer run or a smaller --late)")
    mean = window_stats(cfg.kl, lo, hi)["mean"]
    if not np.isfinite(mean):
        raise InputError(f"{path}: /configs/{cfg.name}/kl has no finite step in {lo}..{hi}")
    return mean


def curve(cfg, N, first=16):
    """[[lo, mean KL over lo .. 2 lo - 1], ...] for lo = first, 2 first, ... while 2 lo - 1 <= N
    (a bucket with no finite step gives nan)."""
    out, lo = [], first
    while 2 * lo - 1 <= N:
        out.append([lo, window_stats(cfg.kl, lo, 2 * lo - 1)["mean"]])
        lo *= 2
    return out


def find(path, run, spec):
    for c in run.configs:
        if c.spec == spec:
            return c
    raise InputError(f"{path}: no configuration '{spec}' (expected one of: "
                     + ", ".join(c.spec for c in run.configs) + ")")


def check(path, a):
    run = load_run(path)
    controls = [c for c in run.configs if is_control(c.spec)]
    if not controls:
        raise InputError(f"{path}: no fp32 control configuration (expected e.g. "
                         "'replay L=16 ckpt=fp32')")
    sh, sp = find(path, run, a.shared), find(path, run, a.split)
    e_sh, l_sh = bucket_mean(path, sh, a.early, run.N), bucket_mean(path, sh, a.late, run.N)
    e_sp, l_sp = bucket_mean(path, sp, a.early, run.N), bucket_mean(path, sp, a.late, run.N)
    ctl = np.concatenate([c.kl[np.isfinite(c.kl)] for c in controls])
    r = {"file": path, "model": run.attrs.get("model", ""), "sequences": run.K, "steps": run.N,
         "early": [a.early, 2 * a.early - 1], "late": [a.late, 2 * a.late - 1],
         "shared": {"spec": sh.spec, "early": e_sh, "late": l_sh},
         "split": {"spec": sp.spec, "early": e_sp, "late": l_sp},
         "ratio": l_sh / l_sp, "shared_growth": l_sh / e_sh, "split_growth": l_sp / e_sp,
         "control_max": float(ctl.max()), "control_mean": float(ctl.mean()),
         "curves": {c.spec: curve(c, run.N) for c in (controls[0], sh, sp)}}
    if run.K > 1:
        def seq_mean(cfg, lo, i):
            return window_stats(cfg.kl[i:i + 1], lo, 2 * lo - 1)["mean"]
        r["per_sequence"] = [
            {"shared_growth": seq_mean(sh, a.late, i) / seq_mean(sh, a.early, i),
             "split_growth": seq_mean(sp, a.late, i) / seq_mean(sp, a.early, i),
             "ratio": seq_mean(sh, a.late, i) / seq_mean(sp, a.late, i)} for i in range(run.K)]
    r["verdicts"] = {
        "ratio": r["ratio"] >= BARS["ratio"],
        "shared_growth": r["shared_growth"] >= BARS["shared_growth"],
        "split_growth": r["split_growth"] <= BARS["split_growth"],
        "control_max": r["control_max"] <= BARS["control_max"]}
    return r


def report(r):
    ok = lambda k: "met" if r["verdicts"][k] else "missed"  # noqa: E731
    e, l_ = r["early"], r["late"]
    return "\n".join([
        f"{r['file']} ({r['model']}, {r['sequences']} x {r['steps']})",
        f"  shared {r['shared']['spec']}: {e[0]}..{e[1]} {r['shared']['early']:.4g}, "
        f"{l_[0]}..{l_[1]} {r['shared']['late']:.4g}, growth {r['shared_growth']:.4g} "
        f"(bar >= {BARS['shared_growth']:g}: {ok('shared_growth')})",
        f"  split  {r['split']['spec']}: {e[0]}..{e[1]} {r['split']['early']:.4g}, "
        f"{l_[0]}..{l_[1]} {r['split']['late']:.4g}, growth {r['split_growth']:.4g} "
        f"(bar <= {BARS['split_growth']:g}: {ok('split_growth')})",
        f"  shared / split in {l_[0]}..{l_[1]}: {r['ratio']:.4g} (bar >= {BARS['ratio']:g}: "
        f"{ok('ratio')})",
        f"  control: max {r['control_max']:.3g}, mean {r['control_mean']:.3g} nats (bar: max <= "
        f"{BARS['control_max']:g}: {ok('control_max')})"]
        + [f"  sequence {i}: shared growth {q['shared_growth']:.4g}, split growth "
           f"{q['split_growth']:.4g}, shared / split {q['ratio']:.4g}"
           for i, q in enumerate(r.get("per_sequence", []))]
        + ["  mean KL per bucket lo..2lo-1 (nats), as lo:mean:"]
        + [f"    {spec}: " + " ".join(f"{lo}:{m:.3g}" for lo, m in pts)
           for spec, pts in r["curves"].items()])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("runs", nargs="+")
    ap.add_argument("--json")
    ap.add_argument("--early", type=int, default=64)
    ap.add_argument("--late", type=int, default=4096)
    ap.add_argument("--shared", default="replay L=16 ckpt=nvfp4/sr")
    ap.add_argument("--split", default="replay L=16 hp=fp32 lp=nvfp4")
    a = ap.parse_args()
    if a.early < 1 or a.late <= a.early:
        raise InputError(f"--early {a.early} --late {a.late}: expected 1 <= early < late")
    results = [check(p, a) for p in a.runs]
    missed = sum(not v for r in results for v in r["verdicts"].values())
    finish_checks(results, report, missed,
                  f"longmem_check: {missed} bar(s) missed over {len(results)} run(s)", a.json)


if __name__ == "__main__":
    main_guard(main)
