#!/usr/bin/python3
"""Figures of `replayssm bench kernels --out FILE.csv` (docs/bench-kernels.md).

    /usr/bin/python3 analysis/plot_kernels.py BENCH.csv [--out FIG.png]

One figure of four panels (default: BENCH.png beside the CSV), each panel one line per shape:
  1. standard decoding, fp32, L = 16 (paper Figs. 2, 8): the conventional kernel's bandwidth in %
     of the copy bandwidth of the same run (solid) and the ReplaySSM speed-up over it (dashed,
     right axis), against the batch size;
  2. the window sweep at B = 256 (Fig. 9): replay time per token over the conventional step,
     against L, with the byte model's ratio (dotted);
  3. speculative verification at B = 256 (Figs. 4, 7, 10): time per round over one conventional
     step against T, for the snapshot baseline (solid), output-only with a = 1 (dashed) and
     a = T (dotted);
  4. the non-flush step by checkpoint read format (Fig. 11): speed-up over the fp32 read.
Rows whose check failed (check != pass) or that were not timed (us < 0) are left out. Needs
Debian's /usr/bin/python3 with python3-matplotlib.
"""

import argparse
import csv
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def load(path):
    if not os.path.isfile(path):
        raise SystemExit(f"plot_kernels.py: {path}: no such file (expected the CSV of replayssm bench kernels)")
    with open(path, newline="") as f:
        header = None
        lines = []
        for line in f:
            if line.startswith("#"):
                header = header or line[1:].strip()
                continue
            lines.append(line)
    rows = list(csv.DictReader(lines))
    need = {"part", "shape", "config", "variant", "B", "L", "T", "a", "us", "us_nonflush",
            "pct_copy", "rel_conv", "model_ratio", "check"}
    if not rows or not need.issubset(rows[0].keys()):
        raise SystemExit(f"plot_kernels.py: {path}: not a bench kernels CSV (columns {sorted(need)})")
    out = []
    for r in rows:
        for k in ("B", "L", "T", "a"):
            r[k] = int(r[k])
        for k in ("us", "us_nonflush", "us_flush", "gbps", "pct_copy", "rel_conv", "model_ratio",
                  "model_ratio_paper"):
            r[k] = float(r[k])
        out.append(r)
    return out, header or ""


def timed(r):
    return r["check"] == "pass" and r["us"] > 0


def shapes_of(rows):
    seen = []
    for r in rows:
        if r["shape"] not in seen:
            seen.append(r["shape"])
    return seen


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("csv")
    ap.add_argument("--out", help="figure file (default: the CSV's name with .png)")
    a = ap.parse_args(argv)
    rows, header = load(a.csv)
    out = a.out or os.path.splitext(a.csv)[0] + ".png"
    shapes = shapes_of(rows)
    colours = {s: c for s, c in zip(shapes, plt.rcParams["axes.prop_cycle"].by_key()["color"])}

    fig, axes = plt.subplots(2, 2, figsize=(13, 9))
    # 1. batch sweep
    ax = axes[0][0]
    ax2 = ax.twinx()
    for s in shapes:
        conv = sorted((r["B"], r["pct_copy"]) for r in rows
                      if r["part"] == "std" and r["shape"] == s and r["config"].startswith("conventional") and timed(r))
        rep = sorted((r["B"], 1.0 / r["rel_conv"]) for r in rows
                     if r["part"] == "std" and r["shape"] == s and r["config"].startswith("replay") and timed(r)
                     and r["rel_conv"] > 0)
        if conv:
            ax.plot(*zip(*conv), "o-", color=colours[s], label=f"{s}: conventional % copy")
        if rep:
            ax2.plot(*zip(*rep), "s--", color=colours[s], label=f"{s}: replay speed-up")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("batch")
    ax.set_ylabel("conventional kernel, % of copy bandwidth (solid)")
    ax2.set_ylabel("ReplaySSM L=16 speed-up, flush included (dashed)")
    ax.set_ylim(0, 100)
    ax2.set_ylim(0, None)
    ax.set_title("standard decoding, fp32 (Figs. 2, 8)")
    h1, l1 = ax.get_legend_handles_labels()
    h2, l2 = ax2.get_legend_handles_labels()
    ax.legend(h1 + h2, l1 + l2, fontsize=7, loc="lower right")

    # 2. window sweep
    ax = axes[0][1]
    for s in shapes:
        w = sorted((r["L"], r["rel_conv"], r["model_ratio"]) for r in rows
                   if r["part"] == "window" and r["shape"] == s and timed(r))
        if w:
            L, rel, model = zip(*w)
            ax.plot(L, rel, "o-", color=colours[s], label=s)
            ax.plot(L, model, ":", color=colours[s])
    ax.set_xscale("log", base=2)
    ax.set_xlabel("window L")
    ax.set_ylabel("replay time per token / conventional step")
    ax.set_title("window sweep, B = 256 (Fig. 9; dotted: byte model)")
    ax.legend(fontsize=7)

    # 3. speculative verification
    ax = axes[1][0]
    for s in shapes:
        sn = sorted((r["T"], r["rel_conv"]) for r in rows
                    if r["part"] == "spec" and r["shape"] == s and r["variant"] == "snapshot" and timed(r))
        a1 = sorted((r["T"], r["rel_conv"]) for r in rows
                    if r["part"] == "spec" and r["shape"] == s and r["variant"] == "output-only" and r["a"] == 1
                    and timed(r))
        aT = sorted((r["T"], r["rel_conv"]) for r in rows
                    if r["part"] == "spec" and r["shape"] == s and r["variant"] == "output-only"
                    and r["a"] == r["T"] and timed(r))
        if sn:
            ax.plot(*zip(*sn), "o-", color=colours[s], label=f"{s}: snapshot")
        if a1:
            ax.plot(*zip(*a1), "s--", color=colours[s], label=f"{s}: output-only a=1")
        if aT:
            ax.plot(*zip(*aT), "^:", color=colours[s], label=f"{s}: output-only a=T")
    ax.axhline(1.0, color="grey", lw=0.8)
    ax.set_xlabel("drafts T")
    ax.set_ylabel("time per verification / conventional step")
    ax.set_title("speculative verification, B = 256 (Figs. 4, 7, 10)")
    ax.legend(fontsize=6, ncol=2)

    # 4. read formats
    ax = axes[1][1]
    fmts = []
    for r in rows:
        if r["part"] == "lp" and r["variant"] not in fmts:
            fmts.append(r["variant"])
    width = 0.8 / max(1, len(shapes))
    for i, s in enumerate(shapes):
        base = {r["variant"]: r["us_nonflush"] for r in rows
                if r["part"] == "lp" and r["shape"] == s and timed(r)}
        if "fp32" not in base:
            continue
        xs, ys = [], []
        for j, f in enumerate(fmts):
            if f in base and base[f] > 0:
                xs.append(j + (i - (len(shapes) - 1) / 2) * width)
                ys.append(base["fp32"] / base[f])
        ax.bar(xs, ys, width=width, color=colours[s], label=s)
    ax.set_xticks(range(len(fmts)))
    ax.set_xticklabels(fmts)
    ax.set_ylabel("non-flush step speed-up over the fp32 read")
    ax.set_title("checkpoint read format, B = 256, L = 16 (Fig. 11)")
    ax.legend(fontsize=7)

    fig.suptitle(header, fontsize=8)
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
