#!/usr/bin/env python3
"""Is a model's loss past position 8192 the text's or the context's? (issue 15, the
no-degradation check; docs/trained-models.md, "Past the training window").

    context_degradation.py --model DIR [--model DIR ...] [--text data/moby-dick.txt]
                           [--bin build/replayssm] [--threads 2] [--device cpu|cuda]
                           [--json OUT.json]

The issue's check compares, over 2 windows of 16385 bytes of Moby-Dick (placed as
`replayssm run` places them: the book's first and last 16385 bytes), the mean bits per byte of
the predictions at positions 8192..16383 with that at 1024..8191. The two ranges hold different
text, so the difference mixes two things: how much harder the second half's text is, and what
a context longer than 8192 bytes does to the model. This script separates them with the
harness itself (`replayssm logits`, fp32, on the CPU or with --device cuda on the GPU: 75
minutes for two models on two loaded cores, under a minute a model on an H200): every
prediction at 8192..16383 is made twice, once with the whole window before it (the check's number) and once from a restart, so that its
context is 1024..8191 bytes long like the first range's: the inputs from window position 7168 on
for predictions 8192..15359, from 14336 on for 15360..16383. Then

    check    = full[8192..16383] - full[1024..8191]       (the issue's number)
    context  = full[8192..16383] - restart[8192..16383]   (same text: > 0 means the long
                                                           context hurts, < 0 that it helps)
    text     = restart[8192..16383] - full[1024..8191]    (same context lengths: the text)

and check = context + text exactly. A prediction at window position i is the logits after
input i (of the window's 16385 bytes) against byte i + 1, as in the training script's
long_window_bpb, so `check` reproduces eval.json's "degradation" up to the fp32 arithmetic.
"""
import argparse
import json
import math
import os
import subprocess
import sys
import tempfile

import numpy as np

from rssm_common import die

LONG = 16384            # predictions per window
FIRST = (1024, 8192)    # the check's first range of positions [lo, hi)
SECOND = (8192, 16384)  # and its second
# (restart offset, [lo, hi) of the window positions it scores): each scored prediction sees
# i - offset + 1 bytes of context, within 1025..8192 like FIRST's
RESTARTS = ((7168, 8192, 15360), (14336, 15360, 16384))


def window_starts(m, k=2, n=LONG + 1):
    """Where `replayssm run` places k windows of n tokens in a stream of m (run_data.c):
    window j at floor(j (m - n) / (k - 1))."""
    return [j * (m - n) // (k - 1) for j in range(k)]


def nll_bits(binary, model, tokens, threads, device, tmp):
    """Bits of every prediction of `replayssm logits` over tokens [n]: [n - 1]."""
    tok_path = os.path.join(tmp, "tok.npy")
    out_path = os.path.join(tmp, "logits.npy")
    np.save(tok_path, tokens.astype(np.int32))
    cmd = [binary, "logits", "--model", model, "--tokens", tok_path, "--threads", str(threads),
           "--out", out_path, "--device", device]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        last = r.stderr.strip().splitlines()[-1] if r.stderr.strip() else ""
        die(f"{' '.join(cmd)} failed (exit {r.returncode}): {last}")
    logits = np.load(out_path).astype(np.float64)[: len(tokens) - 1]   # [n - 1][V]
    mx = logits.max(axis=1, keepdims=True)
    lse = mx[:, 0] + np.log(np.exp(logits - mx).sum(axis=1))
    target = tokens[1:]
    return (lse - logits[np.arange(len(target)), target]) / math.log(2)


def one_model(binary, model, text, threads, device):
    data = np.frombuffer(text, dtype=np.uint8).astype(np.int64)
    full = np.zeros((2, LONG))
    restart = np.full((2, LONG), np.nan)
    starts = window_starts(len(data))
    with tempfile.TemporaryDirectory() as tmp:
        for w, s in enumerate(starts):
            win = data[s:s + LONG + 1]
            full[w] = nll_bits(binary, model, win, threads, device, tmp)
            for off, lo, hi in RESTARTS:
                part = nll_bits(binary, model, win[off:hi + 1], threads, device, tmp)   # [hi - off]
                restart[w, lo:hi] = part[lo - off:]
            print(f"  {os.path.basename(model.rstrip('/'))}: window {w} (start {s}) done",
                  file=sys.stderr, flush=True)
    first = full[:, FIRST[0]:FIRST[1]]
    second = full[:, SECOND[0]:SECOND[1]]
    second_r = restart[:, SECOND[0]:SECOND[1]]
    per_window = []
    for w in range(2):
        per_window.append({
            "start": starts[w],
            "first": float(first[w].mean()), "second": float(second[w].mean()),
            "second_restarted": float(second_r[w].mean())})
    res = {"model": model, "starts": starts,
           "bpb_1024_8191": float(first.mean()), "bpb_8192_16383": float(second.mean()),
           "bpb_8192_16383_restarted": float(second_r.mean()), "per_window": per_window}
    res["check"] = res["bpb_8192_16383"] - res["bpb_1024_8191"]
    res["context"] = res["bpb_8192_16383"] - res["bpb_8192_16383_restarted"]
    res["text"] = res["bpb_8192_16383_restarted"] - res["bpb_1024_8191"]
    # the context effect's standard error over the 8192 paired predictions of each window
    # (paired differences: the text is the same on both sides)
    d = (second - second_r).ravel()
    res["context_se"] = float(d.std(ddof=1) / math.sqrt(d.size))
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", action="append", required=True)
    ap.add_argument("--text", default="data/moby-dick.txt")
    ap.add_argument("--bin", default="build/replayssm")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    ap.add_argument("--json")
    a = ap.parse_args()
    if not os.access(a.bin, os.X_OK):
        die(f"{a.bin}: not an executable (build first, or name it with --bin)")
    try:
        text = open(a.text, "rb").read()
    except OSError as e:
        die(f"{a.text}: {e.strerror}")
    if len(text) < 2 * (LONG + 1):
        die(f"{a.text}: {len(text)} bytes, expected at least {2 * (LONG + 1)}")
    out = [one_model(a.bin, m, text, a.threads, a.device) for m in a.model]
    print("| model | 1024..8191 | 8192..16383 | 8192..16383 restarted | check | context | text |")
    print("|---|---|---|---|---|---|---|")
    for r in out:
        print(f"| {os.path.basename(r['model'].rstrip('/'))} | {r['bpb_1024_8191']:.4f} | "
              f"{r['bpb_8192_16383']:.4f} | {r['bpb_8192_16383_restarted']:.4f} | "
              f"{r['check']:+.4f} | {r['context']:+.4f} +- {r['context_se']:.4f} | "
              f"{r['text']:+.4f} |")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
