#!/usr/bin/python3
"""analysis/context_degradation.py's bookkeeping, with a stand-in for `replayssm logits` whose
prediction after input j depends on that input's byte and on whether the context (j + 1 inputs)
lies within 1025..8192: inside, the centre of its distribution is 3 b mod 256, outside 64 further.
The script must then find, to rounding, the context effect computed here (every prediction of
8192..16383 outside the range with the whole window, inside it from the script's restarts), the
check computed here from the stand-in's numbers directly, and check = context + text. A restart
at a wrong offset (contexts outside 1025..8192) or a misaligned scored range breaks them.
Also: bad input ends with one line and exit status 2.

    /usr/bin/python3 tests/analysis/test_context_degradation.py SOURCE_DIR
"""
import json
import math
import os
import stat
import subprocess
import sys
import tempfile

import numpy as np

SRC = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else
                      os.path.join(os.path.dirname(__file__), "..", ".."))
SCRIPT = os.path.join(SRC, "analysis", "context_degradation.py")
LONG = 16384
failures = []

# logits after input j (byte b): -(v - c)^2 / 500 over v, c = 3 b (+ 64 when the context j + 1
# is outside 1025..8192) mod 256
FAKE = r'''#!/usr/bin/python3
import sys
import numpy as np
a = sys.argv[1:]
tok = np.load(a[a.index("--tokens") + 1]).astype(np.int64)
v = np.arange(256, dtype=np.float64)
ctx = np.arange(1, len(tok) + 1)
centre = (3 * tok + 64 * ((ctx < 1025) | (ctx > 8192))) % 256
np.save(a[a.index("--out") + 1], (-(v[None, :] - centre[:, None]) ** 2 / 500).astype(np.float32))
'''


def bits(prev, nxt, shift):
    """The stand-in's bits for predicting nxt after prev with the centre moved by shift."""
    v = np.arange(256, dtype=np.float64)
    lg = (-(v[None, :] - ((3 * prev + shift) % 256)[:, None]) ** 2 / 500).astype(np.float32)
    lg = lg.astype(np.float64)
    mx = lg.max(axis=1, keepdims=True)
    lse = mx[:, 0] + np.log(np.exp(lg - mx).sum(axis=1))
    return (lse - lg[np.arange(len(nxt)), nxt]) / math.log(2)


def main():
    tmp = tempfile.mkdtemp(prefix="rssm-ctxdeg-")
    fake = os.path.join(tmp, "replayssm")
    with open(fake, "w") as f:
        f.write(FAKE)
    os.chmod(fake, os.stat(fake).st_mode | stat.S_IXUSR)
    rng = np.random.default_rng(5)
    M = 2 * (LONG + 1) + 1000
    text = rng.integers(0, 256, M, dtype=np.uint8)
    # the second window's second half is "harder": bytes far from the predicted centre
    s1 = M - (LONG + 1)
    for i in range(s1 + 8193, M):    # each byte 128 from the centre its predecessor predicts
        text[i] = (3 * int(text[i - 1]) + 128) % 256
    tpath = os.path.join(tmp, "text.txt")
    text.tofile(tpath)
    out = os.path.join(tmp, "out.json")
    p = subprocess.run(["/usr/bin/python3", SCRIPT, "--model", "m", "--text", tpath, "--bin",
                        fake, "--json", out], capture_output=True, text=True)
    if p.returncode != 0:
        failures.append(f"exit {p.returncode}: {p.stderr.strip()}")
    else:
        r = json.load(open(out))[0]
        data = text.astype(np.int64)
        ctx = np.arange(1, LONG + 1)
        shift = 64 * ((ctx < 1025) | (ctx > 8192))
        full = np.stack([bits(data[s:s + LONG], data[s + 1:s + LONG + 1], shift)
                         for s in (0, s1)])
        inside = np.stack([bits(data[s:s + LONG], data[s + 1:s + LONG + 1], 0) for s in (0, s1)])
        want = full[:, 8192:].mean() - full[:, 1024:8192].mean()
        want_ctx = full[:, 8192:].mean() - inside[:, 8192:].mean()
        if r["starts"] != [0, s1]:
            failures.append(f"window starts {r['starts']}, expected [0, {s1}]")
        if abs(r["context"] - want_ctx) > 1e-9 or abs(want_ctx) < 0.1:
            failures.append(f"context effect {r['context']}, expected {want_ctx}")
        if abs(r["check"] - want) > 1e-9:
            failures.append(f"check {r['check']}, expected {want}")
        if abs(r["check"] - (r["context"] + r["text"])) > 1e-12:
            failures.append("check != context + text")
        if not abs(want) > 0.1:
            failures.append(f"the test's text gives a check of only {want}")
        if "| m |" not in p.stdout:
            failures.append(f"no table row: {p.stdout!r}")
    # bad input: a text too short, a binary that is not there
    short = os.path.join(tmp, "short.txt")
    open(short, "wb").write(b"x" * 100)
    for args, word in ((["--text", short, "--bin", fake], "expected at least"),
                       (["--text", tpath, "--bin", os.path.join(tmp, "nope")], "not an executable")):
        p = subprocess.run(["/usr/bin/python3", SCRIPT, "--model", "m"] + args,
                           capture_output=True, text=True)
        if p.returncode != 2 or p.stderr.count("\n") != 1 or word not in p.stderr:
            failures.append(f"bad input {args}: exit {p.returncode}, {p.stderr!r}")
    for f in failures:
        print(f"FAIL: {f}")
    print(f"test_context_degradation: {len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
