"""The random-weight shapes of call 2: the Mamba-2 fixture's config.json with one kind of block.
Run from the repository root; writes results/h200-2026-12-07-s34/call2/shapes/NAME/config.json."""
import json
import os

base = json.load(open("data/models/nemotronh-m2-tiny/config.json"))
out = "results/h200-2026-12-07-s34/call2/shapes"
variants = {"m2-full": base["layers_block_type"], "m2-ssm4": ["linear_attention"] * 4,
            "m2-ssm8": ["linear_attention"] * 8, "m2-mlp4": ["mlp"] * 4, "m2-mlp8": ["mlp"] * 8,
            "m2-attn2": ["full_attention"] * 2, "m2-attn6": ["full_attention"] * 6}
for name, layers in variants.items():
    os.makedirs(f"{out}/{name}", exist_ok=True)
    json.dump(dict(base, layers_block_type=layers), open(f"{out}/{name}/config.json", "w"), indent=1)
