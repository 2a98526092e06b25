"""FastScans (scripts/train_fixture_models.py) on a stand-in of transformers 5.17's interface,
without transformers: a fake `transformers.models.qwen3_5.modeling_qwen3_5` and
`...nemotron_h.modeling_nemotron_h` whose layers look up `torch_chunk_gated_delta_rule` and
`mamba2_chunk_scan` in their module at every call and pass what 5.17 passes (the forward's
kwargs: cu_seqlens, use_cache), with token-by-token recurrences standing in for transformers'
functions. Checks that the fast forms switch on after the check, that training forwards then
run them (not the stand-ins), that a call with a state goes to the original, that disable()
puts the originals back, and that a wrong fast form is caught by the check and left off. Session
10's first device probe failed on exactly these interface points. Needs torch only;
scripts/train_fixture_session.sh runs it before training.
    python3 tests/train/test_fast_scans.py   -> "ok" """
import sys
import types

import torch
import torch.nn as nn
import torch.nn.functional as F

from train_script import tfm


def l2norm(x, dim=-1, eps=1e-6):
    return x * torch.rsqrt((x * x).sum(dim=dim, keepdim=True) + eps)


CALLS = {"gdn": 0, "m2": 0}


def gdn_reference(query, key, value, g, beta, chunk_size=64, initial_state=None,
                  output_final_state=False, use_qk_l2norm_in_kernel=False, **kwargs):
    """transformers' signature; the gated delta rule token by token (fp32)."""
    CALLS["gdn"] += 1
    if use_qk_l2norm_in_kernel:
        query, key = l2norm(query), l2norm(key)
    q, k, v = [t.float().transpose(1, 2) for t in (query, key, value)]     # [b][h][L][.]
    g, beta = g.float().transpose(1, 2), beta.float().transpose(1, 2)      # [b][h][L]
    b, h, length, dk = k.shape
    s = (torch.zeros(b, h, dk, v.shape[-1]) if initial_state is None else initial_state.float())
    outs = []
    for t in range(length):
        s = s * g[:, :, t].exp()[..., None, None]
        delta = (v[:, :, t] - torch.einsum("bhkv,bhk->bhv", s, k[:, :, t])) * beta[:, :, t, None]
        s = s + k[:, :, t, :, None] * delta[:, :, None, :]
        outs.append(torch.einsum("bhkv,bhk->bhv", s, q[:, :, t] * dk ** -0.5))
    out = torch.stack(outs, 2).transpose(1, 2).to(query.dtype)
    return out, (s if output_final_state else None)


def m2_reference(hidden_states, dt, A, B, C, chunk_size, D=None, dt_bias=None,
                 initial_states=None, dt_softplus=False, dt_limit=(0.0, float("inf")),
                 return_final_states=False, **kwargs):
    """transformers' mamba2_chunk_scan signature; the selective scan token by token."""
    CALLS["m2"] += 1
    if dt_bias is not None:
        dt = dt + dt_bias.to(dt.dtype)
    if dt_softplus:
        dt = F.softplus(dt)
    dt = torch.clamp(dt, min=dt_limit[0], max=dt_limit[1]).float()
    x = hidden_states.float()
    b, length, nh, p = x.shape
    rep = nh // B.shape[2]
    st = (torch.zeros(b, nh, p, B.shape[3]) if initial_states is None
          else initial_states.float().clone())
    ys = []
    for t in range(length):
        bt = B[:, t].float().repeat_interleave(rep, 1)
        ct = C[:, t].float().repeat_interleave(rep, 1)
        st = (st * (dt[:, t] * A).exp()[..., None, None]
              + (dt[:, t, :, None] * x[:, t])[..., None] * bt[:, :, None, :])
        ys.append(torch.einsum("bhpn,bhn->bhp", st, ct))
    y = torch.stack(ys, 1)
    if D is not None:
        y = y + D[:, None] * x
    return (y, st) if return_final_states else y


def fake_module(name, **attrs):
    mod = types.ModuleType(name)
    for k, v in attrs.items():
        setattr(mod, k, v)
    sys.modules[name] = mod
    return mod


mq = fake_module("transformers.models.qwen3_5.modeling_qwen3_5",
                 torch_chunk_gated_delta_rule=gdn_reference, l2norm=l2norm)
mn = fake_module("transformers.models.nemotron_h.modeling_nemotron_h",
                 mamba2_chunk_scan=m2_reference)
fake_module("transformers.models.qwen3_5", modeling_qwen3_5=mq)
fake_module("transformers.models.nemotron_h", modeling_nemotron_h=mn)
fake_module("transformers.models", qwen3_5=sys.modules["transformers.models.qwen3_5"],
            nemotron_h=sys.modules["transformers.models.nemotron_h"])
fake_module("transformers", models=sys.modules["transformers.models"])


class FakeGatedDeltaNet(nn.Module):
    def __init__(self, d=16, h=2, dk=8, dv=4):
        super().__init__()
        self.h, self.dk, self.dv = h, dk, dv
        self.proj = nn.Linear(d, h * (2 * dk + dv + 2))
        self.out = nn.Linear(h * dv, d)

    def forward(self, u, **kwargs):
        b, length, _ = u.shape
        q, k, v, a, be = self.proj(u).split([self.h * self.dk] * 2 + [self.h * self.dv]
                                            + [self.h] * 2, -1)
        q, k = [t.reshape(b, length, self.h, self.dk) for t in (q, k)]
        v = v.reshape(b, length, self.h, self.dv)
        g = -F.softplus(a.float()) * 0.1
        o, _ = mq.torch_chunk_gated_delta_rule(       # looked up at call time, as in 5.17
            q, k, v, g=g, beta=be.sigmoid(), initial_state=None, output_final_state=False,
            use_qk_l2norm_in_kernel=True, cu_seqlens=kwargs.pop("cu_seq_lens_q", None),
            **kwargs)
        return self.out(o.reshape(b, length, -1))


