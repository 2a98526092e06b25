#!/usr/bin/python3
"""RTN against SR at fixed generation lengths (the paper's Table 11), as Markdown and CSV.

    /usr/bin/python3 analysis/table_rounding.py RUN.h5 [RUN.h5 ...] --out-dir DIR
        [--lengths 1K,16K,64K,128K]

Configurations are grouped by their string with every format's /sr or /rtn removed, so that a
group's rows differ only in rounding (the label says which: RTN, SR, or per key). Each cell is the
mean KL over all sequences and the positions within half an octave of the length
(length/sqrt2 <= p < length*sqrt2, positions 1-based); a column appears only for lengths that the
file reaches (K = 1024). Means are over the finite values; where a window holds non-finite steps,
the Markdown cell says how many, and the CSV has a count column per length. The last columns give
the first non-finite position over all sequences and how many sequences have one.
Writes DIR/STEM_rounding.md and DIR/STEM_rounding.csv.
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import rssm_common as rc  # noqa: E402


def rows_of(run, lengths):
    cols = [(n, rc.length_window(n, run.N)) for n in lengths]
    cols = [(n, w) for n, w in cols if w is not None]
    rows = []
    for c in run.configs:
        group, label = rc.rounding_group(c.spec)
        cells = []
        for n, (lo, hi) in cols:
            s = rc.window_stats(c.kl, lo, hi)
            cells.append((s["mean"], s["nonfinite"], s["steps"]))
        bad = c.first_nonfinite[c.first_nonfinite >= 0]
        first = int(bad.min()) + 1 if bad.size else None
        rows.append({"group": group, "rounding": label, "config": c.name, "spec": c.spec,
                     "cells": cells, "first_nonfinite": first, "nonfinite_seqs": int(bad.size),
                     "sequences": run.K})
    rows.sort(key=lambda r: (r["group"], r["rounding"], r["config"]))
    return [n for n, _ in cols], rows


def md_cell(mean, nonfinite, steps):
    if nonfinite:
        base = f"{mean:.3g}" if mean == mean else "-"
        return f"{base} ({nonfinite}/{steps} non-finite)"
    return f"{mean:.3g}"


def markdown(run, lengths, rows):
    head = ["configuration (rounding removed)", "rounding"] + \
        [f"KL @ {rc.length_label(n)}" for n in lengths] + ["first non-finite"]
    out = [f"RTN vs SR: mean KL (nats) around each length, `{run.stem}` "
           f"({run.K} sequences, {run.N} steps).", ""]
    out.append("| " + " | ".join(head) + " |")
    out.append("|" + "---|" * len(head))
    for r in rows:
        cells = [md_cell(*c) for c in r["cells"]]
        fn = (f"{r['first_nonfinite']} ({r['nonfinite_seqs']}/{r['sequences']} seq.)"
              if r["first_nonfinite"] is not None else "none")
        out.append("| " + " | ".join([f"`{r['group']}`", r["rounding"]] + cells + [fn]) + " |")
    if not lengths:
        out.append("")
        out.append(f"(no requested length is reached: the file has {run.N} steps)")
    return "\n".join(out) + "\n"


def csv_rows(lengths, rows):
    header = ["group", "rounding", "config", "spec"]
    for n in lengths:
        header += [f"kl_{rc.length_label(n)}", f"nonfinite_{rc.length_label(n)}"]
    header += ["first_nonfinite", "nonfinite_sequences"]
    body = []
    for r in rows:
        line = [r["group"], r["rounding"], r["config"], r["spec"]]
        for mean, nonfinite, _ in r["cells"]:
            line += [rc.num(mean), nonfinite]
        line += ["" if r["first_nonfinite"] is None else r["first_nonfinite"], r["nonfinite_seqs"]]
        body.append(line)
    return header, body


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("runs", nargs="+", help="run HDF5 files (SPEC section 7)")
    ap.add_argument("--out-dir", required=True)
    ap.add_argument("--lengths", default="1K,16K,64K,128K",
                    help="generation lengths (K = 1024), default 1K,16K,64K,128K")
    a = ap.parse_args()
    lengths = rc.parse_lengths(a.lengths)
    rc.ensure_dir(a.out_dir)
    for path in a.runs:
        run = rc.load_run(path)
        have, rows = rows_of(run, lengths)
        if not have or not rows:
            print(f"{run.stem}: no rounding table: the file's {run.N} steps reach none of the "
                  f"lengths {a.lengths}")
            continue
        md = os.path.join(a.out_dir, f"{run.stem}_rounding.md")
        rc.write_text(md, markdown(run, have, rows))
        header, body = csv_rows(have, rows)
        csv_path = os.path.join(a.out_dir, f"{run.stem}_rounding.csv")
        rc.write_csv(csv_path, header, body)
        print(f"wrote {md} and {csv_path}")


if __name__ == "__main__":
    rc.main_guard(main)
