#!/usr/bin/env python3
"""Join `replayssm bench e2e` CSV rows and scripts/bench/transformers_decode.py JSON results into one
markdown summary with the issue-18 targets (docs/gpu-runtime.md, "bench e2e"):

  - fixture models: replayssm streams/s at C = 1 (the reference configuration only, the same
    K streams as transformers' batch) over transformers' streams/s; target >= 40 at K = 16
    (issue 18: bf16 GEMMs);
  - 4B shapes: fraction of the byte limit at K = 64; target >= 0.70.

usage: python3 scripts/bench/join_e2e.py BENCH.csv [TRANSFORMERS.json ...] [--out FILE.md]
Standard library only.
"""
import csv
import json
import sys

SPEEDUP_TARGET = 40.0
FRACTION_TARGET = 0.70


def fnum(x):
    try:
        return float(x)
    except (TypeError, ValueError):
        return None


def fmt(x, spec):
    return "-" if x is None or x < 0 else format(x, spec)


def main(argv):
    out = None
    if "--out" in argv:
        i = argv.index("--out")
        out = argv[i + 1]
        argv = argv[:i] + argv[i + 2:]
    if not argv:
        print(__doc__, file=sys.stderr)
        return 2
    rows = list(csv.DictReader(open(argv[0])))
    hf = {}
    for p in argv[1:]:
        try:
            j = json.load(open(p))
        except (OSError, ValueError) as e:
            print(f"join_e2e: {p}: {e}", file=sys.stderr)
            continue
        for r in j.get("runs", []):
            hf[(j["model"], int(r["K"]))] = (r, j)
    lines = []
    w = lines.append
    w("## replayssm bench e2e\n")
    w("| model | source | gemm | K | C | rows | configurations | ms/step | streams/s | "
      "bytes/step (GB) | limit ms | fraction of byte limit | GEMMs alone ms (fp32 / bf16) | "
      "SSM engine alone ms |")
    w("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        gf, gb, ss = fnum(r["gemm_ms_fp32"]), fnum(r["gemm_ms_bf16"]), fnum(r["ssm_ms"])
        w(f"| {r['model']} | {r['source']} | {r['gemm']} | {r['K']} | {r['C']} | {r['rows']} | "
          f"{r['configs']} | {float(r['ms_per_step']):.4f} | {float(r['streams_per_s']):.0f} | "
          f"{float(r['bytes_per_step']) * 1e-9:.4g} | {float(r['limit_ms']):.4f} | "
          f"{float(r['fraction_of_limit']):.3f} | {fmt(gf, '.4f')} / {fmt(gb, '.4f')} | "
          f"{fmt(ss, '.4f')} |")
    w("")
    w("## Against transformers (same model, same K streams, C = 1)\n")
    w("| model | K | replayssm ms/step | transformers ms/step | speed-up | target |")
    w("|---|---|---|---|---|---|")
    verdicts = []
    for r in rows:
        if r["source"] != "checkpoint" or int(r["C"]) != 1:
            continue
        key = (r["model"], int(r["K"]))
        hms = fnum(r.get("transformers_ms_per_step"))  # measured in the same call (--transformers)
        if hms is None and key in hf:
            hms = hf[key][0]["ms_per_step"]
        if hms is None:
            continue
        sp = hms / float(r["ms_per_step"])
        tgt = ""
        if int(r["K"]) == 16:
            ok = sp >= SPEEDUP_TARGET
            tgt = f">= {SPEEDUP_TARGET:.0f}: {'met' if ok else 'MISSED'}"
            verdicts.append(f"{r['model']} K=16 ({r['gemm']}): speed-up {sp:.1f} -> "
                            f"{'met' if ok else 'MISSED'}")
        w(f"| {r['model']} ({r['gemm']}) | {r['K']} | {float(r['ms_per_step']):.4f} | "
          f"{hms:.3f} | {sp:.1f} | {tgt} |")
    if hf:
        any_j = next(iter(hf.values()))[1]
        w(f"\ntransformers {any_j.get('transformers')}, torch {any_j.get('torch')}, "
          f"{any_j.get('device')}, kernels importable {any_j.get('kernels_importable')}")
    w("")
    w("## Verdicts (speed-up at K = 16, C = 1; byte limit at the 4B shapes, K = 64, C = 1)\n")
    for r in rows:
        if r["source"] == "random" and int(r["K"]) == 64 and int(r["C"]) == 1:
            f = float(r["fraction_of_limit"])
            verdicts.append(f"{r['model']} K=64 gemm={r['gemm']}: {f:.3f} of the byte limit -> "
                            f"{'met' if f >= FRACTION_TARGET else 'MISSED'} "
                            f"(target {FRACTION_TARGET:.2f})")
    w("\n".join(f"- {v}" for v in verdicts) if verdicts else "- (no rows)")
    text = "\n".join(lines) + "\n"
    print(text, end="")
    if out:
        with open(out, "w") as fh:
            fh.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
