"""The training's learning-rate schedule (scripts/train_fixture_models.py: ClockCosine, which
train() asks for every step's rate): linear warm-up, then a cosine from the peak to 10 % that
follows the wall clock, so that a run whose speed changes part-way (trainings sharing one GPU,
one of them ending early: session 20) still ends at its time budget with the cosine complete.
Also StepCosine (--train-steps: the same curve over a fixed number of steps, for runs that can
be repeated). Times are made up (no clock is read). Needs no torch.
    python3 tests/train/test_lr_schedule.py   -> "test_lr_schedule: ok" """
import sys

from train_script import tfm

from checks import expect, finish


def close(a, b):
    return abs(a - b) <= 1e-12 * max(1.0, abs(b))


PEAK = 2e-3
# warm-up: (step + 1) / warmup of the peak, whatever the time
s = tfm.ClockCosine(PEAK, 20, 450.0)
for step, t, want in ((0, 0.0, PEAK / 20), (9, 300.0, PEAK / 2), (19, 449.0, PEAK)):
    got = s.lr(step, t)
    expect(close(got, want), f"warm-up step {step}: {got} != {want}")
expect(s.warm_end is None, "the warm-up's end was set during the warm-up")
# the cosine over the time left after the warm-up's end (here 50 s): the peak at its start,
# 55 % half-way, 10 % at the budget and after it
s = tfm.ClockCosine(PEAK, 20, 450.0)
for step, t, want in ((20, 50.0, PEAK), (500, 250.0, 0.55 * PEAK), (900, 450.0, 0.1 * PEAK),
                      (950, 470.0, 0.1 * PEAK)):
    got = s.lr(step, t)
    expect(close(got, want), f"step {step} at {t} s: {got} != {want}")
expect(s.warm_end == 50.0, f"warm-up's end {s.warm_end} != 50")
# no warm-up: the cosine starts at the first step
s = tfm.ClockCosine(PEAK, 0, 100.0)
expect(close(s.lr(0, 0.0), PEAK) and close(s.lr(1, 50.0), 0.55 * PEAK), "warm-up 0")

# a run that speeds up 1.5x after 100 s (another training left the GPU): the rate falls
# monotonically after the warm-up and reaches 10 % of the peak only at the budget, not earlier
# as a step count fixed from the early speed made it (the fault ClockCosine replaces)
budget, warmup = 450.0, 20
s = tfm.ClockCosine(PEAK, warmup, budget)
t, step, lrs, first_floor = 0.0, 0, [], None
while t < budget:
    lr = s.lr(step, t)
    if step >= warmup:
        lrs.append(lr)
        if first_floor is None and close(lr, 0.1 * PEAK):
            first_floor = t
    t += 0.5 if t < 100 else 0.5 / 1.5
    step += 1
expect(all(a >= b for a, b in zip(lrs, lrs[1:])), "the cosine rises somewhere")
expect(first_floor is None or first_floor >= budget - 1.0,
       f"the cosine reached its floor at {first_floor} s of {budget}")
expect(lrs and lrs[-1] <= 0.1 * PEAK * 1.001,
       f"the last step's rate {lrs[-1] if lrs else None} is not the floor {0.1 * PEAK}")

# StepCosine (--train-steps): the same curve over steps, the clock ignored, so that a run is
# repeatable: warm-up as above, the peak at the warm-up's end, 55 % half-way through the steps
# after it, 10 % at the last step; and the same rates whatever times are passed
s = tfm.StepCosine(PEAK, 100, 3300)
for step, want in ((0, PEAK / 100), (99, PEAK), (100, PEAK), (1700, 0.55 * PEAK),
                   (3300, 0.1 * PEAK), (3400, 0.1 * PEAK)):
    for t in (0.0, 123.4, 1e6):
        got = s.lr(step, t)
        expect(close(got, want), f"StepCosine step {step} at {t} s: {got} != {want}")
rates = [s.lr(k, 0.0) for k in range(100, 3301)]
expect(all(a >= b for a, b in zip(rates, rates[1:])), "StepCosine rises after the warm-up")
# train()'s refusal of --train-steps not past the warm-up (the cosine would have no steps)
import subprocess  # noqa: E402
r = subprocess.run([sys.executable, tfm.__file__, "--model", "nemotronh-m2-tiny", "--out",
                    "/nonexistent", "--train-steps", "50"], capture_output=True, text=True)
expect(r.returncode == 2 and "--train-steps 50" in r.stderr and "--warmup 100" in r.stderr,
       f"--train-steps 50 with warm-up 100: exit {r.returncode}, {r.stderr.strip()[-200:]}")

finish("test_lr_schedule")
