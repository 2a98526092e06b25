"""scripts/train_scans.py against the token-by-token recurrences it computes in blocks, in fp64
on random inputs (never zeros; decays from fast to slow heads, so that exp of the segment sums
spans ~40 orders of magnitude within a chunk): outputs, final states and every input gradient.
In fp64 the block forms differ from the recurrences only by reordered sums of O(L) terms of size
O(1) (the inputs are O(1), the decays at most 1): ~L x 1e-16, so 1e-11 relative leaves a margin of
10^3 and a wrong term (a missing decay, a wrong group, an off-by-one chunk edge) is O(1). Needs
torch only; scripts/train_fixture_session.sh runs it before training.
    python3 tests/train/test_train_scans.py   -> "ok" """
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))
import train_scans as ts  # noqa: E402

F64 = torch.float64
TOL = 1e-11


def rel(a, b):
    return float((a - b).abs().max() / b.abs().max())


def l2norm(x, dim=-1, eps=1e-6):
    return x * torch.rsqrt((x * x).sum(dim=dim, keepdim=True) + eps)


def gdn_recurrent(q, k, v, g, beta, s0):
    """q, k [b][L][h][dk] (normalised), v [b][L][h][dv], g, beta [b][L][h], s0 [b][h][dk][dv]."""
    dk = k.shape[-1]
    s, outs = s0, []
    for t in range(k.shape[1]):
        s = s * g[:, t].exp()[..., None, None]
        mem = torch.einsum("bhkv,bhk->bhv", s, k[:, t])
        delta = (v[:, t] - mem) * beta[:, t][..., None]
        s = s + k[:, t][..., None] * delta[..., None, :]
        outs.append(torch.einsum("bhkv,bhk->bhv", s, q[:, t] * dk ** -0.5))
    return torch.stack(outs, 1), s


def ssd_recurrent(x, dt, a_neg, b_in, c_in):
    """x [b][L][h][p], dt [b][L][h], a_neg [h], b_in, c_in [b][L][g][n]."""
    bsz, length, nh, p = x.shape
    rep = nh // b_in.shape[2]
    h = torch.zeros(bsz, nh, p, b_in.shape[3], dtype=x.dtype)
    ys = []
    for t in range(length):
        bt = b_in[:, t].repeat_interleave(rep, 1)                       # [b][h][n]
        ct = c_in[:, t].repeat_interleave(rep, 1)
        h = (h * (dt[:, t] * a_neg).exp()[..., None, None]
             + (dt[:, t][..., None] * x[:, t])[..., None] * bt[:, :, None, :])
        ys.append(torch.einsum("bhpn,bhn->bhp", h, ct))
    return torch.stack(ys, 1)


def grads(f, inputs, weights):
    """Gradients of sum(w * output) over the outputs of f with respect to every input."""
    inputs = [t.detach().clone().requires_grad_(True) for t in inputs]
    outs = f(*inputs)
    loss = sum((o * w).sum() for o, w in zip(outs, weights))
    return outs, torch.autograd.grad(loss, inputs)


def check_unit_lower_solve(q, block):
    """unit_lower_solve by blocks against one triangular solve, and (I + N) X = rhs itself."""
    gen = torch.Generator().manual_seed(q * 13 + block)
    n = torch.randn(3, q, q, generator=gen, dtype=F64) * 0.3
    n = n + torch.triu(torch.randn(3, q, q, generator=gen, dtype=F64), 0)   # ignored part
    rhs = torch.randn(3, q, 7, generator=gen, dtype=F64)
    x = ts.unit_lower_solve(n, rhs, block)
    lower = torch.tril(n, -1)
    assert rel((torch.eye(q, dtype=F64) + lower) @ x, rhs) < TOL, (q, block)
    one = torch.linalg.solve_triangular(n, rhs, upper=False, unitriangular=True)
    assert rel(x, one) < TOL, (q, block, rel(x, one))


for q, block in [(40, 8), (40, 16), (33, 64), (64, 64), (65, 64)]:
    check_unit_lower_solve(q, block)


