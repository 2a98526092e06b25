#!/usr/bin/python3
"""Compares every HDF5 dataset of the run files in two folders byte for byte.

    python3 tests/gpu/same_datasets.py DIR_A DIR_B [--ignore NAME]...

For each *.h5 present in both folders: the set of dataset paths, and each dataset's dtype, shape
and raw bytes (strings: their text). Attributes are not compared (a build may add or re-encode
them); --ignore NAME leaves out datasets whose path ends in NAME (one that a newer build adds,
such as steps_written). Used to show that a change of code leaves every dataset of a set of runs
as it was (docs/gpu-results.md). Prints one line per file and exits 1 when any file differs or
when no file is common to both folders."""
import glob
import os
import sys

import h5py
import numpy as np


def datasets(path, ignore):
    out = {}

    def keep(name, obj):
        if isinstance(obj, h5py.Dataset) and not any(name.endswith(i) for i in ignore):
            out[name] = obj[()]

    with h5py.File(path, "r") as f:
        f.visititems(keep)
    return out


def text(x):
    """A string array as a flat list of str."""
    return [v.decode() if isinstance(v, bytes) else str(v) for v in np.ravel(x)]


def main():
    args = sys.argv[1:]
    ignore = [args[i + 1] for i, a in enumerate(args) if a == "--ignore" and i + 1 < len(args)]
    pos = [a for i, a in enumerate(args) if a != "--ignore" and (i == 0 or args[i - 1] != "--ignore")]
    if len(pos) != 2:
        sys.exit("usage: same_datasets.py DIR_A DIR_B [--ignore NAME]...")
    a_dir, b_dir = pos
    names = sorted(set(os.path.basename(p) for p in glob.glob(os.path.join(a_dir, "*.h5")))
                   & set(os.path.basename(p) for p in glob.glob(os.path.join(b_dir, "*.h5"))))
    bad = 0
    for n in names:
        a, b = datasets(os.path.join(a_dir, n), ignore), datasets(os.path.join(b_dir, n), ignore)
        diff = sorted(set(a) ^ set(b))
        recoded = []
        for k in sorted(set(a) & set(b)):
            x, y = np.asarray(a[k]), np.asarray(b[k])
            if x.dtype.kind in "OSU" or y.dtype.kind in "OSU":
                # strings: the same text, whatever the encoding (fixed-length or vlen UTF-8)
                if text(x) != text(y):
                    diff.append(k)
                elif x.dtype != y.dtype:
                    recoded.append(k)
            elif x.dtype != y.dtype or x.shape != y.shape or x.tobytes() != y.tobytes():
                diff.append(k)
        print(f"{n}: {len(a)} datasets, " + ("identical" if not diff else
                                              "differ: " + ", ".join(diff[:8]))
              + (f" (same text, other string type: {', '.join(recoded[:4])})" if recoded else ""))
        bad += bool(diff)
    print(f"{len(names)} files compared, {bad} differ")
    sys.exit(1 if bad or not names else 0)


if __name__ == "__main__":
    main()
