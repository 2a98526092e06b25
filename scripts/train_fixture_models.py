#!/usr/bin/env python3
"""Trains the two byte-level hybrid fixture models of docs/trained-models.md with transformers and
torch on one GPU, and writes everything the repository keeps about them.

    python3 scripts/train_fixture_models.py --model qwen35-gdn-tiny --train-seconds 420 --out OUT
    python3 scripts/train_fixture_models.py --model nemotronh-m2-tiny --train-seconds 420 --out OUT

Models (byte vocabulary, 256 ids; the numbers of issue 6):
  qwen35-gdn-tiny    Qwen3_5ForCausalLM, 8 layers, full attention every 4th, GDN Hk = 2, Hv = 4,
                     dk = 128, dv = 64, hidden 256, SwiGLU 768: 7.37M parameters
  nemotronh-m2-tiny  NemotronHForCausalLM, pattern M-M-M*-M-, Mamba-2 8 heads of 32, 2 groups,
                     d_state 128, hidden 320, relu2 MLP 1920: 6.99M parameters

Data: .corpus/{sotu,kjv,austen}.txt.gz from scripts/fetch_corpus.sh (UTF-8 bytes are the tokens),
sampled as random 2049-byte windows, source chosen per sequence with fixed probabilities. The
held-out text is data/moby-dick.txt (scripts/fetch_data.sh), never trained on.

Training: fp32 master weights, bf16 autocast, AdamW (betas 0.9/0.95, weight decay 0.1 on
matrices), peak lr 2e-3, 100 warm-up steps, cosine to 10 % over a step count fixed from the
measured speed so that it ends at --train-seconds; batch 16 x 2048 tokens; grad-norm clip 1;
seed fixed per model. transformers' torch fallbacks (no fla / mamba_ssm / causal_conv1d).
Every --eval-every steps the held-out bits per byte on the quickstart's 4 windows (bf16 autocast)
goes to the loss log.

After training every parameter is rounded to bf16 and the checkpoint is written as BF16
safetensors (save_pretrained) with config.json. Then, from the bf16 weights computed in fp32:
  - held-out bits per byte on the quickstart's 4 windows of 2049 bytes of Moby-Dick (window k
    starts at floor(k (M - 2049) / 3), as `replayssm run` places them), full-sequence forward,
    TF32 off; also over 32 windows for a steadier number;
  - the reference logits of the CPU test: transformers' cached step-by-step decode on the CPU,
    fp32, over the first 512 bytes of Moby-Dick (tokens.npy int32, ref_logits.npy float32
    [512][256]), like scripts/make_fixtures.py.
The work files go to --work/NAME/; --out gets NAME.safetensors (the BF16 checkpoint) and
NAME-rest.tar (config.json, tokens.npy, ref_logits.npy, loss.csv, eval.json, and loss.png when
matplotlib is importable), rewritten after every stage so that a later failure loses nothing.
"""

import argparse
import contextlib
import copy
import gzip
import json
import math
import os
import shutil
import sys
import tarfile
import time
import traceback

T0 = time.time()
SEQ = 2048
BATCH = 16
N_REF = 512
HELDOUT_K = 4
SOURCES = [("austen", 0.40), ("sotu", 0.35), ("kjv", 0.25)]


def log(msg):
    print(f"[{time.time() - T0:7.1f}s] {msg}", flush=True)


# --------------------------------------------------------------------------------------------
# models
# --------------------------------------------------------------------------------------------

def build_qwen():
    from transformers import Qwen3_5ForCausalLM, Qwen3_5TextConfig

    types = ["linear_attention"] * 3 + ["full_attention"]
    kw = dict(vocab_size=256, hidden_size=256, num_hidden_layers=8, layer_types=types * 2,
              intermediate_size=768, rms_norm_eps=1e-6, hidden_act="silu",
              max_position_embeddings=8192, tie_word_embeddings=False,
              linear_num_key_heads=2, linear_num_value_heads=4, linear_key_head_dim=128,
              linear_value_head_dim=64, linear_conv_kernel_dim=4,
              num_attention_heads=4, num_key_value_heads=2, head_dim=64,
              rope_parameters={"rope_type": "default", "rope_theta": 10000.0,
                               "partial_rotary_factor": 0.25, "mrope_section": [4, 2, 2],
                               "mrope_interleaved": True})
    cfg = Qwen3_5TextConfig(**kw)
    cfg._attn_implementation = "sdpa"
    return Qwen3_5ForCausalLM(cfg)


