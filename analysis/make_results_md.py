#!/usr/bin/python3
"""Writes docs/results.md from the data: for each paper figure or table, what the paper reports,
what this project measures on each model, and where and why they differ.

    /usr/bin/python3 analysis/make_results_md.py --theory THEORY.h5 [THEORY.h5 ...]
        [--summaries DIR ...] [--runs RUN.h5 ...] [--models MODEL ...] [--L 16]
        [--out docs/results.md]

--summaries DIR (repeatable) reads the compact outputs of runs whose HDF5 files are elsewhere:
STEM_kl_buckets.csv, STEM_rounding.csv, STEM_kl_window.csv and STEM.summary.txt
(analysis/rssm_summary.py); --runs reads run HDF5 files and computes the same rows with the same
functions, so the page says the same for the same data. --models names model directories whose
SSM decays are tabulated (analysis/ssm_decay.py; default: the models that the runs name, where
they exist in the source tree).

The paper's numbers are quoted from the paper notes (shared/paper/replayssm-paper-notes.zh.txt);
everything else comes from the files given. A paper model without a run is reported as
"not yet measured": nothing here is typed in by hand.
"""

import argparse
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import plot_theory  # noqa: E402
import rssm_common as rc  # noqa: E402
import rssm_summary as rs  # noqa: E402
import ssm_decay  # noqa: E402
import table_rounding  # noqa: E402

# The four models of the paper and how a run's `model` attribute names them.
PAPER_MODELS = [
    ("Qwen3.5-4B", "GDN", ("qwen3.5-4b", "qwen3_5-4b", "qwen3.5_4b")),
    ("Nemotron-3-Nano-4B", "Mamba-2", ("nemotron-3-nano", "nemotron3-nano", "nano-4b")),
    ("Nemotron-3-Super-120B-A12B", "Mamba-2", ("nemotron-3-super", "super-120b")),
    ("Qwen3.5-122B-A10B", "GDN", ("qwen3.5-122b", "122b-a10b")),
]
NOT_MEASURED = "not yet measured"
PAPER_RATIO_128K = 36.0  # Fig. 5: 0.136 -> 0.0038 at 128K, Qwen3.5-4B
PAPER_L = 16


def model_of(run):
    m = run.model.lower()
    for name, _, keys in PAPER_MODELS:
        if any(k in m for k in keys):
            return name
    return None


def g3(x):
    return f"{x:.3g}" if x == x else "-"


def rel(path):
    """A path as the page shows it: relative to the source tree when inside it."""
    p = os.path.normpath(os.path.abspath(path))
    return os.path.relpath(p, rs.ROOT) if (p + os.sep).startswith(rs.ROOT + os.sep) else path


# --------------------------------------------------------------------------------------------
# Shared against split NVFP4, and growth with length
# --------------------------------------------------------------------------------------------
def fmt_base(v):
    return v.split("/")[0].split("@")[0] if v else None


def shared_and_split(run):
    """[(L, shared config, split config)]: every `replay ckpt=nvfp4[/sr]` against `replay hp=fp32
    lp=nvfp4` with the same L, the paper's headline comparison (its shared checkpoint is the SR
    one, listed first)."""
    shared, split = {}, {}
    for name, spec in run.specs.items():
        strategy, keys = rc.parse_spec(spec)
        if strategy != "replay":
            continue
        L = int(keys.get("L", "16"))
        if fmt_base(keys.get("ckpt")) == "nvfp4":
            shared.setdefault(L, []).append(name)
        if fmt_base(keys.get("lp")) == "nvfp4" and fmt_base(keys.get("hp")) == "fp32":
            split.setdefault(L, name)
    out = []
    for L in sorted(shared):
        if L in split:
            for c in sorted(shared[L], key=lambda c: (not run.specs[c].endswith("/sr"),
                                                      run.specs[c])):
                out.append((L, c, split[L]))
    return out


def sr_pair(run, L=PAPER_L):
    """(shared SR config, split config) at L, None when the run lacks them."""
    for l, sh, sp in shared_and_split(run):
        if l == L and run.specs[sh].endswith("/sr"):
            return sh, sp
    return None


def last_ratio(run, sh, sp):
    """(shared, split, ratio, lo, hi) over the run's last bucket of lengths."""
    a, b = run.last_bucket(sh), run.last_bucket(sp)
    return a["mean"], b["mean"], (a["mean"] / b["mean"] if b["mean"] > 0 else float("nan")), \
        a["lo"], a["hi"]


def around_ratio(run, sh, sp):
    """The same ratio from the rounding table's longest column (half an octave around it)."""
    if not run.rounding or not run.rounding[0]:
        return None
    lengths, rows = run.rounding
    byc = {r["config"]: r for r in rows}
    if sh not in byc or sp not in byc:
        return None
    a, b = byc[sh]["cells"][-1][0], byc[sp]["cells"][-1][0]
    return lengths[-1], a, b, (a / b if b > 0 else float("nan"))


def ref_bucket(run, config):
    """The bucket that growth is measured from: lengths 1024..2047 when the run goes past them,
    else the first bucket from 16 on that is not the last."""
    bs = run.buckets[config]
    for b in bs[:-1]:
        if b["lo"] == 1024:
            return b
    return next((b for b in bs[:-1] if b["lo"] >= 16), None)


def half_level(run, config):
    """The first bucket whose mean reaches half of the last bucket's: where KL has (nearly)
    saturated when that is early."""
    last = run.last_bucket(config)["mean"]
    if not (last > 0):
        return None
    return next(b for b in run.buckets[config] if b["mean"] >= 0.5 * last)


def fixture_runs(runs):
    return {m: r for m, r in measured_runs(runs).items() if model_of(r) is None}


def measured_runs(runs):
    """{model: the run with the shared NVFP4/SR and split pair at L = 16 that goes furthest}."""
    out = {}
    for r in runs:
        if sr_pair(r) is None:
            continue
        if r.model not in out or r.N > out[r.model].N:
            out[r.model] = r
    return out


