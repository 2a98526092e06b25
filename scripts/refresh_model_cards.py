#!/usr/bin/python3
"""Rewrites the measured parts of each trained model's card (data/models/NAME/README.md) from the
files that hold the measurements, so that a retrained model's card cannot keep old numbers:

    /usr/bin/python3 scripts/refresh_model_cards.py [--bpb results/h200-2026-12-02-s8/repro/figures/bpb.json]

Each card keeps its prose; what lies between the markers
    <!-- measured:NAME --> ... <!-- /measured:NAME -->
is regenerated: `training` (data, steps, final loss: eval.json), `bpb` (held-out bits per byte by
transformers, eval.json, and by replayssm, the reference rows in bpb.json), `heads` (each SSM head's
memory from the weights, analysis/ssm_decay.py, and on Moby-Dick, eval.json head_memories_moby,
with the GDN heads' mean write strength beta there). numpy is needed (for ssm_decay).
"""

import argparse
import json
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "analysis"))
import ssm_decay  # noqa: E402

NAMES = {"austen": "Jane Austen's six novels", "tdavid": "Spurgeon's Treasury of David",
         "sotu": "State of the Union addresses 1790-2018", "kjv": "King James Bible",
         "mhcc": "Matthew Henry's Concise Commentary"}
BAR_BPB, BAR_DEGRADATION = 2.1, 0.02


def fmt(v):
    return f"{v:.3g}"


def training(ev, corpus_mb):
    src = ", ".join(f"{NAMES.get(n, n)} {round(100 * w)} %" for n, w in ev["sources"])
    return "\n".join([
        "| training | |", "|---|---|",
        f"| training data | {corpus_mb:.1f} MB of public-domain English (`scripts/fetch_corpus.sh`), "
        f"sampled: {src} |",
        "| held out | Moby-Dick (`scripts/fetch_data.sh`), never trained on |",
        f"| training | {ev['steps']} steps of {ev['batch']} x {ev['seq']} bytes "
        f"({ev['tokens'] / 1e6:.1f}M tokens), {ev['train_seconds']:.0f} s on one {ev['device']}, "
        f"AdamW lr {ev['lr']:g} cosine to {ev['lr'] / 10:g}, bf16 "
        f"autocast, seed {ev['seed']} |",
        f"| final training loss | {ev['final_train_bpb']:.2f} bits per byte (mean of the last "
        "logged steps) |"] + continued(ev))


def continued(ev):
    """A continued run (--init-from) says so: its steps are on top of the run it started from."""
    if not ev.get("init_from"):
        return []
    gdn_long_beta = ev.get("long_beta_memory") and ev.get("gdn_chunk_trained")
    extra = (f"; learned GDN heads that remember past {ev['long_beta_memory']:g} tokens pushed to "
             "write weakly (`--long-beta`)" if gdn_long_beta else "")
    return [f"| continued from | the previous bf16 weights of this model (`--init-from "
            f"{ev['init_from']}`, {ev.get('warmup', 0)} warm-up steps){extra}; the steps above "
            "are this run's alone (docs/trained-models.md lists both runs) |"]


