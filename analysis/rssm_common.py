"""Shared helpers of the analysis scripts: reading a run's HDF5 file (SPEC section 7) strictly,
configuration strings (SPEC section 6), length buckets, and deterministic output files.

Every script runs with Debian's /usr/bin/python3 (python3-h5py, python3-numpy,
python3-matplotlib). Bad input ends the script with one line on stderr naming the file, the field
and what was expected, and exit status 2 (docs/cli.md's convention).
"""

import csv
import json
import math
import os
import sys

PROG = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else "analysis"
NEEDS = ("Debian's /usr/bin/python3 with python3-numpy, python3-h5py, python3-pandas and "
         "python3-matplotlib (bash scripts/setup.sh installs them)")


def _missing(e):
    """One line naming the interpreter that lacks a package and the one that has them."""
    print(f"{PROG}: {sys.executable} cannot import {e.name or e} ; the analysis needs {NEEDS}: "
          f"run /usr/bin/python3 {' '.join(sys.argv)}", file=sys.stderr)
    sys.exit(2)


try:
    import h5py
    import numpy as np
except ImportError as _e:  # another python3 first on PATH (pyenv, a venv)
    _missing(_e)


class InputError(Exception):
    """Bad input: the message is the one line that the user sees."""


def die(msg):
    """One line on stderr, exit status 2."""
    print(f"{PROG}: {msg}".replace("\n", " "), file=sys.stderr)
    sys.exit(2)


def main_guard(fn):
    """Runs fn(), turning InputError into the one-line exit-2 failure."""
    try:
        fn()
    except InputError as e:
        die(str(e))


def finish_checks(results, report, missed, summary, json_path):
    """The end of a bar-checking script (longmem_check.py, window_sweep_check.py): each result's
    report, then the summary line, the results as JSON when json_path is set, and exit status 1
    when `missed` bars were missed (a finding; 2 stays the status of bad input)."""
    for r in results:
        print(report(r))
    print(summary)
    if json_path:
        with open(json_path, "w") as f:
            json.dump(results, f, indent=1)
    sys.exit(1 if missed else 0)


# --------------------------------------------------------------------------------------------
# Configuration strings (SPEC section 6)
# --------------------------------------------------------------------------------------------
FORMAT_KEYS = ("state", "ckpt", "hp", "lp")


def parse_spec(spec):
    """'replay L=16 ckpt=nvfp4/sr' -> ('replay', {'L': '16', 'ckpt': 'nvfp4/sr'}), in order."""
    words = spec.split()
    if not words:
        raise ValueError("empty configuration string")
    keys = {}
    for w in words[1:]:
        k, sep, v = w.partition("=")
        if not sep or not k or not v:
            raise ValueError(f"'{w}' is not key=value")
        keys[k] = v
    return words[0], keys


def window_of(spec):
    """The replay window L of a replay/spec configuration (SPEC default 16), None otherwise."""
    strategy, keys = parse_spec(spec)
    if strategy not in ("replay", "spec"):
        return None
    return int(keys.get("L", "16"))


def without_window(spec):
    """The string without its L=n word: the configurations that differ only in L share it."""
    return " ".join(w for w in spec.split() if not w.startswith("L="))


def _strip_rounding(fmt):
    base = fmt.split("/")[0]
    return base, ("sr" if fmt.endswith("/sr") else "rtn")


def rounding_group(spec):
    """(group, label): the string with every format's /sr or /rtn removed, and the rounding of
    its low-precision formats ('RTN', 'SR', or per key such as 'hp=sr lp=rtn')."""
    strategy, keys = parse_spec(spec)
    words = [strategy]
    roundings = {}
    for k, v in keys.items():
        if k in FORMAT_KEYS:
            base, r = _strip_rounding(v)
            words.append(f"{k}={base}")
            if base != "fp32":  # fp32 is stored exactly whatever its rounding flag says
                roundings[k] = r
        elif k != "name":
            words.append(f"{k}={v}")
    vals = set(roundings.values())
    if not vals:
        label = "exact"
    elif len(vals) == 1:
        label = vals.pop().upper()
    else:
        label = " ".join(f"{k}={r}" for k, r in roundings.items())
    return " ".join(words), label


# --------------------------------------------------------------------------------------------
# Run files (SPEC section 7)
# --------------------------------------------------------------------------------------------
class Config:
    def __init__(self, name, spec, kl, first_nonfinite):
        self.name = name
        self.spec = spec
        self.kl = kl  # float64 [K, N]
        self.first_nonfinite = first_nonfinite  # int64 [K], -1 none