def ratio_line(run):
    sh, sp = sr_pair(run)
    a, b, ratio, lo, hi = last_ratio(run, sh, sp)
    nf = run.last_bucket(sh)["nonfinite"]
    text = (f"`{run.model}` (`{run.stem}`, {run.K} x {run.N}), L = {PAPER_L}, over the last "
            f"bucket of lengths ({lo}..{hi}): shared `{run.specs[sh]}` {g3(a)} nats, split "
            f"`{run.specs[sp]}` {g3(b)} nats, **ratio {g3(ratio)}**")
    if nf:
        text += f" ({nf} non-finite steps of the shared configuration left out)"
    ar = around_ratio(run, sh, sp)
    if ar:
        n, a2, b2, r2 = ar
        text += (f"; within half an octave of {rc.length_label(n)} (the rounding table): "
                 f"{g3(a2)} / {g3(b2)} = {g3(r2)}")
    return text + "."


def growth_table(run):
    ref = ref_bucket(run, next(iter(run.specs)))
    last = run.last_bucket(next(iter(run.specs)))
    if ref is None:
        return []
    out = [f"`{run.model}` (`{run.stem}`): mean KL (nats) in the bucket of lengths "
           f"{ref['lo']}..{ref['hi']} and in the last one, {last['lo']}..{last['hi']}, their "
           "ratio, and the first bucket whose mean reaches half of the last one's:", "",
           f"| configuration | KL {ref['lo']}..{ref['hi']} | KL {last['lo']}..{last['hi']} | "
           "last / first | half the last level from |", "|---|---|---|---|---|"]
    for name, spec in run.specs.items():
        r, l = ref_bucket(run, name), run.last_bucket(name)
        h = half_level(run, name)
        grow = l["mean"] / r["mean"] if r["mean"] > 0 else float("nan")
        out.append(f"| `{spec}` | {g3(r['mean'])} | {g3(l['mean'])} | {g3(grow)} | "
                   + (f"{h['lo']}..{h['hi']}" if h else "-") + " |")
    return out + [""]


def growth_of(run, config):
    r, l = ref_bucket(run, config), run.last_bucket(config)
    return l["mean"] / r["mean"] if r and r["mean"] > 0 else float("nan")


# --------------------------------------------------------------------------------------------
# Models
# --------------------------------------------------------------------------------------------
def experiment_models():
    """{model: [experiment files]} from the `model = ...` lines of experiments/*.ini (relative to
    the file: normalised to the source tree)."""
    root = os.path.join(rs.ROOT, "experiments")
    out = {}
    for name in sorted(os.listdir(root)) if os.path.isdir(root) else []:
        if not name.endswith(".ini"):
            continue
        with open(os.path.join(root, name)) as f:
            for line in f:
                k, sep, v = line.partition("=")
                if sep and k.strip() == "model" and v.strip():
                    v = v.strip()
                    m = v if ":" in v.split("/")[0] else rs.normalise_model(
                        os.path.join("experiments", v))
                    out.setdefault(m, []).append(name)
                    break
    return out


def models_list(runs):
    """One line per model: the experiment files that run it and the runs that measured it."""
    exp = experiment_models()
    names = list(exp) + [r.model for r in runs if r.model not in exp]
    out = []
    for m in dict.fromkeys(names):
        mine = [r.stem for r in runs if r.model == m]
        files = f"experiments: {', '.join(exp[m])}" if m in exp else "no experiment file"
        what = ("runs " + ", ".join(f"`{s}`" for s in mine)) if mine else NOT_MEASURED
        out.append(f"- `{m}` ({files}): {what}.")
    return out


def default_models(runs):
    out = []
    for r in runs:
        p = os.path.join(rs.ROOT, r.model)
        if os.path.isfile(os.path.join(p, "model.safetensors")) and r.model not in out:
            out.append(r.model)
    return out


def sr_rtn_theory(trows):
    """Var of one NVFP4 rounding with SR over RTN (iid regime, split mode), None if absent."""
    v = {r["rounding"]: r["meas_var"] for r in trows if r["format"] == "nvfp4"
         and r["regime"] == "iid" and r["mode"] == "split"}
    return v["sr"] / v["rtn"] if "sr" in v and v.get("rtn", 0) > 0 else None


def sr_rtn_measured(runs, model, L=PAPER_L):
    """(run, ratio) of shared NVFP4 checkpoints, SR over RTN, over a run's last bucket."""
    for r in runs:
        if r.model != model:
            continue
        by = {spec: name for name, spec in r.specs.items()}
        sr, rtn = by.get(f"replay L={L} ckpt=nvfp4/sr"), by.get(f"replay L={L} ckpt=nvfp4")
        if sr and rtn and sr in r.buckets and rtn in r.buckets and r.last_bucket(rtn)["mean"] > 0:
            return r, r.last_bucket(sr)["mean"] / r.last_bucket(rtn)["mean"]
    return None


def implied_alpha(factor, L=PAPER_L):
    """alpha with 1/(1 - alpha^2L) = factor; None when factor <= 1."""
    if not (factor > 1.0):
        return None
    return (1.0 - 1.0 / factor) ** (1.0 / (2 * L))


def load_decays(models, L):
    """[(label, rows)] of the models whose weights can be read, [(model, error)] of the rest."""
    decays, bad = [], []
    for m in models:
        try:
            decays.append((rs.normalise_model(rel(m)), ssm_decay.head_decays(m, L)))
        except rc.InputError as e:
            bad.append((m, str(e)))
    return decays, bad


