#!/usr/bin/python3
"""Measured against predicted for `replayssm theory` (Appendix C.6; docs/theory.md).

    /usr/bin/python3 analysis/plot_theory.py THEORY.h5 [THEORY.h5 ...] --out-dir DIR

Several files (say the default grid and a `--regimes closed` run) are read as one table.

Writes DIR/theory.png (left: measured against predicted variance of D, every comparison, coloured
by whether the model's assumptions hold; then, for each regime that can break the model (fixed,
ar1, closed), measured/predicted variance against 1 - alpha for conventional storage, one line
per format and rounding), DIR/theory.csv (every
comparison) and DIR/theory.md (one row per format and rounding, one column per regime and mode:
how many alphas agree within the tolerance, and the reasons where the assumptions do not hold).
"""

import argparse
import os
import sys

import h5py
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import rssm_common as rc  # noqa: E402

STR_COLS = ["format", "rounding", "regime", "mode", "assumption", "why"]
NUM_COLS = ["alpha", "a_eff", "events", "stationary", "b", "s2", "pred_mean", "meas_mean",
            "lim_mean", "lim_var", "pred_var", "meas_var", "se_mean", "se_var", "rel_mean",
            "rel_var", "corr", "corr_se", "elem_s2_cv", "agrees", "resolved"]
OPTIONAL_COLS = ["kappa", "kappa_se"]  # files from before the closed regime lack them
REGIMES = ["iid", "fixed", "ar1", "closed"]
MODES = ["conventional", "replay", "split"]


def load(path):
    if not os.path.isfile(path):
        raise rc.InputError(f"{path}: no such file (expected the HDF5 of replayssm theory)")
    try:
        f = h5py.File(path, "r")
    except OSError:
        raise rc.InputError(f"{path}: not a readable HDF5 file")
    with f:
        if "rows" not in f:
            raise rc.InputError(f"{path}: /rows is missing (expected replayssm theory output)")
        g = f["rows"]
        cols = {}
        n = None
        for name in STR_COLS + NUM_COLS:
            if name not in g:
                raise rc.InputError(f"{path}: /rows/{name} is missing "
                                    "(expected replayssm theory output, docs/theory.md)")
            v = g[name][...]
            if v.ndim != 1 or (n is not None and v.shape[0] != n):
                raise rc.InputError(f"{path}: /rows/{name} has shape {v.shape} "
                                    f"(expected ({n},) like the other columns)")
            n = v.shape[0]
            cols[name] = ([x.decode() if isinstance(x, bytes) else str(x) for x in v]
                          if name in STR_COLS else np.asarray(v, dtype=np.float64))
        for name in OPTIONAL_COLS:
            cols[name] = (np.asarray(g[name][...], dtype=np.float64) if name in g
                          else np.full(n, np.nan))
        attrs = {k: (v.decode() if isinstance(v, bytes) else v) for k, v in f.attrs.items()}
    rows = [{k: cols[k][i] for k in cols} for i in range(n)]
    return attrs, rows


def load_many(paths):
    """[attrs of each file], rows of all files (each row knows its file's index as 'src')."""
    all_attrs, all_rows = [], []
    for i, path in enumerate(paths):
        attrs, rows = load(path)
        for r in rows:
            r["src"] = i
        all_attrs.append(attrs)
        all_rows += rows
    return all_attrs, all_rows


def describe(attrs):
    return (f"{attrs.get('nmat')} matrices of {attrs.get('dv')} x {attrs.get('dk')} elements per "
            f"step, up to {attrs.get('steps')} steps, L = {attrs.get('L')}, "
            f"rho = {attrs.get('rho')}, seed {attrs.get('seed')}")


