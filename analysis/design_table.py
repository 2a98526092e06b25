#!/usr/bin/python3
"""Issue 15's bars for the designs of training calls, one row a trained checkpoint:

    /usr/bin/python3 analysis/design_table.py DIR [DIR ...] [--json OUT.json]

Each DIR is a training call's output for one design (scripts/train_fixture_session.sh: OUT, or
OUT/TAG with VARIANTS), holding NAME-rest.tar (eval.json: tokens, held-out bits per byte, the
2 x 16384 past-the-window check, each head's memory on Moby-Dick) and train-logs.tar (with
DRIFT_CHECK=1 drift-NAME.json, analysis/longmem_check.py's verdicts on the GPU, and
sweep-NAME.json, analysis/window_sweep_check.py's; with CONTEXT_CHECK=1 context-NAME.json, analysis/context_degradation.py's split of the window check);
or the record of one kept in the repository (results/h200-DATE-sN/callN/TAG/: the same eval.json
and check files, unpacked, NAME read from eval.json's "model"), so that a table in the docs can
be made again from what is committed.
The table: tokens, bits per byte (bar <= 2.1), past the window (<= 0.02) with its context and
text terms, shared growth (>= 10), split growth (<= 3), shared / split (>= 10), the control's
largest KL (<= 1e-10), the window sweep's split KL max / min over L = 4..64 (<= 1.5), the
longest learned head on Moby-Dick (heads that eval.json's slow_heads does not list as fixed), and
how many of the seven bars the row meets. A check the call did not run shows "-" and is not
counted. Sessions 16-18 built this table by hand from the same files.

Exit status 0; 2 for bad input (one line naming the file and what was expected).
"""

import argparse
import json
import os
import sys
import tarfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from rssm_common import InputError, main_guard  # noqa: E402

# issue 15's "Done when" (the GPU figures' bars are longmem_check.py's BARS, read from its JSON)
BPB_BAR = 2.1
PAST_WINDOW_BAR = 0.02


def member_json(tar_path, names):
    """The first of `names` found in tar_path (with or without a leading ./), parsed; None if
    none is there."""
    try:
        with tarfile.open(tar_path) as t:
            have = {m.name.removeprefix("./"): m for m in t.getmembers() if m.isfile()}
            for n in names:
                if n in have:
                    try:
                        return json.load(t.extractfile(have[n]))
                    except (json.JSONDecodeError, UnicodeDecodeError) as e:
                        raise InputError(f"{tar_path}: {n}: not JSON ({e})")
    except (tarfile.TarError, OSError) as e:
        raise InputError(f"{tar_path}: not a readable tar archive ({e})")
    return None


def field(obj, path, key):
    if not isinstance(obj, dict) or key not in obj:
        raise InputError(f"{path}: no field '{key}' (expected the training script's eval.json)")
    return obj[key]


def longest_learned(ev, path):
    """The longest memory on Moby-Dick among the heads eval.json does not list as fixed."""
    fixed = {(e["layer"], e["head"]) for e in ev.get("slow_heads", [])}
    mems = [h["memory"] for h in field(ev, path, "head_memories_moby")
            if (h["layer"], h["head"]) not in fixed]
    return max(mems) if mems else None


def file_json(path):
    """path parsed as JSON; None if there is no such file."""
    if not os.path.exists(path):
        return None
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise InputError(f"{path}: not JSON ({e})")
    except OSError as e:
        raise InputError(f"{path}: not readable ({e})")


def checkpoints_of(d):
    """[(name, eval.json, its label, check(FILE) -> (JSON or None, label))]: one a checkpoint of
    a call's output folder (NAME-rest.tar, train-logs.tar), or the one of a record folder
    (eval.json and the check files beside it)."""
    if not os.path.isdir(d):
        raise InputError(f"{d}: not a directory (expected a training call's output folder)")
    rests = sorted(f for f in os.listdir(d) if f.endswith("-rest.tar"))
    if not rests:
        ep = os.path.join(d, "eval.json")
        ev = file_json(ep)
        if ev is None:
            raise InputError(f"{d}: no NAME-rest.tar and no eval.json (expected the output of "
                             "train_fixture_session.sh or a record of one under results/)")
        name = field(ev, ep, "model")
        return [(name, ev, ep, lambda f: (file_json(os.path.join(d, f)), os.path.join(d, f)))]
    logs = os.path.join(d, "train-logs.tar")
    out = []
    for rest in rests:
        rp = os.path.join(d, rest)
        ev = member_json(rp, ["eval.json"])
        if ev is None:
            raise InputError(f"{rp}: no member eval.json")
        out.append((rest[:-len("-rest.tar")], ev, f"{rp}:eval.json",
                    lambda f: (member_json(logs, [f]) if os.path.exists(logs) else None,
                               f"{logs}:{f}")))
    return out