def implied_memory(run, trows, L=PAPER_L):
    """The memory 1/(1 - alpha) for which 1/(1 - alpha^2L) is the run's shared/split ratio after
    SR's factor; None when it cannot be read off."""
    sr = sr_rtn_theory(trows)
    pair = sr_pair(run, L)
    if not sr or not pair:
        return None
    a = implied_alpha(last_ratio(run, *pair)[2] / sr, L)
    return 1.0 / (1.0 - a) if a is not None else None


def memory_clause(fixture, decays, trows):
    """'model: ... tokens' per fixture model: what the measured ratio implies and what the weights
    say at zero input."""
    dmap = dict(decays)
    out = []
    for model, r in fixture.items():
        mem = implied_memory(r, trows)
        parts = []
        if mem is not None:
            parts.append(f"the ratio implies a memory of about {g3(mem)} tokens")
        if model in dmap:
            s = ssm_decay.model_summary(dmap[model])
            parts.append(f"its heads' zero-input memories are {g3(s['memory'][0])} to "
                         f"{g3(s['memory'][2])} tokens (median {g3(s['memory'][1])})")
        if parts:
            out.append(f"`{model}`: " + ", ".join(parts))
    return "; ".join(out)


def memory_section(runs, decays, bad, trows, L):
    out = ["## The fixture models' state memory: why their ratios are small", "",
           "Appendix C.6 (the last section): a shared checkpoint rounded every L tokens accumulates "
           "its roundings to s2/(1 - alpha^2L), split precision's read copy is one rounding, s2. "
           "How much the shared checkpoint loses therefore depends on how slowly the slowest "
           "heads forget. The decay per token of each SSM head at zero input, from the weights "
           "(`analysis/ssm_decay.py`: alpha0 = exp(-exp(A_log) * softplus(dt_bias)), the formula "
           "of src/model/layer_mamba2.c and src/model/layer_gdn.c with the input term dt or a set "
           "to 0), its memory 1/(1 - alpha0), and the accumulation factor of a shared checkpoint "
           f"over one rounding, 1/(1 - alpha0^{2 * L}) at L = {L}:", ""]
    out += [f"- `{m}`: {e}" for m, e in bad]
    if decays:
        out += ssm_decay.markdown(decays, L).splitlines()
    else:
        out.append("- no model weights given (`--models`).")
    out += ["", "The input-dependent part (Mamba-2's dt projection, GDN's `a` projection) moves "
            "every step's decay, so alpha0 indicates each head's time scale at zero input, not a "
            "bound; GDN's delta rule also erases the state along each written key "
            "(S (I - beta k k^T)), which shortens its memory further. The paper's models' "
            "A_log and dt_bias are not available here (no weights of Qwen3.5-4B, the Nemotron-3 "
            "models or Qwen3.5-122B in this repository), so the same table cannot be made for "
            "them.", ""]
    sr = sr_rtn_theory(trows)
    meas = measured_runs(runs)
    expl = []
    if sr:
        expl.append(f"- One NVFP4 rounding with SR has {sr:.3g} times the variance of one with "
                    "RTN (theory files, iid regime, split mode). The paper's shared checkpoint is "
                    "NVFP4 with SR and its split read copy NVFP4 with RTN, so with no "
                    f"accumulation at all the KL ratio would already be about {sr:.3g} (KL is "
                    "quadratic in small logit errors, so it scales with the error variance).")
    dmap = dict(decays)
    for model, run in meas.items():
        sh, sp = sr_pair(run)
        ratio = last_ratio(run, sh, sp)[2]
        line = f"- `{model}`: measured ratio {g3(ratio)} (`{run.stem}`, last bucket)"
        m = sr_rtn_measured(runs, model)
        if m:
            lb = m[0].last_bucket(next(iter(m[0].specs)))
            line += (f"; its SR checkpoint over its RTN one measured directly: {g3(m[1])} "
                     f"(`{m[0].stem}`, lengths {lb['lo']}..{lb['hi']}), so an RTN shared "
                     f"checkpoint would be about {g3(ratio / m[1])} times the split one")
        if sr:
            acc = ratio / sr
            a = implied_alpha(acc, PAPER_L)
            line += f"; without SR's factor {g3(acc)} is left for accumulation"
            if a is not None:
                line += (f", which 1/(1 - alpha^{2 * PAPER_L}) gives for alpha = {a:.4g}, a "
                         f"memory of {g3(1.0 / (1.0 - a))} tokens")
        if model in dmap:
            s = ssm_decay.model_summary(dmap[model])
            line += (f". The weights at zero input: median memory {g3(s['memory'][1])} tokens "
                     f"(largest {g3(s['memory'][2])}), median accumulation factor "
                     f"{s['accum'][1]:.4g} (largest {s['accum'][2]:.4g}; {s['above2']} of "
                     f"{s['heads']} heads above 2)")
            if sr and a is not None:
                mem = 1.0 / (1.0 - a)
                if mem > s["memory"][2]:
                    line += (": the measured accumulation needs a longer memory than any head "
                             "has at zero input, so the input term must slow some heads down "
                             "on real text")
                elif mem >= s["memory"][0]:
                    line += (": the measured accumulation lies within the heads' range, near "
                             + ("their median" if 0.5 <= mem / s["memory"][1] <= 2.0 else
                                "its " + ("upper" if mem > s["memory"][1] else "lower")
                                + " part"))
        expl.append(line + ".")
    if sr:
        mems = " and ".join(g3(m) for m in (implied_memory(r, trows) for r in meas.values()
                                            if model_of(r) is None) if m is not None)
        need = PAPER_RATIO_128K / sr
        a = implied_alpha(need, PAPER_L)
        expl.append(f"- The paper's {PAPER_RATIO_128K:.0f}x at 128K (Qwen3.5-4B) leaves "
                    f"{g3(need)} for accumulation after SR's {sr:.3g}: alpha = {a:.5g} at "
                    f"L = {PAPER_L}, a memory of {g3(1.0 / (1.0 - a))} tokens for the heads that "
                    "dominate the KL, and more than that, since its shared curve still grows by "
                    "orders of magnitude up to 128K instead of reaching s2/(1 - alpha^2L) early. "
                    "The fixture models (docs/trained-models.md) carry their long memory in a "
                    "few designed slow heads (their memories: the model cards) beside learned heads "
                    "of a few tokens"
                    + (f"; the memories read off their ratios above are {mems} tokens, a mean "
                       "over both kinds of head (the growth tables of Fig. 5)." if mems else
                       "."))
    if expl:
        out += ["Reading the measured ratios with these numbers (a single-time-scale reading: "
                "the KL mixes heads of many time scales):", ""] + expl + [""]
    return out