def parameters(attrs_list, rows):
    """The grids' parameters, one clause per distinct parameter set (files that split one grid by
    format share theirs): 'ar1, fixed, iid (8 files): 64 matrices ...; closed (6 files): ...'."""
    groups = {}
    for i, a in enumerate(attrs_list):
        g = groups.setdefault(describe(a), [set(), 0])
        g[0] |= {r["regime"] for r in rows if r.get("src", 0) == i}
        g[1] += 1
    return "; ".join(f"{', '.join(sorted(regs))}" + (f" ({n} files)" if n > 1 else "") + f": {d}"
                     for d, (regs, n) in groups.items())


def fmt_name(r):
    return r["format"] + ("/sr" if r["rounding"] == "sr" else "")


def write_csv(rows, path):
    header = STR_COLS[:5] + NUM_COLS + OPTIONAL_COLS
    body = [[r[k] for k in STR_COLS[:5]] +
            [rc.num(r[k]) if k not in ("events", "stationary", "agrees", "resolved")
             else int(r[k]) for k in NUM_COLS + OPTIONAL_COLS] for r in rows]
    rc.write_csv(path, header, body)


def cell(rs):
    """'9/9' agreeing (of resolved); a marker where the assumptions do not hold."""
    if not rs:
        return "-"
    agree = sum(int(r["agrees"]) for r in rs)
    holds = sum(r["assumption"] == "holds" for r in rs)
    # only where the model should hold does an unresolved disagreement matter
    unresolved = sum(r["assumption"] == "holds" and not r["resolved"] and not r["agrees"]
                     for r in rs)
    txt = f"{agree}/{len(rs)}"
    if holds < len(rs):
        txt += " (violated)" if holds == 0 else f" ({len(rs) - holds} violated)"
    if unresolved:
        txt += f" [{unresolved} unresolved]"
    return txt


def markdown(attrs_list, rows):
    """attrs_list: the root attributes of each file the rows came from."""
    attrs = attrs_list[0]
    fmts = []
    for r in rows:
        if fmt_name(r) not in fmts:
            fmts.append(fmt_name(r))
    present = [(g, m) for g in REGIMES for m in MODES
               if any(r["regime"] == g and r["mode"] == m for r in rows)]
    tol = float(attrs.get("tol", 0.05))
    out = [f"Agreement of the measured mean and variance of D with the Appendix C.6 predictions, "
           f"within {tol:.0%}: alphas agreeing / alphas compared (split: one comparison). "
           + parameters(attrs_list, rows) +
           ". '(violated)': the regime breaks the model's assumptions "
           "there (reasons below); '[unresolved]': standard errors too large to judge "
           f"{tol:.0%}.", ""]
    head = ["format"] + [f"{g} {m}" for g, m in present]
    out.append("| " + " | ".join(head) + " |")
    out.append("|" + "---|" * len(head))
    for f in fmts:
        line = [f"`{f}`"]
        for g, m in present:
            line.append(cell([r for r in rows if fmt_name(r) == f and r["regime"] == g
                              and r["mode"] == m]))
        out.append("| " + " | ".join(line) + " |")
    fails = [r for r in rows if r["assumption"] == "holds" and r["resolved"] and not r["agrees"]]
    holds = [r for r in rows if r["assumption"] == "holds" and r["resolved"]]
    out += ["", f"Verdict: {len(holds) - len(fails)} of {len(holds)} resolved comparisons where "
            f"the assumptions hold agree within {tol:.0%}"
            + (" (check passed)." if not fails else " (check FAILED).")]
    whys = []
    for r in rows:
        if r["assumption"] != "holds" and r["why"] not in whys:
            whys.append(r["why"])
    if whys:
        out += ["", "Where the assumptions do not hold, and why:", ""]
        out += [f"- {w}" for w in whys]
    # the size of the effect where it fails: the measured/predicted variance furthest from 1
    out += ["", "Measured/predicted variance of D furthest from 1 where the assumptions are "
            "violated (above 1: correlated errors add up; below 1: the error acts as extra "
            "decay):", ""]
    worst = {}
    for r in rows:
        if r["assumption"] == "holds" or r["pred_var"] <= 0 or r["meas_var"] <= 0:
            continue
        k = (fmt_name(r), r["regime"], r["mode"])
        ratio = r["meas_var"] / r["pred_var"]
        if k not in worst or abs(np.log(ratio)) > abs(np.log(worst[k][0])):
            worst[k] = (ratio, r["alpha"])
    if worst:
        out.append("| format | regime | mode | Var ratio | at alpha |")
        out.append("|---|---|---|---|---|")
        for (f, g, m), (ratio, a) in worst.items():
            out.append(f"| `{f}` | {g} | {m} | {ratio:.3g} | {a:.6g} |")
    else:
        out.append("(none)")
    return "\n".join(out) + "\n"


