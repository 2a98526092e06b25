#!/usr/bin/env python3
"""`replayssm summary --format json|csv` against numpy on the run file's own datasets.

Runs two small toy experiments (3 sequences: errors over blocks of steps; 12 sequences: over the
sequences), then recomputes every number of the JSON summary from the HDF5 datasets with the
textbook formulas: means over all steps, standard errors as the standard deviation of the unit
means over sqrt(U) (the units here are equally long), numpy's linear percentiles, delta-method
errors for PPL, PPL ratio and difference, RMS dp and the ratio of two mean KLs. Also checks that
every string attribute reads as str and every dataset carries units and dimension names.

usage: test_summary_numbers.py REPLAYSSM_BINARY
"""
import json
import math
import os
import subprocess
import sys
import tempfile

try:
    import h5py
    import numpy as np
except ImportError as e:  # pragma: no cover
    sys.exit(f"test_summary_numbers: {e}; run it with Debian's /usr/bin/python3 "
             "(apt-get install python3-numpy python3-h5py)")

# t quantiles (0.975) for the intervals: U - 1 = 14 and 11
T975 = {14: 2.1447866879169273, 11: 2.200985160082949}

FAILS = []


def check(ok, what):
    if not ok:
        FAILS.append(what)
        print("FAIL:", what)


def close(a, b, what, rel=1e-9, abs_=1e-15):
    ok = (a is None and b is None) or (a is not None and b is not None and
                                       abs(a - b) <= abs_ + rel * max(abs(a), abs(b)))
    check(ok, f"{what}: summary {a!r} vs numpy {b!r}")


def se_units(values, unit, U):
    """mean over all steps and the standard error of the mean of U equal units"""
    means = np.array([values[unit == u].mean() for u in range(U)])
    return values.mean(), means.std(ddof=1) / math.sqrt(U), means


