#!/usr/bin/env python3
"""transformers' own cached decoding, timed: the baseline of `replayssm bench e2e`
(docs/gpu-runtime.md, "bench e2e").

For a local Hugging Face model directory and each batch size K: K token streams decoded one
token per call, `model(input_ids=[K, 1], past_key_values=cache, use_cache=True)`, the cache
created by the model at the first call (as scripts/train_fixture_models.py's cached_decode does)
and passed back each step. fp32 weights and math, TF32 off. Each step is timed on the host
around the call plus torch.cuda.synchronize(); the result is the median over the timed steps
after W untimed warm-up steps. Prints one JSON object (and writes it to --out).

No network: the model is loaded with local_files_only=True. Runs with the torch fallbacks when
flash-linear-attention, causal_conv1d and mamba_ssm are absent (the JSON records which are
importable).

usage: python3 scripts/bench/transformers_decode.py --model DIR [--streams 16,64] [--steps 32]
           [--warmup 4] [--seed 1] [--device cuda] [--out FILE.json]
"""
import argparse
import importlib.util
import json
import os
import statistics
import sys
import time


def load(model_dir, device):
    import torch
    import transformers

    with open(os.path.join(model_dir, "config.json")) as f:
        mt = json.load(f).get("model_type", "")
    cls = {"qwen3_5_text": "Qwen3_5ForCausalLM", "nemotron_h": "NemotronHForCausalLM"}.get(mt)
    cls = getattr(transformers, cls) if cls else transformers.AutoModelForCausalLM
    kw = dict(local_files_only=True, attn_implementation="sdpa")
    try:
        model = cls.from_pretrained(model_dir, dtype=torch.float32, **kw)
    except TypeError:  # older transformers spell it torch_dtype
        model = cls.from_pretrained(model_dir, torch_dtype=torch.float32, **kw)
    model = model.to(device=device, dtype=torch.float32).eval()
    return model, mt


def decode_times(model, K, warmup, steps, seed, device, vocab):
    """Seconds per step of the timed steps (after warmup untimed ones), K streams."""
    import torch

    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(0, vocab, (K, warmup + steps), generator=g).to(device)
    sync = torch.cuda.synchronize if str(device).startswith("cuda") else (lambda: None)
    past = None
    times = []
    with torch.no_grad():
        for t in range(warmup + steps):
            sync()
            t0 = time.perf_counter()
            out = model(input_ids=ids[:, t:t + 1], past_key_values=past, use_cache=True)
            past = out.past_key_values
            sync()
            dt = time.perf_counter() - t0
            if t >= warmup:
                times.append(dt)
            if not torch.isfinite(out.logits).all():
                raise RuntimeError(f"non-finite logits at step {t}")
    return times, type(past).__name__


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", required=True)
    ap.add_argument("--streams", default="16,64")
    ap.add_argument("--steps", type=int, default=32)
    ap.add_argument("--warmup", type=int, default=4)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--out")
    a = ap.parse_args()

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    import torch
    import transformers

    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.set_float32_matmul_precision("highest")
    model, mt = load(a.model, a.device)
    nparams = sum(p.numel() for p in model.parameters())
    vocab = model.config.vocab_size
    res = {
        "tool": "transformers",
        "model": os.path.basename(os.path.normpath(a.model)),
        "model_dir": a.model,
        "model_type": mt,
        "params": nparams,
        "dtype": "float32",
        "tf32": False,
        "device": torch.cuda.get_device_name(0) if a.device.startswith("cuda") else a.device,
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "kernels_importable": {m: importlib.util.find_spec(m) is not None
                               for m in ("fla", "causal_conv1d", "mamba_ssm")},
        "method": "model(input_ids=[K,1], past_key_values=cache, use_cache=True) per step; host "
                  "clock around the call and torch.cuda.synchronize(); median over the timed steps",
        "warmup": a.warmup,
        "steps": a.steps,
        "runs": [],
    }
    for K in [int(x) for x in a.streams.split(",") if x]:
        times, cache = decode_times(model, K, a.warmup, a.steps, a.seed, a.device, vocab)
        med = statistics.median(times)
        res["runs"].append({"K": K, "ms_per_step": med * 1e3, "ms_per_step_min": min(times) * 1e3,
                            "streams_per_s": K / med, "cache": cache})
        print(f"transformers {res['model']} K={K}: {med * 1e3:.3f} ms/step "
              f"(min {min(times) * 1e3:.3f}), {K / med:.0f} streams/s, cache {cache}",
              file=sys.stderr)
    text = json.dumps(res, indent=1)
    print(text)
    if a.out:
        with open(a.out, "w") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    main()
