#!/usr/bin/env python3
"""Random-initialised checkpoints in the released Hugging Face layouts of Qwen3.5-4B and
NVIDIA-Nemotron-3-Nano-4B (issue 22; docs/real-checkpoints.md).

    make_4b_checkpoints.py OUTDIR [--model qwen|nemotron|both] [--tiny] [--seed S]
                           [--shard-size 5GB] [--device cuda|cpu] [--report FILE.json]

writes OUTDIR/qwen3.5-4b and OUTDIR/nemotron-3-nano-4b (with --tiny: OUTDIR/qwen3.5-tiny and
OUTDIR/nemotron-h-tiny, the same layouts at a few hundred thousand parameters, sharded into
several files). Each is what `save_pretrained` writes for the released model classes:

- Qwen3.5-4B: Qwen3_5ForConditionalGeneration (model_type qwen3_5, the text tower in
  text_config), tensors model.language_model.* and model.visual.* (a vision tower of the
  released shape: depth 24, width 1024, out_hidden_size 2560), tied embeddings (no
  lm_head.weight), bf16, sharded with model.safetensors.index.json. The release's mtp.* tensors
  are not written (transformers has no MTP module; replayssm ignores them either way).
- Nemotron-3-Nano-4B: NemotronHForCausalLM, tensors backbone.*, the pattern
  M-M-M-MM-M-M*-M-M*-M-M-M*-M-M-MM*-MMM-M-M-, untied lm_head, bf16, sharded; config.json keeps
  the released legacy key hybrid_override_pattern.

Shapes come from data/shapes/*/config.json (the documented released values,
/work/shared/reference/hf-hybrid-architectures.md A.1 and B.1). Weights: transformers' own
initialisation (normal, std initializer_range), then every SSM layer's decay parameters as the
reference SSM libraries initialise them (mamba_ssm, flash-linear-attention): A ~ U(1, 16)
(A_log = log A), dt log-uniform in [1e-3, 0.1] (floor 1e-4), dt_bias = softplus^-1(dt) =
dt + log(-expm1(-dt)), so that some heads decay slowly (remember for thousands of steps).

Needs torch, transformers (5.x) and safetensors; builds on the GPU by default (seconds for
4B parameters). Prints one line per model; with --report writes a JSON summary (shards, tensors,
bytes, parameters per prefix, times). Exit status 0 when every model requested was written and
checked, 1 otherwise (the other model is still attempted).
"""
import argparse
import json
import math
import os
import shutil
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

NEMOTRON_PATTERN_TINY = "M-M*-M-"


def log(msg):
    print("make_4b: " + msg, flush=True)


def shape_config(name):
    with open(os.path.join(ROOT, "data", "shapes", name, "config.json")) as f:
        cfg = json.load(f)
    for k in ("_comment", "architectures"):
        cfg.pop(k, None)
    return cfg


# ------------------------------------------------------------------------------ configs -------

def qwen_dicts(tiny):
    """(text_config, vision_config) of Qwen3.5-4B as released (or the tiny variant)."""
    text = shape_config("qwen3.5-4b")
    text.pop("model_type", None)
    vision = dict(depth=24, hidden_size=1024, intermediate_size=4096, num_heads=16,
                  out_hidden_size=2560, patch_size=16, spatial_merge_size=2,
                  temporal_patch_size=2, num_position_embeddings=2304, in_channels=3)
    if tiny:
        types = ["linear_attention", "linear_attention", "linear_attention", "full_attention"]
        text.update(hidden_size=64, num_hidden_layers=len(types), layer_types=types,
                    vocab_size=384, intermediate_size=128, num_attention_heads=4,
                    num_key_value_heads=2, head_dim=32, linear_num_key_heads=2,
                    linear_num_value_heads=4, linear_key_head_dim=16, linear_value_head_dim=16,
                    max_position_embeddings=65536)
        text["rope_parameters"] = dict(text["rope_parameters"], mrope_section=[2, 1, 1])
        vision = dict(depth=1, hidden_size=32, intermediate_size=64, num_heads=2,
                      out_hidden_size=64, patch_size=2, spatial_merge_size=1,
                      temporal_patch_size=1, num_position_embeddings=16, in_channels=3)
    return text, vision


