#!/usr/bin/env python3
"""Where one training step of a fixture model spends its GPU time (docs/next-session.md: the GDN
model trains at 83-96K tokens/s, the Mamba-2 one at 298K, and the cause was not measured):

    python3 scripts/profile_training_step.py --model qwen35-gdn-tiny [--chunks 64,256,512]

Builds the model as scripts/train_fixture_models.py does (design, fast scans checked and on),
times STEPS forward+backward steps of BATCH x SEQ random tokens (bf16 autocast, as in training;
the tokens' values do not change the time) at each GDN chunk length given, then profiles one
step at the first and prints the operators with the largest GPU time and the step's CPU time
(a step whose CPU time is near its wall time is bound by launches, not by the GPU). Needs a GPU,
torch and transformers; writes nothing.
"""
import argparse
import importlib.util
import os
import time

HERE = os.path.dirname(os.path.abspath(__file__))
_spec = importlib.util.spec_from_file_location("tfm", os.path.join(HERE, "train_fixture_models.py"))
tfm = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(tfm)


def step(model, x, y):
    import torch
    import torch.nn.functional as F

    with torch.autocast("cuda", dtype=torch.bfloat16):
        logits = model(input_ids=x, use_cache=False).logits
    loss = F.cross_entropy(logits.float().reshape(-1, 256), y.reshape(-1))
    loss.backward()
    model.zero_grad(set_to_none=True)


def main():
    import torch
    from torch.profiler import ProfilerActivity, profile

    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True, choices=sorted(tfm.MODELS))
    ap.add_argument("--chunks", default="256", help="GDN chunk lengths to time (comma list)")
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--batch", type=int, default=tfm.BATCH)
    ap.add_argument("--rows", type=int, default=25, help="operators to print")
    args = ap.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    builder, seed = tfm.MODELS[args.model]
    torch.manual_seed(seed)
    model = builder().to(torch.float32)
    fixed = tfm.design_ssm_heads(model, seed)
    model.to("cuda").train()
    fixed.restore()
    info = tfm.FastScans().enable(model, "cuda")
    tfm.log(f"fast scans: {info}")
    gen = torch.Generator(device="cuda").manual_seed(1)
    x = torch.randint(0, 256, (args.batch, tfm.SEQ), device="cuda", generator=gen)
    y = torch.randint(0, 256, (args.batch, tfm.SEQ), device="cuda", generator=gen)
    chunks = [int(c) for c in args.chunks.split(",")]
    for c in chunks:
        tfm.GdnChunk.size = c
        step(model, x, y)                         # warm-up (allocator, kernels' first launch)
        torch.cuda.synchronize()
        t = time.time()
        for _ in range(args.steps):
            step(model, x, y)
        torch.cuda.synchronize()
        dt = (time.time() - t) / args.steps
        tfm.log(f"GDN chunk {c}: {dt * 1e3:.0f} ms a step, "
                f"{args.batch * tfm.SEQ / dt / 1e3:.0f}K tokens/s (GPU alone)")
    tfm.GdnChunk.size = chunks[0]
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        t = time.time()
        step(model, x, y)
        torch.cuda.synchronize()
        wall = time.time() - t
    ev = prof.key_averages()
    cpu = sum(e.self_cpu_time_total for e in ev) / 1e6
    tfm.log(f"profiled step: wall {wall * 1e3:.0f} ms, CPU self time {cpu * 1e3:.0f} ms, "
            f"{sum(e.count for e in ev)} operator calls")
    try:    # torch >= 2.4 names it device time; older releases cuda time
        table = ev.table(sort_by="device_time_total", row_limit=args.rows, max_name_column_width=60)
    except (AttributeError, KeyError, ValueError):
        table = ev.table(sort_by="cuda_time_total", row_limit=args.rows, max_name_column_width=60)
    print(table)


if __name__ == "__main__":
    main()
