#!/usr/bin/env python3
"""An independent float64 decode of a Qwen3.5 text checkpoint (qwen3_5_text: GDN + gated
attention + SwiGLU, dense, untied or tied), written from the equations of
shared/reference/hf-hybrid-architectures.md (A.3) with NumPy only: no transformers, no torch, no
code shared with replayssm. It exists because the GPU run's transformers reference for
data/models/qwen35-gdn-tiny was computed with bf16-rounded RoPE frequencies (docs/trained-models.md,
"The RoPE buffer"); this script reproduces that stored reference when told to round the same way
(--bf16-inv-freq), which validates it, and without that flag gives the reference the test uses.

    python3 tests/trained/qwen35_reference.py data/models/qwen35-gdn-tiny --steps 512 \
        --out data/models/qwen35-gdn-tiny/ref_logits.npy [--compare FILE.npy ...]
    python3 tests/trained/qwen35_reference.py data/models/qwen35-gdn-tiny --bpb data/moby-dick.txt

RoPE as transformers computes it when it loads a checkpoint: inv_freq = 1 / theta^(2i/rd) in
fp32, angle = pos * inv_freq in fp32; everything else in float64. --bpb: bits per byte over the
quickstart's 4 windows of 2049 bytes (window k at floor(k (M - 2049) / 3)), step by step.
"""

import argparse
import json
import math
import struct
import sys

import numpy as np