class Run:
    def __init__(self, path, attrs, configs, K, N):
        self.path = path
        self.attrs = attrs
        self.configs = configs
        self.K = K
        self.N = N

    @property
    def stem(self):
        return os.path.splitext(os.path.basename(self.path))[0]

    @property
    def model(self):
        m = self.attrs.get("model", self.attrs.get("model_path", ""))
        return m if m else "(model not recorded)"


def _text(v):
    if isinstance(v, bytes):
        return v.decode("utf-8", "replace")
    if isinstance(v, np.ndarray) and v.shape == ():
        return _text(v[()])
    return str(v)


def _dataset(path, group, name, ndim, kinds):
    if name not in group or not isinstance(group[name], h5py.Dataset):
        raise InputError(f"{path}: {group.name.rstrip('/')}/{name} is missing "
                         f"(expected a {ndim}-D dataset, SPEC section 7)")
    ds = group[name]
    if ds.ndim != ndim or ds.dtype.kind not in kinds:
        raise InputError(f"{path}: {ds.name} has shape {ds.shape} and dtype {ds.dtype} "
                         f"(expected {ndim}-D of kind {'/'.join(kinds)})")
    return ds


def load_run(path):
    """Reads /configs/*/{kl, first_nonfinite} and the spec attributes, checking the layout."""
    if not os.path.isfile(path):
        raise InputError(f"{path}: no such file (expected a run's HDF5 file, SPEC section 7)")
    try:
        f = h5py.File(path, "r")
    except OSError as e:
        raise InputError(f"{path}: not a readable HDF5 file ({e.__class__.__name__})")
    with f:
        attrs = {k: _text(v) for k, v in f.attrs.items()}
        if "configs" not in f or not isinstance(f["configs"], h5py.Group):
            raise InputError(f"{path}: /configs is missing (expected a group of configurations, "
                             "SPEC section 7)")
        names = sorted(f["configs"].keys())
        if not names:
            raise InputError(f"{path}: /configs is empty (expected at least one configuration)")
        shape = None
        configs = []
        for name in names:
            g = f["configs"][name]
            if not isinstance(g, h5py.Group):
                raise InputError(f"{path}: /configs/{name} is not a group")
            if "spec" not in g.attrs:
                raise InputError(f"{path}: /configs/{name} has no 'spec' attribute "
                                 "(expected the canonical configuration string)")
            spec = _text(g.attrs["spec"])
            try:
                parse_spec(spec)
            except ValueError as e:
                raise InputError(f"{path}: /configs/{name} attribute spec '{spec}': {e}")
            kl = _dataset(path, g, "kl", 2, "f")
            if shape is None:
                shape = kl.shape
            elif kl.shape != shape:
                raise InputError(f"{path}: /configs/{name}/kl has shape {kl.shape} "
                                 f"(expected {shape} like the other configurations)")
            fn = _dataset(path, g, "first_nonfinite", 1, "iu")
            if fn.shape != (shape[0],):
                raise InputError(f"{path}: /configs/{name}/first_nonfinite has shape {fn.shape} "
                                 f"(expected ({shape[0]},), one per sequence)")
            configs.append(Config(name, spec, np.asarray(kl[...], dtype=np.float64),
                                  np.asarray(fn[...], dtype=np.int64)))
        K, N = shape
        if N < 1 or K < 1:
            raise InputError(f"{path}: kl has shape {shape} (expected at least one sequence "
                             "and one step)")
    return Run(path, attrs, configs, K, N)


# --------------------------------------------------------------------------------------------
# Lengths and buckets. Step t (0-based) predicts token t+1 after reading t+1 tokens: its
# generation length ("position") is t + 1.
# --------------------------------------------------------------------------------------------
def pow2_buckets(N):
    """[(lo, hi)] positions lo <= p <= hi: [1,1], [2,3], [4,7], ..., the last one cut at N. A tail
    shorter than half an octave joins the bucket before it, so that a run of 2^k steps does not
    end in a bucket of one position."""
    out = []
    lo = 1
    while lo <= N:
        out.append((lo, min(2 * lo - 1, N)))
        lo *= 2
    if len(out) > 1 and out[-1][1] - out[-1][0] + 1 < out[-1][0] // 2:
        out[-2:] = [(out[-2][0], N)]
    return out


def length_window(length, N):
    """Positions within half an octave of `length` (length/sqrt2 <= p < length*sqrt2), cut at N;
    None when the file does not reach `length`."""
    if length > N:
        return None
    lo = max(1, math.ceil(length / math.sqrt(2.0)))
    hi = min(N, math.ceil(length * math.sqrt(2.0)) - 1)
    return lo, hi