# --------------------------------------------------------------------------------------------
# Fig. 13 and Table 11
# --------------------------------------------------------------------------------------------
def window_groups(run):
    """{group: [row]} of the run's window rows, only groups that vary L."""
    out = {}
    for w in run.window or []:
        out.setdefault(w["group"], []).append(w)
    return {g: ws for g, ws in out.items() if len({w["L"] for w in ws}) > 1}


def window_section(runs):
    """The tables of configurations that differ only in L, the where-they-differ lines, and how
    many times the split configuration's KL falls from the smallest L to the largest, per run."""
    out, diffs, falls = [], [], []
    for r in runs:
        groups = window_groups(r)
        if not groups:
            continue
        first = next(iter(groups.values()))[0]
        out += [f"`{r.model}` (`{r.stem}`, {r.K} x {r.N}): mean KL (nats) over every step and "
                f"over the last bucket of lengths ({first['last_lo']}..{first['last_hi']}):", "",
                "| configuration without L | L | mean KL (all steps) | mean KL (last bucket) | "
                "non-finite steps |", "|---|---|---|---|---|"]
        for g, ws in groups.items():
            for w in ws:
                out.append(f"| `{g}` | {w['L']} | {g3(w['mean_all'])} | {g3(w['mean_last'])} | "
                           f"{w['nonfinite_all']} |")
        out.append("")
        sh = groups.get("replay ckpt=nvfp4/sr")
        sp = groups.get("replay hp=fp32 lp=nvfp4")
        if sh and sp:
            s0, s1 = sh[0], sh[-1]
            p0, p1 = sp[0], sp[-1]
            falls.append(p0["mean_last"] / p1["mean_last"])
            diffs.append(f"- `{r.model}` (`{r.stem}`): from L = {s0['L']} to L = {s1['L']} "
                         f"({s1['L'] // s0['L']} times fewer flushes) the shared "
                         f"NVFP4/SR checkpoint's KL falls {g3(s0['mean_last'] / s1['mean_last'])}"
                         f" times and the split one's {g3(p0['mean_last'] / p1['mean_last'])} "
                         "times (last bucket); shared over split is "
                         f"{g3(s0['mean_last'] / p0['mean_last'])} "
                         f"at L = {s0['L']} and {g3(s1['mean_last'] / p1['mean_last'])} at "
                         f"L = {s1['L']}.")
    return out, diffs, falls


def rounding_section(runs):
    """The rounding tables of the runs that have a configuration group in two roundings, and
    their pairs (run, group, lengths, RTN row, SR row): SR against RTN, or a split recurrence with
    hp=sr against the same with RTN."""
    out, pairs, left = [], [], []
    for r in runs:
        if not r.rounding:
            continue
        lengths, rows = r.rounding
        by = {}
        for row in rows:
            by.setdefault(row["group"], {})[row["rounding"]] = row
        mine = [(r, g, lengths, d["RTN"], d[k]) for g, d in by.items() if "RTN" in d
                for k in d if k != "RTN" and "sr" in k.lower()]
        if not mine or not lengths:
            left.append(r.stem)
            continue
        pairs += mine
        out += table_rounding.markdown(r, lengths, rows).splitlines() + [""]
    if left and out:
        out += ["Left out: " + ", ".join(f"`{s}`" for s in left) + " (no configuration in both "
                "roundings; their tables are in the summaries).", ""]
    return out, pairs


def rounding_diffs(pairs):
    out = []
    runs = list(dict.fromkeys(p[0] for p in pairs))
    for r in runs:
        mixed = [p for p in pairs if p[0] is r and p[4]["rounding"] != "SR"]
        for p in mixed:
            n = p[2][-1]
            a, b = p[3]["cells"][-1][0], p[4]["cells"][-1][0]
            q = b / a if a > 0 else float("nan")
            out.append(f"- `{r.model}` (`{r.stem}`): `{p[1]}` rounded {p[4]['rounding']} "
                       f"against RTN: KL ratio {g3(q)} at {rc.length_label(n)}"
                       + (" (no difference within 5%)." if abs(q - 1.0) <= 0.05 else "."))
        ps = [p for p in pairs if p[0] is r and p[4]["rounding"] == "SR"]
        if not ps:
            continue
        lengths = ps[0][2]
        cols = []
        for i, n in enumerate(lengths):
            below = sum(p[3]["cells"][i][0] < p[4]["cells"][i][0] for p in ps)
            cols.append(f"{below} of {len(ps)} at {rc.length_label(n)}")
        nf_rtn = sum(p[3]["first_nonfinite"] is not None for p in ps)
        nf_sr = sum(p[4]["first_nonfinite"] is not None for p in ps)
        ratios = [p[4]["cells"][-1][0] / p[3]["cells"][-1][0] for p in ps
                  if p[3]["cells"][-1][0] > 0]
        rtxt = (f"; SR over RTN at {rc.length_label(lengths[-1])}: {g3(min(ratios))} to "
                f"{g3(max(ratios))}" if ratios else "")
        out.append(f"- `{r.model}` (`{r.stem}`, {r.N} steps): RTN/SR pairs in which RTN's KL is "
                   "below SR's: " + ", ".join(cols) + f"{rtxt}; configurations with non-finite "
                   f"steps: {nf_rtn} RTN, {nf_sr} SR.")
    return out


