"""The compact summary of one run that docs/results.md is written from, built either from the
run's HDF5 file (SPEC section 7) or from the files the other scripts wrote from it:

    STEM_kl_buckets.csv   plot_kl_length.py   per configuration and power-of-two bucket of lengths
    STEM_rounding.csv     table_rounding.py   mean KL within half an octave of 1K, 16K, 64K, 128K
    STEM_kl_window.csv    plot_kl_window.py   replay/spec configurations by L (optional)
    STEM.summary.txt      replayssm summary   first line: "PATH: K sequences x N steps ..., model M"

From an HDF5 file the same rows are computed with the writers' own functions and go through the
same parser, so the page says the same thing for the same data whichever way it was read (the
CSV numbers have 9 significant digits, and so do the rows computed here: `rssm_common.num`).
"""

import csv
import glob
import os
import re

import rssm_common as rc
import plot_kl_length
import plot_kl_window
import table_rounding

ROUNDING_LENGTHS = [1024, 16384, 65536, 131072]  # table_rounding.py's default --lengths
ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))


def normalise_model(path):
    """'experiments/../data/models/qwen35-gdn-tiny' -> 'data/models/qwen35-gdn-tiny'; an absolute path
    inside the source tree becomes relative to it; anything else (toy:gdn) is kept."""
    if not path or ":" in path.split("/")[0]:
        return path
    p = os.path.normpath(path)
    if os.path.isabs(p) and (p + os.sep).startswith(ROOT + os.sep):
        p = os.path.relpath(p, ROOT)
    elif os.path.isabs(p) and "/data/models/" in p:
        # recorded in another checkout (the GPU machine's): the same model of this tree
        p = "data/models/" + p.split("/data/models/", 1)[1]
    return p


class Summary:
    """One run: stem, model, K sequences x N steps, and per configuration its buckets; the rounding
    table (lengths and rows in table_rounding.rows_of's form) and the window rows when present."""

    def __init__(self, stem, source, model, K, N, specs, buckets, rounding, window):
        self.stem = stem
        self.source = source  # what it was read from, for the page's list of inputs
        self.model = model
        self.K = K
        self.N = N
        self.specs = specs  # {config name: spec}, in file order
        self.buckets = buckets  # {config name: [dict(lo, hi, steps, mean, se, nonfinite, ...)]}
        self.rounding = rounding  # (lengths, rows) or None
        self.window = window  # [dict(group, L, config, spec, mean_all, ...)] or None

    def bucket(self, config, lo):
        """The bucket of `config` that starts at `lo`, None when there is none."""
        return next((b for b in self.buckets.get(config, []) if b["lo"] == lo), None)

    def last_bucket(self, config):
        return self.buckets[config][-1]


def _need(path, row, key):
    if key not in row:
        raise rc.InputError(f"{path}: column '{key}' is missing")
    return row[key]


def _float(path, row, key):
    v = _need(path, row, key)
    try:
        return float(v)
    except ValueError:
        raise rc.InputError(f"{path}: column '{key}' has '{v}' (expected a number)")


def _int(path, row, key):
    v = _need(path, row, key)
    try:
        return int(v)
    except ValueError:
        raise rc.InputError(f"{path}: column '{key}' has '{v}' (expected an integer)")


def _parse_buckets(path, rows):
    """Rows of STEM_kl_buckets.csv (dicts of text) -> specs, buckets, K, N."""
    specs, buckets, K = {}, {}, None
    for r in rows:
        name = _need(path, r, "config")
        specs.setdefault(name, _need(path, r, "spec"))
        k = _int(path, r, "sequences")
        if K is not None and k != K:
            raise rc.InputError(f"{path}: sequences {k} in one row, {K} in another")
        K = k
        buckets.setdefault(name, []).append(dict(
            lo=_int(path, r, "bucket_lo"), hi=_int(path, r, "bucket_hi"),
            steps=_int(path, r, "steps"), mean=_float(path, r, "mean_kl"),
            se=_float(path, r, "se_kl"), median=_float(path, r, "median_kl"),
            p90=_float(path, r, "p90_kl"), max=_float(path, r, "max_kl"),
            nonfinite=_int(path, r, "nonfinite_steps")))
    if not buckets:
        raise rc.InputError(f"{path}: no rows (expected one per configuration and bucket)")
    for b in buckets.values():
        b.sort(key=lambda x: x["lo"])
    N = max(b[-1]["hi"] for b in buckets.values())
    return specs, buckets, K, N


def _parse_rounding(path, rows, K, N):
    """Rows of STEM_rounding.csv -> (lengths, rows as table_rounding.rows_of makes them)."""
    if not rows:
        return [], []
    lengths = [rc.parse_lengths(k[3:])[0] for k in rows[0] if k.startswith("kl_")]
    out = []
    for r in rows:
        cells = []
        for n in lengths:
            lo, hi = rc.length_window(n, N) or (1, 0)
            lab = rc.length_label(n)
            cells.append((_float(path, r, f"kl_{lab}"), _int(path, r, f"nonfinite_{lab}"),
                          K * (hi - lo + 1)))
        fn = _need(path, r, "first_nonfinite")
        out.append({"group": _need(path, r, "group"), "rounding": _need(path, r, "rounding"),
                    "config": _need(path, r, "config"), "spec": _need(path, r, "spec"),
                    "cells": cells, "first_nonfinite": int(fn) if fn != "" else None,
                    "nonfinite_seqs": _int(path, r, "nonfinite_sequences"), "sequences": K})
    return lengths, out