def window_stats(kl, lo, hi):
    """Statistics of kl[:, lo-1:hi] (positions lo..hi, all sequences): mean over the finite
    values, its standard error over sequences, and the number of non-finite steps."""
    block = kl[:, lo - 1:hi]
    finite = np.isfinite(block)
    nonfinite = int(block.size - finite.sum())
    vals = block[finite]
    mean = float(vals.mean()) if vals.size else float("nan")
    per_seq = [float(row[np.isfinite(row)].mean()) for row in block if np.isfinite(row).any()]
    se = (float(np.std(per_seq, ddof=1) / math.sqrt(len(per_seq))) if len(per_seq) > 1
          else float("nan"))
    return {"mean": mean, "se": se, "nonfinite": nonfinite, "steps": int(block.size),
            "median": float(np.median(vals)) if vals.size else float("nan"),
            "p90": float(np.percentile(vals, 90)) if vals.size else float("nan"),
            "max": float(vals.max()) if vals.size else float("nan"),
            "per_seq": per_seq}


def length_label(n):
    """1024 -> '1K', 131072 -> '128K', 100 -> '100'."""
    return f"{n // 1024}K" if n % 1024 == 0 else str(n)


def parse_lengths(text):
    """'1K,16K,64K,128K' or '8,64' -> [1024, 16384, ...] (K = 1024)."""
    out = []
    for item in text.split(","):
        item = item.strip()
        try:
            out.append(int(item[:-1]) * 1024 if item.upper().endswith("K") else int(item))
        except ValueError:
            raise InputError(f"--lengths: '{item}' is not a length (expected e.g. 1K,16K or 64)")
        if out[-1] < 1:
            raise InputError(f"--lengths: '{item}' is not positive")
    return out


# --------------------------------------------------------------------------------------------
# Output files
# --------------------------------------------------------------------------------------------
def num(x):
    """Stable text for a float in CSV files: 9 significant digits, 'inf', 'nan'."""
    if x is None:
        return ""
    x = float(x)
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return f"{x:.9g}"