def rtn_overtakes(pairs):
    """[(model, RTN-below-SR count at the first length, at the last, pairs)] of the runs whose
    count falls with length (SR pairs only)."""
    out = []
    for r in dict.fromkeys(p[0] for p in pairs):
        ps = [p for p in pairs if p[0] is r and p[4]["rounding"] == "SR"]
        if not ps or len(ps[0][2]) < 2:
            continue
        first = sum(p[3]["cells"][0][0] < p[4]["cells"][0][0] for p in ps)
        last = sum(p[3]["cells"][-1][0] < p[4]["cells"][-1][0] for p in ps)
        if last < first:
            out.append((r.model, first, last, len(ps)))
    return out


def any_nonfinite(pairs):
    return any(p[3]["first_nonfinite"] is not None or p[4]["first_nonfinite"] is not None
               for p in pairs)


def rtn_always_below(pairs):
    """True when RTN's KL is below SR's in every pair at every length and nothing diverges."""
    pairs = [p for p in pairs if p[4]["rounding"] == "SR"]
    return bool(pairs) and all(p[3]["cells"][i][0] < p[4]["cells"][i][0] for p in pairs
                               for i in range(len(p[2]))) and \
        not any(p[3]["first_nonfinite"] is not None or p[4]["first_nonfinite"] is not None
                for p in pairs)


def theory_section(attrs_list, rows):
    out = plot_theory.markdown(attrs_list, rows).splitlines()
    attrs = attrs_list[0]
    # how much accumulation the model and the quantisers give at the slowest decay: conventional
    # and replay Var D against split's single rounding, iid regime
    amax = max(r["alpha"] for r in rows if not math.isnan(r["alpha"]))
    out += ["", f"Accumulation at alpha = {amax:.6g} in the iid regime: Var D of conventional "
            "storage and of a shared replay checkpoint over split precision's single rounding "
            f"(measured; predicted in brackets, after the {attrs.get('steps')} simulated steps; "
            "the stationary limits are larger where n(1 - a) < "
            f"{attrs.get('horizons')}):", "",
            "| format | split Var D | conventional / split | replay / split | stationary limits "
            "1/(1-a^2), 1/(1-a^2L) |", "|---|---|---|---|---|"]
    for f in dict.fromkeys(plot_theory.fmt_name(r) for r in rows):
        sel = {r["mode"]: r for r in rows if plot_theory.fmt_name(r) == f and r["regime"] == "iid"
               and (r["mode"] == "split" or r["alpha"] == amax)}
        if len(sel) < 3 or sel["split"]["meas_var"] <= 0:
            continue
        s = sel["split"]
        cells = []
        for m in ("conventional", "replay"):
            cells.append(f"{sel[m]['meas_var'] / s['meas_var']:.3g} "
                         f"({sel[m]['pred_var'] / s['pred_var']:.3g})")
        lims = ", ".join(f"{sel[m]['lim_var'] / sel[m]['s2']:.3g}"
                         for m in ("conventional", "replay"))
        out.append(f"| `{f}` | {s['meas_var']:.3g} | {cells[0]} | {cells[1]} | {lims} |")
    return out


def closed_section(rows):
    """Conventional storage in the real recurrence: measured/predicted Var D per alpha, RTN
    beside SR (the mechanism behind Table 11)."""
    closed = [r for r in rows if r["regime"] == "closed" and r["mode"] == "conventional"]
    if not closed:
        return []
    alphas = sorted({r["alpha"] for r in closed})
    out = ["", "In the real recurrence (`closed` regime), conventional storage: measured/predicted "
           "Var D per alpha (`*`: assumptions violated, kappa significant; kappa in brackets). "
           "RTN's error is correlated with what it rounds; SR's is not, except where block "
           "maxima clamp.", "",
           "| format | " + " | ".join(f"alpha {a:.6g}" for a in alphas) + " |",
           "|---|" + "---|" * len(alphas)]
    for f in dict.fromkeys(plot_theory.fmt_name(r) for r in closed):
        cells = []
        for a in alphas:
            r = next((r for r in closed if plot_theory.fmt_name(r) == f and r["alpha"] == a), None)
            if r is None or r["pred_var"] <= 0:
                cells.append("-")
                continue
            mark = "*" if r["assumption"] != "holds" else ""
            cells.append(f"{r['meas_var'] / r['pred_var']:.3g}{mark} ({r['kappa']:+.2g})")
        out.append(f"| `{f}` | " + " | ".join(cells) + " |")
    return out


def tol_of(attrs_list):
    return float(attrs_list[0].get("tol", 0.05))


def unique_stems(runs):
    """Two runs with one stem (two result directories) are told apart by their directory."""
    seen = {}
    for r in runs:
        seen.setdefault(r.stem, []).append(r)
    for same in seen.values():
        if len(same) > 1:
            for r in same:
                r.stem = f"{os.path.basename(os.path.dirname(os.path.abspath(r.source)))}/{r.stem}"



# Why a shared curve stops growing early: a GDN layer's delta rule, or (any SSM) heads that level off
WHY_DELTA_RULE = ("a Gated DeltaNet layer's delta rule multiplies the state by (I - beta k k^T) at "
                  "every write, which removes error along each key it writes, so an error's "
                  "lifetime is bounded by the keys, not only by alpha")
WHY_LEVEL_OFF = ("the heads that carry most of the error level off within a few of their "
                 "memories, and the slower heads carry little of it")


