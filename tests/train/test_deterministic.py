"""--deterministic's settings (scripts/train_fixture_models.py: make_deterministic), on a stand-in
for torch that records what is set, so that it runs without torch: session 24 found that two runs
stay equal only with every one of them (cuDNN's attention backward alone made them differ), so a
setting dropped or flipped must fail here. Needs no torch.
    python3 tests/train/test_deterministic.py   -> "test_deterministic: ok" """
from types import SimpleNamespace

from train_script import tfm

from checks import expect, finish


class Recorder:
    """A torch stand-in: the deterministic-algorithms call and the backends' switches."""

    def __init__(self):
        self.calls = {}
        self.backends = SimpleNamespace(
            cudnn=SimpleNamespace(deterministic=False, benchmark=True),
            cuda=SimpleNamespace(**{name: self._switch(name) for name in
                                    ("enable_cudnn_sdp", "enable_flash_sdp",
                                     "enable_mem_efficient_sdp", "enable_math_sdp")}))

    def _switch(self, name):
        def set_(on):
            self.calls[name] = on
        return set_

    def use_deterministic_algorithms(self, mode, warn_only=False):
        self.calls["use_deterministic_algorithms"] = (mode, warn_only)


# the default, "math": warn-only, and every attention kernel but the math one off
t = Recorder()
tfm.make_deterministic(t)
expect(t.calls.get("use_deterministic_algorithms") == (True, True),
       f"math: deterministic algorithms (warn-only): {t.calls.get('use_deterministic_algorithms')}")
expect(t.backends.cudnn.deterministic is True, "math: cuDNN deterministic not set")
expect(t.backends.cudnn.benchmark is False, "math: cuDNN benchmark left on")
for name, want in (("enable_cudnn_sdp", False), ("enable_flash_sdp", False),
                   ("enable_mem_efficient_sdp", False), ("enable_math_sdp", True)):
    expect(t.calls.get(name) is want, f"math: {name}: {t.calls.get(name)} (expected {want})")
# "cudnn": strict (not warn-only: cuDNN's attention picks its deterministic backward only then),
# the attention kernels left as they are
t = Recorder()
tfm.make_deterministic(t, "cudnn")
expect(t.calls.get("use_deterministic_algorithms") == (True, False),
       f"cudnn: deterministic algorithms (strict): {t.calls.get('use_deterministic_algorithms')}")
expect(t.backends.cudnn.deterministic is True and t.backends.cudnn.benchmark is False,
       "cudnn: cuDNN deterministic / benchmark")
expect(not any(k.startswith("enable_") for k in t.calls), f"cudnn: attention switched: {t.calls}")
# anything else is refused before a setting is made
t = Recorder()
try:
    tfm.make_deterministic(t, "flash")
    expect(False, "attention 'flash' accepted")
except ValueError:
    expect(not t.calls and t.backends.cudnn.benchmark is True,
           f"attention 'flash' refused after settings were made: {t.calls}")

finish("test_deterministic")