def build_nemotron():
    from transformers import NemotronHConfig, NemotronHForCausalLM

    pattern = "M-M-M*-M-"
    kw = dict(vocab_size=256, hidden_size=320, hybrid_override_pattern=pattern,
              num_attention_heads=4, num_key_value_heads=2, head_dim=64, intermediate_size=1920,
              mlp_hidden_act="relu2", mamba_num_heads=8, mamba_head_dim=32, n_groups=2,
              ssm_state_size=128, conv_kernel=4, use_conv_bias=True, layer_norm_epsilon=1e-5,
              # transformers' torch fallback floors dt at time_step_min; the CUDA decode
              # kernels (and replayssm) do not: make the floor irrelevant (dt_bias is
              # initialised by hand below instead)
              time_step_min=1e-9, time_step_floor=1e-9, chunk_size=64,
              tie_word_embeddings=False, use_mamba_kernels=False)
    try:
        cfg = NemotronHConfig(**kw)
    except Exception as e:  # noqa: BLE001 - older/newer argument names
        log(f"NemotronHConfig(hybrid_override_pattern=...) failed ({e}); trying layers_block_type")
        kw.pop("hybrid_override_pattern")
        names = {"M": "mamba", "*": "attention", "-": "mlp", "E": "moe"}
        kw["layers_block_type"] = [names[c] for c in pattern]
        kw["num_hidden_layers"] = len(pattern)
        cfg = NemotronHConfig(**kw)
    cfg._attn_implementation = "sdpa"
    model = NemotronHForCausalLM(cfg)
    # Mamba-2's usual dt initialisation: dt log-uniform in [1e-3, 1e-1], dt_bias = softplus^-1(dt)
    import torch

    gen = torch.Generator().manual_seed(4321)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("dt_bias"):
                u = torch.rand(p.shape, generator=gen)
                dt = torch.exp(u * (math.log(1e-1) - math.log(1e-3)) + math.log(1e-3))
                p.copy_(dt + torch.log(-torch.expm1(-dt)))
    return model


MODELS = {
    "qwen35-gdn-tiny": (build_qwen, 1234),
    "nemotronh-m2-tiny": (build_nemotron, 1235),
}


# --------------------------------------------------------------------------------------------
# data
# --------------------------------------------------------------------------------------------

def load_corpus(root):
    import torch

    out = []
    for name, w in SOURCES:
        path = os.path.join(root, name + ".txt.gz")
        with gzip.open(path, "rb") as f:
            data = f.read()
        out.append((name, w, torch.frombuffer(bytearray(data), dtype=torch.uint8)))
        log(f"corpus {name}: {len(data)} bytes, p = {w}")
    return out


