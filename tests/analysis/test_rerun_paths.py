#!/usr/bin/env python3
"""The experiment text stored in a run file re-runs from any directory and reproduces the file.

An experiment with relative model and token paths (relative to the experiment file) is run from
one directory; its stored `experiment` attribute is written to a file elsewhere and run from a
third directory; every dataset of the two outputs must be equal byte for byte (names, dtypes,
shapes, bytes). The stored paths must be absolute.

usage: test_rerun_paths.py REPLAYSSM_BINARY MODEL_DIR
"""
import os
import subprocess
import sys
import tempfile

try:
    import h5py
    import numpy as np
except ImportError as e:  # pragma: no cover
    sys.exit(f"test_rerun_paths: {e}; run it with Debian's /usr/bin/python3 "
             "(apt-get install python3-numpy python3-h5py)")


def datasets(path):
    out = {}
    with h5py.File(path, "r") as f:
        def visit(name, obj):
            if isinstance(obj, h5py.Dataset):
                v = obj[()]
                out[name] = (v.dtype.str, v.shape, v.tobytes())
        f.visititems(visit)
        return out, f.attrs["experiment"], f.attrs["model"], f.attrs["tokens"]


def main():
    binary, model = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    with tempfile.TemporaryDirectory() as tmp:
        for d in ("a/exp", "a/tok", "b/deep", "c"):
            os.makedirs(os.path.join(tmp, d))
        np.save(os.path.join(tmp, "a/tok/t.npy"),
                np.random.default_rng(3).integers(0, 256, size=5000).astype(np.int32))
        rel_model = os.path.relpath(model, os.path.join(tmp, "a/exp"))
        with open(os.path.join(tmp, "a/exp/e.ini"), "w") as fh:
            fh.write(f"model = {rel_model}\ntokens = ../tok/t.npy\nsequences = 2\nsteps = 48\n"
                     "seed = 7\nblock = 16\n[config shared]\nspec = replay L=8 ckpt=nvfp4/sr\n"
                     "[config split]\nspec = replay L=8 hp=fp32 lp=nvfp4\n")
        first = os.path.join(tmp, "first.h5")
        subprocess.run([binary, "run", "exp/e.ini", "--out", first, "--quiet"], check=True,
                       cwd=os.path.join(tmp, "a"))
        d1, text, m, t = datasets(first)
        ok = True
        for what, p in (("model", m), ("tokens", t)):
            if not (os.path.isabs(p) and os.path.exists(p)):
                print(f"FAIL: stored {what} path {p!r} is not an absolute existing path")
                ok = False
        with open(os.path.join(tmp, "b/deep/re.ini"), "w") as fh:
            fh.write(text)
        second = os.path.join(tmp, "second.h5")
        subprocess.run([binary, "run", "../b/deep/re.ini", "--out", second, "--quiet"],
                       check=True, cwd=os.path.join(tmp, "c"))
        d2, text2, _, _ = datasets(second)
        if sorted(d1) != sorted(d2):
            print(f"FAIL: datasets differ: {sorted(d1)} vs {sorted(d2)}")
            ok = False
        for k in d1:
            if k in d2 and d1[k] != d2[k]:
                print(f"FAIL: dataset {k} differs between the run and its re-run")
                ok = False
        if text2 != text:
            print("FAIL: the re-run's stored experiment differs from the first's")
            ok = False
        # tokens, window_start, steps_written, reference/nll, and 5 per configuration
        if len(d1) != 4 + 2 * 5:
            print(f"FAIL: expected 14 datasets, got {len(d1)}")
            ok = False
    if not ok:
        sys.exit("test_rerun_paths: failed")
    print(f"test_rerun_paths: ok ({len(d1)} datasets byte-identical)")


if __name__ == "__main__":
    main()
