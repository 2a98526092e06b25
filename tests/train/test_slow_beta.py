"""SlowBeta.add_learned (scripts/train_fixture_models.py --long-beta) on a stand-in GDN module:
the penalty equals its formula, only learned heads whose per-token memory exceeds M0 contribute,
the push reaches in_proj_b only (not the decay), and the order in which in_proj_a and in_proj_b
fire does not matter; SlowBeta.add_cap (--cap-memory) the same way (its push reaches the decay,
not beta), on GDN and on Mamba-2 (the dt columns of in_proj), and the parsers of --slow-range
and --m2-groups; design_ssm_heads with --medium-memory (one or two heads), --medium-layers and
--slow-per-layer.
Needs torch (not transformers); scripts/train_fixture_session.sh runs it before training, on the
GPU machine (CI has no torch; here Debian's python3-torch).
    python3 tests/train/test_slow_beta.py   -> "ok" """
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

from train_script import tfm

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

# SlowBeta.add_cap (--cap-memory M1): the term equals its formula, heads far below M1 add nearly
# nothing, heads outside `heads` nothing at all, and the push reaches the decay (A_log, dt_bias,
# in_proj_a) but not beta; it adds to add_learned's term in penalty().
torch.manual_seed(1)
m = FakeGDN()
with torch.no_grad():
    # heads 0, 1: memories of thousands of tokens; 2, 3: about one token; 4, 5: slow, not capped
    m.A_log[:] = torch.tensor([math.log(1e-4), math.log(1e-4), math.log(1.0), math.log(1.0),
                               math.log(1e-5), math.log(1e-5)])
    m.in_proj_a.weight.mul_(0.1)
sb = tfm.SlowBeta()
sb.add_cap(m, range(4), 100.0)
x = torch.randn(2, 50, 16)
sb.active = True
m(x)
sb.active = False
pen = sb.penalty()
a = m.in_proj_a(x)[..., :4]
rate = torch.exp(m.A_log[:4]) * F.softplus(a + m.dt_bias[:4])
log_mem = torch.log(1 / -torch.expm1(-rate))
ref = tfm.CAP_MEMORY_WEIGHT * F.softplus(log_mem - math.log(100.0)).mean()
assert torch.allclose(pen, ref), (pen, ref)
assert log_mem[..., :2].min() > math.log(1000) and log_mem[..., 2:].max() < math.log(3), log_mem
pen.backward()
gA = m.A_log.grad
assert gA[:2].abs().min() > 0, gA                  # long capped heads: pushed
# ~1-token heads: nearly nothing (softplus' = sigmoid(log(3 / 100)) < 0.03 of the long heads')
assert gA[2:4].abs().max() < 0.05 * gA[:2].abs().min(), gA
assert gA[4:].abs().sum() == 0, gA                 # slow heads are not capped
assert gA[:2].max() < 0, gA                        # the push raises the decay rate (descent: -g)
assert m.dt_bias.grad[:2].abs().min() > 0 and m.in_proj_a.weight.grad[:2].abs().sum() > 0
assert m.in_proj_b.weight.grad is None or m.in_proj_b.weight.grad.abs().sum() == 0
frac, longest = sb.cap_stats()
assert abs(frac - 0.5) < 1e-6 and longest > 1000, (frac, longest)
assert sb.cap_stats() is None
# with add_learned on the same module both terms add up in one penalty
sb2 = tfm.SlowBeta()
sb2.add_learned(m, range(4), 256.0)
sb2.add_cap(m, range(4), 100.0)
sb2.active = True
m(x)
sb2.active = False
both = sb2.penalty()
sb3 = tfm.SlowBeta()
sb3.add_learned(m, range(4), 256.0)
sb3.active = True
m(x)
sb3.active = False
only_beta = sb3.penalty()
assert torch.allclose(both, only_beta + ref), (both, only_beta, ref)
# SlowBeta.add_cap on a stand-in Mamba-2 mixer: the decay input is the head's dt column of
# in_proj (layout z, xBC, dt), alpha_t = exp(-exp(A_log) softplus(dt_t + dt_bias)); the push
# reaches A_log, dt_bias and the capped heads' dt rows of in_proj, no other row.
class FakeMamba2(nn.Module):
    def __init__(self, nh=4, d=8):
        super().__init__()
        self.num_heads, self.intermediate_size, self.n_groups, self.ssm_state_size = nh, 6, 1, 3
        rows = 2 * self.intermediate_size + 2 * self.n_groups * self.ssm_state_size + nh
        self.A_log = nn.Parameter(torch.zeros(nh))
        self.dt_bias = nn.Parameter(torch.zeros(nh))
        self.in_proj = nn.Linear(d, rows, bias=False)
    def forward(self, x):
        dt = self.in_proj(x)[..., -self.num_heads:]
        return (F.softplus(dt + self.dt_bias) * torch.exp(self.A_log)).sum()

