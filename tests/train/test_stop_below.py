"""--stop-below of scripts/train_fixture_models.py (session 27): the option's parser, the rule
that ends a run (only at a step with a held-out evaluation, at or below the threshold), and the
refusal of the option without --train-steps (the schedule it stops part-way). Needs no torch.
    python3 tests/train/test_stop_below.py   -> "test_stop_below: ok" """
import argparse
import os
import subprocess
import sys
import tempfile

from train_script import tfm

from checks import expect, finish


# the parser: bits per byte in (0, 8)
expect(tfm.stop_below_arg("2.095") == 2.095, "'2.095' not read as 2.095")
for bad in ("0", "8", "-1", "nan", "inf", "2.1x", ""):
    try:
        tfm.stop_below_arg(bad)
        expect(False, f"'{bad}' accepted")
    except argparse.ArgumentTypeError as e:
        expect(bad in str(e) or bad == "", f"'{bad}': the message does not name it: {e}")

# the rule
for heldout, threshold, want in ((None, 2.1, False),     # a step without an evaluation
                                 (2.05, None, False),    # the option off
                                 (2.1, 2.1, True),       # at the threshold
                                 (2.0999, 2.1, True),
                                 (2.1001, 2.1, False),
                                 (7.98, 2.1, False)):    # the first evaluation, untrained
    got = tfm.stop_below_reached(heldout, threshold)
    expect(got is want, f"stop_below_reached({heldout}, {threshold}) = {got}, expected {want}")

# without --train-steps: exit 2, one line naming the option (before any training or torch)
script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts",
                      "train_fixture_models.py")
with tempfile.TemporaryDirectory() as out:
    r = subprocess.run([sys.executable, script, "--model", "nemotronh-m2-tiny", "--out", out,
                        "--stop-below", "2.1"], capture_output=True, text=True, timeout=120)
    expect(r.returncode == 2, f"--stop-below without --train-steps: exit {r.returncode}, expected 2")
    expect("--stop-below 2.1: expected --train-steps" in r.stderr,
           f"--stop-below without --train-steps: message {r.stderr.strip()[-200:]!r}")
    expect(os.listdir(out) == [], f"--stop-below without --train-steps wrote {os.listdir(out)}")
    r = subprocess.run([sys.executable, script, "--model", "nemotronh-m2-tiny", "--out", out,
                        "--train-steps", "2600", "--stop-below", "9"],
                       capture_output=True, text=True, timeout=120)
    expect(r.returncode == 2 and "--stop-below: '9': expected bits per byte in (0, 8)" in r.stderr,
           f"--stop-below 9: exit {r.returncode}, message {r.stderr.strip()[-200:]!r}")

finish("test_stop_below")
