#!/usr/bin/env python3
"""Golden-logit fixtures for the replayssm model runtime (docs/model-runtime.md).

Usage (on a machine with torch and transformers; no network needed, CPU is enough):

    python3 scripts/make_fixtures.py OUTDIR

For each family it builds a tiny, randomly initialised checkpoint (every parameter perturbed
away from its init so that each one matters), decodes random token ids one token at a time with
transformers' cached decode in fp32 on the CPU (model.eval(), use_cache=True, past_key_values fed
back), and writes OUTDIR/<name>/{config.json, model.safetensors, tokens.npy, ref_logits.npy}
plus OUTDIR/MANIFEST (the fixture names that succeeded) and OUTDIR/versions.json. Copy OUTDIR's
contents to tests/fixtures/ and commit them; tests/model/test_model_fixtures.c then compares
`replayssm logits` against ref_logits.npy at every step (max|ours - theirs| / max|theirs| <= 1e-4).

One failing family does not stop the others; the summary at the end lists each family's result
and the exit status is 1 if any failed. Sizes are deliberately awkward (dk = 24, Hv/Hk = 3,
d_state = 24, small odd vocabularies) and every layer type of each family is present.
"""

import json
import math
import os
import sys
import time
import traceback

N_TOKENS = 256


def log(msg):
    print(msg, flush=True)


def kernel_report():
    """Which optional kernel packages are importable (they change transformers' code paths)."""
    out = {}
    for mod in ("fla", "causal_conv1d", "mamba_ssm"):
        try:
            __import__(mod)
            out[mod] = True
        except Exception:  # noqa: BLE001 - any failure means "not usable"
            out[mod] = False
    return out


# --------------------------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------------------------

def perturb(model, seed):
    """Every parameter away from its init: matrices ~ N(0, 1/fan_in) (embeddings N(0, 1)),
    vectors (norm weights, biases, dt_bias, D, ...) shifted by N(0, 0.2^2), A_log uniform in
    [-1, 1.5], the MoE correction bias ~ N(0, 0.05^2)."""
    import torch

    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            shape = p.shape
            if name.endswith("A_log"):
                p.copy_(torch.rand(shape, generator=gen) * 2.5 - 1.0)
            elif "e_score_correction_bias" in name:
                p.copy_(torch.randn(shape, generator=gen) * 0.05)
            elif p.ndim >= 2:
                if "embed" in name:
                    p.copy_(torch.randn(shape, generator=gen))
                else:
                    p.copy_(torch.randn(shape, generator=gen) / math.sqrt(shape[-1]))
            else:
                p.add_(torch.randn(shape, generator=gen) * 0.2)


def cached_decode(model, tokens):
    """transformers' step-by-step cached decode, fp32, one token per call."""
    import torch

    ids = torch.tensor(tokens, dtype=torch.long).view(1, -1)
    rows = []
    past = None
    with torch.no_grad():
        for t in range(ids.shape[1]):
            out = model(input_ids=ids[:, t:t + 1], past_key_values=past, use_cache=True)
            past = out.past_key_values
            rows.append(out.logits[0, -1].float().cpu())
    return torch.stack(rows).numpy()


def full_forward_check(model, tokens, ref):
    """Diagnostic only: the uncached full-sequence forward over the first 64 tokens."""
    import torch

    n = min(64, len(tokens))
    ids = torch.tensor(tokens[:n], dtype=torch.long).view(1, -1)
    try:
        with torch.no_grad():
            full = model(input_ids=ids, use_cache=False).logits[0].float().numpy()
        d = abs(full - ref[:n]).max() / max(abs(ref[:n]).max(), 1e-30)
        log(f"    full-sequence forward vs cached decode over {n} tokens: rel {d:.3g}")
    except Exception as e:  # noqa: BLE001
        log(f"    full-sequence forward check skipped: {e}")


def random_tokens(vocab, n, seed):
    import numpy as np

    return np.random.default_rng(seed).integers(0, vocab, size=n).astype(np.int32)


def save_common(outdir, tokens, ref):
    import numpy as np

    np.save(os.path.join(outdir, "tokens.npy"), tokens.astype(np.int32))
    np.save(os.path.join(outdir, "ref_logits.npy"), ref.astype(np.float32))


def save_model(model, outdir):
    """save_pretrained (safetensors); fall back to state_dict + config if that fails."""
    try:
        model.save_pretrained(outdir, safe_serialization=True)
    except TypeError:
        model.save_pretrained(outdir)
    names = os.listdir(outdir)
    if not any(n.endswith(".safetensors") for n in names):
        raise RuntimeError("save_pretrained wrote no .safetensors file: " + ", ".join(names))