def write_csv(path, header, rows):
    """Written under a temporary name and renamed, so a reader never sees half a file."""
    tmp = f"{path}.tmp.{os.getpid()}"
    with open(tmp, "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(header)
        for r in rows:
            w.writerow(r)
    os.replace(tmp, path)


def read_csv_rows(path, header):
    """The rows of a CSV file that one of the scripts wrote with this header: every row as many
    fields as the header, at least one row."""
    try:
        with open(path, newline="") as f:
            r = list(csv.reader(f))
    except OSError as e:
        raise InputError(f"{path}: cannot read ({e.strerror})")
    if not r or r[0] != header:
        raise InputError(f"{path}: header {r[0] if r else '(empty)'} (expected {header})")
    if len(r) < 2:
        raise InputError(f"{path}: no rows after the header")
    for i, row in enumerate(r[1:]):
        if len(row) != len(header):
            raise InputError(f"{path}: line {i + 2} has {len(row)} fields (expected {len(header)})")
    return r[1:]


def write_text(path, text):
    tmp = f"{path}.tmp.{os.getpid()}"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def pyplot():
    """matplotlib with the Agg backend and settings that make PNGs byte-for-byte repeatable."""
    try:
        import matplotlib
    except ImportError as e:
        _missing(e)
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    matplotlib.rcParams.update({"figure.dpi": 100, "savefig.dpi": 100, "font.size": 9,
                                "axes.grid": True, "grid.alpha": 0.3, "pdf.fonttype": 42,
                                "svg.hashsalt": "replayssm"})
    return plt


def log_axis(ax, which="both"):
    """Log scale with labelled decades and minor ticks at 2..9 of each decade (also over many
    decades, where matplotlib would drop them), and a faint minor grid."""
    from matplotlib.ticker import LogLocator, NullFormatter
    for name in ("x", "y") if which == "both" else (which,):
        axis = ax.xaxis if name == "x" else ax.yaxis
        (ax.set_xscale if name == "x" else ax.set_yscale)("log")
        axis.set_major_locator(LogLocator(base=10.0, numticks=30))
        axis.set_minor_locator(LogLocator(base=10.0, subs=np.arange(2, 10) * 0.1, numticks=300))
        axis.set_minor_formatter(NullFormatter())
    ax.grid(True, which="minor", alpha=0.12)
    ax.grid(True, which="major", alpha=0.35)


# Configuration families: one colour each (Okabe-Ito, readable in colour-blind vision and grey
# print), members of a family told apart by line style and marker.
FAMILY_COLOURS = {"control": "#000000", "conventional": "#D55E00", "replay shared": "#0072B2",
                  "replay split": "#009E73", "spec shared": "#CC79A7", "spec split": "#E69F00",
                  "other": "#56B4E9"}
LINE_STYLES = ["-", "--", "-.", ":", (0, (5, 1, 1, 1, 1, 1)), (0, (1, 1)), (0, (8, 2))]
MARKERS = ["o", "s", "^", "D", "v", "P", "X", "*"]


def is_control(spec):
    """Every stored format is fp32: the harness's own floor (reassociation only)."""
    _, keys = parse_spec(spec)
    fmts = [keys[k] for k in FORMAT_KEYS if k in keys]
    return bool(fmts) and all(f.split("/")[0].split("@")[0] == "fp32" for f in fmts)


def family(spec):
    strategy, keys = parse_spec(spec)
    if is_control(spec):
        return "control"
    if strategy == "conventional":
        return "conventional"
    if strategy in ("replay", "spec"):
        return f"{strategy} {'split' if 'hp' in keys or 'lp' in keys else 'shared'}"
    return "other"


FORMAT_COLOURS = ["#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#8C564B",
                  "#7F7F7F", "#BCBD22", "#17BECF"]
FAMILY_STYLES = {"control": "-", "conventional": "-", "replay shared": "--", "replay split": "-.",
                 "spec shared": ":", "spec split": (0, (5, 1, 1, 1, 1, 1)), "other": (0, (1, 1))}


def low_format(spec):
    """The format a configuration stores at low precision, without rounding: lp, ckpt or state."""
    _, keys = parse_spec(spec)
    for k in ("lp", "ckpt", "state", "hp"):
        if k in keys:
            return keys[k].split("/")[0]
    return "?"


def styles(configs):
    """{name: dict(color, ls, marker, mfc)} for (name, spec) pairs, in their order.

    With one low-precision format per family (a quickstart), each family has its colour (Okabe-Ito,
    readable in colour-blind vision) and line style. With several formats (a sweep over formats),
    the colour is the format's, the line style the family's, and the marker is filled for
    stochastic rounding, open for round-to-nearest. Members that would still look alike (a sweep
    over L) get different markers and line styles."""
    fams = [family(sp) for _, sp in configs]
    fmts = sorted({low_format(sp) for (_, sp), f in zip(configs, fams) if f != "control"})
    by_format = len(fmts) > len({f for f in fams if f != "control"})  # a sweep over formats
    out, seen = {}, {}
    for (name, spec), fam in zip(configs, fams):
        if fam == "control":
            colour = "#000000"
        elif by_format:
            colour = FORMAT_COLOURS[fmts.index(low_format(spec)) % len(FORMAT_COLOURS)]
        else:
            colour = FAMILY_COLOURS[fam]
        key = (colour, fam)
        i = seen.get(key, 0)
        seen[key] = i + 1
        if by_format:  # the family's style always; rounding and repeats by the marker
            ls = FAMILY_STYLES[fam]
        else:
            ls = FAMILY_STYLES[fam] if i == 0 else LINE_STYLES[i % len(LINE_STYLES)]
        sr = "/sr" in spec
        out[name] = {"color": colour, "ls": ls, "marker": MARKERS[i % len(MARKERS)],
                     "mfc": colour if (sr or not by_format) else "white"}
    return out


def legend(ax, n):
    """Outside the axes on the right, in columns of at most 14 entries."""
    ax.legend(fontsize=6.5 if n > 8 else 7, loc="center left", bbox_to_anchor=(1.01, 0.5),
              frameon=False, ncol=max(1, -(-n // 14)))


def save_figure(fig, png_path):
    """PNG (fixed dpi, no software/date metadata) and PDF beside it (no dates, so the same input
    gives the same bytes); temporary names and renames."""
    save_png(fig, png_path)
    pdf = os.path.splitext(png_path)[0] + ".pdf"
    tmp = f"{pdf}.tmp.{os.getpid()}.pdf"
    fig.savefig(tmp, format="pdf", metadata={"Creator": None, "Producer": None,
                                             "CreationDate": None})
    os.replace(tmp, pdf)
    return pdf


def save_png(fig, path):
    """Fixed dpi, no software/date metadata; temporary name and rename."""
    tmp = f"{path}.tmp.{os.getpid()}.png"
    fig.savefig(tmp, dpi=100, format="png", metadata={"Software": None})
    os.replace(tmp, path)


def ensure_dir(d):
    try:
        os.makedirs(d, exist_ok=True)
    except OSError as e:
        raise InputError(f"{d}: cannot create the output directory ({e.strerror})")
