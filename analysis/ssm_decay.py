#!/usr/bin/python3
"""How long each SSM head of a model remembers, from its weights alone (zero input).

    /usr/bin/python3 analysis/ssm_decay.py MODEL [MODEL ...] [--L 16] [--out-csv FILE]

MODEL is a model directory holding model.safetensors (or a .safetensors file). For every SSM layer
(a tensor named ...A_log with a ...dt_bias beside it: Mamba-2 mixers and Gated DeltaNet layers
alike) and head h, the decay per token at zero input

    alpha0 = exp(-exp(A_log[h]) * softplus(dt_bias[h]))      (softplus with threshold 20)

(Mamba-2: dA = exp(softplus(dt + dt_bias) * -exp(A_log)), src/model/layer_mamba2.c; GDN:
alpha = exp(-exp(A_log) * softplus(a + dt_bias)), src/model/layer_gdn.c; both with the input
term dt or a set to 0), its memory 1/(1 - alpha0) in tokens, and the factor by which a shared
checkpoint flushed every L tokens accumulates its roundings over a single one (Appendix C.6:
s2/(1 - alpha^2L) against s2), 1/(1 - alpha0^(2L)). The input-dependent dt (Mamba-2) or a (GDN)
moves every step's decay, so these are an indication of the heads' time scales, not a bound.

The safetensors file is read with numpy alone: 8-byte little-endian header length, a JSON header
{name: {dtype, shape, data_offsets}}, then the raw little-endian data (BF16 becomes fp32 by
putting its 16 bits in the high half of a uint32). Prints a Markdown summary per model; --out-csv
writes one row per layer and head.
"""

import argparse
import json
import math
import os
import re
import struct
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import rssm_common as rc  # noqa: E402

DTYPES = {"F32": np.dtype("<f4"), "F16": np.dtype("<f2"), "F64": np.dtype("<f8")}


def safetensors_path(model):
    p = os.path.join(model, "model.safetensors") if os.path.isdir(model) else model
    if not os.path.isfile(p):
        raise rc.InputError(f"{model}: no model.safetensors (expected a model directory or a "
                            ".safetensors file)")
    return p


def read_safetensors(path, want):
    """{name: float32 array} for the tensors whose name satisfies want(name)."""
    try:
        with open(path, "rb") as f:
            raw = f.read(8)
            if len(raw) != 8:
                raise rc.InputError(f"{path}: shorter than the 8-byte header length")
            n = struct.unpack("<Q", raw)[0]
            try:
                header = json.loads(f.read(n))
            except ValueError:
                raise rc.InputError(f"{path}: the {n}-byte header is not JSON (not safetensors)")
            base = 8 + n
            out = {}
            for name, info in header.items():
                if name == "__metadata__" or not want(name):
                    continue
                try:
                    dtype, shape, (a, b) = info["dtype"], info["shape"], info["data_offsets"]
                except (KeyError, TypeError, ValueError):
                    raise rc.InputError(f"{path}: header entry {name} lacks dtype, shape or "
                                        "data_offsets")
                f.seek(base + a)
                buf = f.read(b - a)
                count = int(np.prod(shape)) if shape else 1
                if dtype == "BF16":
                    if len(buf) != 2 * count:
                        raise rc.InputError(f"{path}: {name} has {len(buf)} bytes for {shape} BF16")
                    u = np.frombuffer(buf, dtype="<u2").astype(np.uint32) << 16
                    arr = u.view(np.float32)
                elif dtype in DTYPES:
                    dt = DTYPES[dtype]
                    if len(buf) != dt.itemsize * count:
                        raise rc.InputError(f"{path}: {name} has {len(buf)} bytes for {shape} "
                                            f"{dtype}")
                    arr = np.frombuffer(buf, dtype=dt).astype(np.float32)
                else:
                    raise rc.InputError(f"{path}: {name} has dtype {dtype} (expected BF16, F16, "
                                        "F32 or F64)")
                out[name] = arr.reshape(shape)
    except OSError as e:
        raise rc.InputError(f"{path}: cannot read ({e.strerror})")
    return out


def softplus(x):
    """torch's softplus with threshold 20 (x above it is returned as it is)."""
    x = np.asarray(x, dtype=np.float64)
    return np.where(x > 20.0, x, np.log1p(np.exp(np.minimum(x, 20.0))))


def layer_index(name):
    m = re.search(r"layers\.(\d+)\.", name)
    return int(m.group(1)) if m else -1


def kind_of(name):
    if "linear_attn" in name:
        return "GDN"
    if "mixer" in name:
        return "Mamba-2"
    return "SSM"