def load(d):
    cfg = json.load(open(d + "/config.json"))
    if "text_config" in cfg:
        cfg = dict(cfg["text_config"], tie_word_embeddings=cfg.get("tie_word_embeddings", False))
    raw = open(d + "/model.safetensors", "rb").read()
    hl = struct.unpack("<Q", raw[:8])[0]
    hdr = json.loads(raw[8:8 + hl])
    base = 8 + hl
    w = {}
    for k, v in hdr.items():
        if k == "__metadata__":
            continue
        b, e = v["data_offsets"]
        buf = raw[base + b:base + e]
        if v["dtype"] == "BF16":
            x = (np.frombuffer(buf, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)
        elif v["dtype"] == "F32":
            x = np.frombuffer(buf, dtype=np.float32)
        else:
            raise SystemExit(f"{d}: tensor {k}: dtype {v['dtype']} not handled")
        w[k.replace("model.language_model.", "model.")] = x.astype(np.float64).reshape(v["shape"])
    return cfg, w


def bf16_round(x):
    u = x.astype(np.float32).view(np.uint32)
    u = (u + 0x7FFF + ((u >> 16) & 1)) >> 16
    return (u.astype(np.uint32) << 16).view(np.float32)


class Decoder:
    def __init__(self, cfg, w, bf16_inv_freq=False):
        self.c, self.w = cfg, w
        rp = cfg.get("rope_parameters") or {}
        self.theta = rp.get("rope_theta", cfg.get("rope_theta", 10000.0))
        prf = rp.get("partial_rotary_factor", cfg.get("partial_rotary_factor", 0.25))
        self.rd = int(cfg["head_dim"] * prf)
        inv = (np.float32(1.0) / np.power(np.float32(self.theta),
               np.arange(0, self.rd, 2, dtype=np.float32) / np.float32(self.rd))).astype(np.float32)
        self.inv = bf16_round(inv) if bf16_inv_freq else inv
        types = cfg.get("layer_types")
        if types is None:
            every = cfg.get("full_attention_interval", 4)
            types = ["linear_attention" if (i + 1) % every else "full_attention"
                     for i in range(cfg["num_hidden_layers"])]
        self.types = types
        tied = cfg.get("tie_word_embeddings")
        self.head = w["model.embed_tokens.weight"] if tied else w["lm_head.weight"]
        self.reset()

    def reset(self):
        self.st, self.pos = {}, 0

    def rms1p(self, x, wt):
        return x / np.sqrt(np.mean(x * x, -1, keepdims=True) + self.c["rms_norm_eps"]) * (1 + wt)

    @staticmethod
    def silu(x):
        return x / (1 + np.exp(-x))

    def gdn(self, p, u, L):
        c, w = self.c, self.w
        Hk, Hv = c["linear_num_key_heads"], c["linear_num_value_heads"]
        dk, dv = c["linear_key_head_dim"], c["linear_value_head_dim"]
        qkv = w[p + "in_proj_qkv.weight"] @ u
        z = (w[p + "in_proj_z.weight"] @ u).reshape(Hv, dv)
        b = w[p + "in_proj_b.weight"] @ u
        a = w[p + "in_proj_a.weight"] @ u
        cw = w[p + "conv1d.weight"][:, 0, :]
        cs = self.st.setdefault((L, "conv"), np.zeros((qkv.size, cw.shape[1])))
        cs[:, :-1] = cs[:, 1:].copy()
        cs[:, -1] = qkv
        y = self.silu((cs * cw).sum(1))
        q = y[:Hk * dk].reshape(Hk, dk)
        k = y[Hk * dk:2 * Hk * dk].reshape(Hk, dk)
        v = y[2 * Hk * dk:].reshape(Hv, dv)
        beta = 1 / (1 + np.exp(-b))
        x = a + w[p + "dt_bias"]
        sp = np.where(x > 20, x, np.log1p(np.exp(np.minimum(x, 20))))
        g = -np.exp(w[p + "A_log"]) * sp
        q = q / np.sqrt((q * q).sum(-1, keepdims=True) + 1e-6) * dk ** -0.5
        k = k / np.sqrt((k * k).sum(-1, keepdims=True) + 1e-6)
        S = self.st.setdefault((L, "S"), np.zeros((Hv, dk, dv)))  # HF layout [Hv][dk][dv]
        r = Hv // Hk
        o = np.zeros((Hv, dv))
        for h in range(Hv):
            kh, qh = k[h // r], q[h // r]
            S[h] *= math.exp(g[h])
            delta = (v[h] - kh @ S[h]) * beta[h]
            S[h] += np.outer(kh, delta)
            o[h] = qh @ S[h]
        o = o / np.sqrt(np.mean(o * o, -1, keepdims=True) + c["rms_norm_eps"])
        o = o * w[p + "norm.weight"] * self.silu(z)
        return w[p + "out_proj.weight"] @ o.reshape(-1)

    def attn(self, p, u, L):
        c, w = self.c, self.w
        nH, nKV, D = c["num_attention_heads"], c["num_key_value_heads"], c["head_dim"]
        qg = (w[p + "q_proj.weight"] @ u).reshape(nH, 2 * D)
        q, gate = qg[:, :D], qg[:, D:].reshape(-1)
        k = (w[p + "k_proj.weight"] @ u).reshape(nKV, D)
        v = (w[p + "v_proj.weight"] @ u).reshape(nKV, D)
        q = self.rms1p(q, w[p + "q_norm.weight"])
        k = self.rms1p(k, w[p + "k_norm.weight"])
        ang = (np.float32(self.pos) * self.inv).astype(np.float32)
        cs, sn = np.cos(ang.astype(np.float64)), np.sin(ang.astype(np.float64))
        half, rd = self.rd // 2, self.rd

        def rope(x):
            x = x.copy()
            x1, x2 = x[:, :half].copy(), x[:, half:rd].copy()
            x[:, :half] = x1 * cs - x2 * sn
            x[:, half:rd] = x2 * cs + x1 * sn
            return x

        q, k = rope(q), rope(k)
        K = self.st.setdefault((L, "K"), [])
        V = self.st.setdefault((L, "V"), [])
        K.append(k)
        V.append(v)
        Ka, Va = np.stack(K), np.stack(V)
        rep = nH // nKV
        o = np.zeros((nH, D))
        for h in range(nH):
            sc = Ka[:, h // rep] @ q[h] * D ** -0.5
            pr = np.exp(sc - sc.max())
            o[h] = (pr / pr.sum()) @ Va[:, h // rep]
        o = o.reshape(-1) * (1 / (1 + np.exp(-gate)))
        return w[p + "o_proj.weight"] @ o

    def step(self, tok):
        w = self.w
        h = w["model.embed_tokens.weight"][tok].copy()
        for L, ty in enumerate(self.types):
            p = f"model.layers.{L}."
            u = self.rms1p(h, w[p + "input_layernorm.weight"])
            if ty == "linear_attention":
                h = h + self.gdn(p + "linear_attn.", u, L)
            else:
                h = h + self.attn(p + "self_attn.", u, L)
            u = self.rms1p(h, w[p + "post_attention_layernorm.weight"])
            m = p + "mlp."
            h = h + w[m + "down_proj.weight"] @ (self.silu(w[m + "gate_proj.weight"] @ u)
                                                  * (w[m + "up_proj.weight"] @ u))
        self.pos += 1
        return self.head @ self.rms1p(h, w["model.norm.weight"])


def nll_bits(logits, target):
    m = logits.max()
    return (m + math.log(np.exp(logits - m).sum()) - logits[target]) / math.log(2)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("--steps", type=int, default=512)
    ap.add_argument("--tokens", help="int32 .npy (default MODEL/tokens.npy)")
    ap.add_argument("--out", help="write float32 [steps][V] logits here")
    ap.add_argument("--compare", nargs="*", default=[], help=".npy logits to compare with")
    ap.add_argument("--bf16-inv-freq", action="store_true",
                    help="round the RoPE frequencies to bf16 (what the GPU run's reference did)")
    ap.add_argument("--bpb", metavar="TEXT", help="bits per byte on the quickstart windows of TEXT")
    args = ap.parse_args()
    cfg, w = load(args.model)
    dec = Decoder(cfg, w, args.bf16_inv_freq)
    if args.bpb:
        text = open(args.bpb, "rb").read()
        n, kw = 2048, 4
        total, per = 0.0, []
        for j in range(kw):
            s = j * (len(text) - n - 1) // (kw - 1)
            win = text[s:s + n + 1]
            dec.reset()
            bits = sum(nll_bits(dec.step(win[t]), win[t + 1]) for t in range(n))
            per.append(bits / n)
            total += bits
            print(f"window {j} at {s}: {bits / n:.6f} bits per byte", flush=True)
        print(f"bits per byte over {kw} windows of {n + 1}: {total / (kw * n):.6f}")
        return 0
    toks = np.load(args.tokens or args.model + "/tokens.npy")[:args.steps]
    out = np.stack([dec.step(int(t)) for t in toks])
    if args.out:
        np.save(args.out, out.astype(np.float32))
    bits = np.mean([nll_bits(out[t], int(toks[t + 1])) for t in range(len(toks) - 1)])
    print(f"{len(toks)} steps, bits per byte over {len(toks) - 1} predictions: {bits:.6f}")
    for f in args.compare:
        other = np.load(f)[:len(toks)].astype(np.float64)
        rel = np.abs(other - out).max(1) / np.abs(out).max(1)
        print(f"{f}: worst max|diff|/max|ref| per step {rel.max():.3g} (step {rel.argmax()}), "
              f"median {np.median(rel):.3g}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
