#!/usr/bin/python3
"""KL against generation length (the paper's Fig. 5 and Fig. 12) and per-bucket summaries.

    /usr/bin/python3 analysis/plot_kl_length.py RUN.h5 [RUN.h5 ...] --out-dir DIR

For each run file: DIR/STEM_kl_length.png (log-log, one line per configuration: the mean KL over
sequences in power-of-two buckets of the generation length, with a band of one standard error
between sequences; an 'x' marks the first non-finite step of a configuration) and
DIR/STEM_kl_buckets.csv (per configuration and bucket: mean, standard error, median, 90th
percentile and maximum of the finite KL values, and the number of non-finite steps).
Positions are 1-based: step t (0-based) has read t + 1 tokens.
"""

import argparse
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import rssm_common as rc  # noqa: E402

CSV_HEADER = ["config", "spec", "bucket_lo", "bucket_hi", "sequences", "steps", "mean_kl",
              "se_kl", "median_kl", "p90_kl", "max_kl", "nonfinite_steps"]


def bucket_rows(run):
    rows = []
    for c in run.configs:
        for lo, hi in rc.pow2_buckets(run.N):
            s = rc.window_stats(c.kl, lo, hi)
            rows.append([c.name, c.spec, lo, hi, run.K, s["steps"], rc.num(s["mean"]),
                         rc.num(s["se"]), rc.num(s["median"]), rc.num(s["p90"]), rc.num(s["max"]),
                         s["nonfinite"]])
    return rows


def plot(run, path):
    plt = rc.pyplot()
    fig, ax = plt.subplots(figsize=(7.0, 4.5))
    buckets = rc.pow2_buckets(run.N)
    skipped = []
    for i, c in enumerate(run.configs):
        xs, ys, lo_band, hi_band = [], [], [], []
        for lo, hi in buckets:
            s = rc.window_stats(c.kl, lo, hi)
            # a bucket with a non-finite step has no finite mean for that sequence's divergence:
            # it is left out of the line and the divergence marked instead
            if s["nonfinite"] or not (s["mean"] > 0.0):
                continue
            xs.append(math.sqrt(lo * hi))
            ys.append(s["mean"])
            se = s["se"] if math.isfinite(s["se"]) else 0.0
            lo_band.append(max(s["mean"] - se, s["mean"] * 1e-3))
            hi_band.append(s["mean"] + se)
        color = f"C{i % 10}"
        if xs:
            ax.plot(xs, ys, marker="o", ms=3, lw=1.2, color=color, label=c.spec)
            ax.fill_between(xs, lo_band, hi_band, color=color, alpha=0.2, lw=0)
        else:
            skipped.append(c.spec)
        bad = c.first_nonfinite[c.first_nonfinite >= 0]
        if bad.size:
            first = int(bad.min()) + 1
            ax.axvline(first, color=color, ls=":", lw=1.0)
            ax.plot([first], [ys[-1] if ys else 1.0], marker="x", ms=8, color=color,
                    label=f"{c.spec}: first non-finite at {first}")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("generation length (tokens)")
    ax.set_ylabel("KL(p_ref || p_cfg) (nats), mean per power-of-two bucket")
    ax.set_title(f"{run.stem}: KL against length ({run.K} sequences, {run.N} steps)")
    if skipped:
        ax.text(0.01, 0.01, "no positive finite KL: " + "; ".join(skipped), fontsize=6,
                transform=ax.transAxes)
    ax.legend(fontsize=6, loc="best")
    fig.tight_layout()
    rc.save_png(fig, path)
    plt.close(fig)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("runs", nargs="+", help="run HDF5 files (SPEC section 7)")
    ap.add_argument("--out-dir", required=True)
    a = ap.parse_args()
    rc.ensure_dir(a.out_dir)
    for path in a.runs:
        run = rc.load_run(path)
        csv_path = os.path.join(a.out_dir, f"{run.stem}_kl_buckets.csv")
        rc.write_csv(csv_path, CSV_HEADER, bucket_rows(run))
        png = os.path.join(a.out_dir, f"{run.stem}_kl_length.png")
        plot(run, png)
        print(f"wrote {png} and {csv_path}")


if __name__ == "__main__":
    rc.main_guard(main)