def heldout_windows(text, k=HELDOUT_K, n=SEQ):
    """The quickstart's windows: k windows of n + 1 tokens, window j at floor(j (M-n-1)/(k-1))."""
    m = len(text)
    starts = [0] if k == 1 else [j * (m - n - 1) // (k - 1) for j in range(k)]
    return starts, [text[s:s + n + 1] for s in starts]


class Sampler:
    def __init__(self, corpus, seed, device):
        import torch

        self.gen = torch.Generator().manual_seed(seed)
        self.srcs = [(t.to(device), len(t)) for _, _, t in corpus]
        self.probs = torch.tensor([w for _, w, _ in corpus], dtype=torch.float64)
        self.device = device
        self.ar = torch.arange(SEQ + 1, device=device)

    def batch(self, b):
        import torch

        which = torch.multinomial(self.probs, b, replacement=True, generator=self.gen)
        rows = []
        for i in range(b):
            t, n = self.srcs[int(which[i])]
            off = int(torch.randint(0, n - SEQ - 1, (1,), generator=self.gen))
            rows.append(t[off:off + SEQ + 1])
        x = torch.stack(rows).long()
        return x[:, :-1], x[:, 1:]


# --------------------------------------------------------------------------------------------
# evaluation
# --------------------------------------------------------------------------------------------

def bits_per_byte(model, windows, device, autocast):
    """Mean over windows and positions of -log2 p(x_{t+1} | x_<=t), full-sequence forward."""
    import torch
    import torch.nn.functional as F

    total, count = 0.0, 0
    per_window = []
    with torch.no_grad():
        for w in windows:
            ids = torch.tensor(list(w), dtype=torch.long, device=device).view(1, -1)
            ctx = (torch.autocast("cuda", dtype=torch.bfloat16) if autocast
                   else contextlib.nullcontext())
            with ctx:
                logits = model(input_ids=ids[:, :-1], use_cache=False).logits
            nll = F.cross_entropy(logits[0].float(), ids[0, 1:], reduction="sum").item()
            per_window.append(nll / (len(w) - 1) / math.log(2))
            total += nll
            count += len(w) - 1
    return total / count / math.log(2), per_window


def cached_decode(model, tokens):
    """transformers' step-by-step cached decode, one token per call (scripts/make_fixtures.py)."""
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


def plot(csv_rows, path, title):
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except Exception as e:  # noqa: BLE001
        log(f"no matplotlib ({e}); loss.png left to the caller")
        return False
    steps = [r["step"] for r in csv_rows if r["train_bpb"] is not None]
    tr = [r["train_bpb"] for r in csv_rows if r["train_bpb"] is not None]
    hs = [r["step"] for r in csv_rows if r["heldout_bpb"] is not None]
    hv = [r["heldout_bpb"] for r in csv_rows if r["heldout_bpb"] is not None]
    fig, ax = plt.subplots(figsize=(7, 4.2), dpi=100)
    ax.plot(steps, tr, label="training text (bits/byte)")
    ax.plot(hs, hv, "o-", label="Moby-Dick, 4 held-out windows")
    ax.set_xlabel("step (16 x 2048 bytes)")
    ax.set_ylabel("bits per byte")
    ax.set_ylim(1.0, 5.0)
    ax.grid(alpha=0.3)
    ax.legend()
    ax.set_title(title)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return True


# --------------------------------------------------------------------------------------------
# training
# --------------------------------------------------------------------------------------------

def train(name, args):
    import numpy as np
    import torch
    import torch.nn.functional as F

    builder, seed = MODELS[name]
    work = os.path.join(args.work, name)
    os.makedirs(work, exist_ok=True)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    torch.manual_seed(seed)
    np.random.seed(seed)
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.backends.cudnn.allow_tf32 = True

    model = builder().to(torch.float32)
    n_params = sum(p.numel() for p in model.parameters())
    log(f"{name}: {n_params} parameters ({n_params * 2 / 1e6:.2f} MB in bf16)")
    for n, p in model.named_parameters():
        if ".0." in n or ".3." in n or "layers" not in n:
            log(f"    {n} {tuple(p.shape)}")
    model.to(device).train()

    corpus = load_corpus(args.corpus)
    moby = open(args.heldout, "rb").read()
    starts, windows = heldout_windows(moby)
    log(f"held-out: {len(moby)} bytes, windows at {starts}")
    sampler = Sampler(corpus, seed, device)

    decay, no_decay = [], []
    for n, p in model.named_parameters():
        (decay if p.ndim >= 2 and "embed" not in n else no_decay).append(p)
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1},
                             {"params": no_decay, "weight_decay": 0.0}],
                            lr=args.lr, betas=(0.9, 0.95), eps=1e-8,
                            **({"fused": True} if device == "cuda" else {}))
    warmup = 100
    total_steps = None
    micro, accum = BATCH, 1
    rows, window_losses = [], []
    step = 0
    t_train = time.time()
    t_rate = None
    nonfinite = 0
    try:
        while True:
            elapsed = time.time() - t_train
            if elapsed >= args.train_seconds or (total_steps is not None and step >= total_steps):
                break
            if step == 20:
                t_rate = time.time()
            if step == warmup and t_rate is not None:
                rate = (warmup - 20) / (time.time() - t_rate)
                left = args.train_seconds - (time.time() - t_train)
                total_steps = step + int(rate * left * 0.97)
                log(f"{rate:.2f} steps/s ({rate * BATCH * SEQ / 1e3:.0f}K tokens/s): "
                    f"{total_steps} steps in all")
            if step < warmup:
                lr = args.lr * (step + 1) / warmup
            else:
                span = max(1, (total_steps or step + 1) - warmup)
                frac = min(1.0, (step - warmup) / span)
                lr = args.lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * frac)))
            for g in opt.param_groups:
                g["lr"] = lr
            x, y = sampler.batch(BATCH)
            try:
                opt.zero_grad(set_to_none=True)
                loss_sum = 0.0
                for i in range(accum):
                    xs, ys = x[i * micro:(i + 1) * micro], y[i * micro:(i + 1) * micro]
                    ctx = (torch.autocast("cuda", dtype=torch.bfloat16) if device == "cuda"
                           else contextlib.nullcontext())
                    with ctx:
                        logits = model(input_ids=xs, use_cache=False).logits
                    loss = F.cross_entropy(logits.float().reshape(-1, 256), ys.reshape(-1))
                    (loss / accum).backward()
                    loss_sum += loss.item() / accum
            except torch.cuda.OutOfMemoryError:
                if micro == 1:
                    raise
                micro //= 2
                accum *= 2
                opt.zero_grad(set_to_none=True)
                torch.cuda.empty_cache()
                log(f"out of memory: micro-batch {micro} x {accum}")
                continue
            if not math.isfinite(loss_sum):
                nonfinite += 1
                log(f"loss not finite at step {step}: step skipped ({nonfinite})")
                opt.zero_grad(set_to_none=True)
                if nonfinite > 20:
                    break
                continue
            gnorm = float(torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0))
            opt.step()
            step += 1
            window_losses.append(loss_sum / math.log(2))
            if step % args.log_every == 0 or step == 1:
                tr = sum(window_losses) / len(window_losses)
                window_losses = []
                ho = None
                if step % args.eval_every == 0 or step == 1:
                    model.eval()
                    try:
                        ho, _ = bits_per_byte(model, windows, device, autocast=(device == "cuda"))
                    except Exception:  # noqa: BLE001 - the curve may miss a point; training goes on
                        traceback.print_exc()
                    model.train()
                rows.append({"step": step, "tokens": step * BATCH * SEQ,
                             "seconds": round(time.time() - t_train, 1), "lr": lr,
                             "train_bpb": round(tr, 5), "grad_norm": round(gnorm, 4),
                             "heldout_bpb": None if ho is None else round(ho, 5)})
                log(f"step {step:5d} lr {lr:.2e} train {tr:.4f} bpb gnorm {gnorm:.3f}"
                    + ("" if ho is None else f"  held-out {ho:.4f} bpb"))
    except Exception:  # noqa: BLE001 - keep what has been trained so far
        traceback.print_exc()
        if step == 0:
            raise
        log(f"training stopped by an error at step {step}; saving what there is")
    train_seconds = time.time() - t_train
    log(f"trained {step} steps ({step * BATCH * SEQ / 1e6:.1f}M tokens) in {train_seconds:.0f} s")
    with open(os.path.join(work, "loss.csv"), "w") as f:
        keys = ["step", "tokens", "seconds", "lr", "train_bpb", "grad_norm", "heldout_bpb"]
        f.write(",".join(keys) + "\n")
        for r in rows:
            f.write(",".join("" if r[k] is None else str(r[k]) for k in keys) + "\n")

    # ---- bf16 checkpoint
    model.eval()
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(p.to(torch.bfloat16).to(torch.float32))
    ckdir = os.path.join(work, "ckpt")
    # Save a bf16 copy. Never cast the live model: .to(bfloat16) also rounds non-persistent
    # float buffers (Qwen's RoPE inv_freq), which a later .to(float32) does not undo.
    bf16 = copy.deepcopy(model).to(torch.bfloat16)
    try:
        try:
            bf16.save_pretrained(ckdir, safe_serialization=True)
        except TypeError:
            bf16.save_pretrained(ckdir)
    except Exception:  # noqa: BLE001 - keep the weights whatever save_pretrained thinks
        traceback.print_exc()
        from safetensors.torch import save_file

        os.makedirs(ckdir, exist_ok=True)
        sd = {k: v.detach().contiguous().clone().cpu() for k, v in bf16.state_dict().items()}
        save_file(sd, os.path.join(ckdir, "model.safetensors"), metadata={"format": "pt"})
        bf16.config.to_json_file(os.path.join(ckdir, "config.json"))
    del bf16
    os.replace(os.path.join(ckdir, "model.safetensors"), os.path.join(work, "model.safetensors"))
    os.replace(os.path.join(ckdir, "config.json"), os.path.join(work, "config.json"))
    shutil.copyfile(os.path.join(work, "model.safetensors"),
                    os.path.join(args.out, name + ".safetensors"))
    log(f"saved bf16 checkpoint: {os.path.getsize(os.path.join(work, 'model.safetensors'))} bytes; "
        f"left in ckpt/: {os.listdir(ckdir)}")
    result = {"model": name, "parameters": n_params, "steps": step, "batch": BATCH, "seq": SEQ,
              "tokens": step * BATCH * SEQ, "train_seconds": round(train_seconds, 1),
              "lr": args.lr, "seed": seed, "sources": SOURCES, "heldout_starts": starts,
              "final_train_bpb": rows[-1]["train_bpb"] if rows else None}
    write_rest(work, args.out, name, result, rows)

    del opt
    model.to("cpu")
    if device == "cuda":
        torch.cuda.empty_cache()
    result.update(evaluate(name, work, moby, device))
    write_rest(work, args.out, name, result, rows)
    return result