def expected(f, name, K, N):
    g = f["configs"][name]
    kl = g["kl"][()].astype(np.float64)
    nll = g["nll"][()].astype(np.float64)
    dp = g["dp"][()].astype(np.float64)
    top1 = g["top1"][()].astype(np.float64)
    ref = f["reference/nll"][()].astype(np.float64)
    assert np.all(np.isfinite(kl)), "the test runs have no non-finite steps"
    if K >= 10:
        m = 1
    else:
        m = max(1, min(-(-16 // K), N // 64))
    U = K * m
    unit = np.arange(K)[:, None] * m + (np.arange(N)[None, :] * m) // N
    unit = unit.ravel()
    out = {"U": U, "m": m, "unit": unit}
    kl_, nll_, dp_, top_, ref_ = (a.ravel() for a in (kl, nll, dp, top1, ref))
    out["kl"], out["kl_se"], out["kl_units"] = se_units(kl_, unit, U)
    a, sa, ma = se_units(nll_, unit, U)
    b, sb, mb = se_units(ref_, unit, U)
    out["nll"], out["nll_se"] = a, sa
    out["ppl"], out["ppl_se"] = math.exp(a), math.exp(a) * sa
    dn, sdn, _ = se_units(nll_ - ref_, unit, U)
    out["ln"], out["ln_se"] = dn, sdn
    out["ratio"], out["ratio_se"] = math.exp(dn), math.exp(dn) * sdn
    lin = math.exp(a) * (ma - a) - math.exp(b) * (mb - b)
    out["diff"], out["diff_se"] = math.exp(a) - math.exp(b), lin.std(ddof=1) / math.sqrt(U)
    out["dp"], out["dp_se"], _ = se_units(dp_, unit, U)
    m2, sm2, _ = se_units(dp_ * dp_, unit, U)
    out["rms"], out["rms_se"] = math.sqrt(m2), sm2 / (2 * math.sqrt(m2))
    out["top1"], out["top1_se"], _ = se_units(top_, unit, U)
    qs = [0.0, 0.001, 0.01, 0.05, 0.10, 0.50, 0.90, 0.95, 0.99, 0.999, 1.0]
    out["pct"] = dict(zip(["min", "p0.1", "p1", "p5", "p10", "median", "p90", "p95", "p99",
                           "p99.9", "max"], np.quantile(kl_, qs)))
    buckets = []
    b = 0
    while (2 << b) - 1 <= N:
        lo, hi = (1 << b) - 1, (2 << b) - 1
        per_seq = kl[:, lo:hi].mean(axis=1)
        buckets.append((kl[:, lo:hi].mean(), per_seq.std(ddof=1) / math.sqrt(K)))
        b += 1
    out["buckets"] = buckets
    return out


def check_strings(f, path):
    def visit(name, obj):
        for k, v in obj.attrs.items():
            if isinstance(v, (bytes, np.bytes_)):
                check(False, f"{path}:{name or '/'} attribute {k} reads as bytes")
        if isinstance(obj, h5py.Dataset):
            check(isinstance(obj.attrs.get("units"), str), f"{name}: units attribute")
            dims = obj.attrs.get("dimensions")
            check(dims is not None and len(dims) == obj.ndim and all(isinstance(x, str) for x in dims),
                  f"{name}: dimensions attribute {dims!r}")
    visit("", f)
    f.visititems(visit)
    for k in ("created", "host", "experiment", "model", "tokens"):
        check(isinstance(f.attrs.get(k), str), f"root attribute {k} is a str")
    check(isinstance(f.attrs.get("wall_seconds"), (float, np.floating)), "root attribute wall_seconds")


def run_case(binary, tmp, K, N):
    toks = os.path.join(tmp, "t.npy")
    rng = np.random.default_rng(5)
    np.save(toks, rng.integers(0, 256, size=40000).astype(np.int32))
    ini = os.path.join(tmp, f"e{K}.ini")
    with open(ini, "w") as fh:
        fh.write(f"model = toy:gdn\ntokens = t.npy\nsequences = {K}\nsteps = {N}\nseed = 2\n"
                 "block = 64\n[config control]\nspec = replay L=16 ckpt=fp32\n"
                 "[config shared]\nspec = replay L=16 ckpt=nvfp4/sr\n"
                 "[config split]\nspec = replay L=16 hp=fp32 lp=nvfp4\n"
                 "[config conv]\nspec = conventional state=fp8/sr\n")
    out = os.path.join(tmp, f"e{K}.h5")
    subprocess.run([binary, "run", ini, "--out", out, "--quiet", "--force"], check=True)
    js = json.loads(subprocess.run([binary, "summary", "--format", "json", out], check=True,
                                   capture_output=True, text=True).stdout)
    cmpjs = json.loads(subprocess.run([binary, "summary", "--format", "json", "--compare", "conv",
                                       "split", out], check=True, capture_output=True,
                                      text=True).stdout)
    csv = subprocess.run([binary, "summary", "--format", "csv", out], check=True,
                         capture_output=True, text=True).stdout.splitlines()
    text = subprocess.run([binary, "summary", out], check=True, capture_output=True,
                          text=True).stdout
    with h5py.File(out, "r") as f:
        check_strings(f, out)
        ref = f["reference/nll"][()].astype(np.float64).ravel()
        cfgs = {c["name"]: c for c in js["configurations"]}
        check(list(cfgs) == ["control", "shared", "split", "conv"], f"configurations {list(cfgs)}")
        exp = {n: expected(f, n, K, N) for n in cfgs}
    U = exp["control"]["U"]
    eu = js["error_units"]
    check(eu["count"] == U and eu["kind"] == ("sequences" if K >= 10 else "blocks"),
          f"error units {eu}")
    check(eu["steps_per_unit"] == N // exp["control"]["m"], f"steps per unit {eu}")
    unit = exp["control"]["unit"]
    rm = np.array([ref[unit == u].mean() for u in range(U)])
    close(js["reference"]["mean_nll"]["value"], ref.mean(), "reference nll")
    close(js["reference"]["mean_nll"]["error"], rm.std(ddof=1) / math.sqrt(U), "reference nll error",
          rel=1e-7)
    close(js["reference"]["ppl"]["value"], math.exp(ref.mean()), "reference ppl")
    for n, c in cfgs.items():
        e = exp[n]
        check(c["steps"] == K * N and c["nonfinite_steps"] == 0, f"{n} steps")
        check(c["mean_kl"]["unit"] == "nats/token", f"{n} kl unit")
        for key, ev, ee in [("mean_kl", "kl", "kl_se"), ("mean_nll", "nll", "nll_se"),
                            ("ppl", "ppl", "ppl_se"), ("ppl_ratio", "ratio", "ratio_se"),
                            ("ln_ppl_ratio", "ln", "ln_se"), ("ppl_difference", "diff", "diff_se"),
                            ("dp_mean", "dp", "dp_se"), ("dp_rms", "rms", "rms_se"),
                            ("top1_agreement", "top1", "top1_se")]:
            close(c[key]["value"], e[ev], f"K={K} {n} {key}", rel=1e-9, abs_=1e-14)
            close(c[key]["error"], e[ee], f"K={K} {n} {key} error", rel=1e-7, abs_=1e-16)
        for p, v in e["pct"].items():
            close(c["kl_percentiles"][p], v, f"K={K} {n} kl {p}", rel=1e-12, abs_=0)
        check(len(c["kl_by_position"]) == len(e["buckets"]), f"{n} full buckets only")
        for i, (bv, be) in enumerate(e["buckets"]):
            close(c["kl_by_position"][i]["value"], bv, f"{n} bucket {i}")
            close(c["kl_by_position"][i]["error"], be, f"{n} bucket {i} error", rel=1e-7)
    # the default comparison (shared against split: same L and low format) and --compare
    comps = {(c["a"], c["b"]): c for c in js["comparisons"]}
    check(list(comps) == [("shared", "split")], f"default comparisons {list(comps)}")
    (c,) = cmpjs["comparisons"]
    check((c["a"], c["b"]) == ("conv", "split"), "--compare pair")
    ea, eb = exp["conv"], exp["split"]
    close(c["kl_ratio"], ea["kl"] / eb["kl"], "kl ratio")
    z = ea["kl_units"] / ea["kl"] - eb["kl_units"] / eb["kl"]
    se_log = z.std(ddof=1) / math.sqrt(U)
    close(c["se_ln_ratio"], se_log, "se of ln ratio", rel=1e-7)
    q = T975[U - 1]
    close(c["ci95_low"], c["kl_ratio"] * math.exp(-q * se_log), "interval low", rel=1e-7)
    close(c["ci95_high"], c["kl_ratio"] * math.exp(q * se_log), "interval high", rel=1e-7)
    # CSV: one header and one row per configuration, the same mean KL
    check(len(csv) == 5 and csv[0].startswith("name,spec,steps"), f"csv rows {len(csv)}")
    col = csv[0].split(",").index("kl_mean_nats")
    close(float(csv[1].split(",")[col]), exp["control"]["kl"], "csv mean KL", rel=1e-15)
    # text: the units, the error units and the comparison are stated; about 100 columns
    check("nats" in text and eu["description"] in text and "shared / split" in text, "text says it")
    wide = [ln for ln in text.splitlines() if len(ln) > 104]
    check(not wide, f"text lines over 104 columns: {wide[:2]}")


def main():
    binary = sys.argv[1]
    with tempfile.TemporaryDirectory() as tmp:
        run_case(binary, tmp, 3, 320)   # 15 blocks of 64 steps
        run_case(binary, tmp, 12, 96)   # 12 sequences
    if FAILS:
        sys.exit(f"test_summary_numbers: {len(FAILS)} failures")
    print("test_summary_numbers: ok")


if __name__ == "__main__":
    main()
