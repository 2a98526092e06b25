#!/usr/bin/python3
"""KL against the replay window L (the paper's Fig. 13).

    /usr/bin/python3 analysis/plot_kl_window.py RUN.h5 [RUN.h5 ...] --out-dir DIR

Replay and spec configurations are grouped by their configuration string without its L=n word
(so 'replay L=4 hp=fp32 lp=nvfp4' and 'replay L=64 hp=fp32 lp=nvfp4' are one line); L is read
from each configuration's `spec` attribute (SPEC default 16). For each run file:
DIR/STEM_kl_window.png (left: mean KL over every step; right: mean KL over the last power-of-two
bucket of lengths, where accumulated error shows) and DIR/STEM_kl_window.csv. Means are over the
finite values; non-finite steps are counted in the CSV and marked in the figure.
"""

import argparse
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import rssm_common as rc  # noqa: E402

CSV_HEADER = ["group", "L", "config", "spec", "mean_kl_all", "se_kl_all", "nonfinite_all",
              "last_bucket_lo", "last_bucket_hi", "mean_kl_last", "se_kl_last", "nonfinite_last"]


def groups(run):
    """{group: [(L, config)]} sorted by L."""
    out = {}
    for c in run.configs:
        L = rc.window_of(c.spec)
        if L is None:
            continue
        out.setdefault(rc.without_window(c.spec), []).append((L, c))
    for g in out.values():
        g.sort(key=lambda lc: (lc[0], lc[1].name))
    return dict(sorted(out.items()))


def table(run):
    last = rc.pow2_buckets(run.N)[-1]
    rows = []
    for g, members in groups(run).items():
        for L, c in members:
            a = rc.window_stats(c.kl, 1, run.N)
            b = rc.window_stats(c.kl, last[0], last[1])
            rows.append([g, L, c.name, c.spec, rc.num(a["mean"]), rc.num(a["se"]), a["nonfinite"],
                         last[0], last[1], rc.num(b["mean"]), rc.num(b["se"]), b["nonfinite"]])
    return rows


def plot(stem, rows, path, size=""):
    plt = rc.pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(10.0, 4.2), sharey=True)
    byg, single = {}, []
    for r in rows:
        byg.setdefault(r[0], []).append(r)
    # a group with one L is no curve against L (the fp32 control, typically, 8 decades below):
    # named under the plot instead of squeezing the others
    for g in [g for g, rs in byg.items() if len({r[1] for r in rs}) < 2]:
        single += [f"{g} (L={r[1]} only: {float(r[4]):.2g} nats)" for r in byg.pop(g)]
    last = f"lengths {rows[0][7]}..{rows[0][8]}" if rows else "last bucket"
    panels = ((axes[0], 4, 5, 6, "all steps"), (axes[1], 9, 10, 11, last))
    st = rc.styles([(g, g) for g in byg])
    for ax, im, ise, inf, title in panels:
        for g, rs in byg.items():
            style = st[g]
            pts = [(r[1], float(r[im]), float(r[ise])) for r in rs
                   if math.isfinite(float(r[im])) and float(r[im]) > 0.0]
            if pts:
                Ls, ys, ses = zip(*pts)
                ses = [s if math.isfinite(s) else 0.0 for s in ses]
                ax.errorbar(Ls, ys, yerr=ses, marker=style["marker"], ms=4, capsize=2,
                            color=style["color"], mfc=style["mfc"], ls=style["ls"], label=g)
            for r in rs:
                if int(r[inf]) > 0:
                    ax.plot([r[1]], [float(r[im]) if math.isfinite(float(r[im])) else 1.0],
                            marker="x", ms=9, color=style["color"])
        rc.log_axis(ax, "y")
        ax.set_xscale("log", base=2)
        ax.set_xlabel("replay window L")
        ax.set_title(title)
    axes[0].set_ylabel("mean KL(p_ref || p_cfg) (nats/token)")
    rc.legend(axes[1], len(byg))
    fig.suptitle(f"{stem}: KL against the replay window L ({size}bars: +-1 SE between "
                 "sequences; x: non-finite steps)", fontsize=9)
    if single:
        fig.text(0.01, 0.01, "not drawn: " + "; ".join(single), fontsize=7)
    fig.tight_layout(rect=(0, 0.04 if single else 0, 1, 1))
    pdf = rc.save_figure(fig, path)
    plt.close(fig)
    return pdf


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("runs", nargs="+",
                    help="run HDF5 files (SPEC section 7) or STEM_kl_window.csv files")
    ap.add_argument("--out-dir", required=True)
    a = ap.parse_args()
    rc.ensure_dir(a.out_dir)
    for path in a.runs:
        if path.endswith("_kl_window.csv"):
            rows = [[r[0], int(r[1])] + r[2:] for r in rc.read_csv_rows(path, CSV_HEADER)]
            stem, size, made = os.path.basename(path)[:-len("_kl_window.csv")], "", []
        else:
            run = rc.load_run(path)
            rows = table(run)
            stem, size = run.stem, f"{run.K} sequences x {run.N} steps; "
        Ls = {}
        for r in rows:
            Ls.setdefault(r[0], set()).add(r[1])
        if not any(len(v) > 1 for v in Ls.values()):
            print(f"{stem}: no kl_window figure or table: no configuration group varies L "
                  f"(windows {sorted(set().union(*Ls.values())) if Ls else 'none'})")
            continue
        if not path.endswith("_kl_window.csv"):
            csv_path = os.path.join(a.out_dir, f"{stem}_kl_window.csv")
            rc.write_csv(csv_path, CSV_HEADER, rows)
            made = [csv_path]
        png = os.path.join(a.out_dir, f"{stem}_kl_window.png")
        pdf = plot(stem, rows, png, size)
        print(f"wrote {', '.join([png, pdf] + made)}")


if __name__ == "__main__":
    rc.main_guard(main)