torch.manual_seed(2)
mm = FakeMamba2()
with torch.no_grad():
    # head 0: thousands of tokens; 1: about one token; 2, 3: slow heads, not capped
    mm.A_log[:] = torch.tensor([math.log(1e-4), math.log(1.0), math.log(1e-5), math.log(1e-5)])
    mm.in_proj.weight.mul_(0.1)
sb = tfm.SlowBeta()
sb.add_cap(mm, range(2), 100.0, "mamba2")
x = torch.randn(2, 30, 8)
sb.active = True
mm(x)
sb.active = False
pen = sb.penalty()
dt = mm.in_proj(x)[..., -4:][..., :2]
rate = torch.exp(mm.A_log[:2]) * F.softplus(dt + mm.dt_bias[:2])
log_mem = torch.log(1 / -torch.expm1(-rate))
ref = tfm.CAP_MEMORY_WEIGHT * F.softplus(log_mem - math.log(100.0)).mean()
assert torch.allclose(pen, ref), (pen, ref)
assert log_mem[..., 0].min() > math.log(1000) and log_mem[..., 1].max() < math.log(3), log_mem
mm.zero_grad()
pen.backward()
gA, gw = mm.A_log.grad, mm.in_proj.weight.grad
assert gA[0] < 0 and gA[2:].abs().sum() == 0, gA    # the long head pushed, slow heads not
nrow = gw.shape[0]
assert gw[nrow - 4].abs().sum() > 0                 # the long head's dt row
assert gw[:nrow - 4].abs().sum() == 0 and gw[nrow - 2:].abs().sum() == 0, gw
frac, longest = sb.cap_stats()
assert abs(frac - 0.5) < 1e-6 and longest > 1000, (frac, longest)

# --slow-range: parsed and bounded by half the training window
assert tfm.slow_range_arg("1024:8192") == (1024.0, 8192.0)
def assert_refused(parser, bads, option):
    """Every text in bads makes the option's parser raise argparse.ArgumentTypeError."""
    for bad in bads:
        try:
            parser(bad)
        except tfm.argparse.ArgumentTypeError:
            continue
        raise AssertionError(f"{option} '{bad}' accepted")


assert_refused(tfm.slow_range_arg, ("8192", "0.5:100", "100:50", f"1024:{tfm.SEQ}", "a:b"),
               "--slow-range")
# --m2-groups: a divisor of the 8 Mamba-2 heads leaving the slow pair room in one group
assert [tfm.m2_groups_arg(g) for g in ("1", "2", "4")] == [1, 2, 4]
assert_refused(tfm.m2_groups_arg, ("0", "3", "8", "-2", "two"), "--m2-groups")
# design_ssm_heads with --medium-memory: per Mamba-2 layer (8 heads, 4 groups) heads 6, 7 slow,
# head 5 fixed at the medium memory (its dt row zero, its decay 1/(1-exp(-rate)) = M), the cap
# only on heads 0..4; an optimiser step on every parameter leaves the fixed entries as designed.
class FakeMambaMixer2(FakeMamba2):
    def __init__(self):
        super().__init__(nh=8)
        self.n_groups = 4
        rows = 2 * self.intermediate_size + 2 * self.n_groups * self.ssm_state_size + 8
        self.in_proj = nn.Linear(8, rows, bias=False)

class FakeModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.mixers = nn.ModuleList([FakeMambaMixer2(), FakeMambaMixer2()])

torch.manual_seed(3)
model = FakeModel()
fixed = tfm.design_ssm_heads(model, 7, slow_range=(4096.0, 8192.0), cap_memory=16.0,
                             medium_memory=8.0)
roles = sorted((e["layer"], e["head"], e["role"]) for e in fixed.table)
assert roles == [(li, h, r) for li in (0, 1) for h, r in ((5, "medium"), (6, "slow"), (7, "slow"))], roles
for e in fixed.table:
    if e["role"] == "medium":
        # alpha = exp(-1/8): memory 1/(1-alpha) = 8.52; bf16 A_log and dt_bias: within 2 %
        assert abs(e["memory_bf16"] / (1 / -math.expm1(-1 / 8)) - 1) < 0.02, e
    else:
        assert 4000 < e["memory_bf16"] < 8400, e
before = [(m.A_log.detach().clone(), m.dt_bias.detach().clone(), m.in_proj.weight.detach().clone())
          for m in model.mixers]