class FakeMamba2Mixer(nn.Module):
    def __init__(self, d=16, nh=4, p=3, ng=2, n=5):
        super().__init__()
        self.nh, self.p, self.ng, self.n, self.chunk_size = nh, p, ng, n, 64
        self.proj = nn.Linear(d, nh * p + 2 * ng * n + nh)
        self.A_log = nn.Parameter(torch.log(torch.linspace(0.05, 4.0, nh)))
        self.dt_bias = nn.Parameter(torch.randn(nh) * 0.5)
        self.D = nn.Parameter(torch.randn(nh))
        self.out = nn.Linear(nh * p, d)
        self.state = None     # a stand-in of a cache: set, the next call continues from it

    def forward(self, u, **kwargs):
        b, length, _ = u.shape
        x, bb, cc, dt = self.proj(u).split([self.nh * self.p, self.ng * self.n,
                                            self.ng * self.n, self.nh], -1)
        res = mn.mamba2_chunk_scan(
            x.reshape(b, length, self.nh, self.p), dt, -torch.exp(self.A_log.float()),
            bb.reshape(b, length, self.ng, self.n), cc.reshape(b, length, self.ng, self.n),
            chunk_size=self.chunk_size, D=self.D, z=None,
            return_final_states=self.state is not None, dt_bias=self.dt_bias, dt_softplus=True,
            initial_states=self.state, dt_limit=(0.0, float("inf")), **kwargs)
        y = res[0] if isinstance(res, tuple) else res
        return self.out(y.reshape(b, length, -1))


class FakeModel(nn.Module):
    def __init__(self, layer):
        super().__init__()
        self.emb = nn.Embedding(256, 16)
        self.layer = layer
        self.head = nn.Linear(16, 256)

    def forward(self, input_ids, use_cache=False):
        h = self.emb(input_ids)
        h = h + self.layer(h, use_cache=use_cache)
        return types.SimpleNamespace(logits=self.head(h))


torch.manual_seed(0)
x = torch.randint(0, 256, (2, 40))

# GDN: the check switches the fast form on; training forwards then run it, not the stand-in
gdn = FakeModel(FakeGatedDeltaNet())
fs = tfm.FastScans()
info = fs.enable(gdn, "cpu", n=96)
assert info["gdn"]["on"] and info["gdn"]["max_rel_vs_fallback"] <= tfm.FastScans.TOL, info
assert tfm.GdnChunk.fast and tfm.GdnChunk.size == tfm.GDN_CHUNK
c0, g0 = CALLS["gdn"], tfm.GdnChunk.calls
gdn.train()
gdn(input_ids=x).logits.sum().backward()
assert CALLS["gdn"] == c0 and tfm.GdnChunk.calls == g0 + 1, (CALLS, tfm.GdnChunk.calls)
# GdnChunk.fastest: every accepted chunk timed, the quickest chosen, no gradient left behind
# (no optimiser step may follow from it), the mode restored; the fast form runs the steps
gdn.eval()
times = tfm.GdnChunk.fastest(gdn, "cpu", [64, 128, 256], 1)
assert sorted(times) == [64, 128, 256] and all(t > 0 for t in times.values()), times
assert tfm.GdnChunk.size == min(times, key=times.get)
assert all(p.grad is None for p in gdn.parameters()) and not gdn.training
assert CALLS["gdn"] == c0 and tfm.GdnChunk.calls == g0 + 1 + 6
fs.disable()
gdn(input_ids=x)
assert not tfm.GdnChunk.fast and CALLS["gdn"] == c0 + 1      # transformers' function again

# Mamba-2: the same, and a call with a state (a cache) goes to transformers' function
m2 = FakeModel(FakeMamba2Mixer())
fs = tfm.FastScans()
info = fs.enable(m2, "cpu", n=96)
assert info["mamba2"]["on"] and info["mamba2"]["max_rel_vs_fallback"] <= tfm.FastScans.TOL, info
assert mn.mamba2_chunk_scan is not m2_reference
c0, f0 = CALLS["m2"], fs.m2_calls
m2.train()
m2(input_ids=x).logits.sum().backward()
assert CALLS["m2"] == c0 and fs.m2_calls == f0 + 1, (CALLS, fs.m2_calls)
m2.layer.state = torch.randn(2, 4, 3, 5)
m2(input_ids=x)
assert CALLS["m2"] == c0 + 1 and fs.m2_calls == f0 + 1
m2.layer.state = None
fs.disable()
assert mn.mamba2_chunk_scan is m2_reference                  # put back for the evaluations

# a wrong fast form (the D skip term lost) is caught by the check and left off
right = tfm.train_scans().mamba2_chunk_scan
tfm.train_scans().mamba2_chunk_scan = lambda *a, **k: right(*a, **{**k, "D": None})
fs = tfm.FastScans()
info = fs.enable(m2, "cpu", n=96)
tfm.train_scans().mamba2_chunk_scan = right
assert not info["mamba2"]["on"] and info["mamba2"]["max_rel_vs_fallback"] > 1e-2, info
assert mn.mamba2_chunk_scan is m2_reference
print("ok")