def check_gdn(length, chunk):
    gen = torch.Generator().manual_seed(length * 31 + chunk)
    b, h, dk, dv = 2, 3, 8, 5
    q = torch.randn(b, length, h, dk, generator=gen, dtype=F64)
    k = torch.randn(b, length, h, dk, generator=gen, dtype=F64)
    v = torch.randn(b, length, h, dv, generator=gen, dtype=F64)
    # per-token log-decays from -3 (memory < 1 token) to -1e-3 (1000 tokens), by head
    scale = torch.tensor([3.0, 0.1, 1e-3], dtype=F64)
    g = -torch.rand(b, length, h, generator=gen, dtype=F64) * scale
    beta = torch.rand(b, length, h, generator=gen, dtype=F64) * 0.9 + 0.05
    s0 = torch.randn(b, h, dk, dv, generator=gen, dtype=F64)
    w_o = torch.randn(b, length, h, dv, generator=gen, dtype=F64)
    w_s = torch.randn(b, h, dk, dv, generator=gen, dtype=F64)

    def chunked(q, k, v, g, beta, s0):
        # by blocks: chunks of 16 in two blocks of 8, of 40 in 16 + 16 + 8
        return ts.gdn_chunked(q, k, v, g, beta, chunk_size=chunk, initial_state=s0,
                              output_final_state=True, use_qk_l2norm_in_kernel=True,
                              l2norm=l2norm, solve_block=8 if chunk == 16 else 16)

    def recurrent(q, k, v, g, beta, s0):
        return gdn_recurrent(l2norm(q), l2norm(k), v, g, beta, s0)

    (o1, s1), g1 = grads(chunked, (q, k, v, g, beta, s0), (w_o, w_s))
    (o2, s2), g2 = grads(recurrent, (q, k, v, g, beta, s0), (w_o, w_s))
    assert o1.dtype == F64 and o1.shape == o2.shape, (o1.dtype, o1.shape)
    errs = [rel(o1, o2), rel(s1, s2)] + [rel(a, b) for a, b in zip(g1, g2)]
    assert max(errs) < TOL, (length, chunk, errs)
    # the final state only on request
    assert ts.gdn_chunked(q, k, v, g, beta, chunk_size=chunk)[1] is None


def check_ssd(length, chunk):
    gen = torch.Generator().manual_seed(length * 17 + chunk)
    b, h, p, ng, n = 2, 4, 3, 2, 6
    x = torch.randn(b, length, h, p, generator=gen, dtype=F64)
    dt = torch.rand(b, length, h, generator=gen, dtype=F64) * 0.5 + 0.01
    a_neg = -torch.tensor([8.0, 1.0, 0.05, 0.002], dtype=F64)   # dt A from -4 to -2e-5
    b_in = torch.randn(b, length, ng, n, generator=gen, dtype=F64)
    c_in = torch.randn(b, length, ng, n, generator=gen, dtype=F64)
    w_y = torch.randn(b, length, h, p, generator=gen, dtype=F64)

    def chunked(x, dt, b_in, c_in):
        return (ts.ssd_chunked(x, dt, a_neg, b_in, c_in, chunk),)

    def recurrent(x, dt, b_in, c_in):
        return (ssd_recurrent(x, dt, a_neg, b_in, c_in),)

    (y1,), g1 = grads(chunked, (x, dt, b_in, c_in), (w_y,))
    (y2,), g2 = grads(recurrent, (x, dt, b_in, c_in), (w_y,))
    assert y1.shape == y2.shape, y1.shape
    errs = [rel(y1, y2)] + [rel(a, b) for a, b in zip(g1, g2)]
    assert max(errs) < TOL, (length, chunk, errs)


def check_chunk_scan(length, chunk):
    """mamba2_chunk_scan, prologue and D term included, against the recurrence."""
    gen = torch.Generator().manual_seed(length * 7 + chunk)
    b, h, p, ng, n = 2, 4, 3, 2, 5
    x = torch.randn(b, length, h, p, generator=gen, dtype=F64)
    dt_raw = torch.randn(b, length, h, generator=gen, dtype=F64) * 2
    dt_bias = torch.randn(h, generator=gen, dtype=F64)
    a_neg = -torch.tensor([4.0, 1.0, 0.1, 0.01], dtype=F64)
    b_in = torch.randn(b, length, ng, n, generator=gen, dtype=F64)
    c_in = torch.randn(b, length, ng, n, generator=gen, dtype=F64)
    d_skip = torch.randn(h, generator=gen, dtype=F64)
    limit = (0.05, 2.0)    # both ends of the clamp bind on some tokens
    got = ts.mamba2_chunk_scan(x, dt_raw, a_neg, b_in, c_in, chunk, D=d_skip, z=None,
                               dt_bias=dt_bias, dt_softplus=True, dt_limit=limit)
    dt = torch.clamp(F.softplus(dt_raw + dt_bias), *limit)
    assert (dt == limit[0]).any() and (dt == limit[1]).any()
    want = ssd_recurrent(x, dt, a_neg, b_in, c_in) + d_skip[:, None] * x
    assert got.shape == want.shape and rel(got, want) < TOL, (length, chunk, rel(got, want))


for length, chunk in [(50, 16), (64, 16), (7, 16), (33, 1), (40, 40)]:
    check_gdn(length, chunk)
    check_ssd(length, chunk)
    check_chunk_scan(length, chunk)

print("ok")