def rows_of(d):
    found = checkpoints_of(d)
    rows = []
    for name, ev, where, check in found:
        long_w = field(ev, where, "long_windows")
        design = os.path.basename(os.path.normpath(d))
        row = {"design": design if len(found) == 1 else f"{design} {name}", "model": name, "tokens": field(ev, where, "tokens"),
               "init_from": ev.get("init_from"),
               "bpb": field(ev, where, "heldout_bpb_fp32"),
               "past_window": field(long_w, where + ":long_windows", "degradation"),
               "longest_learned": longest_learned(ev, where)}
        drift, label = check(f"drift-{name}.json")
        if drift is not None:
            if not isinstance(drift, list) or len(drift) != 1:
                raise InputError(f"{label}: expected a list of one check")
            for k in ("shared_growth", "split_growth", "ratio", "control_max", "verdicts"):
                row[k] = field(drift[0], label, k)
        sweep, label = check(f"sweep-{name}.json")
        if sweep is not None:
            if not isinstance(sweep, list) or len(sweep) != 1:
                raise InputError(f"{label}: expected a list of one check")
            for k, key in (("sweep", "max_over_min"), ("sweep_met", "met")):
                row[k] = field(sweep[0], label, key)
        ctx, label = check(f"context-{name}.json")
        if ctx is not None:
            if not isinstance(ctx, list) or len(ctx) != 1:
                raise InputError(f"{label}: expected a list of one model")
            for k in ("context", "context_se", "text"):
                row[k] = field(ctx[0], label, k)
        met = [row["bpb"] <= BPB_BAR, row["past_window"] <= PAST_WINDOW_BAR]
        met += list(row["verdicts"].values()) if "verdicts" in row else []
        met += [row["sweep_met"]] if "sweep_met" in row else []
        row["bars_met"], row["bars_checked"] = sum(met), len(met)
        rows.append(row)
    return rows


def table(rows):
    def g(r, k, fmt):
        return format(r[k], fmt) if r.get(k) is not None else "-"

    def mark(text, ok):
        return f"**{text}**" if ok else text

    out = ["| design | tokens | bits per byte (<= 2.1) | past the window (<= 0.02): context / text "
           "| shared growth (>= 10) | split growth (<= 3) | shared / split (>= 10) | control max "
           "| window sweep (<= 1.5) | longest learned head | bars met |",
           "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        v = r.get("verdicts", {})
        past = mark(f"{r['past_window']:+.4f}", r["past_window"] <= PAST_WINDOW_BAR)
        if "context" in r:
            past += f": {r['context']:+.4f} +- {r['context_se']:.4f} / {r['text']:+.4f}"
        out.append(" | ".join([
            f"| {r['design']}",
            f"{r['tokens'] / 1e6:.1f}M" + (" (continued)" if r["init_from"] else ""),
            mark(f"{r['bpb']:.3f}", r["bpb"] <= BPB_BAR), past,
            mark(g(r, "shared_growth", ".2f"), v.get("shared_growth", False)),
            mark(g(r, "split_growth", ".2f"), v.get("split_growth", False)),
            mark(g(r, "ratio", ".1f"), v.get("ratio", False)),
            mark(g(r, "control_max", ".1e"), v.get("control_max", False)),
            mark(g(r, "sweep", ".2f"), r.get("sweep_met", False)),
            g(r, "longest_learned", ".3g"), f"{r['bars_met']} of {r['bars_checked']} |"]))
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dirs", nargs="+")
    ap.add_argument("--json")
    a = ap.parse_args()
    rows = [r for d in a.dirs for r in rows_of(d)]
    print(table(rows))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main_guard(main)
