#!/usr/bin/env python3
"""Compare the per-bucket mean KLs of two runs of one experiment (two *_kl_buckets.csv files
written by plot_kl_length.py): the check of a change that alters the arithmetic, where bit
identity is not expected but the statistics must not move (issue 18: the attention kernel).

For every (configuration, bucket) present in both files:

    z = (mean_b - mean_a) / sqrt(se_a^2 + se_b^2)

and the pair is counted within 1, 2 and 3 combined standard errors. Buckets where both means are
at or below --floor (default 1e-10 nats: the fp32 control, whose KL is rounding noise of the
reference's own arithmetic and moves with it; also the first steps of quantised configurations,
whose states start at zero) are reported as "floor" and not tested, and so are buckets with one
mean under the floor and the other under 100 x the floor (noise around it); a bucket at the floor
in one run and above 100 x the floor in the other is a failure (a configuration that left its
floor, e.g. the control growing to 1e-6: its own standard error would hide it). Buckets present
in one file only are listed, not tested (a longer run has more of them).

    compare_buckets.py BEFORE.csv AFTER.csv [--floor 1e-10] [--max-z 3] [--json OUT.json]

Exit status: 0 when every tested bucket is within --max-z combined standard errors and no
configuration left its floor; 1 otherwise; 2 on unreadable input (one line naming the file).
"""
import argparse
import csv
import json
import math
import sys

NEED = ("config", "bucket_lo", "bucket_hi", "mean_kl", "se_kl")


def read(path):
    """{(config, lo, hi): (mean, se)} from a buckets CSV."""
    try:
        with open(path, newline="") as f:
            rows = csv.DictReader(f)
            if rows.fieldnames is None or not set(NEED) <= set(rows.fieldnames):
                raise ValueError(f"{path}: not a kl_buckets CSV (expected the columns "
                                 f"{', '.join(NEED)})")
            out = {}
            for i, r in enumerate(rows, start=2):
                try:
                    key = (r["config"], int(r["bucket_lo"]), int(r["bucket_hi"]))
                    mean, se = float(r["mean_kl"]), float(r["se_kl"])
                except ValueError:
                    raise ValueError(f"{path}:{i}: bucket_lo/bucket_hi must be integers and "
                                     f"mean_kl/se_kl numbers") from None
                if not (math.isfinite(se) and se >= 0):
                    raise ValueError(f"{path}:{i}: se_kl must be a finite number >= 0, got "
                                     f"{r['se_kl']}")
                out[key] = (mean, se)
            return out
    except OSError as e:
        raise ValueError(f"{path}: {e.strerror}") from None


def compare(a, b, floor):
    """One record per bucket of both files, in config and bucket order."""
    out = []
    for key in sorted(set(a) & set(b)):
        (ma, sa), (mb, sb) = a[key], b[key]
        rec = {"config": key[0], "bucket_lo": key[1], "bucket_hi": key[2], "mean_a": ma,
               "se_a": sa, "mean_b": mb, "se_b": sb}
        at_a, at_b = ma <= floor, mb <= floor
        if (at_a and mb <= 100 * floor) or (at_b and ma <= 100 * floor):
            rec["verdict"], rec["z"] = "floor", None
        elif at_a != at_b:
            rec["verdict"], rec["z"] = "left-floor", None
        elif not (math.isfinite(ma) and math.isfinite(mb)):
            rec["verdict"] = "equal" if ma == mb else "nonfinite"
            rec["z"] = None
        else:
            se = math.hypot(sa, sb)
            z = (mb - ma) / se if se > 0 else (0.0 if mb == ma else math.inf)
            rec["verdict"], rec["z"] = "tested", z
        out.append(rec)
    return out


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("before")
    ap.add_argument("after")
    ap.add_argument("--floor", type=float, default=1e-10)
    ap.add_argument("--max-z", type=float, default=3.0)
    ap.add_argument("--json")
    o = ap.parse_args(argv)
    try:
        a, b = read(o.before), read(o.after)
    except ValueError as e:
        print(f"compare_buckets: {e}", file=sys.stderr)
        return 2
    recs = compare(a, b, o.floor)
    tested = [r for r in recs if r["verdict"] == "tested"]
    bad = [r for r in recs if r["verdict"] in ("left-floor", "nonfinite") or
           (r["verdict"] == "tested" and abs(r["z"]) > o.max_z)]
    print(f"{'config':24} {'bucket':>15} {'before':>22} {'after':>22} {'z':>7}")
    for r in recs:
        z = "-" if r["z"] is None else f"{r['z']:+7.2f}"
        flag = "" if r not in bad else "  <-- " + (r["verdict"] if r["z"] is None else "outside")
        print(f"{r['config'][:24]:24} {r['bucket_lo']:>7}..{r['bucket_hi']:<7} "
              f"{r['mean_a']:.4e} +- {r['se_a']:.1e} {r['mean_b']:.4e} +- {r['se_b']:.1e} "
              f"{z:>7}{flag if r['verdict'] != 'floor' else '  (floor)'}")
    within = [sum(abs(r["z"]) <= k for r in tested) for k in (1, 2, 3)]
    only = sorted(set(a) ^ set(b))
    print(f"compare_buckets: {len(tested)} bucket(s) tested: {within[0]} within 1 se, {within[1]} "
          f"within 2, {within[2]} within 3 (normal: 68 / 95 / 99.7 %); "
          f"{sum(r['verdict'] == 'floor' for r in recs)} at the floor in both; "
          f"{len(bad)} failed; {len(only)} bucket(s) in one file only")
    if o.json:
        with open(o.json, "w") as f:
            json.dump({"buckets": recs, "failed": len(bad), "within": within,
                       "one_file_only": [list(k) for k in only]}, f, indent=1)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