def build(model_cls, config, seed):
    import torch

    torch.manual_seed(seed)
    try:
        config._attn_implementation = "eager"
    except Exception:  # noqa: BLE001
        pass
    model = model_cls(config)
    model = model.to(torch.float32).eval()
    perturb(model, seed)
    return model


def finish(name, model, outdir, vocab, seed, bf16=False):
    """Reference decode, save. bf16=True: round every parameter to bf16 first, decode in fp32,
    and store the checkpoint as BF16 (its fp32 conversion is then exact)."""
    import torch

    os.makedirs(outdir, exist_ok=True)
    if bf16:
        with torch.no_grad():
            for p in model.parameters():
                p.copy_(p.to(torch.bfloat16).to(torch.float32))
    tokens = random_tokens(vocab, N_TOKENS, seed)
    t0 = time.time()
    ref = cached_decode(model, tokens.tolist())
    log(f"    cached decode of {N_TOKENS} tokens: {time.time() - t0:.1f} s, "
        f"max|logit| {abs(ref).max():.3g}")
    full_forward_check(model, tokens.tolist(), ref)
    if bf16:
        model = model.to(torch.bfloat16)
    save_model(model, outdir)
    save_common(outdir, tokens, ref)


# --------------------------------------------------------------------------------------------
# families
# --------------------------------------------------------------------------------------------

QWEN_GDN = dict(linear_num_key_heads=2, linear_num_value_heads=6, linear_key_head_dim=24,
                linear_value_head_dim=16, linear_conv_kernel_dim=4)
QWEN_ATTN = dict(num_attention_heads=4, num_key_value_heads=2, head_dim=32)
QWEN_ROPE = {"rope_type": "default", "rope_theta": 10000.0, "partial_rotary_factor": 0.25}
QWEN_TYPES = ["linear_attention", "linear_attention", "full_attention", "linear_attention"]


def qwen_text_kwargs(vocab, tie, **extra):
    kw = dict(vocab_size=vocab, hidden_size=48, num_hidden_layers=len(QWEN_TYPES),
              layer_types=list(QWEN_TYPES), intermediate_size=96, rms_norm_eps=1e-6,
              hidden_act="silu", max_position_embeddings=4096, tie_word_embeddings=tie,
              rope_parameters=dict(QWEN_ROPE, mrope_section=[2, 1, 1], mrope_interleaved=True),
              **QWEN_GDN, **QWEN_ATTN)
    kw.update(extra)
    return kw


def fx_qwen3_5_text(out):
    """Qwen3_5ForCausalLM (qwen3_5_text), tied embeddings, stored in BF16."""
    from transformers import Qwen3_5ForCausalLM, Qwen3_5TextConfig

    vocab = 200
    cfg = Qwen3_5TextConfig(**qwen_text_kwargs(vocab, True))
    model = build(Qwen3_5ForCausalLM, cfg, 11)
    finish("qwen3_5_text", model, out, vocab, 11, bf16=True)


def fx_qwen3_5_vl(out):
    """Qwen3.5 as released: model_type qwen3_5 with text_config, tensors under
    model.language_model. Built as Qwen3_5ForConditionalGeneration with a tiny vision tower if
    possible; otherwise the text model is decoded and its config and tensors are wrapped by hand
    (config.json: model_type qwen3_5 + text_config; tensors renamed model. -> model.language_model.)."""
    vocab = 150
    text_kw = qwen_text_kwargs(vocab, False)
    try:
        from transformers import Qwen3_5Config, Qwen3_5ForConditionalGeneration

        vision = dict(depth=1, hidden_size=32, num_heads=2, intermediate_size=64,
                      out_hidden_size=48, patch_size=2, temporal_patch_size=1,
                      spatial_merge_size=1, num_position_embeddings=16)
        cfg = Qwen3_5Config(text_config=text_kw, vision_config=vision, tie_word_embeddings=False)
        model = build(Qwen3_5ForConditionalGeneration, cfg, 12)
        finish("qwen3_5_vl", model, out, vocab, 12)
        log("    built as Qwen3_5ForConditionalGeneration")
        return
    except Exception as e:  # noqa: BLE001
        log(f"    Qwen3_5ForConditionalGeneration failed ({type(e).__name__}: {e}); "
            f"wrapping the text model by hand")
    import torch
    from safetensors.torch import save_file
    from transformers import Qwen3_5ForCausalLM, Qwen3_5TextConfig

    cfg = Qwen3_5TextConfig(**text_kw)
    model = build(Qwen3_5ForCausalLM, cfg, 12)
    os.makedirs(out, exist_ok=True)
    tokens = random_tokens(vocab, N_TOKENS, 12)
    ref = cached_decode(model, tokens.tolist())
    tensors = {}
    for k, v in model.state_dict().items():
        k2 = "model.language_model." + k[len("model."):] if k.startswith("model.") else k
        tensors[k2] = v.detach().to(torch.float32).contiguous().clone()
    save_file(tensors, os.path.join(out, "model.safetensors"), metadata={"format": "pt"})
    text = json.loads(cfg.to_json_string())
    text["model_type"] = "qwen3_5_text"
    top = {"model_type": "qwen3_5", "architectures": ["Qwen3_5ForConditionalGeneration"],
           "tie_word_embeddings": False, "text_config": text,
           "vision_config": {"model_type": "qwen3_5_vision", "depth": 1}}
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(top, f, indent=2)
    save_common(out, tokens, ref)


