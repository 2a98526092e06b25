"""SlowBeta.add_learned (scripts/train_fixture_models.py --long-beta) on a stand-in GDN module:
the penalty equals its formula, only learned heads whose per-token memory exceeds M0 contribute,
the push reaches in_proj_b only (not the decay), and the order in which in_proj_a and in_proj_b
fire does not matter. Needs torch (not transformers); scripts/train_fixture_session.sh runs it
before training, on the GPU machine (CI has no torch).
    python3 tests/train/test_slow_beta.py   -> "ok" """
import math
import os
import importlib.util

import torch
import torch.nn as nn
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location(
    "tfm", os.path.join(HERE, "..", "..", "scripts", "train_fixture_models.py"))
tfm = importlib.util.module_from_spec(spec); spec.loader.exec_module(tfm)

class FakeGDN(nn.Module):
    def __init__(self, nh=6, d=16):
        super().__init__()
        self.num_v_heads = nh
        self.A_log = nn.Parameter(torch.zeros(nh))
        self.dt_bias = nn.Parameter(torch.zeros(nh))
        self.in_proj_a = nn.Linear(d, nh, bias=False)
        self.in_proj_b = nn.Linear(d, nh, bias=False)
    def forward(self, x):
        b = self.in_proj_b(x)   # b first, as transformers does (either order must work)
        a = self.in_proj_a(x)
        return (torch.sigmoid(b) * F.softplus(a)).sum()

torch.manual_seed(0)
for order in ("ba", "ab"):
    m = FakeGDN()
    if order == "ab":
        m.forward = lambda x, m=m: (F.softplus(m.in_proj_a(x)) * torch.sigmoid(m.in_proj_b(x))).sum()
    with torch.no_grad():
        # learned heads 0..3: memories per token = 1/(1-exp(-exp(A) softplus(a+dt)))
        m.A_log[:] = torch.tensor([math.log(1e-3), math.log(1e-3), math.log(1.0), math.log(1.0), 0, 0])
    sb = tfm.SlowBeta()
    sb.add_learned(m, range(4), 256.0)
    x = torch.randn(2, 50, 16)
    sb.active = True
    out = m(x)
    sb.active = False
    pen = sb.penalty()
    assert pen is not None and pen.item() > 0, pen
    # manual
    a = m.in_proj_a(x)[..., :4]; b = m.in_proj_b(x)[..., :4]
    rate = torch.exp(m.A_log[:4]) * F.softplus(a + m.dt_bias[:4])
    mem = 1 / -torch.expm1(-rate)
    long_ = (mem > 256).float()
    t = mem.clamp(min=256) ** -0.5
    ref = tfm.SLOW_BETA_WEIGHT * (F.softplus(b - torch.log(t / (1 - t))) * long_).sum() / long_.numel()
    assert torch.allclose(pen, ref), (pen, ref)
    # heads 2,3 remember ~1 token: no term from them
    assert long_[..., 2:].sum() == 0 and long_[..., :2].sum() > 0
    pen.backward()
    g = m.in_proj_b.weight.grad
    assert g[:2].abs().sum() > 0 and g[2:].abs().sum() == 0, g
    assert m.A_log.grad is None or m.A_log.grad.abs().sum() == 0
    st = sb.long_stats()
    print(order, "penalty", float(pen), "long fraction", st)
    # inactive: nothing recorded
    m(x); assert sb.penalty() is None
print("ok")
