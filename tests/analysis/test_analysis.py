#!/usr/bin/python3
"""The analysis scripts on a synthetic run file with known numbers (SPEC section 7 layout), and
on a real file that `replayssm run` writes on the toy model (the numbers recomputed here from
its datasets).

    /usr/bin/python3 tests/analysis/test_analysis.py SOURCE_DIR REPLAYSSM

Writes the file, runs every script as a process, and checks the CSV and Markdown numbers against
the values the file was built from; also that bad input ends with one line and exit status 2.
Exit status 0 when everything holds, 1 with one line per failure otherwise.
"""

import csv
import json
import math
import os
import shutil
import struct
import subprocess
import sys
import tempfile

import h5py
import numpy as np

SRC = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else
                      os.path.join(os.path.dirname(__file__), "..", ".."))
AN = os.path.join(SRC, "analysis")
RSSM = sys.argv[2] if len(sys.argv) > 2 else None
PY = "/usr/bin/python3"
K, N = 2, 64
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)


def close(a, b, rel=1e-6):
    return math.isclose(float(a), float(b), rel_tol=rel, abs_tol=1e-12)


# name -> (spec, kl [K, N], first_nonfinite [K])
pos = np.arange(1, N + 1, dtype=np.float64)
CONFIGS = {
    "shared_rtn": ("replay L=16 ckpt=nvfp4", np.full((K, N), 0.5)),
    "shared_sr": ("replay L=16 ckpt=nvfp4/sr", np.full((K, N), 0.25)),
    "shared_sr_L8": ("replay L=8 ckpt=nvfp4/sr", np.tile(1e-3 * pos, (K, 1))),
    "split_L4": ("replay L=4 hp=fp32 lp=nvfp4", np.full((K, N), 0.03)),
    "split_L8": ("replay L=8 hp=fp32 lp=nvfp4", np.full((K, N), 0.02)),
    "split_L16": ("replay L=16 hp=fp32 lp=nvfp4", np.full((K, N), 0.01)),
    "conv_fp8": ("conventional state=fp8", np.full((K, N), 0.1)),
}
# conv_fp8 diverges in sequence 0 at step 40 (position 41): kl = inf from there on
CONFIGS["conv_fp8"][1][0, 40:] = np.inf
FIRST = {name: np.array([40 if name == "conv_fp8" else -1, -1]) for name in CONFIGS}
# sequence 1 of shared_sr is twice sequence 0 (known standard error over sequences)
CONFIGS["shared_sr"][1][1, :] = 0.5


def write_run(path):
    with h5py.File(path, "w") as f:
        f.attrs["model"] = "tests/fixtures/toy"
        f.attrs["steps"] = N
        f.attrs["sequences"] = K
        f.create_dataset("tokens", data=np.zeros((K, N + 1), np.int32))
        f.create_dataset("reference/nll", data=np.ones((K, N), np.float32))
        for name, (spec, kl) in CONFIGS.items():
            g = f.create_group(f"configs/{name}")
            g.attrs["spec"] = spec
            g.create_dataset("kl", data=kl.astype(np.float32), chunks=(1, 16))
            g.create_dataset("nll", data=np.ones((K, N), np.float32))
            g.create_dataset("dp", data=np.zeros((K, N), np.float32))
            g.create_dataset("top1", data=np.ones((K, N), np.uint8))
            g.create_dataset("first_nonfinite", data=FIRST[name].astype(np.int64))


def write_theory(path):
    """A tiny file in replayssm theory's layout: one agreeing and one violated comparison."""
    rows = [("fp8", "rtn", "iid", "conventional", "holds", "fresh", 0.9, 1.0, 1.0, 1),
            ("fp8", "rtn", "fixed", "conventional", "violated", "bias", 0.9, 1.0, 19.0, 0),
            ("fp8", "rtn", "closed", "conventional", "violated", "stall", 0.99, 1.0, 3.0, 0)]
    with h5py.File(path, "w") as f:
        for k, v in dict(tol=0.05, steps=100, nmat=2, dv=4, dk=8, L=16, rho=0.999, seed=0,
                         horizons=8.0).items():
            f.attrs[k] = v
        g = f.create_group("rows")
        for i, name in enumerate(["format", "rounding", "regime", "mode", "assumption", "why"]):
            g.create_dataset(name, data=np.array([r[i].encode() for r in rows], dtype="S16"))
        cols = dict(alpha=[r[6] for r in rows], pred_var=[r[7] for r in rows],
                    meas_var=[r[8] for r in rows], agrees=[r[9] for r in rows],
                    kappa=[float("nan"), float("nan"), 2.0])
        for name in ["alpha", "a_eff", "events", "stationary", "b", "s2", "pred_mean", "lim_mean",
                     "lim_var", "meas_mean", "pred_var", "meas_var", "se_mean", "se_var",
                     "rel_mean", "rel_var", "corr", "corr_se", "elem_s2_cv", "agrees", "resolved",
                     "kappa"]:
            g.create_dataset(name, data=np.array(cols.get(name, [1.0] * len(rows)), np.float64))