opt = torch.optim.SGD(model.parameters(), lr=0.5)
fixed.beta.active = True
loss = sum(m(x) for m in model.mixers)
fixed.beta.active = False
cap = fixed.beta.penalty()
assert cap is not None and len(fixed.beta.cap_terms) == 0
(loss + cap).backward()
opt.step()
fixed.restore()
for m, (a0, d0, w0) in zip(model.mixers, before):
    row0 = m.in_proj.weight.shape[0] - 8
    assert torch.equal(m.A_log[5:], a0[5:]) and torch.equal(m.dt_bias[5:], d0[5:])
    assert not torch.equal(m.A_log[:5], a0[:5])            # learned heads did move
    assert m.in_proj.weight[row0 + 5:].abs().sum() == 0     # medium and slow dt rows zero
    assert m.in_proj.weight[row0:row0 + 5].abs().sum() > 0
# the cap hook covers the learned heads 0..4 only (the fixed ones remember thousands of
# tokens and would dominate it): the penalty equals its formula over those heads
fixed.beta.active = True
for m in model.mixers:
    m(x)
fixed.beta.active = False
got = fixed.beta.penalty()
terms = []
for m in model.mixers:
    dt = m.in_proj(x)[..., -8:][..., :5]
    rate = torch.exp(m.A_log[:5]) * F.softplus(dt + m.dt_bias[:5])
    rate = rate.clamp(min=1e-12)                            # as the hook does
    terms.append(F.softplus(-torch.log(-torch.expm1(-rate)) - math.log(16.0)).mean())
want = tfm.CAP_MEMORY_WEIGHT * sum(terms) / len(terms)
assert torch.allclose(got, want), (got, want)
# --source-weights: every source once, normalised, in SOURCES' order; refusals
sw = tfm.source_weights_arg("sotu=3,kjv=1,austen=2,tdavid=3,mhcc=1")
assert [n for n, _ in sw] == [n for n, _ in tfm.SOURCES], sw
assert dict(sw) == {"austen": 0.2, "tdavid": 0.3, "sotu": 0.3, "kjv": 0.1, "mhcc": 0.1}, sw
assert_refused(tfm.source_weights_arg,
               ("austen=1,tdavid=1,sotu=1,kjv=1", "austen=1,tdavid=1,sotu=1,kjv=1,mhcc=0",
                "austen=1,austen=1,tdavid=1,sotu=1,kjv=1,mhcc=1",
                "moby=1,austen=1,tdavid=1,sotu=1,kjv=1,mhcc=1",
                "austen,tdavid=1,sotu=1,kjv=1,mhcc=1", "austen=x,tdavid=1,sotu=1,kjv=1,mhcc=1",
                "austen=inf,tdavid=1,sotu=1,kjv=1,mhcc=1"), "--source-weights")
for bad in (["--medium-memory", "1"], ["--medium-memory", "5000"], ["--cap-weight", "0"],
            ["--slow-per-layer", "3"], ["--slow-per-layer", "8"], ["--medium-memory", "160,1"],
            ["--slow-per-layer", "4", "--medium-memory", "160,100,50,20"],
            ["--model", "qwen35-gdn-tiny", "--medium-memory", "160,12"]):
    try:
        tfm_args = ["--model", "nemotronh-m2-tiny", "--out", "/nonexistent/x"] + bad
        old_argv = tfm.sys.argv
        tfm.sys.argv = ["train"] + tfm_args
        tfm.main()
    except SystemExit as e:
        assert e.code == 2, e.code
        continue
    finally:
        tfm.sys.argv = old_argv
    raise AssertionError(f"{bad} accepted")
# --slow-per-layer 4 with 4 groups: the slow heads fill the last two groups whole (heads 4..7),
# the medium head is head 3 (beside learned head 2), the cap on heads 0..2 only; 16 slow
# memories log-spaced over the model
torch.manual_seed(5)
model = FakeModel()
fixed = tfm.design_ssm_heads(model, 7, slow_range=(4096.0, 8192.0), cap_memory=16.0,
                             medium_memory=160.0, slow_per_layer=4)
roles = sorted((e["layer"], e["head"], e["role"]) for e in fixed.table)
assert roles == [(li, h, "medium" if h == 3 else "slow") for li in (0, 1) for h in range(3, 8)], roles
slow_mem = sorted(e["memory_design"] for e in fixed.table if e["role"] == "slow")
assert len(slow_mem) == 8 and abs(slow_mem[0] - 4096) < 1 and abs(slow_mem[-1] - 8192) < 1, slow_mem
for m in model.mixers:
    row0 = m.in_proj.weight.shape[0] - 8
    assert m.in_proj.weight[row0 + 3:].abs().sum() == 0     # medium and slow dt rows zero
    assert m.in_proj.weight[row0:row0 + 3].abs().sum() > 0  # the learned heads' rows kept
