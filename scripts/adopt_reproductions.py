"""Makes the folder of record for the results page from a GPU reproduction run of ONE retrained
model (scripts/gpu_reproductions.sh with ONLY=NAME returns repro.tar) and the current folder of
record (results/of-record.txt), so that the new folder describes both models in data/models:
the new run's figures/ and logs/ as they came back, plus the other model's files from the old
folder (its summaries, CSV and Markdown tables; its keys of bpb.json; its entries of
longmem-check.json and its blocks of longmem-check.txt, with the last line's count redone). The
other model's PNG and PDF files are not copied (the tracked files stay under 50 MB; `cmake
--build BUILD --target figures` redraws them from the CSV files). Sessions 11 and 13 did this by
hand (results/h200-2026-12-03-s13/repro/README.md).

    python3 scripts/adopt_reproductions.py REPRO_TAR DEST [--old DIR]

DEST must not exist (nothing already written is replaced); --old defaults to the first folder
in results/of-record.txt. Afterwards: write DEST/../README.md (what was run, when, on which
weights), replace the folder in results/of-record.txt with DEST, and build the figures target.
"""
import argparse
import json
import os
import re
import shutil
import sys
import tarfile
import tempfile

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
# a run's files are named KIND-MODEL.* (kl-, window-, rtnsr-), bpb.json's keys bpbN-MODEL
RUN_FILE = re.compile(r"^(kl|window|rtnsr)-(?P<model>[A-Za-z0-9.-]+?)(\.summary\.txt|_[a-z_]+\.(csv|md))$")
LONGMEM_HEAD = re.compile(r"^kl-(?P<model>[A-Za-z0-9.-]+)\.h5 \(")
KL_FILE = re.compile(r"^kl-(?P<model>[A-Za-z0-9.-]+)\.h5$")


def fail(msg):
    print(f"adopt_reproductions: {msg}", file=sys.stderr)
    sys.exit(2)


def of_record():
    path = os.path.join(ROOT, "results", "of-record.txt")
    for line in open(path):
        line = line.split("#", 1)[0].strip()
        if line:
            return os.path.join(ROOT, line)
    fail(f"{path}: no folder listed")


def models_of(names):
    return {m.group("model") for m in map(RUN_FILE.match, names) if m}


def model_of_run(run):
    """longmem-check.json entry -> the model its kl-MODEL.h5 file names ('' for another file)."""
    m = KL_FILE.match(os.path.basename(run.get("file", "")))
    return m.group("model") if m else ""


def read_json(path, what):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        fail(f"{path}: {what}: {e}")


def longmem_blocks(path):
    """longmem-check.txt -> [(model, lines)] per run; the closing count line is dropped."""
    blocks = []
    for line in open(path):
        m = LONGMEM_HEAD.match(line)
        if m:
            blocks.append((m.group("model"), [line]))
        elif line.startswith("  ") and blocks:
            blocks[-1][1].append(line)
    return blocks


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("repro_tar")
    ap.add_argument("dest")
    ap.add_argument("--old", default=None, help="the folder of record now (default: "
                    "results/of-record.txt's first)")
    a = ap.parse_args()
    old = a.old or of_record()
    if os.path.exists(a.dest):
        fail(f"{a.dest}: exists; expected a new folder (nothing is replaced)")
    if not os.path.isdir(old):
        fail(f"{old}: not a folder (the folder of record)")
    try:
        tar = tarfile.open(a.repro_tar)
        members = tar.getmembers()
    except (OSError, tarfile.TarError) as e:
        fail(f"{a.repro_tar}: {e}")
    bad = [m.name for m in members if not (m.isfile() or m.isdir())
           or os.path.isabs(m.name) or ".." in m.name.split("/")
           or m.name.split("/")[0] not in ("figures", "logs")]
    if bad:
        fail(f"{a.repro_tar}: {bad[0]}: expected only figures/ and logs/ (a repro.tar)")
    parent = os.path.dirname(os.path.abspath(a.dest))
    os.makedirs(parent, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix=".adopt-", dir=parent)
    try:
        tar.extractall(tmp, **({"filter": "data"} if hasattr(tarfile, "data_filter") else {}))
        fig = os.path.join(tmp, "figures")
        new_models = models_of(os.listdir(fig)) if os.path.isdir(fig) else set()
        if not new_models:
            fail(f"{a.repro_tar}: figures/ holds no kl-/window-/rtnsr- files of a model")
        old_names = sorted(os.listdir(old))
        others = models_of(old_names) - new_models
        copied = []
        for name in old_names:
            m = RUN_FILE.match(name)
            if m and m.group("model") in others:
                shutil.copy2(os.path.join(old, name), os.path.join(fig, name))
                copied.append(name)
        # bpb.json: the new run's keys, and the other models' from the old folder
        bpb = read_json(os.path.join(fig, "bpb.json"), "the new run's bits per byte")
        for k, v in read_json(os.path.join(old, "bpb.json"), "the old bits per byte").items():
            if k.split("-", 1)[-1] in others:
                bpb[k] = v
        with open(os.path.join(fig, "bpb.json"), "w") as f:
            json.dump(dict(sorted(bpb.items())), f, indent=2)
            f.write("\n")
        # longmem-check: the entries and text blocks of every model, the count redone
        runs = read_json(os.path.join(fig, "longmem-check.json"), "the new drift check")
        runs += [r for r in read_json(os.path.join(old, "longmem-check.json"),
                                      "the old drift check")
                 if model_of_run(r) in others]
        runs.sort(key=lambda r: r["file"])
        with open(os.path.join(fig, "longmem-check.json"), "w") as f:
            json.dump(runs, f, indent=1)
            f.write("\n")
        blocks = [b for b in longmem_blocks(os.path.join(fig, "longmem-check.txt"))
                  if b[0] in new_models]
        blocks += [b for b in longmem_blocks(os.path.join(old, "longmem-check.txt"))
                   if b[0] in others]
        missed = sum(not ok for r in runs for ok in r["verdicts"].values())
        with open(os.path.join(fig, "longmem-check.txt"), "w") as f:
            for _, lines in sorted(blocks):
                f.writelines(lines)
            f.write(f"longmem_check: {missed} bar(s) missed over {len(runs)} run(s)\n")
        os.rename(tmp, a.dest)
    finally:
        if os.path.isdir(tmp):
            shutil.rmtree(tmp)
    print(f"adopt_reproductions: {a.dest}: the run of {', '.join(sorted(new_models))}; "
          f"from {os.path.relpath(old, ROOT)}: {', '.join(sorted(others)) or 'nothing'} "
          f"({len(copied)} files, their bpb.json keys and drift checks)")
    print("  next: a README beside figures/ saying what was run, results/of-record.txt -> "
          f"{os.path.join(a.dest, 'figures')}, then `cmake --build BUILD --target figures`")


if __name__ == "__main__":
    main()