def write_csv(path, header, rows):
    with open(path, "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(header)
        w.writerows(rows)


def summaries_test(tmp, th):
    """--summaries on hand-written CSVs with known numbers: 2 sequences x 4096 steps."""
    d = os.path.join(tmp, "hand")
    os.makedirs(d)
    buckets = [(1, 1), (2, 3), (4, 7), (8, 15), (16, 31), (32, 63), (64, 127), (128, 255),
               (256, 511), (512, 1023), (1024, 2047), (2048, 4096)]
    # shared grows: 1e-4 up to the 32..63 bucket, 1e-3 in 1024..2047, 4e-3 in the last (half of
    # that, 2e-3, first reached at 2048: growth 4); split flat 5e-4: ratio 8 at the end
    shared = {lo: (1e-4 if lo < 1024 else 1e-3 if lo == 1024 else 4e-3) for lo, _ in buckets}
    rows = []
    flat = {lo: 5e-4 for lo, _ in buckets}
    for name, spec, vals in (("sh", "replay L=16 ckpt=nvfp4/sr", shared),
                             ("sp", "replay L=16 hp=fp32 lp=nvfp4", flat)):
        for lo, hi in buckets:
            rows.append([name, spec, lo, hi, 2, 2 * (hi - lo + 1), vals[lo], 0, vals[lo],
                         vals[lo], vals[lo], 0])
    write_csv(os.path.join(d, "hand_kl_buckets.csv"),
              ["config", "spec", "bucket_lo", "bucket_hi", "sequences", "steps", "mean_kl",
               "se_kl", "median_kl", "p90_kl", "max_kl", "nonfinite_steps"], rows)
    write_csv(os.path.join(d, "hand_rounding.csv"),
              ["group", "rounding", "config", "spec", "kl_1K", "nonfinite_1K",
               "first_nonfinite", "nonfinite_sequences"],
              [["replay L=16 ckpt=nvfp4", "RTN", "rtn", "replay L=16 ckpt=nvfp4", 0.002, 0, "", 0],
               ["replay L=16 ckpt=nvfp4", "SR", "sh", "replay L=16 ckpt=nvfp4/sr", 0.005, 3,
                700, 1]])
    write_csv(os.path.join(d, "hand_kl_window.csv"),
              ["group", "L", "config", "spec", "mean_kl_all", "se_kl_all", "nonfinite_all",
               "last_bucket_lo", "last_bucket_hi", "mean_kl_last", "se_kl_last",
               "nonfinite_last"],
              [["replay ckpt=nvfp4/sr", 4, "a", "replay L=4 ckpt=nvfp4/sr", 0.01, 0, 0, 2048,
                4096, 0.012, 0, 0],
               ["replay ckpt=nvfp4/sr", 16, "sh", "replay L=16 ckpt=nvfp4/sr", 0.003, 0, 0, 2048,
                4096, 0.004, 0, 0],
               ["replay hp=fp32 lp=nvfp4", 4, "b", "replay L=4 hp=fp32 lp=nvfp4", 0.001, 0, 0,
                2048, 4096, 0.001, 0, 0],
               ["replay hp=fp32 lp=nvfp4", 16, "sp", "replay L=16 hp=fp32 lp=nvfp4", 5e-4, 0, 0,
                2048, 4096, 5e-4, 0, 0]])
    with open(os.path.join(d, "hand.summary.txt"), "w") as f:
        f.write("/gpu/hand.h5: 2 sequences x 4096 steps (shard 0/1), model "
                "experiments/../models/hand-tiny\n")
    out = os.path.join(tmp, "results-hand.md")
    run([os.path.join(AN, "make_results_md.py"), "--theory", th, "--summaries", d, "--models",
         "--out", out])
    t = open(out).read()
    check("`hand` (models/hand-tiny, 2 x 4096)" in t and "experiments/../" not in t,
          "model path normalised and K x N from the summary")
    check("over the last bucket of lengths (2048..4096): shared `replay L=16 ckpt=nvfp4/sr` "
          "0.004 nats, split `replay L=16 hp=fp32 lp=nvfp4` 0.0005 nats, **ratio 8**" in t,
          "ratio at the longest length from the bucket CSV")
    check("within half an octave of 1K (the rounding table): 0.005 / " not in t,
          "no around-length ratio without the split row in the rounding table")
    check("| `replay L=16 ckpt=nvfp4/sr` | 0.001 | 0.004 | 4 | 2048..4096 |" in t,
          "growth row of the shared configuration")
    check("| `replay L=16 hp=fp32 lp=nvfp4` | 0.0005 | 0.0005 | 1 | 1..1 |" in t,
          "growth row of the split configuration")
    check("changes 4 times from the 1024..2047 bucket" in t, "growth in the where-they-differ text")
    # the rounding table rebuilt from the CSV: 3 of the 2 x 1448 steps around 1K non-finite
    # (positions 725..1448: 724 per sequence)
    check("| `replay L=16 ckpt=nvfp4` | SR | 0.005 (3/1448 non-finite) | 700 (1/2 seq.) |" in t,
          "rounding row from the CSV with its non-finite steps")
    check("RTN's KL is below SR's: 1 of 1 at 1K" in t, "RTN/SR pair counted")
    check("from L = 4 to L = 16 (4 times fewer flushes) the shared NVFP4/SR checkpoint's KL "
          "falls 3 times and the split one's 2 times" in t, "window sweep from the CSV")
    # no window CSV, no summary line: still a page
    os.remove(os.path.join(d, "hand_kl_window.csv"))
    os.remove(os.path.join(d, "hand.summary.txt"))
    run([os.path.join(AN, "make_results_md.py"), "--theory", th, "--summaries", d, "--models",
         "--out", out])
    t = open(out).read()
    check("(model not recorded)" in t and "no run with replay configurations that differ only "
          "in L" in t, "summaries without the optional files")
    # bad CSV: one line, exit 2
    with open(os.path.join(d, "hand_kl_buckets.csv"), "a") as f:
        f.write("sh,replay L=16 ckpt=nvfp4/sr,1,1,2,2,oops,0,0,0,0,0\n")
    p = run([os.path.join(AN, "make_results_md.py"), "--theory", th, "--summaries", d,
             "--out", out], expect=2)
    check(p.stderr.count("\n") == 1 and "mean_kl" in p.stderr, f"bad CSV message: {p.stderr!r}")


def bf16_bits(x):
    return (np.array([x], np.float32).view(np.uint32)[0] >> 16).astype(np.uint16)


def write_safetensors(path, tensors):
    """{name: (dtype, array)}: the safetensors layout by hand (header length, JSON, data)."""
    header, blobs, off = {"__metadata__": {"format": "pt"}}, [], 0
    for name, (dtype, arr) in tensors.items():
        raw = (np.array([bf16_bits(v) for v in arr], "<u2").tobytes() if dtype == "BF16"
               else np.asarray(arr, "<f4").tobytes())
        header[name] = {"dtype": dtype, "shape": [len(arr)], "data_offsets": [off, off + len(raw)]}
        blobs.append(raw)
        off += len(raw)
    h = json.dumps(header).encode()
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


def decay_test(tmp, th):
    """ssm_decay.py on a tiny model: alpha0 = exp(-exp(A_log) softplus(dt_bias))."""
    d = os.path.join(tmp, "tiny-model")
    os.makedirs(d)
    a99 = float(np.log(-np.log(0.99) / np.log(2.0)))  # with dt_bias 0: alpha0 = 0.99
    write_safetensors(os.path.join(d, "model.safetensors"), {
        # GDN layer 0 in BF16: A_log 0 and -1 with dt_bias 0 (softplus ln 2): 0.5 and
        # exp(-ln2/e) = 0.774937
        "model.layers.0.linear_attn.A_log": ("BF16", [0.0, -1.0]),
        "model.layers.0.linear_attn.dt_bias": ("BF16", [0.0, 0.0]),
        "model.layers.0.linear_attn.out_proj.weight": ("BF16", [1.0, 2.0]),
        # layer 3 in F32: 0.99 (memory 100) and dt_bias 30 above softplus's threshold: A_log
        # ln(1/30) gives exp(-1)
        "model.layers.3.linear_attn.A_log": ("F32", [a99, float(np.log(1.0 / 30.0))]),
        "model.layers.3.linear_attn.dt_bias": ("F32", [0.0, 30.0]),
    })
    csv_path = os.path.join(tmp, "decay.csv")
    p = run([os.path.join(AN, "ssm_decay.py"), d, "--L", "16", "--out-csv", csv_path])
    rows = read_csv(csv_path)
    got = [(int(r["layer"]), int(r["head"]), float(r["alpha0"]), float(r["memory"]),
            float(r["accum"])) for r in rows]
    want = [(0, 0, 0.5, 2.0, 1.0 / (1.0 - 0.5 ** 32)),
            (0, 1, math.exp(-math.log(2.0) / math.e), None, None),
            (3, 0, 0.99, 100.0, 1.0 / (1.0 - 0.99 ** 32)),
            (3, 1, math.exp(-1.0), 1.0 / (1.0 - math.exp(-1.0)), None)]
    check(len(got) == 4, f"decay rows {len(got)}, expected 4")
    for g, w in zip(got, want):
        ok = g[:2] == w[:2] and close(g[2], w[2], 1e-5) and \
            (w[3] is None or close(g[3], w[3], 1e-4)) and (w[4] is None or close(g[4], w[4], 1e-4))
        check(ok, f"decay row {g} != {w}")
    check("| GDN | 2 x 2 | 0.3679 / 0.6375 / 0.99 | 1.58 / 3.22 / 100 | 1 / 1 / 3.636 | 1 |"
          in p.stdout, f"decay table markdown: {p.stdout[:400]!r}")
    check("| 3 | 2 | 1.58 / 50.8 / 100 | 1 / 2.318 / 3.636 |" in p.stdout, "decay per layer")
    out = os.path.join(tmp, "results-decay.md")
    run([os.path.join(AN, "make_results_md.py"), "--theory", th, "--models", d, "--out", out])
    t = open(out).read()
    # memories 2, 4.44, 100, 1.58: min 1.58, median (2 + 4.44)/2 = 3.22, max 100
    check("| 1.58 / 3.22 / 100 |" in t, "decay summary row in results.md")
    check("| 2 x 2 |" in t and "not available here" in t, "layers x heads, paper models' note")
    bad = os.path.join(tmp, "bad.safetensors")
    with open(bad, "wb") as f:
        f.write(struct.pack("<Q", 5) + b"{oops")
    p = run([os.path.join(AN, "ssm_decay.py"), bad], expect=2)
    check(p.stderr.count("\n") == 1 and "not JSON" in p.stderr, f"bad safetensors: {p.stderr!r}")


def real_run_test(tmp):
    """replayssm's own output through the scripts: every bucket mean, window mean and rounding
    label recomputed from the file's datasets with numpy."""
    if RSSM is None:
        check(False, "no replayssm binary given (second argument)")
        return
    rng = np.random.default_rng(5)
    toks = os.path.join(tmp, "real_tokens.npy")
    np.save(toks, rng.integers(0, 256, 400).astype(np.int32))
    h5 = os.path.join(tmp, "real.h5")
    cfgs = {"rtn": "replay L=16 ckpt=nvfp4", "sr": "replay L=16 ckpt=nvfp4/sr",
            "split8": "replay L=8 hp=fp32 lp=nvfp4", "split16": "replay L=16 hp=fp32 lp=nvfp4",
            "conv": "conventional state=fp8/sr"}
    args = [RSSM, "run", "--model", "toy:gdn", "--tokens", toks, "--steps", "64", "--sequences",
            "2", "--seed", "3", "--out", h5, "--quiet"]
    for name, spec in cfgs.items():
        args += ["--config", f"{spec} name={name}"]
    p = subprocess.run(args, capture_output=True, text=True)
    check(p.returncode == 0, f"replayssm run: exit {p.returncode}: {p.stderr.strip()[:300]}")
    if p.returncode != 0:
        return
    with h5py.File(h5, "r") as f:
        kl = {name: f[f"configs/{name}/kl"][()].astype(np.float64) for name in cfgs}
    out = os.path.join(tmp, "real_out")
    run([os.path.join(AN, "plot_kl_length.py"), h5, "--out-dir", out])
    rows = read_csv(os.path.join(out, "real_kl_buckets.csv"))
    check(len(rows) == len(cfgs) * 6, f"real: bucket rows {len(rows)}")
    for r in rows:
        lo, hi = int(r["bucket_lo"]), int(r["bucket_hi"])
        want = kl[r["config"]][:, lo - 1:hi].mean()
        check(close(r["mean_kl"], want, 1e-5), f"real {r['config']} bucket {lo}: mean "
              f"{r['mean_kl']}, from the datasets {want}")
        if lo >= 4:  # the first steps of a conventional state may round nothing yet
            check(float(r["mean_kl"]) > 0, f"real {r['config']} bucket {lo}: no KL")
    run([os.path.join(AN, "plot_kl_window.py"), h5, "--out-dir", out])
    w = {r["config"]: r for r in read_csv(os.path.join(out, "real_kl_window.csv"))}
    check({"split8", "split16"} <= set(w), f"real: window configs {sorted(w)}")
    for name in w:
        check(close(w[name]["mean_kl_all"], kl[name].mean(), 1e-5),
              f"real {name}: window mean {w[name]['mean_kl_all']} vs {kl[name].mean()}")
    run([os.path.join(AN, "table_rounding.py"), h5, "--out-dir", out, "--lengths", "8,32"])
    t = {r["config"]: r for r in read_csv(os.path.join(out, "real_rounding.csv"))}
    check(t["rtn"]["rounding"] == "RTN" and t["sr"]["rounding"] == "SR" and
          t["conv"]["rounding"] == "SR", "real: rounding labels")
    check(t["rtn"]["group"] == t["sr"]["group"], "real: RTN and SR share a group")


def run(args, expect=0):
    p = subprocess.run([PY] + args, capture_output=True, text=True)
    check(p.returncode == expect, f"{' '.join(args[:1])}: exit {p.returncode}, expected {expect}: "
          f"{p.stderr.strip()[:300]}")
    return p


def read_csv(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def why_clause_test():
    """The results page's explanation of a shared curve that saturates early names the delta rule
    only for a GDN model (session 26: it gave the GDN reason for the Mamba-2 model too)."""
    sys.path.insert(0, AN)
    import make_results_md as mr
    saved = mr.sr_pair, mr.last_ratio, mr.growth_of, mr.half_level
    # every model: ratio 20, shared growth 1.2 (< 3), half its level by 1024..2047
    mr.sr_pair = lambda r: ("sh", "sp")
    mr.last_ratio = lambda r, sh, sp: (0.002, 0.0001, 20.0)
    mr.growth_of = lambda r, sh: 1.2
    mr.half_level = lambda r, sh: {"lo": 1024, "hi": 2047}
    try:
        t = mr.why_clause({"m2": None, "gdn": None, "unknown": None}, "",
                          {"m2": "Mamba-2", "gdn": "GDN"})
    finally:
        mr.sr_pair, mr.last_ratio, mr.growth_of, mr.half_level = saved
    part = {p.lstrip("`").split("`")[0]: p for p in t.split("; `")}
    m2, gdn = part.get("m2", ""), part.get("gdn", "")
    check("delta rule multiplies" not in m2 and "no delta rule" in m2,
          f"Mamba-2 saturation reason: {m2!r}")
    check("delta rule multiplies" in gdn, f"GDN saturation reason: {gdn!r}")
    check("level off" in part.get("unknown", "") and "delta rule" in part.get("unknown", ""),
          f"saturation reason without weights: {part.get('unknown')!r}")


def main():
    tmp = tempfile.mkdtemp(prefix="rssm-analysis-")
    h5 = os.path.join(tmp, "synth.h5")
    out = os.path.join(tmp, "out")
    write_run(h5)

    # --- KL against length: per-bucket CSV -----------------------------------------------------
    run([os.path.join(AN, "plot_kl_length.py"), h5, "--out-dir", out])
    check(os.path.getsize(os.path.join(out, "synth_kl_length.png")) > 1000, "kl_length.png missing")
    rows = read_csv(os.path.join(out, "synth_kl_buckets.csv"))
    b = {(r["config"], int(r["bucket_lo"])): r for r in rows}
    check(len(rows) == len(CONFIGS) * 6, f"bucket rows {len(rows)}, expected {len(CONFIGS) * 6}")
    check(close(b[("shared_rtn", 16)]["mean_kl"], 0.5), "shared_rtn bucket 16 mean != 0.5")
    # 1e-3 * position over positions 16..31: mean position 23.5
    check(close(b[("shared_sr_L8", 16)]["mean_kl"], 0.0235, 1e-5),
          f"power law bucket 16 mean {b[('shared_sr_L8', 16)]['mean_kl']} != 0.0235")
    # the lone position 64 joins [32, 63]: the last bucket is [32, 64], mean position 48
    check(b[("shared_sr_L8", 32)]["bucket_hi"] == "64", "last bucket [32, 64]")
    check(close(b[("shared_sr_L8", 32)]["mean_kl"], 0.048, 1e-5), "last bucket mean 0.048")
    # sequences 0.25 and 0.5: mean 0.375, standard error 0.125
    check(close(b[("shared_sr", 4)]["mean_kl"], 0.375), "shared_sr mean != 0.375")
    se = b[("shared_sr", 4)]["se_kl"]
    check(close(se, 0.125), f"shared_sr se {se}")
    # conv_fp8: steps 40..63 of sequence 0 are inf, all inside bucket [32, 64] (steps 31..63)
    check(b[("conv_fp8", 32)]["nonfinite_steps"] == "24",
          f"conv_fp8 non-finite in bucket 32: {b[('conv_fp8', 32)]['nonfinite_steps']}")
    check(close(b[("conv_fp8", 32)]["mean_kl"], 0.1, 1e-6), "conv_fp8 finite mean != 0.1")

    # --- KL against L ---------------------------------------------------------------------------
    run([os.path.join(AN, "plot_kl_window.py"), h5, "--out-dir", out])
    check(os.path.isfile(os.path.join(out, "synth_kl_window.png")), "kl_window.png missing")
    w = read_csv(os.path.join(out, "synth_kl_window.csv"))
    split = {int(r["L"]): float(r["mean_kl_all"]) for r in w
             if r["group"] == "replay hp=fp32 lp=nvfp4"}
    check(sorted(split) == [4, 8, 16] and
          all(close(split[k], v, 1e-6) for k, v in {4: 0.03, 8: 0.02, 16: 0.01}.items()),
          f"split group by L {split}")
    groups = sorted({r["group"] for r in w})
    check(groups == ["replay ckpt=nvfp4", "replay ckpt=nvfp4/sr", "replay hp=fp32 lp=nvfp4"],
          f"window groups {groups}")
    check(not any(r["config"] == "conv_fp8" for r in w), "conventional has no L")

    # --- RTN vs SR table ------------------------------------------------------------------------
    run([os.path.join(AN, "table_rounding.py"), h5, "--out-dir", out, "--lengths", "8,32,64,128"])
    t = read_csv(os.path.join(out, "synth_rounding.csv"))
    hdr = list(t[0].keys())
    check("kl_128" not in hdr and "kl_64" in hdr, f"length columns {hdr}: 128 is beyond N = 64")
    byc = {r["config"]: r for r in t}
    check(byc["shared_rtn"]["rounding"] == "RTN" and byc["shared_sr"]["rounding"] == "SR",
          "rounding labels")
    check(byc["shared_rtn"]["group"] == byc["shared_sr"]["group"] == "replay L=16 ckpt=nvfp4",
          "RTN and SR share a group")
    check(byc["split_L16"]["rounding"] == "RTN", "split lp=nvfp4 (hp fp32 exact) is RTN")
    # window around 32: positions 23..45 (steps 22..44); sequence 0 inf at steps 40..44: 5
    nf = byc["conv_fp8"]["nonfinite_32"]
    check(nf == "5", f"non-finite around 32: {nf}, expected 5")
    check(close(byc["conv_fp8"]["kl_32"], 0.1, 1e-6), "finite mean around 32")
    check(byc["conv_fp8"]["first_nonfinite"] == "41" and
          byc["conv_fp8"]["nonfinite_sequences"] == "1",
          "first non-finite position 41 in 1 sequence")
    # window around 8: positions 6..11 -> mean of 1e-3 * p = 8.5e-3
    k8 = byc["shared_sr_L8"]["kl_8"]
    check(close(k8, 8.5e-3, 1e-5), f"power law around 8: {k8}, expected 8.5e-3")
    md = open(os.path.join(out, "synth_rounding.md")).read()
    check("| `replay L=16 ckpt=nvfp4` | RTN | 0.5 | 0.5 | 0.5 | none |" in md,
          "Markdown row of shared_rtn")
    check("0.1 (5/" in md, "Markdown reports the non-finite steps around 32")

    # --- theory plot and results page --------------------------------------------------------
    th = os.path.join(tmp, "theory.h5")
    write_theory(th)
    run([os.path.join(AN, "plot_theory.py"), th, "--out-dir", out])
    tmd = open(os.path.join(out, "theory.md")).read()
    check("| `fp8` | 1/1 | 0/1 (violated) | 0/1 (violated) |" in tmd, "theory.md pivot row")
    check("| `fp8` | fixed | conventional | 19 | 0.9 |" in tmd, "theory.md violated ratio")
    res = os.path.join(tmp, "results.md")
    run([os.path.join(AN, "make_results_md.py"), "--theory", th, "--runs", h5, "--out", res])
    text = open(res).read()
    check("0.136 -> 0.0038" in text and "not yet measured" in text, "results.md paper numbers")
    # the fixture's shared NVFP4/SR against split at L=16 over its last bucket (32..64): the two
    # sequences 0.25 and 0.5 give 0.375, split 0.01: ratio 37.5
    check("**ratio 37.5**" in text, "results.md headline ratio of the synthetic run")
    check("| `fp8` | 3* (+2) |" in text, "results.md closed-loop row")

    # --- the same page from the CSV summaries of the same run -----------------------------------
    # the scripts' CSVs of synth.h5 plus a `replayssm summary` first line: the page's body (from
    # the first section on) must be the same text as from the HDF5 file
    sdir = os.path.join(tmp, "summ")
    for script in ("plot_kl_length.py", "plot_kl_window.py", "table_rounding.py"):
        run([os.path.join(AN, script), h5, "--out-dir", sdir])
    with open(os.path.join(sdir, "synth.summary.txt"), "w") as f:
        f.write(f"/elsewhere/synth.h5: {K} sequences x {N} steps (shard 0/1), model "
                "tests/fixtures/toy\n")
    res2 = os.path.join(tmp, "results-summaries.md")
    run([os.path.join(AN, "make_results_md.py"), "--theory", th, "--summaries", sdir,
         "--out", res2])
    body = lambda t: t[t.index("\n## "):] if "\n## " in t else ""  # noqa: E731
    check(body(text) and body(open(res2).read()) == body(text),
          "results.md from --summaries differs from the page from --runs")
    summaries_test(tmp, th)
    why_clause_test()
    decay_test(tmp, th)
    real_run_test(tmp)

    # --- bad input: one line, exit 2 -------------------------------------------------------------
    bad = os.path.join(tmp, "bad.h5")
    with h5py.File(bad, "w") as f:
        f.create_group("configs/x").create_dataset("kl", data=np.zeros((1, 4), np.float32))
    p = run([os.path.join(AN, "table_rounding.py"), bad, "--out-dir", out], expect=2)
    check(p.stderr.count("\n") == 1 and "spec" in p.stderr, f"one-line error: {p.stderr!r}")
    p = run([os.path.join(AN, "plot_kl_length.py"), os.path.join(tmp, "nope.h5"), "--out-dir", out],
            expect=2)
    check("no such file" in p.stderr, f"missing file message: {p.stderr!r}")

    # --- determinism: the same input gives the same PNG bytes -----------------------------------
    out2 = os.path.join(tmp, "out2")
    run([os.path.join(AN, "plot_kl_length.py"), h5, "--out-dir", out2])
    a = open(os.path.join(out, "synth_kl_length.png"), "rb").read()
    b2 = open(os.path.join(out2, "synth_kl_length.png"), "rb").read()
    check(a == b2, "PNG output is not byte-for-byte repeatable")

    for f in failures:
        print(f"FAIL: {f}")
    if not failures:
        shutil.rmtree(tmp)
    else:
        print(f"test_analysis: files kept in {tmp}")
    print(f"test_analysis: {len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