QWEN_TOKEN_IDS = dict(image_token_id=248056, video_token_id=248057,
                      vision_start_token_id=248053, vision_end_token_id=248054)


def qwen_config(tiny):
    from transformers import Qwen3_5Config

    text, vision = qwen_dicts(tiny)
    # tied as released: the flag sits at the top level and in text_config
    return Qwen3_5Config(text_config=text, vision_config=vision, tie_word_embeddings=True,
                         **QWEN_TOKEN_IDS)


def nemotron_kwargs(tiny):
    kw = shape_config("nemotron-3-nano-4b")
    kw.pop("model_type", None)
    lim = kw.pop("time_step_limit", [0.0, 1e9])
    kw["time_step_limit"] = (float(lim[0]), float("inf"))  # released: [0.0, Infinity]
    if tiny:
        kw.update(hidden_size=64, vocab_size=384, hybrid_override_pattern=NEMOTRON_PATTERN_TINY,
                  num_attention_heads=4, num_key_value_heads=2, head_dim=16,
                  intermediate_size=128, mamba_num_heads=8, mamba_head_dim=8, n_groups=2,
                  ssm_state_size=16, chunk_size=64)
    kw["num_hidden_layers"] = len(kw["hybrid_override_pattern"])
    return kw


def nemotron_config(tiny):
    from transformers import NemotronHConfig

    kw = nemotron_kwargs(tiny)
    try:
        return NemotronHConfig(**kw), kw
    except Exception as e:  # noqa: BLE001 - newer argument names
        log(f"NemotronHConfig(hybrid_override_pattern=...) failed ({e}); using layers_block_type")
        kw2 = dict(kw)
        pattern = kw2.pop("hybrid_override_pattern")
        names = {"M": "mamba", "*": "attention", "-": "mlp", "E": "moe"}
        kw2["layers_block_type"] = [names[c] for c in pattern]
        return NemotronHConfig(**kw2), kw


# ------------------------------------------------------------------------------ weights -------

def init_decay(model, seed):
    """A_log = log U(1, 16); dt_bias = softplus^-1(dt), dt log-uniform in [1e-3, 0.1]
    (floor 1e-4), per SSM layer and head, as mamba_ssm's Mamba2 and FLA's GatedDeltaNet do.
    Returns the number of SSM layers touched and the fraction of heads whose memory at the
    bias point (a = 0), 1 / (A dt) steps, is at least 100 steps."""
    import torch

    g = torch.Generator(device="cpu").manual_seed(seed)
    layers, slow, heads = 0, 0, 0
    with torch.no_grad():
        for name, mod in model.named_modules():
            if not (hasattr(mod, "A_log") and hasattr(mod, "dt_bias")):
                continue
            n = mod.A_log.numel()
            A = torch.empty(n).uniform_(1.0, 16.0, generator=g)
            lo, hi = math.log(1e-3), math.log(0.1)
            dt = torch.exp(torch.rand(n, generator=g) * (hi - lo) + lo).clamp(min=1e-4)
            dt_bias = dt + torch.log(-torch.expm1(-dt))
            mod.A_log.copy_(torch.log(A).to(mod.A_log.dtype))
            mod.dt_bias.copy_(dt_bias.to(mod.dt_bias.dtype))
            if hasattr(mod, "D"):
                mod.D.fill_(1.0)
            # the decay per step at a = 0 is exp(-A softplus(dt_bias)) = exp(-A dt): a memory
            # of 1 / (A dt) steps, between 0.6 and 1000
            slow += int((A * dt <= 0.01).sum())
            heads += n
            layers += 1
    return layers, (slow / heads if heads else 0.0)


