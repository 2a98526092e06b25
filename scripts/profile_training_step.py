#!/usr/bin/env python3
"""Where one training step of a fixture model spends its GPU time (docs/next-session.md: the GDN
model trains at 83-96K tokens/s, the Mamba-2 one at 298K, and the cause was not measured):

    python3 scripts/profile_training_step.py --model qwen35-gdn-tiny [--chunks 64,256,512]

Builds the model as scripts/train_fixture_models.py does (design, fast scans checked and on),
times a forward+backward step of BATCH x SEQ random tokens at each GDN chunk length given, as
training does before it picks one (GdnChunk.fastest), then profiles one step at the first and prints the operators with the largest GPU time and the step's CPU time
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


def main():
    import torch
    from torch.profiler import ProfilerActivity, profile

    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True, choices=sorted(tfm.MODELS))
    ap.add_argument("--chunks", default="256", help="GDN chunk lengths to time (comma list)")
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
    chunks = [int(c) for c in args.chunks.split(",")]
    # the timing training uses to pick its chunk (two steps each, the second counted)
    times = tfm.GdnChunk.fastest(model, "cuda", chunks, args.batch)
    for c, dt in sorted(times.items()):
        tfm.log(f"GDN chunk {c}: {args.batch * tfm.SEQ / dt / 1e3:.0f}K tokens/s (GPU alone)")
    tfm.GdnChunk.size = chunks[0]
    x = torch.randint(0, 256, (args.batch, tfm.SEQ), device="cuda",
                      generator=torch.Generator(device="cuda").manual_seed(1))
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        t = time.time()
        tfm.dropped_step(model, x, "cuda")
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