def why_clause(fixture, mclause, kinds=None):
    """Why each fixture model's shared/split ratio and growth are what they are, from its data:
    a ratio below 10 means heads that forget within a few flushes; a ratio of 10 or more with a
    shared curve that stops growing early means the accumulation is bounded early: for a GDN
    model also by the delta rule, which removes error along every key it writes; a Mamba-2 model
    has no delta rule, so there the heads that carry the error level off within a few of their
    memories. kinds: {model: "GDN" | "Mamba-2" | ...} from the weights (ssm_decay); a model
    without weights gets both readings."""
    kinds = kinds or {}
    parts = []
    for model, r in fixture.items():
        sh, sp = sr_pair(r)
        ratio, growth, h = last_ratio(r, sh, sp)[2], growth_of(r, sh), half_level(r, sh)
        if ratio < 10:
            parts.append(f"`{model}` (ratio {g3(ratio)}): its heads forget within a few flushes, "
                         "so a shared checkpoint accumulates little more than one rounding")
        elif growth >= 3:
            parts.append(f"`{model}` (ratio {g3(ratio)}, shared KL {g3(growth)}x from the "
                         f"{ref_bucket(r, sh)['lo']}..{ref_bucket(r, sh)['hi']} bucket to the last, "
                         f"half its level by {h['lo']}..{h['hi']}): slow heads carry the shared "
                         "checkpoint's roundings for thousands of tokens, as in the paper")
        else:
            kind = kinds.get(model)
            reason = (WHY_DELTA_RULE if kind == "GDN" else
                      f"a Mamba-2 layer has no delta rule: {WHY_LEVEL_OFF}" if kind == "Mamba-2"
                      else f"{WHY_LEVEL_OFF}, or, in a Gated DeltaNet layer, {WHY_DELTA_RULE}")
            parts.append(f"`{model}` (ratio {g3(ratio)}, but the shared KL reaches half its level "
                         f"by lengths {h['lo']}..{h['hi']} and then stays): the accumulated error "
                         "saturates after a few hundred tokens although some heads' decays are "
                         f"slower; {reason}")
    return "; ".join(parts) + (f" (memories: {mclause}; the state-memory section below)."
                               if mclause else ".")

def command_text(theory_paths, summary_dirs, run_paths, model_paths, L):
    parts = ["/usr/bin/python3 analysis/make_results_md.py", "--theory"]
    parts += [rel(p) for p in theory_paths]
    for d in summary_dirs:
        parts += ["--summaries", rel(d)]
    if run_paths:
        parts += ["--runs"] + [rel(p) for p in run_paths]
    if model_paths is not None:
        parts += ["--models"] + [rel(p) for p in model_paths]
    if L != PAPER_L:
        parts += ["--L", str(L)]
    return " ".join(parts + ["--out", "FILE"])