def fx_qwen3_5_moe(out):
    """Qwen3_5MoeForCausalLM (qwen3_5_moe_text): every layer MoE with a gated shared expert."""
    from transformers import Qwen3_5MoeForCausalLM, Qwen3_5MoeTextConfig

    vocab = 170
    kw = qwen_text_kwargs(vocab, False, num_experts=8, num_experts_per_tok=2,
                          moe_intermediate_size=32, shared_expert_intermediate_size=48)
    kw.pop("intermediate_size")
    cfg = Qwen3_5MoeTextConfig(**kw)
    model = build(Qwen3_5MoeForCausalLM, cfg, 13)
    finish("qwen3_5_moe", model, out, vocab, 13)


def fx_qwen3_next(out):
    """Qwen3NextForCausalLM: interleaved in_proj_qkvz / in_proj_ba, MoE except mlp_only_layers."""
    from transformers import Qwen3NextConfig, Qwen3NextForCausalLM

    vocab = 180
    kw = dict(vocab_size=vocab, hidden_size=48, num_hidden_layers=len(QWEN_TYPES),
              layer_types=list(QWEN_TYPES), intermediate_size=96, rms_norm_eps=1e-6,
              hidden_act="silu", max_position_embeddings=4096, tie_word_embeddings=False,
              rope_parameters=dict(QWEN_ROPE), num_experts=8, num_experts_per_tok=2,
              moe_intermediate_size=32, shared_expert_intermediate_size=48,
              decoder_sparse_step=1, mlp_only_layers=[1], norm_topk_prob=True,
              **QWEN_GDN, **QWEN_ATTN)
    cfg = Qwen3NextConfig(**kw)
    model = build(Qwen3NextForCausalLM, cfg, 14)
    finish("qwen3_next", model, out, vocab, 14)


def nemotron_kwargs(vocab, pattern, **extra):
    kw = dict(vocab_size=vocab, hidden_size=48, hybrid_override_pattern=pattern,
              num_attention_heads=4, num_key_value_heads=2, head_dim=16, intermediate_size=96,
              mlp_hidden_act="relu2", mamba_num_heads=6, mamba_head_dim=8, n_groups=2,
              ssm_state_size=24, conv_kernel=4, use_conv_bias=True, layer_norm_epsilon=1e-5,
              # transformers' torch fallback floors dt at time_step_min; the CUDA decode
              # kernels (and replayssm) do not: make the floor irrelevant
              time_step_min=1e-9, time_step_floor=1e-9, chunk_size=64,
              tie_word_embeddings=False, use_mamba_kernels=False)
    kw.update(extra)
    return kw


def make_nemotron_config(kw):
    from transformers import NemotronHConfig

    pattern = kw["hybrid_override_pattern"]
    try:
        return NemotronHConfig(**kw)
    except Exception as e:  # noqa: BLE001 - older/newer argument names
        log(f"    NemotronHConfig(hybrid_override_pattern=...) failed ({e}); trying layers_block_type")
        kw = dict(kw)
        kw.pop("hybrid_override_pattern")
        names = {"M": "mamba", "*": "attention", "-": "mlp", "E": "moe"}
        kw["layers_block_type"] = [names[c] for c in pattern]
        kw["num_hidden_layers"] = len(pattern)
        return NemotronHConfig(**kw)


