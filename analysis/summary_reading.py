#!/usr/bin/env python3
"""One paragraph that reads a `replayssm summary --format json` output in words.

    replayssm summary --format json RUN.h5 | python3 analysis/summary_reading.py

Standard library only: any python3 runs it (the quickstart prints its paragraph with it).
"""
import json
import sys
import textwrap


def is_control(spec):
    """Every stored format is fp32: the harness's own floor."""
    fmts = [w.split("=", 1)[1] for w in spec.split()[1:]
            if w.split("=", 1)[0] in ("state", "ckpt", "hp", "lp")]
    return bool(fmts) and all(f.split("/")[0].split("@")[0] == "fp32" for f in fmts)


def pm(e, fmt="{:.2e}"):
    v, err = e["value"], e["error"]
    return fmt.format(v) + ("" if err is None else " +- " + "{:.1e}".format(err))


def reading(js):
    cfgs = js["configurations"]
    ref = js["reference"]
    out = [f"The fp32 reference predicts the text at {ref['mean_nll']['value']:.3f} nats/token "
           f"(perplexity {ref['ppl']['value']:.3f}); KL is in nats per token, and every +- is a "
           f"standard error over {js['error_units']['description']}."]
    for c in cfgs:
        if is_control(c["spec"]):
            out.append(f"The control '{c['name']}' (fp32 checkpoints) differs from the reference "
                       f"by {pm(c['mean_kl'])} nats/token: that is the harness's floor (the same "
                       "fp32 arithmetic, reassociated), so a configuration far above it measures "
                       "its number format, not the harness.")
    by = {c["name"]: c for c in cfgs}
    for x in js["comparisons"]:
        a, b = by[x["a"]], by[x["b"]]
        out.append(f"Storing the checkpoint in one shared low-precision copy ('{a['name']}', "
                   f"{pm(a['mean_kl'])}) costs {x['kl_ratio']:.3g} times the KL of the split "
                   f"high/low-precision copy ('{b['name']}', {pm(b['mean_kl'])}; 95% interval "
                   f"{x['ci95_low']:.3g} to {x['ci95_high']:.3g}).")
    rest = [c for c in cfgs if not is_control(c["spec"])]
    if rest:
        worst = max(rest, key=lambda c: c["mean_kl"]["value"] or 0.0)
        best = min(rest, key=lambda c: c["mean_kl"]["value"] or 0.0)
        out.append(f"Across the low-precision configurations the mean KL runs from "
                   f"{best['mean_kl']['value']:.2e} ('{best['name']}') to "
                   f"{worst['mean_kl']['value']:.2e} ('{worst['name']}'), which changes the "
                   f"perplexity by a factor of {pm(worst['ppl_ratio'], '{:.5f}')} at most and "
                   f"keeps the reference's top-1 token on "
                   f"{100 * worst['top1_agreement']['value']:.2f}% of the steps or more.")
    nf = [c["name"] for c in cfgs if c["nonfinite_steps"]]
    if nf:
        out.append(f"Went non-finite (steps left out): {', '.join(nf)}.")
    return " ".join(out)


def main():
    try:
        js = json.load(sys.stdin)
    except json.JSONDecodeError as e:
        sys.exit(f"summary_reading.py: stdin is not JSON ({e}); expected replayssm summary "
                 "--format json output")
    print(textwrap.fill(reading(js), width=98))


if __name__ == "__main__":
    main()