def build(theory_paths, run_paths, out_path, summary_dirs=(), model_paths=None, L=PAPER_L):
    attrs, trows = plot_theory.load_many(theory_paths)
    runs = [rs.from_run(rc.load_run(p)) for p in run_paths]
    for d in summary_dirs:
        runs += rs.from_dir(d)
    unique_stems(runs)
    models = model_paths if model_paths is not None else default_models(runs)
    models_abs = [m if os.path.isabs(m) else os.path.join(rs.ROOT, m)
                  if not os.path.exists(m) else m for m in models]
    inputs = []
    if summary_dirs:
        inputs.append("the committed summaries in " + ", ".join(f"`{rel(d)}/`" for d in
                                                                summary_dirs)
                      + " (CSV files of `plot_kl_length.py`, `table_rounding.py`, "
                      "`plot_kl_window.py` and `replayssm summary` output)")
    if run_paths:
        inputs.append("the run files " + ", ".join(f"`{rel(p)}`" for p in run_paths))
    inputs.append(f"{len(theory_paths)} `replayssm theory` file"
                  + ("s" if len(theory_paths) != 1 else "") + " ("
                  + ", ".join(f"`{os.path.basename(p)}`" for p in theory_paths) + ")")
    if models:
        inputs.append("the weights of " + ", ".join(f"`{rs.normalise_model(rel(m))}`"
                                                    for m in models))
    L_ = []
    L_ += ["# Results", "",
           "Generated by `analysis/make_results_md.py` (do not edit by hand) from "
           + "; ".join(inputs) + ". Runs: "
           + (", ".join(f"`{r.stem}` ({r.model}, {r.K} x {r.N})" for r in runs) or "none")
           + ". Paper numbers are quoted from the paper notes "
           "(`shared/paper/replayssm-paper-notes.zh.txt`); a paper model without a run is "
           "\"not yet measured\". The page was made with", "",
           "    " + command_text(theory_paths, summary_dirs, run_paths, model_paths, L), "",
           "`cmake --build BUILD --target figures` runs the same on the committed data "
           "(analysis/README.md) into `BUILD/figures/results.md`; this file is that file, "
           "copied.", ""]

    decays, bad = load_decays(models_abs, L)
    mclause = memory_clause(fixture_runs(runs), decays, trows)
    kinds = {label: rows[0]["kind"] for label, rows in decays if rows}   # ssm_decay.head_decays
    paper_runs = {name: [r for r in runs if model_of(r) == name] for name, _, _ in PAPER_MODELS}
    fixture = fixture_runs(runs)

    L_ += ["## Fig. 5: KL against generation length, Qwen3.5-4B (PG-19, teacher forcing)", "",
           "Paper: with the FP32 conventional decode as reference, shared single checkpoints "
           "(FP8+SR, NVFP4+SR) diverge by orders of magnitude as the length grows to 128K; the "
           "split configuration (NVFP4 read, FP32 recurrence) stays flat, and at 128K its KL is "
           "36x lower than the shared NVFP4 checkpoint's (0.136 -> 0.0038). NVFP4 read with an "
           "FP16+SR recurrence lies almost on the FP32-recurrence curve.", "",
           "This project (`plot_kl_length.py`, figures `*_kl_length.png`):", ""]
    q = [r for r in paper_runs["Qwen3.5-4B"] if sr_pair(r)]
    L_ += [f"- Qwen3.5-4B: {ratio_line(r)}" for r in q] or [f"- Qwen3.5-4B: {NOT_MEASURED}."]
    if fixture:
        L_ += ["- The fixture models (not in the paper; docs/trained-models.md), the longest run "
               "of each:"]
        L_ += [f"  - {ratio_line(r)}" for r in fixture.values()]
        L_ += ["", "Ratios are over the last power-of-two bucket of lengths: the committed "
               "summaries keep the per-bucket means of `plot_kl_length.py`, not the half-octave "
               "windows around 1K, 16K, 64K and 128K, which the rounding table "
               "(`table_rounding.py`) gives for the lengths a run reaches (its longest quoted "
               "after the semicolon).", "",
               "How the KL grows with length:", ""]
        for r in fixture.values():
            L_ += growth_table(r)
    diff = []
    for model, r in fixture.items():
        sh, sp = sr_pair(r)
        h = half_level(r, sh)
        diff.append(f"`{model}`: ratio {g3(last_ratio(r, sh, sp)[2])} against 36; the shared "
                    f"NVFP4/SR KL changes {g3(growth_of(r, sh))} times from the "
                    f"{ref_bucket(r, sh)['lo']}..{ref_bucket(r, sh)['hi']} bucket to the last "
                    "one (the paper's grows by orders of magnitude) and reaches half of its "
                    f"final level by lengths {h['lo']}..{h['hi']}")
    why = ("Why: a shared checkpoint's error accumulates towards s2/(1 - alpha^2L) over a "
           "head's memory, split precision's stays one rounding s2 of the high-precision state; "
           "" + why_clause(fixture, mclause, kinds) if fixture else
           "Why: see the state-memory section "
           "below.")
    L_ += ["Where and why they differ: "
           + ("; ".join(diff) + ". " + why if diff else "nothing to compare until a run exists."),
           "",
           "Theory (Appendix C.6 section below): split precision's error is one rounding of "
           "the high-precision state (Var D = s2 at every length), a shared checkpoint's "
           "accumulates towards s2/(1 - alpha^2L); the accumulation table there gives the "
           "measured factors for each format.", ""]

    L_ += ["## Fig. 12: the other three models", "",
           "Paper: the same behaviour on Nemotron-3-Nano-4B, Nemotron-3-Super-120B-A12B and "
           "Qwen3.5-122B-A10B; at the longest length the split configuration lowers the KL of "
           "shared NVFP4 by 13x to 29x (the notes do not give the per-model factors).", "",
           "This project:", ""]
    paper = {"Qwen3.5-4B": "36x at 128K (0.136 -> 0.0038)"}
    for name, _, _ in PAPER_MODELS[1:]:
        paper[name] = "one of the 13x-29x reductions"
    for name, kind, _ in PAPER_MODELS:
        mine = [r for r in paper_runs[name] if sr_pair(r)]
        what = "; ".join(ratio_line(r) for r in mine) if mine else NOT_MEASURED + "."
        L_.append(f"- **{name}** ({kind}): paper: {paper[name]}; this project: {what}")
    if fixture:
        L_.append("- Fixture models (not in the paper): "
                  + "; ".join(f"`{m}` {g3(last_ratio(r, *sr_pair(r))[2])}x at {r.N} tokens"
                              for m, r in fixture.items()) + " (Fig. 5 above).")
    L_ += ["", "Models and their runs (the models of `experiments/*.ini` and of the runs given):",
           ""] + models_list(runs)
    L_ += ["", "Where and why they differ: "
           + ("the fixture models' ratios (" + ", ".join(
               f"{g3(last_ratio(r, *sr_pair(r))[2])}" for r in fixture.values())
              + ") against the paper's 13x-29x: " + why_clause(fixture, mclause, kinds)
              + " The paper's models are not measured here." if fixture
              else "only measured models can be compared."),
           ""]

    L_ += memory_section(runs, decays, bad, trows, L)

    L_ += ["## Fig. 13: KL against the replay window L, Qwen3.5-4B", "",
           "Paper: for L from 4 to 64 the split configurations stay flat near the FP32 floor, "
           "while shared checkpoints degrade with length whatever L is.", "",
           "This project (`plot_kl_window.py`, figures `*_kl_window.png`; configurations that "
           "differ only in L):", ""]
    ws, wdiff, falls = window_section(runs)
    L_ += ws if ws else [f"- {NOT_MEASURED} (no run with replay configurations that differ only "
                         "in L).", ""]
    L_ += ["Where and why they differ:" + (" the paper's models are not measured." if not wdiff
                                           else ""), ""]
    if wdiff:
        L_ += wdiff + ["", "A split read copy is one rounding, seen for as long as the head "
                       "remembers it: when the memory is much longer than L its KL cannot depend "
                       "on L (the paper's flat curves), when L is longer than the memory the "
                       "error shows only in the first steps after each flush and the mean KL "
                       "falls like 1/L. "
                       + (f"The split KL here falls {g3(min(falls))} to {g3(max(falls))} times "
                          "over the sweep: the second case, with the short memories of the "
                          "state-memory section. " if min(falls) > 1.5 else
                          "The split KL here stays within a factor 1.5 over the sweep: the first "
                          "case. ")
                       + "The shared checkpoint's s2/(1 - alpha^2L) falls with L in both cases.",
                       ""]
    L_ += ["Theory (Appendix C.6, checked below): a shared checkpoint accumulates its "
           "roundings with a = alpha^L per flush, so its stationary variance "
           "s2/(1 - alpha^2L) falls as L grows, while split precision's single rounding does "
           "not depend on L; a flat split curve is the predicted outcome when alpha^L is close "
           "to 1.", ""]

    L_ += ["## Table 11: RTN against SR", "",
           "Paper: at 1K tokens RTN gives a lower KL than SR; from 16K on, RTN's deterministic "
           "bias accumulates and its KL overtakes SR's; at 64K-128K RTN drives the state of both "
           "GDN models to non-finite values, while SR stays finite and converges. The notes do "
           "not give the table's cells.", "",
           "This project (`table_rounding.py`, tables `*_rounding.md`):", ""]
    rsec, pairs = rounding_section(runs)
    L_ += rsec if rsec else [f"- {NOT_MEASURED}.", ""]
    rd = rounding_diffs(pairs)
    L_ += ["Where and why they differ:" + ("" if rd else " nothing to compare until a run with "
                                           "RTN/SR pairs exists."), ""]
    if rd:
        sr = sr_rtn_theory(trows)
        srtxt = (f" (one NVFP4 rounding with SR has {sr:.3g} times RTN's variance, theory "
                 "section)" if sr else "")
        over = rtn_overtakes(pairs)
        if over:
            why = ("RTN overtakes SR with length: the pairs in which RTN's KL is below SR's fall "
                   "from " + ", ".join(f"{a} to {b} of {n} (`{m}`)" for m, a, b, n in over)
                   + " between the shortest and the longest length measured, as in the paper: "
                   "RTN's bias accumulates like b/(1 - alpha^L) per checkpoint in heads that "
                   "remember for many flushes, SR's errors average out. "
                   + ("Nothing turns non-finite within the lengths run (the paper's RTN states "
                      "diverge at 64K-128K)." if not any_nonfinite(pairs) else
                      "The first non-finite steps are in the tables above."))
        else:
            why = ("RTN's bias accumulates like b/(1 - alpha^L) per checkpoint, which needs heads "
                   "that remember for many flushes; where the heads forget within tens to "
                   "hundreds of tokens (the state-memory section), RTN's bias stays about one "
                   f"rounding's while SR's larger variance{srtxt} shows throughout.")
        L_ += rd + ["", ("RTN's KL stays below SR's at every length measured, and nothing "
                         "becomes non-finite: the paper's crossover does not happen here. "
                         if rtn_always_below(pairs) else "") + why, ""]
    L_ += ["Theory: in the fixed-state regime below, RTN repeats the same error every step "
           "and its variance grows like 1/(1 - a)^2 instead of 1/(1 - a^2) (the bias case), while "
           "SR's stays at s2/(1 - a^2) except where block maxima clamp; in the real recurrence "
           "(`closed` regime, end of the next section) RTN's error is correlated with the "
           "accumulated error and SR's is not. This is the mechanism the paper invokes for "
           "Table 11.", ""]

    L_ += ["## Appendix C.6: error propagation, checked against the real quantisers", "",
           "Paper: D_t = alpha D_(t-1) + e_t; with bias b, E[D] -> b/(1 - alpha); with variance "
           "s2, Var D -> s2/(1 - alpha^2); a shared checkpoint flushed every L steps gives "
           "b/(1 - alpha^L) and s2/(1 - alpha^2L); split precision is one rounding, independent "
           "of the length.", "",
           "This project: `replayssm theory --out theory.h5` with the parameters below "
           "(deterministic for a given seed; docs/theory.md; figure `theory.png`, table "
           "`theory.csv` from `analysis/plot_theory.py`).", ""]
    L_ += theory_section(attrs, trows)
    L_ += closed_section(trows)
    fails = [r for r in trows if r["assumption"] == "holds" and r["resolved"] and not r["agrees"]]
    judged = [r for r in trows if r["assumption"] == "holds" and r["resolved"]]
    if fails:
        where = "; ".join(f"`{plot_theory.fmt_name(r)}` {r['regime']} {r['mode']} alpha "
                          f"{r['alpha']:.6g} (Var off by {r['rel_var']:.1%}, mean by "
                          f"{r['rel_mean']:.1%})" for r in fails)
        diff = (f"{len(fails)} of {len(judged)} resolved comparisons where the assumptions hold "
                f"disagree: {where}.")
    else:
        diff = (f"nowhere where the assumptions hold ({len(judged)} resolved comparisons agree "
                "within the tolerance).")
    viol = [r for r in trows if r["assumption"] != "holds" and r["pred_var"] > 0]
    above = sum(r["meas_var"] > (1 + tol_of(attrs)) * r["pred_var"] for r in viol)
    below = sum(r["meas_var"] < (1 - tol_of(attrs)) * r["pred_var"] for r in viol)
    L_ += ["", "Where and why they differ: " + diff + f" Where the assumptions are violated (the "
           f"reasons above; {len(viol)} comparisons), the measured variance is above the "
           f"prediction in {above} (correlated errors adding up instead of averaging out) and "
           f"below it in {below} (an error that shrinks what it rounds acts as an extra decay); "
           "the rest agree anyway.", ""]
    rc.write_text(out_path, "\n".join(L_))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--theory", nargs="+", required=True,
                    help="HDF5 files of replayssm theory --out")
    ap.add_argument("--runs", nargs="*", default=[], help="run HDF5 files (SPEC section 7)")
    ap.add_argument("--summaries", action="append", default=[], metavar="DIR",
                    help="a directory of run summaries (STEM_kl_buckets.csv, STEM_rounding.csv, "
                    "STEM_kl_window.csv, STEM.summary.txt); repeatable")
    ap.add_argument("--models", nargs="*", default=None,
                    help="model directories for the SSM decay table (default: the models the "
                    "runs name, where present)")
    ap.add_argument("--L", type=int, default=PAPER_L,
                    help="replay window of the decay table's accumulation factor (default 16)")
    ap.add_argument("--out", default="docs/results.md")
    a = ap.parse_args()
    if a.L < 1:
        raise rc.InputError(f"--L {a.L}: expected a positive window")
    d = os.path.dirname(os.path.abspath(a.out))
    if not os.path.isdir(d):
        raise rc.InputError(f"{a.out}: the directory {d} does not exist")
    build(a.theory, a.runs, a.out, a.summaries, a.models, a.L)
    print(f"wrote {a.out}")


if __name__ == "__main__":
    rc.main_guard(main)
