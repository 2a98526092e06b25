"""The training's learning-rate schedule (scripts/train_fixture_models.py: cosine_lr,
cosine_progress): linear warm-up, then a cosine from the peak to 10 % that follows the wall
clock, so that a run whose speed changes part-way (trainings sharing one GPU, one of them ending
early: session 20) still ends at its time budget with the cosine complete. Needs no torch.
    python3 tests/train/test_lr_schedule.py   -> "test_lr_schedule: ok" """
import math
import sys

from train_script import tfm

failures = []


def expect(cond, what):
    if not cond:
        failures.append(what)


def close(a, b):
    return abs(a - b) <= 1e-12 * max(1.0, abs(b))


PEAK = 2e-3
# warm-up: (step + 1) / warmup of the peak, whatever the progress says
for step, want in ((0, PEAK / 20), (9, PEAK / 2), (19, PEAK)):
    got = tfm.cosine_lr(PEAK, step, 20, 0.7)
    expect(close(got, want), f"warm-up step {step}: {got} != {want}")
# the cosine: peak at 0, 55 % at one half, 10 % at the end, clipped outside [0, 1]
for progress, want in ((0.0, PEAK), (0.5, 0.55 * PEAK), (1.0, 0.1 * PEAK), (1.7, 0.1 * PEAK),
                       (-0.3, PEAK)):
    got = tfm.cosine_lr(PEAK, 50, 20, progress)
    expect(close(got, want), f"progress {progress}: {got} != {want}")
# monotone after the warm-up
lrs = [tfm.cosine_lr(PEAK, 100, 20, k / 100) for k in range(101)]
expect(all(a >= b for a, b in zip(lrs, lrs[1:])), "the cosine rises somewhere")
# progress: 0 before the warm-up has ended, the share of the remaining time after it
expect(tfm.cosine_progress(12.0, None, 450.0) == 0.0, "progress before the warm-up's end")
expect(close(tfm.cosine_progress(50.0, 50.0, 450.0), 0.0), "progress at the warm-up's end")
expect(close(tfm.cosine_progress(250.0, 50.0, 450.0), 0.5), "progress half-way")
expect(close(tfm.cosine_progress(450.0, 50.0, 450.0), 1.0), "progress at the budget")

# a run that speeds up 1.5x after 100 s (another training left the GPU): the learning rate
# follows the clock, so it reaches 10 % of the peak only at the budget, not earlier as a step
# count fixed from the early speed would have made it (the fault this schedule replaces)
budget, warmup, t, step, warm_end, last_lr, first_floor = 450.0, 20, 0.0, 0, None, None, None
while t < budget:
    if step >= warmup and warm_end is None:
        warm_end = t
    last_lr = tfm.cosine_lr(PEAK, step, warmup, tfm.cosine_progress(t, warm_end, budget))
    if step >= warmup and first_floor is None and close(last_lr, 0.1 * PEAK):
        first_floor = t
    t += 0.5 if t < 100 else 0.5 / 1.5
    step += 1
expect(first_floor is None or first_floor >= budget - 1.0,
       f"the cosine reached its floor at {first_floor} s of {budget}")
expect(last_lr is not None and last_lr <= 0.1 * PEAK * 1.001,
       f"the last step's rate {last_lr} is not the floor {0.1 * PEAK}")
expect(math.isclose(tfm.cosine_progress(budget, warm_end, budget), 1.0), "progress at the end")

if failures:
    for f in failures:
        print("FAIL:", f)
    sys.exit(1)
print("test_lr_schedule: ok")