def build(kind, tiny, device, seed):
    import torch

    torch.manual_seed(seed)
    if kind == "qwen":
        from transformers import Qwen3_5ForConditionalGeneration as cls

        cfg = qwen_config(tiny)
        released = None
    else:
        from transformers import NemotronHForCausalLM as cls

        cfg, released = nemotron_config(tiny)
    with torch.device(device):
        try:
            model = cls._from_config(cfg, dtype=torch.bfloat16)
        except TypeError:
            model = cls._from_config(cfg, torch_dtype=torch.bfloat16)
    # no blanket .to(bfloat16): modules the class keeps in fp32 (as from_pretrained would)
    # stay fp32; but if the dtype argument was ignored, cast
    n_bf16 = sum(p.numel() for p in model.parameters() if p.dtype == torch.bfloat16)
    n_all = sum(p.numel() for p in model.parameters())
    if n_bf16 < 0.99 * n_all:
        log(f"{kind}: only {n_bf16 / n_all:.1%} of the parameters are bf16; casting all")
        model = model.to(torch.bfloat16)
    return model.eval(), released


# ------------------------------------------------------------------------------ direct writer -

def parse_size(text):
    units = {"KB": 10 ** 3, "MB": 10 ** 6, "GB": 10 ** 9, "B": 1}
    for u in ("KB", "MB", "GB", "B"):
        if text.upper().endswith(u):
            return int(float(text[:-len(u)]) * units[u])
    return int(text)


