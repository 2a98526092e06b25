#!/usr/bin/env python3
"""Compare two `replayssm run` outputs of the same experiment (docs/gpu-runtime.md, "tolerance of
the agreement test"): a CPU run and a GPU run, or two GPU runs that must be identical.

    compare_runs.py A.h5 B.h5 [--exact] [--fp32 NAME ...]

--exact: every dataset of /reference and /configs, /tokens and /window_start must be equal bit
for bit (resume, shards, graph replay on one device kind). Otherwise, the run-level agreement:

- /reference/nll per step: |dnll| <= 1e-4 (|nll| + 1);
- configurations named with --fp32 (fp32 states: the reference's twin, replay ckpt=fp32):
  per-step nll as above, and |dkl| <= 1e-4 kl + 3 sqrt(2 kl) e + e^2, where e = 10 x the
  largest reference |dnll| of that window, at least 1e-6 (a logit error e moves nll by at most
  2 e; the factor covers the logits that are not the target's, which the forward check bounds
  directly);
- every other configuration (quantised states can round the other way near a boundary, so the
  trajectories decorrelate): mean kl agrees within 3 combined standard errors plus 5 % (the
  standard error treats steps as independent, which they are not: a screening bound), and the
  top-1 agreement rates within 0.02;
- first_nonfinite equal.
Prints one line per dataset; exit status 0 when everything agrees, 1 otherwise.
Needs numpy and h5py (both on the GPU machine's image).
"""
import sys

import h5py
import numpy as np


def main(argv):
    args = [a for a in argv[1:]]
    exact = "--exact" in args
    fp32 = set()
    if "--fp32" in args:
        i = args.index("--fp32")
        fp32 = set(args[i + 1:])
        args = args[:i]
    args = [a for a in args if a != "--exact"]
    if len(args) != 2:
        print(__doc__)
        return 2
    fa, fb = h5py.File(args[0], "r"), h5py.File(args[1], "r")
    bad = 0

    def report(name, ok, text):
        nonlocal bad
        print(f"{name:40s} {'ok  ' if ok else 'FAIL'} {text}")
        bad += 0 if ok else 1

    for key in ("tokens", "window_start"):
        report(key, np.array_equal(fa[key][:], fb[key][:]), "(must be equal)")
    names = list(fa["configs"].keys())
    if names != list(fb["configs"].keys()):
        report("configs", False, f"{names} vs {list(fb['configs'].keys())}")
        return 1
    if exact:
        def same(x, y):
            return x.shape == y.shape and x.tobytes() == y.tobytes()
        report("reference/nll", same(fa["reference/nll"][:], fb["reference/nll"][:]), "bit-exact")
        for n in names:
            for d in ("kl", "nll", "dp", "top1", "first_nonfinite"):
                report(f"configs/{n}/{d}", same(fa[f"configs/{n}/{d}"][:], fb[f"configs/{n}/{d}"][:]),
                       "bit-exact")
        return 1 if bad else 0

    ra, rb = fa["reference/nll"][:].astype(np.float64), fb["reference/nll"][:].astype(np.float64)
    dref = np.abs(ra - rb)
    report("reference/nll", bool(np.all(dref <= 1e-4 * (np.abs(ra) + 1))),
           f"max |dnll| {dref.max():.3g}")
    e = np.maximum(10.0 * dref.max(axis=1, keepdims=True), 1e-6)  # [K, 1]; floor: identical nll
    for n in names:
        ga, gb = fa[f"configs/{n}"], fb[f"configs/{n}"]
        report(f"configs/{n}/first_nonfinite",
               np.array_equal(ga["first_nonfinite"][:], gb["first_nonfinite"][:]), "(equal)")
        ka, kb = ga["kl"][:].astype(np.float64), gb["kl"][:].astype(np.float64)
        na, nb = ga["nll"][:].astype(np.float64), gb["nll"][:].astype(np.float64)
        fin = np.isfinite(ka) & np.isfinite(kb)
        if n in fp32:
            dn = np.abs(na - nb)[fin]
            report(f"configs/{n}/nll", bool(np.all(dn <= 1e-4 * (np.abs(na[fin]) + 1))),
                   f"max |dnll| {dn.max() if dn.size else 0:.3g}")
            lim = 1e-4 * ka + 3 * np.sqrt(2 * np.maximum(ka, 0)) * e + e * e
            dk = np.abs(ka - kb)
            worst = np.max(np.where(fin, dk / np.maximum(lim, 1e-300), 0))
            report(f"configs/{n}/kl", bool(np.all((dk <= lim) | ~fin)), f"max |dkl|/limit {worst:.3g}")
        else:
            xa, xb = ka[fin], kb[fin]
            se = np.sqrt(xa.var() / max(xa.size, 1) + xb.var() / max(xb.size, 1))
            d = abs(xa.mean() - xb.mean())
            report(f"configs/{n}/kl (mean)", bool(d <= 3 * se + 0.05 * xa.mean()),
                   f"{xa.mean():.4g} vs {xb.mean():.4g} (3 se {3 * se:.2g})")
            ta, tb = ga["top1"][:][fin].mean(), gb["top1"][:][fin].mean()
            report(f"configs/{n}/top1 (rate)", bool(abs(ta - tb) <= 0.02), f"{ta:.4f} vs {tb:.4f}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