def fx_nemotron_h(out):
    """NemotronHForCausalLM: Mamba-2, attention (no RoPE) and relu2 MLP blocks."""
    from transformers import NemotronHForCausalLM

    vocab = 160
    cfg = make_nemotron_config(nemotron_kwargs(vocab, "M-M*-M-"))
    model = build(NemotronHForCausalLM, cfg, 15)
    finish("nemotron_h", model, out, vocab, 15)


def fx_nemotron_h_moe(out):
    """NemotronHForCausalLM with MoE blocks: sigmoid router + correction bias, group gating
    (2 groups, keep 1), latent projections, shared expert, routed scaling."""
    from transformers import NemotronHForCausalLM

    vocab = 130
    kw = nemotron_kwargs(vocab, "ME*EM-E", n_routed_experts=8, num_experts_per_tok=2,
                         moe_intermediate_size=32, moe_shared_expert_intermediate_size=48,
                         n_shared_experts=1, moe_latent_size=24, n_group=2, topk_group=1,
                         norm_topk_prob=True, routed_scaling_factor=2.5)
    cfg = make_nemotron_config(kw)
    model = build(NemotronHForCausalLM, cfg, 16)
    finish("nemotron_h_moe", model, out, vocab, 16)


def fx_nemotron_h_dtlimit(out):
    """NemotronHForCausalLM whose time_step_limit floors dt at 0.05 (transformers clamps
    softplus(dt + dt_bias) to time_step_limit; its torch fallback floors at time_step_min, so
    both are 0.05 here): about half of the heads' dt sit below it, so the clamp binds."""
    from transformers import NemotronHForCausalLM

    vocab = 150
    cfg = make_nemotron_config(nemotron_kwargs(vocab, "M-M*-M-", time_step_min=0.05,
                                               time_step_floor=0.05,
                                               time_step_limit=(0.05, float("inf"))))
    model = build(NemotronHForCausalLM, cfg, 17)
    finish("nemotron_h_dtlimit", model, out, vocab, 17)


FAMILIES = [
    ("qwen3_5_text", fx_qwen3_5_text),
    ("qwen3_5_vl", fx_qwen3_5_vl),
    ("qwen3_5_moe", fx_qwen3_5_moe),
    ("qwen3_next", fx_qwen3_next),
    ("nemotron_h", fx_nemotron_h),
    ("nemotron_h_moe", fx_nemotron_h_moe),
    ("nemotron_h_dtlimit", fx_nemotron_h_dtlimit),
]


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        print("usage: python3 scripts/make_fixtures.py OUTDIR", file=sys.stderr)
        return 2
    outroot = sys.argv[1]
    os.makedirs(outroot, exist_ok=True)
    import numpy
    import torch
    import transformers

    torch.set_num_threads(max(1, min(8, os.cpu_count() or 1)))
    torch.use_deterministic_algorithms(True, warn_only=True)
    kernels = kernel_report()
    versions = {"torch": torch.__version__, "transformers": transformers.__version__,
                "numpy": numpy.__version__, "python": sys.version.split()[0],
                "kernels_importable": kernels, "tokens": N_TOKENS, "device": "cpu",
                "dtype": "float32"}
    log(f"torch {torch.__version__}, transformers {transformers.__version__}")
    log("kernels importable: " + ", ".join(f"{k}={v}" for k, v in kernels.items()))
    results = {}
    for name, fn in FAMILIES:
        log(f"== {name}")
        t0 = time.time()
        try:
            fn(os.path.join(outroot, name))
            results[name] = "ok"
            log(f"    ok ({time.time() - t0:.1f} s)")
        except Exception as e:  # noqa: BLE001 - report and go on with the next family
            traceback.print_exc()
            results[name] = f"FAILED: {type(e).__name__}: {e}"
    versions["results"] = results
    with open(os.path.join(outroot, "versions.json"), "w") as f:
        json.dump(versions, f, indent=2)
    with open(os.path.join(outroot, "MANIFEST"), "w") as f:
        f.write("# fixture directories that tests/model/test_model_fixtures.c must find\n")
        for name, r in results.items():
            if r == "ok":
                f.write(name + "\n")
    total = 0
    for root, _, files in os.walk(outroot):
        total += sum(os.path.getsize(os.path.join(root, x)) for x in files)
    log("\nsummary:")
    for name, r in results.items():
        log(f"  {name:16s} {r}")
    log(f"total size {total / 1e6:.2f} MB in {outroot}")
    return 0 if all(r == "ok" for r in results.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