def load_checkpoint(name, path):
    """The committed checkpoint as a user loads it: from_pretrained, bf16 weights to fp32."""
    import torch
    import transformers

    cls = {"qwen35-gdn-tiny": "Qwen3_5ForCausalLM",
           "nemotronh-m2-tiny": "NemotronHForCausalLM"}[name]
    cls = getattr(transformers, cls)
    try:
        model = cls.from_pretrained(path, dtype=torch.float32, attn_implementation="sdpa")
    except TypeError:
        model = cls.from_pretrained(path, torch_dtype=torch.float32, attn_implementation="sdpa")
    model = model.to(torch.float32).eval()
    bad = [n for n, b in model.named_buffers()
           if b.is_floating_point() and b.dtype != torch.float32]
    bad += [n for n, p in model.named_parameters() if p.dtype != torch.float32]
    if bad:
        raise RuntimeError("not fp32 after loading: " + ", ".join(bad))
    return model


def evaluate(name, path, moby, device):
    """From the checkpoint in path (fresh from_pretrained, fp32 compute): held-out bits per byte
    on the quickstart's 4 windows and on 32 windows (device, TF32 off), and the CPU reference of
    the test (cached decode of the first 512 bytes; tokens.npy and ref_logits.npy in path)."""
    import numpy as np
    import torch

    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    try:
        torch.set_float32_matmul_precision("highest")
    except Exception:  # noqa: BLE001
        pass
    result = {}
    model = load_checkpoint(name, path)
    starts, windows = heldout_windows(moby)
    try:
        model.to(device)
        bpb, per = bits_per_byte(model, windows, device, autocast=False)
        result["heldout_bpb_fp32"] = bpb
        result["heldout_bpb_fp32_per_window"] = per
        log(f"held-out bits per byte (fp32, {device}, 4 windows): {bpb:.5f}  per window {per}")
        _, w32 = heldout_windows(moby, 32)
        bpb32, _ = bits_per_byte(model, w32, device, autocast=False)
        result["heldout_bpb_fp32_32windows"] = bpb32
        log(f"held-out bits per byte (fp32, 32 windows): {bpb32:.5f}")
    except Exception:  # noqa: BLE001
        traceback.print_exc()

    # the CPU reference for the test: cached decode of the first 512 bytes of Moby-Dick
    try:
        cpu = model.to("cpu").eval()
        torch.set_num_threads(8)
        toks = list(moby[:N_REF])
        t1 = time.time()
        ref = cached_decode(cpu, toks)
        log(f"cached CPU decode of {N_REF} tokens: {time.time() - t1:.1f} s, "
            f"max|logit| {abs(ref).max():.3g}")
        np.save(os.path.join(path, "tokens.npy"), np.array(toks, dtype=np.int32))
        np.save(os.path.join(path, "ref_logits.npy"), ref.astype(np.float32))
        lp = torch.log_softmax(torch.from_numpy(ref).double(), -1)
        nll = -lp[torch.arange(N_REF - 1), torch.tensor(toks[1:])].mean().item()
        result["ref512_bpb"] = nll / math.log(2)
        log(f"bits per byte over the 511 predictions of the reference: {result['ref512_bpb']:.5f}")
        with torch.no_grad():
            full = cpu(input_ids=torch.tensor(toks).view(1, -1), use_cache=False).logits[0].numpy()
        rel = float(abs(full - ref).max() / abs(ref).max())
        result["full_vs_cached_rel"] = rel
        log(f"full-sequence forward vs cached decode (CPU fp32): rel {rel:.3g}")
    except Exception:  # noqa: BLE001
        traceback.print_exc()
    return result