def direct_tensors(kind, tiny):
    """[(name, shape, init)] of the released layout, from the reference's tensor lists
    (hf-hybrid-architectures.md A.2, B.2); init: normal, zeros, ones, conv, A_log, dt_bias."""
    T = []
    if kind == "qwen":
        c, v = qwen_dicts(tiny)
        cfg = dict(architectures=["Qwen3_5ForConditionalGeneration"], model_type="qwen3_5",
                   tie_word_embeddings=True, torch_dtype="bfloat16",
                   text_config=dict(c, model_type="qwen3_5_text"),
                   vision_config=dict(v, model_type="qwen3_5"), **QWEN_TOKEN_IDS)
        H, V, I = c["hidden_size"], c["vocab_size"], c["intermediate_size"]
        Hk, Hv = c["linear_num_key_heads"], c["linear_num_value_heads"]
        dk, dv, K = c["linear_key_head_dim"], c["linear_value_head_dim"], c["linear_conv_kernel_dim"]
        nH, nKV, D = c["num_attention_heads"], c["num_key_value_heads"], c["head_dim"]
        conv = 2 * Hk * dk + Hv * dv
        P = "model.language_model."
        T += [(P + "embed_tokens.weight", [V, H], "normal"), (P + "norm.weight", [H], "zeros")]
        for i, t in enumerate(c["layer_types"]):
            L = f"{P}layers.{i}."
            T += [(L + "input_layernorm.weight", [H], "zeros"),
                  (L + "post_attention_layernorm.weight", [H], "zeros"),
                  (L + "mlp.gate_proj.weight", [I, H], "normal"),
                  (L + "mlp.up_proj.weight", [I, H], "normal"),
                  (L + "mlp.down_proj.weight", [H, I], "normal")]
            if t == "linear_attention":
                A = L + "linear_attn."
                T += [(A + "in_proj_qkv.weight", [conv, H], "normal"),
                      (A + "in_proj_z.weight", [Hv * dv, H], "normal"),
                      (A + "in_proj_b.weight", [Hv, H], "normal"),
                      (A + "in_proj_a.weight", [Hv, H], "normal"),
                      (A + "conv1d.weight", [conv, 1, K], "conv"),
                      (A + "dt_bias", [Hv], "dt_bias"), (A + "A_log", [Hv], "A_log"),
                      (A + "norm.weight", [dv], "ones"),
                      (A + "out_proj.weight", [H, Hv * dv], "normal")]
            else:
                A = L + "self_attn."
                T += [(A + "q_proj.weight", [nH * D * 2, H], "normal"),
                      (A + "k_proj.weight", [nKV * D, H], "normal"),
                      (A + "v_proj.weight", [nKV * D, H], "normal"),
                      (A + "o_proj.weight", [H, nH * D], "normal"),
                      (A + "q_norm.weight", [D], "zeros"), (A + "k_norm.weight", [D], "zeros")]
        # a stand-in for the vision tower (never read by a text decode)
        T += [("model.visual.patch_embed.proj.weight",
               [v["hidden_size"], 3, v["temporal_patch_size"], v["patch_size"], v["patch_size"]],
               "normal")]
        return T, cfg
    kw = nemotron_kwargs(tiny)
    H, V, I = kw["hidden_size"], kw["vocab_size"], kw["intermediate_size"]
    Hm, Pm, G, N, K = (kw["mamba_num_heads"], kw["mamba_head_dim"], kw["n_groups"],
                       kw["ssm_state_size"], kw["conv_kernel"])
    nH, nKV, D = kw["num_attention_heads"], kw["num_key_value_heads"], kw["head_dim"]
    di = Hm * Pm
    conv = di + 2 * G * N
    P = "backbone."
    T += [(P + "embeddings.weight", [V, H], "normal"), (P + "norm_f.weight", [H], "ones"),
          ("lm_head.weight", [V, H], "normal")]
    for i, ch in enumerate(kw["hybrid_override_pattern"]):
        L = f"{P}layers.{i}."
        T.append((L + "norm.weight", [H], "ones"))
        M = L + "mixer."
        if ch == "M":
            T += [(M + "in_proj.weight", [di + conv + Hm, H], "normal"),
                  (M + "conv1d.weight", [conv, 1, K], "conv"), (M + "conv1d.bias", [conv], "zeros"),
                  (M + "A_log", [Hm], "A_log"), (M + "D", [Hm], "ones"),
                  (M + "dt_bias", [Hm], "dt_bias"), (M + "norm.weight", [di], "ones"),
                  (M + "out_proj.weight", [H, di], "normal")]
        elif ch == "*":
            T += [(M + "q_proj.weight", [nH * D, H], "normal"),
                  (M + "k_proj.weight", [nKV * D, H], "normal"),
                  (M + "v_proj.weight", [nKV * D, H], "normal"),
                  (M + "o_proj.weight", [H, nH * D], "normal")]
        else:
            T += [(M + "up_proj.weight", [I, H], "normal"), (M + "down_proj.weight", [H, I], "normal")]
    cfg = dict(kw, architectures=["NemotronHForCausalLM"], model_type="nemotron_h",
               time_step_limit=[0.0, 1e9], torch_dtype="bfloat16")
    return T, cfg


def bf16_bits(x):
    """float32 array -> bf16 bit patterns (uint16), round to nearest even."""
    import numpy as np

    u = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)


def save_safetensors(path, items):
    """items: [(name, shape, uint16 bf16 array)] -> one safetensors file (BF16)."""
    hdr, off = {"__metadata__": {"format": "pt"}}, 0
    for name, shape, arr in items:
        hdr[name] = {"dtype": "BF16", "shape": list(shape), "data_offsets": [off, off + arr.nbytes]}
        off += arr.nbytes
    text = json.dumps(hdr, separators=(",", ":")).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path + ".tmp", "wb") as f:
        f.write(len(text).to_bytes(8, "little"))
        f.write(text)
        for _, _, arr in items:
            f.write(arr.tobytes())
    os.replace(path + ".tmp", path)


