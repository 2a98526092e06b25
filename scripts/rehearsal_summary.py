#!/usr/bin/env python3
"""Summary of scripts/device_4b_rehearsal.sh (python standard library; h5py optional).

    rehearsal_summary.py --out-dir DIR [--steps N] MODEL.log...
    rehearsal_summary.py --plan QWEN.log --steps N --left S [--reserve S] [--refusal]
    rehearsal_summary.py --project summary.json [--N 131072] [--W 4] [--rows-per-window 9]
                         [--rows-fit R]

Reads the timestamped run logs the rehearsal writes (each line "EPOCH TEXT"; "@@ start",
"@@ fault" (the shard fault checks on the 4B checkpoint),
the RSSM_CUDA_MEMINFO=1 line, RSSM_BLOCK_TIMES=1 block lines, "@@ nvidia-smi", "@@ exit",
`replayssm summary` text) and writes DIR/summary.md and DIR/summary.json:

- load: seconds from the process start to the memory line, less the upload and batch build
  (so: reading the checkpoint from disk, bf16 -> fp32, checksum, tokens);
- memory: the runtime's estimate for the batch, what the batch took, weights, free memory, rows
  the estimate lets fit at 131072 positions; nvidia-smi's peak (max - min of memory.used);
- time per step: block 1 (block 0 holds the CUDA Graph capture) and the last block; the
  least-squares fit over blocks 1.. of ms per step = a + b * pos (pos = the block's middle
  position), i.e. t(N) = a N + b N^2 / 2 for N steps;
- the projection to the paper's runs (W = 4 windows x N = 131072 steps, R = 9 rows per window):
  b scales with the rows (attention reads every row's KV cache), a does not (the GEMMs run on
  tiles of the model's row tile whatever the rows of one tile are), so per pass of w windows
      T_pass(N, w) = a N + (w / w0) b N^2 / 2        (w0 = the measured windows, 1)
  The row tile is the memory line's "GEMM row tile" (16 for the 4B models; 64 in logs from
  before it was printed): a pass of more rows than one tile (9 w > 16) pays the GEMMs once per
  tile, so there the 1-H200 projection is a lower bound (only a's GEMM part grows; the log
  does not split a)
  on one H200 the passes hold at most floor(rows_fit_131072 / 9) windows each; on 8 H200s each
  window runs on its own GPU (--shard k/4), so T8 = T_pass(N, 1) (4 GPUs busy);
- the control (replay L=16 ckpt=fp32): its mean and max KL (the harness's floor).

--plan prints the steps the next model can take within S seconds (less --reserve), from the
first log's load and step times; at most --steps, a multiple of 256, at least 256.
"""
import argparse
import json
import math
import os
import re
import sys

MEM_RE = re.compile(
    r"cuda memory: device ([\d.]+) GiB, free ([\d.]+) GiB before the weights; weights ([\d.]+) "
    r"GiB \(uploaded in ([\d.]+) s\); batch (\d+) rows x (\d+) positions: estimate ([\d.]+) "
    r"GiB, took ([\d.]+) GiB \(built in ([\d.]+) s\); free ([\d.]+) GiB after; estimate lets "
    r"(\d+) rows fit at (\d+) positions, (\d+) at 131072")
TILE_RE = re.compile(r"GEMM row tile (\d+)")
BLOCK_RE = re.compile(r"block steps (\d+)\.\.(\d+): ([\d.]+) s, ([\d.]+) ms per step")
KL_RE = re.compile(r"^(\S+)\s+([-+\d.e]+|nan|inf) \+- ")