def head_decays(model, L):
    """[dict(layer, kind, head, A_log, dt_bias, alpha0, memory, accum)] for every SSM head."""
    path = safetensors_path(model)
    t = read_safetensors(path, lambda n: n.endswith("A_log") or n.endswith("dt_bias"))
    rows = []
    for name in sorted((n for n in t if n.endswith("A_log")), key=lambda n: (layer_index(n), n)):
        other = name[:-len("A_log")] + "dt_bias"
        if other not in t:
            continue
        a_log = t[name].astype(np.float64).reshape(-1)
        dt_bias = t[other].astype(np.float64).reshape(-1)
        if a_log.shape != dt_bias.shape:
            raise rc.InputError(f"{path}: {name} has {a_log.size} heads, {other} "
                                f"{dt_bias.size}")
        alpha0 = np.exp(-np.exp(a_log) * softplus(dt_bias))
        for h in range(a_log.size):
            a = float(alpha0[h])
            rows.append(dict(layer=layer_index(name), kind=kind_of(name), head=h,
                             A_log=float(a_log[h]), dt_bias=float(dt_bias[h]), alpha0=a,
                             memory=1.0 / (1.0 - a) if a < 1.0 else math.inf,
                             accum=1.0 / (1.0 - a ** (2 * L)) if a < 1.0 else math.inf))
    if not rows:
        raise rc.InputError(f"{path}: no tensor pair ...A_log and ...dt_bias (expected Mamba-2 or "
                            "GDN layers)")
    return rows


def stats(vals):
    v = np.asarray(vals, dtype=np.float64)
    return float(v.min()), float(np.median(v)), float(v.max())


def model_summary(rows):
    """min/median/max of alpha0, memory and the accumulation factor over all heads, the number of
    heads with a factor above 2, and the layers."""
    return dict(kind=rows[0]["kind"], layers=len({r["layer"] for r in rows}), heads=len(rows),
                alpha0=stats([r["alpha0"] for r in rows]),
                memory=stats([r["memory"] for r in rows]),
                accum=stats([r["accum"] for r in rows]),
                above2=sum(r["accum"] > 2.0 for r in rows))


def markdown(models, L):
    """models: [(label, rows)]. A table per model summary and one per layer."""
    out = ["| model | SSM | layers x heads | alpha0 min / median / max | memory 1/(1-alpha0), "
           f"tokens: min / median / max | shared-checkpoint factor 1/(1-alpha0^{2 * L}) at "
           f"L = {L}: min / median / max | heads with factor > 2 |",
           "|---|---|---|---|---|---|---|"]
    for label, rows in models:
        s = model_summary(rows)
        out.append(f"| `{label}` | {s['kind']} | {s['layers']} x {s['heads'] // s['layers']} | "
                   + " / ".join(f"{x:.4g}" for x in s["alpha0"]) + " | "
                   + " / ".join(f"{x:.3g}" for x in s["memory"]) + " | "
                   + " / ".join(f"{x:.4g}" for x in s["accum"]) + f" | {s['above2']} |")
    out += ["", "Per layer (memory in tokens, min / median / max over the layer's heads):", "",
            "| model | layer | heads | memory | shared-checkpoint factor |",
            "|---|---|---|---|---|"]
    for label, rows in models:
        for layer in sorted({r["layer"] for r in rows}):
            rs = [r for r in rows if r["layer"] == layer]
            out.append(f"| `{label}` | {layer} | {len(rs)} | "
                       + " / ".join(f"{x:.3g}" for x in stats([r["memory"] for r in rs])) + " | "
                       + " / ".join(f"{x:.4g}" for x in stats([r["accum"] for r in rs])) + " |")
    return "\n".join(out) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("models", nargs="+", help="model directories or .safetensors files")
    ap.add_argument("--L", type=int, default=16, help="replay window (default 16)")
    ap.add_argument("--out-csv", help="one row per layer and head")
    a = ap.parse_args()
    if a.L < 1:
        raise rc.InputError(f"--L {a.L}: expected a positive window")
    models = [(m, head_decays(m, a.L)) for m in a.models]
    print(markdown(models, a.L), end="")
    if a.out_csv:
        keys = ["layer", "kind", "head", "A_log", "dt_bias", "alpha0", "memory", "accum"]
        rc.write_csv(a.out_csv, ["model"] + keys,
                     [[m] + [r[k] if isinstance(r[k], (int, str)) else rc.num(r[k]) for k in keys]
                      for m, rows in models for r in rows])


if __name__ == "__main__":
    rc.main_guard(main)