def _parse_window(path, rows):
    out = []
    for r in rows:
        out.append(dict(group=_need(path, r, "group"), L=_int(path, r, "L"),
                        config=_need(path, r, "config"), spec=_need(path, r, "spec"),
                        mean_all=_float(path, r, "mean_kl_all"),
                        nonfinite_all=_int(path, r, "nonfinite_all"),
                        last_lo=_int(path, r, "last_bucket_lo"),
                        last_hi=_int(path, r, "last_bucket_hi"),
                        mean_last=_float(path, r, "mean_kl_last"),
                        nonfinite_last=_int(path, r, "nonfinite_last")))
    return out


def _as_dicts(header, rows):
    """Rows as the writers produce them -> the dicts of text that csv.DictReader gives."""
    return [{h: str(v) for h, v in zip(header, r)} for r in rows]


def from_run(run):
    """The summary of a loaded run file, through the CSV writers' own rows."""
    path = run.path
    specs, buckets, K, N = _parse_buckets(
        path, _as_dicts(plot_kl_length.CSV_HEADER, plot_kl_length.bucket_rows(run)))
    have, rows = table_rounding.rows_of(run, ROUNDING_LENGTHS)
    header, body = table_rounding.csv_rows(have, rows)
    rounding = _parse_rounding(path, _as_dicts(header, body), K, N)
    window = _parse_window(path, _as_dicts(plot_kl_window.CSV_HEADER, plot_kl_window.table(run)))
    return Summary(run.stem, path, normalise_model(run.model), K, N, specs, buckets, rounding,
                   window)


def _read_csv(path):
    try:
        with open(path, newline="") as f:
            return list(csv.DictReader(f))
    except OSError as e:
        raise rc.InputError(f"{path}: cannot read ({e.strerror})")


# `replayssm summary`'s head: "PATH: K sequences x N steps ..., model M" on one line (before
# 2026-12-01's issue 21), or "PATH: K sequences x N steps ..." and then "model M" on the next.
SUMMARY_LINE = re.compile(r"^(?P<path>.*): (?P<K>\d+) sequences x (?P<N>\d+) steps"
                          r"(?:.*?, model (?P<model>.+))?")
MODEL_LINE = re.compile(r"^model (?P<model>.+)$")


def _summary_txt(path):
    """(K, N, model) from the head of `replayssm summary`'s output, None if unreadable."""
    try:
        with open(path) as f:
            first = f.readline().strip()
            second = f.readline().strip()
    except OSError:
        return None
    m = SUMMARY_LINE.match(first)
    m2 = MODEL_LINE.match(second)
    if not m or not (m["model"] or m2):
        raise rc.InputError(f"{path}: head '{first[:80]}' is not 'PATH: K sequences x N steps ...' "
                            "with ', model MODEL' or a line 'model MODEL' after it "
                            "(replayssm summary)")
    model = m["model"] if m["model"] else m2["model"]
    return int(m["K"]), int(m["N"]), model.strip()


def from_dir(d):
    """Every run of a directory of committed summaries (one per STEM_kl_buckets.csv)."""
    if not os.path.isdir(d):
        raise rc.InputError(f"{d}: no such directory (expected the CSV summaries of runs)")
    out = []
    for bpath in sorted(glob.glob(os.path.join(d, "*_kl_buckets.csv"))):
        stem = os.path.basename(bpath)[:-len("_kl_buckets.csv")]
        specs, buckets, K, N = _parse_buckets(bpath, _read_csv(bpath))
        model = "(model not recorded)"
        spath = os.path.join(d, f"{stem}.summary.txt")
        if os.path.isfile(spath):
            k, n, model = _summary_txt(spath)
            if (k, n) != (K, N):
                raise rc.InputError(f"{spath}: {k} sequences x {n} steps, but {bpath} has "
                                    f"{K} x {N}")
        rpath = os.path.join(d, f"{stem}_rounding.csv")
        rounding = _parse_rounding(rpath, _read_csv(rpath), K, N) if os.path.isfile(rpath) else None
        wpath = os.path.join(d, f"{stem}_kl_window.csv")
        window = _parse_window(wpath, _read_csv(wpath)) if os.path.isfile(wpath) else None
        out.append(Summary(stem, bpath, normalise_model(model), K, N, specs, buckets, rounding,
                           window))
    # Runs summarised only by a rounding table (table_rounding.py) and `replayssm summary`:
    # K and N come from the summary text; they have no length buckets.
    have = {s.stem for s in out}
    for rpath in sorted(glob.glob(os.path.join(d, "*_rounding.csv"))):
        stem = os.path.basename(rpath)[:-len("_rounding.csv")]
        spath = os.path.join(d, f"{stem}.summary.txt")
        if stem in have or not os.path.isfile(spath):
            continue
        K, N, model = _summary_txt(spath)
        rounding = _parse_rounding(rpath, _read_csv(rpath), K, N)
        specs = {row["config"]: row["spec"] for row in rounding[1]}
        out.append(Summary(stem, rpath, normalise_model(model), K, N, specs, {}, rounding, None))
    if not out:
        raise rc.InputError(f"{d}: no *_kl_buckets.csv (expected plot_kl_length.py's output)")
    out.sort(key=lambda s: s.stem)
    return out