def parse(path):
    r = {"log": os.path.basename(path), "blocks": [], "summary_kl": {}}
    if not os.path.exists(path):
        r["error"] = "no log"
        return r
    in_summary = False
    for raw in open(path, errors="replace"):
        raw = raw.rstrip("\n")
        parts = raw.split(" ", 1)
        try:
            t = float(parts[0])
            text = parts[1] if len(parts) > 1 else ""
        except ValueError:
            t, text = None, raw
        if text.startswith("@@ start"):
            r["t_start"] = t
            m = re.search(r"steps (\d+)", text)
            if m:
                r["steps"] = int(m.group(1))
        elif text.startswith("@@ exit") and "exit" not in r:
            f = text.split()
            r["exit"] = int(f[2]) if len(f) > 2 and f[2].lstrip("-").isdigit() else None
            r["t_end"] = t
        elif text.startswith("@@ fault "):
            r.setdefault("faults", []).append(text[len("@@ fault "):])
        elif text.startswith("@@ nvidia-smi"):
            m = re.search(r"min (\d+) max (\d+)", text)
            if m:
                r["smi_min_mib"], r["smi_max_mib"] = int(m.group(1)), int(m.group(2))
        elif "cuda memory:" in text and "mem" not in r:
            m = MEM_RE.search(text)
            if m:
                g = [float(x) for x in m.groups()]
                r["mem"] = dict(device_gib=g[0], free_before_weights_gib=g[1], weights_gib=g[2],
                                upload_s=g[3], rows=int(g[4]), positions=int(g[5]),
                                estimate_gib=g[6], took_gib=g[7], build_s=g[8],
                                free_after_gib=g[9], rows_fit_here=int(g[10]),
                                rows_fit_131072=int(g[12]))
                mt = TILE_RE.search(text)
                r["mem"]["row_tile"] = int(mt.group(1)) if mt else 64
                r["t_mem"] = t
        elif BLOCK_RE.search(text):
            m = BLOCK_RE.search(text)
            r["blocks"].append((int(m.group(1)), int(m.group(2)), float(m.group(3))))
        elif "needs" in text and "GiB of device memory" in text:
            r["refusal"] = text[text.find("needs"):]
        elif "warning:" in text and "not read by the model" in text:
            r["unused_warning"] = text[text.find("replayssm"):]
        if text.startswith("configuration ") and "mean KL" in text:
            in_summary = True
            continue
        if in_summary:
            m = KL_RE.match(text)
            if m:
                r["summary_kl"][m.group(1)] = float(m.group(2))
            elif not text.strip():
                in_summary = False
    derive(r)
    return r


def fit_line(xs, ys):
    n = len(xs)
    if n < 2:
        return (ys[0] if ys else float("nan")), 0.0
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    if sxx == 0:
        return my, 0.0
    b = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx
    return my - b * mx, b


def derive(r):
    mem = r.get("mem")
    if mem and r.get("t_start") is not None and r.get("t_mem") is not None:
        r["to_batch_s"] = round(r["t_mem"] - r["t_start"], 2)
        r["load_s"] = round(r["t_mem"] - r["t_start"] - mem["upload_s"] - mem["build_s"], 2)
    bl = r["blocks"]
    if bl:
        ms = [1e3 * s / max(b1 - b0, 1) for b0, b1, s in bl]
        r["ms_block0"] = round(ms[0], 3)
        use = list(zip(bl, ms))[1:] if len(bl) > 1 else list(zip(bl, ms))
        r["ms_start"] = round(use[0][1], 3)
        r["ms_end"] = round(use[-1][1], 3)
        r["steps_done"] = bl[-1][1]
        xs = [(b0 + b1) / 2.0 for (b0, b1, _), _ in use]
        a, b = fit_line(xs, [m for _, m in use])
        r["fit_a_ms"] = round(a, 4)
        r["fit_b_ms_per_pos"] = b
        r["decode_s"] = round(sum(s for _, _, s in bl), 2)
    if "smi_max_mib" in r:
        r["smi_peak_gib"] = round((r["smi_max_mib"] - r["smi_min_mib"]) / 1024.0, 2)
    if r["summary_kl"]:
        r["control_mean_kl"] = r["summary_kl"].get("control")


def h5_control(r, out_dir):
    """Control KL max and mean from the run file (h5py), when it is there."""
    try:
        import h5py
    except ImportError:
        return
    p = os.path.join(out_dir, r["log"][:-4] + ".h5")
    if not os.path.exists(p):
        return
    try:
        with h5py.File(p, "r") as f:
            kl = f["configs/control/kl"][()]
            r["control_max_kl"] = float(kl.max())
            r["control_mean_kl_h5"] = float(kl.mean())
            r["wall_seconds"] = float(f.attrs.get("wall_seconds", float("nan")))
            r["mean_kl"] = {c: float(f["configs"][c]["kl"][()].mean()) for c in f["configs"]}
    except Exception as e:  # noqa: BLE001 - a torn .part file
        r["h5_error"] = f"{type(e).__name__}: {e}"


