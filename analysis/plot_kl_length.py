#!/usr/bin/python3
"""KL against generation length (the paper's Fig. 5 and Fig. 12) and per-bucket summaries.

    /usr/bin/python3 analysis/plot_kl_length.py RUN.h5|STEM_kl_buckets.csv [...] --out-dir DIR

For each run file (or bucket CSV that this script wrote, e.g. a committed GPU summary):
DIR/STEM_kl_length.png and .pdf (log-log, one line per configuration named by its label, colour
per configuration family and line style per member: the mean KL over sequences in power-of-two
buckets of the generation length, with a band of one standard error between sequences; the fp32
control, the harness's floor, in its own panel underneath; an 'x' marks the first non-finite
step of a configuration; buckets whose mean is 0 are listed under the plot) and, from a run file,
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


def _curves(rows):
    """{name: (spec, [(lo, hi, mean, se, nonfinite)])} from bucket rows (run or CSV), in order."""
    out = {}
    for r in rows:
        name, spec = r[0], r[1]
        out.setdefault(name, (spec, []))[1].append(
            (int(r[2]), int(r[3]), float(r[6]), float(r[7]), int(r[11])))
    return out


def _floor_of(curves, names):
    """The main panel's lower edge: a decade below the smallest of the curves' median bucket
    means, so that buckets at the harness's floor (replay before its first flush) do not squeeze
    the informative range; None when nothing lies below it."""
    meds, lows = [], []
    for n in names:
        v = [b[2] for b in curves[n][1] if math.isfinite(b[2]) and b[2] > 0 and not b[4]]
        if v:
            meds.append(sorted(v)[len(v) // 2])
            lows.append(min(v))
    if not meds:
        return None
    edge = 10.0 ** (math.floor(math.log10(min(meds))) - 1)
    return edge if min(lows) < edge else None


def _draw(ax, name, spec, buckets, style, first_bad, notes, edge=None):
    xs, ys, lo_band, hi_band, zero = [], [], [], [], []
    below = []
    for lo, hi, mean, se, nonfinite in buckets:
        # a bucket with a non-finite step has no finite mean for that sequence's divergence:
        # it is left out of the line and the divergence marked instead
        if nonfinite or not math.isfinite(mean):
            continue
        if not mean > 0.0:
            zero.append(f"{lo}-{hi}")
            continue
        if edge is not None and mean < edge:
            below.append(math.sqrt(lo * hi))
            mean, se = edge, 0.0
        xs.append(math.sqrt(lo * hi))
        ys.append(mean)
        se = se if math.isfinite(se) else 0.0
        lo_band.append(max(mean - se, mean * 1e-2))
        hi_band.append(mean + se)
    if below:
        ax.plot(below, [edge] * len(below), ls="none", marker="v", ms=5, color=style["color"],
                clip_on=False)
    if xs:
        ax.plot(xs, ys, marker=style["marker"], ms=3.5, lw=1.3, ls=style["ls"],
                color=style["color"], mfc=style["mfc"], label=name)
        ax.fill_between(xs, lo_band, hi_band, color=style["color"], alpha=0.15, lw=0)
    else:
        notes.append(f"{name}: no positive finite mean KL")
    if zero:
        notes.append(("zero", ", ".join(zero), name))
    if first_bad is not None:
        ax.axvline(first_bad, color=style["color"], ls=":", lw=1.0)
        ax.plot([first_bad], [ys[-1] if ys else 1.0], marker="x", ms=8, color=style["color"],
                label=f"{name}: first non-finite at {first_bad}")


def plot(stem, rows, path, K, N, first_bad=None):
    """The figure: configurations in the main panel, the fp32 control (the harness's floor,
    orders of magnitude below) in its own panel underneath, sharing the length axis."""
    plt = rc.pyplot()
    curves = _curves(rows)
    st = rc.styles([(n, sp) for n, (sp, _) in curves.items()])
    control = [n for n, (sp, _) in curves.items() if rc.is_control(sp)]
    main = [n for n in curves if n not in control]
    if control and main:
        fig, (ax, axc) = plt.subplots(2, 1, figsize=(8.0 + 2.4 * ((len(curves) - 1) // 14), 6.2),
                                      sharex=True,
                                      gridspec_kw={"height_ratios": [3, 1.2]})
    else:
        fig, ax = plt.subplots(figsize=(8.0 + 2.4 * ((len(curves) - 1) // 14), 4.8))
        axc = None
    notes = []
    first_bad = first_bad or {}
    shown = main if axc is not None else list(curves)
    edge = _floor_of(curves, shown)
    for n in shown:
        _draw(ax, n, curves[n][0], curves[n][1], st[n], first_bad.get(n), notes, edge)
    if edge is not None:
        ax.set_ylim(bottom=edge)
        notes.insert(0, f"v: bucket mean below {edge:.0e} nats, drawn on the lower edge (at the "
                     "control's floor: replay before its first checkpoint flush)")
    ax.set_ylabel("mean KL(p_ref || p_cfg) (nats/token)")
    ax.set_title(f"{stem}: KL against generation length\n{K} sequences x {N} steps; "
                 "band: +-1 standard error between sequences", fontsize=9)
    rc.log_axis(ax)
    rc.legend(ax, len(shown))
    last = ax
    if axc is not None:
        for n in control:
            _draw(axc, n, curves[n][0], curves[n][1], st[n], first_bad.get(n), notes)
        axc.set_ylabel("KL (nats/token)")
        axc.set_title("control (fp32 checkpoints): the harness's floor, reassociation only",
                      fontsize=8)
        rc.log_axis(axc)
        rc.legend(axc, len(control))
        last = axc
    last.set_xlabel("generation length (tokens; mean over power-of-two buckets of positions)")
    zeros = {}
    for x in [x for x in notes if isinstance(x, tuple)]:
        zeros.setdefault(x[1], []).append(x[2])
    notes = [x for x in notes if not isinstance(x, tuple)]
    for where, names in zeros.items():
        who = ", ".join(names) if len(names) <= 4 else f"{len(names)} configurations"
        notes.append(f"mean KL exactly 0 (not drawn on a log axis) at lengths {where}: {who}")
    if notes:
        fig.text(0.01, 0.005, "\n".join(notes), fontsize=6, va="bottom")
    fig.tight_layout(rect=(0, 0.022 * len(notes), 1, 1))
    pdf = rc.save_figure(fig, path)
    plt.close(fig)
    return pdf


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("runs", nargs="+",
                    help="run HDF5 files (SPEC section 7) or STEM_kl_buckets.csv files")
    ap.add_argument("--out-dir", required=True)
    a = ap.parse_args()
    rc.ensure_dir(a.out_dir)
    for path in a.runs:
        if path.endswith("_kl_buckets.csv"):
            rows = rc.read_csv_rows(path, CSV_HEADER)
            stem = os.path.basename(path)[:-len("_kl_buckets.csv")]
            K, N = int(rows[0][4]), max(int(r[3]) for r in rows)
            first_bad = {}
            for r in rows:
                if int(r[11]) > 0 and r[0] not in first_bad:
                    first_bad[r[0]] = int(r[2])
            made = []
        else:
            run = rc.load_run(path)
            stem, K, N = run.stem, run.K, run.N
            rows = [[str(x) for x in r] for r in bucket_rows(run)]
            csv_path = os.path.join(a.out_dir, f"{stem}_kl_buckets.csv")
            rc.write_csv(csv_path, CSV_HEADER, bucket_rows(run))
            first_bad = {}
            for c in run.configs:
                bad = c.first_nonfinite[c.first_nonfinite >= 0]
                if bad.size:
                    first_bad[c.name] = int(bad.min()) + 1
            made = [csv_path]
        png = os.path.join(a.out_dir, f"{stem}_kl_length.png")
        pdf = plot(stem, rows, png, K, N, first_bad)
        print(f"wrote {', '.join([png, pdf] + made)}")


if __name__ == "__main__":
    rc.main_guard(main)