def bpb(name, ev, rep):
    w = ", ".join(f"{v:.5f}" for v in ev["heldout_bpb_fp32_per_window"])
    r2 = rep.get(f"bpb2k-{name}")
    r16 = rep.get(f"bpb16k-{name}")
    lw = ev["long_windows"]
    out = ["The quickstart's 4 windows of 2049 bytes (starting at bytes "
           + ", ".join(str(s) for s in ev["heldout_starts"]) + "; 2048",
           "predictions each), fp32 compute from the bf16 weights:", "",
           "| measurement | bits per byte | per window |", "|---|---|---|",
           f"| transformers {ev['transformers']}, {ev['device']} fp32 (TF32 off), full-sequence "
           f"forward of a fresh `from_pretrained` load (`eval.json`) | **{ev['heldout_bpb_fp32']:.5f}**"
           f" | {w} |"]
    if r2:
        out.append("| `replayssm run --device cuda`, reference `conventional state=fp32` "
                   f"(`bpb.json`) | **{r2['all']:.5f}** | "
                   + ", ".join(f"{v:.5f}" for v in r2["per_window"]) + " |")
    miss = ev["heldout_bpb_fp32"] > BAR_BPB
    out += ["", f"Over 32 windows spread through the book (transformers): "
            f"{ev['heldout_bpb_fp32_32windows']:.3f}. Uniform is 8.0."
            + (f" **The issue's bar, at most {BAR_BPB}, is missed** (training budget: "
               "docs/trained-models.md says why)." if miss else ""), "",
            "Past the training window: over 2 windows of 16385 bytes (starting at "
            + " and ".join(str(s) for s in lw["starts"]) + "), the mean",
            "over positions 1024..8191 and 8192..16383:", "",
            f"| measurement | 1024..8191 | 8192..16383 | difference (bar: at most "
            f"+{BAR_DEGRADATION}) |", "|---|---|---|---|",
            f"| transformers, fp32 | {lw['bpb_1024_8191']:.5f} | {lw['bpb_8192_16383']:.5f} | "
            f"{lw['degradation']:+.4f} |"]
    if r16:
        out.append(f"| `replayssm run --device cuda` | {r16['1024_8191']:.5f} | "
                   f"{r16['8192_16383']:.5f} | {r16['degradation']:+.4f} |")
    return "\n".join(out)


def heads(name, ev):
    weights = {(r["layer"], r["head"]): r for r in ssm_decay.head_decays(
        os.path.join(ROOT, "data", "models", name), 16)}
    layers = sorted({r["layer"] for r in weights.values()})
    fixed = {(s["layer"], s["head"]): s for s in ev["slow_heads"]}   # slow and medium heads
    gdn = any(r["kind"] == "gdn" for r in ev["head_memories_moby"])
    out = ["| SSM layer (block index) | head | kind | memory from the weights, zero input "
           "(tokens) | memory on Moby-Dick (tokens)" + (" | mean beta on Moby-Dick" if gdn else "")
           + " |", "|---|---|---|---|---|" + ("---|" if gdn else "")]
    for r in ev["head_memories_moby"]:
        li, h = r["layer"], r["head"]
        wr = weights[(layers[li], h)]
        s = fixed.get((li, h))
        kind = "learned" if s is None else (f"{s.get('role', 'slow')}, fixed (design {s['memory_design']:.0f}"
                                           + (f", beta target {s['beta_target']:.3g}"
                                              if "beta_target" in s else "") + ")")
        row = f"| {li} ({layers[li]}) | {h} | {kind} | {fmt(wr['memory'])} | {fmt(r['memory'])}"
        if gdn:
            row += f" | {fmt(r['mean_beta'])}" if "mean_beta" in r else " | "
        out.append(row + " |")
    return "\n".join(out)


def replace(text, key, body, path):
    pat = re.compile(rf"(<!-- measured:{key} -->\n).*?(\n<!-- /measured:{key} -->)", re.S)
    if not pat.search(text):
        raise SystemExit(f"{path}: no '<!-- measured:{key} -->' ... '<!-- /measured:{key} -->' "
                         "block")
    return pat.sub(lambda m: m.group(1) + body + m.group(2), text)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bpb", default=os.path.join(ROOT, "results", "h200-2026-12-02-s8", "repro",
                                                  "figures", "bpb.json"))
    ap.add_argument("--corpus-manifest", default=os.path.join(ROOT, ".corpus", "MANIFEST"))
    args = ap.parse_args()
    rep = json.load(open(args.bpb)) if os.path.exists(args.bpb) else {}
    corpus = 0
    if os.path.exists(args.corpus_manifest):
        for line in open(args.corpus_manifest):
            if not line.startswith("#") and line.split():
                corpus += int(line.split()[1])
    for name in ("qwen35-gdn-tiny", "nemotronh-m2-tiny"):
        d = os.path.join(ROOT, "data", "models", name)
        ev = json.load(open(os.path.join(d, "eval.json")))
        path = os.path.join(d, "README.md")
        text = open(path, encoding="utf-8").read()
        text = replace(text, "training", training(ev, corpus / 1e6), path)
        text = replace(text, "bpb", bpb(name, ev, rep), path)
        text = replace(text, "heads", heads(name, ev), path)
        with open(path + ".tmp", "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(path + ".tmp", path)
        print(f"refresh_model_cards: {path}")


if __name__ == "__main__":
    main()