# slow heads that would share a group with learned heads, or leave no learned head, are refused
for slow, medium in ((3, 0.0), (5, 0.0), (7, 8.0), (8, 0.0)):
    try:
        tfm.design_ssm_heads(FakeModel(), 7, slow_range=(4096.0, 8192.0), medium_memory=medium,
                             slow_per_layer=slow)
    except RuntimeError:
        continue
    raise AssertionError(f"{slow} slow heads (medium {medium}) accepted")
# fixed_heads_problem(slow, medium, nh, per_group, whole_groups): None when the heads fit
ok = tfm.fixed_heads_problem
assert ok(4, 1, 8, 2, True) is None and ok(2, 0, 8, 2, True) is None
assert ok(4, 0, 8, 4, True) is None                     # one group of 4
assert ok(4, 3, 8, 2, True) is None                     # one learned head left
assert ok(2, 1, 4, 2, False) is None                    # GDN: the last key head's 2 value heads
for args in ((3, 0, 8, 2, True), (7, 1, 8, 8, True), (0, 0, 8, 2, True), (8, 0, 8, 8, True),
             (4, 4, 8, 2, True), (4, 0, 8, 2, False), (2, 2, 4, 2, False)):
    assert ok(*args), args
# --medium-memory 160,12: two medium heads a layer, the first next to the slow ones (head 3),
# the second before it (head 2; with 4 groups the two make group 1); learned heads 0, 1
torch.manual_seed(6)
model = FakeModel()
fixed = tfm.design_ssm_heads(model, 7, slow_range=(4096.0, 8192.0), cap_memory=16.0,
                             medium_memory=[160.0, 12.0], slow_per_layer=4)
got = sorted((e["layer"], e["head"], e["role"], round(e["memory_design"]))
             for e in fixed.table if e["role"] == "medium")
assert got == [(li, h, "medium", mem) for li in (0, 1) for h, mem in ((2, 12), (3, 160))], got
for e in fixed.table:
    if e["role"] == "medium":
        assert abs(e["memory_bf16"] / (1 / -math.expm1(-1 / e["memory_design"])) - 1) < 0.02, e
for m in model.mixers:
    row0 = m.in_proj.weight.shape[0] - 8
    assert m.in_proj.weight[row0 + 2:].abs().sum() == 0 and m.in_proj.weight[row0:row0 + 2].abs().sum() > 0
# --medium-layers 1: the medium head only in the second SSM layer; the first keeps heads 0..5
# learned (head 5's dt row not zeroed, under the cap) beside its slow heads 6, 7
torch.manual_seed(8)
model = FakeModel()
fixed = tfm.design_ssm_heads(model, 7, slow_range=(4096.0, 8192.0), cap_memory=16.0,
                             medium_memory=8.0, medium_layers=[1])
roles = sorted((e["layer"], e["head"], e["role"]) for e in fixed.table)
assert roles == [(0, 6, "slow"), (0, 7, "slow"), (1, 5, "medium"), (1, 6, "slow"), (1, 7, "slow")], roles
m0, m1 = model.mixers
r0 = m0.in_proj.weight.shape[0] - 8
assert m0.in_proj.weight[r0 + 5].abs().sum() > 0 and m0.in_proj.weight[r0 + 6:].abs().sum() == 0
assert m1.in_proj.weight[r0 + 5:].abs().sum() == 0 and m1.in_proj.weight[r0 + 4].abs().sum() > 0
try:
    tfm.design_ssm_heads(FakeModel(), 7, slow_range=(4096.0, 8192.0), medium_memory=8.0,
                         medium_layers=[2])
except RuntimeError as e:
    assert "--medium-layers 2" in str(e) and "0..1" in str(e), e
else:
    raise AssertionError("--medium-layers 2 accepted on a model of 2 SSM layers")
assert tfm.medium_layers_arg("3,1,2") == [1, 2, 3] and tfm.medium_layers_arg("0") == [0]
assert_refused(tfm.medium_layers_arg, ("", "a", "1,1", "-1", "1,"), "--medium-layers")
assert tfm.medium_memories_arg("160,12") == [160.0, 12.0] and tfm.medium_memories_arg("0") == []
assert tfm.medium_memories_arg("8") == [8.0]
assert_refused(tfm.medium_memories_arg, ("", "a", "160,", "nan"), "--medium-memory")
print("cap penalty", float(pen), "past cap", frac)
print("ok")
