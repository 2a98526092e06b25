"""scripts/adopt_reproductions.py on made-up folders: a repro.tar of one retrained model (B) and an
old folder of record holding both models (A and B). The new folder must hold the new run's files
as they came, A's run files but not its figures, bpb.json with A's keys and B's new values, the
drift checks of both with the count redone; and it must refuse, leaving nothing behind, a DEST
that exists, a tar that is not a repro.tar, and one without a model's files. Needs no torch.
    python3 tests/train/test_adopt_repro.py   -> "test_adopt_repro: ok" """
import io
import json
import os
import subprocess
import sys
import tarfile
import tempfile

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts",
                      "adopt_reproductions.py")
A, B = "qwen-a-tiny", "nemo-b-tiny"      # model names with hyphens, as the real ones
from checks import expect, failures, finish


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


def entry(model, verdicts):
    return {"file": f"kl-{model}.h5", "model": f"/m/{model}", "verdicts": verdicts}


def block(model, tag):
    return f"kl-{model}.h5 (/m/{model}, 4 x 32768)\n  shared {tag}\n  control {tag}\n"


def make_tar(path, files):
    with tarfile.open(path, "w") as t:
        for name, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            t.addfile(info, io.BytesIO(data))


def run(*args):
    return subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True)


work = tempfile.mkdtemp(prefix="test-adopt-")
old = os.path.join(work, "old", "figures")
for name, text in ((f"kl-{A}.summary.txt", "A old summary\n"), (f"kl-{A}_kl_buckets.csv", "a,1\n"),
                   (f"kl-{A}_kl_length.png", "png"), (f"kl-{A}_kl_length.pdf", "pdf"),
                   (f"window-{A}_kl_window.csv", "w,1\n"), (f"rtnsr-{A}_rounding.md", "| A |\n"),
                   (f"kl-{B}.summary.txt", "B old summary\n"), (f"kl-{B}_kl_buckets.csv", "b,0\n")):
    write(os.path.join(old, name), text)
write(os.path.join(old, "bpb.json"),
      json.dumps({f"bpb2k-{A}": 1.0, f"bpb16k-{A}": 1.5, f"bpb2k-{B}": 2.0, f"bpb16k-{B}": 3.0}))
write(os.path.join(old, "longmem-check.json"), json.dumps(
    [entry(B, {"ratio": True, "shared_growth": False}), entry(A, {"ratio": True, "shared_growth": True})]))
write(os.path.join(old, "longmem-check.txt"),
      block(B, "old") + block(A, "old") + "longmem_check: 1 bar(s) missed over 2 run(s)\n")

new_files = {f"figures/kl-{B}.summary.txt": "B new summary\n", f"figures/kl-{B}_kl_buckets.csv": "b,1\n",
             f"figures/kl-{B}_kl_length.png": "png new",
             "figures/bpb.json": json.dumps({f"bpb2k-{B}": 9.0, f"bpb16k-{B}": 8.0}),
             "figures/longmem-check.json": json.dumps([entry(B, {"ratio": False, "shared_growth": False})]),
             "figures/longmem-check.txt": block(B, "new") + "longmem_check: 2 bar(s) missed over 1 run(s)\n",
             "logs/times.txt": "kl-nemo-b-tiny: exit 0, 200 s\n"}
tar = os.path.join(work, "repro.tar")
make_tar(tar, new_files)
dest = os.path.join(work, "new", "repro")
r = run(tar, dest, "--old", old)
expect(r.returncode == 0, f"adopt: exit {r.returncode}: {r.stderr}")
fig = os.path.join(dest, "figures")
have = set(os.listdir(fig)) if os.path.isdir(fig) else set()
for name in (f"kl-{A}.summary.txt", f"kl-{A}_kl_buckets.csv", f"window-{A}_kl_window.csv",
             f"rtnsr-{A}_rounding.md", f"kl-{B}_kl_length.png"):
    expect(name in have, f"{name} missing from the new folder")
for name in (f"kl-{A}_kl_length.png", f"kl-{A}_kl_length.pdf"):
    expect(name not in have, f"{name}: the other model's figure copied")
if have:
    expect(open(os.path.join(fig, f"kl-{B}.summary.txt")).read() == "B new summary\n",
           "the retrained model's summary is not the new run's")
    expect(open(os.path.join(fig, f"kl-{A}.summary.txt")).read() == "A old summary\n",
           "the other model's summary is not the old folder's")
    expect(os.path.isfile(os.path.join(dest, "logs", "times.txt")), "logs/ not kept")
    bpb = json.load(open(os.path.join(fig, "bpb.json")))
    expect(bpb == {f"bpb2k-{A}": 1.0, f"bpb16k-{A}": 1.5, f"bpb2k-{B}": 9.0, f"bpb16k-{B}": 8.0},
           f"bpb.json: {bpb}")
    runs = json.load(open(os.path.join(fig, "longmem-check.json")))
    # sorted by file (nemo- before qwen-), as the real ones (kl-nemotronh... before kl-qwen35...)
    expect([(r["file"], sum(not v for v in r["verdicts"].values())) for r in runs]
           == [(f"kl-{B}.h5", 2), (f"kl-{A}.h5", 0)], f"longmem-check.json: {runs}")
    text = open(os.path.join(fig, "longmem-check.txt")).read()
    expect(text == block(B, "new") + block(A, "old") + "longmem_check: 2 bar(s) missed over 2 run(s)\n",
           f"longmem-check.txt:\n{text}")

# refusals: nothing replaced, nothing left behind
before = sorted(os.listdir(fig)) if os.path.isdir(fig) else []
r = run(tar, dest, "--old", old)
expect(r.returncode == 2 and "exists" in r.stderr, f"an existing DEST: exit {r.returncode} {r.stderr}")
expect((sorted(os.listdir(fig)) if os.path.isdir(fig) else []) == before, "an existing DEST changed")
evil = os.path.join(work, "evil.tar")
make_tar(evil, {"figures/x.csv": "x", "../escape.txt": "x"})
r = run(evil, os.path.join(work, "e1"), "--old", old)
expect(r.returncode == 2 and not os.path.exists(os.path.join(work, "e1"))
       and not os.path.exists(os.path.join(work, "..", "escape.txt")),
       f"a tar with ../: exit {r.returncode} {r.stderr}")
empty = os.path.join(work, "empty.tar")
make_tar(empty, {"figures/bpb.json": "{}", "logs/times.txt": ""})
r = run(empty, os.path.join(work, "e2"), "--old", old)
expect(r.returncode == 2 and "no kl-" in r.stderr and not os.path.exists(os.path.join(work, "e2")),
       f"a tar without a model's files: exit {r.returncode} {r.stderr}")
leftovers = [n for n in os.listdir(work) if n.startswith(".adopt-")]
expect(not leftovers, f"temporary folders left: {leftovers}")

if not failures:   # a failed run keeps its folder for a look
    subprocess.run(["rm", "-rf", work])
finish("test_adopt_repro")
