"""What the torch-free test scripts of this folder share: expect() records a failed condition,
finish(NAME) prints the failures (or "NAME: ok") and exits 1 when there was one. One script, one
list: each test runs as its own process."""
import sys

failures = []


def expect(cond, what):
    if not cond:
        failures.append(what)


def finish(name):
    if failures:
        print(f"{name}: FAILED\n  " + "\n  ".join(failures))
        sys.exit(1)
    print(f"{name}: ok")