def write_direct(kind, tiny, outdir, seed, shard):
    """The released tensor names and shapes written with numpy alone (no torch, no
    transformers): the fallback when the transformers build fails, and what the CPU can check.
    Matrices are N(0, 0.02^2) drawn from a pool of 2^24 + 7 bf16 values repeated with a shift per
    tensor (a 4B checkpoint in seconds; random enough for a numerics rehearsal); the decay
    parameters as in init_decay; norms as transformers initialises them."""
    import numpy as np

    tensors, cfg = direct_tensors(kind, tiny)
    rng = np.random.default_rng(seed)
    pool = bf16_bits(rng.standard_normal((1 << 24) + 7, dtype=np.float32) * 0.02)
    limit = parse_size(shard)
    groups, cur, size = [], [], 0
    for t in tensors:
        nb = 2 * math.prod(t[1])
        if cur and size + nb > limit:
            groups.append(cur)
            cur, size = [], 0
        cur.append(t)
        size += nb
    groups.append(cur)
    os.makedirs(outdir, exist_ok=True)
    wm, total, n = {}, 0, len(groups)
    for gi, grp in enumerate(groups):
        fname = f"model-{gi + 1:05d}-of-{n:05d}.safetensors"
        items = []
        for name, shape, init in grp:
            ne = math.prod(shape)
            if init == "normal":
                x = np.resize(np.roll(pool, int(rng.integers(pool.size))), ne)
            elif init == "conv":
                x = bf16_bits(rng.uniform(-1, 1, ne).astype(np.float32) / math.sqrt(shape[-1]))
            elif init in ("zeros", "ones"):
                x = bf16_bits(np.full(ne, 0.0 if init == "zeros" else 1.0, dtype=np.float32))
            else:
                A = rng.uniform(1.0, 16.0, ne)
                lo, hi = math.log(1e-3), math.log(0.1)
                dt = np.maximum(np.exp(rng.uniform(lo, hi, ne)), 1e-4)
                v = np.log(A) if init == "A_log" else dt + np.log(-np.expm1(-dt))
                x = bf16_bits(v.astype(np.float32))
            items.append((name, shape, x))
            wm[name] = fname
            total += x.nbytes
        save_safetensors(os.path.join(outdir, fname), items)
        del items
    with open(os.path.join(outdir, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {"total_size": total}, "weight_map": wm}, f, indent=2)
    with open(os.path.join(outdir, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)
    return sum(math.prod(t[1]) for t in tensors)


# ------------------------------------------------------------------------------ checks --------

def read_header(path):
    with open(path, "rb") as f:
        n = int.from_bytes(f.read(8), "little")
        hdr = json.loads(f.read(n))
    hdr.pop("__metadata__", None)
    return hdr


def inspect(outdir):
    """The index and every shard's header: shards, tensors, bytes, dtypes, params per prefix."""
    idx_path = os.path.join(outdir, "model.safetensors.index.json")
    if not os.path.exists(idx_path):
        raise RuntimeError(f"{outdir}: no model.safetensors.index.json (expected a sharded save)")
    with open(idx_path) as f:
        wm = json.load(f)["weight_map"]
    shards = sorted(set(wm.values()))
    names, dtypes, by_prefix, nbytes = {}, {}, {}, 0
    for s in shards:
        p = os.path.join(outdir, s)
        hdr = read_header(p)
        nbytes += os.path.getsize(p)
        for k, v in hdr.items():
            names[k] = s
            dtypes[v["dtype"]] = dtypes.get(v["dtype"], 0) + 1
            numel = 1
            for d in v["shape"]:
                numel *= d
            pre = ".".join(k.split(".")[:2]) if k.startswith("model.") else k.split(".")[0]
            by_prefix[pre] = by_prefix.get(pre, 0) + numel
    for k, s in wm.items():
        if names.get(k) != s:
            raise RuntimeError(f"{outdir}: index names {s} for {k}, found in {names.get(k)}")
    return dict(shards=shards, tensors=len(names), bytes=nbytes, dtypes=dtypes,
                params_by_prefix=by_prefix, names=set(names))


def expect_names(kind, tiny, cfg_kw, names):
    """The tensors replayssm reads (docs/model-runtime.md) must all be there, named as
    released; Qwen must have no lm_head.weight (tied)."""
    miss = []
    if kind == "qwen":
        P = "model.language_model."
        text = shape_config("qwen3.5-4b")
        types = (["linear_attention"] * 3 + ["full_attention"]) if tiny else text["layer_types"]
        want = [P + "embed_tokens.weight", P + "norm.weight"]
        for i, t in enumerate(types):
            L = f"{P}layers.{i}."
            want += [L + "input_layernorm.weight", L + "post_attention_layernorm.weight",
                     L + "mlp.gate_proj.weight", L + "mlp.up_proj.weight",
                     L + "mlp.down_proj.weight"]
            if t == "linear_attention":
                want += [L + "linear_attn." + s for s in (
                    "in_proj_qkv.weight", "in_proj_z.weight", "in_proj_b.weight",
                    "in_proj_a.weight", "conv1d.weight", "dt_bias", "A_log", "norm.weight",
                    "out_proj.weight")]
            else:
                want += [L + "self_attn." + s for s in (
                    "q_proj.weight", "k_proj.weight", "v_proj.weight", "o_proj.weight",
                    "q_norm.weight", "k_norm.weight")]
        if "lm_head.weight" in names:
            miss.append("lm_head.weight present (expected tied embeddings: none)")
        if not any(n.startswith("model.visual.") for n in names):
            miss.append("model.visual.* missing")
    else:
        P = "backbone."
        want = [P + "embeddings.weight", P + "norm_f.weight", "lm_head.weight"]
        for i, c in enumerate(cfg_kw["hybrid_override_pattern"]):
            L = f"{P}layers.{i}."
            want.append(L + "norm.weight")
            sub = {"M": ["in_proj.weight", "conv1d.weight", "conv1d.bias", "A_log", "D",
                         "dt_bias", "norm.weight", "out_proj.weight"],
                   "*": ["q_proj.weight", "k_proj.weight", "v_proj.weight", "o_proj.weight"],
                   "-": ["up_proj.weight", "down_proj.weight"]}[c]
            want += [L + "mixer." + s for s in sub]
    miss += [w for w in want if w not in names]
    if miss:
        raise RuntimeError(f"{len(miss)} expected tensors wrong, e.g. {miss[:3]}")
    return len(want)


def fix_config(kind, outdir, released):
    """Nemotron-H: the released config.json names the layers by hybrid_override_pattern
    (transformers 5 writes layers_block_type); put the released key back."""
    if kind != "nemotron":
        return
    p = os.path.join(outdir, "config.json")
    with open(p) as f:
        cfg = json.load(f)
    cfg.pop("layers_block_type", None)
    cfg["hybrid_override_pattern"] = released["hybrid_override_pattern"]
    cfg["num_hidden_layers"] = len(released["hybrid_override_pattern"])
    with open(p + ".tmp", "w") as f:
        json.dump(cfg, f, indent=2)
    os.replace(p + ".tmp", p)


# ------------------------------------------------------------------------------ main ----------

def make_one(kind, args):
    name = {("qwen", False): "qwen3.5-4b", ("qwen", True): "qwen3.5-tiny",
            ("nemotron", False): "nemotron-3-nano-4b", ("nemotron", True): "nemotron-h-tiny"}[
        (kind, args.tiny)]
    outdir = os.path.join(args.outdir, name)
    if os.path.exists(outdir):
        shutil.rmtree(outdir)
    t0 = time.time()
    shard = args.shard_size or ("100KB" if args.tiny else "5GB")
    writer, released, nssm, slow = "transformers", None, 0, 0.0
    try:
        if args.writer == "direct":
            raise RuntimeError("--writer direct")
        import torch

        model, released = build(kind, args.tiny, args.device, args.seed + (kind == "nemotron"))
        nssm, slow = init_decay(model, args.seed + 7)
        if args.device == "cuda":
            torch.cuda.synchronize()
        t_build = time.time() - t0
        nparams = sum(p.numel() for p in model.parameters())
        t0 = time.time()
        model.save_pretrained(outdir, max_shard_size=shard)
        t_save = time.time() - t0
        del model
        fix_config(kind, outdir, released)
    except Exception as e:  # noqa: BLE001 - an API change in transformers: write it directly
        if args.writer == "transformers":
            raise
        log(f"{name}: the transformers build failed ({type(e).__name__}: {e}); writing the "
            f"released names directly with safetensors")
        writer = "direct (numpy; vision tower reduced to one tensor)"
        if os.path.exists(outdir):
            shutil.rmtree(outdir)
        t0 = time.time()
        nparams = write_direct(kind, args.tiny, outdir, args.seed + 7, shard)
        t_build, t_save = 0.0, time.time() - t0
        released = nemotron_kwargs(args.tiny) if kind == "nemotron" else None
    if args.device == "cuda" and writer == "transformers":
        import torch

        torch.cuda.empty_cache()
    info = inspect(outdir)
    try:
        nwant = expect_names(kind, args.tiny, released, info["names"])
    except RuntimeError as e:  # written, but not as released: say so, keep the checkpoint
        nwant = 0
        info["layout_problems"] = str(e)
        log(f"{name}: LAYOUT DIFFERS FROM THE RELEASE: {e}")
    info.pop("names")
    info.update(model=name, dir=outdir, writer=writer, params=nparams, ssm_layers=nssm,
                slow_head_fraction=round(slow, 4), build_s=round(t_build, 2),
                save_s=round(t_save, 2), checked_tensors=nwant, shard_size=shard)
    log(f"{name}: {nparams / 1e9:.3f} G params, built in {t_build:.1f} s, saved in "
        f"{t_save:.1f} s: {len(info['shards'])} shards, {info['tensors']} tensors, "
        f"{info['bytes'] / 1e9:.2f} GB, dtypes {info['dtypes']}; {nssm} SSM layers, "
        f"{100 * slow:.0f}% of heads with a memory 1/(A dt) >= 100 steps at a = 0; "
        f"{nwant} tensors checked against the released names -> {outdir}")
    return info


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("outdir")
    ap.add_argument("--model", choices=["qwen", "nemotron", "both"], default="both")
    ap.add_argument("--tiny", action="store_true", help="the same layouts at a tiny size")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--shard-size", default=None, help="max_shard_size (5GB; tiny: 100KB)")
    ap.add_argument("--device", default=None, help="cuda (default when available) or cpu")
    ap.add_argument("--report", default=None, help="write a JSON summary here")
    ap.add_argument("--writer", choices=["auto", "transformers", "direct"], default="auto",
                    help="transformers' save_pretrained (auto: falling back to direct)")
    args = ap.parse_args()
    versions = {}
    try:
        import torch
        import transformers

        versions = {"torch": torch.__version__, "transformers": transformers.__version__}
        if args.device is None:
            args.device = "cuda" if torch.cuda.is_available() else "cpu"
    except ImportError as e:
        if args.writer == "transformers":
            raise
        log(f"no torch/transformers ({e}): the direct writer (numpy)")
        args.writer, args.device = "direct", "cpu"
    log(f"{versions or 'numpy only'}, device {args.device}")
    os.makedirs(args.outdir, exist_ok=True)
    kinds = ["qwen", "nemotron"] if args.model == "both" else [args.model]
    report, failed = dict(versions, device=args.device, models={}), 0
    for kind in kinds:
        try:
            info = make_one(kind, args)
            report["models"][info["model"]] = info
            failed += 1 if info.get("layout_problems") else 0
        except Exception as e:  # noqa: BLE001 - one model's failure must not stop the other
            failed += 1
            log(f"{kind}: FAILED: {type(e).__name__}: {e}")
            report["models"][kind] = {"error": f"{type(e).__name__}: {e}"}
    if args.report:
        with open(args.report, "w") as f:
            json.dump(report, f, indent=2)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