def write_rest(work, out, name, result, rows):
    import torch
    import transformers

    result["torch"] = torch.__version__
    result["transformers"] = transformers.__version__
    result["device"] = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "cpu"
    with open(os.path.join(work, "eval.json"), "w") as f:
        json.dump(result, f, indent=2)
    if rows and not os.path.exists(os.path.join(work, "loss.png")):
        plot(rows, os.path.join(work, "loss.png"), name)
    tar_path = os.path.join(out, name + "-rest.tar")
    with tarfile.open(tar_path + ".tmp", "w") as tar:
        for fn in ("config.json", "eval.json", "loss.csv", "loss.png", "tokens.npy",
                   "ref_logits.npy"):
            p = os.path.join(work, fn)
            if os.path.exists(p):
                tar.add(p, arcname=fn)
    os.replace(tar_path + ".tmp", tar_path)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True, choices=sorted(MODELS))
    ap.add_argument("--out", required=True)
    ap.add_argument("--train-seconds", type=float, default=420)
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--work", default="/tmp/rssm-train")
    ap.add_argument("--corpus", default=".corpus")
    ap.add_argument("--heldout", default="data/moby-dick.txt")
    ap.add_argument("--log-every", type=int, default=25)
    ap.add_argument("--eval-every", type=int, default=100)
    ap.add_argument("--reference-only", metavar="DIR",
                    help="no training: load DIR (config.json + model.safetensors), write "
                         "DIR/tokens.npy, DIR/ref_logits.npy, DIR/eval-reference.json")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    import torch
    import transformers

    log(f"torch {torch.__version__}, transformers {transformers.__version__}, "
        f"cuda {torch.cuda.is_available()}")
    try:
        if args.reference_only:
            import torch

            device = "cuda" if torch.cuda.is_available() else "cpu"
            moby = open(args.heldout, "rb").read()
            res = evaluate(args.model, args.reference_only, moby, device)
            with open(os.path.join(args.reference_only, "eval-reference.json"), "w") as f:
                json.dump(res, f, indent=2)
        else:
            res = train(args.model, args)
        log("result: " + json.dumps(res))
        return 0
    except Exception:  # noqa: BLE001
        traceback.print_exc()
        return 1


if __name__ == "__main__":
    sys.exit(main())
