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
            out.append(f"The control ('{c['name']}', fp32 checkpoints) differs from the reference "
                       f"by {pm(c['mean_kl'])} nats/token: that is the harness's floor (the same "
                       "fp32 arithmetic, reassociated), so a configuration far above it measures "
                       "its number format, not the harness.")
    by = {c["name"]: c for c in cfgs}
    against = {}
    for x in js["comparisons"]:
        against.setdefault(x["a"], []).append(x)
    for a, xs in against.items():
        parts = [f"{x['kl_ratio']:.3g} times that of '{x['b']}' ({pm(by[x['b']]['mean_kl'])}; 95% "
                 f"interval {x['ci95_low']:.3g} to {x['ci95_high']:.3g})" for x in xs]
        out.append(f"The mean KL of '{a}' ({pm(by[a]['mean_kl'])}) is " + " and ".join(parts) + ".")
    rest = [c for c in cfgs if not is_control(c["spec"])]
    if rest:
        lo = min(rest, key=lambda c: c["mean_kl"]["value"] or 0.0)
        hi = max(rest, key=lambda c: c["mean_kl"]["value"] or 0.0)
        ppl = max(rest, key=lambda c: abs((c["ppl_ratio"]["value"] or 1.0) - 1.0))
        top = min(rest, key=lambda c: c["top1_agreement"]["value"] or 0.0)
        out.append(f"Across the low-precision configurations the mean KL runs from "
                   f"{lo['mean_kl']['value']:.2e} ('{lo['name']}') to {hi['mean_kl']['value']:.2e} "
                   f"('{hi['name']}'); the perplexity moves by a factor of at most "
                   f"{pm(ppl['ppl_ratio'], '{:.5f}')} ('{ppl['name']}'), and the reference's top-1 "
                   f"token is kept on {100 * top['top1_agreement']['value']:.2f}% of the steps or "
                   f"more ('{top['name']}' lowest).")
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