def projection(r, N=131072, W=4, per_window=9, load_s=0.0, rows_fit=None):
    """Hours for the paper's W x N run on 1 and 8 H200s from the fit (see the module doc)."""
    if "fit_a_ms" not in r or "mem" not in r:
        return None
    a = r["fit_a_ms"] / 1e3
    rows_meas = r["mem"]["rows"]
    b_row = r["fit_b_ms_per_pos"] / 1e3 / rows_meas  # s per position per row
    fit_rows = rows_fit if rows_fit is not None else r["mem"]["rows_fit_131072"]
    wpp = max(1, min(W, fit_rows // per_window)) if fit_rows >= per_window else 0

    def t_pass(w):
        return load_s + a * N + b_row * per_window * w * N * N / 2.0

    out = {"a_s": a, "b_s_per_pos_per_row": b_row, "rows_fit_131072": fit_rows,
           "windows_per_pass_1gpu": wpp}
    if wpp:
        passes = [wpp] * (W // wpp) + ([W % wpp] if W % wpp else [])
        out["passes_1gpu"] = passes
        out["hours_1gpu"] = sum(t_pass(w) for w in passes) / 3600.0
    out["hours_8gpu"] = t_pass(1) / 3600.0
    out["hours_one_window"] = t_pass(1) / 3600.0
    return out


def project(args):
    """Projections from a summary.json for other lengths and window counts."""
    models = json.load(open(args.project))
    print(f"# W = {args.W} windows x N = {args.N} steps, {args.rows_per_window} rows per window")
    print("model | a (ms) | b (ns / position / row) | rows fit at 131072 | windows per pass | "
          "1 H200 (h) | 8 H200 (h)")
    for r in models:
        p = projection(r, N=args.N, W=args.W, per_window=args.rows_per_window,
                       load_s=r.get("to_batch_s", 0.0) or 0.0, rows_fit=args.rows_fit)
        if not p:
            print(f"{r.get('log', '?')} | (no timing)")
            continue
        h1 = p.get("hours_1gpu")
        print(f"{r['log'][:-4]} | {1e3 * p['a_s']:.3f} | {1e9 * p['b_s_per_pos_per_row']:.4f} | "
              f"{p['rows_fit_131072']} | {p['windows_per_pass_1gpu']} | "
              f"{'-' if h1 is None else f'{h1:.2f}'} | {p['hours_8gpu']:.2f}")
    return 0


def plan(args):
    r = parse(args.plan)
    if "ms_end" not in r:
        print(args.steps)
        return 0
    fixed = r.get("to_batch_s", 60.0) + 5.0  # load, upload, batch build, summary
    gen = 40.0  # make_4b for one 4B model, an upper bound
    per = max(r["ms_end"], r["ms_start"]) / 1e3
    # this model's run, and the refusal check after it (another load) when asked for
    avail = args.left - args.reserve - gen - fixed * (2 if args.refusal else 1)
    n = int(avail / per) // 256 * 256 if per > 0 else args.steps
    print(min(args.steps, max(256, n)))
    return 0


def write(args):
    models = [parse(p) for p in args.logs]
    for r in models:
        h5_control(r, args.out_dir)
        r["projection"] = projection(r)
    lines = ["# 4B dress rehearsal (scripts/device_4b_rehearsal.sh)", "",
             "| | " + " | ".join(r["log"][:-4] for r in models) + " |",
             "|---|" + "---|" * len(models)]

    def row(label, f):
        vals = []
        for r in models:
            try:
                v = f(r)
            except (KeyError, TypeError, ZeroDivisionError):
                v = None
            vals.append("-" if v is None else str(v))
        lines.append(f"| {label} | " + " | ".join(vals) + " |")

    row("exit status", lambda r: r.get("exit"))
    row("steps run", lambda r: r.get("steps_done"))
    row("load from disk (s)", lambda r: r.get("load_s"))
    row("upload / batch build (s)", lambda r: f"{r['mem']['upload_s']} / {r['mem']['build_s']}")
    row("weights on device (GiB)", lambda r: r["mem"]["weights_gib"])
    row("batch rows x positions", lambda r: f"{r['mem']['rows']} x {r['mem']['positions']}")
    row("GEMM row tile", lambda r: r["mem"].get("row_tile"))
    row("batch estimate / took (GiB)",
        lambda r: f"{r['mem']['estimate_gib']} / {r['mem']['took_gib']}")
    row("nvidia-smi peak, process (GiB)", lambda r: r.get("smi_peak_gib"))
    row("weights + estimate (GiB)",
        lambda r: round(r["mem"]["weights_gib"] + r["mem"]["estimate_gib"], 2))
    row("rows that fit at 131072 (estimate)", lambda r: r["mem"]["rows_fit_131072"])
    row("ms/step block 0 (graph capture)", lambda r: r.get("ms_block0"))
    row("ms/step start (block 1)", lambda r: r.get("ms_start"))
    row("ms/step end (last block)", lambda r: r.get("ms_end"))
    row("fit a (ms), b (ns per position)",
        lambda r: f"{r['fit_a_ms']}, {1e6 * r['fit_b_ms_per_pos']:.3f}")
    row("control mean KL (floor)", lambda r: r.get("control_mean_kl"))
    row("control max KL", lambda r: r.get("control_max_kl"))
    row("paper run 4 x 131072, 1 H200 (h)",
        lambda r: f"{r['projection']['hours_1gpu']:.1f} in passes {r['projection']['passes_1gpu']}")
    row("paper run 4 x 131072, 8 H200 (h)", lambda r: f"{r['projection']['hours_8gpu']:.1f}")
    lines += ["", "Mean KL per configuration (nats, from the run file or `replayssm summary`):", ""]
    for r in models:
        kl = r.get("mean_kl") or r.get("summary_kl")
        if kl:
            lines.append(f"- {r['log'][:-4]}: " + ", ".join(f"{k} {v:.3g}" for k, v in kl.items()))
    for r in models:
        for k in ("refusal", "unused_warning", "h5_error", "error"):
            if r.get(k):
                lines.append(f"- {r['log'][:-4]} {k}: {r[k]}")
        for f in r.get("faults", []):
            lines.append(f"- {r['log'][:-4]} shard fault {f}")
    lines += ["", "Formula: ms per step = a + b pos over the blocks after the first; "
              "T_pass(N, w) = a N + w (b / R) 9 N^2 / 2 with R the measured rows (a lower "
              "bound for passes of more rows than one GEMM row tile); "
              "1 H200: passes of floor(rows_fit / 9) windows; 8 H200: one window per GPU."]
    os.makedirs(args.out_dir, exist_ok=True)
    with open(os.path.join(args.out_dir, "summary.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    with open(os.path.join(args.out_dir, "summary.json"), "w") as f:
        json.dump(models, f, indent=1)
    print("\n".join(lines))
    return 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("logs", nargs="*")
    ap.add_argument("--out-dir")
    ap.add_argument("--steps", type=int, default=3072)
    ap.add_argument("--plan")
    ap.add_argument("--project", help="summary.json: the projection for --N, --W")
    ap.add_argument("--N", type=int, default=131072)
    ap.add_argument("--W", type=int, default=4)
    ap.add_argument("--rows-per-window", type=int, default=9)
    ap.add_argument("--rows-fit", type=int, default=None,
                    help="--project: rows that fit at --N (default: the run's, at 131072)")
    ap.add_argument("--left", type=float, default=0)
    ap.add_argument("--reserve", type=float, default=10)
    ap.add_argument("--refusal", action="store_true", help="--plan: leave time for the refusal check")
    args = ap.parse_args()
    if args.plan:
        return plan(args)
    if args.project:
        return project(args)
    if not args.out_dir:
        ap.error("--out-dir is needed")
    return write(args)


if __name__ == "__main__":
    sys.exit(main())