def plot(rows, path):
    plt = rc.pyplot()
    # one panel per regime that can break the model (iid agrees everywhere: see the scatter)
    regimes = [g for g in ("fixed", "ar1", "closed") if any(r["regime"] == g for r in rows)]
    fig, axes = plt.subplots(1, 1 + len(regimes), figsize=(4.6 * (1 + len(regimes)), 4.6),
                             squeeze=False)
    ax1 = axes[0][0]
    colors = {"holds": "C0", "violated": "C3", "uncertain": "C1"}
    for a in ("holds", "violated", "uncertain"):
        pts = [(r["pred_var"], r["meas_var"]) for r in rows
               if r["assumption"] == a and r["pred_var"] > 0 and r["meas_var"] > 0]
        if pts:
            x, y = zip(*pts)
            ax1.scatter(x, y, s=6, color=colors[a], label=f"assumptions {a}", alpha=0.7)
    allv = [v for r in rows for v in (r["pred_var"], r["meas_var"]) if v > 0]
    if allv:
        lo, hi = min(allv), max(allv)
        ax1.plot([lo, hi], [lo, hi], color="k", lw=0.8, label="measured = predicted")
    rc.log_axis(ax1)
    ax1.set_xlabel("predicted Var D (units of each row's scale, squared)")
    ax1.set_ylabel("measured Var D")
    ax1.legend(fontsize=7)
    ax1.set_title("every comparison")
    fmts = list(dict.fromkeys(fmt_name(r) for r in rows))
    cmap = plt.get_cmap("tab20")
    for ax, g in zip(axes[0][1:], regimes):
        for f in fmts:
            rs = sorted((r for r in rows if fmt_name(r) == f and r["regime"] == g
                         and r["mode"] == "conventional" and r["pred_var"] > 0),
                        key=lambda r: r["alpha"])
            if not rs:
                continue
            x = [1.0 - r["alpha"] for r in rs]
            y = [r["meas_var"] / r["pred_var"] for r in rs]
            ax.plot(x, y, "-" if f.endswith("/sr") else "--", marker="o", ms=2.5, lw=1.0,
                    color=cmap(fmts.index(f) % 20), label=f)
        ax.axhspan(0.95, 1.05, color="0.85", zorder=0)
        rc.log_axis(ax)
        ax.set_xlabel("1 - alpha")
        ax.set_title(f"{g}: measured / predicted Var D (conventional)")
        ax.legend(fontsize=5, ncol=2, title="dashed RTN, solid SR", title_fontsize=6)
    fig.tight_layout()
    rc.save_figure(fig, path)
    plt.close(fig)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("theory", nargs="+", help="HDF5 written by replayssm theory --out")
    ap.add_argument("--out-dir", required=True)
    a = ap.parse_args()
    attrs, rows = load_many(a.theory)
    if not rows:
        raise rc.InputError(f"{a.theory[0]}: /rows is empty (expected at least one comparison)")
    rc.ensure_dir(a.out_dir)
    write_csv(rows, os.path.join(a.out_dir, "theory.csv"))
    rc.write_text(os.path.join(a.out_dir, "theory.md"), markdown(attrs, rows))
    plot(rows, os.path.join(a.out_dir, "theory.png"))
    print(f"wrote {a.out_dir}/theory.png, theory.csv and theory.md")


if __name__ == "__main__":
    rc.main_guard(main)
